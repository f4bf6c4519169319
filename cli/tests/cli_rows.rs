//! Row and class management through the binary: `classes` lists the class table, `add` reports
//! the ids it assigned and replaces rows with `--upsert`, `delete --ignore-missing` skips ids
//! that are not live and says how many rows it deleted, `train --out` never replaces a model
//! file without `--force` and never leaves a half-written one.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
mod cli_support;
use cli_support::{build, digits, fails, json, ok, s, stdout, tmp_digits_index, train, train_args};

fn rows(dir: &str) -> u64 {
    json(&ok(&["inspect", dir, "--json"]))["rows"]
        .as_u64()
        .unwrap()
}

#[test]
fn classes_lists_the_class_table() {
    let (tmp, _, dir) = tmp_digits_index("pca-itq:32");
    let t = tmp.path();
    let (x, y) = digits();
    let d = s(&dir);
    let labels = codedb_cli::io::load_labels(&y).unwrap();
    ok(&[
        "add-class",
        d,
        "--name",
        "digit",
        "--mean",
        &mean_file(t, &x),
    ]);
    let mean = t.join("mean.npy");
    ok(&[
        "add-class",
        d,
        "--name",
        "zero-again",
        "--parent",
        "digit",
        "--mean",
        s(&mean),
    ]);

    let v = json(&ok(&["classes", d, "--json"]));
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 12);
    for c in 0..10u32 {
        let e = &list[c as usize];
        assert_eq!(e["id"], c);
        assert_eq!(e["name"], c.to_string());
        assert!(e["parent"].is_null());
        let n = labels.iter().filter(|&&l| l == c as i64).count();
        assert_eq!(e["count"], n as u64, "class {c}");
    }
    assert_eq!(list[10]["name"], "digit");
    assert_eq!(list[10]["count"], 1);
    assert_eq!(list[11]["name"], "zero-again");
    assert_eq!(list[11]["parent"], list[10]["id"]);
    assert_eq!(list[11]["parent_name"], "digit");
    for key in ["id", "name", "parent", "parent_name", "count", "centroids"] {
        assert!(list[0].get(key).is_some(), "no {key} in {}", list[0]);
    }

    let text = stdout(&ok(&["classes", d]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 13, "{text}");
    assert!(lines[0].starts_with("id"), "{text}");
    assert!(lines[12].contains("zero-again") && lines[12].contains("digit"));

    // An index without a class table: nothing to list, which is not an error.
    let plain = t.join("plain");
    build(&plain, &t.join("m.model"), &x, &[]);
    assert_eq!(
        json(&ok(&["classes", s(&plain), "--json"])),
        serde_json::json!([])
    );
    assert!(stdout(&ok(&["classes", s(&plain)])).contains("no class table"));
    fails(&["classes", s(&t.join("nothing"))], 1, "nothing");
}

fn mean_file(t: &Path, x: &Path) -> String {
    let xs = codedb_cli::io::load_vectors(x).unwrap();
    let mean = xs.mean_axis(ndarray::Axis(0)).unwrap();
    let p = t.join("mean.npy");
    codedb_cli::io::write_npy_f32(&p, mean.insert_axis(ndarray::Axis(0)).view()).unwrap();
    s(&p).to_string()
}

