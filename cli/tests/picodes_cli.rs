//! `codedb train` with `hom:chi2` and `picodes:C` on the shipped digits: the model trains
//! from labels with its objective shown per round, stores the hom stage and linear + binarize,
//! builds an index; negative input to `hom:chi2` and a missing `--labels` are refused naming
//! what is wrong. `classemes:C` (the paper's baseline) trains the same way, and
//! `--attributes-classifier` chooses the SVMs or ridge behind `attributes:R`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;

use cli_support::{LABELS, PIXELS, codedb, fails, json, ok, s, stderr};

#[test]
fn hom_picodes_trains_from_labels_and_bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    let out = ok(&[
        "train",
        "--data",
        PIXELS,
        "--labels",
        LABELS,
        "--pipeline",
        "hom:chi2,pca:32,picodes:16",
        "--picodes-rounds",
        "4",
        "--verbose",
        "--out",
        s(&m),
    ]);
    let err = stderr(&out);
    assert!(err.contains("picodes:16 round   1: objective"), "{err}");
    let v = json(&ok(&["inspect", s(&m), "--json"]));
    let kinds: Vec<&str> = v["contents"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["hom", "center", "linear", "linear", "binarize", "origin"],
        "{v}"
    );
    let steps: Vec<&str> = v["contents"]["stages"].as_array().unwrap()[..5]
        .iter()
        .map(|st| st["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["hom:chi2", "pca:32", "pca:32", "picodes:16", "picodes:16"]
    );
    let dir = tmp.path().join("idx");
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);

    // Negative input to hom:chi2: exit 1, the row and column named.
    let bad = tmp.path().join("bad.npy");
    let (mut x, _) = cli_support::digits_data();
    x[(4, 9)] = -2.0;
    codedb_cli::io::write_npy_f32(&bad, x.view()).unwrap();
    fails(
        &[
            "build",
            s(&tmp.path().join("idx2")),
            "--model",
            s(&m),
            "--data",
            s(&bad),
        ],
        1,
        "row 4, column 9",
    );
    fails(
        &[
            "train",
            "--data",
            s(&bad),
            "--labels",
            LABELS,
            "--pipeline",
            "hom:chi2,pca:32,picodes:16",
            "--out",
            s(&tmp.path().join("m2")),
        ],
        1,
        "hom:chi2 maps non-negative input only",
    );
    // picodes without labels: usage error naming --labels; hom not first: usage error.
    fails(
        &[
            "train",
            "--data",
            PIXELS,
            "--pipeline",
            "picodes:16",
            "--out",
            s(&tmp.path().join("m3")),
        ],
        2,
        "--labels",
    );
    fails(
        &[
            "train",
            "--data",
            PIXELS,
            "--pipeline",
            "pca:32,hom:inter,bits",
            "--out",
            s(&tmp.path().join("m4")),
        ],
        2,
        "must be the first step",
    );
    assert!(codedb(&["train", "--help"]).status.success());
}

/// `search --examples --svm-c C` sets the cost of the SVM learned at query time (another C,
/// another classifier, other scores; C = 1 is the default); C ≤ 0 is a usage error.
#[test]
fn search_examples_takes_the_svm_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    ok(&[
        "train",
        "--data",
        PIXELS,
        "--pipeline",
        "pca-itq:32",
        "--out",
        s(&m),
    ]);
    let dir = tmp.path().join("idx");
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);
    let threes = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/digits/threes.npy"
    );
    let top = |extra: &[&str]| -> f64 {
        let mut a = vec![
            "search",
            s(&dir),
            "--examples",
            threes,
            "-k",
            "1",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        json(&ok(&a))[0]["results"][0]["score"].as_f64().unwrap()
    };
    let (default, small) = (top(&[]), top(&["--svm-c", "0.001"]));
    assert_eq!(top(&["--svm-c", "1"]), default);
    assert!(
        (small - default).abs() > 0.05,
        "C = 0.001: {small} vs C = 1: {default}"
    );
    fails(
        &["search", s(&dir), "--examples", threes, "--svm-c", "0"],
        2,
        "--svm-c",
    );
}

