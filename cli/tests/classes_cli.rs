//! `codedb add-class` and `codedb classify` through the binary: classes from images, zero-shot
//! and MAP classes, the JSON and TSV outputs, and errors that leave the index unchanged.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
mod cli_support;
use cli_support::{codedb, ok};
use std::process::Output;

use ndarray::{Array2, Axis};

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

fn dir_bytes(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn add_classes_and_classify_through_the_cli() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/digits");
    let x = codedb_cli::io::load_vectors(root.join("pixels.npy")).unwrap();
    let y: Vec<u32> = codedb_cli::io::load_labels(root.join("labels.npy"))
        .unwrap()
        .iter()
        .map(|&v| v as u32)
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let file = |name: &str| -> PathBuf { t.join(name) };
    let (tr, te): (Vec<usize>, Vec<usize>) = (0..x.nrows()).partition(|i| i % 4 != 0);
    codedb_cli::io::write_npy_f32(file("train.npy"), x.select(Axis(0), &tr).view()).unwrap();
    let test = x.select(Axis(0), &te[..40]);
    codedb_cli::io::write_npy_f32(file("test.npy"), test.view()).unwrap();
    for c in 0..10u32 {
        let idx: Vec<usize> = tr.iter().copied().filter(|&i| y[i] == c).collect();
        codedb_cli::io::write_npy_f32(file(&format!("c{c}.npy")), x.select(Axis(0), &idx).view())
            .unwrap();
    }
    let idx: Vec<usize> = tr.iter().copied().filter(|&i| y[i] == 9).take(2).collect();
    codedb_cli::io::write_npy_f32(file("few9.npy"), x.select(Axis(0), &idx).view()).unwrap();
    let mean = x.select(Axis(0), &tr).mean_axis(Axis(0)).unwrap();
    let mean = Array2::from_shape_vec((1, 64), mean.to_vec()).unwrap();
    codedb_cli::io::write_npy_f32(file("root.npy"), mean.view()).unwrap();
    ok(&[
        "train",
        "--data",
        s(&file("train.npy")),
        "--pipeline",
        "pca:32,float",
        "--out",
        s(&file("m.model")),
    ]);
    let dir = file("index");
    ok(&[
        "build",
        s(&dir),
        "--model",
        s(&file("m.model")),
        "--data",
        s(&file("train.npy")),
    ]);

    // No classes yet: classify is an error.
    let out = codedb(&["classify", s(&dir), "--data", s(&file("test.npy"))]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no class"));

    let out = ok(&[
        "add-class",
        s(&dir),
        "--name",
        "digit",
        "--mean",
        s(&file("root.npy")),
        "--json",
    ]);
    assert_eq!(json(&out)["count"], 1);
    for c in 0..9 {
        let out = ok(&[
            "add-class",
            s(&dir),
            "--name",
            &format!("d{c}"),
            "--parent",
            "digit",
            "--data",
            s(&file(&format!("c{c}.npy"))),
            "--prior-weight",
            "0",
            "--json",
        ]);
        let v = json(&out);
        assert_eq!(v["name"], format!("d{c}"));
        assert!(v["count"].as_u64().unwrap() > 100);
    }
    // Zero-shot: default m = 5 pseudo-images of the prior.
    let out = ok(&[
        "add-class",
        s(&dir),
        "--name",
        "zs",
        "--parent",
        "digit",
        "--json",
    ]);
    assert_eq!(json(&out)["count"], 5);
    // MAP with m chosen on held-out images of the existing classes.
    codedb_cli::io::write_npy_f32(file("val.npy"), x.select(Axis(0), &te).view()).unwrap();
    let vl: Vec<i32> = te.iter().map(|&i| y[i] as i32).collect();
    // Labels are class ids: d0..d8 got ids 1..9 (one past "digit" = 0).
    let vl: Vec<i32> = vl.iter().map(|&l| l + 1).collect();
    codedb_cli::io::write_npy_i32(file("val_labels.npy"), &vl).unwrap();
    let out = ok(&[
        "add-class",
        s(&dir),
        "--name",
        "d9",
        "--parent",
        "digit",
        "--data",
        s(&file("few9.npy")),
        "--validation",
        s(&file("val.npy")),
        "--validation-labels",
        s(&file("val_labels.npy")),
        "--json",
    ]);
    let v = json(&out);
    let m = v["prior_weight_choice"]["weight"].as_u64().unwrap();
    assert_eq!(v["count"].as_u64().unwrap(), 2 + m);
    assert!(v["prior_weight_choice"]["episodes"].as_u64().unwrap() >= 9);

    // classify --format json: exactly [{"row", "classes": [{"name", "id", "score"}]}], best first.
    let out = ok(&[
        "classify",
        s(&dir),
        "--data",
        s(&file("test.npy")),
        "--top",
        "3",
        "--format",
        "json",
    ]);
    let v = json(&out);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 40);
    let mut correct = 0;
    for (i, r) in rows.iter().enumerate() {
        let o = r.as_object().unwrap();
        assert_eq!(o.len(), 2);
        assert_eq!(r["row"], i);
        let cl = r["classes"].as_array().unwrap();
        assert_eq!(cl.len(), 3);
        for c in cl {
            let o = c.as_object().unwrap();
            assert_eq!(
                o.keys().cloned().collect::<Vec<_>>(),
                vec!["id", "name", "score"]
            );
        }
        for w in cl.windows(2) {
            assert!(w[0]["score"].as_f64().unwrap() >= w[1]["score"].as_f64().unwrap());
        }
        let want = format!("d{}", y[te[i]]);
        correct += usize::from(cl[0]["name"] == want.as_str());
    }
    assert!(correct >= 32, "{correct}/40 correct");
    let tsv = ok(&[
        "classify",
        s(&dir),
        "--data",
        s(&file("test.npy")),
        "--top",
        "2",
    ]);
    let text = String::from_utf8(tsv.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "row\trank\tid\tname\tscore");
    assert_eq!(lines.len(), 1 + 80);

    // Errors: exit 1 and the index byte for byte unchanged.
    let before = dir_bytes(&dir);
    let (root_f, c1_f, model_f) = (file("root.npy"), file("c1.npy"), file("m.model"));
    let bad: Vec<Vec<&str>> = vec![
        vec!["--name", "x", "--parent", "nope"],
        vec!["--name", "d1"],
        vec!["--name", "x"],
        vec!["--name", "x", "--data", s(&root_f), "--id", "3"],
        vec!["--name", "x", "--parent", "d1"],
        vec!["--name", "x", "--mean", s(&c1_f)],
        vec!["--name", "x", "--data", s(&model_f)],
    ];
    for args in &bad {
        let mut a = vec!["add-class", s(&dir)];
        a.extend(args);
        let out = codedb(&a);
        assert_eq!(out.status.code(), Some(1), "{a:?}");
        assert!(!out.stderr.is_empty());
        assert_eq!(dir_bytes(&dir), before, "{a:?} changed the index");
    }
    let out = codedb(&[
        "add-class",
        s(&dir),
        "--name",
        "x",
        "--data",
        "a.npy",
        "--mean",
        "b.npy",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = codedb(&[
        "classify",
        s(&dir),
        "--data",
        s(&file("test.npy")),
        "--top",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
