//! `codedb search DIR --text WORDS` / `--text-file F`: rank the rows by the model's text head
//! (PAMIR) over the stored codes. Output as `codedb search` (TSV or JSON, one query per input
//! query, in order).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::search::{SearchArgs, write_hits};
use crate::out::errln;

/// The text queries of `--text` and `--text-file`, in order.
fn text_queries(a: &SearchArgs) -> Result<Vec<String>> {
    let mut out = a.text.clone();
    if let Some(f) = &a.text_file {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("--text-file {}: reading (UTF-8 text)", f.display()))?;
        out.extend(text.lines().map(str::to_string));
        if out.is_empty() {
            bail!("--text-file {}: holds no query (one per line)", f.display());
        }
    }
    Ok(out)
}

pub fn run(a: SearchArgs) -> Result<ExitCode> {
    let queries = text_queries(&a)?;
    let snap = crate::inputs::open_snapshot(&a.dir)?;
    let model = snap
        .model()
        .with_context(|| format!("the model of {}", a.dir.display()))?;
    let mode = a.mode(model)?;
    let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let prepared = snap
        .text_queries(&refs)
        .with_context(|| format!("text queries on {}", a.dir.display()))?;
    for (i, q) in prepared.iter().enumerate() {
        if !q.vector.unknown.is_empty() {
            errln!(
                "note: query {i} {:?}: ignored words not in the model's vocabulary: {}",
                q.text,
                q.vector.unknown.join(", ")
            );
        }
    }
    let threads = crate::args::threads(a.threads);
    let params = a.params(&snap, mode, threads)?;
    let start = Instant::now();
    let hits = snap
        .search_text_prepared(&prepared, &params, None)
        .with_context(|| format!("searching {}", a.dir.display()))?;
    if a.verbose {
        errln!(
            "search: text, {} codes, {} rows, {} queries, {:.3} s",
            model.code_kind().name(),
            snap.live_rows(),
            prepared.len(),
            start.elapsed().as_secs_f64()
        );
    }
    let with = super::search::with_values(&snap, &hits, &a)?;
    if let Err(e) = write_hits(&hits, &a.format, with.as_ref()) {
        crate::out::failed(&e);
    }
    Ok(ExitCode::SUCCESS)
}
