//! Validation of matrix arguments: every public entry point that takes vectors goes through
//! [`checked_rows`], so empty input, a wrong column count and NaN/Inf are refused with an error
//! that names the argument, before any arithmetic runs.

use ndarray::{ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

use super::error::{ModelError, Result};

/// A validated, row-major (C-order) matrix: rows = vectors.
pub(crate) struct Rows<'a> {
    data: CowArray<'a, f32, Ix2>,
}

impl Rows<'_> {
    pub(crate) fn n(&self) -> usize {
        self.data.nrows()
    }
    pub(crate) fn dim(&self) -> usize {
        self.data.ncols()
    }
    /// The rows as one contiguous slice of `n * dim` values.
    pub(crate) fn as_slice(&self) -> &[f32] {
        // `checked_rows` always stores a standard-layout array, whose slice view exists.
        self.data.as_slice().unwrap_or(&[])
    }
}

/// Checks `x` (rows = vectors): at least one row and one column, `expected_dim` columns when
/// given, and every value finite. Returns a row-major view (copied only when `x` is strided).
pub(crate) fn checked_rows<'a>(
    what: &str,
    x: ArrayView2<'a, f32>,
    expected_dim: Option<usize>,
) -> Result<Rows<'a>> {
    let rows = checked_shape(what, x, expected_dim)?;
    check_finite(what, rows.as_slice(), rows.dim())?;
    Ok(rows)
}

/// [`checked_rows`] without the finiteness check, for a caller that checks each block of rows
/// itself while the block is in cache (with [`all_finite`] and [`non_finite_error`]).
pub(crate) fn checked_shape<'a>(
    what: &str,
    x: ArrayView2<'a, f32>,
    expected_dim: Option<usize>,
) -> Result<Rows<'a>> {
    let (n, d) = x.dim();
    if let Some(e) = expected_dim
        && e != d
    {
        return Err(ModelError::DimensionMismatch {
            what: what.to_string(),
            expected: e,
            got: d,
        });
    }
    if n == 0 || d == 0 {
        return Err(ModelError::Empty {
            what: what.to_string(),
            rows: n,
            cols: d,
        });
    }
    let data: CowArray<'a, f32, Ix2> = if x.is_standard_layout() {
        CowArray::from(x)
    } else {
        CowArray::from(x.as_standard_layout().into_owned())
    };
    let rows = Rows { data };
    debug_assert_eq!(rows.as_slice().len(), n * d);
    Ok(rows)
}

/// Values per parallel task of [`check_finite`].
const FINITE_CHUNK: usize = 1 << 15;

/// True when every value of `c` is finite: the largest magnitude bit pattern is below the
/// exponent-all-ones pattern of ±Inf/NaN. A plain max over integers, so it vectorises (an
/// element-by-element `position` did not, and cost as much as encoding itself).
pub(crate) fn all_finite(c: &[f32]) -> bool {
    c.iter()
        .map(|v| v.to_bits() & 0x7fff_ffff)
        .fold(0u32, u32::max)
        < 0x7f80_0000
}

/// Refuses the first (lowest index) NaN or infinity in a row-major buffer of `dim` columns.
pub(crate) fn check_finite(what: &str, data: &[f32], dim: usize) -> Result<()> {
    let bad_chunk = data
        .par_chunks(FINITE_CHUNK)
        .position_first(|c| !all_finite(c));
    let first_bad = bad_chunk.and_then(|c| {
        let start = c * FINITE_CHUNK;
        data.get(start..)?
            .iter()
            .position(|v| !v.is_finite())
            .map(|p| start + p)
    });
    match first_bad {
        Some(pos) => Err(non_finite_error(what, data, dim, pos)),
        None => Ok(()),
    }
}

/// The error for the non-finite value at flat position `pos` of `data` (`dim` columns).
pub(crate) fn non_finite_error(what: &str, data: &[f32], dim: usize, pos: usize) -> ModelError {
    ModelError::NonFinite {
        what: what.to_string(),
        row: pos / dim.max(1),
        col: pos % dim.max(1),
        value: data.get(pos).copied().unwrap_or(f32::NAN),
    }
}
