//! `.npy` reading and writing: hand-built fixtures for every header version and dtype,
//! byte-exact comparison with files numpy wrote, refusals, chunked reading.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use codedb_cli::io::{
    IoError, NpyData, NpyDtype, NpyF32Writer, NpyRowReader, RowSource, read_ids, read_labels,
    read_matrix_f32, read_matrix_u8, read_npy, write_npy_f32, write_npy_i32, write_npy_i64,
    write_npy_u8, write_npy_u64,
};
use ndarray::{Array2, array, s};

// Files written by numpy 2.4.6 `np.save` (hex of the whole file):
// [[1.5, -2, 3], [4, 5, 6.25]] float32, [[0, 255], [7, 8]] uint8, [-1, 2, 3] int32,
// [-5, 2**40] int64, [0, 2**64 - 1] uint64.
const GOLDEN_F32: &str = "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c2033292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a0000c03f000000c000004040000080400000a0400000c840";
const GOLDEN_U8: &str = "934e554d5059010076007b276465736372273a20277c7531272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c2032292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a00ff0708";
const GOLDEN_I32: &str = "934e554d5059010076007b276465736372273a20273c6934272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028332c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200affffffff0200000003000000";
const GOLDEN_I64: &str = "934e554d5059010076007b276465736372273a20273c6938272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200afbffffffffffffff0000000000010000";
const GOLDEN_U64: &str = "934e554d5059010076007b276465736372273a20273c7538272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a0000000000000000ffffffffffffffff";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Builds an `.npy` file by hand: magic, version, length field of the version's width, the
/// header text padded to 64 bytes and ended by `\n`, then `data`.
fn npy_bytes(major: u8, dict: &str, data: &[u8]) -> Vec<u8> {
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

fn dict(descr: &str, shape: &str) -> String {
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
}

fn le_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.0.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

fn err_names_file(e: &IoError, path: &Path) {
    let msg = e.to_string();
    assert!(
        msg.contains(&path.display().to_string()),
        "error {msg:?} does not name {}",
        path.display()
    );
}

#[test]
fn reads_every_header_version() {
    let d = Dir::new();
    let values = [1.0f32, -2.5, 3.25, 4.0, 5.5, -6.0];
    for major in [1u8, 2, 3] {
        let p = d.file(
            &format!("v{major}.npy"),
            &npy_bytes(major, &dict("<f4", "(2, 3)"), &le_f32(&values)),
        );
        let m = read_matrix_f32(&p).unwrap();
        assert_eq!(
            m,
            array![[1.0, -2.5, 3.25], [4.0, 5.5, -6.0]],
            "version {major}"
        );
    }
    // Version 3.0 headers are UTF-8; a non-ASCII character inside a string is legal there.
    let p = d.file(
        "v3utf8.npy",
        &npy_bytes(
            3,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }",
            &le_f32(&[7.0]),
        ),
    );
    assert_eq!(read_matrix_f32(&p).unwrap(), array![[7.0]]);
    // An unknown version is refused by number.
    let mut bad = npy_bytes(1, &dict("<f4", "(1, 1)"), &le_f32(&[1.0]));
    bad[6] = 4;
    let p = d.file("v4.npy", &bad);
    let e = read_npy(&p).unwrap_err();
    assert!(e.to_string().contains("version 4.0"), "{e}");
    err_names_file(&e, &p);
}

