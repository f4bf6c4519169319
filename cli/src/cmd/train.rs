//! `codedb train`: train a model on descriptors, or on the codes of an index, into a model file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use clap::Args;
use codedb::model::{Model, PipelineSpec, TrainEvent, TrainOptions, train as train_model};

use crate::args::{self, usage};
use crate::out::{errln, outln};
use crate::progress;

#[derive(Args)]
/// Train a model (a pipeline of stages) on descriptors and write it to a model file.
#[command(after_help = "Examples:
  codedb train --data X.npy --pipeline pca-itq:64 --out itq64.model
  codedb train --data X.npy --pipeline 'pca:128,pq:16x8' --out pq.model --seed 7
  codedb train --from-index pq-index --pipeline ncmml:64,itq,bits --out m2
  codedb train --data X.npy --labels y.npy --pipeline jscl:32,pq:4x8 --out m3
  codedb train --data X.npy --labels y.npy --pipeline cca:32,itq,bits --out m4
  codedb train --data X.npy --view T.npy --pipeline cca:64,float --out m5
  codedb train --data H.npy --labels y.npy \\
      --pipeline hom:chi2,pca:64,picodes:64 --out m6
  codedb train --data H.npy --labels y.npy \\
      --pipeline hom:chi2,pca:64,classemes:64 --out m7

Pipelines: explicit stage lists (pca:64,itq,bits; pca:128,pq:16x8) or presets lsh:B, \
pca-direct:B, pca-rr:B, pca-itq:B, sklsh:B, kpca-itq:B, pq:MxBITS, pq4:M, opq:MxBITS, float, \
float16. A pipeline ends with a quantiser (bits, sklsh:C, pq:MxB, pq4:M, opq:MxB, float, \
float16).")]
pub struct TrainArgs {
    /// Training descriptors (.npy, .fvecs, .bvecs, IDX, or a Fashion-MNIST directory).
    #[arg(
        long,
        required_unless_present = "from_index",
        conflicts_with = "from_index"
    )]
    pub data: Option<PathBuf>,
    /// Class labels of --data (.npy), for supervised steps (`ncmml:C`, `metric:R`,
    /// `attributes:R`, `cca:R`, `jscl:R`, `picodes:C`, `classemes:C`).
    #[arg(long, conflicts_with = "from_index")]
    pub labels: Option<PathBuf>,
    /// A second view of --data for `cca:R` (.npy or any --data format, one row per row of
    /// --data, e.g. text embeddings); without it CCA uses the one-hot --labels.
    #[arg(long, conflicts_with = "from_index")]
    pub view: Option<PathBuf>,
    /// Instance groups of --data (.npy of integers, one per row; -1 = none): rows sharing an
    /// id are views of one item (renderings, crops, near-duplicates). The supervised steps
    /// then validate on the instance mAP of held-out groups instead of class precision:
    /// `cca:R` chooses ρ (from the `auto` grid unless --cca-rho fixes it), `metric:R` and
    /// `jscl:R` their step size and epoch. The recipe for instance retrieval.
    #[arg(long, conflicts_with = "from_index")]
    pub groups: Option<PathBuf>,
    /// Train on the decoded PQ codes (and labels) of this index instead of --data
    /// (Mensink et al. §5.1); the model keeps the index's transforms in front.
    #[arg(long)]
    pub from_index: Option<PathBuf>,
    /// The pipeline SPEC: a preset or a comma-separated list of stages (see below).
    #[arg(long)]
    pub pipeline: String,
    /// The model file to write (refused if it exists, unless --force).
    #[arg(long)]
    pub out: PathBuf,
    /// Replace --out if it exists (atomically: the old file stays whole until the new one
    /// is complete).
    #[arg(long)]
    pub force: bool,
    /// Seed of every random choice (sampling, rotations, projections, k-means).
    #[arg(long, default_value_t = codedb::DEFAULT_SEED, allow_negative_numbers = true, value_parser = args::u64_0)]
    pub seed: u64,
    /// Train on this many rows sampled with the seed (default: all, up to a cap).
    #[arg(long, allow_negative_numbers = true, value_parser = args::count)]
    pub sample: Option<usize>,
    /// CCA's regularisation ρ, relative to each view's mean variance (`cca:R`). `auto`
    /// chooses it from 1e-4, 1e-3, …, 1e3 by the instance mAP of held-out --groups, or
    /// without groups by the class precision@10 of held-out rows (needs --labels); a
    /// comma-separated list chooses among its values the same way. Default: `auto` with
    /// --groups, else 1e-4.
    #[arg(long, value_name = "RHO")]
    pub cca_rho: Option<codedb::model::CcaRho>,
    /// PiCoDes' λ (eq. 4): the SVMs of `picodes:C` and `classemes:C` cost λ/N per row, N the
    /// training rows (default 100).
    #[arg(long, value_parser = args::finite_positive)]
    pub picodes_c: Option<f64>,
    /// Most rounds of PiCoDes' block coordinate descent (`picodes:C`; default 10).
    #[arg(long, value_parser = args::count)]
    pub picodes_rounds: Option<usize>,
    /// The one-vs-rest classifiers of `attributes:R`: `svm` (linear SVMs, C validated; the
    /// paper's) or `ridge` (ridge regression, λ validated). Default svm.
    #[arg(long, value_parser = ["svm", "ridge"])]
    pub attributes_classifier: Option<String>,
    /// Print per-iteration details (ITQ quantisation loss …).
    #[arg(long)]
    pub verbose: bool,
    /// Print a JSON report (pipeline, dimensions, losses, PCA spectrum, PQ error, PiCoDes
    /// objective and updates per round, what ρ / η validation chose and on what, notes).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub text: super::train_text::TextTrainArgs,
}

