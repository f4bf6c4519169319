//! Tag postings and zone maps stored in segments (format 1.8, FORMAT.md §3.8; docs/filtering.md,
//! "How a filter runs"), one scenario per test: sealing writes them and a reopened index reads
//! them; a segment of format 1.7 (without them) answers every filter as the stored indexes do
//! and `inspect` says its indexes are built; compaction of 1.7 and 1.8 segments writes 1.8
//! sections; a damaged section is a typed error naming the file and the section, at open and on
//! first touch, never a silent rebuild; `verify` rebuilds the indexes and names a segment whose
//! stored ones differ, with the column and the section.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod storage_support;

use std::path::{Path, PathBuf};

use codedb::admin::{Contents, inspect_dir, inspect_file, verify_path};
use codedb::format::attribute_index::AttributeIndex;
use codedb::format::{Container, ContainerWriter, FileKind, LoadMode, section_kind};
use codedb::{
    Attributes, Column, CompactionPolicy, Config, CreateOptions, EncodedOptions, Index, RowBatch,
    RowFilter, Schema, SearchMode, SearchParams, Snapshot,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use storage_support::*;

/// Rows per add: more than two zones of 4,096 rows per segment.
const BATCH: u64 = 9_000;

fn schema() -> Schema {
    Schema::parse("year:int,score:float,taken:timestamp,licence:string,tags:tags").unwrap()
}

/// Row `id`'s values: a year clustered by id (zones decide), a float with NaN rows, a
/// timestamp, a string, and Zipf-like tags (`t0` on half the rows, `t5` on few, `rare` on 3).
fn attrs(ids: &[u64]) -> Attributes {
    let tags = |id: u64| {
        let mut t: Vec<String> = (0..6)
            .filter(|k| ((id * 2_654_435_761) >> 7).is_multiple_of(2 << k))
            .map(|k| format!("t{k}"))
            .collect();
        if id % 5_000 == 17 {
            t.push("rare".into());
        }
        t
    };
    Attributes::new(
        ids.len(),
        vec![
            (
                "year".into(),
                Column::Int(ids.iter().map(|&i| 1990 + (i / 700) as i64).collect()),
            ),
            (
                "score".into(),
                Column::Float(
                    ids.iter()
                        .map(|&i| {
                            if i % 89 == 0 {
                                f64::NAN
                            } else {
                                ((i * 37) % 1000) as f64 / 10.0
                            }
                        })
                        .collect(),
                ),
            ),
            (
                "taken".into(),
                Column::Timestamp(ids.iter().map(|&i| i as i64 * 1_000_000).collect()),
            ),
            (
                "licence".into(),
                Column::strings(
                    &ids.iter()
                        .map(|&i| ["cc0", "by"][i as usize % 2])
                        .collect::<Vec<_>>(),
                ),
            ),
            (
                "tags".into(),
                Column::tags(&ids.iter().map(|&i| tags(i)).collect::<Vec<_>>()),
            ),
        ],
    )
    .unwrap()
}

/// A 4-D → 64-bit LSH model, so that searches can encode queries (the codes the tests add are
/// [`codes`], not encodings: the tests compare two indexes of the same codes).
fn lsh() -> codedb::format::ModelFile {
    use codedb::model::{PipelineSpec, TrainOptions, train};
    let x = ndarray::Array2::from_shape_fn((64, 4), |(i, j)| ((i * 7 + j * 3) % 11) as f32);
    let m = train(
        &PipelineSpec::parse("lsh:64").unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap()
    .0;
    assert_eq!(m.to_model_file().code_bytes as usize, CODE_BYTES);
    m.to_model_file()
}

/// An index of `batches` sealed segments of [`BATCH`] rows each (ids from 0), every 11th row
/// deleted.
fn index(dir: &Path, batches: u64) -> Index {
    let opts = CreateOptions {
        attributes: schema(),
        ..CreateOptions::default()
    };
    let idx = Index::create_with(dir, &lsh(), &opts, small_config(1 << 30)).unwrap();
    for b in 0..batches {
        let ids: Vec<u64> = (b * BATCH..(b + 1) * BATCH).collect();
        let a = attrs(&ids);
        let o = EncodedOptions {
            attributes: Some(&a),
            ..EncodedOptions::default()
        };
        idx.add_encoded(&RowBatch::new(&codes(&ids, 0)).with_ids(&ids), &o)
            .unwrap();
        idx.commit_sealed().unwrap();
    }
    let gone: Vec<u64> = (0..batches * BATCH).step_by(11).collect();
    idx.delete(&gone).unwrap();
    idx.commit().unwrap();
    idx
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    v.sort();
    v
}

/// Rewrites segment file `seg` in place: `change(kind, bytes)` gives new bytes for a section
/// (`Some(None)`: drop it), and the header says minor version `minor`.
fn rewrite(seg: &Path, minor: u8, change: impl Fn(u32, &[u8]) -> Option<Option<Vec<u8>>>) {
    let c = Container::open(seg, LoadMode::Read, Some(FileKind::Segment)).unwrap();
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, seg).unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        let bytes = match change(e.kind, c.stored(i)) {
            None => c.stored(i).to_vec(),
            Some(None) => continue,
            Some(Some(b)) => b,
        };
        w.section(e.kind, e.required(), &bytes).unwrap();
    }
    let mut bytes = w.finish().unwrap();
    drop(c);
    bytes[10] = minor;
    let crc = crc32fast::hash(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    let mut perm = std::fs::metadata(seg).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)] // the test rewrites a read-only file
    perm.set_readonly(false);
    std::fs::set_permissions(seg, perm).unwrap();
    std::fs::write(seg, &bytes).unwrap();
}

