//! `search --classes` / `--nprobe` on indexes with few or no inverted lists (issue 13, item 4):
//! an index built with `--labels` but without `--lists` has no lists, and a list-restricted
//! search there would scan every row — refused (exit 1) saying how to build lists; where only
//! some rows have no list, they are scanned (documented) and a note on stderr counts them; the
//! library refuses the same way (`SearchError::NoLists`) and counts them (`list_coverage`).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::PathBuf;
mod cli_support;
use cli_support::{build, codedb, digits_data, json, ok, s, search, train};

use codedb::Snapshot;
use codedb::{SearchError, SearchMode, SearchParams};
use ndarray::s;

#[test]
fn list_restricted_searches_need_lists_and_count_the_rows_without_one() {
    let (x, y) = digits_data();
    let tmp = tempfile::tempdir().unwrap();
    let file = |n: &str| -> PathBuf { tmp.path().join(n) };
    codedb_cli::io::write_npy_f32(file("db.npy"), x.slice(s![..1000, ..])).unwrap();
    codedb_cli::io::write_npy_i64(file("labels.npy"), &y[..1000]).unwrap();
    codedb_cli::io::write_npy_f32(file("more.npy"), x.slice(s![1000..1100, ..])).unwrap();
    codedb_cli::io::write_npy_f32(file("q.npy"), x.slice(s![1500..1520, ..])).unwrap();
    train(&file("db.npy"), "pca-itq:32", &file("m.model"));
    let (model, db, labels, q) = (
        file("m.model"),
        file("db.npy"),
        file("labels.npy"),
        file("q.npy"),
    );

    // --labels without --lists: a class table, but no row has a list.
    let nolists = file("nolists");
    build(&nolists, &model, &db, &["--labels", s(&labels)]);
    for restrict in [["--classes", "9,7"], ["--nprobe", "2"]] {
        let out = codedb(&[
            "search",
            s(&nolists),
            "--queries",
            s(&q),
            "-k",
            "5",
            restrict[0],
            restrict[1],
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{restrict:?}: {err}");
        assert!(
            err.contains(restrict[0])
                && err.contains("no inverted lists")
                && err.contains("--lists label|nearest")
                && err.contains("1000 live rows"),
            "{restrict:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "no results");
    }
    // The library says the same.
    let snap = Snapshot::open(&nolists).unwrap();
    let qx = x.slice(s![1500..1520, ..]);
    let e = snap
        .search(
            qx,
            &SearchParams::new(5, SearchMode::Hamming).lists(vec![9, 7]),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            SearchError::NoLists {
                argument: "lists",
                live_rows: 1000
            }
        ),
        "{e}"
    );
    let e = snap
        .search(qx, &SearchParams::new(5, SearchMode::Hamming).nprobe(2))
        .unwrap_err();
    assert!(
        matches!(
            e,
            SearchError::NoLists {
                argument: "nprobe",
                ..
            }
        ),
        "{e}"
    );
    let c = snap.list_coverage().unwrap();
    assert_eq!((c.listed_rows, c.unlisted_rows), (0, 1000));

    // Lists for the built rows, 100 more rows without: they are scanned, and counted.
    let some = file("some");
    build(
        &some,
        &model,
        &db,
        &["--labels", s(&labels), "--lists", "label"],
    );
    let quiet = search(&some, &q, &["-k", "5", "--classes", "9,7"]);
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("note"),
        "every row has a list"
    );
    ok(&["add", s(&some), "--data", s(&file("more.npy"))]);
    ok(&["delete", s(&some), "--ids", "1000,1001"]);
    for restrict in [["--classes", "9,7"], ["--nprobe", "2"]] {
        let out = ok(&[
            "search",
            s(&some),
            "--queries",
            s(&q),
            "-k",
            "1000",
            restrict[0],
            restrict[1],
            "--format",
            "json",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("note: 98 of the 1098 live rows have no list id"),
            "{restrict:?}: {err}"
        );
    }
    let out = search(
        &some,
        &q,
        &["-k", "2000", "--classes", "9,7", "--format", "json"],
    );
    let v = json(&out);
    for hit in v[0]["results"].as_array().unwrap() {
        let id = hit["id"].as_u64().unwrap() as usize;
        assert!(
            id >= 1000 || y[id] == 9 || y[id] == 7,
            "row {id} of class {}",
            y[id]
        );
    }
    let n = v[0]["results"].as_array().unwrap().len();
    let in_lists = y[..1000].iter().filter(|&&l| l == 9 || l == 7).count();
    assert_eq!(
        n,
        in_lists + 98,
        "classes 9 and 7 and the 98 live rows without a list"
    );
    let c = Snapshot::open(&some).unwrap().list_coverage().unwrap();
    assert_eq!((c.listed_rows, c.unlisted_rows), (1000, 98));
}
