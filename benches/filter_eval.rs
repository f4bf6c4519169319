//! A filter's cost per search in a long-lived process (docs/filtering.md, "How a filter
//! runs"): 10⁶ rows of 64-bit codes in one sealed segment with three attribute columns — `u`,
//! an int uniform over 0..rows; `ts`, a timestamp increasing with the row; `tags`, row r holding
//! `t<i>` with probability 0.5/(i+1) over 1,000 tags (Zipf, 3.7 tags a row), all seeded — and
//! one Hamming query (k = 10) per search under filters of an int, a timestamp, tags of Zipf
//! ranks 0, 49 and 499, and the row id. The segment's columns are decoded on the first search
//! (before timing), so the figures are the evaluation of the filter and the scan of its rows:
//! what a Python process or a server pays per call.
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
        Fixture {
            _dir: dir,
            _index: index,
            snapshot,
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
