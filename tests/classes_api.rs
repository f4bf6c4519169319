//! The class layer through the library: NCM classification of committed classes, snapshot
//! consistency, zero-shot priors (eq. 29), MAP means (eq. 30), labelled adds, the choice of the
//! prior weight, and errors that leave the index byte for byte unchanged.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use codedb::AddOptions;
use codedb::format::{ClassRecord, ClassTable};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::research::{choose_prior_weight, map_mean};
use codedb::{ClassError, ClassRef, ClassSource, MeanSource, NewClass, PriorScope};
use codedb::{CompactionPolicy, Config, Index, StorageError};
use common::files::dir_bytes;
use common::npy::digits;
use ndarray::{Array2, ArrayView2, Axis};

fn model(spec: &str, x: ArrayView2<f32>) -> Model {
    let opts = TrainOptions {
        seed: 5,
        itq_iterations: 10,
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse(spec).unwrap(), x, &opts)
        .unwrap()
        .0
}

fn rows_of(x: &Array2<f32>, idx: &[usize]) -> Array2<f32> {
    x.select(Axis(0), idx)
}

fn find<'a>(t: &'a ClassTable, name: &str) -> &'a ClassRecord {
    t.classes.iter().find(|c| c.name == name).unwrap()
}

/// A 3-D float index with a tiny hierarchy: root "footwear" (given mean), children "sandal"
/// and "sneaker" with images, all values dyadic so every sum and mean is exact.
/// A labelled add by class name or id: the classes resolved by [`Index::class_ids`], then
/// [`Index::add`].
fn add_labelled(
    index: &Index,
    x: ArrayView2<f32>,
    classes: &[ClassRef],
    ids: Option<&[u64]>,
) -> Result<Vec<u64>, StorageError> {
    let labels = index.class_ids(classes)?;
    let opts = AddOptions {
        ids,
        labels: Some(&labels),
        ..AddOptions::default()
    };
    index.add(x, &opts)
}

fn small_index(dir: &Path) -> (Index, Model) {
    let train_x = Array2::from_shape_vec(
        (4, 3),
        vec![
            0.0f32, 1.0, 2.0, 1.0, 0.5, 0.25, 4.0, 2.0, 1.0, 3.0, 0.0, 0.5,
        ],
    )
    .unwrap();
    let m = model("float", train_x.view());
    let index = Index::create(dir, &m.to_model_file(), Config::default()).unwrap();
    let sandal = Array2::from_shape_vec((2, 3), vec![1.0f32, 2.0, 3.0, 3.0, 2.0, 1.0]).unwrap();
    let sneaker = Array2::from_shape_vec((1, 3), vec![-4.0f32, 0.5, 8.0]).unwrap();
    let root_mean = [0.25f32, 0.25, 0.25];
    index
        .add_new_classes(&[NewClass::new("footwear", ClassSource::Mean(&root_mean))])
        .unwrap();
    index
        .add_new_classes(&[
            NewClass::new("sandal", ClassSource::Images(sandal.view()))
                .with_parent("footwear")
                .with_prior_weight(0),
            NewClass::new("sneaker", ClassSource::Images(sneaker.view()))
                .with_parent("footwear")
                .with_prior_weight(0),
        ])
        .unwrap();
    index.commit().unwrap();
    (index, m)
}

