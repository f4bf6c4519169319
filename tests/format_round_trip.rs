//! Every file kind: what is written reads back equal (property tests over random contents),
//! and bad writer input is refused with an error naming the argument.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

use codedb::format::{
    ClassFileEntry, ClassRecord, ClassTable, CodeKind, DeletionBitmap, FileId, FileRef,
    FormatError, Manifest, ModelFile, OpenOptions, SegmentData, SegmentLayout, SegmentReader,
    SegmentWriter, StageRecord, StoredVectors, Tensor, TensorData, VectorDType, stage_kind,
};
use proptest::prelude::*;

fn layout(kind: CodeKind, bytes: u32) -> SegmentLayout {
    let bits = match kind {
        CodeKind::Binary | CodeKind::Pq8 | CodeKind::Float32 | CodeKind::Float16 => bytes * 8,
        CodeKind::Pq4 => bytes * 8,
    };
    SegmentLayout {
        code_kind: kind,
        code_bytes: bytes,
        code_bits: bits,
        model_id: FileId::from_u128(99),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn segment_round_trips(
        rows in 0usize..40,
        width in 1u32..40,
        seed in any::<u64>(),
        with_labels in any::<bool>(),
        with_lists in any::<bool>(),
        vec_kind in 0u8..5,
    ) {
        let ids: Vec<u64> = (0..rows as u64).map(|i| i.wrapping_mul(seed | 1) ^ seed).collect();
        let codes: Vec<u8> = (0..rows * width as usize).map(|i| (i as u64 ^ seed) as u8).collect();
        let dim = 3u32;
        let vectors = match vec_kind {
            0 | 1 => None,
            k => Some(StoredVectors {
                dim,
                dtype: if k == 2 { VectorDType::F32 } else { VectorDType::F16 },
                // Values exactly representable in f16 so the f16 round trip is exact.
                data: (0..rows * dim as usize).map(|i| (i % 17) as f32 * 0.5 - 4.0).collect(),
                zstd_level: (k == 4).then_some(3),
            }),
        };
        let data = SegmentData {
            segment_id: FileId::from_u128(seed as u128),
            layout: layout(CodeKind::Binary, width),
            ids,
            codes,
            labels: with_labels.then(|| (0..rows as u32).collect()),
            lists: with_lists.then(|| (0..rows as u32).map(|x| x % 3).collect()),
            vectors,
        };
        let bytes = data.to_bytes().unwrap();
        let r = SegmentReader::from_bytes(&bytes, Path::new("t")).unwrap();
        prop_assert_eq!(SegmentData::from_reader(&r).unwrap(), data);
    }

    #[test]
    fn model_round_trips(dims in proptest::collection::vec(1u64..6, 0..4), n in 1usize..4) {
        let count: u64 = dims.iter().product();
        let stages = (0..n).map(|i| StageRecord {
            kind: stage_kind::LINEAR,
            required: i % 2 == 0,
            tensors: vec![
                Tensor::new("w", &dims, TensorData::F32((0..count).map(|x| x as f32).collect())),
                Tensor::new("idx", &[count], TensorData::U32((0..count as u32).collect())),
                Tensor::scalar_f64("scale", 0.5 + i as f64),
            ],
        }).collect();
        let m = ModelFile {
            model_id: FileId::from_u128(5),
            input_dim: 7,
            code_kind: CodeKind::Pq4,
            code_bytes: 3,
            code_bits: 20,
            stages,
            skipped_stages: vec![],
        };
        let back = ModelFile::from_bytes(&m.to_bytes().unwrap(), Path::new("t")).unwrap();
        prop_assert_eq!(back, m);
    }

    #[test]
    fn deletion_bitmap_round_trips(rows in 0u64..300, del in proptest::collection::vec(0u64..300, 0..50)) {
        let mut d = DeletionBitmap::new(FileId::from_u128(1), FileId::from_u128(2), rows);
        for r in del { d.delete(r); }
        let back = DeletionBitmap::from_bytes(&d.to_bytes().unwrap(), Path::new("t")).unwrap();
        prop_assert_eq!(back, d);
    }

    #[test]
    fn class_table_round_trips(n in 0u32..12, dim in 1u32..5) {
        let t = ClassTable {
            file_id: FileId::from_u128(3),
            dim,
            delta_of: None,
            classes: (0..n).map(|i| ClassRecord {
                id: i * 3,
                name: format!("class-{i}"),
                parent: (i > 0).then(|| (i - 1) * 3),
                count: i as u64,
                sum: (0..dim).map(|d| d as f64 * 0.25 + i as f64).collect(),
                centroids: (0..i % 3).map(|k| codedb::format::Centroid {
                    weight: k as f32,
                    vector: vec![k as f32; dim as usize],
                }).collect(),
                removed: 0,
            }).collect(),
        };
        let back = ClassTable::from_bytes(&t.to_bytes().unwrap(), Path::new("t")).unwrap();
        prop_assert_eq!(back, t);
    }
}

fn fref(id: u128, name: &str) -> FileRef {
    FileRef {
        id: FileId::from_u128(id),
        name: name.into(),
    }
}

#[test]
fn manifest_round_trips() {
    let m = Manifest {
        file_id: FileId::from_u128(1),
        version: 42,
        created_unix_ms: 123,
        next_auto_id: 1000,
        model: fref(2, "model-x.model"),
        segments: vec![codedb::format::SegmentEntry {
            segment: fref(3, "seg-a.seg"),
            rows: 10,
            deleted: 1,
            deletions: Some(fref(4, "del-a.del")),
        }],
        class_files: vec![ClassFileEntry {
            file: fref(5, "classes-a.cls"),
            delta: false,
        }],
        vectors: Some(codedb::format::VectorSpec::new(
            codedb::format::VectorDType::F32,
            7,
        )),
        attributes: codedb::Schema::parse("year:int,tags:tags")
            .unwrap()
            .with_default("tags", codedb::Value::Tags(vec!["none".into()]))
            .unwrap(),
    };
    assert_eq!(
        Manifest::from_bytes(&m.to_bytes().unwrap(), Path::new("t")).unwrap(),
        m
    );
}

#[test]
fn manifest_refuses_paths_outside_the_index() {
    for bad in ["../etc/passwd", "a/b", "", "..", "x\0y"] {
        let m = Manifest {
            file_id: FileId::from_u128(1),
            version: 1,
            created_unix_ms: 0,
            next_auto_id: 0,
            model: fref(2, bad),
            segments: vec![],
            class_files: vec![],
            vectors: None,
            attributes: Default::default(),
        };
        let err = m.to_bytes().unwrap_err();
        assert!(
            err.to_string().contains("invalid file name"),
            "{bad:?}: {err}"
        );
    }
}

#[test]
fn class_table_refuses_cycles_duplicates_and_nan() {
    let rec = |id, name: &str, parent| ClassRecord {
        id,
        name: name.into(),
        parent,
        count: 1,
        sum: vec![1.0],
        centroids: vec![],
        removed: 0,
    };
    let table = |classes| ClassTable {
        file_id: FileId::from_u128(1),
        dim: 1,
        delta_of: None,
        classes,
    };
    let cases = [
        (
            table(vec![rec(1, "a", Some(2)), rec(2, "b", Some(1))]),
            "cycle",
        ),
        (
            table(vec![rec(1, "a", None), rec(1, "b", None)]),
            "duplicate class id",
        ),
        (
            table(vec![rec(1, "a", None), rec(2, "a", None)]),
            "duplicate class name",
        ),
        (table(vec![rec(1, "a", Some(9))]), "does not exist"),
        (
            table(vec![ClassRecord {
                sum: vec![f64::NAN],
                ..rec(1, "a", None)
            }]),
            "finite",
        ),
    ];
    for (t, want) in cases {
        let err = t.to_bytes().unwrap_err().to_string();
        assert!(err.contains(want), "{want}: {err}");
    }
}

#[test]
fn segment_writer_refuses_inconsistent_columns() {
    let path = Path::new("x.seg");
    let mut w =
        SegmentWriter::new(Vec::new(), FileId::ZERO, layout(CodeKind::Pq8, 4), path).unwrap();
    w.ids(&[1, 2]).unwrap();
    w.codes(&[0; 8]).unwrap();
    let err = w
        .labels(&[1])
        .and_then(|_| w.finish().map(|_| ()))
        .unwrap_err();
    assert!(err.to_string().contains("labels"), "{err}");

    let mut w =
        SegmentWriter::new(Vec::new(), FileId::ZERO, layout(CodeKind::Pq8, 4), path).unwrap();
    w.ids(&[1, 2]).unwrap();
    let err = w.codes(&[0; 7]).unwrap_err();
    assert!(matches!(err, FormatError::InvalidArgument { .. }), "{err}");

    let mut w =
        SegmentWriter::new(Vec::new(), FileId::ZERO, layout(CodeKind::Pq8, 4), path).unwrap();
    w.ids(&[1]).unwrap();
    w.codes(&[0; 4]).unwrap();
    let err = w
        .vectors(&[f32::NAN, 1.0], 2, VectorDType::F32, None)
        .unwrap_err();
    assert!(err.to_string().contains("not finite"), "{err}");

    let bad = SegmentLayout {
        code_bits: 65,
        ..layout(CodeKind::Binary, 8)
    };
    assert!(SegmentWriter::new(Vec::new(), FileId::ZERO, bad, path).is_err());
}

#[test]
fn large_segment_streams_in_chunks_and_opens_zero_copy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.seg");
    let f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w =
        SegmentWriter::new(f, FileId::generate(), layout(CodeKind::Binary, 8), &path).unwrap();
    let n = 100_000u64;
    for chunk in (0..n).collect::<Vec<_>>().chunks(7_777) {
        w.ids(chunk).unwrap();
    }
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let codes: Vec<u8> = chunk.iter().flat_map(|i| (i * 3).to_le_bytes()).collect();
        w.codes(&codes).unwrap();
    }
    let (_, meta) = w.finish().unwrap();
    assert_eq!((meta.rows, meta.min_id, meta.max_id), (n, 0, n - 1));
    let r = SegmentReader::open(&path, OpenOptions::default()).unwrap();
    assert!(r.container().is_mapped());
    assert_eq!(r.rows(), n as usize);
    assert_eq!(r.code(54_321).unwrap(), &(54_321u64 * 3).to_le_bytes());
    assert_eq!(r.ids()[99_999], 99_999);
}

