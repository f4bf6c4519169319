//! A filter's cost per search in a long-lived process (docs/filtering.md, "How a filter
//! runs"): 10⁶ rows of 64-bit codes in one sealed segment with three attribute columns — `u`,
//! an int uniform over 0..rows; `ts`, a timestamp increasing with the row; `tags`, row r holding
//! `t<i>` with probability 0.5/(i+1) over 1,000 tags (Zipf, 3.7 tags a row), all seeded — and
//! one Hamming query (k = 10) per search under filters of an int, a timestamp, tags of Zipf
//! ranks 0, 49 and 499, and the row id. The segment's columns are decoded on the first search
//! (before timing), so the figures are the evaluation of the filter and the scan of its rows:
//! what a Python process or a server pays per call.
//!
//! `first_touch` is what a process pays once per open segment instead: the segment opened
//! afresh (without checking its columns, as the engine opens a large one), its columns decoded
//! and checked, and its tag postings and zone maps made ready — read from the stored sections
//! (format 1.8, `stored`) or built from the columns (a 1.7 copy of the same segment without
//! them, `built`); `columns` decodes the columns alone.
//!
//! `cargo bench --bench filter_eval`. `CODEDB_FILTER_ROWS` sets the rows (default 10⁶); the
//! index lives in the default temporary directory (`CODEDB_BENCH_DIR` elsewhere) and is
//! removed at exit.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::sync::OnceLock;

use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{
    Attributes, Column, Config, CreateOptions, EncodedOptions, Index, RowBatch, RowFilter, Schema,
    SearchMode, SearchParams, Snapshot,
};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() {
    divan::main();
}

struct Fixture {
    _dir: tempfile::TempDir,
    _index: Index,
    snapshot: Snapshot,
    /// The sealed segment, and a copy written as format 1.7 (no stored indexes).
    segment: std::path::PathBuf,
    segment_1_7: std::path::PathBuf,
}

/// A copy of segment `seg` at `to` without its stored indexes, labelled format 1.7.
fn as_1_7(seg: &std::path::Path, to: &std::path::Path) {
    use codedb::format::{Container, ContainerWriter, FileKind, LoadMode, section_kind};
    let c = Container::open(seg, LoadMode::Read, Some(FileKind::Segment)).unwrap();
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, to).unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        if e.kind != section_kind::SEG_ATTRIBUTE_POSTINGS
            && e.kind != section_kind::SEG_ATTRIBUTE_ZONES
        {
            w.section(e.kind, e.required(), c.stored(i)).unwrap();
        }
    }
    let mut bytes = w.finish().unwrap();
    bytes[10] = 7;
    let crc = crc32fast::hash(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(to, bytes).unwrap();
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let rows: usize = std::env::var("CODEDB_FILTER_ROWS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_000_000);
        let dir = match std::env::var_os("CODEDB_BENCH_DIR") {
            Some(d) => tempfile::tempdir_in(d),
            None => tempfile::tempdir(),
        }
        .unwrap();
        let x = ndarray::Array2::from_shape_fn((64, 4), |(i, j)| ((i * 7 + j * 3) % 11) as f32);
        let spec = PipelineSpec::parse("lsh:64").unwrap();
        let model = train(&spec, x.view(), &TrainOptions::default()).unwrap().0;
        let opts = CreateOptions {
            attributes: Schema::parse("u:int,ts:timestamp,tags:tags").unwrap(),
            ..CreateOptions::default()
        };
        let index =
            Index::create_with(dir.path(), &model.to_model_file(), &opts, Config::default())
                .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut tags: Vec<Vec<String>> = vec![Vec::new(); rows];
        for row in tags.iter_mut() {
            for t in 0..1000usize {
                if rng.random_bool(0.5 / (t as f64 + 1.0)) {
                    row.push(format!("t{t}"));
                }
            }
        }
        let ids: Vec<u64> = (0..rows as u64).collect();
        let codes: Vec<u8> = (0..rows)
            .flat_map(|_| rng.next_u64().to_le_bytes())
            .collect();
        let u: Vec<i64> = (0..rows)
            .map(|_| rng.random_range(0..rows as i64))
            .collect();
        let ts: Vec<i64> = (0..rows as i64)
            .map(|i| i * 1000 + rng.random_range(0..20_000))
            .collect();
        let attrs = Attributes::new(
            rows,
            vec![
                ("u".into(), Column::Int(u)),
                ("ts".into(), Column::Timestamp(ts)),
                ("tags".into(), Column::tags(&tags)),
            ],
        )
        .unwrap();
        let add = EncodedOptions {
            attributes: Some(&attrs),
            ..EncodedOptions::default()
        };
        index
            .add_encoded(&RowBatch::new(&codes).with_ids(&ids), &add)
            .unwrap();
        index.commit_sealed().unwrap();
        let snapshot = index.snapshot();
        let segment = snapshot
            .blocks()
            .find_map(|b| b.segment().map(|r| r.path().to_path_buf()))
            .unwrap();
        let segment_1_7 = dir.path().join("copy-1.7.seg");
        as_1_7(&segment, &segment_1_7);
        Fixture {
            _dir: dir,
            _index: index,
            snapshot,
            segment,
            segment_1_7,
        }
    })
}

const FILTERS: [&str; 8] = [
    "none",
    "id < 1000",
    "u < 1000",
    "u < 100000",
    "ts < 1000000",
    "tags HAS 't499'",
    "tags HAS 't49'",
    "tags HAS 't0'",
];

#[divan::bench(args = FILTERS, sample_count = 20)]
fn search(bencher: divan::Bencher, filter: &str) {
    let f = fixture();
    let q = ndarray::Array2::<f32>::zeros((1, 4));
    let mut p = SearchParams::new(10, SearchMode::Hamming);
    if filter != "none" {
        p = p.filter(RowFilter::parse(filter).unwrap());
    }
    f.snapshot.search(q.view(), &p).unwrap(); // first touch: decode and check the columns
    bencher.bench(|| f.snapshot.search(q.view(), &p).unwrap());
}

#[divan::bench(args = ["columns", "stored", "built"], sample_count = 10)]
fn first_touch(bencher: divan::Bencher, what: &str) {
    use codedb::format::{ChecksumPolicy, LoadMode, OpenOptions, SegmentReader};
    let f = fixture();
    let path = if what == "built" {
        &f.segment_1_7
    } else {
        &f.segment
    };
    let opts = OpenOptions {
        load: LoadMode::Mmap,
        checksums: ChecksumPolicy::SkipColumns,
    };
    bencher.bench(|| {
        let r = SegmentReader::open(path, opts).unwrap();
        if what == "columns" {
            r.attributes().unwrap().unwrap().rows()
        } else {
            let ix = r.attribute_index().unwrap().unwrap();
            assert_eq!(ix.source().name() == "stored", what == "stored");
            r.rows()
        }
    });
}