#[test]
fn a_new_class_is_classifiable_at_the_next_commit_and_old_snapshots_keep_their_table() {
    let (x, y) = digits();
    let (train_idx, test_idx): (Vec<usize>, Vec<usize>) = (0..x.nrows()).partition(|i| i % 3 != 0);
    let xtr = rows_of(&x, &train_idx);
    let m = model("pca-itq:32", xtr.view());
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create(dir.path(), &m.to_model_file(), Config::default()).unwrap();
    let per_class = |c: u32| -> Array2<f32> {
        let idx: Vec<usize> = train_idx.iter().copied().filter(|&i| y[i] == c).collect();
        rows_of(&x, &idx)
    };
    let first: Vec<Array2<f32>> = (0..9).map(per_class).collect();
    let names: Vec<String> = (0..9).map(|c| format!("digit-{c}")).collect();
    let new: Vec<NewClass> = (0..9)
        .map(|c| NewClass::new(&names[c], ClassSource::Images(first[c].view())).with_id(c as u32))
        .collect();
    index.add_new_classes(&new).unwrap();
    let v1 = index.commit().unwrap();
    let s1 = index.snapshot();
    let nines: Vec<usize> = test_idx.iter().copied().filter(|&i| y[i] == 9).collect();
    let x9 = rows_of(&x, &nines);
    let before = s1.classify(x9.view(), 3).unwrap();
    assert!(before.iter().all(|r| r.iter().all(|c| c.id != 9)));

    let nine = per_class(9);
    let planned = index
        .add_new_classes(&[NewClass::new("digit-9", ClassSource::Images(nine.view()))])
        .unwrap();
    assert_eq!(
        planned[0].record.id, 9,
        "automatic id: one past the largest in use"
    );
    assert_eq!(
        planned[0].source,
        MeanSource::Images {
            n: nine.nrows() as u64
        }
    );
    // Staged, not committed: no snapshot sees it.
    assert_eq!(index.snapshot().classes().unwrap().classes.len(), 9);
    let v2 = index.commit().unwrap();
    assert!(v2 > v1);
    let s2 = index.snapshot();
    let after = s2.classify(x9.view(), 3).unwrap();
    let hits = after.iter().filter(|r| r[0].id == 9).count();
    assert!(
        hits * 10 >= nines.len() * 8,
        "{hits} of {} nines found",
        nines.len()
    );
    // The old snapshot still has its 9 classes and gives its old answers.
    assert_eq!(s1.classes().unwrap().classes.len(), 9);
    assert_eq!(s1.classify(x9.view(), 3).unwrap(), before);
    // A reader from disk sees the new table.
    let s3 = codedb::Snapshot::open(dir.path()).unwrap();
    assert_eq!(s3.classify(x9.view(), 3).unwrap(), after);

    // Same answers as plain NCM computed here in f64 (eq. 1 on the projected means), except
    // for near ties; scores best first, ties by id.
    let xt = rows_of(&x, &test_idx);
    let got = s2.classify(xt.view(), 10).unwrap();
    let table = s2.classes().unwrap();
    let mut means = Array2::<f32>::zeros((10, 64));
    for c in &table.classes {
        for (j, s) in c.sum.iter().enumerate() {
            means[[c.id as usize, j]] = (s / c.count as f64) as f32;
        }
    }
    let pm = m.project(means.view()).unwrap();
    let pz = m.project(xt.view()).unwrap();
    let mut agree = 0;
    let mut correct = 0;
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.len(), 10);
        for w in r.windows(2) {
            assert!(w[0].score > w[1].score || (w[0].score == w[1].score && w[0].id < w[1].id));
        }
        let mut d: Vec<(f64, u32)> = (0..10)
            .map(|c| {
                let dist: f64 = pz
                    .row(i)
                    .iter()
                    .zip(pm.row(c).iter())
                    .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
                    .sum();
                (dist, c as u32)
            })
            .collect();
        d.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if d[1].0 - d[0].0 > 1e-3 * d[0].0.max(1.0) {
            assert_eq!(r[0].id, d[0].1, "row {i}");
            agree += 1;
        }
        correct += usize::from(r[0].id == y[test_idx[i]]);
        assert_eq!(r[0].name, format!("digit-{}", r[0].id));
    }
    assert!(agree * 10 >= got.len() * 9);
    assert!(
        correct * 10 >= got.len() * 8,
        "NCM top-1 accuracy {correct}/{}",
        got.len()
    );
    // The snapshot kept the means it built (tests/snapshot_owns_model.rs checks the sharing).
    assert_eq!(s2.class_means().unwrap().len(), 10);
}

