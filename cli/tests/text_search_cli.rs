//! `codedb train --captions` and `codedb search --text` / `--text-file`: a text head trained on
//! the digits with tags that name each digit, text queries answered from bits, PQ codes and
//! floats, and the user-visible errors (exit 1, nothing written).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;

use std::path::Path;

use cli_support::{build, digits, digits_data, fails, json, ok, result_ids, s, stderr};

const NAMES: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

/// Tags of each digit: its name, even/odd, and a word every row has.
fn write_tags(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (_, y) = digits_data();
    let tags: Vec<Vec<&str>> = y
        .iter()
        .map(|&v| {
            vec![
                NAMES[v as usize],
                if v % 2 == 0 { "even" } else { "odd" },
                "digit",
            ]
        })
        .collect();
    let json_path = dir.join("tags.json");
    std::fs::write(&json_path, serde_json::to_string(&tags).unwrap()).unwrap();
    let txt_path = dir.join("captions.txt");
    let lines: Vec<String> = y
        .iter()
        .map(|&v| format!("A handwritten {}!", NAMES[v as usize].to_uppercase()))
        .collect();
    std::fs::write(&txt_path, lines.join("\n") + "\n").unwrap();
    (json_path, txt_path)
}

fn train_text(dir: &Path, spec: &str, captions: &Path, out: &str) -> serde_json::Value {
    let (x, _) = digits();
    let m = dir.join(out);
    json(&ok(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        spec,
        "--captions",
        s(captions),
        "--pamir-iterations",
        "20000",
        "--out",
        s(&m),
        "--json",
    ]))
}

#[test]
fn text_queries_rank_the_named_digit_first_on_bits_pq_and_floats() {
    let tmp = tempfile::tempdir().unwrap();
    let (tags, captions) = write_tags(tmp.path());
    let (x, y) = digits();
    let (_, labels) = digits_data();
    for (i, spec) in ["pca-itq:32", "pca:32,pq:8x8", "float"].iter().enumerate() {
        let caps = if i == 1 { &captions } else { &tags };
        let out = format!("m{i}.model");
        let r = train_text(tmp.path(), spec, caps, &out);
        let t = &r["text"];
        let words = if i == 1 { 12 } else { 13 }; // captions.txt: names + "a", "handwritten"
        assert_eq!(t["vocabulary"], words, "{spec}: {t}");
        assert!(
            t["loss_after"].as_f64().unwrap() < 0.5 * t["loss_before"].as_f64().unwrap(),
            "{spec}: {t}"
        );
        let dir = tmp.path().join(format!("idx{i}"));
        build(
            &dir,
            &tmp.path().join(&out),
            &x,
            &["--labels", s(&y), "--store-vectors", "f32"],
        );
        let o = ok(&[
            "search",
            s(&dir),
            "--text",
            "seven",
            "--text",
            "Three zebra",
            "-k",
            "10",
            "--format",
            "json",
        ]);
        assert!(stderr(&o).contains("zebra"), "{spec}: {}", stderr(&o));
        let ids = result_ids(&json(&o));
        assert_eq!(ids.len(), 2);
        for (q, want) in [(0, 7), (1, 3)] {
            let right = ids[q]
                .iter()
                .filter(|&&id| labels[id as usize] == want)
                .count();
            assert!(
                right >= 8,
                "{spec}: query {q}: {right}/10 of digit {want}: {:?}",
                ids[q]
            );
        }
        // --text-file: one query per line, same answers; --rerank re-scores with the vectors.
        let f = tmp.path().join("q.txt");
        std::fs::write(&f, "seven\nthree zebra\n").unwrap();
        let o2 = ok(&[
            "search",
            s(&dir),
            "--text-file",
            s(&f),
            "-k",
            "10",
            "--format",
            "json",
        ]);
        assert_eq!(result_ids(&json(&o2)), ids, "{spec}");
        let rr = ok(&[
            "search",
            s(&dir),
            "--text",
            "seven",
            "-k",
            "5",
            "--rerank",
            "50",
            "--format",
            "json",
        ]);
        let rr = result_ids(&json(&rr));
        assert!(
            rr[0].iter().all(|&id| labels[id as usize] == 7),
            "{spec}: {rr:?}"
        );
    }
}

