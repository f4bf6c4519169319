//! Typed element decoding shared by the readers: reading a known number of fixed-size elements
//! without trusting the count for allocation, fixing byte order, and converting numeric types
//! to `f32` with range checks (an `f64` beyond the `f32` range must not silently become ∞).

use std::io::Read;
use std::path::Path;

use bytemuck::Pod;

use crate::error::{IoError, IoResult as Result};

/// A plain numeric element that can be read as raw bytes and byte-swapped.
pub trait Element: Pod + Default {
    fn swap_bytes(self) -> Self;
}

macro_rules! int_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn swap_bytes(self) -> Self { <$t>::swap_bytes(self) }
        }
    )*};
}
int_element!(u8, i32, i64, u64, u32);

impl Element for f32 {
    fn swap_bytes(self) -> Self {
        f32::from_bits(self.to_bits().swap_bytes())
    }
}

impl Element for f64 {
    fn swap_bytes(self) -> Self {
        f64::from_bits(self.to_bits().swap_bytes())
    }
}

/// Elements read per `read_exact` call when the total is not known to be backed by the file;
/// bounds the memory a lying header can make us allocate before the data run out.
const PIECE_BYTES: usize = 8 << 20;

/// Reads exactly `count` elements stored with the given byte order.
///
/// `verified` says the caller already checked that the file holds the announced bytes, so the
/// whole buffer may be allocated at once; otherwise it grows piece by piece as data arrive.
pub fn read_elements<T: Element, R: Read>(
    r: &mut R,
    count: usize,
    big_endian: bool,
    verified: bool,
    path: &Path,
    what: &str,
) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    let mut out: Vec<T> = Vec::new();
    if verified {
        out.reserve_exact(count);
    }
    let piece = (PIECE_BYTES / size).max(1);
    while out.len() < count {
        let start = out.len();
        let n = piece.min(count - start);
        out.resize(start + n, T::default());
        r.read_exact(bytemuck::cast_slice_mut(&mut out[start..]))
            .map_err(|e| IoError::from_io(path, e, what))?;
    }
    fix_order(&mut out, big_endian);
    Ok(out)
}

/// Converts elements read in file order to native order in place.
pub fn fix_order<T: Element>(values: &mut [T], big_endian: bool) {
    let file_is_native = big_endian == cfg!(target_endian = "big");
    if !file_is_native && std::mem::size_of::<T>() > 1 {
        for v in values.iter_mut() {
            *v = v.swap_bytes();
        }
    }
}

/// Fails with [`IoError::TrailingData`] unless the reader is at end of file.
pub fn expect_eof<R: Read>(r: &mut R, path: &Path, expected: u64) -> Result<()> {
    let mut extra = 0u64;
    let mut buf = [0u8; 4096];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                extra += n as u64;
                // Counting a few MiB is enough for the message; stop reading garbage there.
                if extra > (4 << 20) {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(IoError::from_io(path, e, "data")),
        }
    }
    if extra > 0 {
        return Err(IoError::TrailingData {
            path: path.to_path_buf(),
            expected,
            extra,
        });
    }
    Ok(())
}

/// Numeric types convertible to `f32` for use as vector data.
pub trait ToF32: Copy {
    /// The `f32` value, or `None` when a finite value lies outside the `f32` range.
    fn to_f32_checked(self) -> Option<f32>;
}

impl ToF32 for f32 {
    fn to_f32_checked(self) -> Option<f32> {
        Some(self)
    }
}

impl ToF32 for f64 {
    fn to_f32_checked(self) -> Option<f32> {
        let v = self as f32;
        if v.is_infinite() && self.is_finite() {
            None
        } else {
            Some(v)
        }
    }
}

macro_rules! int_to_f32 {
    ($($t:ty),*) => {$(
        impl ToF32 for $t {
            // Integers round to the nearest f32 (exact up to 2^24 in magnitude).
            fn to_f32_checked(self) -> Option<f32> { Some(self as f32) }
        }
    )*};
}
int_to_f32!(u8, i32, i64, u64);

/// Converts a slice to `f32`, naming the first element (counted from `first_index` in the
/// file) that does not fit.
pub fn convert_to_f32<T: ToF32 + std::fmt::Display>(
    values: &[T],
    out: &mut [f32],
    path: &Path,
    first_index: usize,
) -> Result<()> {
    debug_assert_eq!(values.len(), out.len());
    for (i, (&v, o)) in values.iter().zip(out.iter_mut()).enumerate() {
        *o = v.to_f32_checked().ok_or_else(|| IoError::InvalidValue {
            path: path.to_path_buf(),
            index: first_index + i,
            detail: format!("value {v} is outside the float32 range"),
        })?;
    }
    Ok(())
}
