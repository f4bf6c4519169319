//! IVFADC through the library (`ivf:K,pq:Mx8`): k-means inverted lists with residual PQ codes.
//! Search over every list equals the flat residual search and a brute-force oracle over the
//! rows' reconstructions `c_list + r̂`; `nprobe` restricts to the probed cells; results survive
//! append, seal, compaction and reopening; re-ranking works on top; bad input is refused with
//! typed errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use codedb::format::{ModelFile, VectorDType};
use codedb::model::{Model, ModelError, PipelineSpec, TrainOptions, train};
use codedb::{
    AddOptions, BuildOptions, CompactionPolicy, Config, EncodedOptions, Index, ListAssignment,
    RowBatch, Snapshot, StorageError,
};
use codedb::{Hit, SearchMode, SearchParams};
use common::npy::digits;
use ndarray::{Array2, ArrayView2, s};

const K: usize = 8;

fn model(spec: &str, x: ArrayView2<f32>) -> Model {
    let opts = TrainOptions {
        seed: 5,
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse(spec).unwrap(), x, &opts)
        .unwrap()
        .0
}

/// Digits with ids 10·r, f32 vectors stored: rows 0..1000 built (one segment), 1000..1300
/// added and sealed, 1300..1797 added and left in the active log; every 7th id deleted.
fn index(dir: &Path, m: &Model, x: &Array2<f32>) -> Index {
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let index = Index::build(
        dir,
        m,
        x.slice(s![0..1000, ..]),
        &BuildOptions {
            ids: Some(&ids[..1000]),
            store_vectors: Some(VectorDType::F32),
            config: Config {
                seal_bytes: 4096,
                ..Config::default()
            },
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let add = |index: &Index, r: std::ops::Range<usize>| {
        index
            .add(
                x.slice(s![r.clone(), ..]),
                &AddOptions {
                    ids: Some(&ids[r]),
                    ..AddOptions::default()
                },
            )
            .unwrap();
    };
    add(&index, 1000..1300);
    index.commit().unwrap();
    drop(index);
    let index = Index::open(dir, Config::default()).unwrap();
    add(&index, 1300..1797);
    let gone: Vec<u64> = ids.iter().copied().step_by(7).collect();
    index.delete(&gone).unwrap();
    index.commit().unwrap();
    let snap = index.snapshot();
    assert!(snap.blocks().filter(|b| b.segment().is_some()).count() >= 2);
    assert!(snap.blocks().any(|b| b.segment().is_none()), "no log block");
    index
}

/// The k nearest live rows to each query by the squared distance (f64) between the query's
/// projection and the row's reconstruction `c_list + decode(code)`, restricted to the lists
/// `allowed(query)`; ties by id.
fn oracle(
    snap: &Snapshot,
    m: &Model,
    q: ArrayView2<f32>,
    k: usize,
    allowed: &dyn Fn(usize, u32) -> bool,
) -> Vec<Vec<(u64, f64)>> {
    let coarse = m.ivf().unwrap();
    let pq = m.pq().unwrap();
    let y = m.project(q).unwrap();
    let rows: Vec<(u64, u32, Vec<f32>)> = snap
        .rows()
        .unwrap()
        .map(|r| {
            let l = r.list.expect("every IVF row has a list");
            let res = pq.decode(r.code).unwrap();
            let rec: Vec<f32> = res
                .iter()
                .zip(coarse.centroid(l as usize))
                .map(|(a, b)| a + b)
                .collect();
            (r.id, l, rec)
        })
        .collect();
    y.rows()
        .into_iter()
        .enumerate()
        .map(|(i, yq)| {
            let mut d: Vec<(u64, f64)> = rows
                .iter()
                .filter(|(_, l, _)| allowed(i, *l))
                .map(|(id, _, rec)| {
                    let s: f64 = yq
                        .iter()
                        .zip(rec)
                        .map(|(a, b)| (f64::from(*a) - f64::from(*b)).powi(2))
                        .sum();
                    (*id, s)
                })
                .collect();
            d.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            d.truncate(k);
            d
        })
        .collect()
}

fn assert_matches(got: &[Vec<Hit>], want: &[Vec<(u64, f64)>], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.len(), w.len(), "{what} query {i}");
        for (j, (h, (id, s))) in g.iter().zip(w).enumerate() {
            let tol = 1e-3 * s.max(1.0);
            assert!(
                (f64::from(h.score) - s).abs() <= tol,
                "{what} query {i} rank {j}: score {} vs {s}",
                h.score
            );
            // Ids agree except where the oracle itself has a near-tie.
            let tie = w.iter().any(|(o, t)| o != id && (t - s).abs() <= 2.0 * tol);
            assert!(
                h.id == *id || tie,
                "{what} query {i} rank {j}: id {} vs {id}",
                h.id
            );
        }
    }
}

