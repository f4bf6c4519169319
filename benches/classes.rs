//! Class benchmarks (divan): on an index of 10⁶ labelled rows (generated 64-bit codes, 100
//! classes of 128-D descriptors), the time to add one class from 50 images and commit it
//! (durable: real fsyncs), and the first classification after it (the class means are projected
//! again because the table changed) next to a classification with the means cached.
//!
//! `cargo bench --bench classes`. The index lives in the default temporary directory;
//! `CODEDB_BENCH_DIR` puts it elsewhere.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{ClassSource, NewClass};
use codedb::{Config, Index};
use codedb::{EncodedOptions, RowBatch};
use divan::Bencher;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ROWS: usize = 1_000_000;
const DIM: usize = 128;
const CLASSES: u32 = 100;

struct Fixture {
    _root: tempfile::TempDir,
    index: Index,
    model: Model,
    images: Array2<f32>,
    query: Array2<f32>,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

fn random(rng: &mut ChaCha8Rng, n: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, DIM), |_| rng.random_range(-1.0f32..1.0))
}

fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        let base = std::env::var_os("CODEDB_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        let root = tempfile::tempdir_in(base).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let x = random(&mut rng, 2_000);
        let opts = TrainOptions {
            seed: 1,
            ..TrainOptions::default()
        };
        let model = train(&PipelineSpec::parse("pca-itq:64").unwrap(), x.view(), &opts)
            .unwrap()
            .0;
        let index = Index::create(
            &root.path().join("index"),
            &model.to_model_file(),
            Config::default(),
        )
        .unwrap();
        let codes: Vec<u8> = (0..ROWS * 8).map(|_| rng.random()).collect();
        let labels: Vec<u32> = (0..ROWS as u32).map(|i| i % CLASSES).collect();
        for (c, l) in codes.chunks(8 * 100_000).zip(labels.chunks(100_000)) {
            index
                .add_encoded(&RowBatch::new(c).with_labels(l), &EncodedOptions::default())
                .unwrap();
        }
        let per_class: Vec<Array2<f32>> = (0..CLASSES).map(|_| random(&mut rng, 50)).collect();
        let names: Vec<String> = (0..CLASSES).map(|c| format!("class-{c}")).collect();
        let new: Vec<NewClass> = (0..CLASSES as usize)
            .map(|c| {
                NewClass::new(&names[c], ClassSource::Images(per_class[c].view())).with_id(c as u32)
            })
            .collect();
        index.add_new_classes(&new).unwrap();
        index.commit().unwrap();
        assert_eq!(index.snapshot().live_rows(), ROWS as u64);
        Fixture {
            _root: root,
            index,
            model,
            images: random(&mut rng, 50),
            query: random(&mut rng, 1),
        }
    })
}

fn add_one_class(f: &Fixture) {
    let name = format!("new-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    f.index
        .add_new_classes(&[NewClass::new(&name, ClassSource::Images(f.images.view()))])
        .unwrap();
    f.index.commit().unwrap();
}

fn main() {
    fixture();
    divan::main();
}

/// `add_new_classes` (one class from 50 images) + `commit` on the 10⁶-row index.
#[divan::bench(sample_count = 20, sample_size = 1)]
fn add_class_and_commit(b: Bencher) {
    let f = fixture();
    b.bench(|| add_one_class(f));
}

/// The first `Snapshot::classify` (1 query, top 5) after a class was added and committed: the
/// projected means are rebuilt (the model is parsed and every class mean projected).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn first_classify_after_add_class(b: Bencher) {
    let f = fixture();
    b.with_inputs(|| {
        add_one_class(f);
        f.index.snapshot()
    })
    .bench_local_values(|snap| {
        let r = snap.classify(f.query.view(), 5).unwrap();
        assert_eq!(r[0].len(), 5);
        (snap, r)
    });
}

/// `Snapshot::classify` (1 query, top 5) with the means cached.
#[divan::bench(sample_count = 20, sample_size = 10)]
fn classify_cached(b: Bencher) {
    let f = fixture();
    let snap = f.index.snapshot();
    snap.classify(f.query.view(), 5).unwrap();
    let _ = &f.model;
    b.bench_local(|| snap.classify(f.query.view(), 5).unwrap());
}
