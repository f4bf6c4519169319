//! `codedb bench ivf` on a tiny generated set: trains `ivf:K,pq:Mx8`, streams the rows into an
//! index, and reports the flat scan and each nprobe; probing every list is the flat scan, the
//! index is removed afterwards, re-ranking with stored vectors applies to every case, timed
//! rounds are interleaved, and bad arguments are usage errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{fails, json, ok, s};

#[test]
fn bench_ivf_reports_flat_and_probed_searches() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cb");
    let args = [
        "bench",
        "ivf",
        "--rows",
        "20000",
        "--dim",
        "16",
        "--clusters",
        "200",
        "--lists",
        "16",
        "--m",
        "8",
        "--nprobe",
        "1,4,16",
        "--queries",
        "30",
        "--train-rows",
        "4000",
        "--batch",
        "6000",
        "--repeat",
        "2",
        "--dir",
        s(&dir),
        "--json",
    ];
    let v = json(&ok(&args));
    assert_eq!(v["rows"], 20000);
    assert_eq!(v["repeat"], 2);
    assert!(v["rerank"].is_null(), "{v}");
    assert_eq!(v["pipeline"], "ivf:16,pq:8x8");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4, "{v}");
    assert_eq!(cases[0]["flat"], true);
    let nprobe: Vec<u64> = cases
        .iter()
        .map(|c| c["nprobe"].as_u64().unwrap())
        .collect();
    assert_eq!(nprobe, [16, 1, 4, 16]);
    for c in cases {
        for key in ["recall_at_10", "recall_10_at_10", "recall_10_vs_flat"] {
            let r = c[key].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&r), "{key}: {c}");
        }
        assert!(c["queries_per_s"].as_f64().unwrap() > 0.0, "{c}");
        // Two rounds, and the reported time is their median (the mean of two).
        let rounds: Vec<f64> = c["seconds_per_round"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(rounds.len(), 2, "{c}");
        let median = (rounds[0] + rounds[1]) / 2.0;
        assert!(
            (c["seconds"].as_f64().unwrap() - median).abs() < 1e-9,
            "{c}"
        );
    }
    // Probing every list scores every code: the flat scan's results exactly.
    assert_eq!(cases[3]["recall_10_vs_flat"].as_f64().unwrap(), 1.0);
    assert_eq!(cases[3]["recall_at_10"], cases[0]["recall_at_10"]);
    assert_eq!(cases[3]["recall_10_at_10"], cases[0]["recall_10_at_10"]);
    // On well-separated clusters the flat PQ search finds most true neighbours, and more
    // probes never lose recall against the flat scan here.
    assert!(cases[0]["recall_at_10"].as_f64().unwrap() >= 0.5, "{v}");
    assert!(
        cases[2]["recall_10_vs_flat"].as_f64().unwrap()
            >= cases[1]["recall_10_vs_flat"].as_f64().unwrap()
    );
    assert!(v["add_s"].as_f64().unwrap() > 0.0);
    assert!(v["index_bytes"].as_u64().unwrap() > 20000 * 8);
    assert!(!dir.join("ivf-bench").exists(), "the index is removed");
    // Same seed, same data: the recall figures repeat.
    let again = json(&ok(&args));
    for (a, b) in cases.iter().zip(again["cases"].as_array().unwrap()) {
        assert_eq!(a["recall_at_10"], b["recall_at_10"]);
        assert_eq!(a["recall_10_vs_flat"], b["recall_10_vs_flat"]);
    }
}

#[test]
fn bench_ivf_rerank_applies_to_every_case() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cb");
    let base = [
        "bench",
        "ivf",
        "--rows",
        "20000",
        "--dim",
        "16",
        "--clusters",
        "20",
        "--lists",
        "16",
        "--m",
        "8",
        "--nprobe",
        "2,16",
        "--queries",
        "40",
        "--train-rows",
        "4000",
        "--batch",
        "6000",
        "--dir",
        s(&dir),
        "--json",
    ];
    // 1,000 rows per cluster: the 8-byte codes alone do not resolve the exact neighbours.
    let plain = json(&ok(&base));
    let mut args = base.to_vec();
    args.extend(["--rerank", "1000"]);
    let v = json(&ok(&args));
    assert_eq!(v["rerank"], 1000);
    let (p, r) = (
        plain["cases"].as_array().unwrap(),
        v["cases"].as_array().unwrap(),
    );
    let exact = |c: &serde_json::Value| c["recall_10_at_10"].as_f64().unwrap();
    // The flat scan re-ranked finds almost all exact 10 nearest (f16 vectors: near ties may
    // swap), far more than the codes alone; probing every list is still the flat scan.
    assert!(exact(&r[0]) >= 0.95, "{v}");
    assert!(exact(&r[0]) > exact(&p[0]) + 0.1, "{plain}\n{v}");
    assert_eq!(r[2]["recall_10_at_10"], r[0]["recall_10_at_10"]);
    assert_eq!(r[2]["recall_10_vs_flat"].as_f64().unwrap(), 1.0);
    // The probed search is re-ranked too.
    assert!(exact(&r[1]) > exact(&p[1]), "{plain}\n{v}");
    // The stored vectors are in the index: 16 f16 values per row.
    assert!(
        v["index_bytes"].as_u64().unwrap() > plain["index_bytes"].as_u64().unwrap() + 20000 * 32
    );
}

#[test]
fn bench_ivf_bad_arguments_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let d = s(tmp.path());
    fails(
        &["bench", "ivf", "--lists", "8", "--nprobe", "9", "--dir", d],
        2,
        "--nprobe",
    );
    fails(
        &["bench", "ivf", "--dim", "10", "--m", "4", "--dir", d],
        2,
        "--m",
    );
    fails(&["bench", "ivf", "-k", "5", "--dir", d], 2, "-k");
    fails(&["bench", "ivf", "--rows", "0", "--dir", d], 2, "--rows");
    fails(
        &["bench", "ivf", "--rerank", "5", "--dir", d],
        2,
        "--rerank 5: must be at least -k",
    );
    fails(
        &["bench", "ivf", "--rerank", "0", "--dir", d],
        2,
        "--rerank <R>",
    );
    fails(
        &["bench", "ivf", "--repeat", "0", "--dir", d],
        2,
        "--repeat <N>",
    );
}
