//! Float storage (stage kind FLOAT): the vector itself as little-endian f32 or IEEE half
//! (f16, round to nearest even), the exact-search and re-ranking baseline. f16 halves the
//! bytes at ~3 significant digits; a value beyond f16's range (±65504) is refused rather than
//! stored as infinity.
//!
//! Stored tensors: `dim` u64 `[]` (vector length), `bits` u64 `[]` (32 or 16).

use half::f16;
use ndarray::{Array2, ArrayView2};

use crate::format::{StageRecord, Tensor, stage_kind};

use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::quantizer::{RowFault, RowQuantizer, code_rows, encode_rows};
use super::record::RecordReader;

/// Stores vectors as floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatStage {
    dim: usize,
    half: bool,
}

impl FloatStage {
    /// `dim`-float vectors stored as f16 when `half`, else f32.
    pub fn new(dim: usize, half: bool) -> Result<FloatStage> {
        if dim == 0 {
            return Err(ModelError::invalid("float stage", "dimension must be >= 1"));
        }
        Ok(FloatStage { dim, half })
    }

    /// Values per vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// True for f16 storage.
    pub fn is_half(&self) -> bool {
        self.half
    }

    /// Encodes rows as little-endian f32 or f16 values; a value beyond the f16 range is an error.
    pub fn encode(&self, x: ArrayView2<f32>) -> Result<Vec<u8>> {
        let rows = checked_rows("float: input", x, Some(self.dim))?;
        encode_rows(self, "float: input", rows.as_slice())
    }

    /// Stored codes back to f32 rows.
    pub fn decode(&self, codes: &[u8]) -> Result<Array2<f32>> {
        let cb = self.code_bytes();
        let n = code_rows(codes, cb)?;
        let vals: Vec<f32> = if self.half {
            codes
                .chunks_exact(2)
                .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect()
        } else {
            codes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        Array2::from_shape_vec((n, self.dim), vals)
            .map_err(|e| ModelError::shape("float: decoded codes", e))
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::FLOAT,
            required: true,
            tensors: vec![
                Tensor::scalar_u64("dim", self.dim as u64),
                Tensor::scalar_u64("bits", if self.half { 16 } else { 32 }),
            ],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<FloatStage> {
        let mut r = RecordReader::new("float", stage_kind::FLOAT, rec)?;
        let dim = r.u64_scalar("dim")?;
        let bits = r.u64_scalar("bits")?;
        r.finish()?;
        let half = match bits {
            16 => true,
            32 => false,
            b => {
                return Err(ModelError::bad_tensor(
                    "float",
                    "bits",
                    format!("must be 16 or 32, got {b}"),
                ));
            }
        };
        let dim = usize::try_from(dim)
            .ok()
            .filter(|&d| d >= 1 && d <= u32::MAX as usize / 4)
            .ok_or_else(|| {
                ModelError::bad_tensor("float", "dim", format!("out of range: {dim}"))
            })?;
        FloatStage::new(dim, half)
    }
}

impl RowQuantizer for FloatStage {
    fn in_dim(&self) -> usize {
        self.dim
    }
    fn code_bytes(&self) -> usize {
        self.dim * if self.half { 2 } else { 4 }
    }
    fn code_bits(&self) -> usize {
        8 * self.code_bytes()
    }
    fn project_dim(&self) -> usize {
        self.dim
    }
    fn encode_row(&self, x: &[f32], out: &mut [u8]) -> std::result::Result<(), RowFault> {
        if self.half {
            for (j, (&v, o)) in x.iter().zip(out.chunks_exact_mut(2)).enumerate() {
                if v.abs() > f16::MAX.to_f32() {
                    return Err(RowFault {
                        col: j,
                        value: v,
                        detail: "outside the float16 range (±65504)",
                    });
                }
                o.copy_from_slice(&f16::from_f32(v).to_le_bytes());
            }
        } else {
            for (&v, o) in x.iter().zip(out.chunks_exact_mut(4)) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
        Ok(())
    }
    fn project_row(&self, x: &[f32], out: &mut [f32]) {
        out.copy_from_slice(&x[..out.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn f32_and_f16_round_trip() {
        let x = array![[1.5f32, -2.25, 1e-3], [0.0, 65504.0, -7.0]];
        let f = FloatStage::new(3, false).unwrap();
        let c = f.encode(x.view()).unwrap();
        assert_eq!(c.len(), 24);
        assert_eq!(f.decode(&c).unwrap(), x);
        let h = FloatStage::new(3, true).unwrap();
        let c = h.encode(x.view()).unwrap();
        assert_eq!(c.len(), 12);
        let y = h.decode(&c).unwrap();
        for (a, b) in x.iter().zip(y.iter()) {
            assert!((a - b).abs() <= 1e-3 * a.abs().max(1e-3), "{a} vs {b}");
        }
        assert_eq!(FloatStage::from_record(&h.to_record()).unwrap(), h);
    }

    #[test]
    fn f16_overflow_names_row_and_column() {
        let h = FloatStage::new(2, true).unwrap();
        let err = h
            .encode(array![[1.0f32, 2.0], [1.0, 1e5]].view())
            .unwrap_err();
        assert!(err.to_string().contains("row 1, column 1"), "{err}");
    }
}
