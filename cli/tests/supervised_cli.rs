//! `codedb train --labels [--view]` with the supervised projections of Gordo et al. CVPR 2012
//! (`metric:R`, `attributes:R`, `cca:R`, `jscl:R`): trained models build and search like any
//! other; bad labels, views and ranks fail with exit 1 (2 for usage) and write nothing.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;

use cli_support::{build, digits, fails, json, ok, s, search};

/// An int64 `.npy` vector.
fn write_labels(path: &std::path::Path, v: &[i64]) {
    let dict = format!(
        "{{'descr': '<i8', 'fortran_order': False, 'shape': ({},), }}",
        v.len()
    );
    let data: Vec<u8> = v.iter().flat_map(|l| l.to_le_bytes()).collect();
    std::fs::write(path, cli_support::handmade::npy_bytes(1, &dict, &data)).unwrap();
}

/// A float32 `.npy` matrix.
fn write_matrix(path: &std::path::Path, rows: usize, cols: usize, v: &[f32]) {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let data: Vec<u8> = v.iter().flat_map(|l| l.to_le_bytes()).collect();
    std::fs::write(path, cli_support::handmade::npy_bytes(1, &dict, &data)).unwrap();
}

#[test]
fn supervised_pipelines_train_build_and_search() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    for (i, spec) in [
        "jscl:16,pq:2x8",
        "cca:8,itq,bits",
        "attributes:8,float",
        "metric:8,float",
    ]
    .iter()
    .enumerate()
    {
        let m = tmp.path().join(format!("m{i}.model"));
        let out = ok(&[
            "train",
            "--data",
            s(&x),
            "--labels",
            s(&y),
            "--pipeline",
            spec,
            "--out",
            s(&m),
            "--json",
        ]);
        let v = json(&out);
        assert_eq!(v["input_dim"], 64, "{spec}");
        if spec.starts_with("cca") {
            assert_eq!(
                v["cca_correlations"].as_array().unwrap().len(),
                10,
                "{spec}"
            );
        }
        if spec.starts_with("jscl") || spec.starts_with("metric") {
            assert!(
                v["sgd_choice"]["learning_rate"].as_f64().unwrap() > 0.0,
                "{spec}"
            );
        }
        // inspect names the method behind the learned linear stage (format 1.6 origin).
        let method = spec.split(',').next().unwrap();
        let text = cli_support::stdout(&ok(&["inspect", s(&m)]));
        assert!(
            text.contains(&format!("trained as {spec} (seed 1234)"))
                && text.contains(&format!("(learned by {method})")),
            "{spec}: {text}"
        );
        let dir = tmp.path().join(format!("idx{i}"));
        build(&dir, &m, &x, &["--labels", s(&y)]);
        let r = json(&search(&dir, &x, &["-k", "3", "--format", "json"]));
        assert!(!r.as_array().unwrap().is_empty(), "{spec}");
        let report = json(&ok(&["inspect", s(&dir), "--json"]));
        assert_eq!(report["model"]["trained_as"], *spec, "{spec}");
    }
}

#[test]
fn bad_labels_views_and_ranks_fail_and_write_nothing() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    let train = |extra: &[&str], spec: &str| -> Vec<String> {
        let mut a: Vec<String> = ["train", "--data", s(&x), "--pipeline", spec, "--out", s(&m)]
            .iter()
            .map(|v| v.to_string())
            .collect();
        a.extend(extra.iter().map(|v| v.to_string()));
        a
    };
    let run = |a: Vec<String>, code: i32, needle: &str| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fails(&a, code, needle);
        assert!(!m.exists(), "{a:?} wrote the model");
    };
    // No labels: a usage error.
    run(train(&[], "jscl:8,float"), 2, "pass --labels");
    // Labels of the wrong length.
    let short = tmp.path().join("short.npy");
    write_labels(&short, &[0, 1, 2]);
    run(
        train(&["--labels", s(&short)], "cca:4,float"),
        1,
        "3 labels for 1797 rows",
    );
    // One class.
    let one = tmp.path().join("one.npy");
    write_labels(&one, &[4; 1797]);
    run(
        train(&["--labels", s(&one)], "metric:8,float"),
        1,
        "at least 2 classes, got 1",
    );
    // R > D, and one-hot CCA with R > classes − 1.
    run(
        train(&["--labels", s(&y)], "jscl:65,float"),
        1,
        "R must be between 1 and 64",
    );
    run(
        train(&["--labels", s(&y)], "cca:10,float"),
        1,
        "classes − 1 = 9",
    );
    // A view with the wrong row count, and one with a NaN.
    let small = tmp.path().join("small.npy");
    write_matrix(&small, 3, 2, &[0.0; 6]);
    run(
        train(&["--view", s(&small)], "cca:1,float"),
        1,
        "3 rows for 1797 rows of --data",
    );
    let nan = tmp.path().join("nan.npy");
    let mut v = vec![1.0f32; 1797 * 2];
    v[2 * 100 + 1] = f32::NAN;
    write_matrix(&nan, 1797, 2, &v);
    run(train(&["--view", s(&nan)], "cca:1,float"), 1, "row 100");
}

