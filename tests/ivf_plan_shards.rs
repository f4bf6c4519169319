//! The filtered IVF plan in the words a driver of several snapshots uses
//! (`Snapshot::ivf_list_counts`, `ivf_probe_decision`, `Snapshot::search_ivf_planned`,
//! docs/filtering.md "IVF"): three indexes holding a third of the rows each, their counts
//! summed and decided once per query, each following the decision, merged by (score, id),
//! give exactly what one index holding every row gives — over random id ranges and id
//! selectors, some answered within `nprobe`, some probing on, some by the flat search.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeSet;

use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{
    BuildOptions, Hit, IdSelector, Index, ProbeDecision, QueryPlan, RowFilter, SearchError,
    SearchMode, SearchParams, Snapshot, ivf_probe_decision,
};
use ndarray::{Array2, ArrayView2, s};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const SHARDS: usize = 3;

fn model(x: ArrayView2<f32>) -> Model {
    train(
        &PipelineSpec::parse("ivf:16,pq:8x8").unwrap(),
        x,
        &TrainOptions::default(),
    )
    .unwrap()
    .0
}

fn build(dir: &std::path::Path, m: &Model, x: ArrayView2<f32>, ids: &[u64]) -> Snapshot {
    Index::build(
        dir,
        m,
        x,
        &BuildOptions {
            ids: Some(ids),
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap()
    .snapshot()
}

/// The decision per query from the counts of every shard, summed: counts are asked again from
/// where the shortest shard's report ends while a query is undecided.
fn decide(shards: &[Snapshot], q: ArrayView2<f32>, p: &SearchParams) -> Vec<ProbeDecision> {
    let lists = shards[0].model().unwrap().ivf().unwrap().lists();
    let live: u64 = shards.iter().map(|s| s.live_rows()).sum();
    let nq = q.nrows();
    let (mut passing, mut read) = (vec![Vec::new(); nq], vec![Vec::new(); nq]);
    let mut out = vec![ProbeDecision::Undecided; nq];
    let mut round = 0;
    loop {
        let pending: Vec<usize> = (0..nq)
            .filter(|&i| out[i] == ProbeDecision::Undecided)
            .collect();
        if pending.is_empty() {
            return out;
        }
        round += 1;
        assert!(round <= 8, "no decision after 7 rounds");
        let sub = q.select(ndarray::Axis(0), &pending);
        let start: Vec<usize> = pending.iter().map(|&i| passing[i].len()).collect();
        let count = (round > 1).then(|| start.iter().max().copied().unwrap_or(1).max(1));
        let got: Vec<_> = shards
            .iter()
            .map(|s| {
                s.ivf_list_counts(sub.view(), p, &start, count)
                    .unwrap()
                    .unwrap()
            })
            .collect();
        for (j, &i) in pending.iter().enumerate() {
            let known = got.iter().map(|g| g[j].lists.len()).min().unwrap();
            for pos in 0..known {
                let l = got[0][j].lists[pos];
                assert!(
                    got.iter().all(|g| g[j].lists[pos] == l),
                    "probe orders differ"
                );
                passing[i].push(got.iter().map(|g| g[j].passing[pos]).sum());
                read[i].push(got.iter().map(|g| g[j].read[pos]).sum());
            }
            out[i] = ivf_probe_decision(
                &passing[i],
                &read[i],
                p.nprobe.unwrap(),
                lists,
                p.k,
                p.rerank,
                live,
            );
            if out[i] == ProbeDecision::Undecided {
                assert!(passing[i].len() < lists, "undecided over every list");
            }
        }
    }
}

/// The lists of each query in probe order (from the first shard's counts of every list).
fn orders(shard: &Snapshot, q: ArrayView2<f32>, p: &SearchParams) -> Vec<Vec<u32>> {
    shard
        .ivf_list_counts(q, p, &[], Some(usize::MAX))
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|c| c.lists)
        .collect()
}

fn sharded_search(shards: &[Snapshot], q: ArrayView2<f32>, p: &SearchParams) -> Vec<Vec<Hit>> {
    let order = orders(&shards[0], q, p);
    let plan: Vec<QueryPlan> = decide(shards, q, p)
        .into_iter()
        .zip(&order)
        .map(|(d, o)| match d {
            ProbeDecision::Lists(n) => QueryPlan::Lists(o[..n].to_vec()),
            ProbeDecision::Flat => QueryPlan::Flat,
            ProbeDecision::Undecided => unreachable!("decided above"),
        })
        .collect();
    let parts: Vec<Vec<Vec<Hit>>> = shards
        .iter()
        .map(|s| s.search_ivf_planned(q, p, &plan).unwrap())
        .collect();
    (0..q.nrows())
        .map(|i| {
            let mut all: Vec<Hit> = parts.iter().flat_map(|h| h[i].clone()).collect();
            all.sort_by(|a, b| a.score.total_cmp(&b.score).then(a.id.cmp(&b.id)));
            all.truncate(p.k);
            all
        })
        .collect()
}

#[test]
fn shards_following_the_summed_decision_answer_as_one_index() {
    let x: Array2<f32> = common::npy::digits().0;
    let m = model(x.view());
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 3 * r + 1).collect();
    let tmp = tempfile::tempdir().unwrap();
    let one = build(&tmp.path().join("one"), &m, x.view(), &ids);
    let shards: Vec<Snapshot> = (0..SHARDS)
        .map(|s| {
            let rows: Vec<usize> = (0..x.nrows())
                .filter(|r| (r * 7 + r / 5) % SHARDS == s)
                .collect();
            let xs = x.select(ndarray::Axis(0), &rows);
            let is: Vec<u64> = rows.iter().map(|&r| ids[r]).collect();
            build(&tmp.path().join(format!("s{s}")), &m, xs.view(), &is)
        })
        .collect();
    let q = x.slice(s![2..200;6, ..]);
    let mut rng = StdRng::seed_from_u64(32);
    let top = 3 * x.nrows() as u64;
    let mut filters: Vec<(RowFilter, String)> = Vec::new();
    for _ in 0..6 {
        let a = rng.random_range(0..top);
        let w = [30, 300, 3000][rng.random_range(0..3)];
        let text = format!("id >= {a} AND id < {}", a + w);
        filters.push((RowFilter::parse(&text).unwrap(), text));
    }
    for n in [5usize, 40, 400, 1500] {
        let sel: BTreeSet<u64> = (0..n)
            .map(|_| ids[rng.random_range(0..ids.len())])
            .collect();
        filters.push((
            RowFilter::ids(IdSelector::new(sel.iter().copied())),
            format!("{} ids", sel.len()),
        ));
    }
    let (mut within, mut on, mut flat) = (0, 0, 0);
    for (f, what) in &filters {
        for (nprobe, k) in [(1, 10), (2, 5), (4, 1), (16, 3)] {
            let p = SearchParams::new(k, SearchMode::AdcL2)
                .nprobe(nprobe)
                .filter(f.clone());
            let want = one.search(q, &p).unwrap();
            assert_eq!(
                sharded_search(&shards, q, &p),
                want,
                "{what}, nprobe {nprobe}, k {k}"
            );
            // One snapshot following its own decisions is its own plan.
            let own = decide(std::slice::from_ref(&one), q, &p);
            let order = orders(&one, q, &p);
            let plan: Vec<QueryPlan> = own
                .iter()
                .zip(&order)
                .map(|(d, o)| match d {
                    ProbeDecision::Lists(n) => {
                        if *n > nprobe {
                            on += 1;
                        } else {
                            within += 1;
                        }
                        QueryPlan::Lists(o[..*n].to_vec())
                    }
                    _ => {
                        flat += 1;
                        QueryPlan::Flat
                    }
                })
                .collect();
            assert_eq!(
                one.search_ivf_planned(q, &p, &plan).unwrap(),
                want,
                "{what}"
            );
        }
    }
    assert!(
        within > 0 && on > 0 && flat > 0,
        "{within} within nprobe, {on} probed on, {flat} flat"
    );
}

