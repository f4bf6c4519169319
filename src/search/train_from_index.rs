//! Training on the PQ codes of an index (Mensink et al., TPAMI 2013, §5.1): the live rows'
//! codes and labels of a [`Snapshot`], read through the snapshot's checks, handed to
//! [`train_from_codes`] / [`fit_classifier_from_codes`] with the snapshot's model (the model
//! room knows nothing of indexes; see `model/train_from_codes.rs` for what happens next).

use crate::model::classify::{Classifier, ClassifierSpec, ClassifyOptions, FitReport};
use crate::model::{LabelledCodes, fit_classifier_from_codes, train_from_codes};
use crate::model::{Model, ModelError, PipelineSpec, TrainOptions, TrainReport};
use crate::storage::Snapshot;

use super::error::SearchError;

/// The codes and labels of the live rows of `snapshot`; errors when its codes are not PQ or
/// it has no live rows.
fn read_rows(snapshot: &Snapshot) -> Result<LabelledCodes<'_>, SearchError> {
    let what = format!("--from-index {}", snapshot.dir().display());
    let model = snapshot.model()?;
    let mut rows = LabelledCodes::new(what, model)?;
    for row in snapshot.rows()? {
        rows.push(row.id, row.code, row.label)?;
    }
    if rows.is_empty() {
        return Err(ModelError::Empty {
            what: format!("{}: live rows", rows.what()),
            rows: 0,
            cols: model.input_dim(),
        }
        .into());
    }
    Ok(rows)
}

/// Trains `spec` on the PQ codes of the live rows of `snapshot` ([`train_from_codes`]); the
/// rows' labels feed supervised steps (`ncmml:C`), so `opts.labels` must be `None`. The
/// model returned takes the index's raw input vectors.
///
/// Errors: the index's codes are not PQ; it has no live rows; a supervised `spec` and a
/// sampled row without a label; then any training error.
pub fn train_from_index(
    snapshot: &Snapshot,
    spec: &PipelineSpec,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport), SearchError> {
    let rows = read_rows(snapshot)?;
    Ok(train_from_codes(&rows, spec, opts)?)
}

/// Fits the classifier `spec` on the PQ codes and labels of the live rows of `snapshot`
/// (all of them, or a seeded sample of `sample`; see [`fit_classifier_from_codes`]). The
/// classifier takes the index's raw input vectors.
///
/// Errors: the codes are not PQ; no live rows; a sampled row without a label; an index
/// transform that is not affine (random features); then any fitting error.
pub fn fit_classifier_from_index(
    snapshot: &Snapshot,
    spec: &ClassifierSpec,
    opts: &ClassifyOptions,
    sample: Option<usize>,
) -> Result<(Classifier, FitReport), SearchError> {
    let rows = read_rows(snapshot)?;
    Ok(fit_classifier_from_codes(&rows, spec, opts, sample)?)
}