/// `classemes:C`, the paper's baseline at C bits, trains from the CLI: the RFE steps are shown,
/// the model is linear + binarize learned by `classemes:C`, and without labels it is refused.
#[test]
fn classemes_train_from_labels_to_c_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    let out = ok(&[
        "train",
        "--data",
        PIXELS,
        "--labels",
        LABELS,
        "--pipeline",
        "pca:32,classemes:24",
        "--verbose",
        "--out",
        s(&m),
    ]);
    let err = stderr(&out);
    // 10 digit classes, C = 24: 48 candidates (10 one-vs-rest + 38 dichotomies).
    assert!(err.contains("classemes:24: 48 candidates"), "{err}");
    assert!(err.contains("24 candidate bits left"), "{err}");
    let v = json(&ok(&["inspect", s(&m), "--json"]));
    let stages = v["contents"]["stages"].as_array().unwrap();
    let kinds: Vec<&str> = stages
        .iter()
        .map(|st| st["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["center", "linear", "linear", "binarize", "origin"],
        "{v}"
    );
    assert_eq!(stages[2]["step"].as_str(), Some("classemes:24"), "{v}");
    let dir = tmp.path().join("idx");
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);
    fails(
        &[
            "train",
            "--data",
            PIXELS,
            "--pipeline",
            "pca:32,classemes:24",
            "--out",
            s(&tmp.path().join("m2")),
        ],
        2,
        "--labels",
    );
}

/// `--attributes-classifier` chooses the one-vs-rest classifiers of `attributes:R`: the SVMs
/// (default) and ridge give different models; another value is a usage error.
#[test]
fn attributes_classifier_is_svm_by_default_or_ridge() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, _) = cli_support::digits_data();
    // The codes (floats) of the digits under a trained model (file ids differ per file).
    let train = |name: &str, extra: &[&str]| -> Vec<u8> {
        let m = tmp.path().join(name);
        let mut a = vec![
            "train",
            "--data",
            PIXELS,
            "--labels",
            LABELS,
            "--pipeline",
            "attributes:8,float",
            "--out",
            s(&m),
        ];
        a.extend_from_slice(extra);
        ok(&a);
        let mf = codedb::format::ModelFile::open(&m).unwrap();
        codedb::Model::from_model_file(&mf)
            .unwrap()
            .encode(x.view())
            .unwrap()
    };
    let default = train("d.model", &[]);
    assert_eq!(
        default,
        train("s.model", &["--attributes-classifier", "svm"])
    );
    assert_ne!(
        default,
        train("r.model", &["--attributes-classifier", "ridge"])
    );
    fails(
        &[
            "train",
            "--data",
            PIXELS,
            "--labels",
            LABELS,
            "--pipeline",
            "attributes:8,float",
            "--attributes-classifier",
            "lda",
            "--out",
            s(&tmp.path().join("x.model")),
        ],
        2,
        "--attributes-classifier",
    );
}

/// `train --json` reports the PiCoDes objective and the basis classifiers updated in every
/// round, and why the descent stopped; a descent that updates nothing says so on stderr and
/// in the report's notes (a tiny λ: the SVMs are all margin, no flip lowers eq. 5).
#[test]
fn train_json_reports_picodes_rounds_and_a_stall_is_noted() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "train",
            "--data",
            PIXELS,
            "--labels",
            LABELS,
            "--pipeline",
            "pca:32,picodes:16",
            "--picodes-rounds",
            "3",
            "--json",
            "--force",
            "--out",
            s(&m),
        ];
        a.extend_from_slice(extra);
        a
    };
    let out = ok(&args(&[]));
    let v = json(&out);
    let e = v["picodes_objective"].as_array().unwrap();
    let u = v["picodes_updated"].as_array().unwrap();
    assert_eq!(e.len(), u.len(), "{v}");
    assert!(u[0].as_u64().unwrap() > 0, "{v}");
    assert!(v["picodes_stop"].is_string(), "{v}");
    assert_eq!(v["notes"].as_array().unwrap().len(), 0, "{v}");
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));

    let out = ok(&args(&["--picodes-c", "1e-9"]));
    let v = json(&out);
    let notes = v["notes"].as_array().unwrap();
    assert_eq!(v["picodes_updated"][0].as_u64(), Some(0), "{v}");
    assert_eq!(v["picodes_stop"].as_str(), Some("stalled"), "{v}");
    assert!(
        notes.len() == 1 && notes[0].as_str().unwrap().contains("LSH initialisation"),
        "{v}"
    );
    assert!(
        stderr(&out).contains("note: picodes:16: no basis classifier"),
        "{}",
        stderr(&out)
    );
}

