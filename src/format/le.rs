//! Fixed-width little-endian encoding: a bounds-checked reader and a growable writer.
//!
//! Every multi-byte integer or float in a codedb file is little-endian and fixed-width; there are
//! no varints, so every structure has one size and every offset can be checked by arithmetic.

use std::path::Path;

use super::error::{FormatError, Result};

/// A cursor over untrusted bytes. Every read is bounds-checked and a short read is a
/// [`FormatError::Truncated`] naming the file and section.
pub struct LeReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a Path,
    section: &'a str,
}

impl<'a> LeReader<'a> {
    /// A reader over `bytes`; errors name `path` and `section`.
    pub fn new(bytes: &'a [u8], path: &'a Path, section: &'a str) -> Self {
        LeReader {
            bytes,
            pos: 0,
            path,
            section,
        }
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, or a truncation error.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(FormatError::Truncated {
                path: self.path.to_path_buf(),
                section: self.section.to_string(),
                detail: format!(
                    "needs {n} bytes at offset {}, only {} left",
                    self.pos,
                    self.remaining()
                ),
            });
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    /// Reads a `u8`.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    /// Reads a little-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// Reads a little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// Reads `n` bytes that the format requires to be zero (reserved fields, padding).
    pub fn zeros(&mut self, n: usize, field: &str) -> Result<()> {
        let s = self.take(n)?;
        if s.iter().any(|&b| b != 0) {
            return Err(self.corrupt(format!("reserved field {field} is not zero")));
        }
        Ok(())
    }

    /// Skips to an 8-byte boundary; the skipped padding must be zero.
    pub fn align8(&mut self) -> Result<()> {
        let pad = (8 - self.pos % 8) % 8;
        self.zeros(pad, "padding")
    }

    /// A [`FormatError::Corrupt`] naming this reader's file and section.
    pub fn corrupt(&self, detail: impl Into<String>) -> FormatError {
        FormatError::Corrupt {
            path: self.path.to_path_buf(),
            section: self.section.to_string(),
            detail: detail.into(),
        }
    }

    /// Fails unless every byte was consumed: trailing bytes mean a length field lies.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(self.corrupt(format!("{} unexpected trailing bytes", self.remaining())));
        }
        Ok(())
    }
}

/// Appends fixed-width little-endian values to a buffer.
#[derive(Default)]
pub struct LeWriter {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl LeWriter {
    /// An empty writer.
    pub fn new() -> Self {
        LeWriter { buf: Vec::new() }
    }
    /// Appends a `u8`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    /// Appends a little-endian `u16`.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends raw bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }
    /// Appends `n` zero bytes.
    pub fn zeros(&mut self, n: usize) -> &mut Self {
        self.buf.resize(self.buf.len() + n, 0);
        self
    }
    /// Pads with zeros to a multiple of 8 bytes.
    pub fn align8(&mut self) -> &mut Self {
        let pad = (8 - self.buf.len() % 8) % 8;
        self.zeros(pad)
    }
    /// The bytes written.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

/// `a * b` for sizes read from disk: overflow is a corruption, never a wrap.
pub fn checked_mul(a: u64, b: u64, path: &Path, section: &str, what: &str) -> Result<u64> {
    a.checked_mul(b).ok_or_else(|| FormatError::Corrupt {
        path: path.to_path_buf(),
        section: section.to_string(),
        detail: format!("{what} overflows ({a} x {b})"),
    })
}

/// Converts a size read from disk to `usize`, failing cleanly on 32-bit targets.
pub fn to_usize(v: u64, path: &Path, section: &str, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| FormatError::Corrupt {
        path: path.to_path_buf(),
        section: section.to_string(),
        detail: format!("{what} = {v} does not fit in memory on this platform"),
    })
}
