//! 4-bit PQ indexes (format 1.2) store their sealed segments in the block-interleaved fast-scan
//! layout and `adc` / `adc-ip` search scans them in place with the fast-scan kernel. The result
//! lists must equal — ids and scores, bit for bit — the plain LUT-4 kernel over the same live
//! rows in row-major form: an index with sealed segments (one with a partial last block), rows
//! still in the append log, deleted rows, list-restricted scopes that start inside a 32-row
//! block, 1 and 2 threads, and again after compaction.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use codedb::BuildOptions;
use codedb::EncodedOptions;
use codedb::ListAssignment;
use codedb::kernels::{CodeRows, Direction, ScanOptions, lut4_topk_batch};
use codedb::model::{AdcMetric, Model, PipelineSpec, TrainOptions, train};
use codedb::{CompactionPolicy, Config, Index, Snapshot};
use codedb::{Hit, SearchMode, SearchParams};
use common::npy::digits;
use ndarray::{ArrayView2, s};

fn model(x: ArrayView2<f32>) -> Model {
    train(
        &PipelineSpec::parse("pq4:16").unwrap(),
        x,
        &TrainOptions::default(),
    )
    .unwrap()
    .0
}

/// Rows 0..1200 built and sealed (lists = labels), 1200..1500 added and sealed, 1500.. left
/// in the log; ids 10·r; every 13th id deleted.
fn index(dir: &Path, m: &Model, x: ArrayView2<f32>, labels: &[u32]) -> Index {
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let idx = Index::build(
        dir,
        m,
        x.slice(s![0..1200, ..]),
        &BuildOptions {
            ids: Some(&ids[..1200]),
            labels: Some(&labels[..1200]),
            lists: Some(ListAssignment::Label),
            // Labels and lists only: raw rows are added and deleted below, and a class table
            // would count them (class means are not what this test is about).
            classes_from_labels: false,
            config: Config {
                seal_bytes: 1,
                ..Config::default()
            },
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let add = |idx: &Index, r: std::ops::Range<usize>| {
        let codes = m.encode(x.slice(s![r.clone(), ..])).unwrap();
        idx.add_encoded(
            &codedb::RowBatch::new(&codes)
                .with_ids(&ids[r.clone()])
                .with_labels(&labels[r.clone()])
                .with_lists(&labels[r]),
            &EncodedOptions::default(),
        )
        .unwrap();
        idx.commit().unwrap();
    };
    add(&idx, 1200..1500);
    drop(idx);
    let idx = Index::open(dir, Config::default()).unwrap();
    add(&idx, 1500..x.nrows());
    let gone: Vec<u64> = ids.iter().copied().step_by(13).collect();
    idx.delete(&gone).unwrap();
    idx.commit().unwrap();
    idx
}

/// The plain LUT-4 top-k over the live rows (row-major codes), restricted to rows whose list
/// is in `lists` when given.
fn plain(
    snap: &Snapshot,
    luts: &[f32],
    m: usize,
    direction: Direction,
    k: usize,
    lists: Option<&[u32]>,
) -> Vec<Vec<Hit>> {
    let (mut codes, mut ids) = (Vec::new(), Vec::new());
    for r in snap.rows().unwrap() {
        if lists.is_none_or(|l| r.list.is_some_and(|x| l.contains(&x))) {
            codes.extend_from_slice(r.code);
            ids.push(r.id);
        }
    }
    let rows = CodeRows::new(&codes, m.div_ceil(2), &ids, None).unwrap();
    lut4_topk_batch(&rows, m, luts, direction, k, ScanOptions::default())
        .unwrap()
        .into_iter()
        .map(|l| l.into_iter().map(|(score, id)| Hit { id, score }).collect())
        .collect()
}

fn check(snap: &Snapshot, m: &Model, q: ArrayView2<f32>, what: &str) {
    for (mode, metric, direction) in [
        (SearchMode::AdcL2, AdcMetric::L2, Direction::SmallerIsBetter),
        (
            SearchMode::AdcIp,
            AdcMetric::InnerProduct,
            Direction::LargerIsBetter,
        ),
    ] {
        let t = m.adc_tables(q, metric).unwrap();
        let luts: Vec<f32> = t.iter().copied().collect();
        let sub = t.ncols() / 16;
        for k in [1, 10, 77] {
            for lists in [None, Some(vec![3u32, 7]), Some(vec![0u32])] {
                let want = plain(snap, &luts, sub, direction, k, lists.as_deref());
                assert!(want.iter().all(|l| l.len() == k), "{what}: too few rows");
                for threads in [1, 2] {
                    let mut p = SearchParams::new(k, mode).threads(threads);
                    if let Some(l) = &lists {
                        p = p.lists(l.clone());
                    }
                    let got = snap.search(q, &p).unwrap();
                    assert_eq!(
                        got, want,
                        "{what}: {mode:?} k {k} lists {lists:?} threads {threads}"
                    );
                }
            }
        }
    }
}

#[test]
fn fastscan_segments_search_exactly_as_plain_lut4() {
    let (x, labels) = digits();
    let m = model(x.view());
    let tmp = tempfile::tempdir().unwrap();
    let idx = index(tmp.path(), &m, x.view(), &labels);
    let q = x.slice(s![3..400;9, ..]);

    let snap = idx.snapshot();
    let packed: Vec<_> = snap
        .blocks()
        .filter_map(|b| {
            b.fastscan_codes()
                .unwrap()
                .map(|(p, mm)| (b.rows(), p.len(), mm))
        })
        .collect();
    assert!(
        packed.len() >= 2,
        "sealed segments use the fast-scan layout"
    );
    assert!(
        packed.iter().any(|&(rows, _, _)| rows % 32 != 0),
        "a segment ends in a partial block: {packed:?}"
    );
    for &(rows, len, mm) in &packed {
        assert_eq!(mm, 16);
        assert_eq!(len, rows.div_ceil(32) * 16 * 16);
    }
    assert!(
        snap.blocks().any(|b| b.segment().is_none()),
        "rows in the log"
    );
    // The unpacked rows are the encoder's codes.
    for b in snap
        .blocks()
        .filter(|b| b.fastscan_codes().unwrap().is_some())
    {
        let seg = b.segment().unwrap();
        for i in (0..b.rows()).step_by(7) {
            let r = (b.ids().unwrap()[i] / 10) as usize;
            let want = m.encode(x.slice(s![r..r + 1, ..])).unwrap();
            assert_eq!(seg.row_code(i).unwrap().as_ref(), &want[..], "row {i}");
            assert_eq!(b.code(i).unwrap(), &want[..]);
        }
    }
    check(&snap, &m, q, "segments + log");
    drop(snap);

    idx.compact(&CompactionPolicy::full()).unwrap();
    let snap = idx.snapshot();
    let segs: Vec<_> = snap.blocks().filter(|b| b.segment().is_some()).collect();
    assert_eq!(segs.len(), 1);
    assert!(
        segs[0].fastscan_codes().unwrap().is_some(),
        "compaction writes fast-scan"
    );
    check(&snap, &m, q, "compacted");
}
