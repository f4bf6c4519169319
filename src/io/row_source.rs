//! The streaming interface shared by all vector file readers: rows arrive in bounded chunks, so
//! a training pass (e.g. covariance accumulation) can run over files larger than memory without
//! `mmap` (this module stays free of `unsafe`).

use std::path::Path;

use ndarray::Array2;

use super::error::Result;

/// A source of `f32` vector rows read in chunks, front to back.
///
/// Every chunk is non-empty and finite (NaN/Inf are reported with their absolute row and
/// column); `next_chunk` returns `Ok(None)` once all `rows()` rows have been delivered.
pub trait RowSource {
    /// The file being read (for messages).
    fn path(&self) -> &Path;
    /// Total number of rows in the file.
    fn rows(&self) -> usize;
    /// Number of columns (vector dimension).
    fn dim(&self) -> usize;
    /// Rows delivered so far.
    fn rows_read(&self) -> usize;
    /// The next at most `max_rows` rows (`max_rows` must be positive).
    fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Array2<f32>>>;
}

/// Reads all remaining rows of a source into one matrix.
pub fn read_all_rows(source: &mut dyn RowSource) -> Result<Array2<f32>> {
    let remaining = source.rows() - source.rows_read();
    let mut out = Array2::<f32>::zeros((remaining, source.dim()));
    let mut at = 0;
    // Chunks of ~64 MiB keep the transient conversion buffer small for non-f32 inputs.
    let chunk_rows = ((64usize << 20) / (4 * source.dim().max(1))).max(1);
    while let Some(chunk) = source.next_chunk(chunk_rows)? {
        let n = chunk.nrows();
        out.slice_mut(ndarray::s![at..at + n, ..]).assign(&chunk);
        at += n;
    }
    debug_assert_eq!(at, remaining);
    Ok(out)
}
