//! The IDX format of MNIST and Fashion-MNIST (LeCun et al.), plain or gzip-compressed: a
//! 4-byte magic `0x00 0x00 <type> <ndim>`, `ndim` big-endian uint32 dimensions, then the
//! elements in row-major order. Only type `0x08` (uint8) is used by these data sets:
//! images are magic `0x00000803` (N × rows × cols), labels `0x00000801` (N).
//!
//! Gzip is recognised by its magic bytes (`1f 8b`), not by the file name.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use ndarray::Array2;

use super::elements::{convert_to_f32, expect_eof, read_elements};
use super::npy_read::open_file;
use super::row_source::{RowSource, read_all_rows};
use crate::error::{IoError, IoResult as Result};

/// An IDX file's dimensions and uint8 elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdxArray {
    pub dims: Vec<usize>,
    pub data: Vec<u8>,
}

/// Maps errors of the (possibly gzip) stream: damaged deflate data or a CRC mismatch become
/// [`IoError::Corrupt`], a short stream [`IoError::Truncated`].
fn stream_err(path: &Path, gzip: bool, what: &str) -> impl Fn(IoError) -> IoError {
    let path = path.to_path_buf();
    let what = what.to_string();
    move |e| match e {
        IoError::Io { source, .. }
            if gzip
                && matches!(
                    source.kind(),
                    std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData
                ) =>
        {
            IoError::Corrupt {
                path: path.clone(),
                format: "gzip",
                detail: format!("{source} (while reading the {what})"),
            }
        }
        other => other,
    }
}

/// An open IDX stream positioned at the first element.
struct IdxStream {
    path: PathBuf,
    reader: Box<dyn Read + Send>,
    gzip: bool,
    dims: Vec<usize>,
    count: usize,
}

impl IdxStream {
    fn open(path: &Path) -> Result<IdxStream> {
        let (file, _) = open_file(path)?;
        let mut buffered = BufReader::with_capacity(1 << 16, file);
        let head = buffered
            .fill_buf()
            .map_err(|e| IoError::from_io(path, e, "IDX magic"))?;
        let gzip = head.starts_with(&[0x1f, 0x8b]);
        let mut reader: Box<dyn Read + Send> = if gzip {
            Box::new(BufReader::with_capacity(
                1 << 16,
                MultiGzDecoder::new(buffered),
            ))
        } else {
            Box::new(buffered)
        };
        let map = stream_err(path, gzip, "IDX header");
        let mut magic = [0u8; 4];
        reader
            .read_exact(&mut magic)
            .map_err(|e| map(IoError::from_io(path, e, "IDX magic")))?;
        if magic[0] != 0 || magic[1] != 0 {
            return Err(IoError::BadMagic {
                path: path.to_path_buf(),
                format: "IDX",
                detail: format!("first bytes are {magic:02x?}, expected 00 00 <type> <ndim>"),
            });
        }
        if magic[2] != 0x08 {
            let name = match magic[2] {
                0x09 => "int8",
                0x0B => "int16",
                0x0C => "int32",
                0x0D => "float32",
                0x0E => "float64",
                _ => "unknown",
            };
            return Err(IoError::UnsupportedDtype {
                path: path.to_path_buf(),
                dtype: format!("0x{:02x} ({name})", magic[2]),
                detail: "only uint8 (0x08) IDX files are supported".into(),
            });
        }
        let ndim = usize::from(magic[3]);
        if ndim == 0 {
            return Err(IoError::BadHeader {
                path: path.to_path_buf(),
                format: "IDX",
                detail: "zero dimensions".into(),
            });
        }
        let mut dims = Vec::with_capacity(ndim);
        for i in 0..ndim {
            let mut d = [0u8; 4];
            reader
                .read_exact(&mut d)
                .map_err(|e| map(IoError::from_io(path, e, &format!("IDX dimension {i}"))))?;
            dims.push(u32::from_be_bytes(d) as usize);
        }
        let count = dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| IoError::WrongShape {
                path: path.to_path_buf(),
                shape: dims.clone(),
                detail: "element count overflows".into(),
            })?;
        Ok(IdxStream {
            path: path.to_path_buf(),
            reader,
            gzip,
            dims,
            count,
        })
    }

    fn read(&mut self, n: usize, what: &str) -> Result<Vec<u8>> {
        read_elements::<u8, _>(&mut self.reader, n, false, false, &self.path, what)
            .map_err(stream_err(&self.path, self.gzip, what))
    }

    /// Checks that the stream ends here (and, for gzip, that the CRC of the member matches).
    fn finish(&mut self) -> Result<()> {
        expect_eof(&mut self.reader, &self.path, self.count as u64).map_err(stream_err(
            &self.path,
            self.gzip,
            "end of the data",
        ))
    }
}