#[test]
fn reads_every_dtype_and_converts_to_f32() {
    let d = Dir::new();
    let f64s: Vec<u8> = [1.5f64, -2.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let i32s: Vec<u8> = [-7i32, 9].iter().flat_map(|x| x.to_le_bytes()).collect();
    let i64s: Vec<u8> = [-(1i64 << 40), 3]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let u64s: Vec<u8> = [5u64, 1 << 50]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let cases: Vec<(&str, Vec<u8>, NpyData, [f32; 2])> = vec![
        ("<f8", f64s, NpyData::F64(vec![1.5, -2.0]), [1.5, -2.0]),
        ("|u1", vec![0, 255], NpyData::U8(vec![0, 255]), [0.0, 255.0]),
        ("<i4", i32s, NpyData::I32(vec![-7, 9]), [-7.0, 9.0]),
        (
            "<i8",
            i64s,
            NpyData::I64(vec![-(1 << 40), 3]),
            [-1099511627776.0, 3.0],
        ),
        (
            "<u8",
            u64s,
            NpyData::U64(vec![5, 1 << 50]),
            [5.0, 1125899906842624.0],
        ),
    ];
    for (descr, bytes, typed, as_f32) in cases {
        let p = d.file("a.npy", &npy_bytes(1, &dict(descr, "(1, 2)"), &bytes));
        let arr = read_npy(&p).unwrap();
        assert_eq!(arr.shape, vec![1, 2], "{descr}");
        assert_eq!(arr.data, typed, "{descr}");
        assert_eq!(
            read_matrix_f32(&p).unwrap(),
            Array2::from_shape_vec((1, 2), as_f32.to_vec()).unwrap()
        );
    }
}

#[test]
fn converts_big_endian() {
    let d = Dir::new();
    let be: Vec<u8> = [1.5f32, -3.0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let p = d.file("be.npy", &npy_bytes(1, &dict(">f4", "(2, 1)"), &be));
    assert_eq!(read_matrix_f32(&p).unwrap(), array![[1.5], [-3.0]]);
    let be: Vec<u8> = [-4i64, 1 << 33]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let p = d.file("be_labels.npy", &npy_bytes(2, &dict(">i8", "(2,)"), &be));
    assert_eq!(read_labels(&p).unwrap(), vec![-4, 1 << 33]);
}

#[test]
fn refuses_what_it_cannot_read_correctly() {
    let d = Dir::new();
    let six = le_f32(&[1.0; 6]);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "fortran.npy",
            npy_bytes(
                1,
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                &six,
            ),
            "Fortran",
        ),
        (
            "object.npy",
            npy_bytes(1, &dict("|O", "(2,)"), &[0; 16]),
            "object arrays",
        ),
        (
            "complex.npy",
            npy_bytes(1, &dict("<c8", "(3,)"), &six),
            "'<c8'",
        ),
        (
            "int16.npy",
            npy_bytes(1, &dict("<i2", "(3,)"), &six[..6]),
            "'<i2'",
        ),
        (
            "short.npy",
            npy_bytes(1, &dict("<f4", "(2, 3)"), &six[..20]),
            "needs 24 data bytes, the file has 20",
        ),
        (
            "long.npy",
            npy_bytes(
                1,
                &dict("<f4", "(2, 3)"),
                &[six.clone(), vec![0; 5]].concat(),
            ),
            "5 unexpected bytes",
        ),
        (
            "magic.npy",
            b"\x93NUMPX\x01\x00\x00\x00".to_vec(),
            "not a .npy file",
        ),
        (
            "huge.npy",
            npy_bytes(1, &dict("<f4", "(4611686018427387904, 4)"), &six),
            "overflows",
        ),
    ];
    for (name, bytes, needle) in cases {
        let p = d.file(name, &bytes);
        let e = read_npy(&p).unwrap_err();
        assert!(e.to_string().contains(needle), "{name}: {e}");
        err_names_file(&e, &p);
    }
}

