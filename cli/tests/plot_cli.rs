//! `--plot`: `codedb eval` and `codedb bench scan` draw well-formed SVG figures with the
//! expected series and axis labels, alongside `--json`, and the same figures as PNG; `codedb bench plot` draws the same
//! figure from saved JSON (codedb alone or codedb and FAISS from tools/bench_vs_faiss.py); bad
//! paths and files fail with exit 1 (2 for a usage error), naming the file, writing nothing.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

mod cli_support;
use cli_support::{PIXELS, fails, json, ok, s};

/// Parses `path` as XML (fails the test if it is not well-formed) and returns the texts drawn.
fn svg_texts(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{}: not well-formed XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

fn polylines(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count()
}

fn assert_has(texts: &[String], wanted: &[&str]) {
    for w in wanted {
        assert!(
            texts.iter().any(|t| t == w),
            "no text {w:?} in the figure; texts: {texts:?}"
        );
    }
}

/// Files in `dir` (to show nothing else, such as a temporary file, was left).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Decodes `path` as a PNG (fails the test if it is not one): its size and RGB pixels.
fn png_pixels(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut reader = png::Decoder::new(file)
        .read_info()
        .unwrap_or_else(|e| panic!("{}: not a PNG: {e}", path.display()));
    let mut buf = vec![0u8; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let px = buf[..info.buffer_size()]
        .chunks_exact(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width, info.height, px)
}

/// The width and height an SVG declares.
fn svg_size(path: &Path) -> (u32, u32) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    let dim = |a: &str| root.attribute(a).unwrap().parse::<u32>().unwrap();
    (dim("width"), dim("height"))
}

/// The same figure as PNG: the size the SVG declares, white ground, text drawn with the bundled
/// font in the title strip (dark pixels there), and every pipeline's colour in the plot.
#[test]
fn eval_plot_writes_png_with_text_drawn_by_the_bundled_font() {
    let tmp = tempfile::tempdir().unwrap();
    let args = |fig: &Path| {
        vec![
            "eval".to_string(),
            "--data".into(),
            PIXELS.into(),
            "--pipelines".into(),
            "lsh:16; pca-itq:16".into(),
            "--queries".into(),
            "100".into(),
            "--plot".into(),
            s(fig).into(),
        ]
    };
    let (svg, png_path) = (tmp.path().join("e.svg"), tmp.path().join("e.png"));
    for fig in [&svg, &png_path] {
        let a = args(fig);
        ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    let (w, h, px) = png_pixels(&png_path);
    assert_eq!((w, h), svg_size(&svg));
    let white = px.iter().filter(|p| **p == [255, 255, 255]).count();
    assert!(
        white > px.len() / 2,
        "mostly white ground: {white} of {}",
        px.len()
    );
    // The title strip (the top 40 rows) holds dark text pixels, left-aligned.
    let dark_in_title = px[..40 * w as usize]
        .iter()
        .filter(|p| p.iter().all(|&c| c < 96))
        .count();
    assert!(
        dark_in_title > 200,
        "title text drawn: {dark_in_title} dark pixels"
    );
    // The first two palette colours (the two pipelines' lines and legend samples).
    for colour in [[0x00, 0x72, 0xB2], [0xD5, 0x5E, 0x00]] {
        let n = px.iter().filter(|p| **p == colour).count();
        assert!(n > 100, "{colour:?} drawn on {n} pixels");
    }
    assert_eq!(names(tmp.path()), ["e.png", "e.svg"]);
}

#[test]
fn eval_plot_draws_three_panels_per_pipeline_next_to_json() {
    let tmp = tempfile::tempdir().unwrap();
    let fig = tmp.path().join("eval.svg");
    let out = ok(&[
        "eval",
        "--data",
        PIXELS,
        "--pipelines",
        "lsh:16; pca-itq:16; pca-itq:32",
        "--queries",
        "100",
        "--recall",
        "1,10,100",
        "--plot",
        s(&fig),
        "--json",
    ]);
    let rows = json(&out);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        // The curve behind the first panel is in the JSON too: recall rises to 1 at the
        // whole database, precision there is the share of relevant items.
        let c = &r["pr_curve"];
        let recall: Vec<f64> = serde_json::from_value(c["recall"].clone()).unwrap();
        let n: Vec<usize> = serde_json::from_value(c["retrieved"].clone()).unwrap();
        assert_eq!(recall.len(), n.len());
        assert!(recall.windows(2).all(|w| w[0] <= w[1] + 1e-12));
        assert!((recall.last().unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(
            *n.last().unwrap(),
            r["database_rows"].as_u64().unwrap() as usize
        );
    }
    let texts = svg_texts(&fig);
    assert_has(
        &texts,
        &[
            "lsh:16 (16 bits)",
            "pca-itq:16 (16 bits)",
            "pca-itq:32 (32 bits)",
            "Precision-recall (Euclidean neighbours)",
            "recall (share of relevant items retrieved)",
            "precision",
            "Recall@R (exact 1-NN in the top R)",
            "R (items retrieved, log scale)",
            "recall@R",
            "mAP (Euclidean neighbours) vs code length",
            "bits per code (log scale)",
            "mAP",
            // The family line through pca-itq:16 and pca-itq:32 is named.
            "pca-itq",
        ],
    );
    // A precision-recall and a recall@R line per pipeline, a family line, legend samples.
    assert!(polylines(&fig) > 2 * 3, "{}", polylines(&fig));
    assert_eq!(names(tmp.path()), ["eval.svg"]);
}

#[test]
fn eval_plot_checks_the_path_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-dir/eval.svg");
    let out = fails(
        &[
            "eval",
            "--data",
            PIXELS,
            "--pipelines",
            "lsh:16",
            "--plot",
            s(&missing),
        ],
        1,
        "does not exist",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-dir"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "no table printed: the run never started"
    );
    assert!(!tmp.path().join("no-such-dir").exists());
    fails(
        &[
            "eval",
            "--data",
            PIXELS,
            "--pipelines",
            "lsh:16",
            "--plot",
            s(&tmp.path().join("eval.jpg")),
        ],
        2,
        "SVG or PNG",
    );
    fails(
        &[
            "eval",
            "--task",
            "classify",
            "--data",
            PIXELS,
            "--pipelines",
            "ncm",
            "--plot",
            s(&tmp.path().join("c.svg")),
        ],
        2,
        "--task classify has none",
    );
    assert!(names(tmp.path()).is_empty(), "{:?}", names(tmp.path()));
}

#[test]
fn bench_scan_plot_draws_throughput_against_n_and_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let fig = tmp.path().join("scan.svg");
    let seg = tmp.path().join("segments");
    std::fs::create_dir(&seg).unwrap();
    let out = ok(&[
        "bench",
        "scan",
        "--codes",
        "2000,20000",
        "--kind",
        "hamming64",
        "--threads",
        "1,2",
        "--repeats",
        "1",
        "--dir",
        s(&seg),
        "--plot",
        s(&fig),
        "--json",
    ]);
    let rows = json(&out);
    let rows = rows.as_array().unwrap();
    let cases: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r["codes"].as_u64().unwrap(), r["threads"].as_u64().unwrap()))
        .collect();
    assert_eq!(cases.len(), 4, "{cases:?}");
    for n in [2000, 20000] {
        assert!(cases.iter().any(|c| c.0 == n), "{cases:?}");
    }
    let texts = svg_texts(&fig);
    assert_has(
        &texts,
        &[
            "hamming64 codedb",
            "hamming64 at read bandwidth",
            "N (codes in the segment, log scale)",
            "threads",
            "codes/s (codes x queries per second, log scale)",
        ],
    );
    assert!(!texts.iter().any(|t| t.contains("FAISS")), "{texts:?}");
    // The saved JSON draws the same figure.
    let saved = tmp.path().join("scan.json");
    std::fs::write(&saved, &out.stdout).unwrap();
    let again = tmp.path().join("again.svg");
    ok(&["bench", "plot", "--from", s(&saved), "--plot", s(&again)]);
    assert_has(
        &svg_texts(&again),
        &["hamming64 codedb", "hamming64 at read bandwidth"],
    );
}

