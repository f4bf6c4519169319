//! The scenario through the binary (issue 13, item 5): build with `--labels`, delete
//! every row of class "0", `compact --full`, classify. With stored vectors the class ends with
//! count 0 and is never an answer, and half a class deleted leaves exactly the mean of the other
//! half; without them the delete is refused (exit 1, index unchanged) unless
//! `--keep-class-stats` says to keep the class statistics.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
mod cli_support;
use cli_support::{build, classify, codedb, digits_data, dir_bytes, json, ok, s, train};

use codedb::Snapshot;
use ndarray::s;

/// (count, mean) of class `id` in the index's class table.
fn class(dir: &Path, id: u32) -> (u64, Vec<f64>) {
    let s = Snapshot::open(dir).unwrap();
    let c = s
        .classes()
        .unwrap()
        .classes
        .iter()
        .find(|c| c.id == id)
        .unwrap()
        .clone();
    let n = c.count.max(1) as f64;
    (c.count, c.sum.iter().map(|v| v / n).collect())
}

#[test]
fn deleting_a_whole_class_then_compacting_leaves_it_without_a_mean() {
    let (x, y) = digits_data();
    let tmp = tempfile::tempdir().unwrap();
    let file = |n: &str| -> PathBuf { tmp.path().join(n) };
    let n = 1000;
    codedb_cli::io::write_npy_f32(file("db.npy"), x.slice(s![..n, ..])).unwrap();
    codedb_cli::io::write_npy_i64(file("labels.npy"), &y[..n]).unwrap();
    codedb_cli::io::write_npy_f32(file("q.npy"), x.slice(s![n..n + 300, ..])).unwrap();
    let of = |c: i64| -> Vec<u64> { (0..n as u64).filter(|&i| y[i as usize] == c).collect() };
    let zeros = of(0);
    codedb_cli::io::write_npy_u64(file("zeros.npy"), &zeros).unwrap();
    let threes = of(3);
    let (gone, kept): (Vec<u64>, Vec<u64>) = threes.iter().partition(|&&i| i % 2 == 0);
    codedb_cli::io::write_npy_u64(file("half3.npy"), &gone).unwrap();
    train(&file("db.npy"), "pca:16,float", &file("m.model"));
    let (model, db, labels) = (file("m.model"), file("db.npy"), file("labels.npy"));
    let build = |dir: &Path, extra: &[&str]| {
        let mut a = vec!["--labels", s(&labels)];
        a.extend_from_slice(extra);
        build(dir, &model, &db, &a);
    };

    // Stored vectors: the class means follow the deletes.
    let idx = file("idx");
    build(&idx, &["--store-vectors", "f32"]);
    assert_eq!(class(&idx, 0).0, zeros.len() as u64);
    let before = classify(&idx, &file("q.npy"), &["--format", "json"]);
    assert!(
        String::from_utf8_lossy(&before.stdout).contains("\"id\":0"),
        "class 0 wins some"
    );
    ok(&["delete", s(&idx), "--ids-file", s(&file("zeros.npy"))]);
    ok(&["delete", s(&idx), "--ids-file", s(&file("half3.npy"))]);
    ok(&["compact", s(&idx), "--full"]);
    ok(&["verify", s(&idx)]);
    let (count, mean) = class(&idx, 0);
    assert_eq!(count, 0, "class 0 has no rows left");
    assert!(mean.iter().all(|&v| v == 0.0));
    // Half of class 3: its mean is the mean of the rows that are left.
    let (count, mean) = class(&idx, 3);
    assert_eq!(count, kept.len() as u64);
    for (j, m) in mean.iter().enumerate() {
        let want: f64 =
            kept.iter().map(|&i| x[[i as usize, j]] as f64).sum::<f64>() / kept.len() as f64;
        assert!(
            (m - want).abs() <= 1e-9 * want.abs().max(1.0),
            "column {j}: {m} vs {want}"
        );
    }
    let out = classify(&idx, &file("q.npy"), &["--top", "10", "--format", "json"]);
    let v = json(&out);
    for row in v.as_array().unwrap() {
        let ids: Vec<u64> = row["classes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_u64().unwrap())
            .collect();
        assert_eq!(ids.len(), 9, "nine classes have a mean");
        assert!(!ids.contains(&0), "class 0 is never an answer: {ids:?}");
    }

    // No stored vectors (the exact build): refused, nothing changes.
    let bare = file("bare");
    build(&bare, &[]);
    let files = dir_bytes(&bare);
    let out = codedb(&["delete", s(&bare), "--ids-file", s(&file("zeros.npy"))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("stores no vectors") && err.contains("--keep-class-stats"),
        "{err}"
    );
    assert_eq!(dir_bytes(&bare), files, "a refused delete writes nothing");
    // Asked to keep the class statistics, the delete goes through and says so.
    let out = ok(&[
        "delete",
        s(&bare),
        "--ids-file",
        s(&file("zeros.npy")),
        "--keep-class-stats",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("class counts and sums kept"));
    ok(&["compact", s(&bare), "--full"]);
    assert_eq!(class(&bare, 0).0, zeros.len() as u64, "kept, as asked");
    assert_eq!(
        Snapshot::open(&bare).unwrap().live_rows(),
        (n - zeros.len()) as u64
    );
}