#[test]
fn highly_compressible_vectors_are_stored_plain_and_bombs_are_refused() {
    // 256k zero floats compress far beyond the 4096:1 limit: the writer stores them plain.
    let rows = 1024u32;
    let dim = 256u32;
    let data = SegmentData {
        segment_id: FileId::from_u128(1),
        layout: layout(CodeKind::Pq8, 1),
        ids: (0..rows as u64).collect(),
        codes: vec![0; rows as usize],
        labels: None,
        lists: None,
        vectors: Some(StoredVectors {
            dim,
            dtype: VectorDType::F32,
            data: vec![0.0; (rows * dim) as usize],
            zstd_level: Some(19),
        }),
    };
    let bytes = data.to_bytes().unwrap();
    let r = SegmentReader::from_bytes(&bytes, Path::new("t")).unwrap();
    let e = r
        .container()
        .entries()
        .iter()
        .find(|e| e.kind == 6)
        .unwrap();
    assert_eq!(e.codec, codedb::format::Codec::None);
    assert!(r.vectors().unwrap().is_some());

    // A hand-made section claiming 1 TB from a few bytes is refused before allocating.
    use codedb::format::{Container, ContainerWriter, FileKind};
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, FileId::ZERO, Path::new("b")).unwrap();
    w.section_zstd(6, true, &[0u8; 4096], 3).unwrap();
    let mut bytes = w.finish().unwrap();
    // Patch raw length (entry at table_offset + 24) to 1 TB and fix the footer CRC.
    let n = bytes.len();
    let table = u64::from_le_bytes(bytes[n - 32..n - 24].try_into().unwrap()) as usize;
    bytes[table + 24..table + 32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[table..n - 32]);
    h.update(&bytes[n - 32..n - 4]);
    let crc = h.finalize();
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let c = Container::from_slice(&bytes, Path::new("bomb"), None).unwrap();
    let err = c.decoded(0).unwrap_err().to_string();
    assert!(err.contains("ratio above 4096:1"), "{err}");
}