/// Rows as tools/bench_vs_faiss.py --json writes them.
fn faiss_rows() -> String {
    let mut rows = Vec::new();
    for (kind, n, t, c, f) in [
        ("hamming64", 1_000_000, 1, 2.0e9, 1.5e9),
        ("hamming64", 1_000_000, 2, 3.5e9, 2.5e9),
        ("hamming64", 10_000_000, 2, 3.0e9, 2.6e9),
        ("pq4x32", 10_000_000, 2, 9.0e8, 1.1e9),
    ] {
        rows.push(serde_json::json!({
            "kind": kind, "codes": n, "queries": 1, "threads": t, "k": 10,
            "codedb_codes_per_s": c, "faiss_codes_per_s": f, "ratio": c / f,
            "codedb_bandwidth_fraction": 0.5, "bandwidth_gb_per_s": 20.0, "isa": "avx2",
        }));
    }
    serde_json::to_string_pretty(&rows).unwrap()
}

#[test]
fn bench_plot_draws_codedb_and_faiss_from_the_script_json() {
    let tmp = tempfile::tempdir().unwrap();
    let from = tmp.path().join("faiss.json");
    std::fs::write(&from, faiss_rows()).unwrap();
    let fig = tmp.path().join("faiss.svg");
    ok(&[
        "bench",
        "plot",
        "--from",
        s(&from),
        "--plot",
        s(&fig),
        "--title",
        "T",
    ]);
    assert_has(
        &svg_texts(&fig),
        &[
            "T",
            "hamming64 codedb",
            "hamming64 FAISS",
            "hamming64 at read bandwidth",
            "pq4x32 codedb",
            "pq4x32 FAISS",
            "Throughput vs N (2 thread(s))",
            "Throughput vs threads (N = 1e7)",
        ],
    );
    // The same figure as PNG, the size the SVG declares.
    let png_path = tmp.path().join("faiss.png");
    ok(&["bench", "plot", "--from", s(&from), "--plot", s(&png_path)]);
    let (w, h, _) = png_pixels(&png_path);
    assert_eq!((w, h), svg_size(&fig));
}

