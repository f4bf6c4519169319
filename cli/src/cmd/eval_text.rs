//! `codedb eval --task text`: argument plumbing over `codedb_cli::eval::text_eval` (PAMIR §5
//! text → image AvgP / BEP / P10), a table or JSON out.

use std::process::ExitCode;

use anyhow::{Context, Result};
use codedb::model::{CcaRho, MarginPolicy, PamirOptions};
use codedb_cli::eval::{TextEvalData, TextEvalOptions, TextRanker, text_eval};

use super::eval_args::{EvalArgs, load_split, random_split};
use crate::args::usage;
use crate::out::outln;
use crate::progress;

pub fn run(a: &EvalArgs) -> Result<ExitCode> {
    let margins: Vec<MarginPolicy> = a
        .margins
        .iter()
        // clap's value_parser admits only MARGIN_NAMES, so the parse cannot fail.
        .map(|m| m.parse().unwrap_or(MarginPolicy::Constant))
        .collect();
    let rankers = match TextRanker::parse_list(&a.pipelines, &margins) {
        Ok(r) => r,
        Err(e) => usage!("--pipelines: {e}"),
    };
    let (Some(caption_path), Some(query_path)) = (&a.captions, &a.text_queries) else {
        usage!("--task text needs --captions FILE and --text-queries FILE");
    };
    let x = codedb_cli::io::load_vectors(&a.data)
        .with_context(|| format!("--data {}", a.data.display()))?;
    let n = x.nrows();
    let captions = codedb_cli::io::read_captions(caption_path, n)
        .with_context(|| format!("--captions {}", caption_path.display()))?;
    let queries = codedb_cli::io::read_text_queries(query_path, &captions)
        .with_context(|| format!("--text-queries {}", query_path.display()))?;
    let test = match &a.split {
        Some(p) => load_split(p, n)?,
        None => random_split(n, a.seed)
            .into_iter()
            .map(|v| v != 0)
            .collect(),
    };
    let load = |p: &Option<std::path::PathBuf>, what: &str| -> Result<_> {
        p.as_ref()
            .map(|p| {
                codedb_cli::io::load_vectors(p).with_context(|| format!("{what} {}", p.display()))
            })
            .transpose()
    };
    let groups = super::train_text::read_groups(a.pamir_validation_groups.as_deref(), x.nrows())?;
    let ce = load(&a.caption_embeddings, "--caption-embeddings")?;
    let qe = load(&a.query_embeddings, "--query-embeddings")?;
    let opts = TextEvalOptions {
        pamir: PamirOptions {
            c_grid: a.pamir_c.clone(),
            iterations: a.pamir_iterations,
            patience: a.pamir_patience,
            validation: a.pamir_validation,
            ..PamirOptions::default()
        },
        default_epsilon: true,
        cca_rho: a
            .cca_rho
            .as_ref()
            .map_or_else(|| CcaRho::auto().values().to_vec(), |r| r.values().to_vec()),
        cca_powers: a.cca_power.clone(),
        seed: a.seed,
    };
    let data = TextEvalData {
        vectors: x.view(),
        captions: &captions,
        test: &test,
        queries: &queries,
        caption_embeddings: ce.as_ref().map(|e| e.view()),
        query_embeddings: qe.as_ref().map(|e| e.view()),
        validation_groups: groups.as_deref(),
    };
    let bar = progress::spinner("text evaluation");
    let report = text_eval(&data, &rankers, &opts, &mut |step: &str| {
        bar.set_message(format!("text evaluation: {step}"))
    });
    bar.finish_and_clear();
    let report = report.context("eval --task text")?;
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{}: {} training rows, {} test rows, {} of {} queries with a relevant test row",
        a.data.display(),
        report.train_rows,
        report.test_rows,
        report.queries,
        report.queries_given
    );
    outln!(
        "{:<32} {:>5} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>8}",
        "pipeline",
        "bits",
        "AvgP",
        "BEP",
        "P10",
        "C",
        "iters",
        "train s",
        "ms/query"
    );
    for r in &report.rankers {
        outln!(
            "{:<32} {:>5} {:>7.4} {:>7.4} {:>7.4} {:>7} {:>8} {:>9.2} {:>8.3}",
            r.pipeline,
            r.bits,
            r.avgp,
            r.bep,
            r.p10,
            r.c.map_or("-".into(), |c| c.to_string()),
            r.iterations.map_or("-".into(), |i| i.to_string()),
            r.train_s,
            r.query_ms
        );
        if let Some(c) = &r.cca {
            outln!(
                "  (rho = {}, R = {}, directions scaled by correlation^{}{})",
                c.rho,
                c.r,
                c.power,
                c.validation_avgp.map_or(String::new(), |m| format!(
                    ": validation AvgP {m:.4} on {} training rows held out",
                    c.validation_rows
                ))
            );
        }
        if let (Some(sel), Some(stop)) = (r.selected_iterations, r.stopped) {
            outln!("  (best validation checkpoint {sel} iterations; that run stopped by {stop})");
        }
        if r.unknown_queries > 0 {
            outln!(
                "  ({} queries have no word in the text head's vocabulary: ranked in row order)",
                r.unknown_queries
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
