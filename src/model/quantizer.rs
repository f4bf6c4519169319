//! The contract of the last stage of a pipeline, the one that turns floats into code bytes
//! (sign bits, SKLSH bits, PQ, float storage), and the parallel driver that applies it.

use rayon::prelude::*;

use super::error::{ModelError, Result};
use super::transform::ROW_BLOCK;

/// Why one row could not be encoded (only float16 storage can fail: values beyond ±65504).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowFault {
    /// Column of the value that could not be encoded.
    pub col: usize,
    /// The value.
    pub value: f32,
    /// Why it could not be encoded.
    pub detail: &'static str,
}

/// A stage that turns an `in_dim()`-float row into `code_bytes()` bytes.
pub trait RowQuantizer: Sync {
    /// Columns of the input.
    fn in_dim(&self) -> usize;
    /// Bytes per code.
    fn code_bytes(&self) -> usize;
    /// Meaningful bits per code.
    fn code_bits(&self) -> usize;
    /// Columns of [`RowQuantizer::project_row`]'s output.
    fn project_dim(&self) -> usize;
    /// Encodes one row into `out` (`code_bytes()` bytes; every byte is written).
    fn encode_row(&self, x: &[f32], out: &mut [u8]) -> std::result::Result<(), RowFault>;
    /// Encodes a row-major block of rows into `out` (`code_bytes()` per row); returns the first
    /// faulty row (block-relative). Every row must get exactly the code [`encode_row`] gives it
    /// alone; quantisers with a multi-row kernel (PQ) override this.
    ///
    /// [`encode_row`]: RowQuantizer::encode_row
    fn encode_many(&self, x: &[f32], out: &mut [u8]) -> Option<(usize, RowFault)> {
        let (d, cb) = (self.in_dim(), self.code_bytes());
        for (r, (orow, xrow)) in out.chunks_exact_mut(cb).zip(x.chunks_exact(d)).enumerate() {
            if let Err(f) = self.encode_row(xrow, orow) {
                return Some((r, f));
            }
        }
        None
    }
    /// The real-valued vector the code quantises, for asymmetric queries: for binary stages a
    /// vector whose positive entries are exactly the 1 bits; for PQ and float the input.
    fn project_row(&self, x: &[f32], out: &mut [f32]);
}

/// Encodes the rows of one block ([`RowQuantizer::encode_many`]); returns the first faulty
/// row (block-relative).
pub(crate) fn encode_block(
    q: &(impl RowQuantizer + ?Sized),
    x: &[f32],
    out: &mut [u8],
) -> Option<(usize, RowFault)> {
    q.encode_many(x, out)
}

/// The error for the first fault in row order, so it does not depend on scheduling.
pub(crate) fn first_fault(what: &str, faults: Vec<Option<(usize, RowFault)>>) -> Result<()> {
    if let Some((row, f)) = faults.into_iter().flatten().next() {
        return Err(ModelError::OutOfRange {
            what: what.to_string(),
            row,
            col: f.col,
            value: f.value,
            detail: f.detail.to_string(),
        });
    }
    Ok(())
}

/// The number of rows in `codes` of `cb` bytes each; an error unless that is a positive
/// whole number.
pub(crate) fn code_rows(codes: &[u8], cb: usize) -> Result<usize> {
    if codes.is_empty() || !codes.len().is_multiple_of(cb) {
        return Err(ModelError::invalid(
            "codes",
            format!(
                "length {} is not a positive multiple of {cb} bytes",
                codes.len()
            ),
        ));
    }
    Ok(codes.len() / cb)
}

/// Encodes a row-major buffer of rows (parallel over row blocks; each row independently).
/// `what` names the input in errors.
pub(crate) fn encode_rows(
    q: &(impl RowQuantizer + ?Sized),
    what: &str,
    x: &[f32],
) -> Result<Vec<u8>> {
    let (d, cb) = (q.in_dim(), q.code_bytes());
    let n = x.len() / d.max(1);
    let mut out = vec![0u8; n * cb];
    let faults: Vec<Option<(usize, RowFault)>> = out
        .par_chunks_mut(ROW_BLOCK * cb)
        .zip(x.par_chunks(ROW_BLOCK * d))
        .enumerate()
        .map(|(b, (o, xi))| encode_block(q, xi, o).map(|(r, f)| (b * ROW_BLOCK + r, f)))
        .collect();
    first_fault(what, faults)?;
    Ok(out)
}

/// Sets bit `j` of a packed code: byte `j / 8`, bit position `j % 8` (least significant
/// first), the layout of `CodeKind::Binary` (FORMAT.md §3.1).
#[inline]
pub(crate) fn set_bit(code: &mut [u8], j: usize) {
    if let Some(b) = code.get_mut(j / 8) {
        *b |= 1 << (j % 8);
    }
}

/// Reads bit `j` of a packed code: byte `j / 8`, bit position `j % 8` (least significant
/// first), the layout of `CodeKind::Binary` (FORMAT.md §3.1).
#[inline]
pub fn get_bit(code: &[u8], j: usize) -> bool {
    code.get(j / 8).is_some_and(|b| b >> (j % 8) & 1 == 1)
}
