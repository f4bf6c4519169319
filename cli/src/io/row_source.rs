//! The streaming interface shared by all vector file readers: rows arrive in bounded chunks, so
//! a training pass (e.g. covariance accumulation) can run over files larger than memory without
//! `mmap` (this module stays free of `unsafe`).

use std::path::Path;

use ndarray::Array2;

use crate::error::{IoError, IoResult as Result};

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
///
/// The buffer grows with the data actually read, so a header that announces more rows than
/// the (possibly compressed) stream holds cannot trigger a huge allocation up front.
pub fn read_all_rows(source: &mut dyn RowSource) -> Result<Array2<f32>> {
    let remaining = source.rows() - source.rows_read();
    let dim = source.dim();
    // Chunks of ~64 MiB keep the transient conversion buffer small for non-f32 inputs.
    let chunk_rows = ((64usize << 20) / (4 * dim.max(1))).max(1);
    let announced = remaining.saturating_mul(dim);
    let mut data: Vec<f32> = Vec::with_capacity(announced.min(16 << 20));
    let mut rows = 0;
    while let Some(chunk) = source.next_chunk(chunk_rows)? {
        rows += chunk.nrows();
        match chunk.as_slice() {
            Some(s) => data.extend_from_slice(s),
            None => data.extend(chunk.iter().copied()),
        }
    }
    debug_assert_eq!(rows, remaining);
    Array2::from_shape_vec((rows, dim), data).map_err(|e| IoError::WrongShape {
        path: source.path().to_path_buf(),
        shape: vec![rows, dim],
        detail: e.to_string(),
    })
}
