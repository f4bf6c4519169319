//! Training on PQ-compressed data, as Mensink et al. (TPAMI 2013, §5.1 "Datasets and
//! features") learn their metrics on 64K-dimensional Fisher vectors that only fit in memory
//! product-quantised, decompressing the images of each SGD mini-batch on the fly: the (lossy)
//! reconstructions of the codes stand in for the raw floats.
//!
//! [`train_from_codes`] takes PQ codes and their labels held in memory ([`LabelledCodes`]:
//! codes are a few bytes a row, so all of them are held; the live rows of an index, read by
//! `search::train_from_index`) and draws the seeded training sample (the cap of
//! [`TrainOptions::sample`], as [`train`] would). What happens next depends on the pipeline:
//!
//! - a pipeline that starts with `ncmml:C` learns W from the sampled **codes**: every
//!   mini-batch of the SGD (eq. 3-7), the class means, the PCA start of W and the held-out
//!   validation decode their rows into a reused buffer (`train_rows.rs`), so memory is the
//!   codes plus a batch of floats, never sample × D floats. The steps after it (`itq,bits`,
//!   `pq:MxB`, …) then train on the sample *projected* by W (sample × C floats), exactly as
//!   [`train`] does, with the same seeds;
//! - any other pipeline (unsupervised ones, or `pca:C` before `ncmml`, whose steps need the
//!   whole matrix) is trained by [`train`] on the decoded sample, decoded
//!   [`DECODE_BATCH_ROWS`] codes at a time: sample × D floats.
//!
//! Either way the model is bit for bit the one [`train`] learns from the explicitly decoded
//! sample with its labels (tests/train_from_index.rs checks it).
//!
//! PQ reconstructs the quantiser's *input*: when the index's model has transforms before its
//! quantiser (`opq`'s rotation, `pca:C,pq:…`), the reconstructions live in that space, so the
//! returned model is the index's transforms followed by the trained stages: it takes the same
//! raw vectors as the index.

use std::sync::Arc;
use std::time::Instant;

use super::classify::{
    Classifier, ClassifierSpec, ClassifyError, ClassifyOptions, CodeRows, EpochReport, FitReport,
    NcmmlOptions, Projection, RowSource, STREAM_ROWS, fit_classifier, fit_on_rows, prepend,
    streams_rows, train_ncmml_rows,
};
use super::error::ModelError;
use super::pipeline::Model;
use super::random::{derive_seed, rng, sample_indices};
use super::spec::{PipelineSpec, StepSpec};
use super::stage::Stage;
use super::train::{train, train_after};
use super::train_options::{DEFAULT_TRAIN_SAMPLE_CAP, TrainEvent, TrainOptions};
use super::train_report::{StepTiming, TrainReport};

/// Codes decoded per batch on the decoded-sample path.
pub const DECODE_BATCH_ROWS: usize = 65_536;

/// PQ codes (row-major) and their labels, with the model that encoded them: what
/// [`train_from_codes`] and [`fit_classifier_from_codes`] learn from.
#[derive(Debug, Clone)]
pub struct LabelledCodes<'a> {
    /// What the rows are, for error messages (e.g. `--from-index DIR`).
    what: String,
    model: &'a Model,
    codes: Vec<u8>,
    /// `None` for an unlabelled row.
    labels: Vec<Option<i64>>,
}

