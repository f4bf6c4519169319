//! Every `sh` block of the book (docs/*.md) runs as written: the blocks of a page run in order,
//! each under `sh -e` (every command must succeed), in a fresh temporary directory holding the
//! checked-in digits under `tests/data/digits/` and the small generated inputs the pages name
//! (`X.npy`, `labels.npy`, …; see [`fixtures`]), with this build's `codedb` first on PATH.
//! `bash` blocks (a data set to download, minutes of work, root) are shown, not run; the book's
//! "About the examples" says so. A command that writes outside its directory — a figure into
//! docs/img, say — fails here, because the temporary directory has no docs/.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;

use ndarray::Array2;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The book's pages (docs/*.md; docs/reference/ is generated API reference, without shell).
fn pages() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    v.sort();
    v
}

/// The fenced blocks of a page whose info string is exactly `lang`.
fn blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        match &mut cur {
            None if line.starts_with("```") => {
                if line.trim_start_matches('`').trim() == lang {
                    cur = Some(String::new());
                } else {
                    // A block of another language: skip to its end.
                    cur = Some("\u{0}skip".to_string());
                }
            }
            None => {}
            Some(b) if line.starts_with("```") => {
                if !b.starts_with('\u{0}') {
                    out.push(std::mem::take(b));
                }
                cur = None;
            }
            Some(b) => {
                if !b.starts_with('\u{0}') {
                    b.push_str(line);
                    b.push('\n');
                }
            }
        }
    }
    out
}

/// A tiny deterministic generator (SplitMix64), so the fixtures are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

const DIM: usize = 64;
const CLUSTERS: usize = 6;
const TAGS: [&str; CLUSTERS] = [
    "red apple",
    "green car",
    "blue sky",
    "yellow sunset",
    "white snow",
    "black cat",
];

/// `n` rows of 64 dimensions in six clusters (row i in cluster i % 6, or `cluster` for all).
fn rows(rng: &mut Rng, n: usize, cluster: Option<usize>) -> Array2<f32> {
    Array2::from_shape_fn((n, DIM), |(i, j)| {
        let c = cluster.unwrap_or(i % CLUSTERS);
        let centre = if j % CLUSTERS == c { 8.0 } else { 0.0 } + (j as f32 * 0.1);
        centre + 2.0 * rng.next()
    })
}

/// The inputs the book's shell examples name, in `dir`.
fn fixtures(dir: &Path) {
    use codedb_cli::io::{write_npy_f32, write_npy_i64};
    let digits = dir.join("tests/data/digits");
    std::fs::create_dir_all(&digits).unwrap();
    for f in std::fs::read_dir(repo().join("tests/data/digits")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, digits.join(f.file_name().unwrap())).unwrap();
    }
    let mut rng = Rng(7);
    let x = rows(&mut rng, 600, None);
    write_npy_f32(dir.join("X.npy"), x.view()).unwrap();
    write_npy_f32(dir.join("train.npy"), x.view()).unwrap();
    let labels: Vec<i64> = (0..600).map(|i| (i % CLUSTERS) as i64).collect();
    write_npy_i64(dir.join("labels.npy"), &labels).unwrap();
    write_npy_f32(dir.join("Q.npy"), rows(&mut rng, 20, None).view()).unwrap();
    // Classes: a mean (a 1-D file, as numpy's x.mean(axis=0) saves it), a few images per new
    // class, and validation images labelled with the ids of existing classes.
    let mean = rows(&mut rng, 40, Some(0))
        .mean_axis(ndarray::Axis(0))
        .unwrap();
    write_npy_f32_1d(&dir.join("footwear_mean.npy"), mean.as_slice().unwrap());
    write_npy_f32(dir.join("sandals.npy"), rows(&mut rng, 5, Some(1)).view()).unwrap();
    write_npy_f32(dir.join("sneakers.npy"), rows(&mut rng, 5, Some(2)).view()).unwrap();
    write_npy_f32(dir.join("3clogs.npy"), rows(&mut rng, 3, Some(4)).view()).unwrap();
    let mut val = rows(&mut rng, 10, Some(1));
    val.append(ndarray::Axis(0), rows(&mut rng, 10, Some(2)).view())
        .unwrap();
    write_npy_f32(dir.join("val.npy"), val.view()).unwrap();
    let val_ids: Vec<i64> = (0..20).map(|i| if i < 10 { 1 } else { 2 }).collect();
    write_npy_i64(dir.join("val_class_ids.npy"), &val_ids).unwrap();
    // Text: one caption per row of X, and a query file.
    let captions: Vec<&str> = (0..600).map(|i| TAGS[i % CLUSTERS]).collect();
    std::fs::write(
        dir.join("tags.json"),
        serde_json::to_string(&captions).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.join("queries.txt"), "red apple\nblue sky\n").unwrap();
}

/// A 1-D little-endian f32 .npy file (numpy's format 1.0).
fn write_npy_f32_1d(path: &Path, v: &[f32]) {
    let mut header = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}",
        v.len()
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for x in v {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn every_sh_block_of_the_book_runs() {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_codedb"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    let mut failures = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let sh = blocks(&text, "sh");
        if sh.is_empty() {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        fixtures(tmp.path());
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        for (i, block) in sh.iter().enumerate() {
            assert!(
                !block.contains("docs/"),
                "{name}, sh block {i}: writes or reads under docs/, which a reader's directory \
                 does not have:\n{block}"
            );
            let out = Command::new("sh")
                .arg("-e")
                .arg("-c")
                .arg(block)
                .current_dir(tmp.path())
                .env("PATH", &path)
                .output()
                .unwrap();
            ran += 1;
            if !out.status.success() {
                failures.push(format!(
                    "{name}, sh block {i} exited {:?}:\n{block}--- stderr:\n{}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr)
                ));
                break; // later blocks of the page build on this one
            }
        }
    }
    assert!(ran >= 10, "only {ran} sh blocks found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_block_reader_keeps_languages_apart() {
    let page = "a\n```sh\necho 1\n```\n```bash\necho 2\n```\n```rust\nlet x = 1;\n```\n```sh\necho 3\n```\n";
    assert_eq!(blocks(page, "sh"), ["echo 1\n", "echo 3\n"]);
    assert_eq!(blocks(page, "bash"), ["echo 2\n"]);
}

#[test]
fn every_fence_of_the_book_names_its_language() {
    // An unnamed fence would be compiled as Rust by the doctests and skipped here: name it.
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut open = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                if !open {
                    assert!(
                        line.len() > 3,
                        "{}:{}: a fence without a language",
                        page.display(),
                        n + 1
                    );
                }
                open = !open;
            }
        }
    }
}
