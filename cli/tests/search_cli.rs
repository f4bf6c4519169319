//! `codedb build` and `codedb search` through the binary: output formats match the library's
//! results, every mode option works, and bad arguments give the documented exit codes with a
//! message naming the problem.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
mod cli_support;
use cli_support::{codedb, json};
use std::process::Output;

use codedb::Snapshot;
use codedb::{SearchMode, SearchParams};
use ndarray::{Array2, s};

fn ok(o: Output) -> Output {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Runs and expects exit code `code` with `needle` in stderr.
fn fails(args: &[&str], code: i32, needle: &str) {
    let o = codedb(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
}

fn data() -> PathBuf {
    cli_support::digits().0
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Trains `spec` and builds an index of all digits; returns the index directory.
fn trained_index(tmp: &Path, spec: &str) -> PathBuf {
    let name = spec.replace([':', ','], "-");
    let m = tmp.join(format!("{name}.model"));
    let dir = tmp.join(name);
    cli_support::train(&data(), spec, &m);
    cli_support::build(&dir, &m, &data(), &[]);
    dir
}

fn library_search(dir: &Path, q: &Array2<f32>, p: &SearchParams) -> serde_json::Value {
    let snap = Snapshot::open(dir).unwrap();
    let hits = snap.search(q.view(), p).unwrap();
    serde_json::json!(
        hits.iter()
            .enumerate()
            .map(|(i, l)| serde_json::json!({"query": i, "results": l}))
            .collect::<Vec<_>>()
    )
}

#[test]
fn search_outputs_match_the_library() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = trained_index(tmp.path(), "pca-itq:16");
    let x = codedb_cli::io::load_vectors(data()).unwrap();
    let q = x.slice(s![0..12, ..]).to_owned();
    let qf = tmp.path().join("q.npy");
    codedb_cli::io::write_npy_f32(&qf, q.view()).unwrap();
    let (d, qs) = (s(&dir), s(&qf));

    // JSON, asym: exactly the library's lists, best first, ties by smaller id.
    let out = ok(codedb(&[
        "search",
        &d,
        "--queries",
        &qs,
        "-k",
        "7",
        "--mode",
        "asym",
        "--format",
        "json",
    ]));
    let v = json(&out);
    same(
        &v,
        &library_search(&dir, &q, &SearchParams::new(7, SearchMode::Asym)),
    );
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 12);
    for (i, e) in arr.iter().enumerate() {
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["query", "results"]);
        assert_eq!(e["query"], i);
        let r = e["results"].as_array().unwrap();
        assert_eq!(r.len(), 7);
        // A database row finds its own code at asymmetric distance 0, first.
        assert_eq!(r[0]["score"], 0.0);
        assert!(r.iter().any(|h| h["id"] == i && h["score"] == 0.0));
        for w in r.windows(2) {
            let (a, b) = (
                w[0]["score"].as_f64().unwrap(),
                w[1]["score"].as_f64().unwrap(),
            );
            let (ia, ib) = (w[0]["id"].as_u64().unwrap(), w[1]["id"].as_u64().unwrap());
            assert!(a < b || (a == b && ia < ib), "{w:?}");
        }
    }

    // TSV, default mode (hamming), 2 threads: header, then query rank id score.
    let out = ok(codedb(&[
        "search",
        &d,
        "--queries",
        &qs,
        "-k",
        "4",
        "--threads",
        "2",
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("query\trank\tid\tscore"));
    let want = library_search(&dir, &q, &SearchParams::new(4, SearchMode::Hamming));
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 12 * 4);
    for r in &rows {
        let (qi, rank): (usize, usize) = (r[0].parse().unwrap(), r[1].parse().unwrap());
        let h = &want[qi]["results"][rank];
        assert_eq!(r[2], h["id"].to_string());
        assert_eq!(
            r[3].parse::<f32>().unwrap(),
            h["score"].as_f64().unwrap() as f32
        );
    }

    // Radius 2: every row within distance 2, no cap; -k caps.
    let out = ok(codedb(&[
        "search",
        &d,
        "--queries",
        &qs,
        "--radius",
        "2",
        "--format",
        "json",
    ]));
    let v = json(&out);
    let snap = Snapshot::open(&dir).unwrap();
    let lib = snap.search_radius(q.view(), 2).unwrap();
    same(&v, &library_search_radius_json(&lib));
    assert!(lib.iter().any(|l| l.len() > 3));
    let out = ok(codedb(&[
        "search",
        &d,
        "--queries",
        &qs,
        "--radius",
        "2",
        "-k",
        "3",
        "--format",
        "json",
    ]));
    let v = json(&out);
    for (e, l) in v.as_array().unwrap().iter().zip(&lib) {
        assert_eq!(e["results"].as_array().unwrap().len(), l.len().min(3));
    }
}

/// Equal lists: same queries and ids, scores equal as f32 (the CLI prints the shortest text
/// that reads back as the same f32).
fn same(cli: &serde_json::Value, lib: &serde_json::Value) {
    let (a, b) = (cli.as_array().unwrap(), lib.as_array().unwrap());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x["query"], y["query"]);
        let (rx, ry) = (
            x["results"].as_array().unwrap(),
            y["results"].as_array().unwrap(),
        );
        assert_eq!(rx.len(), ry.len(), "{x} vs {y}");
        for (hx, hy) in rx.iter().zip(ry) {
            assert_eq!(hx["id"], hy["id"], "{x} vs {y}");
            let f = |h: &serde_json::Value| h["score"].as_f64().unwrap() as f32;
            assert_eq!(f(hx), f(hy), "{x} vs {y}");
        }
    }
}

