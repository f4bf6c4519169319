//! Chunked reading of a 2-D `.npy` matrix with buffered `Read`, for files larger than memory.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use ndarray::Array2;

use super::elements::{Element, ToF32, convert_to_f32, expect_eof, read_elements};
use super::matrix_checks::check_finite_from;
use super::npy_header::{NpyDtype, NpyHeader};
use super::npy_read::{matrix_shape, open_npy};
use super::row_source::RowSource;
use crate::error::{IoError, IoResult as Result};

/// Streams the rows of a 2-D `.npy` file (any numeric dtype, converted to `f32` as in
/// [`super::read_matrix_f32`]).
pub struct NpyRowReader {
    path: PathBuf,
    reader: BufReader<File>,
    header: NpyHeader,
    verified: bool,
    rows: usize,
    cols: usize,
    rows_read: usize,
}

impl NpyRowReader {
    /// Opens the file and validates its header, shape (2-D, non-empty) and length.
    pub fn open(path: impl AsRef<Path>) -> Result<NpyRowReader> {
        let path = path.as_ref();
        let open = open_npy(path)?;
        let (rows, cols) = matrix_shape(path, &open.header.shape)?;
        Ok(NpyRowReader {
            path: path.to_path_buf(),
            reader: open.reader,
            header: open.header,
            verified: open.verified,
            rows,
            cols,
            rows_read: 0,
        })
    }

    /// The element type stored in the file.
    pub fn dtype(&self) -> NpyDtype {
        self.header.dtype
    }

    fn read_as_f32<T: Element + ToF32 + std::fmt::Display>(
        &mut self,
        n_rows: usize,
    ) -> Result<Vec<f32>> {
        let count = n_rows * self.cols;
        let raw: Vec<T> = read_elements(
            &mut self.reader,
            count,
            self.header.big_endian,
            self.verified,
            &self.path,
            "matrix rows",
        )?;
        let mut out = vec![0f32; count];
        convert_to_f32(&raw, &mut out, &self.path, self.rows_read * self.cols)?;
        Ok(out)
    }
}

impl RowSource for NpyRowReader {
    fn path(&self) -> &Path {
        &self.path
    }

    fn rows(&self) -> usize {
        self.rows
    }

    fn dim(&self) -> usize {
        self.cols
    }

    fn rows_read(&self) -> usize {
        self.rows_read
    }

    fn next_chunk(&mut self, max_rows: usize) -> Result<Option<Array2<f32>>> {
        if max_rows == 0 {
            return Err(IoError::InvalidArgument {
                path: self.path.clone(),
                argument: "max_rows",
                detail: "must be at least 1".into(),
            });
        }
        let n = max_rows.min(self.rows - self.rows_read);
        if n == 0 {
            return Ok(None);
        }
        let data = match self.header.dtype {
            NpyDtype::F32 => read_elements::<f32, _>(
                &mut self.reader,
                n * self.cols,
                self.header.big_endian,
                self.verified,
                &self.path,
                "matrix rows",
            )?,
            NpyDtype::F64 => self.read_as_f32::<f64>(n)?,
            NpyDtype::U8 => self.read_as_f32::<u8>(n)?,
            NpyDtype::I32 => self.read_as_f32::<i32>(n)?,
            NpyDtype::I64 => self.read_as_f32::<i64>(n)?,
            NpyDtype::U64 => self.read_as_f32::<u64>(n)?,
        };
        let chunk =
            Array2::from_shape_vec((n, self.cols), data).map_err(|e| IoError::WrongShape {
                path: self.path.clone(),
                shape: vec![n, self.cols],
                detail: e.to_string(),
            })?;
        check_finite_from(
            chunk.view(),
            &self.path.display().to_string(),
            self.rows_read,
        )?;
        self.rows_read += n;
        if self.rows_read == self.rows && !self.verified {
            expect_eof(
                &mut self.reader,
                &self.path,
                self.header.data_bytes(&self.path)?,
            )?;
        }
        Ok(Some(chunk))
    }
}
