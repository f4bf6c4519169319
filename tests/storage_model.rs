//! Model test: random sequences of operations (adds with automatic and explicit ids,
//! upserts, deletes, class records, commits, reopen, compaction, GC) are applied to an index and
//! to a plain in-memory model. After every commit, reopen and compaction the index's live rows
//! and classes — from the writer's snapshot and from a fresh read of the directory — equal the
//! model's committed state, and every call succeeds or fails exactly as the model predicts.

mod storage_support;

use std::collections::{BTreeMap, BTreeSet};

use codedb::storage::{CompactionPolicy, Config, Index, Snapshot, StorageError};
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
        1 => (0u32..5, 1u64..4, -3i8..4).prop_map(|(id, count, v)| Action::AddClass { id, count, v }),
        4 => Just(Action::Commit),
        1 => Just(Action::Reopen),
        1 => (any::<bool>(), 1usize..40)
            .prop_map(|(full, buffer_rows)| Action::Compact { full, buffer_rows }),
        1 => Just(Action::Gc),
    ]
}

#[derive(Debug, Clone, Default, PartialEq)]
struct State {
    rows: RowMap,
    classes: BTreeMap<u32, (u64, f64)>,
    next_auto: u64,
}

fn config() -> Config {
    small_config(300)
}

/// The index's committed state, from the writer's snapshot and from the directory.
fn check(idx: &Index, dir: &std::path::Path, want: &State, when: &str) {
    for s in [idx.snapshot(), Snapshot::open(dir).unwrap()] {
        assert_eq!(rows_of(&s), want.rows, "rows after {when}");
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

fn run(actions: &[Action]) {
    let dir = scratch_dir();
    let mut idx = Index::create(dir.path(), &model(), config()).unwrap();
    let mut committed = State::default();
    let mut staged = State::default();
    for (step, a) in actions.iter().enumerate() {
        let when = format!("step {step} {a:?}");
        match a {
            Action::AddAuto { n, labels } => {
                let labels: Option<Vec<u32>> = labels.then(|| (0..*n as u32).collect());
                let c: Vec<u8> = (0..*n).flat_map(|k| code(k as u64, step as u64)).collect();
                let ids = idx.add_codes(&c, None, labels.as_deref()).unwrap();
                let want: Vec<u64> = (staged.next_auto..staged.next_auto + *n as u64).collect();
                assert_eq!(ids, want, "{when}");
                for (k, id) in ids.into_iter().enumerate() {
                    let l = labels.as_ref().map(|l| l[k]);
                    staged.rows.insert(id, (c[k * 8..(k + 1) * 8].to_vec(), l));
                }
                staged.next_auto += *n as u64;
            }
            Action::AddIds { ids } => {
                let unique: BTreeSet<u64> = ids.iter().copied().collect();
                let r = idx.add_codes(&codes(ids, 1), Some(ids), None);
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
                let r = idx.upsert_codes(&codes(ids, *generation), ids, Some(&labels));
                if unique.len() != ids.len() {
                    assert!(r.is_err(), "{when}");
                } else {
                    let replaced = ids.iter().filter(|i| staged.rows.contains_key(i)).count();
                    assert_eq!(r.unwrap(), replaced as u64, "{when}");
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
                check(&idx, dir.path(), &committed, &when);
            }
            Action::Reopen => {
                drop(idx);
                idx = Index::open(dir.path(), config()).unwrap();
                staged = committed.clone();
                check(&idx, dir.path(), &committed, &when);
            }
            Action::Compact { full, buffer_rows } => {
                let policy = CompactionPolicy {
                    buffer_rows: *buffer_rows,
                    min_merge: 2,
                    tier_floor_bytes: 1 << 10,
                    full: *full,
                    ..CompactionPolicy::default()
                };
                let r = idx.compact(&policy).unwrap();
                assert!(r.gc_error.is_none());
                check(&idx, dir.path(), &committed, &when);
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
                check(&idx, dir.path(), &committed, &when);
            }
        }
    }
    idx.commit().unwrap();
    check(&idx, dir.path(), &staged, "the final commit");
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
        actions in prop::collection::vec(action(), 1..60)
    ) {
        run(&actions);
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
                id: rng.random_range(0..8),
                count: 1,
                v: 1,
            },
            13..=16 => Action::Commit,
            17 => Action::Reopen,
            18 => Action::Compact {
                full: rng.random_bool(0.3),
                buffer_rows: rng.random_range(1..100),
            },
            _ => Action::Gc,
        })
        .collect();
    run(&actions);
}
