//! Output into a pipe whose reader has gone (`codedb … | head`): every command that prints
//! exits quietly with 141, as a process killed by SIGPIPE would look to a shell (docs/cli.md "Exit
//! codes"), never with a panic or an error message.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
use std::process::{Command, Output, Stdio};
mod cli_support;
use cli_support::{digits, ok, s, tmp_digits_index};

/// Runs `codedb args…` with stdout a pipe whose read end is already closed, so the first write
/// fails with EPIPE whatever the timing.
fn into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn quiet_141(args: &[&str]) {
    let out = into_closed_pipe(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
    for bad in ["panicked", "Broken pipe", "error", "os error 32"] {
        assert!(!err.contains(bad), "{args:?}: {err:?} contains {bad:?}");
    }
}

#[test]
fn every_printing_command_exits_141_quietly_on_a_closed_pipe() {
    let (tmp, m, dir) = tmp_digits_index("pca-itq:32");
    let t = tmp.path();
    let (x, y) = digits();
    let d = s(&dir);
    let q = t.join("q.npy");
    let xs = codedb_cli::io::load_vectors(&x).unwrap();
    codedb_cli::io::write_npy_f32(&q, xs.slice(ndarray::s![0..5, ..])).unwrap();
    let seg = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();

    // Read-only commands.
    quiet_141(&["inspect", d]);
    quiet_141(&["inspect", d, "--json"]);
    quiet_141(&["inspect", s(&seg)]);
    quiet_141(&["verify", d]);
    quiet_141(&["verify", d, "--json"]);
    quiet_141(&["versions", d]);
    quiet_141(&["versions", d, "--json"]);
    quiet_141(&["classes", d]);
    quiet_141(&["search", d, "--queries", s(&q)]);
    quiet_141(&["search", d, "--queries", s(&q), "--format", "json"]);
    quiet_141(&["classify", d, "--data", s(&q)]);
    quiet_141(&["classify", d, "--data", s(&q), "--format", "json"]);
    quiet_141(&["--help"]);
    quiet_141(&["search", "--help"]);
    quiet_141(&["--version"]);

    // Commands that write, then print what they did: the write stands (it was committed
    // before the report), only the report is lost.
    quiet_141(&["demo", "--dir", s(&t.join("demo"))]);
    quiet_141(&["demo", "--dir", s(&t.join("demo-json")), "--json"]);
    quiet_141(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        "lsh:16",
        "--out",
        s(&t.join("lsh.model")),
    ]);
    assert!(t.join("lsh.model").exists());
    quiet_141(&[
        "build",
        s(&t.join("idx2")),
        "--model",
        s(&m),
        "--data",
        s(&q),
    ]);
    quiet_141(&["add", d, "--data", s(&q)]);
    quiet_141(&["delete", d, "--ids", "1,2", "--keep-class-stats"]);
    quiet_141(&["add-class", d, "--name", "extra", "--data", s(&q)]);
    quiet_141(&["compact", d, "--full"]);
    quiet_141(&["gc", d]);
    quiet_141(&[
        "eval",
        "--data",
        s(&x),
        "--labels",
        s(&y),
        "--pipelines",
        "lsh:16",
        "--queries",
        "50",
        "-k",
        "10",
        "--truth-sample",
        "50",
    ]);
    quiet_141(&[
        "bench",
        "encode",
        "--pipeline",
        "lsh:8",
        "--dim",
        "16",
        "--rows",
        "1000",
        "--train-rows",
        "200",
    ]);

    // What the writers did is all there.
    let v: serde_json::Value =
        serde_json::from_slice(&ok(&["inspect", d, "--json"]).stdout).unwrap();
    assert_eq!(v["rows"], 1797 + 5 - 2);
    assert_eq!(v["classes"], 11);
}

/// `codedb … 2>&1 | head`: standard error into the closed pipe too (the demo reports its steps
/// there, search --verbose its figures, errors their message).
#[test]
fn a_closed_pipe_on_stdout_and_stderr_exits_141_quietly() {
    let (tmp, _, dir) = tmp_digits_index("pca-itq:32");
    let (x, _) = digits();
    for args in [
        vec!["demo", "--dir", s(&tmp.path().join("demo"))],
        vec!["search", s(&dir), "--queries", s(&x), "--verbose"],
        vec!["search", s(&dir), "--queries", s(&x), "--threads", "100000"],
        vec!["search", s(&dir), "--queries", "/nonexistent.npy"],
        vec!["search", s(&dir), "--queries", s(&x), "-k", "-1"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_codedb"))
            .args(&args)
            .stdout(writer.try_clone().unwrap())
            .stderr(writer)
            .output()
            .unwrap();
        let code = out.status.code();
        // clap's own usage errors exit 2 (it ignores the failed write); ours exit 141.
        let want = if args.contains(&"-1") { 2 } else { 141 };
        assert_eq!(code, Some(want), "{args:?}");
    }
}

/// Every line the CLI prints goes through the writers that handle a closed pipe (`println!`
/// and `eprintln!` panic on one).
#[test]
fn the_cli_prints_only_through_outln() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        if !p.is_file() {
            continue; // the lab modules (io/, eval/, bench/) print nothing
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            let prints = ["println!(", "print!(", "eprintln!(", "eprint!("]
                .iter()
                .any(|m| {
                    code.match_indices(m)
                        .any(|(at, _)| !code[..at].ends_with('e'))
                });
            if prints {
                offenders.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}