/// Makes segment `seg` a format 1.7 file: no stored indexes.
fn as_1_7(seg: &Path) {
    rewrite(seg, 7, |k, _| {
        (k == section_kind::SEG_ATTRIBUTE_POSTINGS || k == section_kind::SEG_ATTRIBUTE_ZONES)
            .then_some(None)
    });
}

/// The index source `inspect` gives segment `seg`, and its per-column `(column, index,
/// entries)`.
fn inspected(seg: &Path) -> (String, Vec<(String, String, u64)>) {
    let r = inspect_file(seg).unwrap();
    let Some(Contents::Segment {
        attribute_index: Some(ix),
        ..
    }) = r.contents
    else {
        panic!("{}: no attribute index in {:?}", seg.display(), r.contents)
    };
    (
        ix.source.to_string(),
        ix.columns
            .iter()
            .map(|c| (c.column.clone(), c.index.to_string(), c.entries))
            .collect(),
    )
}

/// A random predicate over the columns (comparisons near the values, NaN-aware floats, tag
/// tests, boolean combinations).
fn predicate(rng: &mut StdRng, depth: u32) -> String {
    if depth == 0 || rng.random_bool(0.4) {
        let ops = ["=", "!=", "<", "<=", ">", ">="];
        let op = ops[rng.random_range(0..ops.len())];
        return match rng.random_range(0..6) {
            0 => format!("year {op} {}", rng.random_range(1985..2030)),
            1 => format!("score {op} {}", rng.random_range(-10..1010) as f64 / 10.0),
            2 => format!(
                "taken {op} {}",
                rng.random_range(0..3 * BATCH as i64) * 1_000_000
            ),
            3 => format!("tags HAS 't{}'", rng.random_range(0..7)),
            4 => format!(
                "tags HAS {} ('t{}', '{}')",
                ["ANY", "ALL"][rng.random_range(0..2)],
                rng.random_range(0..6),
                ["rare", "t1", "none"][rng.random_range(0..3)]
            ),
            _ => format!("licence IN ('{}')", ["cc0", "by"][rng.random_range(0..2)]),
        };
    }
    match rng.random_range(0..3) {
        0 => format!(
            "({} AND {})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        1 => format!(
            "({} OR {})",
            predicate(rng, depth - 1),
            predicate(rng, depth - 1)
        ),
        _ => format!("NOT {}", predicate(rng, depth - 1)),
    }
}