#[test]
fn zero_shot_prior_is_the_mean_of_the_sibling_means() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = small_index(dir.path());
    // Under "footwear": sandal mean (2, 2, 2), sneaker mean (-4, 0.5, 8); the prior is their
    // plain average (not weighted by counts, the parent's own mean left out).
    let planned = index
        .add_new_classes(&[NewClass::new("boot", ClassSource::None)
            .with_parent("footwear")
            .with_prior_weight(4)])
        .unwrap();
    assert_eq!(planned[0].source, MeanSource::ZeroShot { m: 4 });
    index.commit().unwrap();
    let snap = index.snapshot();
    let t = snap.classes().unwrap();
    let boot = find(t, "boot");
    assert_eq!(boot.count, 4);
    let mean: Vec<f64> = boot.sum.iter().map(|s| s / 4.0).collect();
    assert_eq!(mean, vec![-1.0, 1.25, 5.0]);
    assert_eq!(boot.parent, Some(find(t, "footwear").id));
    // Ancestors scope (eq. 29 over every ancestor): a grandchild under "sandal" averages the
    // subtree mean of "sandal" (no class with images under it yet: skipped) and of "footwear"
    // (sandal, sneaker, boot).
    let x = Array2::from_shape_vec((1, 3), vec![1.0f32, 1.0, 1.0]).unwrap();
    index
        .add_new_classes(&[NewClass::new("flip-flop", ClassSource::Images(x.view()))
            .with_parent("sandal")
            .with_prior_weight(0)])
        .unwrap();
    let mut nc = NewClass::new("strappy", ClassSource::None)
        .with_parent("sandal")
        .with_prior_weight(1);
    nc.prior_scope = PriorScope::Ancestors;
    index.add_new_classes(&[nc]).unwrap();
    index.commit().unwrap();
    let t = index.snapshot().classes().unwrap().clone();
    let got = &find(&t, "strappy").sum;
    // sandal subtree: flip-flop (1,1,1); footwear subtree: sandal (2,2,2), sneaker, boot,
    // flip-flop → ((2-4-1+1)/4, (2+0.5+1.25+1)/4, (2+8+5+1)/4); prior = average of the two.
    let fw = [
        (2.0 - 4.0 - 1.0 + 1.0) / 4.0,
        (2.0 + 0.5 + 1.25 + 1.0) / 4.0,
        (2.0 + 8.0 + 5.0 + 1.0) / 4.0,
    ];
    let want: Vec<f64> = fw.iter().map(|f| (1.0 + f) / 2.0).collect();
    assert_eq!(got, &want);
    // The new classes are classifiable: a query at boot's mean comes back as boot.
    let q = Array2::from_shape_vec((1, 3), vec![-1.0f32, 1.25, 5.0]).unwrap();
    let r = index.snapshot().classify(q.view(), 2).unwrap();
    assert_eq!(r[0][0].name, "boot");
}

#[test]
fn map_mean_follows_eq_30_and_later_images_keep_it_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = small_index(dir.path());
    // Prior (2,2,2)+(-4,0.5,8) / 2 = (-1, 1.25, 5); n = 2 images of mean (0.5, 1, 1.5); m = 3.
    let few = Array2::from_shape_vec((2, 3), vec![0.0f32, 1.0, 2.0, 1.0, 1.0, 1.0]).unwrap();
    let planned = index
        .add_new_classes(&[NewClass::new("boot", ClassSource::Images(few.view()))
            .with_parent("footwear")
            .with_prior_weight(3)])
        .unwrap();
    assert_eq!(planned[0].source, MeanSource::Map { n: 2, m: 3 });
    let want = map_mean(&[0.5, 1.0, 1.5], 2, &[-1.0, 1.25, 5.0], 3).unwrap();
    assert_eq!(
        want,
        vec![(1.0 - 3.0) / 5.0, (2.0 + 3.75) / 5.0, (3.0 + 15.0) / 5.0]
    );
    index.commit().unwrap();
    let t = index.snapshot().classes().unwrap().clone();
    let boot = find(&t, "boot");
    assert_eq!(boot.count, 5);
    assert_eq!(boot.sum, vec![1.0 - 3.0, 2.0 + 3.75, 3.0 + 15.0]);
    // Two more labelled images: the stored mean is eq. 30 with n = 4.
    let more = Array2::from_shape_vec((2, 3), vec![2.0f32, 0.0, 1.0, 1.0, 3.0, 0.0]).unwrap();
    add_labelled(
        &index,
        more.view(),
        &[ClassRef::from("boot"), ClassRef::Id(boot.id)],
        None,
    )
    .unwrap();
    index.commit().unwrap();
    let t = index.snapshot().classes().unwrap().clone();
    let boot = find(&t, "boot");
    let mean: Vec<f64> = boot.sum.iter().map(|s| s / boot.count as f64).collect();
    assert_eq!(
        mean,
        map_mean(&[1.0, 1.25, 1.0], 4, &[-1.0, 1.25, 5.0], 3).unwrap()
    );
}

