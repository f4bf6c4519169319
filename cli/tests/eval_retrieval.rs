//! `codedb_cli::eval::retrieval_eval` and `codedb eval` on the checked-in UCI/sklearn digits
//! (1,797 × 64): the paper's orderings that hold on this data, exactness of the float
//! baseline, metric invariants, determinism, and clear errors for bad input.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::process::Command;

use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb_cli::eval::{
    EncodedDatabase, GroundTruth, PipelineScores, RetrievalData, RetrievalOptions, hamming_balls,
    retrieval_eval,
};
use codedb_cli::{Error, eval::EvalError};
use ndarray::{Array2, s};

const PIXELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/digits/pixels.npy"
);
const LABELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/digits/labels.npy"
);

fn digits() -> (Array2<f32>, Vec<i64>) {
    (
        codedb_cli::io::load_vectors(PIXELS).unwrap(),
        codedb_cli::io::load_labels(LABELS).unwrap(),
    )
}

fn opts() -> RetrievalOptions {
    RetrievalOptions {
        queries: 300,
        runs: 2,
        seed: 11,
        precision_k: 100,
        ..RetrievalOptions::default()
    }
}

fn run(specs: &str, o: &RetrievalOptions) -> Vec<PipelineScores> {
    let (x, y) = digits();
    let specs = PipelineSpec::parse_list(specs).unwrap();
    retrieval_eval(
        RetrievalData {
            vectors: x.view(),
            labels: Some(&y),
            split: None,
        },
        &specs,
        o,
        &mut |_| {},
    )
    .unwrap()
    .pipelines
}

#[test]
fn paper_orderings_hold_on_digits_at_32_bits() {
    let r = run("lsh:32; pca-direct:32; pca-rr:32; pca-itq:32", &opts());
    let m: Vec<f64> = r.iter().map(|p| p.map_euclid).collect();
    let (lsh, direct, rr, itq) = (m[0], m[1], m[2], m[3]);
    // ITQ §4.3 (Fig. 5a): PCA-ITQ > PCA-RR > PCA-Direct, and PCA-ITQ > LSH at small codes.
    assert!(itq > lsh + 0.05, "pca-itq {itq} vs lsh {lsh}");
    assert!(itq > rr, "pca-itq {itq} vs pca-rr {rr}");
    assert!(rr > direct, "pca-rr {rr} vs pca-direct {direct}");
    // Class-label precision follows for ITQ vs LSH (Fig. 5b).
    assert!(r[3].precision_at_k.unwrap() > r[0].precision_at_k.unwrap());
    // ITQ's quantisation loss never increases (eq. 2-3 alternate two minimisations).
    let loss = &r[3].itq_loss;
    assert_eq!(loss.len(), 51);
    assert!(
        loss.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-9)),
        "{loss:?}"
    );
    assert!(r[0].itq_loss.is_empty());
    for p in &r {
        assert_eq!((p.bits, p.bytes, p.scan), (32, 4, "hamming"));
        assert_eq!((p.runs, p.queries, p.database_rows), (2, 300, 1497));
        let l = p.lookup.as_ref().unwrap();
        assert!((0.0..=1.0).contains(&l.precision) && (0.0..=1.0).contains(&l.recall));
    }
}

#[test]
fn float_pipeline_is_exact_and_recall_is_monotone() {
    let mut o = opts();
    o.recall_r = vec![1, 5, 10, 100];
    let r = run("float; pq:8x8; lsh:16", &o);
    let f = &r[0];
    assert!((f.map_euclid - 1.0).abs() < 1e-3, "{}", f.map_euclid);
    assert_eq!(f.recall_at_r["1"], 1.0);
    assert_eq!(f.scan, "l2");
    assert!(f.lookup.is_none());
    for p in &r {
        let rs: Vec<f64> = o
            .recall_r
            .iter()
            .map(|r| p.recall_at_r[&r.to_string()])
            .collect();
        assert!(
            rs.windows(2).all(|w| w[0] <= w[1]),
            "{}: {rs:?}",
            p.pipeline
        );
        assert!(p.map_euclid <= f.map_euclid + 1e-9, "{}", p.pipeline);
        // Per-run values: one per run, and their mean is the reported value.
        for (r, mean) in &p.recall_at_r {
            let runs = &p.recall_at_r_runs[r];
            assert_eq!(runs.len(), o.runs, "{}", p.pipeline);
            let m = runs.iter().sum::<f64>() / runs.len() as f64;
            assert!((m - mean).abs() < 1e-12, "{}: R={r}", p.pipeline);
        }
    }
    // Compressed codes lose against exact search, PQ (64 bits, ADC) less than 16-bit LSH.
    assert!(r[1].map_euclid > r[2].map_euclid);
    assert!(r[2].recall_at_r["1"] < 1.0);
    assert_eq!((r[1].bits, r[1].bytes, r[1].scan), (64, 8, "adc"));
}

