//! Filtered IVF search per call in a long-lived process (docs/filtering.md, "IVF"): the
//! synthetic filter track's data at a smaller scale — N clustered 96-D rows (1,000 Gaussian
//! centres, spread 4, unit noise), an `ivf:1024,pq:16x8` index with f32 vectors stored, and two
//! columns: `u`, an int uniform over 0..N, and `tags`, row r holding `t<i>` with probability
//! 0.5/(i+1) over 1,000 tags (Zipf: t0, t4, t49, t499 pass ~50 %, 10 %, 1 %, 0.1 %), all
//! seeded. One query per search (k = 10, `nprobe 1`, re-ranked by 20, one thread), cycling
//! over 64 queries from the same distribution, under `u <` and `tags HAS` filters of each
//! selectivity. Before timing, each filter's recall@10 against the exact search over its
//! passing rows (`--mode exact`) is printed to stderr.
//!
//! `cargo bench --bench filter_ivf`. `CODEDB_FILTER_ROWS` sets N (default 200,000); the index
//! lives in the default temporary directory (`CODEDB_BENCH_DIR` elsewhere) and is removed at
//! exit.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use codedb::format::VectorDType;
use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{
    Attributes, BuildOptions, Column, Config, Index, RowFilter, SearchMode, SearchParams, Snapshot,
};
use ndarray::{Array2, s};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

fn main() {
    divan::main();
}

struct Fixture {
    _dir: tempfile::TempDir,
    _index: Index,
    snapshot: Snapshot,
    queries: Array2<f32>,
    rows: usize,
}

const DIM: usize = 96;

/// `n` rows around `centres` (spread 4 around the origin, unit noise).
fn clustered(n: usize, centres: &Array2<f32>, rng: &mut ChaCha8Rng) -> Array2<f32> {
    let noise = Normal::new(0.0f32, 1.0).unwrap();
    let mut x = Array2::<f32>::zeros((n, DIM));
    for mut row in x.rows_mut() {
        let c = rng.random_range(0..centres.nrows());
        for (j, v) in row.iter_mut().enumerate() {
            *v = centres[[c, j]] + noise.sample(rng);
        }
    }
    x
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let rows: usize = std::env::var("CODEDB_FILTER_ROWS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200_000);
        let dir = match std::env::var_os("CODEDB_BENCH_DIR") {
            Some(d) => tempfile::tempdir_in(d),
            None => tempfile::tempdir(),
        }
        .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let spread = Normal::new(0.0f32, 4.0).unwrap();
        let centres = Array2::from_shape_fn((1000, DIM), |_| spread.sample(&mut rng));
        let x = clustered(rows, &centres, &mut rng);
        let queries = clustered(64, &centres, &mut rng);
        let spec = PipelineSpec::parse("ivf:1024,pq:16x8").unwrap();
        let train_rows = rows.min(50_000);
        let model = train(
            &spec,
            x.slice(s![..train_rows, ..]),
            &TrainOptions::default(),
        )
        .unwrap()
        .0;
        let mut tags: Vec<Vec<String>> = vec![Vec::new(); rows];
        for row in tags.iter_mut() {
            for t in 0..1000usize {
                if rng.random_bool(0.5 / (t as f64 + 1.0)) {
                    row.push(format!("t{t}"));
                }
            }
        }
        let u: Vec<i64> = (0..rows)
            .map(|_| rng.random_range(0..rows as i64))
            .collect();
        let attrs = Attributes::new(
            rows,
            vec![
                ("u".into(), Column::Int(u)),
                ("tags".into(), Column::tags(&tags)),
            ],
        )
        .unwrap();
        let index = Index::build(
            dir.path(),
            &model,
            x.view(),
            &BuildOptions {
                store_vectors: Some(VectorDType::F32),
                attributes: Some(&attrs),
                config: Config::default(),
                ..BuildOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
        let snapshot = index.snapshot();
        Fixture {
            _dir: dir,
            _index: index,
            snapshot,
            queries,
            rows,
        }
    })
}

/// The filters, by selectivity.
fn filter_text(f: &Fixture, name: &str) -> String {
    let n = f.rows as f64;
    match name {
        "u 0.1%" => format!("u < {}", (n * 0.001) as i64),
        "u 1%" => format!("u < {}", (n * 0.01) as i64),
        "u 10%" => format!("u < {}", (n * 0.1) as i64),
        "u 50%" => format!("u < {}", (n * 0.5) as i64),
        "tags 0.1%" => "tags HAS 't499'".into(),
        "tags 1%" => "tags HAS 't49'".into(),
        "tags 10%" => "tags HAS 't4'".into(),
        "tags 50%" => "tags HAS 't0'".into(),
        other => panic!("unknown filter {other}"),
    }
}

const FILTERS: [&str; 8] = [
    "u 0.1%",
    "u 1%",
    "u 10%",
    "u 50%",
    "tags 0.1%",
    "tags 1%",
    "tags 10%",
    "tags 50%",
];

/// Recall@10 of `p` against the exact search over the passing rows.
fn recall(f: &Fixture, p: &SearchParams, filter: &RowFilter) -> f64 {
    let q = f.queries.view();
    let exact = SearchParams::new(10, SearchMode::ExactL2).filter(filter.clone());
    let truth = f.snapshot.search(q, &exact).unwrap();
    let got = f.snapshot.search(q, p).unwrap();
    let (mut hit, mut want) = (0usize, 0usize);
    for (t, g) in truth.iter().zip(&got) {
        want += t.len();
        hit += g.iter().filter(|h| t.iter().any(|x| x.id == h.id)).count();
    }
    hit as f64 / want.max(1) as f64
}

#[divan::bench(args = FILTERS, sample_count = 20, sample_size = 16)]
fn nprobe1_rerank20(bencher: divan::Bencher, name: &str) {
    let f = fixture();
    let filter = RowFilter::parse(&filter_text(f, name)).unwrap();
    let p = SearchParams::new(10, SearchMode::AdcL2)
        .nprobe(1)
        .rerank(20)
        .filter(filter.clone());
    eprintln!(
        "{name} ({}): recall@10 {:.3}",
        filter_text(f, name),
        recall(f, &p, &filter)
    );
    let next = AtomicUsize::new(0);
    bencher.bench(|| {
        let i = next.fetch_add(1, Ordering::Relaxed) % f.queries.nrows();
        f.snapshot
            .search(f.queries.slice(s![i..i + 1, ..]), &p)
            .unwrap()
    });
}
