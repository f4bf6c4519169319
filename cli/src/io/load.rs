//! Choosing a reader from a path: the single entry point the CLI uses for `--data`,
//! `--queries` and `--labels`.

use std::path::Path;

use ndarray::Array2;

use super::fashion_mnist::{is_fashion_mnist_dir, load_fashion_mnist};
use super::idx::{IdxRowReader, read_idx_images, read_idx_labels};
use super::npy_read::{read_labels, read_matrix_f32, read_vector_f32};
use super::npy_rows::NpyRowReader;
use super::row_source::RowSource;
use super::vecs::{VecsKind, VecsRowReader, read_fvecs};
use crate::error::{IoError, IoResult as Result};

/// The file formats vectors can be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorFormat {
    Npy,
    Vecs(VecsKind),
    /// IDX (`*-idx3-ubyte`, optionally `.gz`).
    Idx,
    /// A directory holding the four Fashion-MNIST IDX files.
    FashionMnistDir,
}

/// Detects the format from the extension (case-insensitive), or a Fashion-MNIST directory.
pub fn detect_format(path: impl AsRef<Path>) -> Result<VectorFormat> {
    let path = path.as_ref();
    if path.is_dir() {
        return if is_fashion_mnist_dir(path) {
            Ok(VectorFormat::FashionMnistDir)
        } else {
            Err(IoError::UnknownFormat {
                path: path.to_path_buf(),
            })
        };
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    let format = if name.ends_with(".npy") {
        VectorFormat::Npy
    } else if name.ends_with(".fvecs") {
        VectorFormat::Vecs(VecsKind::F)
    } else if name.ends_with(".bvecs") {
        VectorFormat::Vecs(VecsKind::B)
    } else if name.ends_with(".ivecs") {
        VectorFormat::Vecs(VecsKind::I)
    } else if is_idx_name(stem) {
        VectorFormat::Idx
    } else {
        return Err(IoError::UnknownFormat {
            path: path.to_path_buf(),
        });
    };
    Ok(format)
}

/// `…idx1-ubyte`, `…idx3-ubyte`, … (MNIST naming, with `-` or `.` before `idx`).
fn is_idx_name(stem: &str) -> bool {
    let Some(pos) = stem.rfind("idx") else {
        return false;
    };
    let rest = &stem[pos + 3..];
    let mut chars = rest.chars();
    chars.next().is_some_and(|c| c.is_ascii_digit()) && chars.as_str() == "-ubyte"
}

/// Reads a whole vector file as a non-empty, finite `f32` matrix (rows = vectors), choosing the
/// reader by [`detect_format`]. A Fashion-MNIST directory gives its 70,000 images, training
/// images first.
pub fn load_vectors(path: impl AsRef<Path>) -> Result<Array2<f32>> {
    let path = path.as_ref();
    match detect_format(path)? {
        VectorFormat::Npy => read_matrix_f32(path),
        VectorFormat::Vecs(VecsKind::F) => read_fvecs(path),
        VectorFormat::Vecs(kind) => {
            let mut r = VecsRowReader::open(path, kind)?;
            super::row_source::read_all_rows(&mut r)
        }
        VectorFormat::Idx => read_idx_images(path),
        VectorFormat::FashionMnistDir => Ok(load_fashion_mnist(path)?.vectors),
    }
}

/// Reads one vector (a class mean, a single query): a 1-D or (1, D) `.npy` array, or a vector
/// file holding exactly one row. More rows is a [`IoError::WrongShape`] naming the file.
pub fn load_vector(path: impl AsRef<Path>) -> Result<Vec<f32>> {
    let path = path.as_ref();
    if detect_format(path)? == VectorFormat::Npy {
        return read_vector_f32(path);
    }
    let m = load_vectors(path)?;
    if m.nrows() != 1 {
        return Err(IoError::WrongShape {
            path: path.to_path_buf(),
            shape: m.shape().to_vec(),
            detail: format!("one vector is required, this file holds {} rows", m.nrows()),
        });
    }
    Ok(m.row(0).to_vec())
}

/// Opens a file for chunked reading, choosing the reader by [`detect_format`]. Directories
/// are refused (load them with [`load_fashion_mnist`]).
pub fn open_rows(path: impl AsRef<Path>) -> Result<Box<dyn RowSource + Send>> {
    let path = path.as_ref();
    match detect_format(path)? {
        VectorFormat::Npy => Ok(Box::new(NpyRowReader::open(path)?)),
        VectorFormat::Vecs(kind) => Ok(Box::new(VecsRowReader::open(path, kind)?)),
        VectorFormat::Idx => Ok(Box::new(IdxRowReader::open(path)?)),
        VectorFormat::FashionMnistDir => Err(IoError::InvalidArgument {
            path: path.to_path_buf(),
            argument: "path",
            detail: "a Fashion-MNIST directory cannot be streamed; use load_fashion_mnist".into(),
        }),
    }
}

/// Reads class labels from a `.npy` integer vector or an IDX label file (`*-idx1-ubyte[.gz]`).
pub fn load_labels(path: impl AsRef<Path>) -> Result<Vec<i64>> {
    let path = path.as_ref();
    match detect_format(path)? {
        VectorFormat::Npy => read_labels(path),
        VectorFormat::Idx => read_idx_labels(path),
        _ => Err(IoError::UnknownFormat {
            path: path.to_path_buf(),
        }),
    }
}
