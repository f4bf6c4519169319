//! The contract shared by the float-to-float stages (center, linear, rotation, RFF): a map of
//! one row to one row, applied to a matrix in parallel row blocks. Each row is computed by the
//! same deterministic kernel whatever the block it falls in (see `kernels.rs`).

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::error::{ModelError, Result};
use super::input::checked_rows;

/// Rows per parallel task when applying stages (small enough to balance, large enough to
/// amortise task overhead).
pub(crate) const ROW_BLOCK: usize = 256;

/// A float-to-float map of one vector.
pub trait RowMap: Sync {
    /// Columns of the input.
    fn in_dim(&self) -> usize;
    /// Columns of the output.
    fn out_dim(&self) -> usize;
    /// Maps one row: `x.len() == in_dim()`, `out.len() == out_dim()`.
    fn map_row(&self, x: &[f32], out: &mut [f32]);
    /// Maps a row-major block of rows (`x.len() == n·in_dim()`, `out.len() == n·out_dim()`).
    /// Every row must get exactly the values [`RowMap::map_row`] gives it alone; stages whose
    /// kernel gains from several rows at once (linear maps, rotations) override this and make
    /// `map_row` the one-row case of it.
    fn map_block(&self, x: &[f32], out: &mut [f32]) {
        let (din, dout) = (self.in_dim(), self.out_dim());
        for (orow, xrow) in out.chunks_exact_mut(dout).zip(x.chunks_exact(din)) {
            self.map_row(xrow, orow);
        }
    }
}

/// Applies `map` to a row-major buffer of `n` rows into a new buffer (parallel, deterministic).
pub(crate) fn map_rows(map: &(impl RowMap + ?Sized), x: &[f32]) -> Vec<f32> {
    let (din, dout) = (map.in_dim(), map.out_dim());
    let n = x.len() / din.max(1);
    let mut out = vec![0f32; n * dout];
    out.par_chunks_mut(ROW_BLOCK * dout)
        .zip(x.par_chunks(ROW_BLOCK * din))
        .for_each(|(o, xi)| map.map_block(xi, o));
    out
}

/// Validates `x` (`what` names it in errors) and applies `map`.
pub(crate) fn apply_checked(
    map: &(impl RowMap + ?Sized),
    what: &str,
    x: ArrayView2<f32>,
) -> Result<Array2<f32>> {
    let rows = checked_rows(what, x, Some(map.in_dim()))?;
    let out = map_rows(map, rows.as_slice());
    Array2::from_shape_vec((rows.n(), map.out_dim()), out).map_err(|e| ModelError::shape(what, e))
}
