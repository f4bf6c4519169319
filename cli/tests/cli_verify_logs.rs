//! `codedb verify` on append logs — given alone, nothing says which bytes were committed, so
//! every byte must be a whole, valid record; inside an index the manifests say, so bytes past
//! the committed length are a crash tail (a note) and damage before it is a problem — and on
//! files several manifests name, where each problem is listed once.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Output;

mod cli_support;
#[path = "../../tests/storage_support/mod.rs"]
mod storage_support;
use cli_support::codedb;
use codedb::Index;
use codedb::{EncodedOptions, RowBatch};
use storage_support::{codes, model, small_config};

const LOG: &str = "log-00000000000000000000000000016101.log";

/// A writable copy of the v1.1 golden index (a segment, bitmaps and an active log of two
/// records).
fn copy_golden_v1_1() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../format/golden/v1.1");
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = tmp.path().join(e.file_name());
        std::fs::write(&to, std::fs::read(e.path()).unwrap()).unwrap();
    }
    tmp
}

fn verify_json(path: &Path) -> (i32, serde_json::Value) {
    let o: Output = codedb(&["verify", path.to_str().unwrap(), "--json"]);
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&o.stdout));
    });
    (o.status.code().unwrap(), v)
}

#[test]
fn a_standalone_log_passes_only_as_whole_valid_records() {
    let tmp = copy_golden_v1_1();
    let log = std::fs::read(tmp.path().join(LOG)).unwrap();
    let one = tmp.path().join("alone.log");
    std::fs::write(&one, &log).unwrap();
    let (code, v) = verify_json(&one);
    assert_eq!((code, &v["problems"]), (0, &serde_json::json!([])), "{v}");

    let n = log.len();
    let mut flipped = log.clone();
    flipped[128 + 40] ^= 0x01; // in record 0's payload
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        (
            "half",
            log[..n / 2].to_vec(),
            "log record 0 at offset 128",
            "torn tail",
        ),
        (
            "last byte cut",
            log[..n - 1].to_vec(),
            "log record 1 at offset",
            "torn tail",
        ),
        (
            "prelude only",
            log[..128].to_vec(),
            "log",
            "holds no record",
        ),
        (
            "byte flipped in record 0",
            flipped,
            "log record 0 at offset 128",
            "1 valid record(s)",
        ),
    ];
    for (what, bytes, section, needle) in cases {
        std::fs::write(&one, &bytes).unwrap();
        let (code, v) = verify_json(&one);
        assert_eq!(code, 1, "{what}: {v}");
        let p = &v["problems"][0];
        assert!(
            p["section"].as_str().unwrap().starts_with(section),
            "{what}: {p}"
        );
        assert!(
            p["message"].as_str().unwrap().contains(needle),
            "{what}: {p}"
        );
    }
    // Text output names the bytes.
    std::fs::write(&one, &log[..n - 1]).unwrap();
    let o = codedb(&["verify", one.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("FAILED") && text.contains("bytes, from offset"),
        "{text}"
    );
}

#[test]
fn in_an_index_a_tail_past_the_committed_length_is_a_note_and_damage_before_it_a_problem() {
    let tmp = copy_golden_v1_1();
    let path: PathBuf = tmp.path().join(LOG);
    let log = std::fs::read(&path).unwrap();
    let mut tailed = log.clone();
    tailed.extend_from_slice(&[0xAB; 40]);
    std::fs::write(&path, &tailed).unwrap();
    let (code, v) = verify_json(tmp.path());
    assert_eq!(code, 0, "{v}");
    let note = &v["notes"][0];
    assert!(note["path"].as_str().unwrap().ends_with(LOG), "{v}");
    assert!(
        note["message"]
            .as_str()
            .unwrap()
            .contains("40 bytes past the committed length"),
        "{v}"
    );

    let mut damaged = log.clone();
    damaged[128 + 40] ^= 0x01;
    std::fs::write(&path, &damaged).unwrap();
    let (code, v) = verify_json(tmp.path());
    assert_eq!(code, 1, "{v}");
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["section"] == "log record 0 at offset 128"),
        "{v}"
    );
}

#[test]
fn a_problem_in_a_file_two_manifests_name_is_listed_once_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1 << 20)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&(0..20).collect::<Vec<_>>(), 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    assert_eq!(idx.commit_sealed().unwrap(), 2);
    idx.delete(&[3]).unwrap();
    assert_eq!(idx.commit().unwrap(), 3);
    drop(idx);
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    let mut b = std::fs::read(&seg).unwrap();
    b[10] ^= 0x01; // under the header checksum
    let mut p = std::fs::metadata(&seg).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    std::fs::set_permissions(&seg, p).unwrap();
    std::fs::write(&seg, b).unwrap();
    let seg_name = seg.file_name().unwrap().to_str().unwrap();
    let (m2, m3) = (
        "v00000000000000000002.manifest",
        "v00000000000000000003.manifest",
    );

    let o = codedb(&["verify", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("PROBLEM") && l.contains(seg_name))
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains(&format!("(named by {m2}, {m3})")),
        "{text}"
    );

    let (_, v) = verify_json(dir.path());
    let probs: Vec<&serde_json::Value> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"].as_str().unwrap().ends_with(seg_name))
        .collect();
    assert_eq!(probs.len(), 1, "{v}");
    assert_eq!(probs[0]["referenced_by"], serde_json::json!([m2, m3]));
    // The bitmap version 3 names is named even though its segment does not open.
    let unref = v["unreferenced"].as_array().unwrap();
    assert!(
        unref.iter().all(|n| !n.as_str().unwrap().ends_with(".del")),
        "{v}"
    );
}
