//! What README.md and the book (docs/) show a new user is what the CLI does: the demo's table is
//! the demo's output, the `train --from-index` pipelines train, the `classify --format json`
//! example has the real output's keys in the real order, the demo prints plain text, and the
//! Fashion-MNIST path says which package provides it.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
mod cli_support;
use cli_support::{classify, codedb, digits, ok, s, tmp_digits_index};

/// README.md and every page of the book, one after the other.
fn readme() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    for p in pages {
        text.push('\n');
        text.push_str(&std::fs::read_to_string(p).unwrap());
    }
    text
}

/// The demo's quality table in docs/getting-started.md is what `codedb demo --markdown` prints,
/// line for line (the demo is seeded; the table has no timings).
#[test]
fn the_books_demo_table_is_the_demos_output() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("docs/getting-started.md")).unwrap();
    let start = page
        .find("| pipeline |")
        .expect("the getting-started page shows the demo's table");
    let shown: Vec<&str> = page[start..]
        .lines()
        .take_while(|l| l.starts_with('|'))
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let out = ok(&["demo", "--markdown", "--dir", s(&tmp.path().join("d"))]);
    let printed = String::from_utf8(out.stdout).unwrap();
    let printed: Vec<&str> = printed.lines().collect();
    assert_eq!(
        shown, printed,
        "docs/getting-started.md: copy the table `codedb demo --markdown` prints"
    );
}

/// Object keys in the order they appear in JSON text.
fn keys_in_order(json: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let b = json.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let end = i + 1 + json[i + 1..].find('"').unwrap();
            let after = json[end + 1..].trim_start();
            if after.starts_with(':') {
                keys.push(json[i + 1..end].to_string());
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    keys
}

#[test]
fn readme_classify_json_example_is_the_real_output_shape() {
    let text = readme();
    let line = text
        .lines()
        .find(|l| l.starts_with("# [{\"row\""))
        .expect("README shows classify --format json output on a `# [{\"row\"…` line");
    let example = line.trim_start_matches("# ");
    let ex: serde_json::Value = serde_json::from_str(example).expect("the example is JSON");
    let top = ex[0]["classes"].as_array().unwrap().len();

    let (tmp, _, dir) = tmp_digits_index("pca:16,float");
    let t = tmp.path();
    let (x, _) = digits();
    let q = t.join("q.npy");
    let xs = codedb_cli::io::load_vectors(&x).unwrap();
    codedb_cli::io::write_npy_f32(&q, xs.slice(ndarray::s![0..1, ..])).unwrap();
    let out = classify(&dir, &q, &["--top", &top.to_string(), "--format", "json"]);
    let real = String::from_utf8(out.stdout).unwrap();
    assert_eq!(keys_in_order(example), keys_in_order(real.trim()), "{real}");
    let v: serde_json::Value = serde_json::from_str(&real).unwrap();
    assert_eq!(v[0]["row"], 0);
    assert!(v[0]["classes"][0]["score"].is_f64());
    assert!(v[0]["classes"][0]["name"].is_string());
}

#[test]
fn readme_train_from_index_pipelines_train() {
    let text = readme().split_whitespace().collect::<Vec<_>>().join(" ");
    let mut pipelines: Vec<String> = text
        .match_indices("--from-index")
        .filter_map(|(at, _)| {
            let rest = &text[at..];
            let cmd = &rest[..rest.find('`').unwrap_or(rest.len())];
            let p = cmd.split("--pipeline ").nth(1)?;
            Some(p.split([' ', '`']).next()?.trim_matches('\'').to_string())
        })
        .collect();
    pipelines.sort();
    pipelines.dedup();
    assert!(!pipelines.is_empty());
    let (tmp, _, dir) = tmp_digits_index("pq:8x8");
    let t = tmp.path();
    for (i, p) in pipelines.iter().enumerate() {
        let out = t.join(format!("from-index-{i}.model"));
        let r = codedb(&[
            "train",
            "--from-index",
            s(&dir),
            "--pipeline",
            p,
            "--out",
            s(&out),
        ]);
        assert_eq!(
            r.status.code(),
            Some(0),
            "README's `train --from-index … --pipeline {p}`: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
}

#[test]
fn demo_prints_plain_text() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ok(&["demo", "--dir", s(&tmp.path().join("d"))]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!all.contains("Some("), "{all}");
    assert!(!all.contains("None"), "{all}");
    assert!(all.contains("query row 0 finds id 0 first"), "{all}");
}

#[test]
fn the_fashion_mnist_path_names_its_package() {
    let text = readme();
    assert!(text.contains("apt-get install dataset-fashion-mnist"));
    for cmd in [["demo"], ["eval"]] {
        let out = ok(&[cmd[0], "--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        if help.contains("/usr/share/datasets/fashion-mnist") {
            assert!(help.contains("dataset-fashion-mnist"), "{cmd:?} --help");
        }
    }
}
