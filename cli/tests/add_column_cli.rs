//! `codedb add-column` through the binary: the column joins the schema at a new version, rows
//! stored before it read the default (as the library's `Index::add_column` and Python's
//! `Index.add_column` give it), and a bad type, name or default is a usage error (exit 2) that
//! changes nothing.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{fails, json, ok, s, stdout, train};

use codedb::{ColumnType, Snapshot, Value};

fn built(tmp: &std::path::Path) -> std::path::PathBuf {
    let data = cli_support::digits().0;
    let m = tmp.join("m.model");
    train(&data, "pca-itq:32", &m);
    let attrs = tmp.join("a.jsonl");
    let x = codedb_cli::io::load_vectors(&data).unwrap();
    let text: String = (0..x.nrows())
        .map(|r| format!("{{\"year\": {}}}\n", 2000 + r % 20))
        .collect();
    std::fs::write(&attrs, text).unwrap();
    let dir = tmp.join("idx");
    ok(&[
        "build",
        s(&dir),
        "--model",
        s(&m),
        "--data",
        s(&data),
        "--attributes",
        s(&attrs),
    ]);
    dir
}

#[test]
fn a_new_column_is_committed_and_older_rows_read_its_default() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = built(tmp.path());
    let o = ok(&[
        "add-column",
        s(&dir),
        "--name",
        "source",
        "--type",
        "string",
        "--default",
        "flickr",
        "--json",
    ]);
    let j = json(&o);
    assert_eq!(j["name"], "source");
    assert_eq!(j["type"], "string");
    assert_eq!(j["default"], "flickr");
    assert_eq!(j["version"], 3);
    let o = ok(&[
        "add-column",
        s(&dir),
        "--name",
        "taken",
        "--type",
        "timestamp",
        "--default",
        "2010-01-01T12:00",
    ]);
    assert!(
        stdout(&o).contains("added column taken (timestamp) at version 4"),
        "{}",
        stdout(&o)
    );
    ok(&[
        "add-column",
        s(&dir),
        "--name",
        "kw",
        "--type",
        "tags",
        "--default",
        "b, a,b",
    ]);
    let snap = Snapshot::open(&dir).unwrap();
    let schema = snap.attribute_schema();
    let (i, t) = schema.find("taken").unwrap();
    assert_eq!(t, ColumnType::Timestamp);
    assert_eq!(
        schema.default_value(i),
        Some(&Value::Timestamp(
            codedb::parse_timestamp("2010-01-01T12:00", 0).unwrap()
        ))
    );
    let (i, _) = schema.find("kw").unwrap();
    assert_eq!(
        schema.default_value(i),
        Some(&Value::Tags(vec!["a".into(), "b".into()]))
    );
    // Every row stored before the column reads its default; a filter tests it.
    let q = cli_support::digits().0;
    let search = |filter: &str| {
        let args = [
            "search",
            s(&dir),
            "--queries",
            s(&q),
            "-k",
            "3",
            "--where",
            filter,
        ];
        json(&ok(&[
            &args[..],
            &["--with", "source,year", "--format", "json"],
        ]
        .concat()))
    };
    let first = &search("source = 'flickr'").as_array().unwrap()[0].clone();
    assert!(first.to_string().contains("\"flickr\""), "{first}");
    let none = search("source = 'web'").to_string();
    assert!(!none.contains("\"id\""), "no row has source 'web': {none}");
}

#[test]
fn a_bad_column_is_a_usage_error_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = built(tmp.path());
    let cases: [(&[&str], &str); 6] = [
        (&["--name", "w", "--type", "integer"], "integer"),
        (
            &["--name", "w", "--type", "int", "--default", "1.5"],
            "expected an integer",
        ),
        (
            &["--name", "w", "--type", "bool", "--default", "1"],
            "expected true or false",
        ),
        (
            &[
                "--name",
                "w",
                "--type",
                "timestamp",
                "--default",
                "2010-13-01",
            ],
            "month",
        ),
        (&["--name", "year", "--type", "int"], "year"),
        (&["--name", "bad name", "--type", "int"], "bad name"),
    ];
    for (args, needle) in cases {
        let mut all = vec!["add-column", s(&dir)];
        all.extend_from_slice(args);
        fails(&all, 2, needle);
    }
    let o = ok(&["versions", s(&dir), "--json"]);
    let newest = json(&o)
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .max();
    assert_eq!(newest, Some(2), "nothing was committed");
}
