//! What a new user does first, through the binary: a class from the mean numpy saves
//! (`np.save(f, x.mean(axis=0))`, a 1-D array), a figure written where the user is rather than
//! into the checkout's `docs/img/`, and the demo's quality table as Markdown.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
use std::process::{Command, Output};

mod cli_support;
use cli_support::handmade::npy_bytes;
use cli_support::{
    PIXELS, codedb, codedb_env, digits_data, fails, json, ok, s, stderr, stdout, train,
};

/// A little-endian float32 `.npy` of `shape` holding `values`, as numpy writes it.
fn save_f32(path: &Path, shape: &str, values: &[f32]) {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, npy_bytes(1, &dict, &data)).unwrap();
}

/// The mean of the digits with label `class` (64 values).
fn digit_mean(class: i64) -> Vec<f32> {
    let (x, y) = digits_data();
    let mut sum = vec![0f32; x.ncols()];
    let mut n = 0f32;
    for (row, &l) in x.rows().into_iter().zip(&y) {
        if l == class {
            sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            n += 1.0;
        }
    }
    sum.iter().map(|s| s / n).collect()
}

/// Files in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Runs `codedb args…` in `cwd`.
fn codedb_in(cwd: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    out
}

/// A class from a 1-D mean file (shape (64,)) and one from a (1, 64) file both become classes
/// whose means classify the digits they were taken from; an index without labels so these are
/// its only classes.
#[test]
fn add_class_takes_the_1d_mean_numpy_saves_and_a_1_by_d_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, dir) = (tmp.path().join("m.model"), tmp.path().join("idx"));
    train(Path::new(PIXELS), "pca-itq:32", &m);
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);
    let zero = tmp.path().join("zero_mean.npy");
    save_f32(&zero, "(64,)", &digit_mean(0));
    let one = tmp.path().join("one_mean.npy");
    save_f32(&one, "(1, 64)", &digit_mean(1));
    let v = json(&ok(&[
        "add-class",
        s(&dir),
        "--name",
        "zero",
        "--mean",
        s(&zero),
        "--json",
    ]));
    assert_eq!(
        (v["name"].as_str(), v["count"].as_u64()),
        (Some("zero"), Some(1))
    );
    ok(&["add-class", s(&dir), "--name", "one", "--mean", s(&one)]);

    // The two means, given back as queries, are classified as their own classes.
    let both = tmp.path().join("both.npy");
    let mut q = digit_mean(0);
    q.extend(digit_mean(1));
    save_f32(&both, "(2, 64)", &q);
    let out = ok(&[
        "classify",
        s(&dir),
        "--data",
        s(&both),
        "--top",
        "1",
        "--format",
        "json",
    ]);
    let v = json(&out);
    let best: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["classes"][0]["name"].as_str().unwrap())
        .collect();
    assert_eq!(best, ["zero", "one"]);
}

/// A mean of the wrong length names the file and the dimension the model takes; a file of two
/// rows or a 3-D array is not a mean. Nothing is committed.
#[test]
fn add_class_mean_of_the_wrong_shape_names_the_file_and_the_dimension() {
    let tmp = tempfile::tempdir().unwrap();
    let (m, dir) = (tmp.path().join("m.model"), tmp.path().join("idx"));
    train(Path::new(PIXELS), "pca-itq:16", &m);
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);
    let versions = stdout(&ok(&["versions", s(&dir)]));

    let short = tmp.path().join("short_mean.npy");
    save_f32(&short, "(63,)", &[0.5; 63]);
    let out = fails(
        &["add-class", s(&dir), "--name", "c", "--mean", s(&short)],
        1,
        "short_mean.npy",
    );
    let err = stderr(&out);
    assert!(err.contains("63 columns") && err.contains("64-D"), "{err}");

    let two = tmp.path().join("two_rows.npy");
    save_f32(&two, "(2, 64)", &[0.5; 128]);
    let out = fails(
        &["add-class", s(&dir), "--name", "c", "--mean", s(&two)],
        1,
        "two_rows.npy",
    );
    assert!(stderr(&out).contains("one vector"), "{}", stderr(&out));

    let cube = tmp.path().join("cube.npy");
    save_f32(&cube, "(1, 1, 64)", &[0.5; 64]);
    fails(
        &["add-class", s(&dir), "--name", "c", "--mean", s(&cube)],
        1,
        "cube.npy",
    );
    let nan = tmp.path().join("nan_mean.npy");
    let mut v = vec![0.5f32; 64];
    v[3] = f32::NAN;
    save_f32(&nan, "(64,)", &v);
    fails(
        &["add-class", s(&dir), "--name", "c", "--mean", s(&nan)],
        1,
        "nan_mean.npy",
    );
    assert_eq!(stdout(&ok(&["versions", s(&dir)])), versions);
}

