//! Query by examples (PiCoDes, Bergamo et al. NIPS 2011: "about 1 second" for 150K images) on
//! 10⁶ rows: the SVM trained at query time on 5 positives against 1,000 negatives drawn from
//! the index, then every row scored (top 100), on generated 64-bit codes (LUT-8) and PQ codes
//! of 8 bytes (inner-product ADC); and the scan alone with a given classifier; with 1 and 2
//! scan threads.
//!
//! `cargo bench --bench search_examples`. The indexes live in the default temporary directory;
//! `CODEDB_BENCH_DIR` puts them elsewhere. Larger runs: `CODEDB_EXAMPLES_ROWS=100000000
//! CODEDB_EXAMPLES_BITS=128 cargo bench --bench search_examples -- bits` (rows, and the bits of
//! the binary codes: 64, 128 or 256; disk ≈ rows × (bits / 8 + 8) bytes: the codes and ids of
//! segments of 2²³ rows, sealed as they are added, not compacted). The indexes are held for
//! the whole run by a `static` and so are not removed at exit: delete the directory after.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::sync::OnceLock;

use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{
    CodeClassifier, Config, EncodedOptions, ExampleParams, Index, Negatives, RowBatch, SearchMode,
    SearchParams, Snapshot,
};
use divan::Bencher;
use ndarray::Array2;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

const DIM: usize = 128;
/// Rows per sealed segment.
const SEGMENT_ROWS: usize = 1 << 23;
/// Rows per `add_encoded` batch.
const BATCH_ROWS: usize = 100_000;

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?}: not a positive integer")),
        Err(_) => default,
    }
}

/// `CODEDB_EXAMPLES_ROWS` (default 10⁶).
fn rows() -> usize {
    env_usize("CODEDB_EXAMPLES_ROWS", 1_000_000)
}

struct Fixture {
    _root: tempfile::TempDir,
    snap: Snapshot,
    positives: Array2<f32>,
    mode: SearchMode,
}

static BITS: OnceLock<Fixture> = OnceLock::new();
static PQ: OnceLock<Fixture> = OnceLock::new();

fn random(rng: &mut ChaCha8Rng, n: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, DIM), |_| rng.random_range(-1.0f32..1.0))
}

/// `rows()` generated codes of `code_bytes` under a `spec` model trained on 2,000 generated
/// 128-D vectors, sealed into segments of at most [`SEGMENT_ROWS`] rows.
fn fixture(spec: &str, code_bytes: usize) -> Fixture {
    let base = std::env::var_os("CODEDB_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let root = tempfile::tempdir_in(base).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let x = random(&mut rng, 2_000);
    let opts = TrainOptions {
        seed: 1,
        ..TrainOptions::default()
    };
    let model = train(&PipelineSpec::parse(spec).unwrap(), x.view(), &opts)
        .unwrap()
        .0;
    assert_eq!(model.code_bytes(), code_bytes);
    let dir = root.path().join("index");
    // No multi-index hashing tables: query by examples scans every row, never probes them.
    let config = Config {
        mih_tables: false,
        ..Config::default()
    };
    let index = Index::create(&dir, &model.to_model_file(), config).unwrap();
    let n = rows();
    let mut codes = vec![0u8; BATCH_ROWS * code_bytes];
    let mut added = 0;
    while added < n {
        let b = BATCH_ROWS.min(n - added);
        let c = &mut codes[..b * code_bytes];
        rng.fill_bytes(c);
        index
            .add_encoded(&RowBatch::new(c), &EncodedOptions::default())
            .unwrap();
        added += b;
        if added % SEGMENT_ROWS == 0 || added == n {
            index.commit_sealed().unwrap();
        }
    }
    let snap = index.snapshot();
    assert_eq!(snap.live_rows(), n as u64);
    Fixture {
        _root: root,
        snap,
        positives: random(&mut rng, 5),
        mode: SearchMode::default_for(model.code_kind()),
    }
}

/// Binary codes of `CODEDB_EXAMPLES_BITS` bits (default 64).
fn bits() -> &'static Fixture {
    BITS.get_or_init(|| {
        let b = env_usize("CODEDB_EXAMPLES_BITS", 64);
        assert!(
            [64, 128, 256].contains(&b),
            "CODEDB_EXAMPLES_BITS={b}: 64, 128 or 256"
        );
        fixture(&format!("lsh:{b}"), b / 8)
    })
}

fn pq() -> &'static Fixture {
    PQ.get_or_init(|| fixture("pq:8x8", 8))
}

fn main() {
    divan::main();
}

fn examples(b: Bencher, f: &Fixture, threads: usize) {
    let params = ExampleParams::new(SearchParams {
        threads,
        ..SearchParams::new(100, f.mode)
    });
    let neg = Negatives::Sampled {
        count: 1000,
        seed: 3,
    };
    b.bench(|| {
        let h = f
            .snap
            .search_examples(f.positives.view(), neg, &params)
            .unwrap();
        assert_eq!(h.len(), 100);
        h
    });
}

fn classifier(b: Bencher, f: &Fixture, threads: usize) {
    let c = CodeClassifier::from_values(&vec![0.25; f.snap.model().unwrap().project_dim() + 1]);
    let params = SearchParams {
        threads,
        ..SearchParams::new(100, f.mode)
    };
    b.bench(|| f.snap.search_classifier(&c, &params).unwrap());
}

/// SVM (5 positives, 1,000 sampled negatives) + scan of every binary code (LUT-8), top 100.
#[divan::bench(sample_count = 10, sample_size = 1, args = [1, 2])]
fn examples_bits(b: Bencher, threads: usize) {
    examples(b, bits(), threads);
}

/// Scan of every binary code (LUT-8) with a given classifier, top 100.
#[divan::bench(sample_count = 10, sample_size = 1, args = [1, 2])]
fn classifier_bits(b: Bencher, threads: usize) {
    classifier(b, bits(), threads);
}

/// SVM (5 positives, 1,000 sampled negatives) + scan of every PQ code (8 × 8 bits), top 100.
#[divan::bench(sample_count = 10, sample_size = 1, args = [1, 2])]
fn examples_pq8x8(b: Bencher, threads: usize) {
    examples(b, pq(), threads);
}

/// Scan of every PQ code (8 × 8 bits) with a given classifier, top 100.
#[divan::bench(sample_count = 10, sample_size = 1, args = [1, 2])]
fn classifier_pq8x8(b: Bencher, threads: usize) {
    classifier(b, pq(), threads);
}
