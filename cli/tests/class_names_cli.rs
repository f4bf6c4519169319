//! Class names and the terminal (issue 13, item 9): `add-class` refuses a name with a control
//! character (tab, newline, ESC, …) naming `--name`, and TSV and text output escape any that
//! arrive from a file written before that rule, so columns stay columns and no raw escape
//! sequence reaches the terminal; JSON keeps the name as it is.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::PathBuf;
mod cli_support;
use cli_support::{build, classify, codedb, digits_data, json, ok, s, train};

use codedb::Snapshot;
use codedb::format::ClassTable;
use ndarray::s;

const EVIL: &str = "evil\tname\n\x1b[31mred\\";

#[test]
fn control_characters_in_class_names_are_refused_and_escaped_on_output() {
    let (x, y) = digits_data();
    let tmp = tempfile::tempdir().unwrap();
    let file = |n: &str| -> PathBuf { tmp.path().join(n) };
    codedb_cli::io::write_npy_f32(file("db.npy"), x.slice(s![..600, ..])).unwrap();
    codedb_cli::io::write_npy_i64(file("labels.npy"), &y[..600]).unwrap();
    codedb_cli::io::write_npy_f32(file("q.npy"), x.slice(s![600..640, ..])).unwrap();
    codedb_cli::io::write_npy_f32(file("one.npy"), x.slice(s![700..701, ..])).unwrap();
    train(&file("db.npy"), "pca:16,float", &file("m.model"));
    let idx = file("idx");
    build(
        &idx,
        &file("m.model"),
        &file("db.npy"),
        &["--labels", s(&file("labels.npy"))],
    );
    let version = Snapshot::open(&idx).unwrap().version();
    for bad in [
        "tab\there",
        "new\nline",
        "esc\x1b[2J",
        "bell\x07",
        "c1\u{9b}31m",
    ] {
        let out = codedb(&[
            "add-class",
            s(&idx),
            "--name",
            bad,
            "--mean",
            s(&file("one.npy")),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {err}");
        assert!(
            err.contains("--name") && err.contains("control character"),
            "{bad:?}: {err}"
        );
        assert!(
            !err.contains('\x1b') && !err.contains('\x07'),
            "the error itself is escaped"
        );
    }
    assert_eq!(
        Snapshot::open(&idx).unwrap().version(),
        version,
        "nothing committed"
    );

    // A class table written before the rule: class 0 renamed in place.
    let snap = Snapshot::open(&idx).unwrap();
    let cls = idx.join(&snap.manifest().class_files[0].file.name);
    drop(snap);
    let mut t = ClassTable::open(&cls).unwrap();
    t.classes.iter_mut().find(|c| c.id == 0).unwrap().name = EVIL.into();
    let mut perm = std::fs::metadata(&cls).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perm.set_readonly(false);
    std::fs::set_permissions(&cls, perm).unwrap();
    std::fs::write(&cls, t.to_bytes().unwrap()).unwrap();
    ok(&["verify", s(&idx)]);

    let out = classify(&idx, &file("q.npy"), &["--top", "10"]);
    let tsv = String::from_utf8(out.stdout).unwrap();
    assert!(!tsv.contains('\x1b'), "no raw ESC on stdout");
    let lines: Vec<&str> = tsv.lines().collect();
    assert_eq!(
        lines.len(),
        1 + 40 * 10,
        "one line per (row, class) plus the header"
    );
    for l in &lines {
        assert_eq!(l.split('\t').count(), 5, "five columns: {l:?}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.split('\t').nth(3) == Some("evil\\tname\\n\\u{1b}[31mred\\\\")),
        "escaped name"
    );
    let out = classify(&idx, &file("q.npy"), &["--top", "10", "--format", "json"]);
    let v = json(&out);
    let names: Vec<&str> = v[0]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&EVIL), "JSON keeps the name: {names:?}");
    let out = ok(&["inspect", s(&cls)]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\x1b') && text.contains("evil\\tname"),
        "{text}"
    );
}
