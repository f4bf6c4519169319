//! Training on PQ-compressed data, as Mensink et al. (TPAMI 2013, §5.1 "Datasets and
//! features") learn their metrics on 64K-dimensional Fisher vectors that only fit in memory
//! product-quantised, decompressing the images of each SGD mini-batch on the fly: the (lossy)
//! reconstructions of the codes stand in for the raw floats.
//!
//! [`train_from_index`] reads the live rows' PQ codes and labels from a [`Snapshot`] (codes
//! are a few bytes a row, so all of them are held) and draws the seeded training sample (the
//! cap of [`TrainOptions::sample`], as [`train`] would). What happens next depends on the
//! pipeline:
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

use super::super::error::ModelError;
use super::super::pipeline::Model;
use super::super::random::{derive_seed, rng, sample_indices};
use super::super::spec::{PipelineSpec, StepSpec};
use super::super::stage::Stage;
use super::super::train::{
    DEFAULT_TRAIN_SAMPLE_CAP, StepTiming, TrainEvent, TrainOptions, TrainReport, train, train_after,
};
use super::classifier::{
    Classifier, ClassifyOptions, FitReport, fit_classifier, fit_on_rows, prepend, streams_rows,
};
use super::error::ClassifyError;
use super::ncmml::{NcmmlOptions, train_ncmml_rows};
use super::projection::Projection;
use super::spec::ClassifierSpec;
use super::train_rows::{CodeRows, RowSource, STREAM_ROWS};
use crate::error::Error;
use crate::storage::Snapshot;

/// Codes decoded per batch on the decoded-sample path.
pub const DECODE_BATCH_ROWS: usize = 65_536;

/// The live rows of an index: their codes (row-major) and labels, with the index's model.
struct IndexRows {
    what: String,
    model: Model,
    codes: Vec<u8>,
    /// `None` for an unlabelled row.
    labels: Vec<Option<i64>>,
}

impl IndexRows {
    /// Reads the codes and labels of the live rows; errors when the codes are not PQ, there
    /// are no live rows, or a row's code has the wrong size.
    fn read(snapshot: &Snapshot) -> Result<IndexRows, Error> {
        let what = format!("--from-index {}", snapshot.dir().display());
        let model = Model::from_model_file(snapshot.model())?;
        if model.pq().is_none() {
            return Err(ModelError::unsupported(
                &what,
                format!(
                    "its codes are {} codes, not PQ: only product-quantised codes decode to \
                     vectors to train on",
                    model.code_kind().name()
                ),
            )
            .into());
        }
        let cb = model.code_bytes();
        let mut codes: Vec<u8> = Vec::new();
        let mut labels: Vec<Option<i64>> = Vec::new();
        for row in snapshot.rows()? {
            if row.code.len() != cb {
                return Err(ModelError::invalid(
                    &what,
                    format!(
                        "row id {}: {} code bytes, the model's codes have {cb}",
                        row.id,
                        row.code.len()
                    ),
                )
                .into());
            }
            labels.push(row.label.map(i64::from));
            codes.extend_from_slice(row.code);
        }
        if labels.is_empty() {
            return Err(ModelError::Empty {
                what: format!("{what}: live rows"),
                rows: 0,
                cols: model.input_dim(),
            }
            .into());
        }
        Ok(IndexRows {
            what,
            model,
            codes,
            labels,
        })
    }

    /// The labels of `idx`; an error naming `needed_by` when one of those rows has none.
    fn labels_of(&self, idx: &[usize], needed_by: &str) -> Result<Vec<i64>, Error> {
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
            )
            .into());
        }
        Ok(idx.iter().filter_map(|&i| self.labels[i]).collect())
    }

    /// The codes of rows `idx`, row-major.
    /// The rows `idx` decoded into one matrix ([`DECODE_BATCH_ROWS`] at a time): the path of
    /// the steps that need the whole sample (idx × D floats).
    fn decode_all(&self, idx: &[usize]) -> Result<ndarray::Array2<f32>, Error> {
        let dim = self.model.project_dim();
        let mut x: Vec<f32> = Vec::with_capacity(idx.len() * dim);
        for chunk in idx.chunks(DECODE_BATCH_ROWS) {
            let dec = self.model.decode(&self.codes_of(chunk))?;
            x.extend(dec.iter());
        }
        Ok(ndarray::Array2::from_shape_vec((idx.len(), dim), x)
            .map_err(|e| ModelError::invalid(&self.what, e.to_string()))?)
    }

    fn codes_of(&self, idx: &[usize]) -> Vec<u8> {
        let cb = self.model.code_bytes();
        let mut out = Vec::with_capacity(idx.len() * cb);
        for &i in idx {
            out.extend_from_slice(&self.codes[i * cb..(i + 1) * cb]);
        }
        out
    }

    /// The index's transforms (everything before its PQ stage) followed by `trained`.
    fn prefix_model(&self, trained: Model) -> Result<Model, Error> {
        let all = self.model.stages();
        let prefix = &all[..all.len() - 1];
        if prefix.is_empty() {
            return Ok(trained);
        }
        let mut stages = prefix.to_vec();
        stages.extend(trained.stages().iter().cloned());
        Ok(Model::new(stages)?)
    }
}

/// The seeded training sample of `n` rows (as [`train`] draws it).
fn sample(opts: &TrainOptions, n: usize) -> Result<Vec<usize>, Error> {
    let cap = opts.sample.unwrap_or(DEFAULT_TRAIN_SAMPLE_CAP);
    if cap == 0 {
        return Err(ModelError::invalid("sample", "must be >= 1 row").into());
    }
    Ok(sample_indices(&mut rng(derive_seed(opts.seed, 0)), n, cap))
}

