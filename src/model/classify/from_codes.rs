//! Training on PQ-compressed data, as Mensink et al. (TPAMI 2013, §5.1 "Datasets and
//! features") learn their metrics on 64K-dimensional Fisher vectors that only fit in memory
//! product-quantised: the (lossy) reconstructions of the codes stand in for the raw floats.
//!
//! [`train_from_index`] reads the live rows' PQ codes and labels from a [`Snapshot`] (codes
//! are a few bytes a row, so all of them are held), draws the seeded training sample (the
//! cap of [`TrainOptions::sample`], as [`train`] would), and decodes the sampled codes with
//! the index's own model [`DECODE_BATCH_ROWS`] at a time into the training matrix; memory is
//! bounded by the sample, never by the index. (The paper decompresses inside each SGD
//! iteration; here the sample is decoded once before training, which costs sample × D floats
//! and leaves the SGD code unchanged.)
//!
//! PQ reconstructs the quantiser's *input*: when the index's model has transforms before its
//! quantiser (`opq`'s rotation, `pca:C,pq:…`), the reconstructions live in that space, so the
//! returned model is the index's transforms followed by the trained stages: it takes the same
//! raw vectors as the index.

use std::sync::Arc;

use super::super::error::ModelError;
use super::super::pipeline::Model;
use super::super::random::{derive_seed, rng, sample_indices};
use super::super::spec::PipelineSpec;
use super::super::train::{DEFAULT_TRAIN_SAMPLE_CAP, TrainOptions, TrainReport, train};
use crate::error::Error;
use crate::storage::Snapshot;

/// Codes decoded per batch.
pub const DECODE_BATCH_ROWS: usize = 65_536;

/// Trains `spec` on the decoded PQ codes of the index behind `snapshot` (see the module
/// docs); the labels of the rows feed supervised steps (`ncmml:C`). `opts.labels` must be
/// `None` (the index's labels are used).
///
/// Errors: the index's codes are not PQ; it has no live rows; a supervised `spec` and a live
/// row without a label; then any training error.
pub fn train_from_index(
    snapshot: &Snapshot,
    spec: &PipelineSpec,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), Error> {
    let what = format!("--from-index {}", snapshot.dir().display());
    if opts.labels.is_some() {
        return Err(ModelError::invalid(
            "labels",
            format!("{what}: labels come from the index, do not pass TrainOptions::labels"),
        )
        .into());
    }
    let index_model = Model::from_model_file(snapshot.model())?;
    if index_model.pq().is_none() {
        return Err(ModelError::unsupported(
            &what,
            format!(
                "its codes are {} codes, not PQ: only product-quantised codes decode to \
                 vectors to train on",
                index_model.code_kind().name()
            ),
        )
        .into());
    }
    let cb = index_model.code_bytes();
    let supervised = spec.is_supervised();
    let mut codes: Vec<u8> = Vec::new();
    let mut labels: Vec<i64> = Vec::new();
    let mut unlabelled = 0usize;
    let mut first_unlabelled = None;
    for row in snapshot.rows() {
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
        match row.label {
            Some(l) => labels.push(i64::from(l)),
            None => {
                unlabelled += 1;
                first_unlabelled.get_or_insert(row.id);
                labels.push(-1);
            }
        }
        codes.extend_from_slice(row.code);
    }
    let n = labels.len();
    if n == 0 {
        return Err(ModelError::Empty {
            what: format!("{what}: live rows"),
            rows: 0,
            cols: index_model.input_dim(),
        }
        .into());
    }
    if supervised && let Some(id) = first_unlabelled {
        return Err(ModelError::invalid(
            "labels",
            format!(
                "{what}: pipeline {:?} learns from class labels, but {unlabelled} of {n} live \
                 rows have none (first: id {id})",
                spec.text
            ),
        )
        .into());
    }
    let cap = opts.sample.unwrap_or(DEFAULT_TRAIN_SAMPLE_CAP);
    if cap == 0 {
        return Err(ModelError::invalid("sample", "must be >= 1 row").into());
    }
    let idx = sample_indices(&mut rng(derive_seed(opts.seed, 0)), n, cap);
    let dim = index_model.project_dim();
    let mut x: Vec<f32> = Vec::with_capacity(idx.len() * dim);
    let mut batch: Vec<u8> = Vec::with_capacity(DECODE_BATCH_ROWS.min(idx.len()) * cb);
    for chunk in idx.chunks(DECODE_BATCH_ROWS) {
        batch.clear();
        for &i in chunk {
            batch.extend_from_slice(&codes[i * cb..(i + 1) * cb]);
        }
        let dec = index_model.decode(&batch)?;
        x.extend(dec.iter());
    }
    drop(codes);
    let sample_labels: Option<Arc<[i64]>> =
        supervised.then(|| idx.iter().map(|&i| labels[i]).collect());
    let view = ndarray::ArrayView2::from_shape((idx.len(), dim), &x)
        .map_err(|e| ModelError::invalid(&what, e.to_string()))?;
    let (trained, mut report) = train(
        spec,
        view,
        &TrainOptions {
            sample: None,
            labels: sample_labels,
            ..opts.clone()
        },
    )?;
    // The index's transforms (everything before its PQ stage), then the trained stages.
    let prefix = &index_model.stages()[..index_model.stages().len() - 1];
    let model = if prefix.is_empty() {
        trained
    } else {
        let mut stages = prefix.to_vec();
        stages.extend(trained.stages().iter().cloned());
        Model::new(stages)?
    };
    report.input_rows = n;
    report.input_dim = model.input_dim();
    Ok((model, report))
}
