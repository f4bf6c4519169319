//! `codedb compact` and deleted rows: the default policy's threshold is stated, deleted rows it
//! keeps are reported, `--deleted-threshold` reclaims them and `--json` says why a segment was
//! rewritten.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
use std::process::Output;

mod cli_support;
use cli_support::{codedb, ok};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn compact_reports_deleted_rows_it_keeps_and_reclaims_them_on_request() {
    let pixels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/digits/pixels.npy");
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("m.model");
    let dir = tmp.path().join("idx");
    ok(&[
        "train",
        "--data",
        s(&pixels),
        "--pipeline",
        "pca:16,float",
        "--out",
        s(&model),
    ]);
    ok(&["build", s(&dir), "--model", s(&model), "--data", s(&pixels)]);
    ok(&["delete", s(&dir), "--ids", "10,20,30"]);

    let o = ok(&["compact", s(&dir)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("nothing to compact")
            && text.contains("3 deleted row(s) stay stored")
            && text.contains("20%")
            && text.contains("--deleted-threshold 0"),
        "{text}"
    );
    assert_eq!(
        json(&ok(&["compact", s(&dir), "--json"]))["deleted_rows_kept"],
        3
    );

    let r = json(&ok(&[
        "compact",
        s(&dir),
        "--deleted-threshold",
        "0",
        "--json",
    ]));
    assert_eq!(r["merges"][0]["reason"], "deletes", "{r}");
    assert_eq!(r["merges"][0]["dropped"], 3);
    assert_eq!(r["deleted_rows_kept"], 0);
    let v = json(&ok(&["inspect", s(&dir), "--json"]));
    assert_eq!(
        (v["rows"].as_u64(), v["deleted"].as_u64()),
        (Some(1794), Some(0))
    );

    for bad in ["1.5", "-0.1", "x"] {
        let o = codedb(&["compact", s(&dir), "--deleted-threshold", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
    let help = String::from_utf8(ok(&["compact", "--help"]).stdout).unwrap();
    assert!(
        help.contains("20%") && help.contains("--deleted-threshold"),
        "{help}"
    );
}
