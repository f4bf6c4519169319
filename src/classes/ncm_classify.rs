//! NCM classification (Mensink et al., TPAMI 2013, eq. 1 in the bias form of eq. 9-11): the
//! top classes of each query row by a dense dot-product scan over the projected class means
//! (over a snapshot: `Snapshot::classify`, in the search room). The arithmetic is the one NCM's
//! (`model/classify/ncm.rs`, its centred scan table); this file checks the queries and names
//! the classes.

use ndarray::ArrayView2;
use serde::Serialize;

use crate::model::Model;

use super::class_means::ClassMeans;
use super::error::{ClassError, Result};

/// One class of a classification result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassScore {
    /// The class's name.
    pub name: String,
    /// The class's id.
    pub id: u32,
    /// The centred eq. 9 score (larger is better; see `class_means`).
    pub score: f32,
}

impl ClassMeans {
    /// The `top` best classes of each row of `z` (already projected by the model, `dim()`
    /// columns), best first, ties by smaller class id. Fewer than `top` when the table has
    /// fewer classes.
    pub fn classify_projected(
        &self,
        z: ArrayView2<f32>,
        top: usize,
    ) -> Result<Vec<Vec<ClassScore>>> {
        if top == 0 {
            return Err(ClassError::invalid("top", "must be at least 1"));
        }
        if self.is_empty() {
            return Err(ClassError::NoClasses {
                dir: "class table".into(),
            });
        }
        let p = self.dim();
        if z.ncols() != p {
            return Err(ClassError::Dimension {
                argument: "projected queries".into(),
                expected: p,
                got: z.ncols(),
            });
        }
        if z.nrows() == 0 {
            return Err(ClassError::invalid("data", "no rows to classify"));
        }
        // Queries `[Wx − r, 1]`: the dot with a scan row `[Wμ_c − r, b'_c]` is the centred
        // eq. 9 score.
        let mut q = Vec::with_capacity(z.nrows() * (p + 1));
        for (i, row) in z.rows().into_iter().enumerate() {
            for (j, (v, r)) in row.iter().zip(self.reference()).enumerate() {
                if !v.is_finite() {
                    return Err(ClassError::NonFinite {
                        argument: "data".into(),
                        row: i,
                        col: j,
                        value: *v as f64,
                    });
                }
                q.push(v - r);
            }
            q.push(1.0);
        }
        let k = top.min(self.len());
        let hits = self.scan.top_k(&q, k)?;
        Ok(hits
            .into_iter()
            .map(|list| {
                list.into_iter()
                    .map(|(score, id)| {
                        let id = id as u32;
                        ClassScore {
                            name: self.name(id).unwrap_or_default().to_string(),
                            id,
                            score,
                        }
                    })
                    .collect()
            })
            .collect())
    }

    /// Projects the rows of `x` (raw descriptors) with `model` and classifies them.
    pub fn classify(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        top: usize,
    ) -> Result<Vec<Vec<ClassScore>>> {
        if model.id() != self.model_id() {
            return Err(ClassError::ModelMismatch {
                expected: self.model_id().to_string(),
                got: model.id().to_string(),
            });
        }
        let z = model.project(x)?;
        self.classify_projected(z.view(), top)
    }
}
