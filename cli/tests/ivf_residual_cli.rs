//! IVFADC through the binary: `train --pipeline ivf:K,pq:Mx8`, `build` (rows filed under their
//! nearest k-means centroid; labels still give a class table), `search --nprobe` over the
//! k-means cells with and without `--rerank`, and the refusals (nprobe out of range, class
//! lists on an IVF index, an ivf stage without an 8-bit pq after it).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{
    build, codedb, digits, fails, json, ok, result_ids, s, search, tmp_digits_index,
};

#[test]
fn ivf_index_searches_by_nprobe_and_refuses_class_lists() {
    let (x, y) = digits();
    let (tmp, model, dir) = tmp_digits_index("ivf:8,pq:8x8");
    let ids = |extra: &[&str]| {
        let mut a = vec!["-k", "10", "--format", "json"];
        a.extend_from_slice(extra);
        result_ids(&json(&search(&dir, &x, &a)))
    };
    let flat = ids(&[]);
    assert_eq!(flat.len(), 1797);
    assert_eq!(
        ids(&["--nprobe", "8"]),
        flat,
        "nprobe = K is the flat search"
    );
    let one = ids(&["--nprobe", "1"]);
    assert_ne!(one, flat, "one list of eight is not the flat search");
    // Each digit's nearest row by ADC is almost always itself (its own residual code).
    let own = one
        .iter()
        .enumerate()
        .filter(|(i, l)| l[0] == *i as u64)
        .count();
    assert!(own > 1500, "{own} of 1797 find themselves first");
    // Re-ranking needs stored vectors; this index has none.
    fails(
        &[
            "search",
            s(&dir),
            "--queries",
            s(&x),
            "--nprobe",
            "2",
            "--rerank",
            "20",
        ],
        1,
        "vectors",
    );
    // nprobe beyond K, or 0.
    fails(
        &["search", s(&dir), "--queries", s(&x), "--nprobe", "9"],
        1,
        "nprobe",
    );
    fails(
        &["search", s(&dir), "--queries", s(&x), "--nprobe", "0"],
        2,
        "nprobe",
    );
    // Both: the labels gave a class table (classify works), but lists are k-means cells.
    ok(&["classify", s(&dir), "--data", s(&x), "--top", "1"]);
    fails(
        &["search", s(&dir), "--queries", s(&x), "--classes", "3"],
        1,
        "k-means",
    );
    let e = codedb(&[
        "build",
        s(&tmp.path().join("b")),
        "--model",
        s(&model),
        "--data",
        s(&x),
        "--labels",
        s(&y),
        "--lists",
        "label",
    ]);
    assert_eq!(e.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&e.stderr).contains("ivf"));
    assert!(!tmp.path().join("b").exists(), "nothing half-written");
    // With stored vectors, re-ranking every probed candidate.
    let dir2 = tmp.path().join("v");
    build(&dir2, &model, &x, &["--store-vectors", "f32"]);
    let rr = result_ids(&json(&search(
        &dir2,
        &x,
        &[
            "-k", "5", "--nprobe", "8", "--rerank", "1797", "--format", "json",
        ],
    )));
    let exact = result_ids(&json(&search(
        &dir2,
        &x,
        &["-k", "5", "--mode", "exact", "--format", "json"],
    )));
    assert_eq!(rr, exact);
    // The ivf stage needs an 8-bit pq right after it.
    let bad = codedb(&[
        "train",
        "--data",
        s(&x),
        "--pipeline",
        "ivf:8,pq:8x4",
        "--out",
        s(&tmp.path().join("bad.model")),
    ]);
    assert_ne!(bad.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ivf"));
}
