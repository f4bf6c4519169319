//! Stored vectors (for re-ranking) as the format holds them: the index-level setting
//! ([`VectorSpec`]: element type and dimension), borrowed typed views of a column
//! ([`VectorSlice`], zero-copy from a mapped segment or from a log batch in memory), and owned
//! buffers ([`VectorBuf`], a log batch's column).
//!
//! f16 values are IEEE half precision, rounded to nearest even when written; reading widens
//! them to f32 exactly.

use half::f16;
use half::slice::HalfFloatSliceExt;

use super::segment_meta::VectorDType;

/// What an index stores beside each code: vectors of `dim` values of type `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VectorSpec {
    /// Element type of the stored values.
    pub dtype: VectorDType,
    /// Values per vector.
    pub dim: u32,
}

impl VectorSpec {
    /// A spec from its parts.
    pub fn new(dtype: VectorDType, dim: u32) -> VectorSpec {
        VectorSpec { dtype, dim }
    }

    /// Bytes per stored row (`dim × element size`).
    pub fn row_bytes(&self) -> u64 {
        self.dim as u64 * self.dtype.size()
    }

    /// As the `(dtype, dim)` pair segment metadata uses.
    pub fn pair(&self) -> (VectorDType, u32) {
        (self.dtype, self.dim)
    }
}

/// A borrowed column of stored vectors, row-major.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VectorSlice<'a> {
    /// Values stored as f32.
    F32(&'a [f32]),
    /// Values stored as IEEE half precision.
    F16(&'a [f16]),
}

impl<'a> VectorSlice<'a> {
    /// Element type of the values.
    pub fn dtype(&self) -> VectorDType {
        match self {
            VectorSlice::F32(_) => VectorDType::F32,
            VectorSlice::F16(_) => VectorDType::F16,
        }
    }

    /// Number of values (rows × dim).
    pub fn len(&self) -> usize {
        match self {
            VectorSlice::F32(v) => v.len(),
            VectorSlice::F16(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values `[start, end)` as a slice of the same type (`None` when out of range).
    pub fn range(&self, start: usize, end: usize) -> Option<VectorSlice<'a>> {
        Some(match self {
            VectorSlice::F32(v) => VectorSlice::F32(v.get(start..end)?),
            VectorSlice::F16(v) => VectorSlice::F16(v.get(start..end)?),
        })
    }

    /// Row `i` of `dim` values, widened to f32, into `out` (`out.len() == dim`). Returns false
    /// (and leaves `out` unchanged) when the row is out of range.
    pub fn row_into(&self, i: usize, dim: usize, out: &mut [f32]) -> bool {
        let (Some(start), Some(end)) = (i.checked_mul(dim), (i + 1).checked_mul(dim)) else {
            return false;
        };
        if out.len() != dim {
            return false;
        }
        match self {
            VectorSlice::F32(v) => match v.get(start..end) {
                Some(r) => out.copy_from_slice(r),
                None => return false,
            },
            VectorSlice::F16(v) => match v.get(start..end) {
                // The slice conversion runs F16C / NEON eight values at a time (exact, as
                // `to_f32`); per value it was a call through `half`'s CPU dispatch, most of a
                // re-ranked IVF query's time.
                Some(r) => r.convert_to_f32_slice(out),
                None => return false,
            },
        }
        true
    }

    /// Whether every value is finite.
    pub fn all_finite(&self) -> bool {
        match self {
            VectorSlice::F32(v) => v.iter().all(|x| x.is_finite()),
            VectorSlice::F16(v) => v.iter().all(|x| x.is_finite()),
        }
    }

    /// The little-endian bytes of the values (zero-copy: hosts are little-endian, `mod.rs`).
    pub fn as_bytes(&self) -> &'a [u8] {
        match self {
            VectorSlice::F32(v) => bytemuck::cast_slice(v),
            VectorSlice::F16(v) => bytemuck::cast_slice(v),
        }
    }
}

/// An owned column of stored vectors, row-major (a log batch's).
#[derive(Debug, Clone, PartialEq)]
pub enum VectorBuf {
    /// Values stored as f32.
    F32(Vec<f32>),
    /// Values stored as IEEE half precision.
    F16(Vec<f16>),
}

impl VectorBuf {
    /// An empty column of type `dtype`.
    pub fn empty(dtype: VectorDType) -> VectorBuf {
        match dtype {
            VectorDType::F32 => VectorBuf::F32(Vec::new()),
            VectorDType::F16 => VectorBuf::F16(Vec::new()),
        }
    }

    /// Converts f32 values to `dtype` (f16: rounded to nearest even).
    pub fn from_f32(dtype: VectorDType, values: impl IntoIterator<Item = f32>) -> VectorBuf {
        match dtype {
            VectorDType::F32 => VectorBuf::F32(values.into_iter().collect()),
            VectorDType::F16 => VectorBuf::F16(values.into_iter().map(f16::from_f32).collect()),
        }
    }

    /// Decodes little-endian bytes of `dtype` values (`bytes.len()` a multiple of the size).
    pub fn from_le_bytes(dtype: VectorDType, bytes: &[u8]) -> VectorBuf {
        match dtype {
            VectorDType::F32 => VectorBuf::F32(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            ),
            VectorDType::F16 => VectorBuf::F16(
                bytes
                    .chunks_exact(2)
                    .map(|c| f16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
        }
    }

    /// Removes every value, keeping the allocation.
    pub fn clear(&mut self) {
        match self {
            VectorBuf::F32(v) => v.clear(),
            VectorBuf::F16(v) => v.clear(),
        }
    }

    /// The column, borrowed.
    pub fn as_slice(&self) -> VectorSlice<'_> {
        match self {
            VectorBuf::F32(v) => VectorSlice::F32(v),
            VectorBuf::F16(v) => VectorSlice::F16(v),
        }
    }

    /// Element type of the values.
    pub fn dtype(&self) -> VectorDType {
        self.as_slice().dtype()
    }

    /// Number of values (rows × dim).
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends values `[start, end)` of `src` (same dtype; a dtype mismatch appends nothing and
    /// returns false).
    pub fn extend_from(&mut self, src: VectorSlice<'_>, start: usize, end: usize) -> bool {
        match (self, src) {
            (VectorBuf::F32(d), VectorSlice::F32(s)) => match s.get(start..end) {
                Some(r) => d.extend_from_slice(r),
                None => return false,
            },
            (VectorBuf::F16(d), VectorSlice::F16(s)) => match s.get(start..end) {
                Some(r) => d.extend_from_slice(r),
                None => return false,
            },
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_rows_widen_exactly_and_bytes_round_trip() {
        let b = VectorBuf::from_f32(VectorDType::F16, [0.5, -1.25, 3.0, 1.0e-3]);
        let s = b.as_slice();
        let mut out = [0f32; 2];
        assert!(s.row_into(1, 2, &mut out));
        assert_eq!(out, [3.0, f16::from_f32(1.0e-3).to_f32()]);
        assert!(!s.row_into(2, 2, &mut out));
        let again = VectorBuf::from_le_bytes(VectorDType::F16, s.as_bytes());
        assert_eq!(again, b);
        let f = VectorBuf::from_f32(VectorDType::F32, [1.0, f32::NAN]);
        assert!(!f.as_slice().all_finite());
        assert_eq!(
            VectorBuf::from_le_bytes(VectorDType::F32, f.as_slice().as_bytes()).len(),
            2
        );
    }
}
