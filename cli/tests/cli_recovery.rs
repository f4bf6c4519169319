//! A damaged newest manifest through the binary: every command that reads the index warns that
//! it serves an older version, every writer refuses and changes nothing, `versions` and
//! `verify` exit 1, and `codedb recover` is the explicit decision after which writers work.
//! Also: commands pointed at a directory that is not an index fail and create nothing there.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Output;

mod cli_support;
use cli_support::{
    build, codedb, digits, dir_bytes, flip_middle, json, ok, s, stderr, stdout, train,
};

const V4: &str = "v00000000000000000004.manifest";

/// Version 2: the digits with labels (one segment, a class table); 3: the digits again (the
/// log); 4: ids 10, 20, 30 (segment) and 1800 (log) deleted — two deletion bitmaps.
fn index_with_deletes_in_v4(tmp: &Path) -> PathBuf {
    let (pixels, labels) = digits();
    let model = tmp.join("m.model");
    let dir = tmp.join("idx");
    train(&pixels, "pca:16,float", &model);
    build(&dir, &model, &pixels, &["--labels", s(&labels)]);
    ok(&["add", s(&dir), "--data", s(&pixels)]);
    // Rows 10-30 count in their classes and there are no stored vectors: keep the classes.
    let o = ok(&[
        "delete",
        s(&dir),
        "--ids",
        "10,20,30,1800",
        "--keep-class-stats",
    ]);
    assert!(stdout(&o).contains("version 4"), "{}", stdout(&o));
    dir
}

fn assert_warns(o: &Output, what: &str) {
    assert_eq!(o.status.code(), Some(0), "{what}: {}", stderr(o));
    let e = stderr(o);
    assert!(
        e.contains("serving version 3")
            && e.contains(V4)
            && e.contains("--to-version 3")
            && e.contains("warning"),
        "{what} does not warn: {e:?}"
    );
}

#[test]
fn a_damaged_newest_manifest_warns_readers_stops_writers_until_recover() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = index_with_deletes_in_v4(tmp.path());
    let d = s(&dir);
    let dels_before = dir_bytes(&dir)
        .keys()
        .filter(|n| n.ends_with(".del"))
        .count();
    assert_eq!(dels_before, 2);
    flip_middle(&dir.join(V4));
    let before = dir_bytes(&dir);

    // Readers: served, with a warning every time.
    let q = s(&digits().0).to_string();
    assert_warns(
        &codedb(&["search", d, "--queries", &q, "-k", "3"]),
        "search",
    );
    assert_warns(
        &codedb(&["classify", d, "--data", &q, "--top", "1"]),
        "classify",
    );
    let o = codedb(&["inspect", d, "--json"]);
    assert_warns(&o, "inspect --json");
    let v = json(&o);
    assert_eq!(v["version"], 3);
    assert_eq!(v["skipped_manifests"][0]["version"], 4);
    assert_eq!(v["skipped_manifests"][0]["file"], V4);
    let o = codedb(&["inspect", d]);
    assert_warns(&o, "inspect");
    assert!(
        stdout(&o).contains("skipped    version 4"),
        "{}",
        stdout(&o)
    );

    // versions and verify report the damage and exit 1.
    let o = codedb(&["versions", d]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!("{V4}  DAMAGED: ")),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("--to-version 3"), "{}", stderr(&o));
    let o = codedb(&["versions", d, "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    // A build publishes its rows in its first manifest (version 2): look versions up by number.
    let version = |n: u64| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|e| e["version"] == n)
            .unwrap_or_else(|| panic!("no version {n} in {v}"))
            .clone()
    };
    assert!(
        version(4)["rows"].is_null(),
        "a damaged version's rows are unknown: {v}"
    );
    assert!(version(4)["error"].as_str().unwrap().contains("checksum"));
    assert_eq!(version(3)["rows"], 3594);
    let o = codedb(&["verify", d]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("do not read"), "{}", stdout(&o));

    // Writers: refused, and nothing in the directory changes (v4's bitmaps stay).
    for args in [
        vec!["add", d, "--data", &q],
        vec!["delete", d, "--ids", "1"],
        vec!["compact", d],
        vec!["compact", d, "--full"],
        vec!["gc", d],
        vec!["add-class", d, "--name", "new", "--data", &q],
    ] {
        let o = codedb(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("fell back to version 3") && e.contains("codedb recover"),
            "{args:?}: {e}"
        );
        assert_eq!(dir_bytes(&dir), before, "{args:?} changed the directory");
    }

    // The explicit decision.
    let o = codedb(&["recover", d, "--to-version", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("newest version that reads, 3"),
        "{}",
        stderr(&o)
    );
    let o = ok(&["recover", d, "--to-version", "3", "--json"]);
    let r = json(&o);
    assert_eq!(r["kept_version"], 3);
    assert_eq!(r["published_version"], 5);
    assert_eq!(r["version"], 5);
    assert_eq!(r["dropped"][0]["version"], 4);
    assert!(dir.join("recovered").join(V4).is_file());

    // Afterwards: no warning, writers work, versions are never reused.
    let o = ok(&["search", d, "--queries", &q, "-k", "3"]);
    assert_eq!(stderr(&o), "");
    ok(&["versions", d]);
    let o = ok(&["delete", d, "--ids", "10", "--keep-class-stats"]);
    assert!(stdout(&o).contains("version 6"), "{}", stdout(&o));
    ok(&["gc", d]);
    ok(&["verify", d]);
    let v = json(&ok(&["inspect", d, "--json"]));
    assert_eq!(v["skipped_manifests"], serde_json::json!([]));
    assert_eq!(v["recoveries"][0]["dropped"][0]["version"], 4);
}

#[test]
fn commands_on_a_directory_that_is_not_an_index_fail_and_create_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plain");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"not an index").unwrap();
    let d = s(&dir);
    let q = s(&digits().0).to_string();
    let o = codedb(&["versions", d]);
    assert_eq!(o.status.code(), Some(1), "versions: {}", stdout(&o));
    assert!(stderr(&o).contains("not a codedb index"), "{}", stderr(&o));
    for args in [
        vec!["add", d, "--data", &q],
        vec!["delete", d, "--ids", "1"],
        vec!["compact", d],
        vec!["gc", d],
        vec!["add-class", d, "--name", "x", "--data", &q],
        vec!["recover", d, "--to-version", "1"],
    ] {
        let o = codedb(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("not a codedb index"),
            "{args:?}: {}",
            stderr(&o)
        );
        let names: Vec<String> = dir_bytes(&dir).into_keys().collect();
        assert_eq!(names, vec!["notes.txt".to_string()], "{args:?}");
    }
}
