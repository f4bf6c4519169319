//! Model test: random sequences of operations (adds with automatic and explicit ids,
//! upserts, deletes, class records, commits, reopen, compaction, GC) are applied to an index and
//! to a plain in-memory model. After every commit, reopen and compaction the index's live rows
//! and classes — from the writer's snapshot and from a fresh read of the directory — equal the
//! model's committed state, and every call succeeds or fails exactly as the model predicts.
//! The same runs on an index that stores f16 vectors, with list ids on most rows: every live
//! row's list id and stored vector must survive add, upsert, delete, seal, compaction (with the
//! recorded merge order and with the recomputing fallback) and reopen exactly.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod storage_support;

use std::collections::{BTreeMap, BTreeSet};

use codedb::EncodedOptions;
use codedb::format::{VectorDType, VectorSpec};
use codedb::{CompactionPolicy, Config, CreateOptions, Index, RowBatch, Snapshot, StorageError};
use ndarray::Array2;
use proptest::prelude::*;
use storage_support::*;

#[derive(Debug, Clone)]
enum Action {
    AddAuto {
        n: usize,
        labels: bool,
    },
    AddIds {
        ids: Vec<u64>,
    },
    /// Replaces the live rows picked by `picks` (and adds `new_id` when given).
    Upsert {
        picks: Vec<u64>,
        new_id: Option<u64>,
        generation: u64,
    },
    /// Deletes the live rows picked by `picks`, plus a never-used id when `missing`.
    Delete {
        picks: Vec<u64>,
        missing: bool,
    },
    AddClass {
        id: u32,
        count: u64,
        v: i8,
    },
    Commit,
    /// `commit_sealed`: commit and seal the active log whatever its size.
    CommitSealed,
    Reopen,
    Compact {
        full: bool,
        buffer_rows: usize,
    },
    Gc,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (1usize..25, any::<bool>()).prop_map(|(n, labels)| Action::AddAuto { n, labels }),
        2 => prop::collection::vec(900u64..960, 1..6).prop_map(|ids| Action::AddIds { ids }),
        2 => (
            prop::collection::vec(any::<u64>(), 0..4),
            prop::option::of(700u64..720),
            1u64..1000
        )
            .prop_map(|(picks, new_id, generation)| Action::Upsert { picks, new_id, generation }),
        3 => (prop::collection::vec(any::<u64>(), 1..6), prop::bool::weighted(0.15))
            .prop_map(|(picks, missing)| Action::Delete { picks, missing }),
        // Class ids apart from row labels (< 25): a labelled row of a class counts in it,
        // which `classes_api` tests; here class records and labels stay independent.
        1 => (100u32..105, 1u64..4, -3i8..4).prop_map(|(id, count, v)| Action::AddClass { id, count, v }),
        4 => Just(Action::Commit),
        1 => Just(Action::CommitSealed),
        1 => Just(Action::Reopen),
        1 => (any::<bool>(), 1usize..40)
            .prop_map(|(full, buffer_rows)| Action::Compact { full, buffer_rows }),
        1 => Just(Action::Gc),
    ]
}

#[derive(Debug, Clone, Default, PartialEq)]
struct State {
    rows: RowMap,
    /// List id and stored vector per live row (vector mode only).
    extras: Extras,
    classes: BTreeMap<u32, (u64, f64)>,
    next_auto: u64,
}

fn config() -> Config {
    small_config(300)
}

