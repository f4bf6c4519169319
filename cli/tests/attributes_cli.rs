//! `--attributes` (build, add), `--schema` (build) and `search --with` through the binary: the
//! stored columns filter like the library's, come back beside the hits (TSV and JSON),
//! malformed files fail naming the line and the column with nothing written, and unknown names
//! are usage errors (exit 2).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{fails, json, ok, s, stdout, train};

use codedb::{RowFilter, SearchMode, SearchParams, Snapshot};
use ndarray::s as sl;

/// Row `r`'s JSON line (year 2000 + r % 20, tags by r % 3, licence only on even rows).
fn line(r: usize) -> String {
    let tags = match r % 3 {
        0 => r#"["cat"]"#,
        1 => r#"["cat", "dog"]"#,
        _ => "[]",
    };
    let licence = if r.is_multiple_of(2) {
        format!(r#", "licence": "{}""#, ["cc0", "cc-by"][r % 4 / 2])
    } else {
        String::new()
    };
    format!(
        r#"{{"year": {}, "tags": {tags}{licence}, "score": {}.5}}"#,
        2000 + r % 20,
        r % 7
    )
}

fn write_lines(path: &std::path::Path, rows: std::ops::Range<usize>) {
    let text: String = rows.map(|r| line(r) + "\n").collect();
    std::fs::write(path, text).unwrap();
}

#[test]
fn build_add_filter_and_show_attribute_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let data = cli_support::digits().0;
    let x = codedb_cli::io::load_vectors(&data).unwrap();
    let (first, rest) = (tmp.path().join("a.npy"), tmp.path().join("b.npy"));
    codedb_cli::io::write_npy_f32(&first, x.slice(sl![0..1500, ..])).unwrap();
    codedb_cli::io::write_npy_f32(&rest, x.slice(sl![1500.., ..])).unwrap();
    let m = tmp.path().join("m.model");
    train(&data, "pca-itq:32", &m);
    let (fa, fb) = (tmp.path().join("a.jsonl"), tmp.path().join("b.jsonl"));
    write_lines(&fa, 0..1500);
    write_lines(&fb, 1500..x.nrows());
    let dir = tmp.path().join("idx");
    let o = ok(&[
        "build",
        s(&dir),
        "--model",
        s(&m),
        "--data",
        s(&first),
        "--attributes",
        s(&fa),
    ]);
    // The inferred columns are stated.
    for c in ["year:int", "tags:tags", "licence:string", "score:float"] {
        assert!(stdout(&o).contains(c), "{c}: {}", stdout(&o));
    }
    ok(&["add", s(&dir), "--data", s(&rest), "--attributes", s(&fb)]);
    let o = ok(&["inspect", s(&dir), "--json"]);
    let mut cols: Vec<String> = json(&o)["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c["name"].as_str().unwrap(),
                c["type"].as_str().unwrap()
            )
        })
        .collect();
    cols.sort();
    assert_eq!(
        cols,
        ["licence:string", "score:float", "tags:tags", "year:int"]
    );
    // --where over the stored columns equals the library's filtered search.
    let q = x.slice(sl![0..5, ..]).to_owned();
    let qf = tmp.path().join("q.npy");
    codedb_cli::io::write_npy_f32(&qf, q.view()).unwrap();
    let expr = "year >= 2010 AND tags HAS 'dog' AND licence IN ('cc0', '')";
    let o = ok(&[
        "search",
        s(&dir),
        "--queries",
        s(&qf),
        "-k",
        "6",
        "--where",
        expr,
        "--with",
        "year,tags,licence",
        "--format",
        "json",
    ]);
    let got = json(&o);
    let snap = Snapshot::open(&dir).unwrap();
    let p = SearchParams::new(6, SearchMode::Hamming).filter(RowFilter::parse(expr).unwrap());
    let want = snap.search(q.view(), &p).unwrap();
    for (qi, l) in want.iter().enumerate() {
        let res = got[qi]["results"].as_array().unwrap();
        assert_eq!(res.len(), l.len());
        for (h, r) in l.iter().zip(res) {
            assert_eq!(r["id"].as_u64(), Some(h.id));
            let row = h.id as usize;
            let a = &r["attributes"];
            assert_eq!(a["year"].as_i64(), Some(2000 + (row % 20) as i64));
            assert!(a["year"].as_i64().unwrap() >= 2010);
            assert_eq!(a["tags"], serde_json::json!(["cat", "dog"]));
            // Odd rows left licence out: the default, the empty string.
            let lic = if row.is_multiple_of(2) {
                ["cc0", "cc-by"][row % 4 / 2]
            } else {
                ""
            };
            assert_eq!(a["licence"].as_str(), Some(lic));
        }
    }
    // TSV: the columns after the score, tags joined by |.
    let o = ok(&[
        "search",
        s(&dir),
        "--queries",
        s(&qf),
        "-k",
        "2",
        "--where",
        "tags HAS 'dog'",
        "--with",
        "tags,score",
    ]);
    let text = stdout(&o);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("query\trank\tid\tscore\ttags\tscore"));
    for l in lines {
        let f: Vec<&str> = l.split('\t').collect();
        let row: usize = f[2].parse().unwrap();
        assert_eq!(f[4], "cat|dog");
        assert_eq!(f[5], format!("{}.5", row % 7));
    }
    // Unknown columns are usage errors naming them.
    fails(
        &[
            "search",
            s(&dir),
            "--queries",
            s(&qf),
            "--with",
            "year,yaer",
        ],
        2,
        "--with year,yaer: the index has no attribute column \"yaer\"",
    );
    fails(
        &[
            "search",
            s(&dir),
            "--queries",
            s(&qf),
            "--where",
            "yaer > 1",
        ],
        2,
        "no column named \"yaer\"",
    );
}

