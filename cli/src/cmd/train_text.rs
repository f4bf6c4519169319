//! `codedb train … --captions FILE`: a PAMIR text head trained on top of the model, so that
//! `codedb search --text` can rank the index's rows by words.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use clap::builder::PossibleValuesParser;
use codedb::model::{
    MARGIN_NAMES, MarginPolicy, PAMIR_DEFAULT_ITERATIONS, PamirOptions, PamirReport, PamirStop,
};
use codedb::model::{Model, ProgressFn};
use ndarray::ArrayView2;

use crate::args;
use crate::out::{errln, outln};

/// The text head options of `codedb train`.
#[derive(Args, Debug, Clone)]
pub struct TextTrainArgs {
    /// Captions or tags of the --data rows, for a text head (PAMIR): a text file with one
    /// caption per line, or a .json list of strings or of tag lists (one entry per row).
    #[arg(long, value_name = "FILE", conflicts_with = "from_index")]
    pub captions: Option<PathBuf>,
    /// Text-head margin: constant (ε = --epsilon, default 1) or caption (ε_k = max(ε, text score
    /// difference of the two captions), default ε = 0.1).
    #[arg(long, default_value = "constant", value_parser = PossibleValuesParser::new(MARGIN_NAMES.iter().map(|m| m.0)), requires = "captions")]
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
    /// Most passive-aggressive iterations per validation run (the cap: a run stops earlier
    /// when its validation AvgP stops improving; the count is chosen on the validation split).
    #[arg(long, default_value_t = PAMIR_DEFAULT_ITERATIONS, allow_negative_numbers = true, value_parser = args::count, requires = "captions")]
    pub pamir_iterations: usize,
    /// Validation checkpoints (spaced ×1.5) in a row without a 0.5 % AvgP gain after which a
    /// validation run stops.
    #[arg(long, default_value_t = 3, allow_negative_numbers = true, value_parser = args::count, requires = "captions")]
    pub pamir_patience: usize,
    /// Fraction of the rows held out to choose C and the iteration count (0: no selection;
    /// then give one C).
    #[arg(long, default_value_t = 0.2, requires = "captions")]
    pub pamir_validation: f64,
    /// Group ids of the --data rows (.npy of integers, one per row, e.g. the item each
    /// near-duplicate image renders): the validation split keeps every group on one side.
    #[arg(long, value_name = "FILE", requires = "captions")]
    pub pamir_validation_groups: Option<PathBuf>,
    /// Most words in the text head's vocabulary (the most frequent are kept; the head holds
    /// words × projected dimensions f32 weights, at most 2^28).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true, value_parser = args::count, requires = "captions")]
    pub max_words: usize,
}

impl TextTrainArgs {
    fn options(
        &self,
        seed: u64,
        groups: Option<Vec<i64>>,
        progress: Option<ProgressFn>,
        verbose: bool,
    ) -> PamirOptions {
        // clap's value_parser admits only MARGIN_NAMES, so the parse cannot fail.
        let margin: MarginPolicy = self.margin.parse().unwrap_or(MarginPolicy::Constant);
        PamirOptions {
            c_grid: self.pamir_c.clone(),
            iterations: self.pamir_iterations,
            patience: self.pamir_patience,
            validation: self.pamir_validation,
            validation_groups: groups,
            max_words: self.max_words,
            seed,
            progress,
            verbose,
            ..PamirOptions::default()
        }
        .with_margin(margin, self.epsilon)
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
    let groups = read_groups(a.pamir_validation_groups.as_deref(), x.nrows())?;
    let opts = a.options(seed, groups, progress, verbose);
    let (model, report) = model
        .with_trained_text_head(x.view(), &captions, &opts)
        .with_context(|| format!("training the text head on {}", path.display()))?;
    if let Some(note) = report.cap_note() {
        errln!("note: {note}");
    }
    Ok((model, Some(report)))
}

/// `--pamir-validation-groups FILE`: one integer per row, or an error naming the file.
pub fn read_groups(path: Option<&std::path::Path>, rows: usize) -> Result<Option<Vec<i64>>> {
    let Some(path) = path else {
        return Ok(None);
    };
    let g = codedb_cli::io::load_labels(path)
        .with_context(|| format!("--pamir-validation-groups {}", path.display()))?;
    if g.len() != rows {
        anyhow::bail!(
            "--pamir-validation-groups {}: {} group ids for {rows} data rows",
            path.display(),
            g.len()
        );
    }
    Ok(Some(g))
}

/// The report as JSON (for `train --json`).
pub fn report_json(r: &PamirReport) -> serde_json::Value {
    serde_json::json!({
        "vocabulary": r.vocabulary, "captioned_rows": r.captioned_rows,
        "validation_rows": r.validation_rows, "validation_groups": r.validation_groups,
        "validation_queries": r.validation_queries,
        "c": r.c, "selected_iterations": r.selected_iterations, "iterations": r.iterations,
        "stopped": r.stopped.map(PamirStop::name), "cap_note": r.cap_note(),
        "loss_before": r.loss_before, "loss_after": r.loss_after,
        "trials": r.trials.iter().map(|t| serde_json::json!({
            "c": t.c, "iterations": t.iterations, "avgp": t.validation.avgp,
            "bep": t.validation.bep, "p10": t.validation.p10,
            "iterations_run": t.iterations_run, "stopped": t.stopped.name(),
            "checkpoints": t.checkpoints.iter().map(|k| serde_json::json!({
                "iterations": k.iterations, "avgp": k.avgp,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// One line for the text output of `train`.
pub fn print_report(r: &PamirReport) {
    let chosen = match r.stopped {
        Some(s) => format!(
            " (best validation checkpoint {}, that run stopped by {})",
            r.selected_iterations,
            s.name()
        ),
        None => String::new(),
    };
    outln!(
        "text head: {} words, C = {}, {} iterations{chosen}, triplet loss {:.4} -> {:.4}",
        r.vocabulary,
        r.c,
        r.iterations,
        r.loss_before,
        r.loss_after
    );
}