#[test]
fn bench_plot_rejects_bad_files_and_leaves_nothing_half_written() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.json");
    std::fs::write(&good, faiss_rows()).unwrap();
    let fig = tmp.path().join("fig.svg");
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a list\"}").unwrap();
    fails(
        &["bench", "plot", "--from", s(&bad), "--plot", s(&fig)],
        1,
        "bad.json",
    );
    std::fs::write(&bad, r#"[{"kind":"ham","codes":1,"queries":1,"threads":1,"codes_per_s":1.0,"bandwidth_gb_per_s":1.0}]"#).unwrap();
    fails(
        &["bench", "plot", "--from", s(&bad), "--plot", s(&fig)],
        1,
        "row 0: unknown kind",
    );
    std::fs::write(&bad, r#"[{"kind":"hamming64","codes":1,"queries":1,"threads":1,"codes_per_s":-1.0,"bandwidth_gb_per_s":1.0}]"#).unwrap();
    fails(
        &["bench", "plot", "--from", s(&bad), "--plot", s(&fig)],
        1,
        "finite and positive",
    );
    // The same case twice (one file given twice) is refused, not drawn as a zigzag.
    fails(
        &[
            "bench",
            "plot",
            "--from",
            s(&good),
            "--from",
            s(&good),
            "--plot",
            s(&fig),
        ],
        1,
        "appears twice",
    );
    fails(
        &[
            "bench",
            "plot",
            "--from",
            s(&tmp.path().join("none.json")),
            "--plot",
            s(&fig),
        ],
        1,
        "none.json",
    );
    fails(
        &[
            "bench",
            "plot",
            "--from",
            s(&good),
            "--plot",
            s(&tmp.path().join("x/fig.svg")),
        ],
        1,
        "does not exist",
    );
    // The default name inside the directory given is a directory: the figure is drawn, the
    // rename fails, no temporary file is left and the directory is untouched.
    let dir_target = tmp.path().join("taken");
    std::fs::create_dir_all(dir_target.join("scan.svg")).unwrap();
    fails(
        &[
            "bench",
            "plot",
            "--from",
            s(&good),
            "--plot",
            s(&dir_target),
        ],
        1,
        "scan.svg",
    );
    assert!(dir_target.join("scan.svg").is_dir());
    assert_eq!(names(&dir_target), ["scan.svg"]);
    assert_eq!(names(tmp.path()), ["bad.json", "good.json", "taken"]);
    // An existing figure is replaced whole.
    std::fs::write(&fig, "old").unwrap();
    ok(&["bench", "plot", "--from", s(&good), "--plot", s(&fig)]);
    assert!(!svg_texts(&fig).is_empty());
}

/// The book's eval figure (docs/img/eval_digits.svg, shown in docs/evaluation.md) is what the
/// command written under it draws, byte for byte (the figure is seeded and draws no times).
#[test]
fn readme_eval_figure_is_what_its_command_draws() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("docs/evaluation.md")).unwrap();
    let image = "(img/eval_digits.svg)";
    let after = &readme[readme.find(image).expect("the book shows the eval figure")..];
    let block = after
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let line = block.replace("\\\n", " ");
    // A small shell split: words, and "…" quoted words.
    let mut args: Vec<String> = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let (word, tail) = if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').unwrap();
            (&r[..end], &r[end + 1..])
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        };
        args.push(word.to_string());
        rest = tail.trim_start();
    }
    assert_eq!(args[0], "codedb", "{args:?}");
    let tmp = tempfile::tempdir().unwrap();
    let fig = tmp.path().join("eval.svg");
    let at = args.iter().position(|a| a == "--plot").unwrap();
    let fig_arg = s(&fig).to_string();
    match args.get(at + 1) {
        Some(a) if !a.starts_with('-') => args[at + 1] = fig_arg,
        _ => args.insert(at + 1, fig_arg),
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(&args[1..])
        .current_dir(&root)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read(&fig).unwrap()
            == std::fs::read(root.join("docs/img/eval_digits.svg")).unwrap(),
        "docs/img/eval_digits.svg differs from what docs/evaluation.md's command draws: rerun it \
         and copy the figure there"
    );
}