#[test]
fn labelled_adds_update_sums_exactly_across_commits_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let (index, _) = small_index(dir.path());
    let before = index.snapshot().classes().unwrap().clone();
    let mut expect: BTreeMap<String, (u64, Vec<f64>)> = before
        .classes
        .iter()
        .map(|c| (c.name.clone(), (c.count, c.sum.clone())))
        .collect();
    let names = ["sandal", "sneaker", "footwear"];
    let mut next_id = 1000u64;
    for round in 0..3u32 {
        let n = 50;
        let x = Array2::from_shape_fn((n, 3), |(i, j)| {
            ((i * 7 + j * 3 + round as usize) % 17) as f32 * 0.25 - 2.0
        });
        let labels: Vec<ClassRef> = (0..n)
            .map(|i| ClassRef::from(names[(i + round as usize) % 3]))
            .collect();
        let ids: Vec<u64> = (0..n as u64).map(|i| next_id + i).collect();
        next_id += n as u64;
        let got = add_labelled(&index, x.view(), &labels, Some(&ids)).unwrap();
        assert_eq!(got, ids);
        for (i, row) in x.rows().into_iter().enumerate() {
            let e = expect.get_mut(names[(i + round as usize) % 3]).unwrap();
            e.0 += 1;
            for (s, v) in e.1.iter_mut().zip(row.iter()) {
                *s += *v as f64;
            }
        }
        index.commit().unwrap();
    }
    let check = |t: &ClassTable| {
        for c in &t.classes {
            let (n, s) = &expect[&c.name];
            assert_eq!((c.count, &c.sum), (*n, s), "class {}", c.name);
        }
    };
    let snap = index.snapshot();
    check(snap.classes().unwrap());
    assert_eq!(snap.live_rows(), 150);
    let labelled: usize = snap.rows().unwrap().filter(|r| r.label.is_some()).count();
    assert_eq!(labelled, 150);
    assert_eq!(snap.manifest().class_files.len(), 4, "a base and 3 deltas");
    index
        .compact(&CompactionPolicy {
            full: true,
            ..CompactionPolicy::default()
        })
        .unwrap();
    let snap = index.snapshot();
    check(snap.classes().unwrap());
    assert_eq!(snap.manifest().class_files.len(), 1, "deltas folded");
}

