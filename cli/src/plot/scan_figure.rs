//! The figure of `codedb bench scan --plot` and `codedb bench plot`: scan throughput against
//! the number of codes N (log-log, at the most threads measured) and against threads (at the
//! largest N), per kind; the read bandwidth measured on the same mapping, as codes/s a scan
//! reading at that speed would reach, dotted in the kind's colour; FAISS dashed when the
//! points carry it (`tools/bench_vs_faiss.py`).

use std::collections::{BTreeMap, BTreeSet};

use plotters::prelude::*;

use super::canvas::{self, Figure, TITLE_H};
use super::legend;
use super::scan_records::ScanPoint;
use super::style::{self, Area, Dash, Look, Marker};
use super::target::{Format, PlotError};

const PANEL_W: u32 = 620;
const PANEL_H: u32 = 460;
const LEGEND_COLUMNS: usize = 3;

/// Points of one series (a kind, query count and cache state), with its looks.
struct Series<'a> {
    points: Vec<&'a ScanPoint>,
    codedb: Look,
    faiss: Option<Look>,
    bound: Look,
}

/// The three lines of a series over some x.
struct Lines {
    codedb: Vec<(f64, f64)>,
    faiss: Vec<(f64, f64)>,
    bound: Vec<(f64, f64)>,
}

fn lines(points: &[&ScanPoint], x: impl Fn(&ScanPoint) -> f64) -> Lines {
    let mut pts: Vec<&ScanPoint> = points.to_vec();
    pts.sort_by(|a, b| x(a).total_cmp(&x(b)));
    Lines {
        codedb: pts.iter().map(|p| (x(p), p.codedb_codes_per_s)).collect(),
        faiss: pts
            .iter()
            .filter_map(|p| p.faiss_codes_per_s.map(|f| (x(p), f)))
            .collect(),
        bound: pts
            .iter()
            .filter(|p| p.bandwidth_gb_per_s > 0.0)
            .map(|p| (x(p), p.bandwidth_bound()))
            .collect(),
    }
}

/// Groups points into series; two points of the same case are an error (say which).
fn series(points: &[ScanPoint]) -> Result<Vec<Series<'_>>, PlotError> {
    let mut cases = BTreeSet::new();
    for p in points {
        if !cases.insert((&p.kind, p.queries, &p.cache, p.codes, p.threads)) {
            return Err(PlotError::NoData {
                what: "scan figure",
                detail: format!(
                    "the case {} N={} nq={} threads={} {} appears twice; plot one measurement \
                     per case",
                    p.kind, p.codes, p.queries, p.threads, p.cache
                ),
            });
        }
    }
    let several_q = points
        .iter()
        .map(|p| p.queries)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let several_c = points
        .iter()
        .map(|p| &p.cache)
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let mut groups: BTreeMap<(String, usize, String), Vec<&ScanPoint>> = BTreeMap::new();
    for p in points {
        groups
            .entry((p.kind.clone(), p.queries, p.cache.clone()))
            .or_default()
            .push(p);
    }
    Ok(groups
        .into_iter()
        .enumerate()
        .map(|(i, ((kind, q, cache), points))| {
            let mut name = kind;
            if several_q {
                name.push_str(&format!(" nq={q}"));
            }
            if several_c {
                name.push_str(&format!(" {cache}"));
            }
            let codedb = Look::nth(i, format!("{name} codedb"), Marker::Circle);
            let faiss = points
                .iter()
                .any(|p| p.faiss_codes_per_s.is_some())
                .then(|| Look {
                    label: format!("{name} FAISS"),
                    dash: Dash::Dashed,
                    marker: Marker::Triangle,
                    ..codedb.clone()
                });
            let bound = Look {
                label: format!("{name} at read bandwidth"),
                dash: Dash::Dotted,
                marker: Marker::None,
                ..codedb.clone()
            };
            Series {
                points,
                codedb,
                faiss,
                bound,
            }
        })
        .collect())
}