/// Reads a whole IDX file (uint8 elements).
pub fn read_idx(path: impl AsRef<Path>) -> Result<IdxArray> {
    let mut s = IdxStream::open(path.as_ref())?;
    let data = s.read(s.count, "IDX data")?;
    s.finish()?;
    Ok(IdxArray { dims: s.dims, data })
}

/// Streams the images of an IDX file (N × d1 × d2 …) as `f32` rows of `d1·d2·…` pixel values
/// in 0..=255 — no normalisation, so the values are exactly the stored bytes.
pub struct IdxRowReader {
    stream: IdxStream,
    rows: usize,
    cols: usize,
    rows_read: usize,
}

impl IdxRowReader {
    pub fn open(path: impl AsRef<Path>) -> Result<IdxRowReader> {
        let path = path.as_ref();
        let stream = IdxStream::open(path)?;
        let dims = &stream.dims;
        if dims.len() < 2 {
            return Err(IoError::WrongShape {
                path: path.to_path_buf(),
                shape: dims.clone(),
                detail: "an image file needs at least 2 dimensions (N × pixels); \
                         a 1-D IDX file holds labels"
                    .into(),
            });
        }
        let rows = dims[0];
        let cols = dims[1..].iter().product::<usize>();
        if rows == 0 || cols == 0 {
            return Err(IoError::Empty {
                what: path.display().to_string(),
                rows,
                cols,
            });
        }
        Ok(IdxRowReader {
            stream,
            rows,
            cols,
            rows_read: 0,
        })
    }
}

impl RowSource for IdxRowReader {
    fn path(&self) -> &Path {
        &self.stream.path
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
                path: self.stream.path.clone(),
                argument: "max_rows",
                detail: "must be at least 1".into(),
            });
        }
        let n = max_rows.min(self.rows - self.rows_read);
        if n == 0 {
            return Ok(None);
        }
        let raw = self.stream.read(n * self.cols, "IDX images")?;
        let mut out = vec![0f32; raw.len()];
        convert_to_f32(
            &raw,
            &mut out,
            &self.stream.path,
            self.rows_read * self.cols,
        )?;
        self.rows_read += n;
        if self.rows_read == self.rows {
            self.stream.finish()?;
        }
        Array2::from_shape_vec((n, self.cols), out)
            .map(Some)
            .map_err(|e| IoError::WrongShape {
                path: self.stream.path.clone(),
                shape: vec![n, self.cols],
                detail: e.to_string(),
            })
    }
}

/// Reads all images of an IDX file as `f32` rows (pixel values 0..=255, not normalised).
pub fn read_idx_images(path: impl AsRef<Path>) -> Result<Array2<f32>> {
    let mut r = IdxRowReader::open(path)?;
    read_all_rows(&mut r)
}

/// Reads an IDX label file (1-D, uint8) as `i64` class labels.
pub fn read_idx_labels(path: impl AsRef<Path>) -> Result<Vec<i64>> {
    let path = path.as_ref();
    let arr = read_idx(path)?;
    if arr.dims.len() != 1 {
        return Err(IoError::WrongShape {
            path: path.to_path_buf(),
            shape: arr.dims,
            detail: "a label file must be 1-D".into(),
        });
    }
    if arr.data.is_empty() {
        return Err(IoError::Empty {
            what: path.display().to_string(),
            rows: 0,
            cols: 1,
        });
    }
    Ok(arr.data.into_iter().map(i64::from).collect())
}