/// What `codedb train` learns from.
enum TrainSource {
    /// Vectors (and optional labels) from files.
    Data {
        data: PathBuf,
        labels: Option<PathBuf>,
        view: Option<PathBuf>,
        groups: Option<PathBuf>,
    },
    /// The decoded PQ codes and labels of an index.
    Index(PathBuf),
}

/// A training progress bar: one bar whose label and unit follow the step being trained.
fn train_progress() -> (indicatif::ProgressBar, codedb::model::ProgressFn) {
    let bar = progress::spinner("training");
    let b = bar.clone();
    let phases = Mutex::new(progress::TrainPhases::default());
    let f: codedb::model::ProgressFn = Arc::new(move |e: &TrainEvent| match e {
        TrainEvent::Progress {
            step,
            unit,
            done,
            total,
        } => {
            let Ok(mut phases) = phases.lock() else {
                return;
            };
            match phases.view(step, unit, *done, *total) {
                progress::TrainView::Phase(what) => progress::phase(&b, &what),
                progress::TrainView::Count {
                    what,
                    done,
                    total,
                    restart: true,
                } => progress::count(&b, &what, unit, done, total),
                progress::TrainView::Count { done, .. } => b.set_position(done),
            }
        }
        // Shown whether or not the bar is (a hidden bar's `println` drops lines).
        TrainEvent::Message(m) => b.suspend(|| errln!("{m}")),
    });
    (bar, f)
}