/// One panel: `pick` chooses each series' points, `x` their abscissa.
#[allow(clippy::too_many_arguments)]
fn panel<'p, DB: DrawingBackend>(
    area: &Area<DB>,
    all: &[Series<'p>],
    caption: &str,
    x_desc: &str,
    log_x: bool,
    pick: &dyn Fn(&[&'p ScanPoint]) -> Vec<&'p ScanPoint>,
    x: &dyn Fn(&ScanPoint) -> f64,
) -> Result<(), PlotError> {
    let err = || PlotError::draw("the scan figure");
    let per: Vec<Lines> = all.iter().map(|s| lines(&pick(&s.points), x)).collect();
    let ys = per
        .iter()
        .flat_map(|l| l.codedb.iter().chain(&l.faiss).chain(&l.bound).map(|p| p.1));
    let (y_lo, y_hi) = style::log_range(ys, 1.6).ok_or_else(|| PlotError::NoData {
        what: "scan figure",
        detail: "no throughput".into(),
    })?;
    let xs = per.iter().flat_map(|l| l.codedb.iter().map(|p| p.0));
    let y_desc = "codes/s (codes x queries per second, log scale)";
    if log_x {
        let (x_lo, x_hi) = style::log_range(xs, 1.5).ok_or_else(|| PlotError::NoData {
            what: "scan figure",
            detail: "no N".into(),
        })?;
        let mut chart = style::panel(area, caption, 70)
            .build_cartesian_2d(style::log10_axis(x_lo, x_hi), style::log10_axis(y_lo, y_hi))
            .map_err(err())?;
        style::mesh(&mut chart, x_desc, y_desc)
            .x_label_formatter(&|v| style::log_tick(*v))
            .y_label_formatter(&|v| style::log_tick(*v))
            .draw()
            .map_err(err())?;
        for (s, l) in all.iter().zip(&per) {
            draw_lines(&mut chart, s, l)?;
        }
    } else {
        let x_hi = xs.fold(1f64, f64::max);
        let mut chart = style::panel(area, caption, 70)
            .build_cartesian_2d(0.5f64..x_hi + 0.5, style::log10_axis(y_lo, y_hi))
            .map_err(err())?;
        style::mesh(&mut chart, x_desc, y_desc)
            .x_labels((x_hi as usize).clamp(1, 16))
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 {
                    format!("{}", v.round() as i64)
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| style::log_tick(*v))
            .draw()
            .map_err(err())?;
        for (s, l) in all.iter().zip(&per) {
            draw_lines(&mut chart, s, l)?;
        }
    }
    Ok(())
}

fn draw_lines<DB: DrawingBackend, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    s: &Series,
    l: &Lines,
) -> Result<(), PlotError>
where
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    style::series(chart, &l.bound, &s.bound)?;
    if let Some(f) = &s.faiss {
        style::series(chart, &l.faiss, f)?;
    }
    style::series(chart, &l.codedb, &s.codedb)
}

/// The points of a series at its most threads.
fn at_most_threads<'a>(pts: &[&'a ScanPoint]) -> Vec<&'a ScanPoint> {
    let t = pts.iter().map(|p| p.threads).max().unwrap_or(0);
    pts.iter().copied().filter(|p| p.threads == t).collect()
}

/// The points of a series at its largest N.
fn at_largest_n<'a>(pts: &[&'a ScanPoint]) -> Vec<&'a ScanPoint> {
    let n = pts.iter().map(|p| p.codes).max().unwrap_or(0);
    pts.iter().copied().filter(|p| p.codes == n).collect()
}

/// "at 2 threads" when every series has the same, else "at each kind's most".
fn same_or(values: BTreeSet<u64>, one: impl Fn(u64) -> String, many: &str) -> String {
    match values.len() {
        1 => one(*values.first().unwrap_or(&0)),
        _ => many.to_string(),
    }
}

/// The figure encoded as `format`; `title` names the run (machine, ISA).
pub fn scan_plot(points: &[ScanPoint], title: &str, format: Format) -> Result<Vec<u8>, PlotError> {
    if points.is_empty() {
        return Err(PlotError::NoData {
            what: "scan figure",
            detail: "no measured case".into(),
        });
    }
    let all = series(points)?;
    let threads: BTreeSet<u64> = all
        .iter()
        .flat_map(|s| at_most_threads(&s.points))
        .map(|p| p.threads as u64)
        .collect();
    let ns: BTreeSet<u64> = all
        .iter()
        .flat_map(|s| at_largest_n(&s.points))
        .map(|p| p.codes)
        .collect();
    let cap_n = format!(
        "Throughput vs N ({})",
        same_or(
            threads,
            |t| format!("{t} thread(s)"),
            "most threads measured"
        )
    );
    let cap_t = format!(
        "Throughput vs threads ({})",
        same_or(
            ns,
            |n| format!("N = {}", style::log_tick(n as f64)),
            "largest N"
        )
    );
    let mut looks = Vec::new();
    for s in &all {
        looks.push(s.codedb.clone());
        looks.extend(s.faiss.clone());
        looks.push(s.bound.clone());
    }
    let figure = ScanFigure {
        all,
        title,
        cap_n,
        cap_t,
        looks,
    };
    canvas::render(&figure, format)
}

/// The two panels over the legend.
struct ScanFigure<'a> {
    all: Vec<Series<'a>>,
    title: &'a str,
    cap_n: String,
    cap_t: String,
    looks: Vec<Look>,
}

impl Figure for ScanFigure<'_> {
    fn size(&self) -> (u32, u32) {
        let legend_h = legend::height(self.looks.len(), LEGEND_COLUMNS);
        (2 * PANEL_W, TITLE_H + PANEL_H + legend_h)
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Result<(), PlotError> {
        let (panels, foot) = canvas::titled(root, self.title, PANEL_H)?;
        let panels = panels.split_evenly((1, 2));
        panel(
            &panels[0],
            &self.all,
            &self.cap_n,
            "N (codes in the segment, log scale)",
            true,
            &at_most_threads,
            &|p| p.codes as f64,
        )?;
        panel(
            &panels[1],
            &self.all,
            &self.cap_t,
            "threads",
            false,
            &at_largest_n,
            &|p| p.threads as f64,
        )?;
        legend::draw(&foot, &self.looks, LEGEND_COLUMNS)
    }
}