#[test]
fn same_seed_same_scores_other_seed_other_partition() {
    let mut o = opts();
    o.runs = 1;
    let a = run("pca-rr:16", &o);
    let b = run("pca-rr:16", &o);
    assert_eq!(a[0].map_euclid, b[0].map_euclid);
    assert_eq!(a[0].precision_at_k, b[0].precision_at_k);
    assert_eq!(a[0].recall_at_r, b[0].recall_at_r);
    o.seed = 12;
    let c = run("pca-rr:16", &o);
    assert_ne!(a[0].map_euclid, c[0].map_euclid);
}

#[test]
fn top_k_is_the_prefix_of_the_full_ranking_and_balls_match_brute_force() {
    let (x, _) = digits();
    let db = x.slice(s![..1500, ..]);
    let qs = x.slice(s![1500.., ..]);
    for spec in ["pca-itq:16", "pq:8x8", "pq4:16", "float"] {
        let (model, _) = train(
            &PipelineSpec::parse(spec).unwrap(),
            db,
            &TrainOptions::default(),
        )
        .unwrap();
        let enc = EncodedDatabase::new(&model, db).unwrap();
        let full = enc.rank(qs, 1500).unwrap();
        let top = enc.rank(qs, 37).unwrap();
        assert_eq!(full.len(), qs.nrows());
        for (f, t) in full.iter().zip(&top) {
            assert_eq!(&f[..37], &t[..], "{spec}");
            let mut rows: Vec<u32> = f.iter().map(|e| e.1).collect();
            rows.sort_unstable();
            assert_eq!(
                rows,
                (0..1500).collect::<Vec<u32>>(),
                "{spec}: a permutation"
            );
            assert!(
                f.windows(2)
                    .all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1))
            );
        }
        if spec == "pca-itq:16" {
            let codes = Array2::from_shape_vec((1500, 2), enc.codes().to_vec()).unwrap();
            let qc = model.encode(qs).unwrap();
            let qc = Array2::from_shape_vec((qs.nrows(), 2), qc).unwrap();
            let balls = hamming_balls(codes.view(), qc.view(), 2).unwrap();
            for (b, f) in balls.iter().zip(&full) {
                let mut from_rank: Vec<u32> =
                    f.iter().take_while(|e| e.0 <= 2.0).map(|e| e.1).collect();
                from_rank.sort_unstable();
                assert_eq!(&from_rank, b);
            }
        }
    }
}

#[test]
fn split_draws_queries_from_test_rows_only() {
    let (x, y) = digits();
    let split: Vec<bool> = (0..x.nrows()).map(|i| i >= 1597).collect();
    let r = retrieval_eval(
        RetrievalData {
            vectors: x.view(),
            labels: Some(&y),
            split: Some(&split),
        },
        &PipelineSpec::parse_list("pca-itq:16").unwrap(),
        &opts(),
        &mut |_| {},
    )
    .unwrap();
    // 200 test rows < 300 queries asked: all of them, against the 1,597 training rows.
    assert_eq!((r.queries, r.database_rows), (200, 1597));
    // A class ground truth on the test rows: GroundTruth agrees with the labels.
    let t = GroundTruth::from_labels(y[..1597].to_vec(), y[1597..].to_vec()).unwrap();
    assert!(t.relevant_count(0).unwrap() > 100);
}

fn d<'a>(x: &'a Array2<f32>, l: Option<&'a [i64]>) -> RetrievalData<'a> {
    RetrievalData {
        vectors: x.view(),
        labels: l,
        split: None,
    }
}

fn err(data: RetrievalData, specs: &str, o: &RetrievalOptions) -> Error {
    retrieval_eval(
        data,
        &PipelineSpec::parse_list(specs).unwrap(),
        o,
        &mut |_| {},
    )
    .unwrap_err()
}

