//! `codedb spec --from-faiss` gives, for every row of the book's "Coming from FAISS" table, the
//! pipeline the table shows, or refuses naming the part the table shows; the test reads the
//! table from docs/faiss.md so the page and the translator cannot drift. Each translated SPEC
//! also trains on the digits where the digits' 64 dimensions allow it.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
mod cli_support;
use cli_support::{codedb, json, ok, s, stderr};

/// (FAISS string, Ok(spec) or Err(refused part)) for each row of the factory table.
fn table_rows() -> Vec<(String, Result<String, String>)> {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/faiss.md"))
            .unwrap();
    let start = page
        .find("| FAISS factory string | codedb pipeline |")
        .expect("docs/faiss.md has the factory table");
    let mut rows = Vec::new();
    for line in page[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line
            .split(" | ")
            .map(|c| c.trim_matches(['|', ' ']))
            .collect();
        let faiss = cells[0].trim_matches('`').to_string();
        let want = match cells[1].strip_prefix("refused: ") {
            Some(part) => Err(part.trim_matches('`').to_string()),
            None => Ok(cells[1].trim_matches('`').to_string()),
        };
        rows.push((faiss, want));
    }
    rows
}

#[test]
fn every_row_of_the_faiss_page_translates_as_shown() {
    let rows = table_rows();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    for (faiss, want) in &rows {
        let out = codedb(&["spec", "--from-faiss", faiss, "--json"]);
        match want {
            Ok(spec) => {
                assert_eq!(out.status.code(), Some(0), "{faiss}: {}", stderr(&out));
                let v = json(&out);
                assert_eq!(v["spec"].as_str(), Some(spec.as_str()), "{faiss}");
                assert_eq!(v["faiss"].as_str(), Some(faiss.as_str()));
                assert!(v["notes"].is_array());
            }
            Err(part) => {
                assert_eq!(out.status.code(), Some(1), "{faiss} must be refused");
                let err = stderr(&out);
                assert!(
                    err.contains(&format!("{part:?}")),
                    "{faiss}: the error must name {part:?}: {err}"
                );
                assert!(
                    out.stdout.is_empty(),
                    "{faiss}: nothing on stdout when refused"
                );
            }
        }
    }
}

#[test]
fn translated_specs_train_on_the_digits() {
    let tmp = tempfile::tempdir().unwrap();
    let (x, _) = cli_support::digits();
    // The digits have 64 dimensions: rows asking for more (ITQ128, LSH256, PCA to 64 then a
    // pipeline sized for more) are checked by the parser only.
    for (faiss, spec) in [
        ("PQ16", "pq:16x8"),
        ("PQ16x4fs", "pq4:16"),
        ("OPQ8_32,PQ8", "pca:32,opq:8x8"),
        ("PCAR32,PQ8", "pca:32,rr,pq:8x8"),
        ("IVF16,PQ8", "ivf:16,pq:8x8"),
        ("ITQ32,LSH", "pca-itq:32"),
        ("ITQ,LSH", "center,itq,bits"),
        ("LSH64r", "lsh:64"),
        ("SQfp16", "float16"),
    ] {
        let out = ok(&["spec", "--from-faiss", faiss]);
        let got = String::from_utf8(out.stdout).unwrap();
        assert_eq!(got.trim(), spec, "{faiss}");
        let m = tmp
            .path()
            .join(format!("{}.model", spec.replace([':', ','], "_")));
        ok(&[
            "train",
            "--data",
            s(&x),
            "--pipeline",
            got.trim(),
            "--out",
            s(&m),
        ]);
    }
}

#[test]
fn notes_go_to_stderr_and_the_spec_alone_to_stdout() {
    let out = ok(&["spec", "--from-faiss", "IVF256,PQ16,RFlat"]);
    assert_eq!(cli_support::stdout(&out), "ivf:256,pq:16x8\n");
    let err = stderr(&out);
    assert!(err.contains("note: ") && err.contains("--nprobe"), "{err}");
    assert!(err.contains("--rerank"), "{err}");
}

#[test]
fn lsh_without_bits_needs_the_dimension() {
    let out = codedb(&["spec", "--from-faiss", "LSH"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--dim"), "{}", stderr(&out));
    let out = ok(&["spec", "--from-faiss", "LSH", "--dim", "128"]);
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "lsh:128");
    // A dimension that is not a positive count is a usage error.
    assert_eq!(
        codedb(&["spec", "--from-faiss", "LSH", "--dim", "0"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(codedb(&["spec"]).status.code(), Some(2));
}
