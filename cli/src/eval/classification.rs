//! Flat top-k classification error (Mensink et al., TPAMI 2013, §5.1 "Evaluation measures": the
//! average top-1 and top-5 flat error of ILSVRC'10): a sample's error is 1 when its true label
//! is not among the first k predicted labels, and the mean over samples is reported.

use crate::error::{EvalError, EvalResult as Result};

/// `predictions[s]` lists labels best first for sample s (e.g. classes ranked by NCM distance
/// with [`super::rank_by_score`]); each list needs at least `k` entries.
pub fn top_k_error<P: AsRef<[i64]>>(predictions: &[P], truth: &[i64], k: usize) -> Result<f64> {
    if predictions.is_empty() {
        return Err(EvalError::Empty {
            what: "predictions",
        });
    }
    if truth.len() != predictions.len() {
        return Err(EvalError::LengthMismatch {
            what: "truth",
            expected: predictions.len(),
            found: truth.len(),
        });
    }
    if k == 0 {
        return Err(EvalError::InvalidArgument {
            argument: "k",
            detail: "k must be at least 1".into(),
        });
    }
    let mut wrong = 0usize;
    for (s, (p, t)) in predictions.iter().zip(truth).enumerate() {
        let p = p.as_ref();
        if p.len() < k {
            return Err(EvalError::TooShort {
                what: "predictions",
                query: s,
                len: p.len(),
                required: k,
            });
        }
        if !p[..k].contains(t) {
            wrong += 1;
        }
    }
    Ok(wrong as f64 / predictions.len() as f64)
}