#[test]
fn bad_input_is_refused_and_leaves_the_index_byte_for_byte_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (index, m) = small_index(dir.path());
    let ok = Array2::from_shape_vec((1, 3), vec![1.0f32, 2.0, 3.0]).unwrap();
    add_labelled(&index, ok.view(), &[ClassRef::from("sandal")], Some(&[7])).unwrap();
    let version = index.commit().unwrap();
    let files = dir_bytes(dir.path());
    let nan = Array2::from_shape_vec((1, 3), vec![1.0f32, f32::NAN, 3.0]).unwrap();
    let wide = Array2::from_shape_vec((1, 4), vec![1.0f32; 4]).unwrap();
    let empty = Array2::<f32>::zeros((0, 3));
    let cases: Vec<(&str, Vec<NewClass>)> = vec![
        (
            "unknown parent",
            vec![NewClass::new("a", ClassSource::Images(ok.view())).with_parent("nope")],
        ),
        (
            "duplicate name",
            vec![NewClass::new("sandal", ClassSource::Images(ok.view()))],
        ),
        (
            "duplicate name in call",
            vec![
                NewClass::new("a", ClassSource::Images(ok.view())),
                NewClass::new("a", ClassSource::Images(ok.view())),
            ],
        ),
        (
            "duplicate id",
            vec![
                NewClass::new("a", ClassSource::Images(ok.view()))
                    .with_id(find(index.snapshot().classes().unwrap(), "sandal").id),
            ],
        ),
        (
            "reserved id",
            vec![NewClass::new("a", ClassSource::Images(ok.view())).with_id(u32::MAX)],
        ),
        (
            "parent cycle",
            vec![
                NewClass::new("a", ClassSource::None).with_parent("b"),
                NewClass::new("b", ClassSource::None).with_parent("a"),
            ],
        ),
        (
            "own parent",
            vec![NewClass::new("a", ClassSource::Images(ok.view())).with_parent("a")],
        ),
        (
            "dimension",
            vec![NewClass::new("a", ClassSource::Images(wide.view()))],
        ),
        (
            "mean dimension",
            vec![NewClass::new("a", ClassSource::Mean(&[1.0, 2.0]))],
        ),
        (
            "no images, no parent",
            vec![NewClass::new("a", ClassSource::None)],
        ),
        (
            "empty images",
            vec![NewClass::new("a", ClassSource::Images(empty.view()))],
        ),
        (
            "NaN",
            vec![NewClass::new("a", ClassSource::Images(nan.view()))],
        ),
        (
            "NaN mean",
            vec![NewClass::new("a", ClassSource::Mean(&[f32::NAN, 0.0, 0.0]))],
        ),
        (
            "empty name",
            vec![NewClass::new("", ClassSource::Images(ok.view()))],
        ),
        (
            "zero-shot with m = 0",
            vec![
                NewClass::new("a", ClassSource::None)
                    .with_parent("footwear")
                    .with_prior_weight(0),
            ],
        ),
        (
            "empty prior",
            vec![NewClass::new("a", ClassSource::None).with_parent("sneaker")],
        ),
        (
            "one good, one bad",
            vec![
                NewClass::new("good", ClassSource::Images(ok.view())),
                NewClass::new("bad", ClassSource::None),
            ],
        ),
    ];
    for (what, new) in &cases {
        let e = match index.add_new_classes(new).expect_err(what) {
            StorageError::Class(e) => e,
            other => panic!("{what}: not a class error: {other:?}"),
        };
        match (*what, &e) {
            ("unknown parent", ClassError::UnknownClass { argument, .. }) => {
                assert_eq!(argument, "parent")
            }
            ("duplicate name", ClassError::DuplicateName { .. })
            | ("duplicate id", ClassError::DuplicateId { .. })
            | ("parent cycle" | "own parent", ClassError::ParentCycle { .. })
            | ("dimension" | "mean dimension", ClassError::Dimension { .. })
            | ("no images, no parent", ClassError::NoSource { .. })
            | ("NaN" | "NaN mean", ClassError::NonFinite { .. })
            | ("empty prior", ClassError::EmptyPrior { .. })
            | ("one good, one bad", ClassError::NoSource { .. }) => {}
            (
                "duplicate name in call"
                | "reserved id"
                | "empty images"
                | "empty name"
                | "zero-shot with m = 0",
                ClassError::Invalid { .. },
            ) => {}
            _ => panic!("{what}: unexpected error {e:?}"),
        }
        assert!(!index.has_uncommitted(), "{what}: something was staged");
    }
    // Labelled adds: unknown class, NaN, wrong shape, a duplicate row id (caught after the
    // class deltas were computed: neither rows nor sums are staged).
    assert!(matches!(
        add_labelled(&index, ok.view(), &[ClassRef::from("nope")], None),
        Err(StorageError::Class(ClassError::UnknownClass { .. }))
    ));
    assert!(matches!(
        add_labelled(&index, ok.view(), &[ClassRef::Id(4242)], None),
        Err(StorageError::Class(ClassError::UnknownClass { .. }))
    ));
    assert!(add_labelled(&index, nan.view(), &[ClassRef::from("sandal")], None).is_err());
    assert!(add_labelled(&index, wide.view(), &[ClassRef::from("sandal")], None).is_err());
    assert!(add_labelled(&index, ok.view(), &[], None).is_err());
    assert!(matches!(
        add_labelled(&index, ok.view(), &[ClassRef::from("sandal")], Some(&[7])),
        Err(StorageError::DuplicateId { id: 7, .. })
    ));
    assert!(!index.has_uncommitted());
    assert_eq!(index.commit().unwrap(), version);
    assert_eq!(dir_bytes(dir.path()), files);
    // Classification errors.
    let snap = index.snapshot();
    assert!(matches!(
        snap.classify(ok.view(), 0),
        Err(ClassError::Invalid { .. })
    ));
    assert!(snap.classify(wide.view(), 1).is_err());
    assert!(snap.classify(nan.view(), 1).is_err());
    let fresh = tempfile::tempdir().unwrap();
    let bare = Index::create(fresh.path(), &m.to_model_file(), Config::default()).unwrap();
    assert!(matches!(
        bare.snapshot().classify(ok.view(), 1),
        Err(ClassError::NoClasses { .. })
    ));
}

