//! Every search mode against a brute-force reference over the live rows of a multi-block
//! index with deletions (segments and active-log batches), re-ranking and exact search with
//! in-memory vectors, radius lookups, and the errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use codedb::BuildOptions;
use codedb::format::CodeKind;
use codedb::internals::{HammingTable, MemoryVectors, RowRef, VectorSource, asym_tables};
use codedb::kernels::{DenseValues, Direction, hamming_distance, l2sq_f32, lut4_score, lut8_score};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{Config, Index, Snapshot};
use codedb::{EncodedOptions, RowBatch};
use codedb::{Hit, SearchError, SearchMode, SearchParams};
use ndarray::{Array2, ArrayView2, s};

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

/// Rows 0..1797 with ids 10·r: built in one commit of 1200 rows (sealed), two adds of 300
/// and 297 rows (log batches, or a segment for wide codes), every 13th id deleted.
fn multi_block_index(dir: &Path, m: &Model, x: ArrayView2<f32>) -> Index {
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let index = Index::build(
        dir,
        m,
        x.slice(s![0..1200, ..]),
        &BuildOptions {
            ids: Some(&ids[..1200]),
            config: Config {
                seal_bytes: 4096,
                ..Config::default()
            },
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    index
        .add_encoded(
            &RowBatch::new(&m.encode(x.slice(s![1200..1500, ..])).unwrap())
                .with_ids(&ids[1200..1500]),
            &EncodedOptions::default(),
        )
        .unwrap();
    index.commit().unwrap();
    drop(index);
    // Reopen with the default (large) seal size so the last batch stays in the log.
    let index = Index::open(dir, Config::default()).unwrap();
    index
        .add_encoded(
            &RowBatch::new(&m.encode(x.slice(s![1500.., ..])).unwrap()).with_ids(&ids[1500..]),
            &EncodedOptions::default(),
        )
        .unwrap();
    let gone: Vec<u64> = ids.iter().copied().step_by(13).collect();
    index.delete(&gone).unwrap();
    index.commit().unwrap();
    let snap = index.snapshot();
    assert!(snap.blocks().count() >= 3);
    assert!(snap.blocks().any(|b| b.segment().is_some()), "no segment");
    assert!(snap.blocks().any(|b| b.segment().is_none()), "no log block");
    assert_eq!(snap.live_rows() as usize, 1797 - gone.len());
    index
}

/// Brute force: score every live row with `score(query, code)`, sort, keep k.
fn brute(
    snap: &Snapshot,
    nq: usize,
    k: usize,
    direction: Direction,
    score: impl Fn(usize, &[u8]) -> f32,
) -> Vec<Vec<Hit>> {
    (0..nq)
        .map(|q| {
            let mut l: Vec<Hit> = snap
                .rows()
                .unwrap()
                .map(|r| Hit {
                    id: r.id,
                    score: score(q, r.code),
                })
                .collect();
            l.sort_by(|a, b| {
                let o = match direction {
                    Direction::SmallerIsBetter => a.score.total_cmp(&b.score),
                    Direction::LargerIsBetter => b.score.total_cmp(&a.score),
                };
                o.then(a.id.cmp(&b.id))
            });
            l.truncate(k);
            l
        })
        .collect()
}

fn check_mode(snap: &Snapshot, q: ArrayView2<f32>, mode: SearchMode, want: &[Vec<Hit>]) {
    for threads in [1, 2] {
        let p = SearchParams::new(want[0].len(), mode).threads(threads);
        let got = snap.search(q, &p).unwrap();
        assert_eq!(got, want, "{mode:?} threads {threads}");
    }
}

#[test]
fn binary_modes_equal_brute_force() {
    let x = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let index = multi_block_index(tmp.path(), &m, x.view());
    let snap = index.snapshot();
    let q = x.slice(s![0..40;4, ..]);
    let nq = q.nrows();
    let qc = m.encode(q).unwrap();
    let want = brute(&snap, nq, 15, Direction::SmallerIsBetter, |i, c| {
        hamming_distance(&qc[i * 4..(i + 1) * 4], c).unwrap() as f32
    });
    check_mode(&snap, q, SearchMode::Hamming, &want);
    let luts = asym_tables(&m, q).unwrap();
    let want = brute(&snap, nq, 15, Direction::SmallerIsBetter, |i, c| {
        lut8_score(c, &luts[i * 4 * 256..(i + 1) * 4 * 256]).unwrap()
    });
    check_mode(&snap, q, SearchMode::Asym, &want);
    // A stored row's own code scores 0 in both modes (row 4 has id 40, not deleted).
    let own = snap.search(
        x.slice(s![4..5, ..]),
        &SearchParams::new(3, SearchMode::Asym),
    );
    assert!(own.unwrap()[0].iter().any(|h| h.id == 40 && h.score == 0.0));
    // The index's newest snapshot is the same search.
    assert_eq!(
        index
            .snapshot()
            .search(q, &SearchParams::new(15, SearchMode::Asym))
            .unwrap(),
        want
    );
}

#[test]
fn pq_and_float_modes_equal_brute_force() {
    let x = digits();
    let q = x.slice(s![1..60;6, ..]);
    let nq = q.nrows();
    for spec in ["pq:8x8", "pq4:16"] {
        let m = model(spec, x.view());
        let tmp = tempfile::tempdir().unwrap();
        let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
        for (mode, metric, dir) in [
            (
                SearchMode::AdcL2,
                codedb::model::AdcMetric::L2,
                Direction::SmallerIsBetter,
            ),
            (
                SearchMode::AdcIp,
                codedb::model::AdcMetric::InnerProduct,
                Direction::LargerIsBetter,
            ),
        ] {
            let t = m.adc_tables(q, metric).unwrap();
            let per = t.ncols();
            let want = brute(&snap, nq, 12, dir, |i, c| {
                let lut = t.row(i).to_vec();
                assert_eq!(lut.len(), per);
                if m.code_kind() == CodeKind::Pq4 {
                    lut4_score(c, per / 16, &lut).unwrap()
                } else {
                    lut8_score(c, &lut).unwrap()
                }
            });
            check_mode(&snap, q, mode, &want);
        }
    }
    for spec in ["pca:16,float", "pca:16,float16"] {
        let m = model(spec, x.view());
        let tmp = tempfile::tempdir().unwrap();
        let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
        let p = m.project(q).unwrap();
        let decode = |c: &[u8]| -> Vec<f32> { m.decode(c).unwrap().row(0).to_vec() };
        let want = brute(&snap, nq, 12, Direction::SmallerIsBetter, |i, c| {
            l2sq_f32(&p.row(i).to_vec(), &decode(c)).unwrap()
        });
        // f16 codes: the kernel reads f16 directly; compare ids and scores to 1e-5 relative.
        let got = snap
            .search(q, &SearchParams::new(12, SearchMode::FloatL2))
            .unwrap();
        for (g, w) in got.iter().zip(&want) {
            let gi: Vec<u64> = g.iter().map(|h| h.id).collect();
            let wi: Vec<u64> = w.iter().map(|h| h.id).collect();
            assert_eq!(gi, wi, "{spec}");
            for (a, b) in g.iter().zip(w) {
                assert!((a.score - b.score).abs() <= 1e-5 * b.score.abs().max(1.0));
            }
        }
        let dot = snap
            .search(q, &SearchParams::new(5, SearchMode::FloatDot))
            .unwrap();
        let want = brute(&snap, nq, 5, Direction::LargerIsBetter, |i, c| {
            codedb::kernels::dot_f32(&p.row(i).to_vec(), &decode(c)).unwrap()
        });
        for (g, w) in dot.iter().zip(&want) {
            assert_eq!(
                g.iter().map(|h| h.id).collect::<Vec<_>>(),
                w.iter().map(|h| h.id).collect::<Vec<_>>(),
                "{spec}"
            );
        }
    }
}

/// The raw rows by id (ids 10·r), as re-ranking and exact search read them.
fn memory_vectors(x: &Array2<f32>) -> MemoryVectors {
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    MemoryVectors::new(x.ncols(), &ids, x.iter().copied().collect()).unwrap()
}

/// Exact squared-L2 neighbours among the live rows, with the dense kernel's scores.
fn exact_l2(snap: &Snapshot, x: &Array2<f32>, q: ArrayView2<f32>, k: usize) -> Vec<Vec<Hit>> {
    (0..q.nrows())
        .map(|i| {
            let qi = q.row(i).to_vec();
            let mut l: Vec<Hit> = snap
                .rows()
                .unwrap()
                .map(|r| Hit {
                    id: r.id,
                    score: l2sq_f32(&qi, &x.row(r.id as usize / 10).to_vec()).unwrap(),
                })
                .collect();
            l.sort_by(|a, b| a.score.total_cmp(&b.score).then(a.id.cmp(&b.id)));
            l.truncate(k);
            l
        })
        .collect()
}

/// The same vectors served as whole per-block columns (the dense-kernel path).
struct Columns {
    dim: usize,
    blocks: Vec<Vec<f32>>,
}

impl Columns {
    fn new(snap: &Snapshot, x: &Array2<f32>) -> Columns {
        let blocks = snap
            .blocks()
            .map(|b| {
                b.ids()
                    .unwrap()
                    .iter()
                    .flat_map(|&id| x.row(id as usize / 10).to_vec())
                    .collect()
            })
            .collect();
        Columns {
            dim: x.ncols(),
            blocks,
        }
    }
}

impl VectorSource for Columns {
    fn dim(&self) -> usize {
        self.dim
    }
    fn vector(&self, at: RowRef, out: &mut [f32]) -> Result<bool, SearchError> {
        let v = &self.blocks[at.block][at.row * self.dim..(at.row + 1) * self.dim];
        out.copy_from_slice(v);
        Ok(true)
    }
    fn column(
        &self,
        block: usize,
        rows: std::ops::Range<usize>,
    ) -> Result<Option<DenseValues<'_>>, SearchError> {
        let b = &self.blocks[block];
        Ok(Some(DenseValues::F32(
            &b[rows.start * self.dim..rows.end * self.dim],
        )))
    }
}

#[test]
fn rerank_and_exact_search_with_vectors() {
    let x = digits();
    let m = model("pq:8x8", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let q = x.slice(s![3..300;7, ..]);
    let k = 10;
    let exact = exact_l2(&snap, &x, q, k);
    let mem = memory_vectors(&x);
    let cols = Columns::new(&snap, &x);
    let run =
        |p: SearchParams, src: &dyn VectorSource| snap.search_with_vectors(q, &p, src).unwrap();
    // Exact mode, both vector paths: equal to brute force.
    assert_eq!(run(SearchParams::new(k, SearchMode::ExactL2), &mem), exact);
    assert_eq!(
        run(SearchParams::new(k, SearchMode::ExactL2).threads(2), &cols),
        exact
    );
    // Re-ranking every live row is exact search.
    let all = snap.live_rows() as usize;
    let p = SearchParams::new(k, SearchMode::AdcL2).rerank(all);
    assert_eq!(run(p, &mem), exact);
    // Re-ranking 50 candidates: exact scores of a subset of the ADC top 50, and recall@10
    // against exact search at least that of plain ADC.
    let adc50 = snap
        .search(q, &SearchParams::new(50, SearchMode::AdcL2))
        .unwrap();
    let adc10 = snap
        .search(q, &SearchParams::new(k, SearchMode::AdcL2))
        .unwrap();
    let rr = run(SearchParams::new(k, SearchMode::AdcL2).rerank(50), &cols);
    let recall = |lists: &[Vec<Hit>]| -> f64 {
        let mut found = 0;
        for (l, e) in lists.iter().zip(&exact) {
            found += l.iter().filter(|h| e.iter().any(|x| x.id == h.id)).count();
        }
        found as f64 / (k * exact.len()) as f64
    };
    for (qi, (l, cands)) in rr.iter().zip(&adc50).enumerate() {
        assert_eq!(l.len(), k);
        for h in l {
            assert!(cands.iter().any(|c| c.id == h.id));
            let want = l2sq_f32(&q.row(qi).to_vec(), &x.row(h.id as usize / 10).to_vec());
            assert_eq!(h.score, want.unwrap());
        }
    }
    let (r_rr, r_adc) = (recall(&rr), recall(&adc10));
    assert!(r_rr >= r_adc && r_rr > 0.8, "rerank {r_rr} adc {r_adc}");
    // Inner-product modes re-rank by the inner product.
    let ip = run(SearchParams::new(3, SearchMode::AdcIp).rerank(all), &mem);
    let dot = run(SearchParams::new(3, SearchMode::ExactDot), &cols);
    assert_eq!(ip, dot);
    assert!(ip[0][0].score >= ip[0][2].score);
}

#[test]
fn asym_finds_euclidean_neighbours_at_least_as_well_as_hamming() {
    let x = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let q = x.slice(s![0..1797;9, ..]);
    let exact = exact_l2(&snap, &x, q, 10);
    let recall = |mode| {
        let got = snap.search(q, &SearchParams::new(10, mode)).unwrap();
        let mut found = 0;
        for (l, e) in got.iter().zip(&exact) {
            found += l.iter().filter(|h| e.iter().any(|x| x.id == h.id)).count();
        }
        found as f64 / (10 * exact.len()) as f64
    };
    let (a, h) = (recall(SearchMode::Asym), recall(SearchMode::Hamming));
    eprintln!("recall@10 vs exact L2: asym {a:.3}, hamming {h:.3}");
    assert!(a >= h, "asym {a} hamming {h}");
}

#[test]
fn radius_lookup_equals_brute_force() {
    let x = digits();
    let m = model("pca-itq:16", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = multi_block_index(tmp.path(), &m, x.view()).snapshot();
    let q = x.slice(s![0..1797;37, ..]);
    let qc = m.encode(q).unwrap();
    let table = HammingTable::from_snapshot(&snap).unwrap();
    assert_eq!(table.len(), snap.live_rows() as usize);
    for radius in 0..=2u32 {
        let got = snap.search_radius(q, radius).unwrap();
        let mut nonempty = 0;
        for (i, l) in got.iter().enumerate() {
            let code = &qc[i * 2..(i + 1) * 2];
            let mut want: Vec<(u32, u64)> = snap
                .rows()
                .unwrap()
                .map(|r| (hamming_distance(code, r.code).unwrap(), r.id))
                .filter(|&(d, _)| d <= radius)
                .collect();
            want.sort_unstable();
            let got: Vec<(u32, u64)> = l.iter().map(|h| (h.score as u32, h.id)).collect();
            assert_eq!(got, want, "query {i} radius {radius}");
            assert_eq!(table.lookup(code, radius).unwrap(), want);
            nonempty += usize::from(!l.is_empty());
        }
        if radius == 2 {
            assert!(
                nonempty > got.len() / 2,
                "radius 2 finds something for most queries"
            );
        }
    }
    let e = snap.search_radius(q, 3).unwrap_err().to_string();
    assert!(e.contains("radius"), "{e}");
    // 64-bit codes cannot be hash keys.
    let m64 = model("pca-itq:64", x.view());
    let t2 = tempfile::tempdir().unwrap();
    let idx = Index::build(
        t2.path(),
        &m64,
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let e = idx.snapshot().search_radius(q, 1).unwrap_err().to_string();
    assert!(e.contains("32 bits"), "{e}");
}

#[test]
fn bad_searches_are_clear_errors() {
    let x = digits();
    let m = model("pca-itq:16", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let idx = Index::build(
        tmp.path(),
        &m,
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let snap = idx.snapshot();
    let q = x.slice(s![0..3, ..]);
    let err = |p: SearchParams| snap.search(q, &p).unwrap_err();
    let msg = |p: SearchParams| err(p).to_string();
    assert!(msg(SearchParams::new(0, SearchMode::Hamming)).contains("k"));
    assert!(msg(SearchParams::new(5, SearchMode::Hamming).rerank(4)).contains("rerank"));
    assert!(msg(SearchParams::new(5, SearchMode::FloatL2)).contains("does not apply"));
    assert!(msg(SearchParams::new(5, SearchMode::AdcIp)).contains("does not apply"));
    // Re-ranking and exact search need stored vectors; this index has none.
    assert!(matches!(
        err(SearchParams::new(5, SearchMode::Hamming).rerank(50)),
        SearchError::NoVectors { .. }
    ));
    let e = msg(SearchParams::new(5, SearchMode::ExactL2));
    assert!(e.contains("no stored vectors"), "{e}");
    // Wrong width, NaN, no rows.
    let narrow = Array2::<f32>::zeros((2, 9));
    let e = snap.search(narrow.view(), &SearchParams::new(5, SearchMode::Asym));
    assert!(e.unwrap_err().to_string().contains("64-D"));
    let mut nan = q.to_owned();
    nan[[1, 2]] = f32::NAN;
    for mode in [SearchMode::Hamming, SearchMode::Asym] {
        assert!(
            snap.search(nan.view(), &SearchParams::new(5, mode))
                .is_err()
        );
    }
    let mem = memory_vectors(&x);
    let e = snap.search_with_vectors(nan.view(), &SearchParams::new(5, SearchMode::ExactL2), &mem);
    assert!(e.unwrap_err().to_string().contains("not finite"));
    let empty = Array2::<f32>::zeros((0, 64));
    assert!(
        snap.search(empty.view(), &SearchParams::new(5, SearchMode::Asym))
            .is_err()
    );
    // k above the live rows returns every live row.
    let all = snap
        .search(q, &SearchParams::new(5000, SearchMode::Asym))
        .unwrap();
    assert!(all.iter().all(|l| l.len() == 1797));
    // A build from no rows is refused.
    let t2 = tempfile::tempdir().unwrap();
    let r = Index::build(
        &t2.path().join("i"),
        &m,
        empty.view(),
        &BuildOptions::default(),
        &mut |_| {},
    );
    assert!(r.unwrap_err().to_string().contains("no rows"));
}

#[test]
fn raw_queries_are_checked_against_the_stored_vectors_whenever_they_are_scored() {
    // Re-ranking and the exact modes score the raw queries against the stored vectors: a
    // source of another width, or a query value that is not finite, is the same error on
    // every path that scores them, and a search that scores no stored vector does not ask.
    let x = digits();
    let m = model("pca-itq:16", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let idx = Index::build(
        tmp.path(),
        &m,
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let snap = idx.snapshot();
    let q = x.slice(s![0..3, ..]);
    let ids: Vec<u64> = (0..x.nrows() as u64).collect();
    let narrow = MemoryVectors::new(32, &ids, vec![0.0; x.nrows() * 32]).unwrap();
    let scored = [
        SearchParams::new(5, SearchMode::Hamming).rerank(50),
        SearchParams::new(5, SearchMode::ExactL2),
        SearchParams::new(5, SearchMode::ExactDot),
    ];
    for p in &scored {
        match snap.search_with_vectors(q, p, &narrow) {
            Err(SearchError::InvalidArgument { argument, detail }) => {
                assert_eq!(argument, "queries", "{p:?}");
                assert_eq!(detail, "64 columns, the stored vectors are 32-D", "{p:?}");
            }
            other => panic!("{p:?}: {other:?}"),
        }
    }
    let unscored = SearchParams::new(5, SearchMode::Hamming);
    assert_eq!(
        snap.search_with_vectors(q, &unscored, &narrow).unwrap(),
        snap.search(q, &unscored).unwrap()
    );
    let mem = memory_vectors(&x);
    let mut nan = q.to_owned();
    nan[[1, 2]] = f32::NAN;
    for p in &scored {
        let e = snap.search_with_vectors(nan.view(), p, &mem).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid argument queries: row 1 column 2 is not finite (NaN)",
            "{p:?}"
        );
    }
}

#[test]
fn k_far_above_the_live_rows_returns_every_live_row_as_k_equal_to_them() {
    // k is capped at the live rows before anything is sized by it: usize::MAX (a Python
    // `k=2**64-1`, a CLI `-k` typo) must neither overflow nor ask for memory.
    let x = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let index = multi_block_index(tmp.path(), &m, x.view());
    index.commit_sealed().unwrap();
    let snap = index.snapshot();
    let live = snap.live_rows() as usize;
    let q = x.slice(s![0..3, ..]);
    for mode in [SearchMode::Hamming, SearchMode::Asym] {
        for mih in [codedb::MihChoice::Off, codedb::MihChoice::On] {
            let all = snap
                .search(q, &SearchParams::new(live, mode).mih(mih))
                .unwrap();
            assert!(all.iter().all(|h| h.len() == live));
            for k in [live + 1, 1 << 40, usize::MAX] {
                let huge = snap
                    .search(q, &SearchParams::new(k, mode).mih(mih))
                    .unwrap();
                assert_eq!(huge, all, "{mode:?} {mih:?} k = {k}");
            }
        }
    }
}