/// The top `k` Hamming hits of a few queries under `filter`.
fn search(s: &Snapshot, filter: &str, k: usize) -> Vec<Vec<codedb::Hit>> {
    let q = ndarray::Array2::from_shape_fn((3, 4), |(i, j)| (i * 3 + j) as f32 - 4.0);
    let p = SearchParams::new(k, SearchMode::Hamming).filter(RowFilter::parse(filter).unwrap());
    s.search(q.view(), &p).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn sealed_segments_store_their_indexes_and_a_reopened_index_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    drop(index(dir.path(), 2));
    let segs = segments(dir.path());
    assert_eq!(segs.len(), 2);
    for seg in &segs {
        let c = Container::open(seg, LoadMode::Read, None).unwrap();
        assert_eq!(c.version(), (1, 8));
        for kind in [
            section_kind::SEG_ATTRIBUTE_POSTINGS,
            section_kind::SEG_ATTRIBUTE_ZONES,
        ] {
            let e = c.entries().iter().find(|e| e.kind == kind).unwrap();
            assert!(!e.required(), "optional");
        }
        let (source, cols) = inspected(seg);
        assert_eq!(source, "stored");
        let zones = BATCH.div_ceil(4096);
        let names: Vec<(&str, &str)> = cols.iter().map(|c| (c.0.as_str(), c.1.as_str())).collect();
        assert_eq!(
            names,
            [
                ("year", "zones"),
                ("score", "zones"),
                ("taken", "zones"),
                ("tags", "postings")
            ]
        );
        assert!(cols[..3].iter().all(|c| c.2 == zones), "{cols:?}");
    }
    // Reopened: the snapshot's segments read their stored indexes, equal to those the columns
    // give, and verify agrees.
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    let snap = idx.snapshot();
    for b in snap.blocks() {
        let Some(r) = b.segment() else { continue };
        let ix = r.attribute_index().unwrap().unwrap();
        assert_eq!(ix.source().name(), "stored");
        let built = AttributeIndex::build(r.attributes().unwrap().unwrap());
        assert_eq!(ix.first_difference(&built), None);
    }
    assert!(!search(&snap, "tags HAS 'rare' AND year >= 1990", 10)[0].is_empty());
    let report = verify_path(dir.path(), &mut |_| {});
    assert!(report.ok(), "{:?}", report.problems);
    // The directory report carries the same words, per segment file.
    let dir_report = inspect_dir(dir.path()).unwrap();
    let shown = dir_report
        .files
        .iter()
        .filter_map(|f| match &f.contents {
            Some(Contents::Segment {
                attribute_index: Some(ix),
                ..
            }) => Some(ix.source),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(shown, ["stored", "stored"]);
}

#[test]
fn a_1_7_segment_answers_every_filter_as_the_stored_indexes_do() {
    // One index, and a copy whose segments are format 1.7 files (no stored indexes): over
    // random predicates, the same hits, ties by id included.
    let stored = tempfile::tempdir().unwrap();
    let built = tempfile::tempdir().unwrap();
    drop(index(stored.path(), 3));
    copy_dir(stored.path(), built.path());
    for seg in segments(built.path()) {
        as_1_7(&seg);
        assert_eq!(inspected(&seg).0, "built in memory on first use");
    }
    let a = Index::open(stored.path(), Config::default())
        .unwrap()
        .snapshot();
    let b = Index::open(built.path(), Config::default())
        .unwrap()
        .snapshot();
    let mut rng = StdRng::seed_from_u64(18);
    let mut nonempty = 0;
    for case in 0..60 {
        let f = predicate(&mut rng, 3);
        for k in [1, 10, 400] {
            let (x, y) = (search(&a, &f, k), search(&b, &f, k));
            assert_eq!(x, y, "case {case}: {f}, k {k}");
            nonempty += usize::from(!x[0].is_empty());
        }
    }
    assert!(nonempty > 60, "too few predicates pass any row: {nonempty}");
    for b in b.blocks() {
        if let Some(r) = b.segment() {
            assert_eq!(
                r.attribute_index().unwrap().unwrap().source().name(),
                "built in memory on first use"
            );
        }
    }
    let report = verify_path(built.path(), &mut |_| {});
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn compaction_of_1_7_and_1_8_segments_writes_1_8_sections() {
    let dir = tempfile::tempdir().unwrap();
    let idx = index(dir.path(), 2);
    let segs = segments(dir.path());
    as_1_7(&segs[0]);
    drop(idx);
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    let before: Vec<_> = [
        "tags HAS 't3'",
        "year < 2000 OR score >= 50",
        "NOT tags HAS 't0'",
    ]
    .iter()
    .map(|f| search(&idx.snapshot(), f, 50))
    .collect();
    let policy = CompactionPolicy {
        full: true,
        ..CompactionPolicy::default()
    };
    idx.compact(&policy).unwrap();
    let snap = idx.snapshot();
    assert_eq!(snap.segment_count(), 1);
    let merged = snap.blocks().find_map(|b| b.segment()).unwrap();
    assert_eq!(merged.container().version(), (1, 8));
    assert_eq!(
        merged.attribute_index().unwrap().unwrap().source().name(),
        "stored"
    );
    assert_eq!(inspected(merged.path()).0, "stored");
    let after: Vec<_> = [
        "tags HAS 't3'",
        "year < 2000 OR score >= 50",
        "NOT tags HAS 't0'",
    ]
    .iter()
    .map(|f| search(&snap, f, 50))
    .collect();
    assert_eq!(before, after);
    let report = verify_path(dir.path(), &mut |_| {});
    assert!(report.ok(), "{:?}", report.problems);
}

#[test]
fn a_damaged_stored_index_is_a_typed_error_naming_the_file_and_section() {
    for (kind, name, filter) in [
        (
            section_kind::SEG_ATTRIBUTE_POSTINGS,
            "attribute_postings",
            "tags HAS 't2'",
        ),
        (
            section_kind::SEG_ATTRIBUTE_ZONES,
            "attribute_zones",
            "year > 1995",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        drop(index(dir.path(), 1));
        let seg = segments(dir.path()).remove(0);
        // A flipped bit in the middle of the section, its CRC left as it was.
        let c = Container::open(&seg, LoadMode::Read, None).unwrap();
        let e = *c.entries().iter().find(|e| e.kind == kind).unwrap();
        drop(c);
        let mut bytes = std::fs::read(&seg).unwrap();
        bytes[(e.offset + e.stored_len / 2) as usize] ^= 0x04;
        let mut perm = std::fs::metadata(&seg).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)] // the test damages a read-only file
        perm.set_readonly(false);
        std::fs::set_permissions(&seg, perm).unwrap();
        std::fs::write(&seg, &bytes).unwrap();
        let says = |e: &dyn std::fmt::Display| {
            let m = e.to_string();
            assert!(
                m.contains(name) && m.contains(&*seg.file_name().unwrap().to_string_lossy()),
                "{m}"
            );
        };
        // Small segments are checked whole on open: the open fails.
        match Index::open(dir.path(), Config::default()) {
            Ok(i) => {
                let q = ndarray::Array2::<f32>::zeros((1, 4));
                let p = SearchParams::new(5, SearchMode::Hamming)
                    .filter(RowFilter::parse(filter).unwrap());
                says(&i.snapshot().search(q.view(), &p).unwrap_err());
            }
            Err(e) => says(&e),
        }
        // Opened without checking the columns: the index opens and answers unfiltered
        // queries; the first filter fails naming the section, and so does the next (never a
        // rebuild from the columns).
        let mut config = Config::default();
        config.read.full_check_below = 0;
        let idx = Index::open(dir.path(), config).unwrap();
        let snap = idx.snapshot();
        let q = ndarray::Array2::<f32>::zeros((1, 4));
        snap.search(q.view(), &SearchParams::new(5, SearchMode::Hamming))
            .unwrap();
        for _ in 0..2 {
            let p =
                SearchParams::new(5, SearchMode::Hamming).filter(RowFilter::parse(filter).unwrap());
            says(&snap.search(q.view(), &p).unwrap_err());
        }
        let report = verify_path(dir.path(), &mut |_| {});
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.section == name && p.path.ends_with(seg.file_name().unwrap())),
            "{:?}",
            report.problems
        );
    }
}

