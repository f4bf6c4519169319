//! Checks every vector matrix passes before it reaches training or search: it must have rows
//! and columns, and hold only finite values. A NaN in training data would silently poison a
//! covariance or a k-means step, so it is reported with its position instead.

use ndarray::ArrayView2;

use crate::error::{IoError, IoResult as Result};

/// Fails with [`IoError::NonFinite`] naming the first NaN/±Inf (row-major order) by row and
/// column. `what` names the input in the message (a file path, or e.g. `"queries"`).
pub fn check_finite(view: ArrayView2<f32>, what: &str) -> Result<()> {
    check_finite_from(view, what, 0)
}

/// Like [`check_finite`], with row numbers offset by `first_row` (for chunks of a stream).
pub fn check_finite_from(view: ArrayView2<f32>, what: &str, first_row: usize) -> Result<()> {
    for (r, row) in view.outer_iter().enumerate() {
        if let Some((c, &v)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(IoError::NonFinite {
                what: what.to_string(),
                row: first_row + r,
                col: c,
                value: v,
            });
        }
    }
    Ok(())
}

/// Fails with [`IoError::Empty`] when the matrix has no rows or no columns.
pub fn check_nonempty<T>(view: ArrayView2<T>, what: &str) -> Result<()> {
    let (rows, cols) = view.dim();
    if rows == 0 || cols == 0 {
        return Err(IoError::Empty {
            what: what.to_string(),
            rows,
            cols,
        });
    }
    Ok(())
}

/// Both checks: what a training or query matrix must satisfy.
pub fn check_vectors(view: ArrayView2<f32>, what: &str) -> Result<()> {
    check_nonempty(view, what)?;
    check_finite(view, what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, array};

    #[test]
    fn reports_first_non_finite_position() {
        let mut m = Array2::<f32>::zeros((3, 4));
        assert!(check_finite(m.view(), "x").is_ok());
        m[[2, 1]] = f32::INFINITY;
        m[[1, 3]] = f32::NAN;
        match check_finite(m.view(), "train.npy").unwrap_err() {
            IoError::NonFinite {
                what,
                row,
                col,
                value,
            } => {
                assert_eq!((what.as_str(), row, col), ("train.npy", 1, 3));
                assert!(value.is_nan());
            }
            e => panic!("unexpected {e}"),
        }
        let msg = check_finite_from(m.slice(ndarray::s![2.., ..]), "q", 10)
            .unwrap_err()
            .to_string();
        // Row 2 of the matrix is row 0 of the slice, reported as 10 + 0.
        assert_eq!(msg, "q: non-finite value inf at row 10, column 1");
    }

    #[test]
    fn refuses_empty_matrices() {
        let a = Array2::<f32>::zeros((0, 5));
        let b = Array2::<f32>::zeros((5, 0));
        assert!(matches!(
            check_vectors(a.view(), "a"),
            Err(IoError::Empty {
                rows: 0,
                cols: 5,
                ..
            })
        ));
        assert!(matches!(
            check_vectors(b.view(), "b"),
            Err(IoError::Empty {
                rows: 5,
                cols: 0,
                ..
            })
        ));
        assert!(check_vectors(array![[1.0f32]].view(), "c").is_ok());
    }
}
