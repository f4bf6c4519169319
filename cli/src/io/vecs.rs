//! The `.fvecs` / `.bvecs` / `.ivecs` formats of the INRIA ANN benchmarks (SIFT1M, GIST1M,
//! BIGANN): each record is a little-endian int32 dimension followed by that many values
//! (float32, uint8 or int32). There is no header, so the record count comes from the file
//! length; every record must repeat the first record's dimension.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use ndarray::{Array2, ArrayView2};

use super::elements::{Element, convert_to_f32, fix_order};
use super::matrix_checks::check_finite_from;
use super::npy_read::open_file;
use super::npy_write::AtomicFile;
use super::row_source::{RowSource, read_all_rows};
use crate::error::{IoError, IoResult as Result};

/// Which of the three record formats a file uses (they differ only in the value type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VecsKind {
    /// `.fvecs`: float32 values.
    F,
    /// `.bvecs`: uint8 values.
    B,
    /// `.ivecs`: int32 values (e.g. ground-truth neighbour lists).
    I,
}

impl VecsKind {
    fn value_size(self) -> u64 {
        match self {
            VecsKind::F | VecsKind::I => 4,
            VecsKind::B => 1,
        }
    }

    fn format(self) -> &'static str {
        match self {
            VecsKind::F => ".fvecs",
            VecsKind::B => ".bvecs",
            VecsKind::I => ".ivecs",
        }
    }
}

/// An open record file, positioned at the next record to read.
struct VecsFile {
    path: PathBuf,
    reader: BufReader<File>,
    kind: VecsKind,
    dim: usize,
    records: usize,
    records_read: usize,
}

impl VecsFile {
    fn open(path: &Path, kind: VecsKind) -> Result<VecsFile> {
        let (file, len) = open_file(path)?;
        let Some(len) = len else {
            return Err(IoError::InvalidArgument {
                path: path.to_path_buf(),
                argument: "path",
                detail: format!(
                    "{} files must be regular files (the record count comes from the length)",
                    kind.format()
                ),
            });
        };
        if len == 0 {
            return Err(IoError::Empty {
                what: path.display().to_string(),
                rows: 0,
                cols: 0,
            });
        }
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut head = [0u8; 4];
        reader
            .read_exact(&mut head)
            .map_err(|e| IoError::from_io(path, e, "dimension of record 0"))?;
        let dim = i32::from_le_bytes(head);
        if dim <= 0 {
            return Err(IoError::BadHeader {
                path: path.to_path_buf(),
                format: kind.format(),
                detail: format!("record 0 has dimension {dim}; it must be positive"),
            });
        }
        let record = 4 + dim as u64 * kind.value_size();
        if !len.is_multiple_of(record) {
            return Err(diagnose_length(path, reader, kind, dim, len));
        }
        reader
            .seek(SeekFrom::Start(0))
            .map_err(|e| IoError::from_io(path, e, "records"))?;
        Ok(VecsFile {
            path: path.to_path_buf(),
            reader,
            kind,
            dim: dim as usize,
            records: usize::try_from(len / record).unwrap_or(usize::MAX),
            records_read: 0,
        })
    }

    /// Reads the values of the next `n` records (n ≤ remaining), checking each dimension.
    fn next_raw<T: Element>(&mut self, n: usize) -> Result<Vec<T>> {
        debug_assert_eq!(std::mem::size_of::<T>() as u64, self.kind.value_size());
        let mut out = vec![T::default(); n * self.dim];
        for (i, row) in out.chunks_exact_mut(self.dim).enumerate() {
            let index = self.records_read + i;
            let mut head = [0u8; 4];
            self.reader
                .read_exact(&mut head)
                .map_err(|e| IoError::from_io(&self.path, e, &format!("record {index}")))?;
            let d = i32::from_le_bytes(head);
            if d as i64 != self.dim as i64 {
                return Err(IoError::InconsistentRecord {
                    path: self.path.clone(),
                    record: index,
                    found: d as i64,
                    expected: self.dim,
                });
            }
            self.reader
                .read_exact(bytemuck::cast_slice_mut(row))
                .map_err(|e| IoError::from_io(&self.path, e, &format!("record {index}")))?;
        }
        fix_order(&mut out, false);
        self.records_read += n;
        Ok(out)
    }
}

/// Explains why the file length is not a whole number of records: the first record whose
/// dimension differs, or else a truncated last record.
fn diagnose_length(
    path: &Path,
    mut reader: BufReader<File>,
    kind: VecsKind,
    dim: i32,
    len: u64,
) -> IoError {
    let record = 4 + dim as u64 * kind.value_size();
    let mut index = 0usize;
    let mut pos = 0u64;
    // Every record whose dimension field is present is checked, including an incomplete last
    // one: a different dimension there is the better explanation than truncation.
    while pos + 4 <= len {
        if reader.seek(SeekFrom::Start(pos)).is_err() {
            break;
        }
        let mut head = [0u8; 4];
        if reader.read_exact(&mut head).is_err() {
            break;
        }
        let d = i32::from_le_bytes(head);
        if d != dim {
            return IoError::InconsistentRecord {
                path: path.to_path_buf(),
                record: index,
                found: d as i64,
                expected: dim as usize,
            };
        }
        if pos + record > len {
            break;
        }
        pos += record;
        index += 1;
    }
    IoError::Truncated {
        path: path.to_path_buf(),
        detail: format!(
            "{} record {index} is incomplete: file length {len} is not a multiple of the record size {record} (dimension {dim})",
            kind.format()
        ),
    }
}