#[test]
fn verify_names_the_segment_column_and_section_of_a_stored_index_that_differs() {
    let dir = tempfile::tempdir().unwrap();
    drop(index(dir.path(), 1));
    let seg = segments(dir.path()).remove(0);
    // Well-formed sections (checksums right) of other values: the zones of other rows'
    // columns, and the postings with one row number moved into a gap of its list.
    let other: Vec<u64> = (3_000..3_000 + BATCH).collect();
    let (_, zones) = AttributeIndex::encode(&attrs(&other));
    let c = Container::open(&seg, LoadMode::Read, None).unwrap();
    let i = c
        .entries()
        .iter()
        .position(|e| e.kind == section_kind::SEG_ATTRIBUTE_POSTINGS)
        .unwrap();
    let mut postings = c.stored(i).to_vec();
    drop(c);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    // n u32 | 0 u32 | column u32 | 0 u32 | d u64 | P u64 | (d + 1) starts | pad | P rows.
    let d = u64::from_le_bytes(postings[16..24].try_into().unwrap()) as usize;
    let rows_at = 32 + (4 * (d + 1)).next_multiple_of(8);
    let first_list_end = u32_at(&postings, 32 + 4) as usize;
    let j = (0..first_list_end - 1)
        .find(|&j| u32_at(&postings, rows_at + 4 * j) + 1 < u32_at(&postings, rows_at + 4 * j + 4))
        .unwrap();
    let moved = u32_at(&postings, rows_at + 4 * j) + 1;
    postings[rows_at + 4 * j..rows_at + 4 * j + 4].copy_from_slice(&moved.to_le_bytes());
    for (kind, bytes, section, column) in [
        (
            section_kind::SEG_ATTRIBUTE_ZONES,
            zones,
            "attribute_zones",
            "year",
        ),
        (
            section_kind::SEG_ATTRIBUTE_POSTINGS,
            postings,
            "attribute_postings",
            "tags",
        ),
    ] {
        let keep = std::fs::read(&seg).unwrap();
        rewrite(&seg, 8, |k, _| (k == kind).then(|| Some(bytes.clone())));
        let report = verify_path(dir.path(), &mut |_| {});
        let p = report
            .problems
            .iter()
            .find(|p| p.section == section)
            .unwrap_or_else(|| panic!("{section}: {:?}", report.problems));
        assert!(
            p.path.ends_with(seg.file_name().unwrap())
                && p.message.contains(&format!("column {column}")),
            "{p:?}"
        );
        std::fs::write(&seg, keep).unwrap();
    }
    assert!(verify_path(dir.path(), &mut |_| {}).ok());
}
