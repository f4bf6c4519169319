//! A minimal `.npy` reader for the engine's tests (the engine has no dataset readers: those
//! live in the CLI crate). Reads the 1-D and 2-D little-endian C-order arrays the checked-in
//! test data uses (`|u1`, `<i4`, `<i8`, `<f4`, `<f8`) and panics on anything else.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

use ndarray::Array2;

/// The array's shape and its elements as f64, in C order.
fn read(path: &Path) -> (Vec<usize>, Vec<f64>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{}: not .npy", path.display());
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).unwrap();
    assert!(header.contains("'fortran_order': False"), "{header}");
    let descr = header
        .split("'descr': '")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap();
    let shape_text = header
        .split("'shape': (")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let data = &bytes[start + header_len..];
    let values: Vec<f64> = match descr {
        "|u1" => data.iter().map(|&b| f64::from(b)).collect(),
        "<i4" => data
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        "<i8" => data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        "<f4" => data
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
            .collect(),
        "<f8" => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        other => panic!(
            "{}: dtype {other} not supported by the test reader",
            path.display()
        ),
    };
    assert_eq!(
        values.len(),
        shape.iter().product::<usize>(),
        "{}",
        path.display()
    );
    (shape, values)
}

/// A 2-D array as f32 rows.
pub fn load_vectors(path: impl AsRef<Path>) -> Array2<f32> {
    let (shape, values) = read(path.as_ref());
    assert_eq!(shape.len(), 2, "{}: not 2-D", path.as_ref().display());
    Array2::from_shape_vec(
        (shape[0], shape[1]),
        values.into_iter().map(|v| v as f32).collect(),
    )
    .unwrap()
}

/// A 1-D integer array.
pub fn load_labels(path: impl AsRef<Path>) -> Vec<i64> {
    let (shape, values) = read(path.as_ref());
    assert_eq!(shape.len(), 1, "{}: not 1-D", path.as_ref().display());
    values.into_iter().map(|v| v as i64).collect()
}

/// The checked-in digits (1,797 × 64 pixels, labels 0-9).
pub fn digits() -> (Array2<f32>, Vec<u32>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/digits");
    let x = load_vectors(root.join("pixels.npy"));
    let y = load_labels(root.join("labels.npy"))
        .into_iter()
        .map(|l| l as u32)
        .collect();
    (x, y)
}

/// A 1-D array as f64 values.
pub fn load_values(path: impl AsRef<Path>) -> Vec<f64> {
    let (shape, values) = read(path.as_ref());
    assert_eq!(shape.len(), 1, "{}: not 1-D", path.as_ref().display());
    values
}

/// Any array's shape and its elements as f64 (f64 data unrounded).
pub fn read_any(path: impl AsRef<Path>) -> (Vec<usize>, Vec<f64>) {
    read(path.as_ref())
}