#[test]
fn malformed_attributes_fail_naming_line_and_column_with_nothing_written() {
    let tmp = tempfile::tempdir().unwrap();
    let data = cli_support::digits().0;
    let x = codedb_cli::io::load_vectors(&data).unwrap();
    let few = tmp.path().join("few.npy");
    codedb_cli::io::write_npy_f32(&few, x.slice(sl![0..4, ..])).unwrap();
    let m = tmp.path().join("m.model");
    train(&data, "pca-itq:32", &m);
    let dir = tmp.path().join("idx");
    let f = tmp.path().join("a.jsonl");
    let build = |extra: &[&str], code: i32, needle: &str| {
        let mut a = vec!["build", s(&dir), "--model", s(&m), "--data", s(&few)];
        a.extend_from_slice(extra);
        fails(&a, code, needle);
        assert!(!dir.exists(), "nothing written for {extra:?}");
    };
    std::fs::write(&f, "{\"year\": 1}\n{\"year\": 1.5}\n{}\n{}\n").unwrap();
    build(
        &["--attributes", s(&f)],
        1,
        "line 2: column \"year\" (int): 1.5 is not an integer",
    );
    std::fs::write(&f, "{\"year\": 1}\n{}\n{}\n").unwrap();
    build(
        &["--attributes", s(&f)],
        1,
        "3 lines (one JSON object per row), the data has 4 rows",
    );
    std::fs::write(&f, "{\"t\": \"2010-13-01\"}\n{}\n{}\n{}\n").unwrap();
    build(
        &["--attributes", s(&f), "--schema", "t:timestamp"],
        1,
        "line 1: column \"t\" (timestamp)",
    );
    std::fs::write(&f, "{\"year\": 1}\n{\"x\": 2}\n{}\n{}\n").unwrap();
    build(
        &["--attributes", s(&f), "--schema", "year:int"],
        1,
        "line 2: column \"x\": the index has no such column",
    );
    build(
        &["--schema", "year:integer"],
        2,
        "--schema \"year:integer\"",
    );
    build(&["--schema", "id:int"], 2, "--schema \"id:int\"");
    // With a timestamp schema the ISO dates parse; a filter then compares them.
    std::fs::write(
        &f,
        "{\"t\": \"2010-01-01\"}\n{\"t\": 1262304000000001}\n{}\n{\"t\": \"2011-06-01T12:00Z\"}\n",
    )
    .unwrap();
    ok(&[
        "build",
        s(&dir),
        "--model",
        s(&m),
        "--data",
        s(&few),
        "--attributes",
        s(&f),
        "--schema",
        "t:timestamp",
    ]);
    let o = ok(&[
        "search",
        s(&dir),
        "--queries",
        s(&few),
        "-k",
        "4",
        "--where",
        "t >= '2010-01-01'",
        "--with",
        "t",
        "--format",
        "json",
    ]);
    let mut ids: Vec<u64> = json(&o)[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 3]);
    // add: a file that does not fit the index's columns stages nothing.
    std::fs::write(&f, "{\"t\": true}\n{}\n{}\n{}\n").unwrap();
    fails(
        &["add", s(&dir), "--data", s(&few), "--attributes", s(&f)],
        1,
        "line 1: column \"t\" (timestamp): true is not a timestamp",
    );
    assert_eq!(Snapshot::open(&dir).unwrap().live_rows(), 4);
}
