//! Colours, lines and fonts shared by every chart, and the helper that draws one series.

use plotters::chart::MeshStyle;
use plotters::coord::CoordTranslate;
use plotters::coord::Shift;
use plotters::coord::combinators::{BindKeyPoints, LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;

use super::target::PlotError;

/// The drawing surface every chart is drawn on.
pub(crate) type Area<DB> = DrawingArea<DB, Shift>;

/// Okabe & Ito's colour-blind-safe colours (yellow left out: too pale on white), then four more.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
    RGBColor(0x88, 0x22, 0x55),
    RGBColor(0x44, 0xAA, 0x99),
    RGBColor(0x99, 0x99, 0x33),
];

pub(crate) const FONT: &str = "sans-serif";
pub(crate) const GREY: RGBColor = RGBColor(0x88, 0x88, 0x88);
/// The minor grid: faint, so a log axis's many lines do not compete with the data.
pub(crate) const LIGHT_GRID: RGBColor = RGBColor(0xEE, 0xEE, 0xEE);

/// How a series' line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dash {
    Solid,
    Dashed,
    Dotted,
}

/// How a series' points are marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    None,
    Circle,
    Triangle,
}

/// The look of one series: also its legend entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Look {
    pub label: String,
    pub color: RGBColor,
    pub dash: Dash,
    pub marker: Marker,
}

impl Look {
    /// The `i`-th series of a figure: the palette's colours, solid, then dashed once they run out.
    pub fn nth(i: usize, label: impl Into<String>, marker: Marker) -> Look {
        Look {
            label: label.into(),
            color: PALETTE[i % PALETTE.len()],
            dash: if (i / PALETTE.len()).is_multiple_of(2) {
                Dash::Solid
            } else {
                Dash::Dashed
            },
            marker,
        }
    }
}

pub(crate) fn caption_font() -> TextStyle<'static> {
    (FONT, 20).into_font().into()
}

pub(crate) fn label_font() -> TextStyle<'static> {
    (FONT, 15).into_font().into()
}

pub(crate) fn axis_font() -> TextStyle<'static> {
    (FONT, 17).into_font().into()
}

/// The builder every panel starts from: its caption, margin and label areas (`y_label_w`
/// pixels for the y tick labels).
pub(crate) fn panel<'a, 'b, DB: DrawingBackend>(
    area: &'a Area<DB>,
    caption: &str,
    y_label_w: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(caption, caption_font())
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(y_label_w);
    builder
}

/// The mesh every panel draws: axis descriptions, fonts and the faint minor grid; the caller
/// adds its tick choices and draws it.
pub(crate) fn mesh<'a, 'c, DB, X, Y, XT, YT>(
    chart: &'c mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> MeshStyle<'a, 'c, X, Y, DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = XT> + ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + ValueFormatter<YT>,
{
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(axis_font())
        .label_style(label_font())
        .light_line_style(LIGHT_GRID);
    mesh
}

/// Draws `points` as one series in `chart` with the given look.
pub(crate) fn series<DB: DrawingBackend, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    points: &[CT::From],
    look: &Look,
) -> Result<(), PlotError>
where
    CT: CoordTranslate,
    CT::From: Clone + 'static,
{
    let err = PlotError::draw("a series");
    let line = ShapeStyle::from(look.color).stroke_width(2);
    match look.dash {
        Dash::Solid => chart
            .draw_series(LineSeries::new(points.iter().cloned(), line))
            .map(drop),
        Dash::Dashed => chart
            .draw_series(DashedLineSeries::new(points.iter().cloned(), 8, 5, line))
            .map(drop),
        Dash::Dotted => chart
            .draw_series(DashedLineSeries::new(points.iter().cloned(), 2, 4, line))
            .map(drop),
    }
    .map_err(err)?;
    let err = PlotError::draw("a series' markers");
    let fill = ShapeStyle::from(look.color).filled();
    match look.marker {
        Marker::None => Ok(()),
        Marker::Circle => chart
            .draw_series(points.iter().map(|p| Circle::new(p.clone(), 4, fill)))
            .map(drop)
            .map_err(err),
        Marker::Triangle => chart
            .draw_series(
                points
                    .iter()
                    .map(|p| TriangleMarker::new(p.clone(), 6, fill)),
            )
            .map(drop)
            .map_err(err),
    }
}

/// A range `lo..hi` that plotters can draw when all values are equal (`pad` is a factor).
pub(crate) fn log_range(values: impl Iterator<Item = f64>, pad: f64) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0f64), |(l, h), v| (l.min(v), h.max(v)));
    (hi > 0.0).then(|| (lo / pad, hi * pad))
}

/// A base-10 log axis over `lo..hi` with ticks chosen here rather than by plotters (whose log
/// key points can miss every round value on a range under a decade, leaving the axis unlabelled,
/// or crowd minor lines): labelled ticks at 1, 2 and 5 times a power of ten (powers of ten only
/// past four decades), grid lines at the other integer multiples.
pub(crate) fn log10_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let (mut bold, mut light) = (Vec::new(), Vec::new());
    let many_decades = hi / lo > 1e4;
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in 1..=9 {
            let v = decade * f64::from(m);
            if v < lo || v > hi {
                continue;
            }
            if m == 1 || (!many_decades && (m == 2 || m == 5)) {
                bold.push(v);
            } else {
                light.push(v);
            }
        }
        decade *= 10.0;
    }
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Formats a number for an axis tick on a log scale: 1e6 as "1e6", 2000 as "2000".
pub(crate) fn log_tick(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return String::new();
    }
    let e = v.log10();
    if (e - e.round()).abs() < 1e-9 && v >= 1e4 {
        format!("1e{}", e.round() as i64)
    } else if v >= 1e4 {
        format!("{:.0e}", v)
    } else if v >= 1.0 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_as_numbers() {
        assert_eq!(log_tick(1e7), "1e7");
        assert_eq!(log_tick(2e9), "2e9");
        assert_eq!(log_tick(64.0), "64");
        assert_eq!(log_tick(5e9), "5e9");
        assert_eq!(log_range([4.0, 4.0].into_iter(), 2.0), Some((2.0, 8.0)));
        assert_eq!(log_range([0.0, f64::NAN].into_iter(), 2.0), None);
        // Under a decade: still labelled ticks (plotters' own key points may have none).
        let axis = log10_axis(1.2e9, 8e9);
        use plotters::coord::ranged1d::Ranged;
        let ticks = axis.key_points(plotters::coord::ranged1d::BoldPoints(20));
        assert_eq!(ticks, vec![2e9, 5e9]);
        let wide = log10_axis(0.5, 2e5).key_points(plotters::coord::ranged1d::BoldPoints(20));
        assert_eq!(wide, vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5]);
    }
}
