//! Malformed input never panics and truncated input is always an error naming the file:
//! every prefix of small valid files of each format, fixed-seed random byte strings, and every
//! single-byte corruption are fed to every reader.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use codedb_cli::io::{
    IoError, NpyRowReader, RowSource, VecsKind, VecsRowReader, load_labels, load_vectors,
    read_bvecs, read_fvecs, read_ids, read_idx, read_idx_images, read_idx_labels, read_ivecs,
    read_labels, read_matrix_f32, read_matrix_u8, read_npy,
};
use flate2::Compression;
use flate2::write::GzEncoder;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Reader = (&'static str, fn(&Path) -> Result<(), IoError>);

fn drain(mut r: impl RowSource) -> Result<(), IoError> {
    while r.next_chunk(2)?.is_some() {}
    Ok(())
}

fn npy_readers() -> Vec<Reader> {
    vec![
        ("read_npy", |p| read_npy(p).map(drop)),
        ("read_matrix_f32", |p| read_matrix_f32(p).map(drop)),
        ("read_matrix_u8", |p| read_matrix_u8(p).map(drop)),
        ("read_labels", |p| read_labels(p).map(drop)),
        ("read_ids", |p| read_ids(p).map(drop)),
        ("NpyRowReader", |p| drain(NpyRowReader::open(p)?)),
        ("load_vectors", |p| load_vectors(p).map(drop)),
    ]
}

fn vecs_readers(kind: VecsKind) -> Vec<Reader> {
    // The record formats have no magic bytes (a prefix of an .fvecs file can be a valid
    // .bvecs file), so each file is checked with the readers of its own kind.
    match kind {
        VecsKind::F => vec![
            ("read_fvecs", |p| read_fvecs(p).map(drop)),
            ("VecsRowReader(F)", |p| {
                drain(VecsRowReader::open(p, VecsKind::F)?)
            }),
            ("load_vectors", |p| load_vectors(p).map(drop)),
        ],
        VecsKind::B => vec![
            ("read_bvecs", |p| read_bvecs(p).map(drop)),
            ("VecsRowReader(B)", |p| {
                drain(VecsRowReader::open(p, VecsKind::B)?)
            }),
            ("load_vectors", |p| load_vectors(p).map(drop)),
        ],
        VecsKind::I => vec![
            ("read_ivecs", |p| read_ivecs(p).map(drop)),
            ("VecsRowReader(I)", |p| {
                drain(VecsRowReader::open(p, VecsKind::I)?)
            }),
            ("load_vectors", |p| load_vectors(p).map(drop)),
        ],
    }
}

fn idx_readers() -> Vec<Reader> {
    vec![
        ("read_idx", |p| read_idx(p).map(drop)),
        ("read_idx_images", |p| read_idx_images(p).map(drop)),
        ("read_idx_labels", |p| read_idx_labels(p).map(drop)),
        ("load_vectors", |p| load_vectors(p).map(drop)),
        ("load_labels", |p| load_labels(p).map(drop)),
        ("IdxRowReader", |p| {
            drain(codedb_cli::io::IdxRowReader::open(p)?)
        }),
    ]
}

/// Runs a reader, turning a panic into a test failure that names the input.
fn run(reader: &Reader, path: &Path, case: &str) -> Result<(), IoError> {
    match catch_unwind(AssertUnwindSafe(|| (reader.1)(path))) {
        Ok(r) => r,
        Err(_) => panic!("{} panicked on {case}", reader.0),
    }
}

fn npy(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
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

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

fn record<T: Copy>(values: &[T], to_le: fn(T) -> Vec<u8>) -> Vec<u8> {
    let mut out = (values.len() as i32).to_le_bytes().to_vec();
    for &v in values {
        out.extend(to_le(v));
    }
    out
}

/// The record size of a `.?vecs` fixture (from its first dimension field), else None.
fn record_size(name: &str, bytes: &[u8]) -> Option<usize> {
    let value = match name.rsplit('.').next()? {
        "fvecs" | "ivecs" => 4,
        "bvecs" => 1,
        _ => return None,
    };
    let dim = i32::from_le_bytes(bytes[..4].try_into().ok()?) as usize;
    Some(4 + dim * value)
}

/// (file name, bytes, readers) for small valid files of every format.
fn valid_files() -> Vec<(&'static str, Vec<u8>, Vec<Reader>)> {
    let f32s: Vec<u8> = (0..6)
        .flat_map(|i| (i as f32 * 1.5).to_le_bytes())
        .collect();
    let i64s: Vec<u8> = (0..4).flat_map(|i| (i as i64 - 1).to_le_bytes()).collect();
    let fv = |v: f32| v.to_le_bytes().to_vec();
    let iv = |v: i32| v.to_le_bytes().to_vec();
    let bv = |v: u8| vec![v];
    let images = idx(&[2, 2, 3], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    let labels = idx(&[4], &[3, 1, 4, 1]);
    vec![
        (
            "v1.npy",
            npy(
                1,
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
                &f32s,
            ),
            npy_readers(),
        ),
        (
            "v2.npy",
            npy(
                2,
                "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }",
                &i64s,
            ),
            npy_readers(),
        ),
        (
            "v3.npy",
            npy(
                3,
                "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }",
                &[1, 2, 3, 4, 5, 6],
            ),
            npy_readers(),
        ),
        (
            "a.fvecs",
            [
                record(&[1.0f32, 2.0, 3.0], fv),
                record(&[4.0, 5.0, 6.0], fv),
            ]
            .concat(),
            vecs_readers(VecsKind::F),
        ),
        (
            "a.bvecs",
            [
                record(&[1u8, 2, 3, 4, 5], bv),
                record(&[6, 7, 8, 9, 10], bv),
            ]
            .concat(),
            vecs_readers(VecsKind::B),
        ),
        (
            "a.ivecs",
            [
                record(&[1i32, -2], iv),
                record(&[3, 4], iv),
                record(&[5, 6], iv),
            ]
            .concat(),
            vecs_readers(VecsKind::I),
        ),
        ("i-idx3-ubyte", images.clone(), idx_readers()),
        ("i-idx3-ubyte.gz", gzip(&images), idx_readers()),
        ("l-idx1-ubyte", labels.clone(), idx_readers()),
        ("l-idx1-ubyte.gz", gzip(&labels), idx_readers()),
    ]
}

#[test]
fn valid_fixtures_are_read_by_their_primary_reader() {
    // Guards the tests below: the fixtures themselves must be valid.
    let d = tempfile::tempdir().unwrap();
    for (name, bytes, readers) in valid_files() {
        let p = d.path().join(name);
        std::fs::write(&p, &bytes).unwrap();
        let ok: Vec<_> = readers
            .iter()
            .filter(|r| run(r, &p, name).is_ok())
            .map(|r| r.0)
            .collect();
        assert!(
            !ok.is_empty(),
            "{name}: no reader accepts the valid fixture"
        );
    }
}

#[test]
fn every_truncation_is_an_error_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    for (name, bytes, readers) in valid_files() {
        let p = d.path().join(name);
        for len in 0..bytes.len() {
            std::fs::write(&p, &bytes[..len]).unwrap();
            // The record formats have no header: a cut at a record boundary is a valid,
            // shorter file (checked to read as such); every other cut must fail.
            if let Some(rec) = record_size(name, &bytes)
                && len > 0
                && len.is_multiple_of(rec)
            {
                for r in &readers {
                    assert!(
                        run(r, &p, name).is_ok(),
                        "{} refused {len} whole records",
                        r.0
                    );
                }
                continue;
            }
            for r in &readers {
                let case = format!("{name} truncated to {len} of {} bytes", bytes.len());
                match run(r, &p, &case) {
                    Ok(()) => panic!("{} accepted {case}", r.0),
                    Err(e) => assert!(
                        e.to_string().contains(name),
                        "{}: {case}: error {e} does not name the file",
                        r.0
                    ),
                }
            }
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x10_5eed);
    let mut all: Vec<Reader> = npy_readers();
    for kind in [VecsKind::F, VecsKind::B, VecsKind::I] {
        all.extend(vecs_readers(kind));
    }
    all.extend(idx_readers());
    for case in 0..60 {
        let len = (rng.next_u32() % 400) as usize;
        let mut bytes = vec![0u8; len];
        rng.fill_bytes(&mut bytes);
        // Some cases start with a valid magic so the header parsers get exercised.
        match case % 4 {
            1 => bytes
                .splice(0..0, b"\x93NUMPY\x01\x00".iter().copied())
                .for_each(drop),
            2 => bytes.splice(0..0, [0u8, 0, 8, 3]).for_each(drop),
            3 => bytes.splice(0..0, [0x1f, 0x8b, 8, 0]).for_each(drop),
            _ => {}
        }
        for ext in ["x.npy", "x-idx3-ubyte", "x.fvecs", "x.bvecs", "x.ivecs"] {
            let p = d.path().join(ext);
            std::fs::write(&p, &bytes).unwrap();
            for r in &all {
                let res = run(r, &p, &format!("random case {case} as {ext}"));
                // Random bytes can form a valid .?vecs file (the format has no magic), but
                // never a valid .npy or IDX file.
                if ext.ends_with(".npy") || ext.contains("idx") {
                    assert!(res.is_err(), "{} accepted random case {case} as {ext}", r.0);
                }
            }
        }
    }
}

#[test]
fn single_byte_corruptions_never_panic() {
    let d = tempfile::tempdir().unwrap();
    for (name, bytes, readers) in valid_files() {
        let p = d.path().join(name);
        for i in 0..bytes.len() {
            for flip in [0xffu8, 0x01, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                std::fs::write(&p, &b).unwrap();
                for r in &readers {
                    if let Err(e) = run(r, &p, &format!("{name} with byte {i} ^ {flip:#x}")) {
                        assert!(e.to_string().contains(name), "{e}");
                    }
                }
            }
        }
    }
}
