//! Input files built by hand, byte by byte, for the dataset readers' tests.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

/// Builds an `.npy` file by hand: magic, version, length field of the version's width, the
/// header text padded to 64 bytes and ended by `\n`, then `data`.
pub fn npy_bytes(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
    let len_bytes = if major == 1 { 2 } else { 4 };
    let mut text = dict.as_bytes().to_vec();
    let unpadded = 8 + len_bytes + text.len() + 1;
    text.extend(std::iter::repeat_n(b' ', (64 - unpadded % 64) % 64));
    text.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([major, 0]);
    if major == 1 {
        out.extend((text.len() as u16).to_le_bytes());
    } else {
        out.extend((text.len() as u32).to_le_bytes());
    }
    out.extend(text);
    out.extend_from_slice(data);
    out
}

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// An IDX file by hand: 00 00 08 ndim, big-endian u32 dims, bytes.
pub fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}
