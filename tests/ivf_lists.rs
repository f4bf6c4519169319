//! Inverted class lists through the library: list ids at insert (label / nearest class mean),
//! list-restricted search in every mode (deleted rows inside lists, rows without a list),
//! IVF `nprobe` over the class means, stored vectors of active-log rows for re-ranking and
//! exact search, and the class table a labelled build creates.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::collections::HashSet;
use std::path::Path;

use codedb::format::VectorDType;
use codedb::kernels::l2sq_f32;
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{AddOptions, BuildOptions, Config, Index, Snapshot};
use codedb::{ClassError, ListAssignment, StorageError};
use codedb::{Hit, SearchMode, SearchParams};
use common::npy::digits;
use ndarray::{Array2, ArrayView2, s};

fn model(spec: &str, x: ArrayView2<f32>) -> Model {
    let opts = TrainOptions {
        seed: 3,
        itq_iterations: 10,
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse(spec).unwrap(), x, &opts)
        .unwrap()
        .0
}

/// Digits with ids 10·r and class labels, f16 vectors stored: rows 0..1000 built (sealed into
/// a segment, class table from the labels), 1000..1300 added with labels (sealed), then,
/// reopened with a large seal size so they stay in the active log, 1300..1700 with labels and
/// 1700..1797 with neither labels nor lists; every 7th id deleted.
fn ivf_index(dir: &Path, m: &Model, x: &Array2<f32>, y: &[u32], how: ListAssignment) -> Index {
    let ids: Vec<u64> = (0..x.nrows() as u64).map(|r| 10 * r).collect();
    let index = Index::build(
        dir,
        m,
        x.slice(s![0..1000, ..]),
        &BuildOptions {
            ids: Some(&ids[..1000]),
            labels: Some(&y[..1000]),
            lists: Some(how),
            store_vectors: Some(VectorDType::F16),
            config: Config {
                seal_bytes: 4096,
                ..Config::default()
            },
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let add = |index: &Index, r: std::ops::Range<usize>, lists: Option<ListAssignment>| {
        let labelled = lists.is_some();
        index
            .add(
                x.slice(s![r.clone(), ..]),
                &AddOptions {
                    ids: Some(&ids[r.clone()]),
                    labels: labelled.then(|| &y[r]),
                    lists,
                    ..AddOptions::default()
                },
            )
            .unwrap();
    };
    add(&index, 1000..1300, Some(how));
    index.commit().unwrap();
    drop(index);
    let index = Index::open(dir, Config::default()).unwrap();
    add(&index, 1300..1700, Some(how));
    add(&index, 1700..1797, None);
    let gone: Vec<u64> = ids.iter().copied().step_by(7).collect();
    index.delete(&gone).unwrap();
    index.commit().unwrap();
    let snap = index.snapshot();
    assert!(snap.blocks().any(|b| b.segment().is_some()), "no segment");
    assert!(snap.blocks().any(|b| b.segment().is_none()), "no log block");
    assert_eq!(snap.live_rows() as usize, 1797 - gone.len());
    index
}

/// The list id of every live row, by id.
fn lists_by_id(snap: &Snapshot) -> std::collections::HashMap<u64, Option<u32>> {
    snap.rows().unwrap().map(|r| (r.id, r.list)).collect()
}

/// The oracle of a restricted search: the full search of every live row, kept to the rows
/// whose list is allowed (or who have none), first k.
fn filtered(
    full: &[Vec<Hit>],
    lists: &std::collections::HashMap<u64, Option<u32>>,
    allowed: &[u32],
    k: usize,
) -> Vec<Vec<Hit>> {
    full.iter()
        .map(|l| {
            l.iter()
                .filter(|h| lists[&h.id].is_none_or(|c| allowed.contains(&c)))
                .take(k)
                .copied()
                .collect()
        })
        .collect()
}

#[test]
fn lists_restrict_every_mode_with_deletions_and_unlisted_rows() {
    let (x, y) = digits();
    let q = x.slice(s![5..400;9, ..]);
    for spec in ["pca-itq:32", "pca:16,float"] {
        let m = model(spec, x.view());
        let tmp = tempfile::tempdir().unwrap();
        let snap = ivf_index(tmp.path(), &m, &x, &y, ListAssignment::Label).snapshot();
        // Rows carry their labels as lists; the unlisted tail has none.
        for r in snap.rows().unwrap() {
            assert_eq!(r.list, r.label, "id {}", r.id);
            assert_eq!(r.list.is_none(), r.id >= 17000, "id {}", r.id);
        }
        // Some list starts off a 64-row boundary and holds deleted rows: the bitmap must be
        // re-aligned for the sub-range.
        let unaligned_with_deletes = snap.blocks().any(|b| {
            b.list_index().is_some_and(|ix| {
                ix.iter().any(|e| {
                    let r = b.list_range(e.list).unwrap();
                    r.start % 64 != 0 && r.clone().any(|i| b.is_deleted(i))
                })
            })
        });
        assert!(unaligned_with_deletes);
        let by_id = lists_by_id(&snap);
        let all = snap.live_rows() as usize;
        let k = 12;
        let mut modes = vec![SearchMode::ExactL2, SearchMode::ExactDot];
        modes.extend(match spec {
            "pca-itq:32" => [SearchMode::Hamming, SearchMode::Asym],
            _ => [SearchMode::FloatL2, SearchMode::FloatDot],
        });
        for mode in modes {
            let full = snap.search(q, &SearchParams::new(all, mode)).unwrap();
            for allowed in [vec![3u32], vec![9, 0, 5, 5], vec![2, 4, 6, 8], vec![77]] {
                let want = filtered(&full, &by_id, &allowed, k);
                for threads in [1, 2] {
                    let p = SearchParams::new(k, mode)
                        .threads(threads)
                        .lists(allowed.clone());
                    let got = snap.search(q, &p).unwrap();
                    assert_eq!(got, want, "{spec} {mode:?} {allowed:?}");
                }
                // No deleted row, no row of another list.
                for h in want.iter().flatten() {
                    assert!(h.id % 70 != 0, "deleted id {}", h.id);
                }
            }
        }
        // Re-ranking all restricted candidates equals exact search restricted alike.
        let code_mode = SearchMode::default_for(m.code_kind());
        let allowed = vec![1u32, 7];
        let exact = snap
            .search(
                q,
                &SearchParams::new(k, SearchMode::ExactL2).lists(allowed.clone()),
            )
            .unwrap();
        let rr = snap
            .search(
                q,
                &SearchParams::new(k, code_mode).rerank(all).lists(allowed),
            )
            .unwrap();
        assert_eq!(rr, exact, "{spec}");
    }
}

#[test]
fn nprobe_scans_the_lists_of_the_nearest_class_means() {
    let (x, y) = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let snap = ivf_index(tmp.path(), &m, &x, &y, ListAssignment::Label).snapshot();
    let q = x.slice(s![2..600;11, ..]);
    let k = 10;
    let full = snap
        .search(q, &SearchParams::new(k, SearchMode::Hamming))
        .unwrap();
    let means = snap.class_means().unwrap();
    assert_eq!(means.len(), 10);
    let by_id = lists_by_id(&snap);
    let mut recall_prev = 0usize;
    for nprobe in [1usize, 2, 3, 5] {
        let got = snap
            .search(q, &SearchParams::new(k, SearchMode::Hamming).nprobe(nprobe))
            .unwrap();
        let probes = snap.probe_lists(q, nprobe).unwrap();
        for (i, (g, p)) in got.iter().zip(&probes).enumerate() {
            assert_eq!(p.len(), nprobe);
            // The NCM top classes of the query are the probed lists.
            let top = means
                .classify(&m, q.slice(s![i..i + 1, ..]), nprobe)
                .unwrap();
            let mut ids: Vec<u32> = top[0].iter().map(|c| c.id).collect();
            ids.sort_unstable();
            assert_eq!(&ids, p);
            let one = snap
                .search(
                    q.slice(s![i..i + 1, ..]),
                    &SearchParams::new(k, SearchMode::Hamming).lists(p.clone()),
                )
                .unwrap();
            assert_eq!(g, &one[0], "nprobe {nprobe} query {i}");
            assert!(
                g.iter()
                    .all(|h| by_id[&h.id].is_none_or(|c| p.contains(&c)))
            );
        }
        let recall: usize = got
            .iter()
            .zip(&full)
            .map(|(g, f)| {
                let f: HashSet<u64> = f.iter().map(|h| h.id).collect();
                g.iter().filter(|h| f.contains(&h.id)).count()
            })
            .sum();
        assert!(recall >= recall_prev, "recall fell at nprobe {nprobe}");
        recall_prev = recall;
    }
    // Probing every class, or more, is the full search; so is naming every list.
    for n in [10, 11, 1000] {
        let got = snap
            .search(q, &SearchParams::new(k, SearchMode::Hamming).nprobe(n))
            .unwrap();
        assert_eq!(got, full, "nprobe {n}");
    }
    let every = snap
        .search(
            q,
            &SearchParams::new(k, SearchMode::Hamming).lists((0..10).collect()),
        )
        .unwrap();
    assert_eq!(every, full);
    // Errors.
    let e = |p: SearchParams| snap.search(q, &p).unwrap_err().to_string();
    assert!(e(SearchParams::new(k, SearchMode::Hamming).nprobe(0)).contains("nprobe"));
    assert!(e(SearchParams::new(k, SearchMode::Hamming).lists(vec![])).contains("lists"));
    assert!(
        e(SearchParams::new(k, SearchMode::Hamming).lists(vec![u32::MAX])).contains("reserved")
    );
    assert!(
        e(SearchParams::new(k, SearchMode::Hamming)
            .lists(vec![1])
            .nprobe(2))
        .contains("not both")
    );
    // nprobe needs class means.
    let plain = tempfile::tempdir().unwrap();
    let idx = Index::build(
        plain.path(),
        &m,
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let msg = idx
        .snapshot()
        .search(q, &SearchParams::new(k, SearchMode::Hamming).nprobe(2))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("nprobe") && msg.contains("class"), "{msg}");
}

#[test]
fn nearest_lists_are_the_ncm_classes_of_the_rows() {
    let (x, y) = digits();
    let m = model("pca:24,float", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::build(
        tmp.path(),
        &m,
        x.slice(s![0..1200, ..]),
        &BuildOptions {
            labels: Some(&y[..1200]),
            lists: Some(ListAssignment::Nearest),
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let snap = index.snapshot();
    let rows: Vec<_> = snap.rows().unwrap().collect();
    let xs = Array2::from_shape_fn((rows.len(), x.ncols()), |(i, j)| {
        x[[rows[i].id as usize, j]]
    });
    let top = snap.classify(xs.view(), 1).unwrap();
    for (r, t) in rows.iter().zip(&top) {
        assert_eq!(r.list, Some(t[0].id), "id {}", r.id);
    }
    // Nearest differs from the label for some rows (NCM is not perfect), so the rule matters.
    assert!(rows.iter().any(|r| r.list != r.label));
    // An add files rows by the committed means too.
    let new = x.slice(s![1200..1300, ..]);
    let ids = index
        .add(
            new,
            &AddOptions {
                lists: Some(ListAssignment::Nearest),
                ..AddOptions::default()
            },
        )
        .unwrap();
    index.commit().unwrap();
    let top = snap.classify(new, 1).unwrap();
    let after = index.snapshot();
    for (id, t) in ids.iter().zip(&top) {
        assert_eq!(after.get(*id).unwrap().unwrap().list, Some(t[0].id));
    }
    // Nearest without classes, label without labels: clear errors, nothing built.
    let t2 = tempfile::tempdir().unwrap();
    let d = t2.path().join("i");
    for (how, word) in [
        (ListAssignment::Nearest, "class"),
        (ListAssignment::Label, "labels"),
    ] {
        let e = Index::build(
            &d,
            &m,
            x.view(),
            &BuildOptions {
                lists: Some(how),
                ..BuildOptions::default()
            },
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("lists") && e.contains(word), "{e}");
        assert!(!d.exists());
    }
}

#[test]
fn labelled_build_creates_the_class_table_and_adds_update_it() {
    let (x, y) = digits();
    let m = model("pca-itq:32", x.view());
    let tmp = tempfile::tempdir().unwrap();
    let index = Index::build(
        tmp.path(),
        &m,
        x.slice(s![0..1500, ..]),
        &BuildOptions {
            labels: Some(&y[..1500]),
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let check_table = |index: &Index, n: usize| {
        let snap = index.snapshot();
        let t = snap.classes().expect("a class table");
        assert_eq!(t.classes.len(), 10);
        for c in &t.classes {
            assert_eq!(c.name, c.id.to_string());
            assert_eq!(c.parent, None);
            let rows: Vec<usize> = (0..n).filter(|&i| y[i] == c.id).collect();
            assert_eq!(c.count, rows.len() as u64);
            for j in 0..x.ncols() {
                let s: f64 = rows.iter().map(|&i| x[[i, j]] as f64).sum();
                assert_eq!(c.sum[j], s, "class {} column {j}", c.id);
            }
        }
    };
    check_table(&index, 1500);
    // classify works right after the build: most training rows get their own class.
    let top = index
        .snapshot()
        .classify(x.slice(s![0..300, ..]), 1)
        .unwrap();
    let right = top.iter().zip(&y).filter(|(t, l)| t[0].id == **l).count();
    assert!(right > 200, "{right}/300");
    // A labelled add updates the sums in the same commit.
    index
        .add(
            x.slice(s![1500..1797, ..]),
            &AddOptions {
                labels: Some(&y[1500..]),
                ..AddOptions::default()
            },
        )
        .unwrap();
    index.commit().unwrap();
    check_table(&index, 1797);
    // An unknown label: an error naming it and add-class, nothing staged.
    let v = index.version();
    let bad = [3u32, 42];
    let e = index
        .add(
            x.slice(s![0..2, ..]),
            &AddOptions {
                labels: Some(&bad),
                ..AddOptions::default()
            },
        )
        .unwrap_err();
    assert!(matches!(
        e,
        StorageError::Class(ClassError::UnknownLabel { row: 1, label: 42 })
    ));
    let msg = e.to_string();
    assert!(msg.contains("42") && msg.contains("add-class"), "{msg}");
    assert!(!index.has_uncommitted());
    assert_eq!(index.version(), v);
    // Opting out keeps labels on rows only.
    let t2 = tempfile::tempdir().unwrap();
    let plain = Index::build(
        t2.path(),
        &m,
        x.slice(s![0..100, ..]),
        &BuildOptions {
            labels: Some(&y[..100]),
            classes_from_labels: false,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(plain.snapshot().classes().is_none());
    assert_eq!(
        plain
            .snapshot()
            .rows()
            .unwrap()
            .filter(|r| r.label.is_some())
            .count(),
        100
    );
}

#[test]
fn stored_vectors_of_log_rows_serve_rerank_and_exact_search() {
    let (x, y) = digits();
    for spec in ["pq:8x8", "pca:16,float"] {
        let m = model(spec, x.view());
        let tmp = tempfile::tempdir().unwrap();
        let snap = ivf_index(tmp.path(), &m, &x, &y, ListAssignment::Label).snapshot();
        // The log rows have their vectors (digits are integers: f16 holds them exactly).
        for r in snap.rows().unwrap() {
            let v = snap.vector(r.id).unwrap().unwrap();
            assert_eq!(v, x.row(r.id as usize / 10).to_vec());
        }
        let q = x.slice(s![1..500;13, ..]);
        let k = 10;
        let want: Vec<Vec<Hit>> = (0..q.nrows())
            .map(|i| {
                let qi = q.row(i).to_vec();
                let mut l: Vec<Hit> = snap
                    .rows()
                    .unwrap()
                    .map(|r| Hit {
                        id: r.id,
                        score: l2sq_f32(&qi, &snap.vector(r.id).unwrap().unwrap()).unwrap(),
                    })
                    .collect();
                l.sort_by(|a, b| a.score.total_cmp(&b.score).then(a.id.cmp(&b.id)));
                l.truncate(k);
                l
            })
            .collect();
        assert!(
            want.iter().flatten().any(|h| h.id >= 13000),
            "no log row found"
        );
        let exact = snap
            .search(q, &SearchParams::new(k, SearchMode::ExactL2))
            .unwrap();
        assert_eq!(exact, want, "{spec}");
        let mode = SearchMode::default_for(m.code_kind());
        let all = snap.live_rows() as usize;
        let rr = snap
            .search(q, &SearchParams::new(k, mode).rerank(all))
            .unwrap();
        assert_eq!(rr, want, "{spec} rerank all");
        // A short re-rank improves on the codes alone (recall against exact).
        let recall = |h: &[Vec<Hit>]| -> usize {
            h.iter()
                .zip(&want)
                .map(|(a, b)| {
                    let b: HashSet<u64> = b.iter().map(|x| x.id).collect();
                    a.iter().filter(|x| b.contains(&x.id)).count()
                })
                .sum()
        };
        let codes = snap.search(q, &SearchParams::new(k, mode)).unwrap();
        let rr50 = snap
            .search(q, &SearchParams::new(k, mode).rerank(50))
            .unwrap();
        assert!(recall(&rr50) >= recall(&codes), "{spec}");
    }
}