fn library_search_radius_json(lib: &[Vec<codedb::Hit>]) -> serde_json::Value {
    serde_json::json!(
        lib.iter()
            .enumerate()
            .map(|(i, l)| serde_json::json!({"query": i, "results": l}))
            .collect::<Vec<_>>()
    )
}

#[test]
fn search_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = trained_index(tmp.path(), "pca-itq:16");
    let x = codedb_cli::io::load_vectors(data()).unwrap();
    let qf = tmp.path().join("q.npy");
    codedb_cli::io::write_npy_f32(&qf, x.slice(s![0..3, ..])).unwrap();
    let narrow = tmp.path().join("narrow.npy");
    codedb_cli::io::write_npy_f32(&narrow, Array2::<f32>::ones((2, 10)).view()).unwrap();
    let nan = tmp.path().join("nan.npy");
    let mut n = x.slice(s![0..2, ..]).to_owned();
    n[[1, 5]] = f32::NAN;
    codedb_cli::io::write_npy_f32(&nan, n.view()).unwrap();
    let (d, q) = (s(&dir), s(&qf));
    fails(
        &["search", &d, "--queries", &q, "-k", "0"],
        2,
        "must be ≥ 1",
    );
    fails(
        &["search", &d, "--queries", &q, "--rerank", "50"],
        1,
        "no stored vectors",
    );
    fails(
        &["search", &d, "--queries", &q, "--mode", "exact"],
        1,
        "no stored vectors",
    );
    fails(
        &["search", &d, "--queries", &q, "-k", "5", "--rerank", "3"],
        1,
        "rerank",
    );
    fails(
        &["search", &d, "--queries", &q, "--mode", "float"],
        1,
        "does not apply",
    );
    fails(
        &["search", &d, "--queries", &q, "--mode", "adc"],
        1,
        "does not apply",
    );
    fails(
        &["search", &d, "--queries", &q, "--mode", "cosine"],
        2,
        "cosine",
    );
    fails(
        &["search", &d, "--queries", &q, "--radius", "3"],
        1,
        "radius",
    );
    fails(
        &[
            "search",
            &d,
            "--queries",
            &q,
            "--radius",
            "1",
            "--mode",
            "asym",
        ],
        2,
        "--radius",
    );
    fails(&["search", &d, "--queries", &s(&narrow)], 1, "64-D");
    fails(&["search", &d, "--queries", &s(&nan)], 1, "nan.npy");
    fails(
        &["search", &s(&tmp.path().join("nope")), "--queries", &q],
        1,
        "nope",
    );
    // 64-bit codes are no hash keys.
    let d64 = trained_index(tmp.path(), "pca-itq:64");
    fails(
        &["search", &s(&d64), "--queries", &q, "--radius", "1"],
        1,
        "32 bits",
    );
    // k above the number of rows returns them all.
    let out = ok(codedb(&[
        "search",
        &s(&d64),
        "--queries",
        &q,
        "-k",
        "100000",
        "--format",
        "json",
    ]));
    let v = json(&out);
    assert_eq!(v[2]["results"].as_array().unwrap().len(), 1797);
    // --help documents the modes and the output.
    let help = String::from_utf8(ok(codedb(&["search", "--help"])).stdout).unwrap();
    for word in ["asym", "--rerank", "--radius", "query", "Examples"] {
        assert!(help.contains(word), "{word}");
    }
}

