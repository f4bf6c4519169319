//! Inverted class lists and the build/add wiring through the binary: `build --labels --lists
//! --store-vectors`, `classify` right after build, `search --classes/--nprobe/--rerank/--mode
//! exact`, `add --labels --lists` and its errors (index unchanged).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::collections::HashSet;
use std::path::PathBuf;
mod cli_support;
use cli_support::{build, codedb, digits_data, dir_bytes, fails, json, ok, result_ids, s, train};

use ndarray::{Axis, s};

#[test]
fn build_lists_classes_nprobe_rerank_and_add_through_the_cli() {
    let (x, y) = digits_data();
    let tmp = tempfile::tempdir().unwrap();
    let file = |n: &str| -> PathBuf { tmp.path().join(n) };
    codedb_cli::io::write_npy_f32(file("db.npy"), x.slice(s![0..1500, ..])).unwrap();
    codedb_cli::io::write_npy_f32(file("more.npy"), x.slice(s![1500.., ..])).unwrap();
    codedb_cli::io::write_npy_f32(file("q.npy"), x.slice(s![0..200;10, ..])).unwrap();
    let labels = |name: &str, l: &[i64]| {
        codedb_cli::io::write_npy_i64(file(name), l).unwrap();
    };
    labels("db_labels.npy", &y[..1500]);
    labels("more_labels.npy", &y[1500..]);
    let mut bad = y[1500..].to_vec();
    bad[3] = 42;
    labels("bad_labels.npy", &bad);
    let model = file("m.model");
    train(&file("db.npy"), "pca-itq:32", &model);
    let dir = file("idx");
    let out = ok(&[
        "build",
        s(&dir),
        "--model",
        s(&model),
        "--data",
        s(&file("db.npy")),
        "--labels",
        s(&file("db_labels.npy")),
        "--lists",
        "label",
        "--store-vectors",
        "f16",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("10 classes"));
    // classify works right after build (the class table came from the labels).
    let c = json(&ok(&[
        "classify",
        s(&dir),
        "--data",
        s(&file("q.npy")),
        "--top",
        "1",
        "--format",
        "json",
    ]));
    let right = c
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(i, r)| r["classes"][0]["id"].as_i64() == Some(y[i * 10]))
        .count();
    assert!(right > 15, "{right}/20");
    let q_path = file("q.npy");
    let q = s(&q_path);
    let search = |extra: &[&str]| -> serde_json::Value {
        let mut a = vec![
            "search",
            s(&dir),
            "--queries",
            q,
            "-k",
            "10",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        json(&ok(&a))
    };
    // --classes: every hit is a row of those classes (auto ids 0.. = row numbers).
    let restricted = result_ids(&search(&["--classes", "3,5"]));
    assert!(restricted.iter().all(|l| l.len() == 10));
    for id in restricted.iter().flatten() {
        assert!([3, 5].contains(&y[*id as usize]), "id {id}");
    }
    // Names and ids address the same lists (names are the labels in decimal).
    assert_eq!(result_ids(&search(&["--classes", "5,3"])), restricted);
    // --nprobe = all classes equals the full search; fewer lists stay inside the probed ones.
    let full = search(&[]);
    assert_eq!(search(&["--nprobe", "10"]), full);
    let np2 = result_ids(&search(&["--nprobe", "2"]));
    let same: usize = np2
        .iter()
        .zip(result_ids(&full))
        .map(|(a, b)| {
            let b: HashSet<u64> = b.into_iter().collect();
            a.iter().filter(|i| b.contains(i)).count()
        })
        .sum();
    assert!(same > 100, "nprobe 2 recall {same}/200");
    // Re-ranking and exact search read the stored vectors.
    let exact = search(&["--mode", "exact"]);
    let all = search(&["--rerank", "1500"]);
    assert_eq!(all, exact);
    // add: labels update the class table, lists follow the labels, vectors are stored.
    let before = json(&ok(&["inspect", s(&dir), "--json"]));
    assert_eq!(before["rows"], 1500);
    let snap_before = dir_bytes(&dir);
    fails(
        &[
            "add",
            s(&dir),
            "--data",
            s(&file("more.npy")),
            "--labels",
            s(&file("bad_labels.npy")),
            "--lists",
            "label",
        ],
        1,
        "add-class",
    );
    assert_eq!(
        dir_bytes(&dir),
        snap_before,
        "a failed add changed the index"
    );
    ok(&[
        "add",
        s(&dir),
        "--data",
        s(&file("more.npy")),
        "--labels",
        s(&file("more_labels.npy")),
        "--lists",
        "label",
    ]);
    let snap = codedb::Snapshot::open(&dir).unwrap();
    let t = snap.classes().unwrap();
    let total: u64 = t.classes.iter().map(|c| c.count).sum();
    assert_eq!(total, 1797);
    for r in snap.rows().unwrap() {
        assert_eq!(r.list, Some(y[r.id as usize] as u32));
    }
    let exact = search(&["--mode", "exact", "--classes", "0,1"]);
    let rr = search(&["--rerank", "1797", "--classes", "0,1"]);
    assert_eq!(exact, rr);
    for id in result_ids(&exact).iter().flatten() {
        assert!(y[*id as usize] <= 1);
    }
    // Bad arguments.
    fails(
        &["search", s(&dir), "--queries", q, "--classes", "sneaker"],
        1,
        "--classes sneaker",
    );
    let o = codedb(&["search", s(&dir), "--queries", q, "--nprobe", "0"]);
    assert_eq!(o.status.code(), Some(2), "--nprobe 0 is a usage error");
    assert!(String::from_utf8_lossy(&o.stderr).contains("must be ≥ 1"));
    // A model whose index has no class table: --nprobe and --lists nearest explain why.
    let plain = file("plain");
    build(&plain, &model, &file("db.npy"), &[]);
    fails(
        &["search", s(&plain), "--queries", q, "--nprobe", "2"],
        1,
        "class",
    );
    fails(
        &["search", s(&plain), "--queries", q, "--rerank", "20"],
        1,
        "--store-vectors",
    );
    fails(
        &[
            "add",
            s(&plain),
            "--data",
            s(&file("more.npy")),
            "--lists",
            "nearest",
        ],
        1,
        "nearest",
    );
    let x2 = x.select(Axis(0), &[0, 1]);
    codedb_cli::io::write_npy_f32(file("two.npy"), x2.view()).unwrap();
    fails(
        &[
            "build",
            s(&file("nolab")),
            "--model",
            s(&model),
            "--data",
            s(&file("two.npy")),
            "--lists",
            "label",
        ],
        1,
        "labels",
    );
}
