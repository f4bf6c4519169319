//! Reading whole `.npy` files: the typed array, and the three views codedb needs of them —
//! a vector matrix (`f32`), a label vector (`i64`) and an id vector (`u64`).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use ndarray::Array2;

use super::elements::{ToF32, convert_to_f32, expect_eof, read_elements};
use super::matrix_checks::check_finite;
use super::npy_header::{NpyDtype, NpyHeader, read_header};
use crate::error::{IoError, IoResult as Result};

/// The elements of an `.npy` array, in row-major (C) order and native byte order.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    U8(Vec<u8>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
}

impl NpyData {
    pub fn dtype(&self) -> NpyDtype {
        match self {
            NpyData::F32(_) => NpyDtype::F32,
            NpyData::F64(_) => NpyDtype::F64,
            NpyData::U8(_) => NpyDtype::U8,
            NpyData::I32(_) => NpyDtype::I32,
            NpyData::I64(_) => NpyDtype::I64,
            NpyData::U64(_) => NpyDtype::U64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
            NpyData::U8(v) => v.len(),
            NpyData::I32(v) => v.len(),
            NpyData::I64(v) => v.len(),
            NpyData::U64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A whole `.npy` array: its shape and typed elements (`data.len()` = product of `shape`).
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: NpyData,
}

/// An open `.npy` file positioned at its first data byte.
pub(crate) struct OpenNpy {
    pub reader: BufReader<File>,
    pub header: NpyHeader,
    /// True when the file length was checked to equal header + announced data exactly.
    pub verified: bool,
}

pub(crate) fn open_file(path: &Path) -> Result<(File, Option<u64>)> {
    let file = File::open(path).map_err(|source| IoError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let meta = file.metadata().map_err(|source| IoError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_dir() {
        return Err(IoError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory"),
        });
    }
    Ok((file, meta.is_file().then_some(meta.len())))
}

/// Opens a `.npy` file, parses its header and, for regular files, checks that the file holds
/// exactly the announced data — before anything is allocated for it.
pub(crate) fn open_npy(path: &Path) -> Result<OpenNpy> {
    let (file, len) = open_file(path)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let header = read_header(&mut reader, path)?;
    let data_bytes = header.data_bytes(path)?;
    let verified = match len {
        Some(len) => {
            let available = len.saturating_sub(header.data_offset);
            if available < data_bytes {
                return Err(IoError::Truncated {
                    path: path.to_path_buf(),
                    detail: format!(
                        "shape {:?} of {} needs {data_bytes} data bytes, the file has {available}",
                        header.shape,
                        header.dtype.name()
                    ),
                });
            }
            if available > data_bytes {
                return Err(IoError::TrailingData {
                    path: path.to_path_buf(),
                    expected: data_bytes,
                    extra: available - data_bytes,
                });
            }
            true
        }
        None => false,
    };
    Ok(OpenNpy {
        reader,
        header,
        verified,
    })
}

/// Reads a whole `.npy` file (versions 1.0, 2.0, 3.0; C order; float32, float64, uint8, int32,
/// int64, uint64; little- or big-endian, converted to native order).
pub fn read_npy(path: impl AsRef<Path>) -> Result<NpyArray> {
    let path = path.as_ref();
    let OpenNpy {
        mut reader,
        header,
        verified,
    } = open_npy(path)?;
    let n = header.element_count(path)?;
    let be = header.big_endian;
    let r = &mut reader;
    let what = "array data";
    let data = match header.dtype {
        NpyDtype::F32 => NpyData::F32(read_elements(r, n, be, verified, path, what)?),
        NpyDtype::F64 => NpyData::F64(read_elements(r, n, be, verified, path, what)?),
        NpyDtype::U8 => NpyData::U8(read_elements(r, n, be, verified, path, what)?),
        NpyDtype::I32 => NpyData::I32(read_elements(r, n, be, verified, path, what)?),
        NpyDtype::I64 => NpyData::I64(read_elements(r, n, be, verified, path, what)?),
        NpyDtype::U64 => NpyData::U64(read_elements(r, n, be, verified, path, what)?),
    };
    if !verified {
        expect_eof(&mut reader, path, header.data_bytes(path)?)?;
    }
    Ok(NpyArray {
        shape: header.shape,
        data,
    })
}

/// Checks that `shape` is a non-empty 2-D matrix shape and returns (rows, cols).
pub(crate) fn matrix_shape(path: &Path, shape: &[usize]) -> Result<(usize, usize)> {
    match *shape {
        [rows, cols] if rows > 0 && cols > 0 => Ok((rows, cols)),
        [rows, cols] => Err(IoError::Empty {
            what: path.display().to_string(),
            rows,
            cols,
        }),
        _ => Err(IoError::WrongShape {
            path: path.to_path_buf(),
            shape: shape.to_vec(),
            detail: format!(
                "a 2-D matrix (rows = vectors) is required, this array has {} dimension(s)",
                shape.len()
            ),
        }),
    }
}

/// Reads a 2-D `.npy` array of vectors as `f32` (rows = vectors).
///
/// Any numeric dtype is accepted: float64 values must lie within the float32 range, integers
/// round to the nearest float32 (exact up to 2^24). The matrix must be non-empty and finite:
/// NaN/Inf are reported with their row and column.
pub fn read_matrix_f32(path: impl AsRef<Path>) -> Result<Array2<f32>> {
    let path = path.as_ref();
    matrix_f32(path, read_npy(path)?)
}

/// [`read_matrix_f32`] on an array already read.
fn matrix_f32(path: &Path, arr: NpyArray) -> Result<Array2<f32>> {
    let (rows, cols) = matrix_shape(path, &arr.shape)?;
    fn convert<T: ToF32 + std::fmt::Display>(v: &[T], path: &Path) -> Result<Vec<f32>> {
        let mut out = vec![0f32; v.len()];
        convert_to_f32(v, &mut out, path, 0)?;
        Ok(out)
    }
    let data = match arr.data {
        NpyData::F32(v) => v,
        NpyData::F64(v) => convert(&v, path)?,
        NpyData::U8(v) => convert(&v, path)?,
        NpyData::I32(v) => convert(&v, path)?,
        NpyData::I64(v) => convert(&v, path)?,
        NpyData::U64(v) => convert(&v, path)?,
    };
    let m = Array2::from_shape_vec((rows, cols), data).map_err(|e| IoError::WrongShape {
        path: path.to_path_buf(),
        shape: vec![rows, cols],
        detail: e.to_string(),
    })?;
    check_finite(m.view(), &path.display().to_string())?;
    Ok(m)
}

/// Reads one vector from a `.npy` file: a 1-D array of length D (what `np.save` writes for a
/// mean such as `x.mean(axis=0)`) or a (1, D) matrix, as `f32`, non-empty and finite. Any other
/// shape is a [`IoError::WrongShape`] naming the file.
pub fn read_vector_f32(path: impl AsRef<Path>) -> Result<Vec<f32>> {
    let path = path.as_ref();
    let mut arr = read_npy(path)?;
    match *arr.shape.as_slice() {
        [d] | [1, d] if d > 0 => arr.shape = vec![1, d],
        _ => {
            return Err(IoError::WrongShape {
                path: path.to_path_buf(),
                shape: arr.shape,
                detail: "one vector is required: shape (D,) or (1, D)".into(),
            });
        }
    }
    Ok(matrix_f32(path, arr)?.into_raw_vec_and_offset().0)
}

/// Reads a 2-D `uint8` `.npy` array (e.g. packed binary codes or raw pixels); other dtypes are
/// refused rather than truncated.
pub fn read_matrix_u8(path: impl AsRef<Path>) -> Result<Array2<u8>> {
    let path = path.as_ref();
    let arr = read_npy(path)?;
    let (rows, cols) = matrix_shape(path, &arr.shape)?;
    let NpyData::U8(data) = arr.data else {
        return Err(IoError::UnsupportedDtype {
            path: path.to_path_buf(),
            dtype: arr.data.dtype().name().into(),
            detail: "a uint8 matrix is required".into(),
        });
    };
    Array2::from_shape_vec((rows, cols), data).map_err(|e| IoError::WrongShape {
        path: path.to_path_buf(),
        shape: vec![rows, cols],
        detail: e.to_string(),
    })
}

/// Checks that `shape` is a non-empty vector: `(N,)` or `(N, 1)`.
fn vector_shape(path: &Path, shape: &[usize], what: &str) -> Result<usize> {
    let n = match *shape {
        [n] | [n, 1] => n,
        _ => {
            return Err(IoError::WrongShape {
                path: path.to_path_buf(),
                shape: shape.to_vec(),
                detail: format!("{what} must be 1-D (N,) or a column (N, 1)"),
            });
        }
    };
    if n == 0 {
        return Err(IoError::Empty {
            what: path.display().to_string(),
            rows: 0,
            cols: 1,
        });
    }
    Ok(n)
}

fn integer_required(path: &Path, dtype: NpyDtype, what: &str) -> IoError {
    IoError::UnsupportedDtype {
        path: path.to_path_buf(),
        dtype: dtype.name().into(),
        detail: format!("{what} must be integers (int32, int64, uint8 or uint64)"),
    }
}

/// Reads class labels from an integer `.npy` file of shape `(N,)` or `(N, 1)`.
///
/// int32, int64 and uint8 are accepted as is; uint64 only up to `i64::MAX`. Float labels are
/// refused: a float label file usually means the wrong file was passed.
pub fn read_labels(path: impl AsRef<Path>) -> Result<Vec<i64>> {
    let path = path.as_ref();
    let arr = read_npy(path)?;
    vector_shape(path, &arr.shape, "labels")?;
    match arr.data {
        NpyData::I64(v) => Ok(v),
        NpyData::I32(v) => Ok(v.into_iter().map(i64::from).collect()),
        NpyData::U8(v) => Ok(v.into_iter().map(i64::from).collect()),
        NpyData::U64(v) => v
            .into_iter()
            .enumerate()
            .map(|(i, x)| {
                i64::try_from(x).map_err(|_| IoError::InvalidValue {
                    path: path.to_path_buf(),
                    index: i,
                    detail: format!("label {x} exceeds the int64 range"),
                })
            })
            .collect(),
        other => Err(integer_required(path, other.dtype(), "labels")),
    }
}

/// Reads external row ids from an integer `.npy` file of shape `(N,)` or `(N, 1)`.
///
/// uint64 is taken as is; int64, int32 and uint8 must be non-negative (the first negative one
/// is reported by index).
pub fn read_ids(path: impl AsRef<Path>) -> Result<Vec<u64>> {
    let path = path.as_ref();
    let arr = read_npy(path)?;
    vector_shape(path, &arr.shape, "ids")?;
    fn non_negative<T: Copy + Into<i64>>(path: &Path, v: Vec<T>) -> Result<Vec<u64>> {
        v.into_iter()
            .enumerate()
            .map(|(i, x)| {
                let x: i64 = x.into();
                u64::try_from(x).map_err(|_| IoError::InvalidValue {
                    path: path.to_path_buf(),
                    index: i,
                    detail: format!("id {x} is negative"),
                })
            })
            .collect()
    }
    match arr.data {
        NpyData::U64(v) => Ok(v),
        NpyData::I64(v) => non_negative(path, v),
        NpyData::I32(v) => non_negative(path, v),
        NpyData::U8(v) => Ok(v.into_iter().map(u64::from).collect()),
        other => Err(integer_required(path, other.dtype(), "ids")),
    }
}
