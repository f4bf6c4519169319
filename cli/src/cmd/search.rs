//! `codedb search`: the k best rows per query, or every row within a Hamming radius.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use codedb::{Hit, SearchError, SearchMode};
use ndarray::{ArrayView2, s};

use super::search_shared::{SearchArgs, check_with, with_values, write_hits};
use crate::args::usage;
use crate::inputs;
use crate::out::errln;
use crate::progress;

/// Queries per search call when a progress bar is shown: enough that each call still shares
/// its passes over the codes among many queries (`scan::schedule`), few enough that the bar
/// moves about a hundred times.
fn progress_chunk(queries: usize) -> usize {
    (queries / 100).max(256)
}

pub fn run(a: SearchArgs) -> Result<ExitCode> {
    if !a.text.is_empty() || a.text_file.is_some() {
        return super::search_text::run(a);
    }
    if a.examples.is_some() || a.classifier.is_some() {
        return super::search_examples::run(a);
    }
    let Some(queries) = a.queries.clone() else {
        usage!("search: pass --queries, --text or --text-file");
    };
    if let (Some(_), Some(m)) = (a.radius, a.mode.as_deref())
        && m != "hamming"
    {
        usage!("--radius is a Hamming hash lookup; it does not take --mode {m}");
    }
    let snap = crate::open::open_snapshot(&a.dir)?;
    check_with(&snap, &a)?;
    let model = snap
        .model()
        .with_context(|| format!("the model of {}", a.dir.display()))?;
    let mode = a.mode(model)?;
    let q = inputs::vectors_for(
        "--queries",
        &queries,
        model.input_dim(),
        &inputs::index_model(&a.dir),
    )?;
    let threads = crate::args::threads(a.threads);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("--threads")?;
    let start = Instant::now();
    let hits: Vec<Vec<Hit>> = match a.radius {
        Some(r) => {
            if mode != SearchMode::Hamming {
                bail!(
                    "--radius is a Hamming hash lookup, and this index's codes are searched by \
                     {} (binary codes are needed)",
                    mode.name()
                );
            }
            let filter = a.row_filter(&snap)?;
            let mut h = pool
                .install(|| match &filter {
                    Some(f) => snap.search_radius_filtered(q.view(), r, f),
                    None => snap.search_radius(q.view(), r),
                })
                .with_context(|| format!("--radius {r} on {}", a.dir.display()))?;
            if let Some(k) = a.k {
                for l in &mut h {
                    l.truncate(k);
                }
            }
            h
        }
        None => {
            let params = a.params(&snap, mode, threads)?;
            let option = if params.lists.is_some() {
                Some("--classes")
            } else {
                a.nprobe.map(|_| "--nprobe")
            };
            if let Some(option) = option {
                let c = snap.list_coverage()?;
                if c.unlisted_rows > 0 && c.listed_rows > 0 {
                    errln!(
                        "note: {} of the {} live rows have no list id; {option} scans them too \
                         (rows without a list are in every list-restricted search)",
                        c.unlisted_rows,
                        c.unlisted_rows + c.listed_rows
                    );
                }
            }
            let run = |q: ArrayView2<f32>| {
                pool.install(|| snap.search(q, &params))
                    .map_err(|e| match e {
                        SearchError::NoLists { live_rows, .. } => anyhow::anyhow!(
                            "{}: {} has no inverted lists (none of its {live_rows} live rows has \
                             a list id), so it would scan every row; file rows under lists with \
                             --lists label|nearest at codedb build or add",
                            option.unwrap_or("--classes"),
                            a.dir.display()
                        ),
                        e => {
                            anyhow::Error::new(e).context(format!("searching {}", a.dir.display()))
                        }
                    })
            };
            let bar = progress::bar(q.nrows() as u64, "searching", "queries");
            if bar.is_hidden() {
                run(q.view())?
            } else {
                // Results do not depend on how queries are grouped; chunks let the bar move.
                let mut all = Vec::with_capacity(q.nrows());
                let chunk = progress_chunk(q.nrows());
                for from in (0..q.nrows()).step_by(chunk) {
                    let to = (from + chunk).min(q.nrows());
                    all.extend(run(q.slice(s![from..to, ..]))?);
                    bar.set_position(to as u64);
                }
                bar.finish_and_clear();
                all
            }
        }
    };
    if a.verbose {
        errln!(
            "search: mode {}, {} rows, {} queries, threads {threads}, {:.3} s",
            mode.name(),
            snap.live_rows(),
            q.nrows(),
            start.elapsed().as_secs_f64()
        );
    }
    let with = with_values(&snap, &hits, &a)?;
    if let Err(e) = write_hits(&hits, &a.format, with.as_ref()) {
        crate::out::failed(&e);
    }
    Ok(ExitCode::SUCCESS)
}
