//! `--threads` on every command that takes it: 0 means every core, a count above the number of
//! cores is capped at it with one note on stderr (never one OS thread per requested thread).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
mod cli_support;
use cli_support::{digits, digits_index, ok, s};

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The `threads N` the search reports with `--verbose`.
fn reported_threads(stderr: &[u8]) -> usize {
    let text = String::from_utf8_lossy(stderr);
    let tail = text
        .split("threads ")
        .nth(1)
        .unwrap_or_else(|| panic!("no `threads N` in {text:?}"));
    tail.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no thread count in {text:?}"))
}

#[test]
fn search_threads_zero_means_every_core() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = digits_index(tmp.path(), "pca-itq:32");
    let (x, _) = digits();
    let base = [
        "search",
        s(&dir),
        "--queries",
        s(&x),
        "-k",
        "3",
        "--verbose",
    ];
    let one = ok(&[&base[..], &["--threads", "1"]].concat());
    assert_eq!(reported_threads(&one.stderr), 1);
    let all = ok(&[&base[..], &["--threads", "0"]].concat());
    assert_eq!(reported_threads(&all.stderr), cores());
    if cores() > 1 {
        assert!(reported_threads(&all.stderr) > 1);
    }
    assert!(
        !String::from_utf8_lossy(&all.stderr).contains("capped"),
        "0 is not a request above the core count"
    );
    // Same results whatever the threads.
    assert_eq!(one.stdout, all.stdout);
}

#[test]
fn search_threads_above_the_cores_are_capped_with_one_note() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = digits_index(tmp.path(), "pca-itq:32");
    let (x, _) = digits();
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args([
            "search",
            s(&dir),
            "--queries",
            s(&x),
            "-k",
            "3",
            "--threads",
            "100000",
            "--verbose",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // 1,797 queries on 1,797 rows take well under a second; 100,000 OS threads take minutes.
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("search --threads 100000 still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let note = format!("--threads 100000: capped at {}", cores());
    assert_eq!(err.matches(&note).count(), 1, "{err}");
    assert_eq!(
        reported_threads(err.split(&note).nth(1).unwrap().as_bytes()),
        cores()
    );
}

#[test]
fn bench_threads_zero_means_every_core_and_large_counts_are_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ok(&[
        "bench",
        "encode",
        "--pipeline",
        "lsh:8",
        "--dim",
        "16",
        "--rows",
        "3000",
        "--train-rows",
        "500",
        "--threads",
        "0,1,100000",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let threads: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [cores() as u64, 1, cores() as u64]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches(&format!("--threads 100000: capped at {}", cores()))
            .count(),
        1,
        "{err}"
    );

    let out = ok(&[
        "bench",
        "scan",
        "--codes",
        "5000",
        "--repeats",
        "1",
        "--threads",
        "0",
        "--dir",
        s(tmp.path()),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["threads"], cores() as u64);
}