#[test]
fn prior_weight_is_chosen_on_held_out_images() {
    let (x, y) = digits();
    let (train_idx, val_idx): (Vec<usize>, Vec<usize>) = (0..x.nrows()).partition(|i| i % 2 == 0);
    let xtr = rows_of(&x, &train_idx);
    let m = model("pca:32,float", xtr.view());
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create(dir.path(), &m.to_model_file(), Config::default()).unwrap();
    let root_mean: Vec<f32> = xtr.mean_axis(Axis(0)).unwrap().to_vec();
    index
        .add_new_classes(&[NewClass::new("digit", ClassSource::Mean(&root_mean)).with_id(100)])
        .unwrap();
    let per: Vec<Array2<f32>> = (0..10u32)
        .map(|c| {
            rows_of(
                &x,
                &train_idx
                    .iter()
                    .copied()
                    .filter(|&i| y[i] == c)
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let names: Vec<String> = (0..10).map(|c| c.to_string()).collect();
    let new: Vec<NewClass> = (0..10)
        .map(|c| {
            NewClass::new(&names[c], ClassSource::Images(per[c].view()))
                .with_id(c as u32)
                .with_parent("digit")
                .with_prior_weight(0)
        })
        .collect();
    index.add_new_classes(&new).unwrap();
    index.commit().unwrap();
    let table = index.snapshot().classes().unwrap().clone();
    let xv = rows_of(&x, &val_idx);
    let yv: Vec<u32> = val_idx.iter().map(|&i| y[i]).collect();
    let cands = [0, 1, 5, 1000];
    let c =
        choose_prior_weight(&m, &table, xv.view(), &yv, 1, &cands, PriorScope::Parent, 9).unwrap();
    assert_eq!(c.episodes, 10);
    assert_eq!(c.top1_error.len(), 4);
    let err = |w: u64| c.top1_error.iter().find(|e| e.0 == w).unwrap().1;
    // m = 1000 makes every simulated class (almost) the average of its siblings: far worse.
    assert!(err(1000) > err(c.weight) + 0.2, "{:?}", c.top1_error);
    assert!(c.top1_error.iter().all(|e| e.1 >= err(c.weight)));
    let again =
        choose_prior_weight(&m, &table, xv.view(), &yv, 1, &cands, PriorScope::Parent, 9).unwrap();
    assert_eq!(c, again, "same seed, same choice");
    assert!(
        choose_prior_weight(&m, &table, xv.view(), &yv, 0, &cands, PriorScope::Parent, 9).is_err()
    );
    assert!(
        choose_prior_weight(
            &m,
            &table,
            xv.view(),
            &yv[1..],
            1,
            &cands,
            PriorScope::Parent,
            9
        )
        .is_err()
    );
}