/// A bare `--plot` writes eval.svg in the current directory, and nothing else there.
#[test]
fn eval_bare_plot_writes_eval_svg_in_the_current_directory() {
    let tmp = tempfile::tempdir().unwrap();
    codedb_in(
        tmp.path(),
        &[
            "eval",
            "--data",
            PIXELS,
            "--pipelines",
            "lsh:16",
            "--queries",
            "50",
            "--recall",
            "1,10",
            "--plot",
        ],
    );
    assert_eq!(names(tmp.path()), ["eval.svg"]);
    let text = std::fs::read_to_string(tmp.path().join("eval.svg")).unwrap();
    assert!(
        text.starts_with("<svg") && text.contains("lsh:16"),
        "{text:.200}"
    );
}

/// `--plot DIR` (an existing directory) writes the command's default name inside it, and
/// `bench plot` without `--plot` writes scan.svg in the current directory.
#[test]
fn plot_into_a_directory_writes_the_default_name_there() {
    let tmp = tempfile::tempdir().unwrap();
    let figs = tmp.path().join("figs");
    std::fs::create_dir(&figs).unwrap();
    ok(&[
        "eval",
        "--data",
        PIXELS,
        "--pipelines",
        "lsh:16",
        "--queries",
        "50",
        "--plot",
        s(&figs),
    ]);
    assert_eq!(names(&figs), ["eval.svg"]);

    let results = tmp.path().join("scan.json");
    std::fs::write(
        &results,
        r#"[{"kind":"hamming64","codes":1000,"queries":10,"threads":1,"codes_per_s":1.0e9,"bandwidth_gb_per_s":8.0},
            {"kind":"hamming64","codes":10000,"queries":10,"threads":1,"codes_per_s":1.1e9,"bandwidth_gb_per_s":8.0}]"#,
    )
    .unwrap();
    ok(&["bench", "plot", "--from", s(&results), "--plot", s(&figs)]);
    assert_eq!(names(&figs), ["eval.svg", "scan.svg"]);
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir(&cwd).unwrap();
    codedb_in(&cwd, &["bench", "plot", "--from", s(&results)]);
    assert_eq!(names(&cwd), ["scan.svg"]);
    // A directory that does not exist is not created: the path fails before any work.
    let out = fails(
        &[
            "eval",
            "--data",
            PIXELS,
            "--pipelines",
            "lsh:16",
            "--plot",
            s(&tmp.path().join("no-such-dir/eval.svg")),
        ],
        1,
        "does not exist",
    );
    assert!(out.stdout.is_empty());
    assert!(!tmp.path().join("no-such-dir").exists());
}

/// `codedb demo --markdown` prints the quality table the docs show: one row per pipeline,
/// the same on every run (no timings), nothing else on stdout or stderr.
#[test]
fn demo_markdown_prints_the_quality_table() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |d: &str| {
        let out = codedb(&["demo", "--markdown", "--dir", s(&tmp.path().join(d))]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(out.stderr.is_empty(), "{}", stderr(&out));
        stdout(&out)
    };
    let table = run("a");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "| pipeline | bytes/code | mAP | recall@10 | class P@10 |",
            "|---|---:|---:|---:|---:|"
        ]
    );
    assert_eq!(lines.len(), 2 + 5, "{table}");
    assert!(
        lines[2].starts_with("| exact float (L2) | 256 | 1.000 | 1.000 |"),
        "{table}"
    );
    for (line, p) in lines[3..]
        .iter()
        .zip(["pca-itq:64", "pca-rr:64", "lsh:64", "pq:8x8"])
    {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 5, "{line}");
        assert_eq!((cells[0], cells[1]), (p, "8"), "{line}");
        for c in &cells[2..] {
            let v: f64 = c.parse().unwrap();
            assert!((0.0..=1.0).contains(&v) && c.len() == 5, "{line}");
        }
    }
    // The same figures as --json, rounded.
    let v = json(&codedb(&[
        "demo",
        "--json",
        "--dir",
        s(&tmp.path().join("j")),
    ]));
    let pq = &v["rows"][4];
    assert_eq!(pq["pipeline"], "pq:8x8");
    assert!(
        lines[6].contains(&format!("| {:.3} |", pq["recall_at_10"].as_f64().unwrap())),
        "{table}"
    );
    assert_eq!(run("b"), table, "the table is deterministic");
    assert!(
        tmp.path().join("b").read_dir().unwrap().next().is_some(),
        "--dir is kept"
    );
    // Without --dir the demo's temporary folder, which nothing printed names, is removed.
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let out = codedb_env(&["demo", "--markdown"], &[("TMPDIR", s(&scratch))]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), table);
    assert!(names(&scratch).is_empty(), "{:?}", names(&scratch));
    fails(&["demo", "--markdown", "--json"], 2, "--json");
}
