//! PAMIR §5 on openclipart (Grangier, Monay & Bengio 2006): text → image AvgP / BEP / P10 of
//! PAMIR over floats, PQ codes and ITQ bits against random, a tag-matching oracle and CCA with
//! MiniLM embeddings, through `codedb eval --task text` — ignored: minutes of release-mode
//! compute on an exported data set, not for CI. Prints the table of docs/evaluation.md and checks its claims.
//!
//! Data: `DATASETS_OUT=/tmp/datasets bash ../shared/datasets/export.sh openclipart`
//! (or `$CODEDB_OPENCLIPART` naming the folder). Run:
//! `cargo test --release -p codedb-cli --test eval_text_openclipart -- --ignored --nocapture`
//! Environment: `PAMIR_ITERATIONS` (default 1,000,000).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;

use std::path::PathBuf;

use cli_support::{json, ok, s};

fn row(v: &serde_json::Value, name: &str) -> f64 {
    v["rankers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pipeline"] == name)
        .unwrap_or_else(|| panic!("no ranker {name}"))["avgp"]
        .as_f64()
        .unwrap()
}

#[test]
#[ignore = "minutes on the exported openclipart set; see the module doc"]
fn pamir_on_openclipart_beats_cca_and_keeps_its_quality_on_codes() {
    let dir = PathBuf::from(
        std::env::var("CODEDB_OPENCLIPART").unwrap_or_else(|_| "/tmp/datasets/openclipart".into()),
    );
    let iters = std::env::var("PAMIR_ITERATIONS").unwrap_or_else(|_| "1000000".into());
    let f = |n: &str| dir.join(n);
    let (x, tags, q, split, ce, qe) = (
        f("hogcolor.npy"),
        f("tags.json"),
        f("queries.json"),
        f("split.npy"),
        f("text_minilm.npy"),
        f("queries_minilm.npy"),
    );
    assert!(
        x.exists(),
        "{} missing: export openclipart first",
        x.display()
    );
    let v = json(&ok(&[
        "eval",
        "--task",
        "text",
        "--data",
        s(&x),
        "--captions",
        s(&tags),
        "--text-queries",
        s(&q),
        "--split",
        s(&split),
        "--pipelines",
        "random; oracle; cca:128; float; pca:256,float; pca:256,pq:32x8; pca-itq:256",
        "--caption-embeddings",
        s(&ce),
        "--query-embeddings",
        s(&qe),
        "--cca-rho",
        "1",
        "--pamir-iterations",
        &iters,
        "--json",
    ]));
    println!(
        "{} training / {} test rows, {} of {} queries",
        v["train_rows"], v["test_rows"], v["queries"], v["queries_given"]
    );
    println!("| pipeline | bits | AvgP | BEP | P10 | C | iterations |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for r in v["rankers"].as_array().unwrap() {
        println!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {} | {} |",
            r["pipeline"].as_str().unwrap(),
            r["bits"],
            r["avgp"].as_f64().unwrap(),
            r["bep"].as_f64().unwrap(),
            r["p10"].as_f64().unwrap(),
            r["c"],
            r["iterations"]
        );
    }
    let cca = row(&v, "cca:128 (embeddings)");
    let verdict = |b: bool| if b { "holds" } else { "does not hold" };
    let mut failed = Vec::new();
    for m in ["constant-ε", "caption-ε"] {
        let dense = row(&v, &format!("pca:256,float {m}"));
        let raw = row(&v, &format!("float {m}"));
        let pq = row(&v, &format!("pca:256,pq:32x8 {m}"));
        let itq = row(&v, &format!("pca-itq:256 {m}"));
        let beats = raw.max(dense) > cca;
        println!(
            "{m}: PAMIR beats CCA on AvgP: {} (float {raw:.4}, pca:256 float {dense:.4}, CCA {cca:.4})",
            verdict(beats)
        );
        let (fp, fi) = (pq / dense, itq / dense);
        println!(
            "{m}: codes keep most (>= 80 %) of the pca:256 float AvgP: PQ {:.1} %, ITQ {:.1} %: {}",
            100.0 * fp,
            100.0 * fi,
            verdict(fp >= 0.8 && fi >= 0.8)
        );
        if !beats {
            failed.push(format!("{m}: PAMIR does not beat CCA"));
        }
        if fp < 0.8 || fi < 0.8 {
            failed.push(format!("{m}: codes keep under 80 %"));
        }
    }
    for spec in ["float", "pca:256,float", "pca:256,pq:32x8", "pca-itq:256"] {
        let (c, k) = (
            row(&v, &format!("{spec} caption-ε")),
            row(&v, &format!("{spec} constant-ε")),
        );
        println!(
            "{spec}: caption-ε {c:.4} vs constant-ε {k:.4} AvgP ({:+.4})",
            c - k
        );
    }
    assert!(failed.is_empty(), "claims that do not hold: {failed:?}");
}
