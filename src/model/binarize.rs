//! Sign quantiser (stage kind BINARIZE): bit j = 1 iff `x_j > threshold_j`, thresholds 0 by
//! default — the `B = sgn(V R)` of Gong et al. TPAMI 2013 (§3, eq. 2-3) mapped from {−1, 1}
//! to {0, 1}. (The paper's sgn sends 0 to +1; FORMAT.md's `>` sends it to 0. The two differ
//! only on exact zeros, which leave ITQ's loss unchanged since |±1 − 0| = 1.)
//!
//! Bit j of a code is bit `j % 8` of byte `j / 8` (`CodeKind::Binary`); unused high bits of
//! the last byte are 0.
//!
//! Stored tensors: `thresholds` f32 `[c]`.

use ndarray::{Array2, ArrayView2};

use crate::format::{StageRecord, stage_kind};

use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::quantizer::{RowFault, RowQuantizer, code_rows, encode_rows};
use super::record::{RecordReader, f32_tensor};

/// Packs signs into bits.
#[derive(Debug, Clone, PartialEq)]
pub struct Binarize {
    thresholds: Vec<f32>,
}

impl Binarize {
    /// A sign quantiser with the given per-bit thresholds (finite, at least one).
    pub fn new(thresholds: Vec<f32>) -> Result<Binarize> {
        if thresholds.is_empty() {
            return Err(ModelError::bad_tensor("binarize", "thresholds", "is empty"));
        }
        if let Some(p) = thresholds.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "binarize",
                "thresholds",
                format!("non-finite value at element {p}"),
            ));
        }
        Ok(Binarize { thresholds })
    }

    /// `c` bits with threshold 0 (the sign).
    pub fn zeros(c: usize) -> Result<Binarize> {
        Binarize::new(vec![0.0; c])
    }

    /// Per-bit thresholds: bit j is set when value j exceeds `thresholds[j]`.
    pub fn thresholds(&self) -> &[f32] {
        &self.thresholds
    }

    /// Packed codes of the rows of `x` (row-major, `code_bytes()` per row).
    pub fn encode(&self, x: ArrayView2<f32>) -> Result<Vec<u8>> {
        let rows = checked_rows("binarize: input", x, Some(self.thresholds.len()))?;
        encode_rows(self, "binarize: input", rows.as_slice())
    }

    /// Unpacks codes to ±1 rows (1 bit → +1, 0 bit → −1), the hypercube vertices `B` of
    /// eq. 2.
    pub fn decode_signs(&self, codes: &[u8]) -> Result<Array2<f32>> {
        let cb = self.code_bytes();
        let n = code_rows(codes, cb)?;
        let c = self.thresholds.len();
        let mut out = Array2::<f32>::zeros((n, c));
        for (mut row, code) in out.rows_mut().into_iter().zip(codes.chunks_exact(cb)) {
            for (j, v) in row.iter_mut().enumerate() {
                *v = if super::quantizer::get_bit(code, j) {
                    1.0
                } else {
                    -1.0
                };
            }
        }
        Ok(out)
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::BINARIZE,
            required: true,
            tensors: vec![f32_tensor(
                "thresholds",
                &[self.thresholds.len()],
                self.thresholds.clone(),
            )],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<Binarize> {
        let mut r = RecordReader::new("binarize", stage_kind::BINARIZE, rec)?;
        let (t, _) = r.f32("thresholds", &[None])?;
        r.finish()?;
        Binarize::new(t.to_vec())
    }
}

impl RowQuantizer for Binarize {
    fn in_dim(&self) -> usize {
        self.thresholds.len()
    }
    fn code_bytes(&self) -> usize {
        self.thresholds.len().div_ceil(8)
    }
    fn code_bits(&self) -> usize {
        self.thresholds.len()
    }
    fn project_dim(&self) -> usize {
        self.thresholds.len()
    }
    /// Byte by byte: 8 comparisons packed into one byte (the compiler turns this into a
    /// vector compare and a mask move; a bit at a time cost 8% of encoding).
    fn encode_row(&self, x: &[f32], out: &mut [u8]) -> std::result::Result<(), RowFault> {
        out.fill(0);
        for (byte, (xs, ts)) in out
            .iter_mut()
            .zip(x.chunks(8).zip(self.thresholds.chunks(8)))
        {
            let mut b = 0u8;
            for (i, (&v, &t)) in xs.iter().zip(ts).enumerate() {
                b |= u8::from(v > t) << i;
            }
            *byte = b;
        }
        Ok(())
    }
    /// `x − threshold`: positive exactly where the bit is 1.
    fn project_row(&self, x: &[f32], out: &mut [f32]) {
        for ((o, &v), &t) in out.iter_mut().zip(x).zip(&self.thresholds) {
            *o = v - t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn bit_layout_is_lsb_first_per_byte() {
        let b = Binarize::zeros(10).unwrap();
        // bits 0, 3, 8 set
        let x = array![[1.0f32, -1.0, 0.0, 2.0, -3.0, -0.5, -0.1, -9.0, 0.1, -0.2]];
        assert_eq!(b.encode(x.view()).unwrap(), vec![0b0000_1001, 0b0000_0001]);
        let s = b.decode_signs(&[0b0000_1001, 0b0000_0001]).unwrap();
        assert_eq!(s[(0, 0)], 1.0);
        assert_eq!(s[(0, 1)], -1.0);
        assert_eq!(s[(0, 8)], 1.0);
    }

    #[test]
    fn thresholds_shift_the_decision() {
        let b = Binarize::new(vec![0.5, -0.5]).unwrap();
        assert_eq!(b.encode(array![[0.4f32, -0.4]].view()).unwrap(), vec![0b10]);
        assert_eq!(Binarize::from_record(&b.to_record()).unwrap(), b);
    }

    #[test]
    fn nan_input_is_refused() {
        let b = Binarize::zeros(2).unwrap();
        let err = b.encode(array![[0.0f32, f32::NAN]].view()).unwrap_err();
        assert!(err.to_string().contains("row 0, column 1"), "{err}");
    }
}