/// `--cca-rho auto` chooses ρ on held-out rows and reports every trial; a list does the same
/// over its values; a malformed value is a usage error.
#[test]
fn cca_rho_auto_is_chosen_and_reported() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    let args = |rho: &'static str| -> Vec<String> {
        [
            "train",
            "--data",
            s(&x),
            "--labels",
            s(&y),
            "--pipeline",
            "cca:8,itq,bits",
            "--out",
            s(&m),
            "--force",
            "--json",
            "--cca-rho",
            rho,
        ]
        .iter()
        .map(|v| v.to_string())
        .collect()
    };
    let run = |rho| {
        let a = args(rho);
        json(&ok(&a.iter().map(String::as_str).collect::<Vec<_>>()))
    };
    let v = run("auto");
    let c = &v["cca_rho_choice"];
    assert_eq!(c["trials"].as_array().unwrap().len(), 8, "{v}");
    let chosen = c["rho"].as_f64().unwrap();
    let v2 = run("0.01,100");
    let c2 = &v2["cca_rho_choice"];
    assert_eq!(c2["trials"].as_array().unwrap().len(), 2, "{v2}");
    assert!(chosen > 0.0 && c2["rho"].as_f64().unwrap() > 0.0);
    assert!(run("0.5")["cca_rho_choice"].is_null());
    let bad = args("1,x");
    fails(
        &bad.iter().map(String::as_str).collect::<Vec<_>>(),
        2,
        "'x'",
    );
}

/// `--groups` (alone or with a ρ list): ρ chosen by the instance mAP of held-out groups and
/// reported as such; groups of the wrong length fail with exit 1 naming them and write
/// nothing.
#[test]
fn cca_rho_is_chosen_on_instance_groups() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    // The digits' rows in pairs of the same class stand in for two views of one item; the
    // first 797 rows have no group.
    let labels: Vec<i64> = codedb_cli::io::load_labels(&y).unwrap();
    let mut groups = vec![-1i64; labels.len()];
    let mut open: std::collections::HashMap<i64, usize> = Default::default();
    let mut next = 0i64;
    for i in 797..labels.len() {
        match open.remove(&labels[i]) {
            Some(j) => {
                groups[j] = next;
                groups[i] = next;
                next += 1;
            }
            None => {
                open.insert(labels[i], i);
            }
        }
    }
    let g = tmp.path().join("groups.npy");
    write_labels(&g, &groups);
    let train = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "train",
            "--data",
            s(&x),
            "--labels",
            s(&y),
            "--pipeline",
            "cca:8,float",
            "--out",
            s(&m),
            "--json",
        ]
        .iter()
        .map(|v| v.to_string())
        .collect();
        a.extend(extra.iter().map(|v| v.to_string()));
        a
    };
    let a = train(&["--groups", s(&g), "--cca-rho", "0.0001,1,100"]);
    let v = json(&ok(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    let c = &v["cca_rho_choice"];
    assert_eq!(c["validation"], "instances", "{v}");
    assert_eq!(c["validation_groups"].as_u64().unwrap(), next as u64, "{v}");
    assert_eq!(c["train_rows"], 1797 - 2 * next, "{v}");
    let trials = c["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3);
    let best = trials
        .iter()
        .map(|t| t["instance_map"].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    let kept = trials.iter().find(|t| t["rho"] == c["rho"]).unwrap();
    assert_eq!(kept["instance_map"].as_f64().unwrap(), best, "{v}");
    std::fs::remove_file(&m).unwrap();
    let run = |a: Vec<String>, needle: &str| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        fails(&a, 1, needle);
        assert!(!m.exists(), "{a:?} wrote the model");
    };
    // --groups alone: ρ chosen on them from the `auto` grid.
    let v = json(&ok(&train(&["--groups", s(&g)])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()));
    let c = &v["cca_rho_choice"];
    assert_eq!(c["validation"], "instances", "{v}");
    assert_eq!(c["trials"].as_array().unwrap().len(), 8, "{v}");
    std::fs::remove_file(&m).unwrap();
    let short = tmp.path().join("short.npy");
    write_labels(&short, &[0, 0, 1]);
    run(
        train(&["--groups", s(&short), "--cca-rho", "auto"]),
        "3 group ids for 1797 rows",
    );
}