impl<'a> LabelledCodes<'a> {
    /// No rows yet, for codes of `model`; an error naming `what` when its codes are not PQ
    /// (only product-quantised codes decode to vectors to train on).
    pub fn new(what: impl Into<String>, model: &'a Model) -> Result<LabelledCodes<'a>, ModelError> {
        let what = what.into();
        if model.pq().is_none() {
            return Err(ModelError::unsupported(
                &what,
                format!(
                    "its codes are {} codes, not PQ: only product-quantised codes decode to \
                     vectors to train on",
                    model.code_kind().name()
                ),
            ));
        }
        Ok(LabelledCodes {
            what,
            model,
            codes: Vec::new(),
            labels: Vec::new(),
        })
    }

    /// Appends the row `id` (named in errors) with its code and label; an error when the
    /// code is not `code_bytes` long.
    pub fn push(&mut self, id: u64, code: &[u8], label: Option<u32>) -> Result<(), ModelError> {
        let cb = self.model.code_bytes();
        if code.len() != cb {
            return Err(ModelError::invalid(
                &self.what,
                format!(
                    "row id {id}: {} code bytes, the model's codes have {cb}",
                    code.len()
                ),
            ));
        }
        self.labels.push(label.map(i64::from));
        self.codes.extend_from_slice(code);
        Ok(())
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The model that encoded the codes.
    pub fn model(&self) -> &'a Model {
        self.model
    }

    /// What the rows are (as given to [`LabelledCodes::new`]).
    pub fn what(&self) -> &str {
        &self.what
    }

    /// An error when there are no rows to learn from.
    fn check_not_empty(&self) -> Result<(), ModelError> {
        if self.is_empty() {
            return Err(ModelError::Empty {
                what: format!("{}: rows", self.what),
                rows: 0,
                cols: self.model.input_dim(),
            });
        }
        Ok(())
    }

    /// The labels of `idx`; an error naming `needed_by` when one of those rows has none.
    fn labels_of(&self, idx: &[usize], needed_by: &str) -> Result<Vec<i64>, ModelError> {
        let missing = idx.iter().filter(|&&i| self.labels[i].is_none()).count();
        if missing > 0 {
            return Err(ModelError::invalid(
                "labels",
                format!(
                    "{}: {needed_by} learns from class labels, but {missing} of {} training \
                     rows have none",
                    self.what,
                    idx.len()
                ),
            ));
        }
        Ok(idx.iter().filter_map(|&i| self.labels[i]).collect())
    }

    /// The rows `idx` decoded into one matrix ([`DECODE_BATCH_ROWS`] at a time): the path of
    /// the steps that need the whole sample (idx × D floats).
    fn decode_all(&self, idx: &[usize]) -> Result<ndarray::Array2<f32>, ModelError> {
        let dim = self.model.project_dim();
        let mut x = ndarray::Array2::<f32>::zeros((idx.len(), dim));
        for (k, chunk) in idx.chunks(DECODE_BATCH_ROWS).enumerate() {
            let dec = self.model.decode(&self.codes_of(chunk))?;
            if dec.dim() != (chunk.len(), dim) {
                return Err(ModelError::DimensionMismatch {
                    what: format!("{}: decoded codes", self.what),
                    expected: dim,
                    got: dec.ncols(),
                });
            }
            let from = k * DECODE_BATCH_ROWS;
            x.slice_mut(ndarray::s![from..from + chunk.len(), ..])
                .assign(&dec);
        }
        Ok(x)
    }

    fn codes_of(&self, idx: &[usize]) -> Vec<u8> {
        let cb = self.model.code_bytes();
        let mut out = Vec::with_capacity(idx.len() * cb);
        for &i in idx {
            out.extend_from_slice(&self.codes[i * cb..(i + 1) * cb]);
        }
        out
    }

    /// The model's transforms (everything before its PQ stage) followed by `trained`.
    fn prefix_model(&self, trained: Model) -> Result<Model, ModelError> {
        let all = self.model.stages();
        let prefix = &all[..all.len() - 1];
        if prefix.is_empty() {
            return Ok(trained);
        }
        let mut stages = prefix.to_vec();
        stages.extend(trained.stages().iter().cloned());
        Model::new(stages)
    }
}

/// The seeded training sample of `n` rows (as [`train`] draws it).
fn sample(opts: &TrainOptions, n: usize) -> Result<Vec<usize>, ModelError> {
    let cap = opts.sample.unwrap_or(DEFAULT_TRAIN_SAMPLE_CAP);
    if cap == 0 {
        return Err(ModelError::invalid("sample", "must be >= 1 row"));
    }
    Ok(sample_indices(&mut rng(derive_seed(opts.seed, 0)), n, cap))
}

/// Trains `spec` on the PQ codes of `rows` (see the module docs); the labels of the rows feed
/// supervised steps (`ncmml:C`). `opts.labels` must be `None` (the rows' labels are used).
/// The returned model takes the raw vectors the codes' model takes.
///
/// Errors: no rows; a supervised `spec` and a sampled row without a label; then any training
/// error.
pub fn train_from_codes(
    rows: &LabelledCodes<'_>,
    spec: &PipelineSpec,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), ClassifyError> {
    if opts.labels.is_some() {
        return Err(ModelError::invalid(
            "labels",
            format!(
                "{}: labels come with the codes, do not pass TrainOptions::labels",
                rows.what
            ),
        )
        .into());
    }
    rows.check_not_empty()?;
    let n = rows.labels.len();
    let idx = sample(opts, n)?;
    let labels = if spec.is_supervised() {
        Some(rows.labels_of(&idx, &format!("pipeline {:?}", spec.text))?)
    } else {
        None
    };
    let (trained, mut report) = match (spec.steps.first(), labels) {
        (Some(&StepSpec::Ncmml(c)), Some(labels)) => {
            streamed_ncmml_pipeline(rows, &idx, labels, spec, c, opts)?
        }
        (_, labels) => decoded_sample_pipeline(rows, &idx, labels, spec, opts)?,
    };
    let model = rows.prefix_model(trained)?;
    report.input_rows = n;
    report.input_dim = model.input_dim();
    Ok((model, report))
}

/// A pipeline starting with `ncmml:C`: W learned from the sampled codes decoded per
/// mini-batch, then the rest of the pipeline on the sample projected by W.
fn streamed_ncmml_pipeline(
    rows: &LabelledCodes<'_>,
    idx: &[usize],
    labels: Vec<i64>,
    spec: &PipelineSpec,
    c: usize,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), ClassifyError> {
    let t = Instant::now();
    let Some(pq) = rows.model.pq() else {
        return Err(ModelError::unsupported(&rows.what, "its codes are not PQ").into());
    };
    // All rows in order when the sample is everything (no copy of the codes).
    let sampled;
    let codes: &[u8] = if idx.len() == rows.labels.len() {
        &rows.codes
    } else {
        sampled = rows.codes_of(idx);
        &sampled
    };
    let src = RowSource::Codes(CodeRows::new(&rows.what, codes, pq)?);
    let name = format!("ncmml:{c}");
    // As `train` seeds its first step.
    let mut nopts = NcmmlOptions::new(c);
    nopts.sgd.seed = derive_seed(opts.seed, 1);
    let max = nopts.sgd.max_epochs as u64;
    let emit = |e: TrainEvent| {
        if let Some(p) = &opts.progress
            && (opts.verbose || !matches!(e, TrainEvent::Message(_)))
        {
            p(&e);
        }
    };
    let mut cb = |e: &EpochReport| {
        emit(TrainEvent::Progress {
            step: name.clone(),
            unit: "epochs",
            done: e.epoch as u64,
            total: max,
        });
        emit(TrainEvent::Message(format!(
            "{name} epoch {:>3}: loss {:.6}, validation top-1 {:.4} top-5 {:.4}",
            e.epoch, e.train_loss, e.val_top1, e.val_top5
        )));
    };
    let tr = train_ncmml_rows(src.clone(), &labels, &nopts, Some(&mut cb))?;
    let stages = tr.projection.to_stages()?;
    // The sample through W, in the blocks `train` materialises it in.
    let d = src.dim();
    let all: Vec<usize> = (0..src.n()).collect();
    let mut projected = Vec::with_capacity(src.n() * c);
    let mut buf = Vec::new();
    for blk in all.chunks(STREAM_ROWS) {
        src.fill(blk, &mut buf);
        debug_assert_eq!(buf.len(), blk.len() * d);
        let mut cur = std::mem::take(&mut buf);
        for s in &stages {
            cur = s.apply_batch(&cur);
        }
        projected.extend_from_slice(&cur);
    }
    let report = TrainReport {
        spec: spec.text.clone(),
        canonical: spec.canonical(),
        input_rows: idx.len(),
        training_rows: idx.len(),
        input_dim: d,
        steps: vec![StepTiming {
            step: StepSpec::Ncmml(c).token(),
            seconds: t.elapsed().as_secs_f64(),
        }],
        total_seconds: t.elapsed().as_secs_f64(),
        ..TrainReport::default()
    };
    Ok(train_after(
        spec,
        1,
        stages,
        projected,
        Some(labels),
        report,
        opts,
    )?)
}

/// Any other pipeline: [`train`] on the decoded sample (sample × D floats).
fn decoded_sample_pipeline(
    rows: &LabelledCodes<'_>,
    idx: &[usize],
    labels: Option<Vec<i64>>,
    spec: &PipelineSpec,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), ClassifyError> {
    let x = rows.decode_all(idx)?;
    let view = x.view();
    Ok(train(
        spec,
        view,
        &TrainOptions {
            sample: None,
            labels: labels.map(Arc::from),
            ..opts.clone()
        },
    )?)
}

/// Fits the classifier `spec` on the PQ codes and labels of `rows` (all of them, or a seeded
/// sample of `sample`). `ncm`, `ncmml*:d` and `ncmc:dxk` read the codes block by block and
/// decode each SGD mini-batch on the fly (class means, k-means within a class, validation
/// likewise; see `train_rows.rs`); the other methods and a `pca:C` prefix need the whole
/// matrix and are fitted by [`fit_classifier`] on the decoded sample. The codes' model's
/// transforms (e.g. the `pca:C` of `pca:C,pq:MxB`) are put in front of the classifier's
/// projections, so it takes the model's raw input vectors.
///
/// Errors: no rows; a sampled row without a label; a transform that is not affine (random
/// features); then any fitting error.
pub fn fit_classifier_from_codes(
    rows: &LabelledCodes<'_>,
    spec: &ClassifierSpec,
    opts: &ClassifyOptions,
    sample: Option<usize>,
) -> Result<(Classifier, FitReport), ClassifyError> {
    let t = Instant::now();
    rows.check_not_empty()?;
    let n = rows.labels.len();
    let cap = sample.unwrap_or(n);
    if cap == 0 {
        return Err(ModelError::invalid("sample", "must be >= 1 row").into());
    }
    let idx = sample_indices(&mut rng(derive_seed(opts.seed, 0)), n, cap);
    let labels = rows.labels_of(&idx, &format!("classifier {:?}", spec.text))?;
    let prefix = transforms_as_projections(rows)?;
    let Some(pq) = rows.model.pq() else {
        return Err(ModelError::unsupported(&rows.what, "its codes are not PQ").into());
    };
    let (mut clf, mut report) = if streams_rows(spec) {
        let sampled;
        let codes: &[u8] = if idx.len() == n {
            &rows.codes
        } else {
            sampled = rows.codes_of(&idx);
            &sampled
        };
        let src = RowSource::Codes(CodeRows::new(&rows.what, codes, pq)?);
        let name = spec.text.clone();
        let progress = opts.progress.clone();
        let mut cb = move |e: &EpochReport| {
            if let Some(p) = &progress {
                p(&name, e);
            }
        };
        let mut report = FitReport::default();
        let clf = fit_on_rows(spec.method, &src, &labels, opts, &mut cb, &mut report)?;
        (clf, report)
    } else {
        let x = rows.decode_all(&idx)?;
        let view = x.view();
        fit_classifier(spec, view, &labels, opts)?
    };
    for p in prefix.into_iter().rev() {
        prepend(&mut clf, p);
    }
    report.seconds = t.elapsed().as_secs_f64();
    Ok((clf, report))
}

/// The model's transforms before its PQ stage as a chain of projections `W (x − m)`: a
/// centre joins the linear map or rotation after it (alone, it is `I (x − m)`). Random
/// features and biased linear maps are not of that form: an error.
fn transforms_as_projections(rows: &LabelledCodes<'_>) -> Result<Vec<Projection>, ClassifyError> {
    let all = rows.model.stages();
    let mut out = Vec::new();
    let mut centre: Option<Vec<f32>> = None;
    let identity = |m: Vec<f32>| -> Result<Projection, ClassifyError> {
        let d = m.len();
        Projection::new(m, ndarray::Array2::eye(d))
    };
    for s in &all[..all.len() - 1] {
        let (w, din) = match s {
            Stage::Center(c) => {
                if let Some(m) = centre.take() {
                    out.push(identity(m)?);
                }
                centre = Some(c.mean().to_vec());
                continue;
            }
            Stage::Linear(l) if l.bias().is_none() => (l.weight().to_owned(), l.weight().ncols()),
            Stage::Rotation(r) => (r.matrix().to_owned(), r.matrix().ncols()),
            other => {
                return Err(ModelError::unsupported(
                    &rows.what,
                    format!(
                        "its model's {} stage is not an affine map W (x - m): classifiers \
                         cannot take the index's input vectors through it",
                        other.name()
                    ),
                )
                .into());
            }
        };
        let m = centre.take().unwrap_or_else(|| vec![0.0; din]);
        out.push(Projection::new(m, w)?);
    }
    if let Some(m) = centre {
        out.push(identity(m)?);
    }
    Ok(out)
}