#[test]
fn add_reports_its_ids_and_upserts_by_id() {
    let (tmp, _, dir) = tmp_digits_index("pca-itq:32");
    let t = tmp.path();
    let (x, _) = digits();
    let d = s(&dir);
    let xs = codedb_cli::io::load_vectors(&x).unwrap();
    let q = t.join("q.npy");
    codedb_cli::io::write_npy_f32(&q, xs.slice(ndarray::s![0..3, ..])).unwrap();

    // Automatic ids continue after the build's 0 to 1796, and read as words ("ids 1797 to 1799").
    let text = stdout(&ok(&["add", d, "--data", s(&q)]));
    assert!(text.contains("added 3 rows"), "{text}");
    assert!(text.contains("ids 1797 to 1799"), "{text}");
    let v = json(&ok(&["add", d, "--data", s(&q), "--json"]));
    assert_eq!(v["added"], 3);
    assert_eq!(v["ids"], serde_json::json!([1800, 1801, 1802]));
    assert_eq!(v["replaced"], 0);
    assert!(v["version"].as_u64().unwrap() >= 4);
    assert_eq!(rows(d), 1797 + 6);

    // Given ids: a live one is refused, and the message points at --upsert, which exists.
    let ids = t.join("ids.npy");
    write_ids(&ids, &[5, 1801, 90_000]);
    let out = fails(
        &["add", d, "--data", s(&q), "--ids", s(&ids)],
        1,
        "--upsert",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains('5'));
    assert_eq!(rows(d), 1797 + 6);
    let upsert = [
        "add",
        d,
        "--data",
        s(&q),
        "--ids",
        s(&ids),
        "--upsert",
        "--keep-class-stats",
    ];
    let v = json(&ok(&[&upsert[..], &["--json"]].concat()));
    assert_eq!(v["ids"], serde_json::json!([5, 1801, 90_000]));
    assert_eq!(v["replaced"], 2);
    assert_eq!(v["added"], 3);
    assert_eq!(rows(d), 1797 + 6 + 1);
    let text = stdout(&ok(&upsert));
    assert!(text.contains("replaced 3"), "{text}");
    assert_eq!(rows(d), 1797 + 6 + 1);
}

fn write_ids(p: &Path, ids: &[u64]) {
    codedb_cli::io::write_npy_u64(p, ids).unwrap();
}

#[test]
fn delete_reports_counts_and_can_skip_missing_ids() {
    let (_tmp, _, dir) = tmp_digits_index("pca-itq:32");
    let d = s(&dir);

    // Default: an unknown id aborts the whole batch.
    fails(&["delete", d, "--ids", "3,777777"], 1, "777777");
    assert_eq!(rows(d), 1797);

    // The rows count in their classes and the index stores no vectors: keep the classes.
    let keep = "--keep-class-stats";
    let text = stdout(&ok(&[
        "delete",
        d,
        "--ids",
        "3,777777",
        "--ignore-missing",
        keep,
    ]));
    assert!(text.contains("deleted 1 row"), "{text}");
    assert!(text.contains("777777"), "{text}");
    assert_eq!(rows(d), 1796);

    let v = json(&ok(&[
        "delete",
        d,
        "--ids",
        "3,4,5,888888",
        "--ignore-missing",
        keep,
        "--json",
    ]));
    assert_eq!(v["deleted"], 2);
    assert_eq!(v["missing"], serde_json::json!([3, 888888]));
    assert!(v["version"].is_u64());
    assert_eq!(rows(d), 1794);

    // Nothing live: nothing to commit, said so, exit 0.
    let before = json(&ok(&["inspect", d, "--json"]))["version"].clone();
    let v = json(&ok(&[
        "delete",
        d,
        "--ids",
        "3",
        "--ignore-missing",
        keep,
        "--json",
    ]));
    assert_eq!(v["deleted"], 0);
    assert_eq!(v["version"], before);
    let v = json(&ok(&["delete", d, "--ids", "6,7", keep, "--json"]));
    assert_eq!(v["deleted"], 2);
    assert_eq!(v["missing"], serde_json::json!([]));
}

#[test]
fn train_out_needs_force_to_replace_and_never_leaves_a_partial_file() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (x, _) = digits();
    let m = t.join("m.model");
    train(&x, "lsh:16", &m);
    let first = std::fs::read(&m).unwrap();
    fails(&train_args(&x, "lsh:32", &m), 1, "--force");
    assert_eq!(std::fs::read(&m).unwrap(), first);
    ok(&[train_args(&x, "lsh:32", &m), vec!["--force"]].concat());
    let v = json(&ok(&["inspect", s(&m), "--json"]));
    assert_eq!(v["contents"]["code_bits"], 32, "{v}");
    // A failed training writes nothing.
    let bad = t.join("bad.model");
    fails(&train_args(&x, "pca-itq:128", &bad), 1, "pca");
    let names: Vec<String> = std::fs::read_dir(t)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["m.model"], "leftovers: {names:?}");
}