#[test]
fn matrix_readers_check_shape_range_and_finiteness() {
    let d = Dir::new();
    let one_d = d.file(
        "one_d.npy",
        &npy_bytes(1, &dict("<f4", "(3,)"), &le_f32(&[1.0; 3])),
    );
    let e = read_matrix_f32(&one_d).unwrap_err();
    assert!(
        matches!(e, IoError::WrongShape { .. }) && e.to_string().contains("2-D"),
        "{e}"
    );
    let three_d = d.file(
        "three_d.npy",
        &npy_bytes(1, &dict("<f4", "(1, 1, 2)"), &le_f32(&[1.0; 2])),
    );
    assert!(matches!(
        read_matrix_f32(&three_d),
        Err(IoError::WrongShape { .. })
    ));
    let empty = d.file("empty.npy", &npy_bytes(1, &dict("<f4", "(0, 4)"), &[]));
    assert!(matches!(
        read_matrix_f32(&empty),
        Err(IoError::Empty {
            rows: 0,
            cols: 4,
            ..
        })
    ));
    let no_cols = d.file("nocols.npy", &npy_bytes(1, &dict("<f4", "(4, 0)"), &[]));
    assert!(matches!(
        read_matrix_f32(&no_cols),
        Err(IoError::Empty {
            rows: 4,
            cols: 0,
            ..
        })
    ));
    // A NaN at row 1, column 2 of a 2×3 matrix.
    let nan = d.file(
        "nan.npy",
        &npy_bytes(
            1,
            &dict("<f4", "(2, 3)"),
            &le_f32(&[0.0, 0.0, 0.0, 0.0, 0.0, f32::NAN]),
        ),
    );
    match read_matrix_f32(&nan).unwrap_err() {
        IoError::NonFinite { what, row, col, .. } => {
            assert_eq!((row, col), (1, 2));
            assert!(what.contains("nan.npy"));
        }
        e => panic!("unexpected {e}"),
    }
    // 1e300 is a finite float64 that float32 cannot hold: refused, not turned into infinity.
    let big: Vec<u8> = [1.0f64, 1e300]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let big = d.file("big.npy", &npy_bytes(1, &dict("<f8", "(1, 2)"), &big));
    match read_matrix_f32(&big).unwrap_err() {
        IoError::InvalidValue { index, detail, .. } => {
            assert_eq!(index, 1);
            assert!(detail.contains("float32 range"), "{detail}");
        }
        e => panic!("unexpected {e}"),
    }
    // read_matrix_u8 refuses other dtypes instead of truncating them.
    let f = d.file(
        "f.npy",
        &npy_bytes(1, &dict("<f4", "(1, 1)"), &le_f32(&[1.0])),
    );
    assert!(matches!(
        read_matrix_u8(&f),
        Err(IoError::UnsupportedDtype { .. })
    ));
}

#[test]
fn labels_and_ids() {
    let d = Dir::new();
    let i32s = |v: &[i32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let col = d.file(
        "col.npy",
        &npy_bytes(1, &dict("<i4", "(3, 1)"), &i32s(&[2, 0, 7])),
    );
    assert_eq!(read_labels(&col).unwrap(), vec![2, 0, 7]);
    assert_eq!(read_ids(&col).unwrap(), vec![2, 0, 7]);
    let wide = d.file(
        "wide.npy",
        &npy_bytes(1, &dict("<i4", "(2, 2)"), &i32s(&[1, 2, 3, 4])),
    );
    assert!(matches!(
        read_labels(&wide),
        Err(IoError::WrongShape { .. })
    ));
    let neg = d.file(
        "neg.npy",
        &npy_bytes(1, &dict("<i4", "(3,)"), &i32s(&[4, -1, 5])),
    );
    assert_eq!(read_labels(&neg).unwrap(), vec![4, -1, 5]);
    match read_ids(&neg).unwrap_err() {
        IoError::InvalidValue { index, detail, .. } => {
            assert_eq!((index, detail.as_str()), (1, "id -1 is negative"))
        }
        e => panic!("unexpected {e}"),
    }
    let floats = d.file(
        "fl.npy",
        &npy_bytes(1, &dict("<f4", "(2,)"), &le_f32(&[1.0, 2.0])),
    );
    let e = read_labels(&floats).unwrap_err();
    assert!(e.to_string().contains("must be integers"), "{e}");
    let huge: Vec<u8> = [1u64, u64::MAX]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let huge = d.file("huge.npy", &npy_bytes(1, &dict("<u8", "(2,)"), &huge));
    assert_eq!(read_ids(&huge).unwrap(), vec![1, u64::MAX]);
    assert!(matches!(
        read_labels(&huge),
        Err(IoError::InvalidValue { index: 1, .. })
    ));
    let empty = d.file("empty.npy", &npy_bytes(1, &dict("<i8", "(0,)"), &[]));
    assert!(matches!(read_labels(&empty), Err(IoError::Empty { .. })));
}

#[test]
fn writers_match_numpy_byte_for_byte() {
    let d = Dir::new();
    let p = d.path("f32.npy");
    write_npy_f32(&p, array![[1.5f32, -2.0, 3.0], [4.0, 5.0, 6.25]].view()).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), unhex(GOLDEN_F32));
    write_npy_u8(&p, array![[0u8, 255], [7, 8]].view()).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), unhex(GOLDEN_U8));
    write_npy_i32(&p, &[-1, 2, 3]).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), unhex(GOLDEN_I32));
    write_npy_i64(&p, &[-5, 1 << 40]).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), unhex(GOLDEN_I64));
    write_npy_u64(&p, &[0, u64::MAX]).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), unhex(GOLDEN_U64));
    // And the numpy files read back to the same values.
    let g = d.file("g.npy", &unhex(GOLDEN_F32));
    assert_eq!(
        read_matrix_f32(&g).unwrap(),
        array![[1.5, -2.0, 3.0], [4.0, 5.0, 6.25]]
    );
}

