//! Writing `.npy` files (format version 1.0, little-endian, C order, header padded to 64 bytes
//! as numpy writes it) for tools, tests and the CLI.
//!
//! Files are written to a temporary file in the destination directory and renamed into place,
//! so a crash never leaves a half-written file under the final name.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ndarray::ArrayView2;
use tempfile::NamedTempFile;

use super::elements::{Element, fix_order};
use super::npy_header::{NpyDtype, encode_header};
use crate::error::{IoError, IoResult as Result};

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> IoError + '_ {
    move |source| IoError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A file being written under a temporary name next to its destination.
pub(crate) struct AtomicFile {
    path: PathBuf,
    out: BufWriter<NamedTempFile>,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let tmp = NamedTempFile::new_in(dir).map_err(io_err(path))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 16, tmp),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(io_err(&self.path))
    }

    /// Writes elements in little-endian order.
    pub fn write_le<T: Element>(&mut self, values: &[T]) -> Result<()> {
        if cfg!(target_endian = "little") {
            self.write_all(bytemuck::cast_slice(values))
        } else {
            let mut copy = values.to_vec();
            fix_order(&mut copy, false);
            self.write_all(bytemuck::cast_slice(&copy))
        }
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let tmp = self
            .out
            .into_inner()
            .map_err(|e| io_err(&path)(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io_err(&path))?;
        tmp.persist(&path).map_err(|e| io_err(&path)(e.error))?;
        Ok(())
    }
}

fn write_rows<T: Element>(path: &Path, dtype: NpyDtype, view: ArrayView2<T>) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(&encode_header(dtype, &[view.nrows(), view.ncols()]))?;
    let mut row_buf = Vec::with_capacity(view.ncols());
    for row in view.outer_iter() {
        match row.as_slice() {
            Some(s) => f.write_le(s)?,
            None => {
                row_buf.clear();
                row_buf.extend(row.iter().copied());
                f.write_le(&row_buf)?;
            }
        }
    }
    f.commit()
}

fn write_vector<T: Element>(path: &Path, dtype: NpyDtype, values: &[T]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(&encode_header(dtype, &[values.len()]))?;
    f.write_le(values)?;
    f.commit()
}

/// Writes a 2-D float32 matrix (rows = vectors).
pub fn write_npy_f32(path: impl AsRef<Path>, view: ArrayView2<f32>) -> Result<()> {
    write_rows(path.as_ref(), NpyDtype::F32, view)
}

/// Writes a 2-D uint8 matrix (codes, pixels).
pub fn write_npy_u8(path: impl AsRef<Path>, view: ArrayView2<u8>) -> Result<()> {
    write_rows(path.as_ref(), NpyDtype::U8, view)
}

/// Writes a 1-D int32 vector (labels, split flags).
pub fn write_npy_i32(path: impl AsRef<Path>, values: &[i32]) -> Result<()> {
    write_vector(path.as_ref(), NpyDtype::I32, values)
}

/// Writes a 1-D int64 vector (labels).
pub fn write_npy_i64(path: impl AsRef<Path>, values: &[i64]) -> Result<()> {
    write_vector(path.as_ref(), NpyDtype::I64, values)
}

/// Writes a 1-D uint64 vector (ids).
pub fn write_npy_u64(path: impl AsRef<Path>, values: &[u64]) -> Result<()> {
    write_vector(path.as_ref(), NpyDtype::U64, values)
}

/// Streams a float32 matrix whose shape is known up front to a `.npy` file, chunk by chunk, so
/// files larger than memory can be produced. The file appears under its name only after
/// [`NpyF32Writer::finish`] has checked that exactly `rows` rows were written.
pub struct NpyF32Writer {
    file: AtomicFile,
    rows: usize,
    cols: usize,
    written: usize,
}

impl NpyF32Writer {
    pub fn create(path: impl AsRef<Path>, rows: usize, cols: usize) -> Result<NpyF32Writer> {
        let mut file = AtomicFile::create(path.as_ref())?;
        file.write_all(&encode_header(NpyDtype::F32, &[rows, cols]))?;
        Ok(NpyF32Writer {
            file,
            rows,
            cols,
            written: 0,
        })
    }

    /// Appends rows; their width must equal the declared column count.
    pub fn write_rows(&mut self, chunk: ArrayView2<f32>) -> Result<()> {
        if chunk.ncols() != self.cols {
            return Err(IoError::InvalidArgument {
                path: self.file.path().to_path_buf(),
                argument: "chunk",
                detail: format!("{} columns, the file declares {}", chunk.ncols(), self.cols),
            });
        }
        if self.written + chunk.nrows() > self.rows {
            return Err(IoError::InvalidArgument {
                path: self.file.path().to_path_buf(),
                argument: "chunk",
                detail: format!(
                    "{} more rows would exceed the declared {} (already written {})",
                    chunk.nrows(),
                    self.rows,
                    self.written
                ),
            });
        }
        let mut row_buf = Vec::with_capacity(self.cols);
        for row in chunk.outer_iter() {
            match row.as_slice() {
                Some(s) => self.file.write_le(s)?,
                None => {
                    row_buf.clear();
                    row_buf.extend(row.iter().copied());
                    self.file.write_le(&row_buf)?;
                }
            }
        }
        self.written += chunk.nrows();
        Ok(())
    }

    /// Checks the row count and moves the file into place.
    pub fn finish(self) -> Result<()> {
        if self.written != self.rows {
            return Err(IoError::InvalidArgument {
                path: self.file.path().to_path_buf(),
                argument: "rows",
                detail: format!("declared {} rows, wrote {}", self.rows, self.written),
            });
        }
        self.file.commit()
    }
}