/// The index's committed state, from the writer's snapshot and from the directory.
fn check(idx: &Index, dir: &std::path::Path, want: &State, when: &str, vectors: bool) {
    for s in [idx.snapshot(), Snapshot::open(dir).unwrap()] {
        assert_eq!(rows_of(&s), want.rows, "rows after {when}");
        if vectors {
            assert_eq!(extras_of(&s), want.extras, "lists and vectors after {when}");
        }
        let classes: BTreeMap<u32, (u64, f64)> = s
            .classes()
            .map(|t| {
                t.classes
                    .iter()
                    .map(|c| (c.id, (c.count, c.sum[0])))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(classes, want.classes, "classes after {when}");
        assert_eq!(
            s.manifest().next_auto_id,
            want.next_auto,
            "next id after {when}"
        );
    }
}

/// The live ids `picks` selects (with repeats, which the engine must refuse).
fn pick(staged: &State, picks: &[u64]) -> Vec<u64> {
    if staged.rows.is_empty() {
        return Vec::new();
    }
    let keys: Vec<u64> = staged.rows.keys().copied().collect();
    picks
        .iter()
        .map(|p| keys[(p % keys.len() as u64) as usize])
        .collect()
}

const DIM: usize = 3;

/// The stored vector of `id` at `generation` (exact in f16).
fn vector(id: u64, generation: u64) -> Vec<f32> {
    vec![
        (id % 7) as f32 * 0.5,
        (generation % 5) as f32,
        -((id % 3) as f32),
    ]
}

/// Vectors for `ids` (vector mode) as the batch's array.
fn vectors(ids: &[u64], generation: u64) -> Array2<f32> {
    let flat: Vec<f32> = ids.iter().flat_map(|&i| vector(i, generation)).collect();
    Array2::from_shape_vec((ids.len(), DIM), flat).unwrap()
}

/// The list id vector-mode rows get (none for ids ≡ 0 mod 5, so segments mix "no list" rows).
fn list_of(id: u64) -> Option<u32> {
    (!id.is_multiple_of(5)).then_some((id % 4) as u32)
}

/// Adds (or upserts) rows with the vector-mode columns: every row a vector, list ids when
/// `with_lists`. Returns the engine's result and the extras the model expects.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn add_extra(
    idx: &Index,
    codes: &[u8],
    ids: Option<&[u64]>,
    expect_ids: &[u64],
    labels: Option<&[u32]>,
    generation: u64,
    with_lists: bool,
    upsert: bool,
) -> (
    Result<Vec<u64>, StorageError>,
    Vec<(u64, (Option<u32>, Option<Vec<f32>>))>,
) {
    // A batch has a lists column or not: in a listed batch, ids without a list of their own
    // get list 9.
    let lists: Vec<u32> = expect_ids
        .iter()
        .map(|&i| list_of(i).unwrap_or(9))
        .collect();
    let v = vectors(expect_ids, generation);
    let batch = RowBatch {
        codes,
        ids,
        labels,
        lists: with_lists.then_some(&lists[..]),
        vectors: Some(v.view()),
    };
    let r = if upsert {
        idx.upsert_encoded(&batch, &EncodedOptions::default())
            .map(|replaced| vec![replaced])
    } else {
        idx.add_encoded(&batch, &EncodedOptions::default())
    };
    let extras = expect_ids
        .iter()
        .zip(&lists)
        .map(|(&i, &l)| (i, (with_lists.then_some(l), Some(vector(i, generation)))))
        .collect();
    (r, extras)
}

fn create(dir: &std::path::Path, vectors: bool) -> Index {
    let options = CreateOptions {
        store_vectors: vectors.then(|| VectorSpec::new(VectorDType::F16, DIM as u32)),
        ..CreateOptions::default()
    };
    Index::create_with(dir, &model(), &options, config()).unwrap()
}

fn run(actions: &[Action], vectors: bool) {
    let dir = scratch_dir();
    let mut idx = create(dir.path(), vectors);
    let mut committed = State::default();
    let mut staged = State::default();
    for (step, a) in actions.iter().enumerate() {
        let when = format!("step {step} {a:?}");
        match a {
            Action::AddAuto { n, labels } => {
                let labels: Option<Vec<u32>> = labels.then(|| (0..*n as u32).collect());
                let c: Vec<u8> = (0..*n).flat_map(|k| code(k as u64, step as u64)).collect();
                let want: Vec<u64> = (staged.next_auto..staged.next_auto + *n as u64).collect();
                let ids = if vectors {
                    let (r, extras) = add_extra(
                        &idx,
                        &c,
                        None,
                        &want,
                        labels.as_deref(),
                        step as u64,
                        n % 3 != 0,
                        false,
                    );
                    staged.extras.extend(extras);
                    r.unwrap()
                } else {
                    idx.add_encoded(
                        &RowBatch {
                            labels: labels.as_deref(),
                            ..RowBatch::new(&c)
                        },
                        &EncodedOptions::default(),
                    )
                    .unwrap()
                };
                assert_eq!(ids, want, "{when}");
                for (k, id) in ids.into_iter().enumerate() {
                    let l = labels.as_ref().map(|l| l[k]);
                    staged.rows.insert(id, (c[k * 8..(k + 1) * 8].to_vec(), l));
                }
                staged.next_auto += *n as u64;
            }
            Action::AddIds { ids } => {
                let unique: BTreeSet<u64> = ids.iter().copied().collect();
                let (r, extras) = if vectors {
                    add_extra(&idx, &codes(ids, 1), Some(ids), ids, None, 1, true, false)
                } else {
                    (
                        idx.add_encoded(
                            &RowBatch::new(&codes(ids, 1)).with_ids(ids),
                            &EncodedOptions::default(),
                        ),
                        Vec::new(),
                    )
                };
                if unique.len() != ids.len() {
                    assert!(
                        matches!(r, Err(StorageError::InvalidArgument { .. })),
                        "{when}"
                    );
                } else if let Some(&dup) = ids.iter().find(|i| staged.rows.contains_key(i)) {
                    assert!(
                        matches!(r, Err(StorageError::DuplicateId { id, .. }) if id == dup),
                        "{when}: {r:?}"
                    );
                } else {
                    assert_eq!(r.unwrap(), *ids);
                    for &id in ids {
                        staged.rows.insert(id, (code(id, 1).to_vec(), None));
                    }
                    staged.extras.extend(extras);
                    staged.next_auto = staged.next_auto.max(ids.iter().max().unwrap() + 1);
                }
            }
            Action::Upsert {
                picks,
                new_id,
                generation,
            } => {
                let mut ids = pick(&staged, picks);
                ids.extend(new_id);
                if ids.is_empty() {
                    continue;
                }
                let ids = &ids;
                let unique: BTreeSet<u64> = ids.iter().copied().collect();
                let labels: Vec<u32> = ids.iter().map(|&i| (i % 3) as u32).collect();
                let c = codes(ids, *generation);
                let (r, extras) = if vectors {
                    let with_lists = generation % 2 == 0;
                    let (r, e) = add_extra(
                        &idx,
                        &c,
                        Some(ids),
                        ids,
                        Some(&labels),
                        *generation,
                        with_lists,
                        true,
                    );
                    (r.map(|v| v.first().copied()), e)
                } else {
                    (
                        idx.upsert_encoded(
                            &RowBatch::new(&c).with_ids(ids).with_labels(&labels),
                            &EncodedOptions::default(),
                        )
                        .map(Some),
                        Vec::new(),
                    )
                };
                if unique.len() != ids.len() {
                    assert!(r.is_err(), "{when}");
                } else {
                    let replaced = ids.iter().filter(|i| staged.rows.contains_key(i)).count();
                    if let Some(n) = r.unwrap() {
                        assert_eq!(n, replaced as u64, "{when}");
                    }
                    staged.extras.extend(extras);
                    for (k, &id) in ids.iter().enumerate() {
                        staged
                            .rows
                            .insert(id, (code(id, *generation).to_vec(), Some(labels[k])));
                    }
                    staged.next_auto = staged.next_auto.max(ids.iter().max().unwrap() + 1);
                }
            }
            Action::Delete { picks, missing } => {
                let mut ids = pick(&staged, picks);
                if *missing || ids.is_empty() {
                    ids.push(5_000 + step as u64);
                }
                let ids = &ids;
                let unique: BTreeSet<u64> = ids.iter().copied().collect();
                let r = idx.delete(ids);
                if unique.len() != ids.len() {
                    assert!(
                        matches!(r, Err(StorageError::InvalidArgument { .. })),
                        "{when}"
                    );
                } else if let Some(&missing) = ids.iter().find(|i| !staged.rows.contains_key(i)) {
                    assert!(
                        matches!(r, Err(StorageError::UnknownId { id, .. }) if id == missing),
                        "{when}: {r:?}"
                    );
                } else {
                    r.unwrap();
                    for id in ids {
                        staged.rows.remove(id);
                        staged.extras.remove(id);
                    }
                }
            }
            Action::AddClass { id, count, v } => {
                let v = *v as f64 * 0.5;
                idx.add_class(&[class(*id, &format!("c{id}"), None, *count, 2, v)])
                    .unwrap();
                let e = staged.classes.entry(*id).or_insert((0, 0.0));
                e.0 += count;
                e.1 += v;
            }
            Action::Commit => {
                let before = idx.version();
                let changed = idx.has_uncommitted();
                let v = idx.commit().unwrap();
                assert_eq!(v, before + changed as u64, "{when}");
                committed = staged.clone();
                check(&idx, dir.path(), &committed, &when, vectors);
            }
            Action::CommitSealed => {
                let before = idx.version();
                let had_log = idx.snapshot().active_log().is_some();
                let changed = idx.has_uncommitted() || had_log;
                let v = idx.commit_sealed().unwrap();
                assert_eq!(v, before + changed as u64, "{when}");
                assert!(
                    idx.snapshot().active_log().is_none(),
                    "log left after {when}"
                );
                committed = staged.clone();
                check(&idx, dir.path(), &committed, &when, vectors);
            }
            Action::Reopen => {
                drop(idx);
                idx = Index::open(dir.path(), config()).unwrap();
                staged = committed.clone();
                check(&idx, dir.path(), &committed, &when, vectors);
            }
            Action::Compact { full, buffer_rows } => {
                let policy = CompactionPolicy {
                    buffer_rows: *buffer_rows,
                    // Every third compaction has no room to record the merge order, so the
                    // per-column recomputing path is checked against the same model.
                    order_budget_bytes: if buffer_rows % 3 == 0 { 8 } else { 1 << 20 },
                    min_merge: 2,
                    tier_floor_bytes: 1 << 10,
                    full: *full,
                    ..CompactionPolicy::default()
                };
                let r = idx.compact(&policy).unwrap();
                assert!(r.gc_error.is_none());
                check(&idx, dir.path(), &committed, &when, vectors);
                if *full {
                    let s = idx.snapshot();
                    assert_eq!(
                        s.manifest().deleted_rows(),
                        0,
                        "{when}: full compaction drops deleted rows"
                    );
                    assert!(s.manifest().class_files.len() <= 1);
                }
            }
            Action::Gc => {
                idx.gc().unwrap();
                check(&idx, dir.path(), &committed, &when, vectors);
            }
        }
    }
    idx.commit().unwrap();
    check(&idx, dir.path(), &staged, "the final commit", vectors);
    drop(idx);
    assert_verifies(dir.path());
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_index_behaves_like_a_map_after_every_commit_reopen_and_compaction(
        actions in prop::collection::vec(action(), 1..60),
        vectors in any::<bool>(),
    ) {
        run(&actions, vectors);
    }
}

#[test]
fn a_fixed_long_sequence_matches_the_model() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let actions: Vec<Action> = (0..400)
        .map(|_| match rng.random_range(0..20) {
            0..=4 => Action::AddAuto {
                n: rng.random_range(1..30),
                labels: rng.random_bool(0.5),
            },
            5..=6 => Action::AddIds {
                ids: vec![rng.random_range(900..1000)],
            },
            7..=8 => Action::Upsert {
                picks: vec![rng.random::<u64>()],
                new_id: rng.random_bool(0.3).then(|| rng.random_range(700..720)),
                generation: rng.random_range(1..100),
            },
            9..=11 => Action::Delete {
                picks: (0..rng.random_range(1..4))
                    .map(|_| rng.random::<u64>())
                    .collect(),
                missing: rng.random_bool(0.1),
            },
            12 => Action::AddClass {
                id: rng.random_range(100..108),
                count: 1,
                v: 1,
            },
            13..=15 => Action::Commit,
            16 => Action::CommitSealed,
            17 => Action::Reopen,
            18 => Action::Compact {
                full: rng.random_bool(0.3),
                buffer_rows: rng.random_range(1..100),
            },
            _ => Action::Gc,
        })
        .collect();
    run(&actions, false);
    run(&actions, true);
}
