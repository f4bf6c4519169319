//! Filtered search (`SearchParams::filter`, docs/filtering.md): for every search kind, the
//! filtered top-k equals the brute-force top-k over the rows the filter passes, ties by id
//! included — over random predicates in the filter language and random id selectors, on a
//! multi-block index (segments and active-log batches) with deletions, whose rows store
//! attribute columns of every type (one added after some rows were stored, one left out of a
//! write: those rows hold the defaults). With IVF, a probed query whose lists hold fewer than
//! k passing rows probes the next-nearest lists, or is answered by the flat search over the
//! passing rows when that reads fewer rows.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use codedb::internals::MemoryVectors;
use codedb::kernels::hamming_distance;
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{
    AddOptions, Attributes, BuildOptions, CodeClassifier, Column, ColumnType, Config,
    ExampleParams, Index, Negatives, Schema, Snapshot, Value,
};
use codedb::{
    FilterError, Hit, IdSelector, MihChoice, RowFilter, SearchError, SearchMode, SearchParams,
};
use ndarray::{Array2, ArrayView2, s};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn digits() -> Array2<f32> {
    common::npy::digits().0
}

fn model(spec: &str, x: ArrayView2<f32>) -> Model {
    train(
        &PipelineSpec::parse(spec).unwrap(),
        x,
        &TrainOptions::default(),
    )
    .unwrap()
    .0
}

/// The attribute values the test stores for row `r` (id 10·r), as the index must read them
/// back: `licence` is left out of the add of rows 1200..1500 (so they hold its default,
/// "none"), and `taken` is added to the index after row 1500 (so earlier rows hold 0).
struct RowAttrs {
    year: i64,
    score: f64,
    public: bool,
    licence: &'static str,
    tags: Vec<String>,
    taken: i64,
}

const LICENCES: [&str; 4] = ["cc0", "cc-by", "x", "nc"];
/// 2010-01-01T00:00:00Z in microseconds.
const T2010: i64 = 1_262_304_000_000_000;
const DAY: i64 = 86_400_000_000;

fn attrs_of(id: u64) -> RowAttrs {
    let r = (id / 10) as i64;
    let mut tags = vec![format!("t{}", r % 5), format!("t{}", 5 + r % 7)];
    if r % 97 == 0 {
        tags.push("rare".into());
    }
    RowAttrs {
        year: 2000 + (r * 13) % 25,
        score: if r % 11 == 0 {
            f64::NAN
        } else {
            ((r * 37) % 1000) as f64 / 10.0
        },
        public: r % 3 == 0,
        licence: if (1200..1500).contains(&r) {
            "none"
        } else {
            LICENCES[(r % 4) as usize]
        },
        tags,
        taken: if r >= 1500 { T2010 + r * DAY } else { 0 },
    }
}

/// The stored columns of rows with these ids (`licence`, `taken` as the writes give them).
fn attributes_for(ids: &[u64], licence: bool, taken: bool) -> Attributes {
    let a: Vec<RowAttrs> = ids.iter().map(|&id| attrs_of(id)).collect();
    let mut cols = vec![
        (
            "year".into(),
            Column::Int(a.iter().map(|r| r.year).collect()),
        ),
        (
            "score".into(),
            Column::Float(a.iter().map(|r| r.score).collect()),
        ),
        (
            "public".into(),
            Column::Bool(a.iter().map(|r| r.public).collect()),
        ),
        (
            "tags".into(),
            Column::tags(&a.iter().map(|r| r.tags.clone()).collect::<Vec<_>>()),
        ),
    ];
    if licence {
        cols.push((
            "licence".into(),
            Column::strings(&a.iter().map(|r| r.licence).collect::<Vec<_>>()),
        ));
    }
    if taken {
        cols.push((
            "taken".into(),
            Column::Timestamp(a.iter().map(|r| r.taken).collect()),
        ));
    }
    Attributes::new(ids.len(), cols).unwrap()
}