fn inspect_json(dir: &Path) -> serde_json::Value {
    let o = ok(codedb(&["inspect", &s(dir), "--json"]));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Search results of `dir` for the first 20 digits, as JSON.
fn search_json(dir: &Path, queries: &Path) -> serde_json::Value {
    let o = ok(codedb(&[
        "search",
        &s(dir),
        "--queries",
        &s(queries),
        "-k",
        "5",
        "--format",
        "json",
    ]));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn build_leaves_one_sealed_segment_and_compact_seals_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    // pq4: sealed segments hold the fast-scan layout, log rows do not.
    let dir = trained_index(tmp.path(), "pq4:16");
    let v = inspect_json(&dir);
    assert_eq!(v["segments"], 1, "{v}");
    assert_eq!(v["rows"], 1797);
    assert!(v["active_log"].is_null(), "build left a log: {v}");
    let logs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count();
    assert_eq!(logs, 0, "the sealed build log was not removed");

    let q = tmp.path().join("q.npy");
    let x: Array2<f32> = codedb_cli::io::read_matrix_f32(data()).unwrap();
    codedb_cli::io::write_npy_f32(&q, x.slice(s![..20, ..])).unwrap();
    let before = search_json(&dir, &q);

    // Rows added later sit in the log until `compact` seals them and merges.
    ok(codedb(&["add", &s(&dir), "--data", &s(&data())]));
    let v = inspect_json(&dir);
    assert!(!v["active_log"].is_null(), "{v}");
    let o = ok(codedb(&["compact", &s(&dir), "--full", "--json"]));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["sealed_log_rows"], 1797, "{r}");
    assert!(r["sealed_version"].is_u64(), "{r}");
    assert_eq!(r["merges"].as_array().unwrap().len(), 1, "{r}");
    let v = inspect_json(&dir);
    assert_eq!(v["segments"], 1, "{v}");
    assert_eq!(v["rows"], 3594);
    assert!(v["active_log"].is_null(), "{v}");
    ok(codedb(&["verify", &s(&dir)]));

    // Nothing left to seal: the report says so.
    let o = ok(codedb(&["compact", &s(&dir), "--json"]));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["sealed_log_rows"], 0, "{r}");
    assert!(r["sealed_version"].is_null(), "{r}");

    // Every digit is now in twice (auto ids 1797..), so each query's top 5 holds the original
    // rows' hits at the same scores: the best score is unchanged.
    let after = search_json(&dir, &q);
    for (b, a) in before
        .as_array()
        .unwrap()
        .iter()
        .zip(after.as_array().unwrap())
    {
        assert_eq!(b["results"][0]["score"], a["results"][0]["score"]);
    }
}