#[test]
fn counts_and_plans_are_refused_with_the_argument_named() {
    let x: Array2<f32> = common::npy::digits().0;
    let m = model(x.view());
    let ids: Vec<u64> = (0..x.nrows() as u64).collect();
    let tmp = tempfile::tempdir().unwrap();
    let one = build(tmp.path(), &m, x.view(), &ids);
    let q = x.slice(s![0..3, ..]);
    let f = RowFilter::parse("id < 100").unwrap();
    let p = SearchParams::new(5, SearchMode::AdcL2).nprobe(2).filter(f);
    // A search that does not run the plan has no counts; a planned search refuses it.
    let unfiltered = SearchParams::new(5, SearchMode::AdcL2).nprobe(2);
    assert_eq!(
        one.ivf_list_counts(q, &unfiltered, &[], None).unwrap(),
        None
    );
    let named = |r: Result<Vec<Vec<Hit>>, SearchError>, arg: &str| match r {
        Err(SearchError::InvalidArgument { argument, .. }) => assert_eq!(argument, arg),
        other => panic!("expected a refusal of {arg}, got {other:?}"),
    };
    named(one.search_ivf_planned(q, &unfiltered, &[]), "plan");
    named(one.search_ivf_planned(q, &p, &[QueryPlan::Flat]), "plan");
    let bad = vec![QueryPlan::Lists(vec![16]); 3];
    named(one.search_ivf_planned(q, &p, &bad), "plan");
    let twice = vec![QueryPlan::Lists(vec![1, 1]); 3];
    named(one.search_ivf_planned(q, &p, &twice), "plan");
    assert!(matches!(
        one.ivf_list_counts(q, &p, &[0], None),
        Err(SearchError::InvalidArgument { argument, .. }) if argument == "start"
    ));
    // nprobe out of range: the search's own refusal, word for word.
    let wide = SearchParams::new(5, SearchMode::AdcL2)
        .nprobe(17)
        .filter(RowFilter::parse("id < 100").unwrap());
    let a = one.search(q, &wide).unwrap_err().to_string();
    let b = one
        .ivf_list_counts(q, &wide, &[], None)
        .unwrap_err()
        .to_string();
    assert_eq!(a, b);
}