#[test]
fn all_lists_equal_the_flat_residual_search_and_the_oracle() {
    let (x, _) = digits();
    let m = model(&format!("ivf:{K},pq:8x8"), x.view());
    assert_eq!(m.ivf().unwrap().lists(), K);
    let tmp = tempfile::tempdir().unwrap();
    let idx = index(tmp.path(), &m, &x);
    let snap = idx.snapshot();
    // Every row is filed under its nearest centroid.
    let lists: std::collections::HashSet<u32> =
        snap.rows().unwrap().map(|r| r.list.unwrap()).collect();
    assert!(lists.len() > 1 && lists.iter().all(|&l| (l as usize) < K));
    let q = x.slice(s![3..1797;37, ..]);
    let k = 10;
    let p = SearchParams::new(k, SearchMode::AdcL2);
    let flat = snap.search(q, &p).unwrap();
    let all = snap.search(q, &p.clone().nprobe(K)).unwrap();
    assert_eq!(flat, all, "nprobe = K is the flat residual search, exactly");
    assert_matches(&flat, &oracle(&snap, &m, q, k, &|_, _| true), "flat");
    // Threads do not change results.
    assert_eq!(snap.search(q, &p.clone().threads(2)).unwrap(), flat);
    // nprobe < K: the oracle restricted to each query's probed lists.
    for nprobe in [1, 3] {
        let got = snap.search(q, &p.clone().nprobe(nprobe)).unwrap();
        let probes = snap.probe_lists(q, nprobe).unwrap();
        assert!(probes.iter().all(|l| l.len() == nprobe));
        let want = oracle(&snap, &m, q, k, &|i, l| probes[i].contains(&l));
        assert_matches(&got, &want, &format!("nprobe {nprobe}"));
    }
    // Re-ranking every live row with stored vectors is the exact search.
    let live = snap.live_rows() as usize;
    let rr = snap.search(q, &p.clone().rerank(live)).unwrap();
    let exact = snap
        .search(q, &SearchParams::new(k, SearchMode::ExactL2))
        .unwrap();
    assert_eq!(rr, exact);
    // Re-ranking the probed candidates: the exact distances (the same kernel) of exactly the
    // ADC candidates, whatever block (segment or log) and row they sit in.
    let (nprobe, r) = (3, 40);
    let cands = snap
        .search(q, &SearchParams::new(r, SearchMode::AdcL2).nprobe(nprobe))
        .unwrap();
    let got = snap.search(q, &p.clone().nprobe(nprobe).rerank(r)).unwrap();
    for (qi, (c, g)) in cands.iter().zip(&got).enumerate() {
        let mut want: Vec<(f32, u64)> = c
            .iter()
            .map(|h| {
                let row = x.row(h.id as usize / 10).to_vec();
                let qv = q.row(qi).to_vec();
                (codedb::kernels::l2sq_f32(&qv, &row).unwrap(), h.id)
            })
            .collect();
        want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        want.truncate(k);
        let g: Vec<(f32, u64)> = g.iter().map(|h| (h.score, h.id)).collect();
        assert_eq!(g, want, "query {qi}");
    }
    // Exact search restricted to the probed cells only returns rows of those cells.
    let ex1 = snap
        .search(q, &SearchParams::new(k, SearchMode::ExactL2).nprobe(1))
        .unwrap();
    let probes = snap.probe_lists(q, 1).unwrap();
    let by_id: std::collections::HashMap<u64, u32> = snap
        .rows()
        .unwrap()
        .map(|r| (r.id, r.list.unwrap()))
        .collect();
    for (h, p) in ex1.iter().zip(&probes) {
        assert!(h.iter().all(|h| p.contains(&by_id[&h.id])));
    }
}

#[test]
fn ivf_results_survive_seal_compaction_and_reopen() {
    let (x, _) = digits();
    let m = model(&format!("ivf:{K},pq:8x8"), x.view());
    let tmp = tempfile::tempdir().unwrap();
    let idx = index(tmp.path(), &m, &x);
    let q = x.slice(s![1..1797;41, ..]);
    let params = [
        SearchParams::new(10, SearchMode::AdcL2),
        SearchParams::new(10, SearchMode::AdcL2).nprobe(2),
        SearchParams::new(10, SearchMode::AdcL2)
            .nprobe(3)
            .rerank(40),
    ];
    let before: Vec<_> = params
        .iter()
        .map(|p| idx.snapshot().search(q, p).unwrap())
        .collect();
    idx.compact(&CompactionPolicy::default()).unwrap();
    drop(idx);
    let snap = Snapshot::open(tmp.path()).unwrap();
    for (p, b) in params.iter().zip(&before) {
        assert_eq!(&snap.search(q, p).unwrap(), b, "{p:?}");
    }
    // The model read back from the index file encodes exactly as the trained one.
    let (c0, l0) = m.encode_lists(x.slice(s![0..50, ..])).unwrap();
    let (c1, l1) = snap
        .model()
        .unwrap()
        .encode_lists(x.slice(s![0..50, ..]))
        .unwrap();
    assert_eq!((c0, l0), (c1, l1));
}

