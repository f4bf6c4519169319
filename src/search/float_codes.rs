//! Float codes (float32 / float16 stage) seen as dense vectors for the dense scan kernels.
//!
//! A float code is the projected vector stored raw, little-endian (FORMAT.md §3.1). The dense
//! kernels take `&[f32]` / `&[f16]`: a column that is aligned (mapped segment sections are) is
//! borrowed as is; one that is not (an in-memory log batch may start anywhere) is copied once
//! per search.

use std::borrow::Cow;

use half::f16;

use crate::format::CodeKind;
use crate::scan::DenseValues;

use super::error::{SearchError, invalid};

/// A block's float codes as typed values.
pub(crate) enum FloatColumn<'a> {
    F32(Cow<'a, [f32]>),
    F16(Cow<'a, [f16]>),
}

impl<'a> FloatColumn<'a> {
    /// Views `codes` of `kind` (Float32 or Float16) as values.
    pub fn new(codes: &'a [u8], kind: CodeKind) -> Result<FloatColumn<'a>, SearchError> {
        match kind {
            CodeKind::Float32 => Ok(FloatColumn::F32(cast_le(codes, f32::from_le_bytes))),
            CodeKind::Float16 => Ok(FloatColumn::F16(cast_le(codes, |b: [u8; 2]| {
                f16::from_le_bytes(b)
            }))),
            other => Err(invalid(
                "codes",
                format!("{} codes are not float vectors", other.name()),
            )),
        }
    }

    pub fn values(&self) -> DenseValues<'_> {
        match self {
            FloatColumn::F32(v) => DenseValues::F32(v),
            FloatColumn::F16(v) => DenseValues::F16(v),
        }
    }
}

/// Borrows `bytes` as `T` when the layout allows (little-endian host, aligned, whole
/// elements), else decodes element by element.
fn cast_le<T: bytemuck::Pod, const N: usize>(
    bytes: &[u8],
    from_le: impl Fn([u8; N]) -> T,
) -> Cow<'_, [T]> {
    if cfg!(target_endian = "little")
        && let Ok(v) = bytemuck::try_cast_slice::<u8, T>(bytes)
    {
        return Cow::Borrowed(v);
    }
    let (chunks, _) = bytes.as_chunks::<N>();
    Cow::Owned(chunks.iter().map(|c| from_le(*c)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misaligned_columns_are_copied_with_the_same_values() {
        let v = [1.5f32, -2.0, 3.25];
        let mut bytes = vec![0u8];
        for x in v {
            bytes.extend(x.to_le_bytes());
        }
        let col = FloatColumn::new(&bytes[1..], CodeKind::Float32).unwrap();
        match col.values() {
            DenseValues::F32(s) => assert_eq!(s, &v),
            DenseValues::F16(_) => panic!("wrong type"),
        }
        let h: Vec<u8> = [f16::from_f32(0.5), f16::from_f32(-4.0)]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        match FloatColumn::new(&h, CodeKind::Float16).unwrap().values() {
            DenseValues::F16(s) => assert_eq!(s[1].to_f32(), -4.0),
            DenseValues::F32(_) => panic!("wrong type"),
        }
        assert!(FloatColumn::new(&h, CodeKind::Pq8).is_err());
    }
}
