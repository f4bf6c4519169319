//! Where a model's stages came from: the pipeline spec it was trained with, the seed, and for
//! each stage the spec step that learned it. A `linear` stage is a `linear` stage to the
//! encoder whether PCA, CCA or JSCL fitted it; `inspect` and `Model::origin` say which.
//!
//! Stored as stage kind 10 `origin` (format 1.6), written OPTIONAL because encoding does not
//! need it: a 1.5 reader skips it and reports it as skipped. Tensors, exactly these:
//!
//! | tensor | dtype | shape | content |
//! |---|---|---|---|
//! | `spec` | u8 | `[B]` | the explicit pipeline spec, UTF-8, steps separated by `,` (e.g. `cca:32,itq,bits`) |
//! | `stage_steps` | u64 | `[S]` | for each of the model's S pipeline stages, the index of the spec step that produced it (non-decreasing, < the number of steps) |
//! | `seed` | u64 | `[]` | the training seed (`TrainOptions::seed`) |

use crate::format::{StageRecord, Tensor, TensorData, stage_kind};

use super::error::{ModelError, Result};
use super::record::RecordReader;

const STAGE: &str = "origin";

/// Longest stored spec, in bytes.
pub const MAX_ORIGIN_SPEC: usize = 4096;

/// How a model was trained (stage kind 10, optional; see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    spec: String,
    stage_steps: Vec<usize>,
    seed: u64,
}

impl Origin {
    /// Checked: `spec` is 1..=4096 bytes of comma-separated non-empty steps, and `stage_steps`
    /// (one per pipeline stage) are non-decreasing indices of those steps.
    pub fn new(spec: String, stage_steps: Vec<usize>, seed: u64) -> Result<Origin> {
        let bad = |tensor: &str, detail: String| ModelError::bad_tensor(STAGE, tensor, detail);
        if spec.is_empty() || spec.len() > MAX_ORIGIN_SPEC {
            return Err(bad(
                "spec",
                format!("is {} bytes, must be 1..={MAX_ORIGIN_SPEC}", spec.len()),
            ));
        }
        let steps = spec.split(',').count();
        if spec
            .split(',')
            .any(|s| s.trim().is_empty() || s.trim() != s)
        {
            return Err(bad("spec", format!("{spec:?} has an empty or padded step")));
        }
        if let Some((i, &s)) = stage_steps.iter().enumerate().find(|&(_, &s)| s >= steps) {
            return Err(bad(
                "stage_steps",
                format!("stage {i} names step {s}, but the spec has {steps} steps"),
            ));
        }
        if let Some(i) = (1..stage_steps.len()).find(|&i| stage_steps[i] < stage_steps[i - 1]) {
            return Err(bad(
                "stage_steps",
                format!("stage {i} names an earlier step than stage {}", i - 1),
            ));
        }
        Ok(Origin {
            spec,
            stage_steps,
            seed,
        })
    }

    /// The explicit pipeline spec the model was trained with.
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The training seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of pipeline stages this origin describes.
    pub fn stages(&self) -> usize {
        self.stage_steps.len()
    }

    /// The spec step (e.g. `cca:32`) that produced pipeline stage `stage`.
    pub fn step_of(&self, stage: usize) -> Option<&str> {
        let s = *self.stage_steps.get(stage)?;
        self.spec.split(',').nth(s)
    }

    /// The stage record (kind 10, optional).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::ORIGIN,
            required: false,
            tensors: vec![
                Tensor::new(
                    "spec",
                    &[self.spec.len() as u64],
                    TensorData::U8(self.spec.as_bytes().to_vec()),
                ),
                Tensor::new(
                    "stage_steps",
                    &[self.stage_steps.len() as u64],
                    TensorData::U64(self.stage_steps.iter().map(|&s| s as u64).collect()),
                ),
                Tensor::scalar_u64("seed", self.seed),
            ],
        }
    }

    /// Reads an origin from its stage record, checking every tensor (errors name the tensor).
    pub fn from_record(rec: &StageRecord) -> Result<Origin> {
        let mut r = RecordReader::new(STAGE, stage_kind::ORIGIN, rec)?;
        let (bytes, _) = r.u8s("spec", &[None])?;
        let steps = r.u64s("stage_steps", &[None])?;
        let seed = r.u64_scalar("seed")?;
        r.finish()?;
        let spec = std::str::from_utf8(bytes)
            .map_err(|_| ModelError::bad_tensor(STAGE, "spec", "is not UTF-8"))?;
        let steps = steps
            .iter()
            .map(|&s| usize::try_from(s).unwrap_or(usize::MAX))
            .collect();
        Origin::new(spec.to_string(), steps, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_step_names() {
        let o = Origin::new("cca:32,itq,bits".into(), vec![0, 0, 1, 2], 7).unwrap();
        assert_eq!(Origin::from_record(&o.to_record()).unwrap(), o);
        assert_eq!(o.step_of(1), Some("cca:32"));
        assert_eq!(o.step_of(2), Some("itq"));
        assert_eq!(o.step_of(3), Some("bits"));
        assert_eq!(o.step_of(4), None);
    }

    #[test]
    fn malformed_origins_are_refused_naming_the_tensor() {
        for (spec, steps, tensor) in [
            ("", vec![], "spec"),
            ("pca:8,,bits", vec![0], "spec"),
            ("pca:8,bits", vec![0, 2], "stage_steps"),
            ("pca:8,bits", vec![1, 0], "stage_steps"),
        ] {
            let e = Origin::new(spec.into(), steps, 1).unwrap_err().to_string();
            assert!(e.contains(tensor), "{e}");
        }
        let mut rec = Origin::new("bits".into(), vec![0], 1).unwrap().to_record();
        rec.tensors[0].data = TensorData::U8(vec![0xff]);
        let e = Origin::from_record(&rec).unwrap_err().to_string();
        assert!(e.contains("UTF-8"), "{e}");
    }
}
