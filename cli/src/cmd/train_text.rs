//! `codedb train … --captions FILE`: a PAMIR text head trained on top of the model, so that
//! `codedb search --text` can rank the index's rows by words.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use codedb::model::{MarginPolicy, PamirOptions, PamirReport, train_pamir};
use codedb::model::{Model, ProgressFn};
use ndarray::ArrayView2;

use crate::args;
use crate::out::outln;

/// The text head options of `codedb train`.
#[derive(Args, Debug, Clone)]
pub struct TextTrainArgs {
    /// Captions or tags of the --data rows, for a text head (PAMIR): a text file with one
    /// caption per line, or a .json list of strings or of tag lists (one entry per row).
    #[arg(long, value_name = "FILE", conflicts_with = "from_index")]
    pub captions: Option<PathBuf>,
    /// Text-head margin: constant (ε = --epsilon, default 1) or caption (ε_k = max(ε, text score
    /// difference of the two captions), default ε = 0.1).
    #[arg(long, default_value = "constant", value_parser = ["constant", "caption"], requires = "captions")]
    pub margin: String,
    /// The margin ε (constant) or its floor (caption); default 1 or 0.1.
    #[arg(long, requires = "captions")]
    pub epsilon: Option<f32>,
    /// Aggressiveness values C tried on the validation split (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.01,0.1,1,10",
        requires = "captions"
    )]
    pub pamir_c: Vec<f32>,
    /// Most passive-aggressive iterations (the count is chosen on the validation split).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true, value_parser = args::count, requires = "captions")]
    pub pamir_iterations: usize,
    /// Fraction of the rows held out to choose C and the iteration count (0: no selection;
    /// then give one C).
    #[arg(long, default_value_t = 0.2, requires = "captions")]
    pub pamir_validation: f64,
    /// Most words in the text head's vocabulary (the most frequent are kept; the head holds
    /// words × projected dimensions f32 weights, at most 2^28).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true, value_parser = args::count, requires = "captions")]
    pub max_words: usize,
}

impl TextTrainArgs {
    fn options(&self, seed: u64, progress: Option<ProgressFn>, verbose: bool) -> PamirOptions {
        let margin = if self.margin == "caption" {
            MarginPolicy::Caption
        } else {
            MarginPolicy::Constant
        };
        let default_eps = match margin {
            MarginPolicy::Caption => 0.1,
            MarginPolicy::Constant => 1.0,
        };
        PamirOptions {
            margin,
            epsilon: self.epsilon.unwrap_or(default_eps),
            c_grid: self.pamir_c.clone(),
            iterations: self.pamir_iterations,
            validation: self.pamir_validation,
            max_words: self.max_words,
            seed,
            progress,
            verbose,
            ..PamirOptions::default()
        }
    }
}

/// Trains a text head on `x` (the --data rows) and its captions, and returns the model with it.
pub fn attach(
    model: Model,
    x: ArrayView2<f32>,
    a: &TextTrainArgs,
    seed: u64,
    progress: Option<ProgressFn>,
    verbose: bool,
) -> Result<(Model, Option<PamirReport>)> {
    let Some(path) = &a.captions else {
        return Ok((model, None));
    };
    let captions = codedb_cli::io::read_captions(path, x.nrows())?;
    let p = model.project(x.view())?;
    let (head, report) = train_pamir(p.view(), &captions, &a.options(seed, progress, verbose))
        .with_context(|| format!("training the text head on {}", path.display()))?;
    Ok((model.with_text_head(head)?, Some(report)))
}

/// The report as JSON (for `train --json`).
pub fn report_json(r: &PamirReport) -> serde_json::Value {
    serde_json::json!({
        "vocabulary": r.vocabulary, "captioned_rows": r.captioned_rows,
        "validation_rows": r.validation_rows, "validation_queries": r.validation_queries,
        "c": r.c, "iterations": r.iterations,
        "loss_before": r.loss_before, "loss_after": r.loss_after,
        "trials": r.trials.iter().map(|t| serde_json::json!({
            "c": t.c, "iterations": t.iterations, "avgp": t.validation.avgp,
            "bep": t.validation.bep, "p10": t.validation.p10,
        })).collect::<Vec<_>>(),
    })
}

/// One line for the text output of `train`.
pub fn print_report(r: &PamirReport) {
    outln!(
        "text head: {} words, C = {}, {} iterations, triplet loss {:.4} -> {:.4}",
        r.vocabulary,
        r.c,
        r.iterations,
        r.loss_before,
        r.loss_after
    );
}
