//! `codedb inspect` and `codedb verify` on the golden index, on damaged copies, and with bad
//! arguments: the output is right, `--json` parses, and the exit codes are the documented ones.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
mod cli_support;
use cli_support::codedb;
use std::process::Output;

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../format/golden/v1.0")
}

/// A scratch copy of the golden index.
fn copy_golden() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(golden()).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    tmp
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

const SEG_A: &str = "seg-00000000000000000000000000002001.seg";

#[test]
fn inspect_index_json_has_the_documented_keys() {
    let out = codedb(&["inspect", golden().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["version"], 1);
    assert_eq!(v["rows"], 6);
    assert_eq!(v["deleted"], 2);
    assert_eq!(v["segments"], 2);
    assert_eq!(v["classes"], 4);
    assert_eq!(v["model"]["code_bits"], 16);
    assert_eq!(
        v["model"]["stages"],
        serde_json::json!(["center", "linear", "binarize"])
    );
    assert!(v["bytes"].as_u64().unwrap() > 4000);
}

#[test]
fn inspect_every_golden_file_reports_its_contents() {
    for e in std::fs::read_dir(golden()).unwrap() {
        let p = e.unwrap().path();
        let out = codedb(&["inspect", p.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", p.display());
        let v = json(&out);
        assert_eq!(v["format_version"], "1.0");
        assert!(v["error"].is_null());
        assert!(
            v["sections"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["checksum_ok"] == true),
            "{}",
            p.display()
        );
    }
    let v = json(&codedb(&[
        "inspect",
        golden().join(SEG_A).to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(v["contents"]["kind"], "segment");
    assert_eq!(v["contents"]["rows"], 5);
    assert_eq!(v["contents"]["code_kind"], "binary");
    assert_eq!(v["contents"]["min_id"], 10);
    assert_eq!(v["contents"]["max_id"], 21);
    assert_eq!(v["contents"]["labels"], true);
    let text =
        String::from_utf8(codedb(&["inspect", golden().join(SEG_A).to_str().unwrap()]).stdout)
            .unwrap();
    assert!(text.contains("binary, 2 bytes (16 bits) per row"), "{text}");
}

#[test]
fn verify_clean_index_exits_0() {
    let out = codedb(&["verify", golden().to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v = json(&codedb(&["verify", golden().to_str().unwrap(), "--json"]));
    assert_eq!(v["files_checked"], 7);
    assert_eq!(v["problems"], serde_json::json!([]));
}

#[test]
fn verify_bit_flip_in_codes_exits_1_naming_the_section() {
    let tmp = copy_golden();
    let p = tmp.path().join(SEG_A);
    let mut b = std::fs::read(&p).unwrap();
    b[128] ^= 0x04; // the codes column starts at offset 128 in this file
    std::fs::write(&p, b).unwrap();
    let out = codedb(&["verify", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(SEG_A) && text.contains("[codes]"), "{text}");
    // The single file too.
    let out = codedb(&["verify", p.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["problems"][0]["section"], "codes");
}

#[test]
fn verify_truncated_file_exits_1() {
    let tmp = copy_golden();
    let p = tmp.path().join(SEG_A);
    let b = std::fs::read(&p).unwrap();
    std::fs::write(&p, &b[..b.len() - 40]).unwrap();
    let out = codedb(&["verify", tmp.path().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["section"] == "trailer")
    );
    let out = codedb(&["inspect", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated"));
}

#[test]
fn verify_reports_broken_cross_references() {
    let tmp = copy_golden();
    std::fs::remove_file(tmp.path().join("del-00000000000000000000000000003001.del")).unwrap();
    let out = codedb(&["verify", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("references missing file del-"), "{text}");

    // A segment swapped for another with the right name: ids and row counts disagree.
    let tmp = copy_golden();
    let b = tmp.path().join("seg-00000000000000000000000000002002.seg");
    std::fs::copy(&b, tmp.path().join(SEG_A)).unwrap();
    let text = String::from_utf8(codedb(&["verify", tmp.path().to_str().unwrap()]).stdout).unwrap();
    assert!(
        text.contains("[header.file_id]") && text.contains("[meta.rows]"),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_2_and_missing_paths_exit_1() {
    assert_eq!(codedb(&["inspect"]).status.code(), Some(2));
    assert_eq!(codedb(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(codedb(&["verify", "/nonexistent/x"]).status.code(), Some(1));
    let tmp = tempfile::tempdir().unwrap();
    let out = codedb(&["inspect", tmp.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a codedb index"));
    let junk = tmp.path().join("junk");
    std::fs::write(&junk, b"hello").unwrap();
    let out = codedb(&["verify", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not a codedb file"));
}

#[test]
fn help_lists_only_working_commands_with_examples() {
    let out = codedb(&["--help"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("inspect") && text.contains("verify") && text.contains("Exit codes"));
    let text = String::from_utf8(codedb(&["inspect", "--help"]).stdout).unwrap();
    assert!(text.contains("Examples"));
}