/// `search --examples F --example-groups G` answers one query per group, each equal (ids and
/// scores) to a call with that group's rows alone: with random negatives (the same --seed per
/// set) and with per-group --negatives. `--seed` defaults to the engine's one default seed.
/// A group file of the wrong length, or a group without negatives, exits 1 naming the option.
#[test]
fn search_examples_batch_equals_one_call_per_set() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    ok(&[
        "train",
        "--data",
        PIXELS,
        "--pipeline",
        "pca-itq:32",
        "--out",
        s(&m),
    ]);
    let dir = tmp.path().join("idx");
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);
    let (x, y) = cli_support::digits_data();
    // Three sets (groups 7, 2, 9 in file order, interleaved rows), their negatives by group.
    let classes = [(7i64, 3i64), (2, 5), (9, 0)];
    let pick = |c: i64, skip: usize, n: usize| -> Vec<usize> {
        (0..y.len())
            .filter(|&i| y[i] == c)
            .skip(skip)
            .take(n)
            .collect()
    };
    let (mut pos_rows, mut pos_groups, mut neg_rows, mut neg_groups) =
        (vec![], vec![], vec![], vec![]);
    for j in 0..4 {
        for &(g, c) in &classes {
            pos_rows.push(pick(c, 0, 4)[j]);
            pos_groups.push(g);
        }
    }
    for &(g, c) in &classes {
        for r in pick((c + 1) % 10, 10, 6) {
            neg_rows.push(r);
            neg_groups.push(g);
        }
    }
    let save = |name: &str, rows: &[usize]| {
        let p = tmp.path().join(name);
        codedb_cli::io::write_npy_f32(&p, x.select(ndarray::Axis(0), rows).view()).unwrap();
        p
    };
    let save_ids = |name: &str, ids: &[i64]| {
        let p = tmp.path().join(name);
        codedb_cli::io::npy_write::write_npy_i64(&p, ids).unwrap();
        p
    };
    let (pos, gpos) = (
        save("pos.npy", &pos_rows),
        save_ids("gpos.npy", &pos_groups),
    );
    let (neg, gneg) = (
        save("neg.npy", &neg_rows),
        save_ids("gneg.npy", &neg_groups),
    );
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut a = vec!["search", s(&dir), "-k", "15", "--format", "json"];
        a.extend_from_slice(extra);
        json(&ok(&a))
    };
    let mut groups = classes.map(|(g, _)| g);
    groups.sort_unstable();
    for negatives in [false, true] {
        let mut batch_args = vec!["--examples", s(&pos), "--example-groups", s(&gpos)];
        if negatives {
            batch_args.extend(["--negatives", s(&neg), "--negative-groups", s(&gneg)]);
        } else {
            batch_args.extend(["--random-negatives", "200"]);
        }
        let batch = run(&batch_args);
        assert_eq!(batch.as_array().unwrap().len(), 3, "{batch}");
        for (q, g) in groups.iter().enumerate() {
            let rows: Vec<usize> = (0..pos_rows.len())
                .filter(|&i| pos_groups[i] == *g)
                .map(|i| pos_rows[i])
                .collect();
            let one = save(&format!("one_{g}.npy"), &rows);
            let mut args = vec!["--examples", s(&one)];
            let own;
            if negatives {
                let nr: Vec<usize> = (0..neg_rows.len())
                    .filter(|&i| neg_groups[i] == *g)
                    .map(|i| neg_rows[i])
                    .collect();
                own = save(&format!("neg_{g}.npy"), &nr);
                args.extend(["--negatives", s(&own)]);
            } else {
                args.extend(["--random-negatives", "200"]);
            }
            let single = run(&args);
            assert_eq!(
                batch[q]["results"], single[0]["results"],
                "group {g}, negatives {negatives}"
            );
            if !negatives {
                let mut seeded = args.clone();
                seeded.extend(["--seed", "1234"]);
                assert_eq!(run(&seeded), single, "--seed defaults to 1234");
            }
        }
    }
    let short = save_ids("short.npy", &pos_groups[..5]);
    fails(
        &[
            "search",
            s(&dir),
            "--examples",
            s(&pos),
            "--example-groups",
            s(&short),
        ],
        1,
        "--example-groups",
    );
    let other = save_ids("other.npy", &vec![7i64; neg_rows.len()]);
    fails(
        &[
            "search",
            s(&dir),
            "--examples",
            s(&pos),
            "--example-groups",
            s(&gpos),
            "--negatives",
            s(&neg),
            "--negative-groups",
            s(&other),
        ],
        1,
        "has no negatives",
    );
}