#[test]
fn ivf_model_file_round_trips_byte_identically() {
    let (x, _) = digits();
    let m = model(&format!("ivf:{K},pq:8x8"), x.view());
    let bytes = m.to_model_file().to_bytes().unwrap();
    let mf = ModelFile::from_bytes(&bytes, Path::new("m")).unwrap();
    let back = Model::from_model_file(&mf).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.to_model_file().to_bytes().unwrap(), bytes);
    // Encoding one row alone gives the bytes and list it gets in a batch.
    let (all, lists) = m.encode_lists(x.slice(s![0..300, ..])).unwrap();
    let lists = lists.unwrap();
    for r in [0usize, 17, 299] {
        let (one, l) = back.encode_lists(x.slice(s![r..r + 1, ..])).unwrap();
        assert_eq!(one, all[r * 8..(r + 1) * 8]);
        assert_eq!(l.unwrap(), [lists[r]]);
    }
}

#[test]
fn ivf_bad_input_gives_typed_errors() {
    let (x, _) = digits();
    // More lists than training rows.
    let e = train(
        &PipelineSpec::parse("ivf:2000,pq:8x8").unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ModelError::TooFewRows { .. }), "{e}");
    // ivf needs an 8-bit pq right after it; K is bounded.
    for spec in [
        "ivf:8,pq:8x4",
        "ivf:8,bits",
        "ivf:8,float",
        "ivf:8,center,pq:8x8",
    ] {
        let e = PipelineSpec::parse(spec).unwrap_err();
        assert!(matches!(e, ModelError::BadSpec { .. }), "{spec}: {e}");
        assert!(e.to_string().contains("ivf"), "{spec}: {e}");
    }
    assert!(PipelineSpec::parse("ivf:65537,pq:8x8").is_err());
    let m = model(&format!("ivf:{K},pq:8x8"), x.view());
    let tmp = tempfile::tempdir().unwrap();
    let idx = index(tmp.path(), &m, &x);
    let snap = idx.snapshot();
    let q = x.slice(s![0..4, ..]);
    let err = |p: SearchParams| snap.search(q, &p).unwrap_err().to_string();
    let adc = SearchParams::new(5, SearchMode::AdcL2);
    for n in [0, K + 1] {
        let e = err(adc.clone().nprobe(n));
        assert!(e.contains("nprobe"), "{e}");
    }
    assert!(err(adc.clone().lists(vec![1])).contains("lists"));
    assert!(err(SearchParams::new(5, SearchMode::AdcIp)).contains("adc-ip"));
    let mut nan = q.to_owned();
    nan[[1, 3]] = f32::NAN;
    let e = snap.search(nan.view(), &adc).unwrap_err().to_string();
    assert!(e.contains("NaN") || e.contains("finite"), "{e}");
    // Codes of an IVF model need their lists, and lists must exist.
    let codes = m.encode(x.slice(s![0..2, ..])).unwrap();
    let e = idx
        .add_encoded(&RowBatch::new(&codes), &EncodedOptions::default())
        .unwrap_err();
    assert!(
        matches!(&e, StorageError::InvalidArgument { argument, .. } if argument == "lists"),
        "{e}"
    );
    let far = [K as u32, 0];
    let e = idx
        .add_encoded(
            &RowBatch::new(&codes).with_lists(&far),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("lists"), "{e}");
    // Class lists are refused: the model files rows itself.
    let e = idx
        .add(
            x.slice(s![0..2, ..]),
            &AddOptions {
                ids: Some(&[100_000, 100_001]),
                lists: Some(ListAssignment::Label),
                labels: Some(&[0, 1]),
                ..AddOptions::default()
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("ivf"), "{e}");
    let e = Index::build(
        &tmp.path().join("b"),
        &m,
        x.view(),
        &BuildOptions {
            lists: Some(ListAssignment::Label),
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(&e, StorageError::InvalidArgument { argument, .. } if argument == "lists"),
        "{e}"
    );
    // Residual codes cannot be decoded alone.
    assert!(m.decode(&codes).is_err());
}
