//! Progress bars count what the work is made of (rows, queries, iterations, sub-quantisers,
//! epochs) with an ETA, on a terminal only. The terminal is a pseudo-terminal from util-linux
//! `script`, which records everything the command draws.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::process::Command;
mod cli_support;
use cli_support::{digits, ok, s};

/// Runs `codedb args…` on a pseudo-terminal (stdout and stderr both) and returns what it drew.
fn on_a_terminal(args: &[&str]) -> String {
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_codedb"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let out = Command::new("script")
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env("COLUMNS", "160")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {text}");
    text
}

fn has_no_byte_units(text: &str) {
    for bad in ["KiB", " B/", "B/s"] {
        assert!(!text.contains(bad), "byte units in a row count: {text:?}");
    }
}

#[test]
fn bars_count_rows_queries_and_sub_quantisers_with_an_eta() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (x, _) = digits();
    let m = t.join("pq.model");

    let text = on_a_terminal(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        "pq:8x8",
        "--out",
        s(&m),
    ]);
    assert!(text.contains("/8 sub-quantisers"), "{text:?}");
    assert!(text.contains("eta"), "{text:?}");
    has_no_byte_units(&text);

    let dir = t.join("idx");
    let text = on_a_terminal(&[
        "build",
        s(&dir),
        "--model",
        s(&m),
        "--data",
        s(&x),
        "--store-vectors",
        "f32",
    ]);
    assert!(text.contains("/1,797 rows"), "{text:?}");
    has_no_byte_units(&text);

    // An exact search is long on real data; it reports queries done.
    let text = on_a_terminal(&["search", s(&dir), "--queries", s(&x), "--mode", "exact"]);
    assert!(text.contains("/1,797 queries"), "{text:?}");
    assert!(text.contains("eta"), "{text:?}");
}

#[test]
fn iterative_training_counts_iterations() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, _) = digits();
    let m = tmp.path().join("itq.model");
    let text = on_a_terminal(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        "pca-itq:32",
        "--out",
        s(&m),
    ]);
    assert!(text.contains("/50 iterations"), "{text:?}");
    has_no_byte_units(&text);
}

#[test]
fn no_bar_when_stderr_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, _) = digits();
    let m = tmp.path().join("pq.model");
    let out = ok(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        "pq:8x8",
        "--out",
        s(&m),
    ]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ok(&[
        "build",
        s(&tmp.path().join("idx")),
        "--model",
        s(&m),
        "--data",
        s(&x),
    ]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