#[test]
fn bad_inputs_give_clear_errors() {
    let (mut x, y) = digits();
    let o = opts();
    let e = err(d(&x, Some(&y[..10])), "lsh:16", &o);
    assert!(
        matches!(
            e,
            Error::Eval(EvalError::LengthMismatch {
                what: "labels",
                found: 10,
                ..
            })
        ),
        "{e}"
    );
    let mut big_k = o.clone();
    big_k.precision_k = 5000;
    let e = err(d(&x, Some(&y)), "lsh:16", &big_k);
    assert!(
        e.to_string()
            .contains("k = 5000 exceeds the database size 1497"),
        "{e}"
    );
    let mut too_many = o.clone();
    too_many.queries = 1797;
    assert!(
        err(d(&x, None), "lsh:16", &too_many)
            .to_string()
            .contains("queries")
    );
    let e = PipelineSpec::parse_list("lsh:16; pca-itq:1x").unwrap_err();
    assert!(e.to_string().contains("\"pca-itq:1x\""), "{e}");
    // More PCA bits than dimensions: the training error names the problem.
    let e = err(d(&x, None), "pca-itq:128", &o);
    assert!(matches!(e, Error::Engine(codedb::Error::Model(_))), "{e}");
    let empty = Array2::<f32>::zeros((0, 64));
    assert!(matches!(
        err(d(&empty, None), "lsh:16", &o),
        Error::Eval(EvalError::Empty { .. })
    ));
    let split = vec![false; x.nrows()];
    let e = err(
        RetrievalData {
            vectors: x.view(),
            labels: None,
            split: Some(&split),
        },
        "lsh:16",
        &o,
    );
    assert!(e.to_string().contains("split"), "{e}");
    x[[5, 7]] = f32::NAN;
    let e = err(d(&x, None), "lsh:16", &o);
    assert!(
        matches!(e, Error::Eval(EvalError::NonFinite { row: 5, col: 7, .. })),
        "{e}"
    );
}

fn codedb(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn cli_json_lists_one_object_per_pipeline() {
    let out = codedb(&[
        "eval",
        "--data",
        PIXELS,
        "--labels",
        LABELS,
        "--pipelines",
        "lsh:16; pq:4x8",
        "--queries",
        "200",
        "-k",
        "50",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 2);
    for key in [
        "pipeline",
        "bits",
        "bytes",
        "map_euclid",
        "map_class",
        "precision_at_k",
        "recall_at_r",
        "train_s",
        "encode_s",
        "query_ms",
    ] {
        assert!(list[0].get(key).is_some(), "missing {key}");
    }
    assert_eq!(list[0]["pipeline"], "lsh:16");
    assert_eq!(list[1]["bytes"], 4);
    assert!(list[0]["recall_at_r"]["100"].as_f64().unwrap() >= 0.5);
    assert!(list[1]["lookup"].is_null());
}

#[test]
fn cli_usage_errors_exit_2_and_name_the_problem() {
    let out = codedb(&["eval", "--data", PIXELS, "--pipelines", "lsh:16; lhs:16"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lhs:16"));
    let out = codedb(&[
        "eval",
        "--task",
        "classify",
        "--data",
        PIXELS,
        "--pipelines",
        "lsh:16",
    ]);
    // `lsh:16` is a model SPEC, not a classifier SPEC: a usage error naming it.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lsh:16"));
    let out = codedb(&[
        "eval",
        "--data",
        PIXELS,
        "--labels",
        PIXELS,
        "--pipelines",
        "lsh:16",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--labels"));
}

#[test]
fn cli_eval_task_classify_reports_errors_per_classifier() {
    let bin = env!("CARGO_BIN_EXE_codedb");
    let out = std::process::Command::new(bin)
        .args([
            "eval",
            "--task",
            "classify",
            "--data",
            PIXELS,
            "--labels",
            LABELS,
            "--pipelines",
            "ncm; fda:9",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (r, name) in rows.iter().zip(["ncm", "fda:9"]) {
        assert_eq!(r["pipeline"], name);
        let top1 = r["top1_error"].as_f64().unwrap();
        let top5 = r["top5_error"].as_f64().unwrap();
        // Digits are easy for NCM (about 10 % top-1 error); top-5 can only be lower.
        assert!(top1 < 0.2 && top5 <= top1, "{r}");
        assert!(r["train_s"].as_f64().unwrap() >= 0.0);
    }
    // Bad classifier token: usage error (exit 2) naming the token; no labels: exit 2.
    let bad = std::process::Command::new(bin)
        .args([
            "eval",
            "--task",
            "classify",
            "--data",
            PIXELS,
            "--labels",
            LABELS,
            "--pipelines",
            "ncm; bogus:3",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bogus:3"));
    let nolabels = std::process::Command::new(bin)
        .args([
            "eval",
            "--task",
            "classify",
            "--data",
            PIXELS,
            "--pipelines",
            "ncm",
        ])
        .output()
        .unwrap();
    assert_eq!(nolabels.status.code(), Some(2));
}
