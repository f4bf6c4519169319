//! Query by examples (PiCoDes, Bergamo et al. NIPS 2011: "about 1 second" for 150K images) on
//! 10⁶ rows: the SVM trained at query time on 5 positives against 1,000 negatives drawn from
//! the index, then every row scored (top 100), on generated 64-bit codes (LUT-8) and PQ codes
//! of 8 bytes (inner-product ADC); and the scan alone with a given classifier.
//!
//! `cargo bench --bench search_examples`. The indexes live in the default temporary directory;
//! `CODEDB_BENCH_DIR` puts them elsewhere.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::sync::OnceLock;

use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{
    CodeClassifier, CompactionPolicy, Config, EncodedOptions, ExampleParams, Index, Negatives,
    RowBatch, SearchMode, SearchParams, Snapshot,
};
use divan::Bencher;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ROWS: usize = 1_000_000;
const DIM: usize = 128;

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

/// 10⁶ generated codes of 8 bytes under a `spec` model trained on 2,000 generated 128-D
/// vectors, sealed into one segment.
fn fixture(spec: &str) -> Fixture {
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
    assert_eq!(model.code_bytes(), 8);
    let dir = root.path().join("index");
    let index = Index::create(&dir, &model.to_model_file(), Config::default()).unwrap();
    let codes: Vec<u8> = (0..ROWS * 8).map(|_| rng.random()).collect();
    for c in codes.chunks(8 * 100_000) {
        index
            .add_encoded(&RowBatch::new(c), &EncodedOptions::default())
            .unwrap();
    }
    index.commit().unwrap();
    index.compact(&CompactionPolicy::default()).unwrap();
    let snap = index.snapshot();
    assert_eq!(snap.live_rows(), ROWS as u64);
    Fixture {
        _root: root,
        snap,
        positives: random(&mut rng, 5),
        mode: SearchMode::default_for(model.code_kind()).unwrap(),
    }
}

fn bits() -> &'static Fixture {
    BITS.get_or_init(|| fixture("pca-itq:64"))
}

fn pq() -> &'static Fixture {
    PQ.get_or_init(|| fixture("pq:8x8"))
}

fn main() {
    divan::main();
}

fn examples(b: Bencher, f: &Fixture) {
    let params = ExampleParams::new(SearchParams::new(100, f.mode));
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

fn classifier(b: Bencher, f: &Fixture) {
    let c = CodeClassifier::from_values(&vec![0.25; f.snap.model().unwrap().project_dim() + 1]);
    let params = SearchParams::new(100, f.mode);
    b.bench(|| f.snap.search_classifier(&c, &params).unwrap());
}

/// SVM (5 positives, 1,000 sampled negatives) + scan of 10⁶ 64-bit codes, top 100.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn examples_bits64(b: Bencher) {
    examples(b, bits());
}

/// Scan of 10⁶ 64-bit codes with a given classifier, top 100.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn classifier_bits64(b: Bencher) {
    classifier(b, bits());
}

/// SVM (5 positives, 1,000 sampled negatives) + scan of 10⁶ PQ codes (8 × 8 bits), top 100.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn examples_pq8x8(b: Bencher) {
    examples(b, pq());
}

/// Scan of 10⁶ PQ codes (8 × 8 bits) with a given classifier, top 100.
#[divan::bench(sample_count = 10, sample_size = 1)]
fn classifier_pq8x8(b: Bencher) {
    classifier(b, pq());
}