#[test]
fn writers_round_trip_including_strided_views() {
    let d = Dir::new();
    let m = Array2::from_shape_fn((37, 5), |(i, j)| (i * 5 + j) as f32 * 0.5 - 20.0);
    let p = d.path("m.npy");
    write_npy_f32(&p, m.view()).unwrap();
    assert_eq!(read_matrix_f32(&p).unwrap(), m);
    // A transposed (non-contiguous) view is written in logical row order.
    write_npy_f32(&p, m.t()).unwrap();
    assert_eq!(read_matrix_f32(&p).unwrap(), m.t().to_owned());
    let stepped = m.slice(s![..;3, 1..;2]);
    write_npy_f32(&p, stepped).unwrap();
    assert_eq!(read_matrix_f32(&p).unwrap(), stepped.to_owned());
    let codes = Array2::from_shape_fn((9, 4), |(i, j)| (i * 31 + j * 7) as u8);
    write_npy_u8(&p, codes.view()).unwrap();
    assert_eq!(read_matrix_u8(&p).unwrap(), codes);
    write_npy_i64(&p, &[i64::MIN, -1, 0, i64::MAX]).unwrap();
    assert_eq!(read_labels(&p).unwrap(), vec![i64::MIN, -1, 0, i64::MAX]);
    write_npy_u64(&p, &[3, 1, 4]).unwrap();
    assert_eq!(read_ids(&p).unwrap(), vec![3, 1, 4]);
    // Every written header is 64-byte aligned and version 1.0.
    let bytes = std::fs::read(&p).unwrap();
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + hlen) % 64, 0);
    assert_eq!(&bytes[6..8], &[1, 0]);
}

#[test]
fn row_reader_streams_in_chunks() {
    let d = Dir::new();
    let m = Array2::from_shape_fn((103, 7), |(i, j)| (i as f32) * 10.0 + j as f32);
    let p = d.path("m.npy");
    write_npy_f32(&p, m.view()).unwrap();
    for chunk in [1usize, 10, 103, 1000] {
        let mut r = NpyRowReader::open(&p).unwrap();
        assert_eq!((r.rows(), r.dim(), r.dtype()), (103, 7, NpyDtype::F32));
        let mut got = Vec::new();
        while let Some(c) = r.next_chunk(chunk).unwrap() {
            assert!(c.nrows() <= chunk && c.nrows() > 0);
            got.push(c);
        }
        assert_eq!(r.rows_read(), 103);
        let views: Vec<_> = got.iter().map(|c| c.view()).collect();
        assert_eq!(ndarray::concatenate(ndarray::Axis(0), &views).unwrap(), m);
        assert!(r.next_chunk(5).unwrap().is_none());
    }
    let mut r = NpyRowReader::open(&p).unwrap();
    assert!(matches!(
        r.next_chunk(0),
        Err(IoError::InvalidArgument {
            argument: "max_rows",
            ..
        })
    ));

    // uint8 data are converted per chunk; a NaN in a later chunk is reported by absolute row.
    let u = d.path("u.npy");
    let codes = Array2::from_shape_fn((5, 3), |(i, j)| (i * 3 + j) as u8);
    write_npy_u8(&u, codes.view()).unwrap();
    let mut r = NpyRowReader::open(&u).unwrap();
    let c = r.next_chunk(2).unwrap().unwrap();
    assert_eq!(c, codes.slice(s![..2, ..]).mapv(f32::from));
    let mut with_nan = m.clone();
    with_nan[[57, 3]] = f32::NEG_INFINITY;
    write_npy_f32(&p, with_nan.view()).unwrap();
    let mut r = NpyRowReader::open(&p).unwrap();
    let mut result = Ok(None);
    for _ in 0..20 {
        result = r.next_chunk(10);
        if result.is_err() {
            break;
        }
    }
    match result {
        Err(IoError::NonFinite {
            row: 57, col: 3, ..
        }) => {}
        other => panic!("expected a NonFinite error at (57, 3), got {other:?}"),
    }
}