#[test]
fn bad_text_input_fails_with_exit_1_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (tags, _) = write_tags(tmp.path());
    let (x, y) = digits();
    train_text(tmp.path(), "pca-itq:32", &tags, "m.model");
    let dir = tmp.path().join("idx");
    build(&dir, &tmp.path().join("m.model"), &x, &["--labels", s(&y)]);
    let d = s(&dir);
    fails(
        &["search", d, "--text", "zebra unicorn"],
        1,
        "no word of the query is in the model's vocabulary",
    );
    fails(&["search", d, "--text", ""], 1, "has no word");
    fails(
        &["search", d, "--text", "seven", "--text", "42"],
        1,
        "\"42\": has no word",
    );
    let empty = tmp.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    fails(
        &["search", d, "--text-file", s(&empty)],
        1,
        "holds no query",
    );
    fails(
        &["search", d, "--text", "seven", "--mode", "exact-ip"],
        1,
        "exact-ip",
    );
    // Usage: text and vectors together.
    let (xq, _) = digits();
    fails(
        &["search", d, "--text", "seven", "--queries", s(&xq)],
        2,
        "cannot be used",
    );
    // A model without a text head.
    let bare = tmp.path().join("bare.model");
    ok(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        "pca-itq:32",
        "--out",
        s(&bare),
    ]);
    let bdir = tmp.path().join("bidx");
    build(&bdir, &bare, &x, &[]);
    fails(
        &["search", s(&bdir), "--text", "seven"],
        1,
        "has no text head",
    );
    // Captions that do not match the rows: exit 1, no model file.
    let short = tmp.path().join("short.txt");
    std::fs::write(&short, "one\ntwo\n").unwrap();
    let out = tmp.path().join("never.model");
    fails(
        &[
            "train",
            "--data",
            s(&x),
            "--pipeline",
            "pca-itq:32",
            "--captions",
            s(&short),
            "--out",
            s(&out),
        ],
        1,
        "2 captions for 1797 rows",
    );
    assert!(!out.exists());
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "[1, 2]").unwrap();
    fails(
        &[
            "train",
            "--data",
            s(&x),
            "--pipeline",
            "pca-itq:32",
            "--captions",
            s(&bad),
            "--out",
            s(&out),
        ],
        1,
        "entry 0 is neither a string nor a list of tags",
    );
    assert!(!out.exists());
}

/// `train --captions --json` reports the patience rule (each C's checkpoints, the iterations it
/// ran, why it stopped) and the grouped validation split; a group file of the wrong length is
/// refused naming it, with exit 1 and no model written.
#[test]
fn train_json_reports_why_pamir_stopped_and_the_grouped_split() {
    let tmp = tempfile::tempdir().unwrap();
    let (tags, _) = write_tags(tmp.path());
    let (x, _) = digits();
    let (_, y) = digits_data();
    // Groups: blocks of 7 consecutive rows.
    let groups: Vec<i64> = (0..y.len() as i64).map(|r| r / 7).collect();
    let gp = tmp.path().join("groups.npy");
    codedb_cli::io::npy_write::write_npy_i64(&gp, &groups).unwrap();
    let m = tmp.path().join("g.model");
    let args = |g: &Path, out: &Path, cap: &str| -> Vec<String> {
        [
            "train",
            "--data",
            s(&x),
            "--pipeline",
            "pca-itq:32",
            "--captions",
            s(&tags),
            "--pamir-c",
            "1",
            "--pamir-iterations",
            cap,
            "--pamir-validation-groups",
            s(g),
            "--out",
            s(out),
            "--json",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let a = args(&gp, &m, "1000000");
    let r = json(&ok(&a.iter().map(String::as_str).collect::<Vec<_>>()));
    let t = &r["text"];
    assert_eq!(t["validation_groups"], groups.len().div_ceil(7), "{t}");
    assert_eq!(t["validation_rows"].as_u64().unwrap() % 7, 0, "{t}");
    let trial = &t["trials"][0];
    // Ten digit words learn fast: the run stops by patience far below the cap of 10⁶.
    assert_eq!(trial["stopped"], "patience", "{trial}");
    assert_eq!(t["stopped"], "patience");
    let run = trial["iterations_run"].as_u64().unwrap();
    assert!(run < 1_000_000, "{trial}");
    let ks = trial["checkpoints"].as_array().unwrap();
    assert_eq!(ks.last().unwrap()["iterations"].as_u64(), Some(run));
    assert_eq!(t["selected_iterations"], trial["iterations"]);
    assert!(t["cap_note"].is_null());
    // Too small a cap: stopped there, and a note on stderr and in the JSON.
    let m2 = tmp.path().join("c.model");
    let a = args(&gp, &m2, "1500");
    let out = ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let r = json(&out);
    assert_eq!(r["text"]["trials"][0]["stopped"], "cap", "{}", r["text"]);
    assert!(
        r["text"]["cap_note"]
            .as_str()
            .unwrap()
            .contains("--pamir-iterations")
    );
    assert!(stderr(&out).contains("note: the text head's validation AvgP was still rising"));
    // A group file of the wrong length.
    let short = tmp.path().join("short.npy");
    codedb_cli::io::npy_write::write_npy_i64(&short, &groups[..10]).unwrap();
    let never = tmp.path().join("never.model");
    let a = args(&short, &never, "1000");
    fails(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        1,
        "10 group ids for 1797 data rows",
    );
    assert!(!never.exists());
}