/// Trains `spec` on the PQ codes of the index behind `snapshot` (see the module docs); the
/// labels of the rows feed supervised steps (`ncmml:C`). `opts.labels` must be `None` (the
/// index's labels are used).
///
/// Errors: the index's codes are not PQ; it has no live rows; a supervised `spec` and a
/// sampled row without a label; then any training error.
pub fn train_from_index(
    snapshot: &Snapshot,
    spec: &PipelineSpec,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), Error> {
    if opts.labels.is_some() {
        return Err(ModelError::invalid(
            "labels",
            format!(
                "--from-index {}: labels come from the index, do not pass TrainOptions::labels",
                snapshot.dir().display()
            ),
        )
        .into());
    }
    let rows = IndexRows::read(snapshot)?;
    let n = rows.labels.len();
    let idx = sample(opts, n)?;
    let labels = if spec.is_supervised() {
        Some(rows.labels_of(&idx, &format!("pipeline {:?}", spec.text))?)
    } else {
        None
    };
    let (trained, mut report) = match (spec.steps.first(), labels) {
        (Some(&StepSpec::Ncmml(c)), Some(labels)) => {
            streamed_ncmml_pipeline(&rows, &idx, labels, spec, c, opts)?
        }
        (_, labels) => decoded_sample_pipeline(&rows, &idx, labels, spec, opts)?,
    };
    let model = rows.prefix_model(trained)?;
    report.input_rows = n;
    report.input_dim = model.input_dim();
    Ok((model, report))
}

/// A pipeline starting with `ncmml:C`: W learned from the sampled codes decoded per
/// mini-batch, then the rest of the pipeline on the sample projected by W.
fn streamed_ncmml_pipeline(
    rows: &IndexRows,
    idx: &[usize],
    labels: Vec<i64>,
    spec: &PipelineSpec,
    c: usize,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), Error> {
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
    let src = RowSource::Codes(CodeRows::new(&rows.what, codes, pq).map_err(model_err)?);
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
    let mut cb = |e: &super::EpochReport| {
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
    let tr = train_ncmml_rows(src.clone(), &labels, &nopts, Some(&mut cb)).map_err(model_err)?;
    let stages = tr.projection.to_stages().map_err(model_err)?;
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
    rows: &IndexRows,
    idx: &[usize],
    labels: Option<Vec<i64>>,
    spec: &PipelineSpec,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), Error> {
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

/// A classifier error as a model error (this module returns the crate error).
fn model_err(e: ClassifyError) -> ModelError {
    match e {
        ClassifyError::Model(m) => *m,
        other => ModelError::unsupported("train --from-index", other.to_string()),
    }
}

/// Fits the classifier `spec` on the PQ codes and labels of the index behind `snapshot`
/// (the live rows, or a seeded sample of `sample` of them). `ncm`, `ncmml*:d` and `ncmc:dxk`
/// read the codes block by block and decode each SGD mini-batch on the fly (class means,
/// k-means within a class, validation likewise; see `train_rows.rs`); the other methods and
/// a `pca:C` prefix need the whole matrix and are fitted by [`fit_classifier`] on the
/// decoded sample. The index's transforms (e.g. the `pca:C` of `pca:C,pq:MxB`) are put in
/// front of the classifier's projections, so it takes the index's raw input vectors.
///
/// Errors: the codes are not PQ; no live rows; a sampled row without a label; an index
/// transform that is not affine (random features); then any fitting error.
pub fn fit_classifier_from_index(
    snapshot: &Snapshot,
    spec: &ClassifierSpec,
    opts: &ClassifyOptions,
    sample: Option<usize>,
) -> Result<(Classifier, FitReport), Error> {
    let t = Instant::now();
    let rows = IndexRows::read(snapshot)?;
    let n = rows.labels.len();
    let cap = sample.unwrap_or(n);
    if cap == 0 {
        return Err(ModelError::invalid("sample", "must be >= 1 row").into());
    }
    let idx = sample_indices(&mut rng(derive_seed(opts.seed, 0)), n, cap);
    let labels = rows.labels_of(&idx, &format!("classifier {:?}", spec.text))?;
    let prefix = transforms_as_projections(&rows)?;
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
        let src = RowSource::Codes(CodeRows::new(&rows.what, codes, pq).map_err(model_err)?);
        let name = spec.text.clone();
        let progress = opts.progress.clone();
        let mut cb = move |e: &super::EpochReport| {
            if let Some(p) = &progress {
                p(&name, e);
            }
        };
        let mut report = FitReport::default();
        let clf = fit_on_rows(spec.method, &src, &labels, opts, &mut cb, &mut report)
            .map_err(model_err)?;
        (clf, report)
    } else {
        let x = rows.decode_all(&idx)?;
        let view = x.view();
        fit_classifier(spec, view, &labels, opts).map_err(model_err)?
    };
    for p in prefix.into_iter().rev() {
        prepend(&mut clf, p);
    }
    report.seconds = t.elapsed().as_secs_f64();
    Ok((clf, report))
}

/// The index's transforms before its PQ stage as a chain of projections `W (x − m)`: a
/// centre joins the linear map or rotation after it (alone, it is `I (x − m)`). Random
/// features and biased linear maps are not of that form: an error.
fn transforms_as_projections(rows: &IndexRows) -> Result<Vec<Projection>, Error> {
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
                    out.push(identity(m).map_err(model_err)?);
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
        out.push(Projection::new(m, w).map_err(model_err)?);
    }
    if let Some(m) = centre {
        out.push(identity(m).map_err(model_err)?);
    }
    Ok(out)
}