#[test]
fn streaming_writer_checks_row_count_and_publishes_atomically() {
    let d = Dir::new();
    let p = d.path("s.npy");
    let m = Array2::from_shape_fn((10, 3), |(i, j)| (i + j) as f32);
    let mut w = NpyF32Writer::create(&p, 10, 3).unwrap();
    w.write_rows(m.slice(s![..4, ..])).unwrap();
    assert!(!p.exists(), "file must not appear before finish()");
    w.write_rows(m.slice(s![4.., ..])).unwrap();
    w.finish().unwrap();
    assert_eq!(read_matrix_f32(&p).unwrap(), m);

    let p2 = d.path("short.npy");
    let mut w = NpyF32Writer::create(&p2, 10, 3).unwrap();
    w.write_rows(m.slice(s![..4, ..])).unwrap();
    assert!(w.write_rows(Array2::zeros((1, 2)).view()).is_err());
    assert!(w.write_rows(Array2::zeros((7, 3)).view()).is_err());
    let e = w.finish().unwrap_err();
    assert!(e.to_string().contains("declared 10 rows, wrote 4"), "{e}");
    assert!(!p2.exists());
}

#[test]
fn missing_file_is_named() {
    let p = Path::new("/nonexistent/dir/x.npy");
    let e = read_npy(p).unwrap_err();
    assert!(matches!(e, IoError::Io { .. }));
    err_names_file(&e, p);
}

/// Cross-check with a real numpy when one is installed (`CODEDB_PYTHON` or `python3`);
/// skipped otherwise. The hand-built fixtures above are the tests that always run.
#[test]
fn agrees_with_numpy_when_available() {
    let python = std::env::var("CODEDB_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&python)
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        println!("skipped: no numpy in {python}");
        return;
    }
    let d = Dir::new();
    let dir = d.0.path().display().to_string();
    let script = format!(
        r#"
import numpy as np
d = {dir:?}
np.save(d + "/a.npy", np.arange(12, dtype=np.float64).reshape(3, 4) / 8)
np.save(d + "/b.npy", np.arange(6, dtype=">i4"))
np.save(d + "/c.npy", np.arange(6, dtype=np.uint8).reshape(2, 3))
np.save(d + "/fortran.npy", np.asfortranarray(np.ones((2, 3), np.float32)))
m = np.load(d + "/ours.npy")
assert m.dtype == np.float32 and m.shape == (2, 3) and m[1, 2] == 5.5, (m.dtype, m)
"#
    );
    write_npy_f32(
        d.path("ours.npy"),
        array![[0.0f32, 1.0, 2.0], [3.0, 4.0, 5.5]].view(),
    )
    .unwrap();
    let out = std::process::Command::new(&python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a = read_matrix_f32(d.path("a.npy")).unwrap();
    assert_eq!(
        a,
        Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32 / 8.0)
    );
    assert_eq!(
        read_labels(d.path("b.npy")).unwrap(),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert_eq!(
        read_matrix_u8(d.path("c.npy")).unwrap(),
        array![[0u8, 1, 2], [3, 4, 5]]
    );
    assert!(matches!(
        read_npy(d.path("fortran.npy")),
        Err(IoError::FortranOrder { .. })
    ));
}
