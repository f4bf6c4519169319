//! `.fvecs`/`.bvecs`/`.ivecs` and IDX (plain and gzip) readers, the Fashion-MNIST directory
//! loader on a hand-made miniature, and the extension dispatcher.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::io::Write;
use std::path::PathBuf;

use codedb_cli::io::{
    IoError, RowSource, VecsKind, VecsRowReader, VectorFormat, detect_format, is_fashion_mnist_dir,
    load_fashion_mnist, load_labels, load_vectors, open_rows, read_bvecs, read_fvecs, read_idx,
    read_idx_images, read_idx_labels, read_ivecs, write_bvecs, write_fvecs, write_ivecs,
    write_npy_f32, write_npy_i32,
};
use flate2::Compression;
use flate2::write::GzEncoder;
use ndarray::{Array2, array};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn put(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// One `.fvecs` record by hand: int32 dimension, then float32 values, little-endian.
fn fvec(values: &[f32]) -> Vec<u8> {
    let mut out = (values.len() as i32).to_le_bytes().to_vec();
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// An IDX file by hand: 00 00 08 ndim, big-endian u32 dims, bytes.
fn idx(dims: &[u32], data: &[u8]) -> Vec<u8> {
    let mut out = vec![0, 0, 0x08, dims.len() as u8];
    for d in dims {
        out.extend(d.to_be_bytes());
    }
    out.extend_from_slice(data);
    out
}

#[test]
fn fvecs_hand_built_and_round_trip() {
    let d = tmp();
    let bytes = [fvec(&[1.0, 2.0, 3.0]), fvec(&[-1.5, 0.0, 9.0])].concat();
    let p = put(&d, "a.fvecs", &bytes);
    assert_eq!(
        read_fvecs(&p).unwrap(),
        array![[1.0, 2.0, 3.0], [-1.5, 0.0, 9.0]]
    );

    let m = Array2::from_shape_fn((50, 9), |(i, j)| i as f32 - j as f32 * 0.25);
    let q = d.path().join("m.fvecs");
    write_fvecs(&q, m.view()).unwrap();
    assert_eq!(std::fs::metadata(&q).unwrap().len(), 50 * (4 + 9 * 4));
    assert_eq!(read_fvecs(&q).unwrap(), m);
    assert_eq!(load_vectors(&q).unwrap(), m);
    // Chunked reading gives the same rows.
    let mut r = VecsRowReader::open(&q, VecsKind::F).unwrap();
    assert_eq!((r.rows(), r.dim()), (50, 9));
    let mut rows = 0;
    while let Some(c) = r.next_chunk(7).unwrap() {
        assert_eq!(c, m.slice(ndarray::s![rows..rows + c.nrows(), ..]));
        rows += c.nrows();
    }
    assert_eq!(rows, 50);
    assert!(matches!(
        r.next_chunk(0),
        Err(IoError::InvalidArgument { .. })
    ));
}

#[test]
fn bvecs_and_ivecs() {
    let d = tmp();
    let b = Array2::from_shape_fn((4, 3), |(i, j)| (i * 60 + j) as u8);
    let pb = d.path().join("b.bvecs");
    write_bvecs(&pb, b.view()).unwrap();
    // 4 records of 4 + 3 bytes.
    assert_eq!(std::fs::read(&pb).unwrap()[..7], [3, 0, 0, 0, 0, 1, 2]);
    assert_eq!(read_bvecs(&pb).unwrap(), b);
    assert_eq!(load_vectors(&pb).unwrap(), b.mapv(f32::from));

    let i = array![[1i32, -2], [30000, 4]];
    let pi = d.path().join("gt.ivecs");
    write_ivecs(&pi, i.view()).unwrap();
    assert_eq!(read_ivecs(&pi).unwrap(), i);
    assert_eq!(load_vectors(&pi).unwrap(), i.mapv(|v| v as f32));
    let mut r = open_rows(&pi).unwrap();
    assert_eq!(r.next_chunk(1).unwrap().unwrap(), array![[1.0f32, -2.0]]);
}

#[test]
fn vecs_errors_name_file_and_record() {
    let d = tmp();
    // Record 2 has dimension 2 while record 0 has 3; lengths happen not to align.
    let p = put(
        &d,
        "mixed.fvecs",
        &[fvec(&[1.0; 3]), fvec(&[2.0; 3]), fvec(&[3.0; 2])].concat(),
    );
    match read_fvecs(&p).unwrap_err() {
        IoError::InconsistentRecord {
            path,
            record,
            found,
            expected,
        } => {
            assert_eq!((record, found, expected), (2, 2, 3));
            assert_eq!(path, p);
        }
        e => panic!("unexpected {e}"),
    }
    // Record 1 has dimension 1 while record 0 has 1+... with lengths that align exactly:
    // [d=2: 2 values][d=1: 1 value][pad of 4 bytes] is 12 + 8 + 4 = 24 = 2 records of 12.
    let aligned = [fvec(&[1.0, 2.0]), fvec(&[5.0]), 0f32.to_le_bytes().to_vec()].concat();
    let p = put(&d, "aligned.fvecs", &aligned);
    let e = read_fvecs(&p).unwrap_err();
    assert!(
        matches!(
            e,
            IoError::InconsistentRecord {
                record: 1,
                found: 1,
                expected: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("aligned.fvecs: record 1: dimension 1, expected 2"),
        "{e}"
    );
    // A truncated last record.
    let mut t = [fvec(&[1.0; 4]), fvec(&[2.0; 4])].concat();
    t.truncate(t.len() - 3);
    let p = put(&d, "trunc.fvecs", &t);
    let e = read_fvecs(&p).unwrap_err();
    assert!(
        matches!(e, IoError::Truncated { .. }) && e.to_string().contains("record 1 is incomplete"),
        "{e}"
    );
    // Non-positive dimension, empty file, NaN with position.
    let p = put(&d, "neg.fvecs", &(-3i32).to_le_bytes());
    assert!(
        read_fvecs(&p)
            .unwrap_err()
            .to_string()
            .contains("dimension -3")
    );
    let p = put(&d, "empty.fvecs", &[]);
    assert!(matches!(read_fvecs(&p), Err(IoError::Empty { .. })));
    let p = put(
        &d,
        "nan.fvecs",
        &[fvec(&[1.0, 2.0]), fvec(&[3.0, f32::NAN])].concat(),
    );
    assert!(matches!(
        read_fvecs(&p),
        Err(IoError::NonFinite { row: 1, col: 1, .. })
    ));
    // Writers refuse matrices a record cannot hold.
    assert!(
        write_fvecs(
            d.path().join("z.fvecs"),
            Array2::<f32>::zeros((3, 0)).view()
        )
        .is_err()
    );
}

#[test]
fn idx_plain_and_gzip() {
    let d = tmp();
    // 3 images of 2×2 pixels, and 3 labels.
    let pixels: Vec<u8> = (0..12).map(|v| v * 20).collect();
    let images = idx(&[3, 2, 2], &pixels);
    let labels = idx(&[3], &[9, 0, 4]);
    let expected = Array2::from_shape_fn((3, 4), |(i, j)| ((i * 4 + j) * 20) as f32);
    for (name, bytes) in [
        ("x-idx3-ubyte", images.clone()),
        ("x-idx3-ubyte.gz", gzip(&images)),
    ] {
        let p = put(&d, name, &bytes);
        assert_eq!(read_idx_images(&p).unwrap(), expected, "{name}");
        assert_eq!(load_vectors(&p).unwrap(), expected, "{name}");
        assert_eq!(detect_format(&p).unwrap(), VectorFormat::Idx);
        let raw = read_idx(&p).unwrap();
        assert_eq!((raw.dims, raw.data), (vec![3, 2, 2], pixels.clone()));
        let mut r = open_rows(&p).unwrap();
        assert_eq!((r.rows(), r.dim()), (3, 4));
        assert_eq!(
            r.next_chunk(2).unwrap().unwrap(),
            expected.slice(ndarray::s![..2, ..])
        );
        assert_eq!(
            r.next_chunk(2).unwrap().unwrap(),
            expected.slice(ndarray::s![2.., ..])
        );
        assert!(r.next_chunk(2).unwrap().is_none());
    }
    for (name, bytes) in [
        ("y-idx1-ubyte", labels.clone()),
        ("y-idx1-ubyte.gz", gzip(&labels)),
    ] {
        let p = put(&d, name, &bytes);
        assert_eq!(read_idx_labels(&p).unwrap(), vec![9, 0, 4]);
        assert_eq!(load_labels(&p).unwrap(), vec![9, 0, 4]);
        // A label file is not an image matrix.
        assert!(matches!(
            read_idx_images(&p),
            Err(IoError::WrongShape { .. })
        ));
    }
}

#[test]
fn idx_errors() {
    let d = tmp();
    let p = put(&d, "m-idx3-ubyte", &[1, 0, 8, 1, 0, 0, 0, 1, 5]);
    assert!(matches!(read_idx(&p), Err(IoError::BadMagic { .. })));
    let p = put(&d, "f-idx3-ubyte", &[0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0]);
    let e = read_idx(&p).unwrap_err();
    assert!(
        e.to_string().contains("float32") && e.to_string().contains("f-idx3-ubyte"),
        "{e}"
    );
    let p = put(&d, "short-idx3-ubyte", &idx(&[2, 2, 2], &[1; 7]));
    assert!(matches!(read_idx(&p), Err(IoError::Truncated { .. })));
    let p = put(&d, "long-idx3-ubyte", &idx(&[1, 2, 2], &[1; 6]));
    assert!(matches!(
        read_idx(&p),
        Err(IoError::TrailingData { extra: 2, .. })
    ));
    // A damaged CRC in the gzip trailer is detected.
    let mut gz = gzip(&idx(&[1, 2, 2], &[1, 2, 3, 4]));
    let n = gz.len();
    gz[n - 8] ^= 0xff;
    let p = put(&d, "crc-idx3-ubyte.gz", &gz);
    let e = read_idx(&p).unwrap_err();
    assert!(matches!(e, IoError::Corrupt { .. }), "{e}");
    assert!(e.to_string().contains("crc-idx3-ubyte.gz"), "{e}");
    let p = put(&d, "empty-idx3-ubyte", &idx(&[0, 28, 28], &[]));
    assert!(matches!(read_idx_images(&p), Err(IoError::Empty { .. })));
}

#[test]
fn fashion_mnist_directory_loader_on_a_miniature() {
    let d = tmp();
    let train: Vec<u8> = (0..3 * 4).map(|v| v as u8).collect();
    let test: Vec<u8> = (100..100 + 2 * 4).map(|v| v as u8).collect();
    put(
        &d,
        "train-images-idx3-ubyte.gz",
        &gzip(&idx(&[3, 2, 2], &train)),
    );
    put(
        &d,
        "train-labels-idx1-ubyte.gz",
        &gzip(&idx(&[3], &[1, 2, 3])),
    );
    // The uncompressed name is accepted too.
    put(&d, "t10k-images-idx3-ubyte", &idx(&[2, 2, 2], &test));
    assert!(!is_fashion_mnist_dir(d.path()));
    let e = load_fashion_mnist(d.path()).unwrap_err();
    assert!(e.to_string().contains("t10k-labels-idx1-ubyte.gz"), "{e}");
    put(&d, "t10k-labels-idx1-ubyte.gz", &gzip(&idx(&[2], &[7, 8])));
    assert!(is_fashion_mnist_dir(d.path()));
    let data = load_fashion_mnist(d.path()).unwrap();
    assert_eq!(data.vectors.dim(), (5, 4));
    assert_eq!(data.vectors[[3, 0]], 100.0);
    assert_eq!(data.labels, vec![1, 2, 3, 7, 8]);
    assert_eq!(data.split, vec![0, 0, 0, 1, 1]);
    assert_eq!(load_vectors(d.path()).unwrap(), data.vectors);
    assert!(open_rows(d.path()).is_err());
    // Label count must match image count.
    put(
        &d,
        "t10k-labels-idx1-ubyte.gz",
        &gzip(&idx(&[3], &[7, 8, 9])),
    );
    let e = load_fashion_mnist(d.path()).unwrap_err();
    assert!(e.to_string().contains("3 labels for the 2 images"), "{e}");
}

#[test]
fn dispatcher_by_extension() {
    let d = tmp();
    let m = array![[1.0f32, 2.0], [3.0, 4.0]];
    let p = d.path().join("UPPER.NPY");
    write_npy_f32(&p, m.view()).unwrap();
    assert_eq!(load_vectors(&p).unwrap(), m);
    let labels = d.path().join("labels.npy");
    write_npy_i32(&labels, &[3, 1]).unwrap();
    assert_eq!(load_labels(&labels).unwrap(), vec![3, 1]);
    for name in ["x.csv", "x", "x.npz", "idx3-ubyte.txt"] {
        let p = put(&d, name, b"1,2\n");
        let e = load_vectors(&p).unwrap_err();
        assert!(matches!(e, IoError::UnknownFormat { .. }), "{name}: {e}");
        assert!(
            e.to_string().contains(name) && e.to_string().contains(".fvecs"),
            "{e}"
        );
    }
    assert!(matches!(
        load_vectors(d.path()),
        Err(IoError::UnknownFormat { .. })
    ));
    assert_eq!(
        detect_format("a/b.bvecs").unwrap(),
        VectorFormat::Vecs(VecsKind::B)
    );
    assert_eq!(
        detect_format("t10k-images.idx3-ubyte").unwrap(),
        VectorFormat::Idx
    );
    assert!(matches!(
        load_labels(put(&d, "l.fvecs", &fvec(&[1.0]))),
        Err(IoError::UnknownFormat { .. })
    ));
}