/// Streams the rows of an `.fvecs`, `.bvecs` or `.ivecs` file as `f32` (uint8 exactly, int32
/// rounded to the nearest float32), with buffered reads.
pub struct VecsRowReader {
    file: VecsFile,
}

impl VecsRowReader {
    /// Opens the file and checks the first record's dimension and the file length.
    pub fn open(path: impl AsRef<Path>, kind: VecsKind) -> Result<VecsRowReader> {
        Ok(VecsRowReader {
            file: VecsFile::open(path.as_ref(), kind)?,
        })
    }

    pub fn kind(&self) -> VecsKind {
        self.file.kind
    }
}

impl RowSource for VecsRowReader {
    fn path(&self) -> &Path {
        &self.file.path
    }

    fn rows(&self) -> usize {
        self.file.records
    }

    fn dim(&self) -> usize {
        self.file.dim
    }

    fn rows_read(&self) -> usize {
        self.file.records_read
    }

    fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Array2<f32>>> {
        if max_rows == 0 {
            return Err(IoError::InvalidArgument {
                path: self.file.path.clone(),
                argument: "max_rows",
                detail: "must be at least 1".into(),
            });
        }
        let n = max_rows.min(self.file.records - self.file.records_read);
        if n == 0 {
            return Ok(None);
        }
        let first = self.file.records_read;
        let first_elem = first * self.file.dim;
        let data: Vec<f32> = match self.file.kind {
            VecsKind::F => self.file.next_raw::<f32>(n)?,
            VecsKind::B => {
                let raw = self.file.next_raw::<u8>(n)?;
                let mut out = vec![0f32; raw.len()];
                convert_to_f32(&raw, &mut out, &self.file.path, first_elem)?;
                out
            }
            VecsKind::I => {
                let raw = self.file.next_raw::<i32>(n)?;
                let mut out = vec![0f32; raw.len()];
                convert_to_f32(&raw, &mut out, &self.file.path, first_elem)?;
                out
            }
        };
        let chunk = to_matrix(&self.file.path, n, self.file.dim, data)?;
        check_finite_from(chunk.view(), &self.file.path.display().to_string(), first)?;
        Ok(Some(chunk))
    }
}

fn to_matrix<T>(path: &Path, rows: usize, cols: usize, data: Vec<T>) -> Result<Array2<T>> {
    Array2::from_shape_vec((rows, cols), data).map_err(|e| IoError::WrongShape {
        path: path.to_path_buf(),
        shape: vec![rows, cols],
        detail: e.to_string(),
    })
}

/// Reads a whole `.fvecs` file (non-empty, finite).
pub fn read_fvecs(path: impl AsRef<Path>) -> Result<Array2<f32>> {
    let mut r = VecsRowReader::open(path, VecsKind::F)?;
    read_all_rows(&mut r)
}

/// Reads a whole `.bvecs` file as stored (uint8).
pub fn read_bvecs(path: impl AsRef<Path>) -> Result<Array2<u8>> {
    let mut f = VecsFile::open(path.as_ref(), VecsKind::B)?;
    let n = f.records;
    let data = f.next_raw::<u8>(n)?;
    to_matrix(&f.path, n, f.dim, data)
}

/// Reads a whole `.ivecs` file as stored (int32), e.g. a ground-truth neighbour table.
pub fn read_ivecs(path: impl AsRef<Path>) -> Result<Array2<i32>> {
    let mut f = VecsFile::open(path.as_ref(), VecsKind::I)?;
    let n = f.records;
    let data = f.next_raw::<i32>(n)?;
    to_matrix(&f.path, n, f.dim, data)
}

fn write_records<T: Element>(path: &Path, kind: VecsKind, view: ArrayView2<T>) -> Result<()> {
    let dim = i32::try_from(view.ncols())
        .ok()
        .filter(|&d| d > 0)
        .ok_or_else(|| IoError::InvalidArgument {
            path: path.to_path_buf(),
            argument: "matrix",
            detail: format!(
                "{} columns cannot be stored in {} (1 to {} required)",
                view.ncols(),
                kind.format(),
                i32::MAX
            ),
        })?;
    let mut f = AtomicFile::create(path)?;
    let mut row_buf = Vec::with_capacity(view.ncols());
    for row in view.outer_iter() {
        f.write_all(&dim.to_le_bytes())?;
        row_buf.clear();
        row_buf.extend(row.iter().copied());
        f.write_le(&row_buf)?;
    }
    f.commit()
}

/// Writes a float32 matrix as `.fvecs` (one record per row).
pub fn write_fvecs(path: impl AsRef<Path>, view: ArrayView2<f32>) -> Result<()> {
    write_records(path.as_ref(), VecsKind::F, view)
}

/// Writes a uint8 matrix as `.bvecs`.
pub fn write_bvecs(path: impl AsRef<Path>, view: ArrayView2<u8>) -> Result<()> {
    write_records(path.as_ref(), VecsKind::B, view)
}

/// Writes an int32 matrix as `.ivecs`.
pub fn write_ivecs(path: impl AsRef<Path>, view: ArrayView2<i32>) -> Result<()> {
    write_records(path.as_ref(), VecsKind::I, view)
}