pub fn run(a: TrainArgs) -> Result<ExitCode> {
    let supervised = supervised_options(&a);
    let source = match (a.from_index, a.data) {
        (Some(dir), _) => TrainSource::Index(dir),
        (None, Some(data)) => TrainSource::Data {
            data,
            labels: a.labels,
            view: a.view,
            groups: a.groups,
        },
        (None, None) => usage!("train: pass --data or --from-index"),
    };
    let pipeline = a.pipeline.as_str();
    let spec = match PipelineSpec::parse(pipeline) {
        Ok(s) => s,
        Err(e) => usage!("--pipeline {pipeline}: {e}"),
    };
    if a.out.exists() && !a.force {
        bail!(
            "{}: already exists (pass --force to replace it)",
            a.out.display()
        );
    }
    let (bar, progress) = train_progress();
    let opts = TrainOptions {
        supervised,
        seed: a.seed,
        sample: a.sample,
        verbose: a.verbose,
        progress: Some(progress),
        ..TrainOptions::default()
    };
    let mut text_report = None;
    let (model, report) = match &source {
        TrainSource::Data {
            data,
            labels,
            view,
            groups,
        } => {
            let x = codedb_cli::io::load_vectors(data)?;
            let labels = labels
                .as_deref()
                .map(|p| -> Result<Arc<[i64]>> {
                    let l = codedb_cli::io::load_labels(p)?;
                    if l.len() != x.nrows() {
                        bail!("{}: {} labels for {} rows", p.display(), l.len(), x.nrows());
                    }
                    Ok(l.into())
                })
                .transpose()?;
            let view = view
                .as_deref()
                .map(|p| -> Result<Arc<ndarray::Array2<f32>>> {
                    let v = codedb_cli::io::load_vectors(p)?;
                    if v.nrows() != x.nrows() {
                        bail!(
                            "--view {}: {} rows for {} rows of --data",
                            p.display(),
                            v.nrows(),
                            x.nrows()
                        );
                    }
                    Ok(Arc::new(v))
                })
                .transpose()?;
            let groups = groups
                .as_deref()
                .map(|p| -> Result<Arc<[i64]>> {
                    let g = codedb_cli::io::load_labels(p)?;
                    if g.len() != x.nrows() {
                        bail!(
                            "--groups {}: {} group ids for {} rows of --data",
                            p.display(),
                            g.len(),
                            x.nrows()
                        );
                    }
                    Ok(g.into())
                })
                .transpose()?;
            if spec.needs_labels(view.is_some()) && labels.is_none() {
                usage!("--pipeline {pipeline}: learns from class labels: pass --labels");
            }
            let progress = opts.progress.clone();
            let (m, r) = train_model(
                &spec,
                x.view(),
                &TrainOptions {
                    labels,
                    view,
                    groups,
                    ..opts
                },
            )
            .with_context(|| format!("training {pipeline} on {}", data.display()))?;
            let (m, t) =
                super::train_text::attach(m, x.view(), &a.text, a.seed, progress, a.verbose)?;
            text_report = t;
            (m, r)
        }
        TrainSource::Index(dir) => {
            let snap = crate::inputs::open_snapshot(dir)?;
            codedb::train_from_index(&snap, &spec, &opts).with_context(|| {
                format!(
                    "training {pipeline} on the codes of index {}",
                    dir.display()
                )
            })?
        }
    };
    bar.finish_and_clear();
    for note in &report.notes {
        errln!("note: {note}");
    }
    if a.verbose && !a.json {
        for (i, l) in report.itq_loss.iter().enumerate() {
            outln!("itq iteration {i}: quantisation loss {l:.6}");
        }
    }
    let bytes = model.to_model_file().to_bytes()?;
    write_new_file(&a.out, &bytes, a.force)?;
    let out = &a.out;
    if a.json {
        outln!("{}", train_json(out, &model, &report, text_report.as_ref()));
    } else {
        outln!(
            "wrote {} ({}: {}-D -> {} codes of {} bytes, trained on {} rows)",
            out.display(),
            report.canonical,
            model.input_dim(),
            model.code_kind().name(),
            model.code_bytes(),
            report.training_rows
        );
        if let Some(t) = &text_report {
            super::train_text::print_report(t);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--json` report of `codedb train`: the model written, what training found, and the
/// text head's report when one was trained.
fn train_json(
    out: &Path,
    model: &Model,
    report: &codedb::TrainReport,
    text_report: Option<&codedb::model::PamirReport>,
) -> serde_json::Value {
    serde_json::json!({
        "model": out, "pipeline": report.canonical, "input_dim": model.input_dim(),
        "code_kind": model.code_kind().name(), "code_bytes": model.code_bytes(),
        "code_bits": model.code_bits(), "training_rows": report.training_rows,
        "itq_loss": report.itq_loss, "train_s": report.total_seconds,
        "pca": report.pca.as_ref().map(|p| serde_json::json!({
            "eigenvalues": p.eigenvalues, "total_variance": p.total_variance,
            "explained_variance_ratio": p.explained_variance_ratio,
            "components": pca_components(model),
        })),
        "cca_correlations": report.cca_correlations,
        "cca_rho_choice": report.cca_rho_choice,
        "picodes_objective": report.picodes_objective,
        "picodes_updated": report.picodes_updated,
        "picodes_stop": report.picodes_stop,
        "notes": report.notes,
        "sgd_choice": report.sgd_choice,
        "pq": report.pq.as_ref().map(|q| serde_json::json!({
            "mse": q.mse, "training_points": q.training_points, "splits": q.splits,
        })),
        "text": text_report.map(super::train_text::report_json),
    })
}

/// The settings of the supervised steps from `--cca-rho`, `--picodes-*` and
/// `--attributes-classifier` (defaults for what is not given).
fn supervised_options(a: &TrainArgs) -> codedb::model::SupervisedOptions {
    let mut supervised = codedb::model::SupervisedOptions {
        cca_rho: a.cca_rho.clone(),
        ..Default::default()
    };
    if let Some(c) = a.picodes_c {
        supervised.picodes_c = c;
    }
    if let Some(r) = a.picodes_rounds {
        supervised.picodes_rounds = r;
    }
    if let Some(c) = &a.attributes_classifier {
        supervised.attribute_classifier = match c.as_str() {
            "ridge" => codedb::model::AttributeClassifier::Ridge,
            _ => codedb::model::AttributeClassifier::Svm,
        };
    }
    supervised
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, synced, then
/// renamed over `path` (`replace`) or linked to it only if `path` still does not exist.
fn write_new_file(path: &Path, bytes: &[u8], replace: bool) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let what = || path.display().to_string();
    let mut tmp = tempfile::Builder::new()
        .prefix(".codedb-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(what)?;
    tmp.write_all(bytes).with_context(what)?;
    tmp.as_file().sync_all().with_context(what)?;
    if replace {
        tmp.persist(path).map_err(|e| e.error).with_context(what)?;
    } else {
        tmp.persist_noclobber(path)
            .map_err(|e| e.error)
            .with_context(|| format!("{}: already exists? (pass --force to replace it)", what()))?;
    }
    Ok(())
}

/// The rows of the last PCA projection (a linear stage that carries eigenvalues), for peer
/// comparisons (`tools/compare_peers.py`).
fn pca_components(model: &Model) -> Option<Vec<Vec<f32>>> {
    model.stages().iter().rev().find_map(|s| match s {
        codedb::model::Stage::Linear(l) if l.eigenvalues().is_some() => {
            Some(l.weight().rows().into_iter().map(|r| r.to_vec()).collect())
        }
        _ => None,
    })
}
