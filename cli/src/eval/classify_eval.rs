//! `codedb eval --task classify`: fit every classifier SPEC of a `;`-separated list on the
//! training rows (`split == 0`) and report the flat top-1 / top-5 error (Mensink et al. TPAMI
//! 2013, §5.1) on the test rows (`split == 1`). With fewer than 5 classes the "top-5" error
//! is the top-C error (0).

use std::time::Instant;

use ndarray::{Array2, ArrayView2};
use serde::Serialize;

use codedb::model::{ClassifierSpec, ClassifyError, ClassifyOptions, fit_classifier};

type Result<T> = std::result::Result<T, ClassifyError>;

use super::classification::top_k_error;

/// One classifier's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassifyRow {
    pub pipeline: String,
    pub top1_error: f64,
    pub top5_error: f64,
    /// Wall time of fitting (including any validation / early stopping).
    pub train_s: f64,
    /// Wall time of classifying the test rows.
    pub test_s: f64,
    /// Dimension classes are compared in.
    pub dim: usize,
    pub classes: usize,
    pub train_rows: usize,
    pub test_rows: usize,
    /// SGD epochs run and the epoch kept (learned metrics only).
    pub epochs: Option<usize>,
    pub best_epoch: Option<usize>,
    /// Validated settings (k, λ, ...).
    pub detail: String,
}

fn gather(x: ArrayView2<f32>, idx: &[usize]) -> Array2<f32> {
    x.select(ndarray::Axis(0), idx)
}

/// Fits and evaluates each SPEC of `pipelines` (all parsed before any training, so a typo
/// fails fast with the bad token named). `split[i]` is 0 (train) or 1 (test).
pub fn classify_eval(
    data: ArrayView2<f32>,
    labels: &[i64],
    split: &[i32],
    pipelines: &str,
    opts: &ClassifyOptions,
) -> Result<Vec<ClassifyRow>> {
    let specs = ClassifierSpec::parse_list(pipelines)?;
    let n = data.nrows();
    for (what, len) in [("labels", labels.len()), ("split", split.len())] {
        if len != n {
            return Err(ClassifyError::LengthMismatch {
                what: what.into(),
                expected: n,
                got: len,
            });
        }
    }
    let mut train = Vec::new();
    let mut test = Vec::new();
    for (i, &s) in split.iter().enumerate() {
        match s {
            0 => train.push(i),
            1 => test.push(i),
            v => {
                return Err(invalid(
                    "split",
                    format!("row {i}: value {v}, expected 0 (train) or 1 (test)"),
                ));
            }
        }
    }
    if train.is_empty() || test.is_empty() {
        return Err(invalid(
            "split",
            format!(
                "{} training and {} test rows: both must be non-empty",
                train.len(),
                test.len()
            ),
        ));
    }
    let xtr = gather(data, &train);
    let xte = gather(data, &test);
    let ytr: Vec<i64> = train.iter().map(|&i| labels[i]).collect();
    let yte: Vec<i64> = test.iter().map(|&i| labels[i]).collect();
    let mut rows = Vec::with_capacity(specs.len());
    for spec in &specs {
        let (clf, rep) = fit_classifier(spec, xtr.view(), &ytr, opts)?;
        let c = clf.classes().len();
        let k5 = 5.min(c);
        let t = Instant::now();
        let pred = clf.top_k(xte.view(), k5)?;
        let test_s = t.elapsed().as_secs_f64();
        let e1 = top_k_error(&pred, &yte, 1).map_err(|e| invalid("evaluation", e.to_string()))?;
        let e5 = top_k_error(&pred, &yte, k5).map_err(|e| invalid("evaluation", e.to_string()))?;
        rows.push(ClassifyRow {
            pipeline: spec.text.clone(),
            top1_error: e1,
            top5_error: e5,
            train_s: rep.seconds,
            test_s,
            dim: rep.dim,
            classes: c,
            train_rows: train.len(),
            test_rows: test.len(),
            epochs: rep.sgd.as_ref().map(|s| s.epochs.len()),
            best_epoch: rep.sgd.as_ref().map(|s| s.best_epoch),
            detail: rep.detail,
        });
    }
    Ok(rows)
}

/// A [`ClassifyError::InvalidArgument`] naming `argument`.
fn invalid(argument: &str, detail: impl Into<String>) -> ClassifyError {
    ClassifyError::InvalidArgument {
        argument: argument.to_string(),
        detail: detail.into(),
    }
}
