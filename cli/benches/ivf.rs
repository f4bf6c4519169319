//! Recall vs nprobe vs time for IVF over class means (inverted class lists).
//!
//! For each data set (the checked-in digits; Fashion-MNIST when
//! `/usr/share/datasets/fashion-mnist` — or `CODEDB_FASHION_MNIST` — exists), each code type
//! and each list assignment (`label`: a row's list is its class label; `nearest`: the class
//! whose projected mean is nearest the row), builds an index whose class table comes from the
//! database labels, then searches the queries with `--nprobe` n = 1, 2, 3, 5 and all classes.
//! Reported per n: recall@10 against the exhaustive search of the *same codes* (so only the
//! list restriction is measured, not the code quality), the share of rows scanned, and the
//! query time (batch of all queries on one thread, best of 3 runs, divided by the queries).
//!
//! `cargo bench --bench ivf` (prints a Markdown table; numbers, not pass/fail).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use codedb::ListAssignment;
use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{BuildOptions, Index, Snapshot};
use codedb::{Hit, SearchMode, SearchParams};
use ndarray::{Array2, ArrayView2, Axis};

const K: usize = 10;
const NPROBES: [usize; 4] = [1, 2, 3, 5];

struct DataSet {
    name: String,
    db: Array2<f32>,
    db_labels: Vec<u32>,
    queries: Array2<f32>,
}

fn digits() -> DataSet {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/digits");
    let x = codedb_cli::io::load_vectors(root.join("pixels.npy")).expect("digits pixels");
    let y = codedb_cli::io::load_labels(root.join("labels.npy")).expect("digits labels");
    let (db, q): (Vec<usize>, Vec<usize>) = (0..x.nrows()).partition(|i| i % 5 != 0);
    DataSet {
        name: format!("digits ({} db, {} queries)", db.len(), q.len()),
        db: x.select(Axis(0), &db),
        db_labels: db.iter().map(|&i| y[i] as u32).collect(),
        queries: x.select(Axis(0), &q),
    }
}

fn fashion() -> Option<DataSet> {
    let dir = std::env::var_os("CODEDB_FASHION_MNIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/share/datasets/fashion-mnist"));
    if !codedb_cli::io::is_fashion_mnist_dir(&dir) {
        eprintln!("{}: no Fashion-MNIST, skipped", dir.display());
        return None;
    }
    let lv = codedb_cli::io::load_fashion_mnist(&dir).expect("Fashion-MNIST");
    // The 60,000 training images are the database, the first 1,000 test images the queries.
    let (db, test): (Vec<usize>, Vec<usize>) = (0..lv.vectors.nrows()).partition(|&i| i < 60_000);
    let q: Vec<usize> = test.into_iter().take(1000).collect();
    Some(DataSet {
        name: format!("Fashion-MNIST ({} db, {} queries)", db.len(), q.len()),
        db: lv.vectors.select(Axis(0), &db),
        db_labels: db.iter().map(|&i| lv.labels[i] as u32).collect(),
        queries: lv.vectors.select(Axis(0), &q),
    })
}

fn timed(snap: &Snapshot, q: ArrayView2<f32>, p: &SearchParams) -> (Vec<Vec<Hit>>, f64) {
    let mut best = f64::INFINITY;
    let mut out = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        out = snap.search(q, p).expect("search");
        best = best.min(t.elapsed().as_secs_f64());
    }
    (out, best * 1e3 / q.nrows() as f64)
}

fn recall(got: &[Vec<Hit>], truth: &[Vec<Hit>]) -> f64 {
    let mut found = 0usize;
    let mut total = 0usize;
    for (g, t) in got.iter().zip(truth) {
        let t: HashSet<u64> = t.iter().map(|h| h.id).collect();
        found += g.iter().filter(|h| t.contains(&h.id)).count();
        total += t.len();
    }
    found as f64 / total.max(1) as f64
}

fn run(ds: &DataSet, spec: &str) {
    let opts = TrainOptions {
        seed: 7,
        sample: Some(20_000),
        ..TrainOptions::default()
    };
    let m = train(
        &PipelineSpec::parse(spec).expect("spec"),
        ds.db.view(),
        &opts,
    )
    .expect("train")
    .0;
    let mode = SearchMode::default_for(m.code_kind());
    for how in [ListAssignment::Label, ListAssignment::Nearest] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let index = Index::build(
            &tmp.path().join("idx"),
            &m,
            ds.db.view(),
            &BuildOptions {
                labels: Some(&ds.db_labels),
                lists: Some(how),
                ..BuildOptions::default()
            },
            &mut |_| {},
        )
        .expect("build");
        let snap = index.snapshot();
        let mut list_rows: HashMap<u32, usize> = HashMap::new();
        for r in snap.rows().unwrap() {
            *list_rows.entry(r.list.unwrap_or(u32::MAX)).or_default() += 1;
        }
        let n = snap.live_rows() as f64;
        let q = ds.queries.view();
        let (truth, full_ms) = timed(&snap, q, &SearchParams::new(K, mode));
        let means = snap.class_means().expect("classes");
        for nprobe in NPROBES {
            let (got, ms) = timed(&snap, q, &SearchParams::new(K, mode).nprobe(nprobe));
            let probes = snap.probe_lists(q, nprobe).expect("probes");
            let scanned: f64 = probes
                .iter()
                .map(|p| {
                    p.iter()
                        .map(|l| list_rows.get(l).copied().unwrap_or(0))
                        .sum::<usize>() as f64
                        / n
                })
                .sum::<f64>()
                / probes.len() as f64;
            println!(
                "| {} | {spec} ({}) | {} | {nprobe} | {:.3} | {:.1}% | {:.4} |",
                ds.name,
                mode.name(),
                how.name(),
                recall(&got, &truth),
                100.0 * scanned,
                ms
            );
        }
        println!(
            "| {} | {spec} ({}) | {} | all ({}) | 1.000 | 100.0% | {:.4} |",
            ds.name,
            mode.name(),
            how.name(),
            means.len(),
            full_ms
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    println!(
        "| data | codes | lists | nprobe | recall@{K} vs exhaustive | rows scanned | ms/query |"
    );
    println!("|---|---|---|---:|---:|---:|---:|");
    let mut sets = vec![digits()];
    sets.extend(fashion());
    for ds in &sets {
        for spec in ["pca-itq:64", "pca:64,pq:8x8"] {
            run(ds, spec);
        }
    }
}
