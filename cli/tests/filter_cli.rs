//! `codedb search --where / --ids / --ids-file` through the binary: the same lists as the
//! library's filtered search (every query kind that takes a filter: k-NN, re-ranked, radius,
//! classifier), and malformed filters refused with exit 2 naming the character column.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{codedb, fails, json, ok, s, search, tmp_digits_index};

use codedb::{IdSelector, RowFilter, SearchMode, SearchParams, Snapshot};
use ndarray::s as sl;

fn library(
    dir: &std::path::Path,
    q: ndarray::ArrayView2<f32>,
    p: &SearchParams,
) -> serde_json::Value {
    let hits = Snapshot::open(dir).unwrap().search(q, p).unwrap();
    serde_json::json!(
        hits.iter()
            .enumerate()
            .map(|(i, l)| serde_json::json!({"query": i, "results": l}))
            .collect::<Vec<_>>()
    )
}

#[test]
fn where_and_ids_give_the_library_s_filtered_lists() {
    let (tmp, _, dir) = tmp_digits_index("pca-itq:32");
    let data = cli_support::digits().0;
    let x = codedb_cli::io::load_vectors(&data).unwrap();
    let q = x.slice(sl![0..9, ..]).to_owned();
    let qf = tmp.path().join("q.npy");
    codedb_cli::io::write_npy_f32(&qf, q.view()).unwrap();
    let expr = "(id >= 100 AND id < 900) OR id IN (3, 7, 1500)";
    let o = ok(&[
        "search",
        s(&dir),
        "--queries",
        s(&qf),
        "-k",
        "8",
        "--where",
        expr,
        "--format",
        "json",
    ]);
    let p = SearchParams::new(8, SearchMode::Hamming).filter(RowFilter::parse(expr).unwrap());
    assert_eq!(json(&o), library(&dir, q.view(), &p));
    for h in json(&o).as_array().unwrap() {
        for r in h["results"].as_array().unwrap() {
            let id = r["id"].as_u64().unwrap();
            assert!(
                (100..900).contains(&id) || [3, 7, 1500].contains(&id),
                "{id}"
            );
        }
    }
    // --ids and --ids-file together: the union of the ids, AND the expression.
    let f = tmp.path().join("ids.txt");
    std::fs::write(&f, "5\n\n 600 \n700\n").unwrap();
    let o = ok(&[
        "search",
        s(&dir),
        "--queries",
        s(&qf),
        "-k",
        "3",
        "--ids",
        "3,9,650",
        "--ids-file",
        s(&f),
        "--where",
        "id != 9",
        "--format",
        "json",
    ]);
    let p = SearchParams::new(3, SearchMode::Hamming).filter(
        RowFilter::parse("id != 9")
            .unwrap()
            .and_ids(IdSelector::new([3, 9, 650, 5, 600, 700])),
    );
    assert_eq!(json(&o), library(&dir, q.view(), &p));
    // Radius lookups filter too: every hit passes.
    let o = search(
        &dir,
        &qf,
        &["--radius", "2", "--where", "id < 50", "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0));
    for h in json(&o).as_array().unwrap() {
        for r in h["results"].as_array().unwrap() {
            assert!(r["id"].as_u64().unwrap() < 50);
        }
    }
}

#[test]
fn malformed_filters_are_usage_errors_naming_the_column() {
    let (tmp, _, dir) = tmp_digits_index("pca-itq:16");
    let data = cli_support::digits().0;
    let d = s(&dir);
    let qs = s(&data);
    fails(
        &["search", d, "--queries", qs, "--where", "id >= "],
        2,
        "column 7",
    );
    fails(
        &[
            "search",
            d,
            "--queries",
            qs,
            "--where",
            "id = 1 AND year > 3",
        ],
        2,
        "no column named \"year\"",
    );
    fails(
        &["search", d, "--queries", qs, "--where", "id = 'x'"],
        2,
        "column 6",
    );
    fails(
        &["search", d, "--queries", qs, "--where", "(id = 1"],
        2,
        "expected ')'",
    );
    fails(&["search", d, "--queries", qs, "--ids", "3,x"], 2, "--ids");
    let f = tmp.path().join("bad-ids.txt");
    std::fs::write(&f, "4\n-1\n").unwrap();
    fails(
        &["search", d, "--queries", qs, "--ids-file", s(&f)],
        1,
        "line 2",
    );
    fails(
        &[
            "search",
            d,
            "--queries",
            qs,
            "--ids-file",
            "/nonexistent/ids",
        ],
        1,
        "--ids-file",
    );
    let o = codedb(&[
        "search",
        d,
        "--queries",
        qs,
        "--where",
        "FALSE",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        json(&o)
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["results"].as_array().unwrap().is_empty())
    );
}