/// Rows 0..1797 with ids 10·r: a build of 1200 rows (sealed segments), an add of 300 (sealed)
/// and one of 297 left in the active log; every 13th id deleted. Every row stores attribute
/// columns ([`attrs_of`]).
fn multi_block_index(dir: &Path, m: &Model, x: ArrayView2<f32>) -> Index {
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let schema = Schema::parse("year:int,score:float,public:bool,licence:string,tags:tags")
        .unwrap()
        .with_default("licence", Value::Str("none".into()))
        .unwrap();
    let built = attributes_for(&ids[..1200], true, false);
    let index = Index::build(
        dir,
        m,
        x.slice(s![0..1200, ..]),
        &BuildOptions {
            ids: Some(&ids[..1200]),
            schema: Some(&schema),
            attributes: Some(&built),
            config: Config {
                seal_bytes: 4096,
                ..Config::default()
            },
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    // Through `add` (descriptors): an IVF model files each row under its list.
    let add = |index: &Index, r: std::ops::Range<usize>, licence: bool, taken: bool| {
        let a = attributes_for(&ids[r.clone()], licence, taken);
        let opts = AddOptions {
            ids: Some(&ids[r.clone()]),
            attributes: Some(&a),
            ..AddOptions::default()
        };
        index.add(x.slice(s![r, ..]), &opts).unwrap();
    };
    add(&index, 1200..1500, false, false);
    index.commit().unwrap();
    drop(index);
    let index = Index::open(dir, Config::default()).unwrap();
    index
        .add_column("taken", ColumnType::Timestamp, Value::Timestamp(0))
        .unwrap();
    add(&index, 1500..x.nrows(), true, true);
    let gone: Vec<u64> = ids.iter().copied().step_by(13).collect();
    index.delete(&gone).unwrap();
    index.commit().unwrap();
    let snap = index.snapshot();
    assert!(snap.blocks().any(|b| b.segment().is_some()), "no segment");
    assert!(snap.blocks().any(|b| b.segment().is_none()), "no log block");
    index
}

/// A random test of an attribute column and the test's reading of it (over [`attrs_of`]).
fn attribute_leaf(rng: &mut StdRng) -> (String, Box<dyn Fn(u64) -> bool>) {
    let a = attrs_of;
    match rng.random_range(0..12) {
        0 => {
            let c = rng.random_range(1998..2027);
            (format!("year >= {c}"), Box::new(move |id| a(id).year >= c))
        }
        1 => {
            let set: BTreeSet<i64> = (0..3).map(|_| rng.random_range(2000..2025)).collect();
            let list = set
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            (
                format!("year IN ({list})"),
                Box::new(move |id| set.contains(&a(id).year)),
            )
        }
        2 => {
            let c = rng.random_range(0..1000) as f64 / 10.0;
            (format!("score < {c}"), Box::new(move |id| a(id).score < c))
        }
        3 => {
            let c = rng.random_range(0..1000) as f64 / 10.0;
            (
                format!("score != {c}"),
                Box::new(move |id| a(id).score != c),
            )
        }
        4 => ("public".into(), Box::new(move |id| a(id).public)),
        5 => ("public = FALSE".into(), Box::new(move |id| !a(id).public)),
        6 => {
            let l = LICENCES[rng.random_range(0..4)];
            (
                format!("licence IN ('{l}', 'none')"),
                Box::new(move |id| [l, "none"].contains(&a(id).licence)),
            )
        }
        7 => {
            let l = LICENCES[rng.random_range(0..4)];
            (
                format!("licence != '{l}'"),
                Box::new(move |id| a(id).licence != l),
            )
        }
        8 => {
            let t = format!("t{}", rng.random_range(0..12));
            let w = t.clone();
            (
                format!("tags HAS '{t}'"),
                Box::new(move |id| a(id).tags.contains(&w)),
            )
        }
        9 => {
            let (t, u) = (rng.random_range(0..5), 5 + rng.random_range(0..7));
            (
                format!("tags HAS ALL ('t{t}', 't{u}')"),
                Box::new(move |id| {
                    let g = a(id).tags;
                    g.contains(&format!("t{t}")) && g.contains(&format!("t{u}"))
                }),
            )
        }
        10 => (
            "tags HAS ANY ('rare', 'nope')".into(),
            Box::new(move |id| a(id).tags.iter().any(|t| t == "rare")),
        ),
        _ => {
            let c = T2010 + rng.random_range(1400..1800) * DAY;
            if rng.random_bool(0.5) {
                (
                    format!("taken >= {c}"),
                    Box::new(move |id| a(id).taken >= c),
                )
            } else {
                (
                    "taken < '2010-01-01'".into(),
                    Box::new(move |id| a(id).taken < T2010),
                )
            }
        }
    }
}

/// A random predicate over `id` (ids 0..17970, multiples of 10) and the attribute columns,
/// and the test's own reading of it: leaves of every comparison and IN form, combined by AND,
/// OR, NOT and parentheses.
fn predicate(rng: &mut StdRng, depth: u32) -> (String, Box<dyn Fn(u64) -> bool>) {
    if (depth == 0 || rng.random_bool(0.35)) && rng.random_bool(0.5) {
        return attribute_leaf(rng);
    }
    if depth == 0 || rng.random_bool(0.35) {
        let c: u64 = rng.random_range(0..1800) * 10 + if rng.random_bool(0.2) { 5 } else { 0 };
        return match rng.random_range(0..8) {
            0 => (format!("id < {c}"), Box::new(move |id| id < c)),
            1 => (format!("id >= {c}"), Box::new(move |id| id >= c)),
            2 => (format!("id <= {c}"), Box::new(move |id| id <= c)),
            3 => (format!("id > {c}"), Box::new(move |id| id > c)),
            4 => (format!("id != {c}"), Box::new(move |id| id != c)),
            5 => (format!("id = {c}"), Box::new(move |id| id == c)),
            6 | 7 => {
                let n = rng.random_range(1..40);
                let set: BTreeSet<u64> = (0..n).map(|_| rng.random_range(0..1800) * 10).collect();
                let list = set
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                if rng.random_bool(0.5) {
                    (
                        format!("id IN ({list})"),
                        Box::new(move |id| set.contains(&id)),
                    )
                } else {
                    (
                        format!("id NOT IN ({list})"),
                        Box::new(move |id| !set.contains(&id)),
                    )
                }
            }
            _ => unreachable!(),
        };
    }
    let (a, fa) = predicate(rng, depth - 1);
    match rng.random_range(0..3) {
        0 => {
            let (b, fb) = predicate(rng, depth - 1);
            (
                format!("({a}) AND ({b})"),
                Box::new(move |id| fa(id) && fb(id)),
            )
        }
        1 => {
            let (b, fb) = predicate(rng, depth - 1);
            (
                format!("({a}) or {b}"),
                Box::new(move |id| fa(id) || fb(id)),
            )
        }
        _ => (format!("NOT ({a})"), Box::new(move |id| !fa(id))),
    }
}

/// A random filter: a predicate, an id selector, or both, with the test's reading of it.
fn random_filter(rng: &mut StdRng) -> (RowFilter, String, Box<dyn Fn(u64) -> bool>) {
    let (text, f) = predicate(rng, 3);
    let kind = rng.random_range(0..4);
    if kind == 0 {
        return (RowFilter::parse(&text).unwrap(), text, f);
    }
    let n = [3, 40, 400, 1500][rng.random_range(0..4)];
    let ids: BTreeSet<u64> = (0..n).map(|_| rng.random_range(0..1800) * 10).collect();
    let sel = IdSelector::new(ids.iter().copied());
    let what = format!("ids ({} of them)", ids.len());
    if kind == 1 {
        (
            RowFilter::ids(sel),
            what,
            Box::new(move |id| ids.contains(&id)),
        )
    } else {
        let both = RowFilter::parse(&text).unwrap().and_ids(sel);
        (
            both,
            format!("{text} AND {what}"),
            Box::new(move |id| f(id) && ids.contains(&id)),
        )
    }
}

/// The live ids of the snapshot the filter passes.
fn passing(snap: &Snapshot, pass: &dyn Fn(u64) -> bool) -> BTreeSet<u64> {
    snap.rows()
        .unwrap()
        .map(|r| r.id)
        .filter(|&id| pass(id))
        .collect()
}

/// The unfiltered ranking of every live row, restricted to the passing ones, first `k`: the
/// brute force over the passing rows (the unfiltered full ranking is itself tested against
/// brute force by `search_modes`).
fn restricted(full: &[Vec<Hit>], pass: &dyn Fn(u64) -> bool, k: usize) -> Vec<Vec<Hit>> {
    full.iter()
        .map(|l| l.iter().filter(|h| pass(h.id)).take(k).copied().collect())
        .collect()
}

const CASES: usize = 24;

fn check_modes(spec: &str, modes: &[SearchMode], seed: u64) {
    let x = digits();
    let q = x.slice(s![3..80;7, ..]);
    let m = model(spec, x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let live = snap.live_rows() as usize;
    let mut rng = StdRng::seed_from_u64(seed);
    for &mode in modes {
        let full = snap.search(q, &SearchParams::new(live, mode)).unwrap();
        for case in 0..CASES {
            let (filter, what, pass) = random_filter(&mut rng);
            let n = passing(&snap, &*pass).len();
            for k in [1, 10, n.max(1) + 5] {
                let want = restricted(&full, &*pass, k);
                for threads in [1, 2] {
                    let p = SearchParams::new(k, mode)
                        .threads(threads)
                        .filter(filter.clone());
                    let got = snap.search(q, &p).unwrap();
                    assert_eq!(
                        got, want,
                        "{spec} {mode:?} case {case}: {what}, k {k}, threads {threads}"
                    );
                }
            }
        }
    }
}

#[test]
fn binary_modes_filtered_equal_brute_force() {
    check_modes("pca-itq:32", &[SearchMode::Hamming, SearchMode::Asym], 1);
}

#[test]
fn hamming_filtered_equals_a_direct_brute_force() {
    let x = digits();
    let q = x.slice(s![5..60;11, ..]);
    let m = model("pca-itq:64", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let qc = m.encode(q).unwrap();
    let cb = m.code_bytes();
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..CASES {
        let (filter, what, pass) = random_filter(&mut rng);
        let want: Vec<Vec<Hit>> = qc
            .chunks_exact(cb)
            .map(|qq| {
                let mut l: Vec<Hit> = snap
                    .rows()
                    .unwrap()
                    .filter(|r| pass(r.id))
                    .map(|r| Hit {
                        id: r.id,
                        score: hamming_distance(qq, r.code).unwrap() as f32,
                    })
                    .collect();
                l.sort_by(|a, b| a.score.total_cmp(&b.score).then(a.id.cmp(&b.id)));
                l.truncate(10);
                l
            })
            .collect();
        for mih in [MihChoice::Off, MihChoice::On, MihChoice::Auto] {
            let p = SearchParams::new(10, SearchMode::Hamming)
                .mih(mih)
                .filter(filter.clone());
            assert_eq!(snap.search(q, &p).unwrap(), want, "{what} {mih:?}");
        }
    }
}

#[test]
fn pq_modes_filtered_equal_brute_force() {
    check_modes("pq:8x8", &[SearchMode::AdcL2, SearchMode::AdcIp], 3);
}

#[test]
fn fastscan_filtered_equals_brute_force() {
    let x = digits();
    let m = model("pq4:16", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    assert!(
        snap.blocks().any(|b| b.fastscan_m().is_some()),
        "no fast-scan segment"
    );
    drop(snap);
    check_modes("pq4:16", &[SearchMode::AdcL2], 4);
}

#[test]
fn float_modes_filtered_equal_brute_force() {
    check_modes(
        "pca:16,float",
        &[SearchMode::FloatL2, SearchMode::FloatDot],
        5,
    );
}

#[test]
fn exact_and_reranked_filtered_search() {
    let x = digits();
    let q = x.slice(s![2..70;9, ..]);
    let m = model("pq:8x8", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let mem = MemoryVectors::new(x.ncols(), &ids, x.iter().copied().collect()).unwrap();
    let live = snap.live_rows() as usize;
    let full_exact = snap
        .search_with_vectors(q, &SearchParams::new(live, SearchMode::ExactL2), &mem)
        .unwrap();
    let full_adc = snap
        .search(q, &SearchParams::new(live, SearchMode::AdcL2))
        .unwrap();
    let mut rng = StdRng::seed_from_u64(6);
    for case in 0..CASES {
        let (filter, what, pass) = random_filter(&mut rng);
        let p = SearchParams::new(10, SearchMode::ExactL2).filter(filter.clone());
        let got = snap.search_with_vectors(q, &p, &mem).unwrap();
        assert_eq!(
            got,
            restricted(&full_exact, &*pass, 10),
            "exact case {case}: {what}"
        );
        // Re-ranking: the R best passing rows by ADC, re-scored exactly.
        let r = 30;
        let p = SearchParams::new(10, SearchMode::AdcL2)
            .rerank(r)
            .filter(filter.clone());
        let got = snap.search_with_vectors(q, &p, &mem).unwrap();
        let cands = restricted(&full_adc, &*pass, r);
        for (qi, (g, c)) in got.iter().zip(&cands).enumerate() {
            let set: BTreeSet<u64> = c.iter().map(|h| h.id).collect();
            let want: Vec<Hit> = full_exact[qi]
                .iter()
                .filter(|h| set.contains(&h.id))
                .take(10)
                .copied()
                .collect();
            assert_eq!(g, &want, "rerank case {case} query {qi}: {what}");
        }
    }
}

#[test]
fn classifier_and_radius_queries_filter() {
    let x = digits();
    let m = model("pca-itq:16", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let live = snap.live_rows() as usize;
    let c = CodeClassifier::from_values(
        &(0..17)
            .map(|i| (i as f32 - 8.0) / 4.0)
            .collect::<Vec<f32>>(),
    );
    let full = snap
        .search_classifier(&c, &SearchParams::new(live, SearchMode::Hamming))
        .unwrap();
    let q = x.slice(s![0..40;4, ..]);
    let full_radius = snap.search_radius(q, 2).unwrap();
    let mut rng = StdRng::seed_from_u64(7);
    for case in 0..CASES {
        let (filter, what, pass) = random_filter(&mut rng);
        let p = SearchParams::new(10, SearchMode::Hamming).filter(filter.clone());
        let got = snap.search_classifier(&c, &p).unwrap();
        assert_eq!(
            got,
            restricted(std::slice::from_ref(&full), &*pass, 10)[0],
            "classifier case {case}: {what}"
        );
        let got = snap.search_radius_filtered(q, 2, &filter).unwrap();
        assert_eq!(
            got,
            restricted(&full_radius, &*pass, usize::MAX),
            "radius case {case}: {what}"
        );
    }
}

#[test]
fn example_queries_filter() {
    let x = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let live = snap.live_rows() as usize;
    let pos = x.slice(s![3..40;10, ..]);
    // The negatives are drawn from every live row, filter or not: the same SVM either way.
    let neg = Negatives::Sampled {
        count: 200,
        seed: 9,
    };
    let full = snap
        .search_examples(
            pos,
            neg,
            &ExampleParams::new(SearchParams::new(live, SearchMode::Hamming)),
        )
        .unwrap();
    let mut rng = StdRng::seed_from_u64(10);
    for case in 0..CASES {
        let (filter, what, pass) = random_filter(&mut rng);
        let p = ExampleParams::new(SearchParams::new(10, SearchMode::Hamming).filter(filter));
        let got = snap.search_examples(pos, neg, &p).unwrap();
        assert_eq!(
            got,
            restricted(std::slice::from_ref(&full), &*pass, 10)[0],
            "examples case {case}: {what}"
        );
    }
}

#[test]
fn a_filter_passing_nothing_returns_empty_lists() {
    let x = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let q = x.slice(s![0..3, ..]);
    for f in ["FALSE", "id > 99999999", "id IN (0, 13)"] {
        // id 0 is deleted (every 13th id from 0), 13 is no id.
        let p = SearchParams::new(5, SearchMode::Hamming).filter(RowFilter::parse(f).unwrap());
        assert_eq!(
            snap.search(q, &p).unwrap(),
            vec![Vec::<Hit>::new(); 3],
            "{f}"
        );
    }
    let p = SearchParams::new(5, SearchMode::Hamming).filter(RowFilter::ids(IdSelector::new([])));
    assert_eq!(snap.search(q, &p).unwrap(), vec![Vec::<Hit>::new(); 3]);
}

#[test]
fn filter_errors_are_typed_and_name_the_column() {
    let x = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let q = x.slice(s![0..2, ..]);
    let p = SearchParams::new(5, SearchMode::Hamming)
        .filter(RowFilter::parse("id > 3 AND yaer >= 2010").unwrap());
    match snap.search(q, &p) {
        Err(SearchError::Filter(FilterError::UnknownColumn {
            column: 12, name, ..
        })) => {
            assert_eq!(name, "yaer")
        }
        other => panic!("{other:?}"),
    }
    let p = SearchParams::new(5, SearchMode::Hamming).filter(RowFilter::parse("id = 'x'").unwrap());
    assert!(matches!(
        snap.search(q, &p),
        Err(SearchError::Filter(FilterError::Type { column: 6, .. }))
    ));
    assert!(matches!(
        RowFilter::parse("id >"),
        Err(FilterError::Syntax { column: 5, .. })
    ));
}

/// A filter, its text and its reading of an id.
type FilterCase = (RowFilter, String, Box<dyn Fn(u64) -> bool>);

/// Random filters, then selective ones (a few percent of the rows, under the 1/16 of them
/// that one of 16 lists holds).
fn ivf_cases(rng: &mut StdRng) -> Vec<FilterCase> {
    let mut cases: Vec<_> = (0..CASES).map(|_| random_filter(rng)).collect();
    let range = |text: &str| RowFilter::parse(text).unwrap();
    cases.push((
        range("id < 600"),
        "id < 600".into(),
        Box::new(|id| id < 600),
    ));
    cases.push((
        range("id >= 17000"),
        "id >= 17000".into(),
        Box::new(|id| id >= 17000),
    ));
    let every_7th: Vec<u64> = (0..7000).step_by(70).collect();
    cases.push((
        RowFilter::ids(IdSelector::new(every_7th.iter().copied())),
        "ids 0, 70, …, 6930".into(),
        Box::new(move |id| every_7th.contains(&id)),
    ));
    cases
}

/// Under a filter, a probed IVF query (ADC) returns min(k, passing live rows) hits: the best
/// passing rows of the shortest run of its nearest lists, from its `nprobe` on, holding k of
/// them (or every list) — the unfiltered search of that many lists restricted to the passing
/// rows, ties by id — or, when probing on would read more rows than the flat search over the
/// passing rows, that flat search's answer. Both happen over these cases, on 1 and 2 threads.
#[test]
fn ivf_filtered_search_probes_on_or_falls_back_to_the_flat_search() {
    let x = digits();
    let q = x.slice(s![1..90;4, ..]);
    let m = model("ivf:16,pq:8x8", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let live = snap.live_rows() as usize;
    // Per number of lists m, every row of each query's m nearest lists, ranked.
    let prefixes: Vec<Vec<Vec<Hit>>> = (1..=16)
        .map(|n| {
            snap.search(q, &SearchParams::new(live, SearchMode::AdcL2).nprobe(n))
                .unwrap()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(8);
    let (mut probed_more, mut fell_back, mut in_nprobe) = (0, 0, 0);
    for (case, (filter, what, pass)) in ivf_cases(&mut rng).into_iter().enumerate() {
        let n = passing(&snap, &*pass).len();
        for (nprobe, k) in [(1, 10), (2, 5), (3, 1)] {
            let flat = snap
                .search(
                    q,
                    &SearchParams::new(k, SearchMode::AdcL2).filter(filter.clone()),
                )
                .unwrap();
            assert_eq!(
                flat,
                restricted(&prefixes[15], &*pass, k),
                "ivf flat case {case}: {what}"
            );
            for threads in [1, 2] {
                let probed = snap
                    .search(
                        q,
                        &SearchParams::new(k, SearchMode::AdcL2)
                            .nprobe(nprobe)
                            .threads(threads)
                            .filter(filter.clone()),
                    )
                    .unwrap();
                for (qi, l) in probed.iter().enumerate() {
                    let at = format!("case {case} nprobe {nprobe} k {k} query {qi}: {what}");
                    assert_eq!(l.len(), k.min(n), "{at}");
                    // The shortest run of lists from nprobe on holding k passing rows.
                    let held = |lists: usize| {
                        prefixes[lists - 1][qi]
                            .iter()
                            .filter(|h| pass(h.id))
                            .count()
                    };
                    let lists = (nprobe..=16).find(|&m| held(m) >= k).unwrap_or(16);
                    let want = restricted(&prefixes[lists - 1][qi..=qi], &*pass, k);
                    if l == &want[0] {
                        if threads == 1 {
                            if lists > nprobe {
                                probed_more += 1;
                            } else {
                                in_nprobe += 1;
                            }
                        }
                    } else {
                        assert_eq!(l, &flat[qi], "neither probed nor flat: {at}");
                        fell_back += 1;
                    }
                }
            }
        }
    }
    assert!(
        probed_more > 0 && fell_back > 0 && in_nprobe > 0,
        "{in_nprobe} within nprobe, {probed_more} probed on, {fell_back} flat"
    );
}

/// Re-ranked (stored vectors), a filtered probed IVF query returns min(k, passing) passing
/// rows by their exact scores; a query left to the flat search gets the exact top-k over the
/// passing rows, and one answered by its lists the re-ranking of its R best passing rows there.
#[test]
fn ivf_filtered_reranked_search_gives_exact_scores_of_passing_rows() {
    let x = digits();
    let q = x.slice(s![3..90;5, ..]);
    let m = model("ivf:16,pq:8x8", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let mem = MemoryVectors::new(x.ncols(), &ids, x.iter().copied().collect()).unwrap();
    let live = snap.live_rows() as usize;
    let full_exact = snap
        .search_with_vectors(q, &SearchParams::new(live, SearchMode::ExactL2), &mem)
        .unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let (mut exact_answers, mut cases) = (0, 0);
    for (case, (filter, what, pass)) in ivf_cases(&mut rng).into_iter().enumerate() {
        let n = passing(&snap, &*pass).len();
        let p = SearchParams::new(10, SearchMode::AdcL2)
            .nprobe(2)
            .rerank(20)
            .filter(filter);
        let got = snap.search_with_vectors(q, &p, &mem).unwrap();
        let exact = restricted(&full_exact, &*pass, 10);
        for (qi, l) in got.iter().enumerate() {
            cases += 1;
            assert_eq!(l.len(), 10.min(n), "case {case} query {qi}: {what}");
            assert!(l.iter().all(|h| pass(h.id)), "case {case}: {what}");
            assert!(l.windows(2).all(|w| w[0].score <= w[1].score));
            for h in l {
                let e = full_exact[qi].iter().find(|e| e.id == h.id).unwrap();
                assert_eq!(e.score, h.score, "case {case} query {qi}: {what}");
            }
            if l == &exact[qi] {
                exact_answers += 1;
            }
        }
    }
    assert!(
        exact_answers > 0 && exact_answers < cases,
        "{exact_answers} of {cases} answers exact"
    );
}

/// Exact search over stored vectors (f32 and f16 columns) under sparse and broad filters: a
/// sparse filter's passing rows are gathered out of the column before scoring, a broad one is
/// scanned in place masked; both equal the unfiltered exact ranking restricted to the passing
/// rows, ties by id included, on sealed segments and the active log with deletions.
#[test]
fn exact_search_over_stored_vectors_filtered_equals_brute_force() {
    use codedb::format::VectorDType;
    let x = digits();
    let q = x.slice(s![5..80;6, ..]);
    let m = model("pq:8x8", x.view());
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 3 * r + 1).collect();
    for dtype in [VectorDType::F32, VectorDType::F16] {
        let tmp = tempfile::tempdir().unwrap();
        let index = Index::build(
            tmp.path(),
            &m,
            x.slice(s![0..1400, ..]),
            &BuildOptions {
                ids: Some(&ids[..1400]),
                store_vectors: Some(dtype),
                config: Config {
                    seal_bytes: 8192,
                    ..Config::default()
                },
                ..BuildOptions::default()
            },
            &mut |_| {},
        )
        .unwrap();
        let rest = AddOptions {
            ids: Some(&ids[1400..]),
            ..AddOptions::default()
        };
        index.add(x.slice(s![1400.., ..]), &rest).unwrap();
        let gone: Vec<u64> = ids.iter().copied().step_by(11).collect();
        index.delete(&gone).unwrap();
        index.commit().unwrap();
        let snap = index.snapshot();
        let live = snap.live_rows() as usize;
        let full = snap
            .search(q, &SearchParams::new(live, SearchMode::ExactL2))
            .unwrap();
        let mut rng = StdRng::seed_from_u64(12);
        for (case, fraction) in [0.01, 0.03, 0.2, 0.6, 0.95].into_iter().enumerate() {
            let chosen: BTreeSet<u64> = ids
                .iter()
                .copied()
                .filter(|_| rng.random_bool(fraction))
                .collect();
            for k in [1, 10, 50] {
                let p = SearchParams::new(k, SearchMode::ExactL2)
                    .filter(RowFilter::ids(IdSelector::new(chosen.iter().copied())));
                let got = snap.search(q, &p).unwrap();
                assert_eq!(
                    got,
                    restricted(&full, &|id| chosen.contains(&id), k),
                    "{dtype:?} case {case} ({fraction}) k {k}"
                );
            }
        }
    }
}

/// A mode an IVF model's residual codes cannot be scanned by is refused alike under a
/// selective filter (which skips probing) and a broad one.
#[test]
fn ivf_filter_refuses_modes_ivf_cannot_scan_whatever_the_plan() {
    let x = digits();
    let q = x.slice(s![0..3, ..]);
    let m = model("ivf:16,pq:8x8", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let mem = MemoryVectors::new(x.ncols(), &ids, x.iter().copied().collect()).unwrap();
    let mut messages = Vec::new();
    for f in ["id < 300", "id >= 0"] {
        let p = SearchParams::new(10, SearchMode::AdcIp)
            .nprobe(1)
            .rerank(20)
            .filter(RowFilter::parse(f).unwrap());
        let e = snap.search_with_vectors(q, &p, &mem).unwrap_err();
        assert!(matches!(e, SearchError::InvalidArgument { .. }), "{f}: {e}");
        messages.push(e.to_string());
    }
    assert_eq!(messages[0], messages[1]);
    assert!(messages[0].contains("squared L2"), "{}", messages[0]);
}
