//! Crash consistency.
//!
//! `killed_writers_never_lose_acknowledged_commits`: a child process (this test binary,
//! re-invoked on the ignored `crash_child` test) runs a seeded random workload — adds with
//! automatic and explicit ids, upserts, deletes, class records, commits (a fifth of them
//! `commit_sealed`), compactions, garbage collections — against one index that stores f16 vectors
//! and attribute columns (every row's values written in its log record), most batches with list ids, and
//! the parent SIGKILLs it at a random instant. Before each
//! commit the child appends the digest of the state that commit would publish to a side file
//! (`try`), and after `commit()` returns, the digest again (`ack`). After every kill the parent
//! reopens the index and requires: it opens; `verify` is clean; its rows and classes are exactly
//! the last acknowledged state (codes, labels, list ids, stored vectors and attribute values), or exactly the
//! state of the commit in flight when the child died — never anything in between. The next child continues on the same index, so crashes
//! during recovery are exercised too (15% of the kills land right after the spawn). 240 kill points by default; `CODEDB_CRASH_ITERATIONS`
//! sets the count (10 000 for the long run).
//!
//! The other tests damage the active log by hand: torn and uncommitted tails are cut off and
//! reported, damage inside the committed length is an error.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod storage_support;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codedb::admin::verify_path;
use codedb::format::{LogBatch, LogMeta, Manifest, VectorDType, VectorSpec};
use codedb::{Attributes, Column, EncodedOptions, Schema, Value};
use codedb::{
    CompactionPolicy, Config, CreateOptions, Index, Retention, RowBatch, Snapshot, StorageError,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_support::*;

const CHILD_DIR: &str = "CODEDB_CRASH_CHILD_DIR";
const CHILD_SEED: &str = "CODEDB_CRASH_CHILD_SEED";
const CHILD_SIDE: &str = "CODEDB_CRASH_CHILD_SIDE";

fn crash_config() -> Config {
    Config {
        seal_bytes: 4 << 10,
        retention: Retention {
            keep_versions: 2,
            keep_for: Duration::ZERO,
        },
        ..Config::default()
    }
}

/// Logical contents of a version: rows and classes (id, name, count, sum bits).
#[derive(Debug, Clone, Default, PartialEq)]
struct State {
    rows: RowMap,
    /// List id and stored vector per live row.
    extras: Extras,
    /// Attribute values per live row: `gen` and `tag`.
    attrs: BTreeMap<u64, (i64, Vec<String>)>,
    classes: BTreeMap<u32, (String, u64, Vec<u64>)>,
}

fn state_of(s: &Snapshot) -> State {
    State {
        rows: rows_of(s),
        extras: extras_of(s),
        attrs: attrs_of(s),
        classes: s
            .classes()
            .map(|t| {
                t.classes
                    .iter()
                    .map(|c| {
                        let sum = c.sum.iter().map(|v| v.to_bits()).collect();
                        (c.id, (c.name.clone(), c.count, sum))
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Every live row's attribute values (each row must have them: a row without its record's
/// columns would read the defaults, 0 and no tags, which no write stores).
fn attrs_of(s: &Snapshot) -> BTreeMap<u64, (i64, Vec<String>)> {
    let ids: Vec<u64> = s.rows().unwrap().map(|r| r.id).collect();
    let v = s.attribute_values(&ids, &["gen", "tag"]).unwrap();
    ids.iter()
        .enumerate()
        .map(|(r, &id)| {
            let g = match v.column(0).unwrap().value(r) {
                Some(Value::Int(g)) => g,
                other => panic!("id {id}: gen {other:?}"),
            };
            let t = match v.column(1).unwrap().value(r) {
                Some(Value::Tags(t)) => t,
                other => panic!("id {id}: tag {other:?}"),
            };
            (id, (g, t))
        })
        .collect()
}

/// The attribute values a write of generation `generation` gives its row `k`.
fn attr_values(k: u64, generation: u64) -> (i64, Vec<String>) {
    (
        1 + (k + 3 * generation) as i64,
        vec![format!("t{}", (k + generation) % 3)],
    )
}

/// A 128-bit FNV-1a digest of a state (two offsets): compared, never trusted for anything else.
fn digest(s: &State) -> String {
    let mut h = [0xcbf2_9ce4_8422_2325u64, 0x6c62_272e_07bb_0142u64];
    let mut eat = |bytes: &[u8]| {
        for hh in h.iter_mut() {
            for &b in bytes {
                *hh ^= b as u64;
                *hh = hh.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    };
    for (id, (code, label)) in &s.rows {
        eat(&id.to_le_bytes());
        eat(code);
        eat(&label.map_or(u64::MAX, |l| l as u64).to_le_bytes());
    }
    eat(b"extras");
    for (id, (list, v)) in &s.extras {
        eat(&id.to_le_bytes());
        eat(&list.map_or(u64::MAX, |l| l as u64).to_le_bytes());
        for x in v.iter().flatten() {
            eat(&x.to_bits().to_le_bytes());
        }
    }
    eat(b"attrs");
    for (id, (g, tags)) in &s.attrs {
        eat(&id.to_le_bytes());
        eat(&g.to_le_bytes());
        for t in tags {
            eat(t.as_bytes());
            eat(b"\0");
        }
    }
    eat(b"classes");
    for (id, (name, count, sum)) in &s.classes {
        eat(&id.to_le_bytes());
        eat(name.as_bytes());
        eat(&count.to_le_bytes());
        for v in sum {
            eat(&v.to_le_bytes());
        }
    }
    format!("{:016x}{:016x}-{}", h[0], h[1], s.rows.len())
}

const VDIM: usize = 2;

/// The stored vector of `id` added at `generation` (exact in f16).
fn stored_vector(id: u64, generation: u64) -> [f32; VDIM] {
    [(id % 11) as f32, (generation % 7) as f32 * 0.25]
}

/// Adds rows with codes `c` (automatic ids) or upserts them (`ids`), with vectors and, when
/// `lists`, list ids derived from `c`'s row number and `generation`; records them in `model`.
#[allow(clippy::too_many_arguments)]
fn add_rows(
    idx: &Index,
    model: &mut State,
    c: &[u8],
    ids: Option<&[u64]>,
    labels: Option<&[u32]>,
    generation: u64,
    lists: bool,
) -> Vec<u64> {
    let n = c.len() / 8;
    let list_ids: Vec<u32> = (0..n as u64)
        .map(|k| ((k + generation) % 6) as u32)
        .collect();
    let flat: Vec<f32> = (0..n as u64)
        .flat_map(|k| stored_vector(k, generation))
        .collect();
    let v = ndarray::Array2::from_shape_vec((n, VDIM), flat).unwrap();
    let batch = RowBatch {
        codes: c,
        ids,
        labels,
        lists: lists.then_some(&list_ids[..]),
        vectors: Some(v.view()),
    };
    let vals: Vec<(i64, Vec<String>)> = (0..n as u64).map(|k| attr_values(k, generation)).collect();
    let attrs = Attributes::new(
        n,
        vec![
            (
                "gen".into(),
                Column::Int(vals.iter().map(|v| v.0).collect()),
            ),
            (
                "tag".into(),
                Column::tags(&vals.iter().map(|v| v.1.clone()).collect::<Vec<_>>()),
            ),
        ],
    )
    .unwrap();
    let write = EncodedOptions {
        attributes: Some(&attrs),
        ..EncodedOptions::default()
    };
    let out = match ids {
        Some(ids) => {
            idx.upsert_encoded(&batch, &write).unwrap();
            ids.to_vec()
        }
        None => idx.add_encoded(&batch, &write).unwrap(),
    };
    for (k, &id) in out.iter().enumerate() {
        let label = labels.map(|l| l[k]);
        model
            .rows
            .insert(id, (c[k * 8..(k + 1) * 8].to_vec(), label));
        model.extras.insert(
            id,
            (
                lists.then_some(list_ids[k]),
                Some(stored_vector(k as u64, generation).to_vec()),
            ),
        );
        model.attrs.insert(id, attr_values(k as u64, generation));
    }
    out
}

/// The child: opens the index and runs the random workload until it is killed.
#[test]
#[ignore = "child process of killed_writers_never_lose_acknowledged_commits"]
fn crash_child() {
    let (Ok(dir), Ok(seed), Ok(side)) = (
        std::env::var(CHILD_DIR),
        std::env::var(CHILD_SEED),
        std::env::var(CHILD_SIDE),
    ) else {
        eprintln!("crash_child runs only as the crash test's child process");
        return;
    };
    let seed: u64 = seed.parse().unwrap();
    let mut side = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(side)
        .unwrap();
    let mut say = |line: String| {
        // One write per line: a kill leaves whole lines and at most one partial last line.
        side.write_all(format!("{line}\n").as_bytes()).unwrap();
    };
    let idx = Index::open(Path::new(&dir), crash_config()).unwrap();
    let mut model = state_of(&idx.snapshot());
    say(format!("start {}", digest(&model)));
    let mut committed = model.clone();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dim = 3;
    for step in 0..1_000_000u64 {
        let roll = rng.random_range(0..100);
        if roll < 35 {
            let n = rng.random_range(1..40usize);
            let labels: Option<Vec<u32>> = rng
                .random_bool(0.5)
                .then(|| (0..n).map(|_| rng.random_range(0..5)).collect());
            let c: Vec<u8> = (0..n).flat_map(|k| code(k as u64, seed ^ step)).collect();
            let lists = rng.random_bool(0.7);
            add_rows(&idx, &mut model, &c, None, labels.as_deref(), step, lists);
        } else if roll < 36 {
            // A large batch: a SIGKILL can cut its write short (a torn record).
            let n = rng.random_range(2_000..12_000usize);
            let c: Vec<u8> = (0..n).flat_map(|k| code(k as u64, seed ^ step)).collect();
            add_rows(&idx, &mut model, &c, None, None, step, true);
        } else if roll < 42 {
            let id = rng.random_range(1u64 << 40..(1u64 << 40) + 5000);
            if !model.rows.contains_key(&id) {
                add_rows(
                    &idx,
                    &mut model,
                    &code(id, step),
                    Some(&[id]),
                    Some(&[7]),
                    step,
                    false,
                );
            }
        } else if roll < 47 && !model.rows.is_empty() {
            let k = rng.random_range(0..model.rows.len());
            let id = *model.rows.keys().nth(k).unwrap();
            let lists = rng.random_bool(0.5);
            add_rows(
                &idx,
                &mut model,
                &code(id, step + 1),
                Some(&[id]),
                None,
                step,
                lists,
            );
        } else if roll < 62 && !model.rows.is_empty() {
            let big = model.rows.len() > 20_000 || rng.random_bool(0.1);
            let n = if big {
                3_000
            } else {
                rng.random_range(1..6usize)
            };
            let n = n.min(model.rows.len());
            let keys: Vec<u64> = model.rows.keys().copied().collect();
            let mut picked = std::collections::BTreeSet::new();
            while picked.len() < n {
                picked.insert(keys[rng.random_range(0..keys.len())]);
            }
            let ids: Vec<u64> = picked.into_iter().collect();
            idx.delete(&ids).unwrap();
            for id in ids {
                model.rows.remove(&id);
                model.extras.remove(&id);
                model.attrs.remove(&id);
            }
        } else if roll < 67 {
            // Class ids apart from row labels (0-4, 7): these raw records count no row.
            let id = rng.random_range(100..112u32);
            let name = format!("class-{id}");
            let v = rng.random_range(-4..5) as f64 * 0.25;
            idx.add_class(&[class(id, &name, None, 1, dim, v)]).unwrap();
            let e = model
                .classes
                .entry(id)
                .or_insert((name, 0, vec![0f64.to_bits(); dim]));
            e.1 += 1;
            for s in e.2.iter_mut() {
                *s = (f64::from_bits(*s) + v).to_bits();
            }
        } else if roll < 90 {
            say(format!("try {}", digest(&model)));
            // Every fifth commit also seals the log, whatever its size (as `codedb build` does).
            let v = if rng.random_bool(0.2) {
                idx.commit_sealed().unwrap()
            } else {
                idx.commit().unwrap()
            };
            committed = model.clone();
            say(format!("ack {v} {}", digest(&committed)));
        } else if roll < 96 {
            // A compaction publishes the committed rows (staged changes stay staged).
            say(format!("try {}", digest(&committed)));
            let policy = if rng.random_bool(0.3) {
                CompactionPolicy::full()
            } else {
                CompactionPolicy {
                    min_merge: 3,
                    tier_floor_bytes: 8 << 10,
                    buffer_rows: rng.random_range(1..64),
                    ..CompactionPolicy::default()
                }
            };
            let r = idx.compact(&policy).unwrap();
            assert!(r.gc_error.is_none(), "{r:?}");
            say(format!(
                "ack {} {}",
                r.version.unwrap_or(r.based_on),
                digest(&committed)
            ));
        } else {
            idx.gc().unwrap();
        }
    }
}

/// Parsed side file of one child run.
#[derive(Debug, Default)]
struct Side {
    start: Option<String>,
    /// Digest and version of the last acknowledged commit.
    last_ack: Option<(u64, String)>,
    /// A `try` after the last `ack`: that commit was in flight.
    in_flight: Option<String>,
    acks: usize,
}

fn read_side(path: &Path) -> Side {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut s = Side::default();
    // Only newline-terminated lines are complete.
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    for line in complete.lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        match parts.as_slice() {
            ["start", d] => s.start = Some(d.to_string()),
            ["try", d] => s.in_flight = Some(d.to_string()),
            ["ack", v, d] => {
                s.last_ack = Some((v.parse().unwrap(), d.to_string()));
                s.in_flight = None;
                s.acks += 1;
            }
            _ => panic!("bad side line {line:?}"),
        }
    }
    s
}

fn iterations() -> usize {
    std::env::var("CODEDB_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(240)
}

#[test]
fn killed_writers_never_lose_acknowledged_commits() {
    let iterations = iterations();
    let dir = tempfile::tempdir().unwrap();
    let sides = tempfile::tempdir().unwrap();
    let options = CreateOptions {
        store_vectors: Some(VectorSpec::new(VectorDType::F16, VDIM as u32)),
        attributes: Schema::parse("gen:int,tag:tags").unwrap(),
    };
    drop(Index::create_with(dir.path(), &model(), &options, crash_config()).unwrap());
    let exe = std::env::current_exe().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0xC4A5_4000);
    let mut expected = digest(&State::default());
    let mut version = 1;
    let (mut acks, mut in_flight_published, mut tails, mut torn, mut completed) = (0, 0, 0, 0, 0);
    let t0 = Instant::now();
    for i in 0..iterations {
        let side: PathBuf = sides.path().join(format!("side-{i}"));
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--ignored", "--test-threads=1"])
            .env(CHILD_DIR, dir.path())
            .env(CHILD_SEED, (0xC4A5_0000u64 + i as u64).to_string())
            .env(CHILD_SIDE, &side)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Kill instants: 15% during start-up and recovery (right after the spawn), the rest at a
        // random instant of the workload, counted from the child's "start" line so that a slow
        // machine does not spend the whole window starting the child.
        if rng.random_bool(0.15) {
            std::thread::sleep(Duration::from_millis(rng.random_range(0..8)));
        } else {
            let waited = Instant::now();
            while read_side(&side).start.is_none()
                && child.try_wait().unwrap().is_none()
                && waited.elapsed() < Duration::from_secs(30)
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(rng.random_range(0..80)));
        }
        child.kill().unwrap(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        if out.status.success() {
            completed += 1;
        } else if out.status.code().is_some() {
            panic!(
                "child {i} failed instead of being killed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }

        let idx = Index::open(dir.path(), crash_config())
            .unwrap_or_else(|e| panic!("kill {i}: the index does not open: {e}"));
        if let Some(t) = &idx.recovery().log_tail {
            tails += 1;
            torn += (t.torn_bytes > 0) as usize;
        }
        let got = digest(&state_of(&idx.snapshot()));
        let now = idx.version();
        drop(idx);
        let report = verify_path(dir.path(), &mut |_| {});
        assert!(report.ok(), "kill {i}: verify: {:#?}", report.problems);

        let s = read_side(&side);
        if let Some(start) = &s.start {
            assert_eq!(
                start, &expected,
                "kill {i}: the child started from another state"
            );
        }
        let acked = s.last_ack.as_ref().map_or(&expected, |a| &a.1);
        if let Some((v, _)) = &s.last_ack {
            assert!(now >= *v, "kill {i}: version {now} < acknowledged {v}");
        }
        acks += s.acks;
        if &got != acked {
            assert_eq!(
                Some(&got),
                s.in_flight.as_ref(),
                "kill {i}: state is neither the acknowledged one nor the commit in flight"
            );
            in_flight_published += 1;
        }
        assert!(
            now >= version,
            "kill {i}: version went back from {version} to {now}"
        );
        version = now;
        expected = got;
    }
    eprintln!(
        "crash test: {iterations} kill points in {:.1}s ({completed} children finished first), \
         {acks} acknowledged commits, {in_flight_published} in-flight commits found published, \
         {tails} log tails cut ({torn} torn), final version {version}",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        acks > iterations / 2,
        "the children acknowledged only {acks} commits"
    );
}

/// An index with committed rows in its active log; returns the log's path and committed length.
fn index_with_log(dir: &Path) -> (PathBuf, u64) {
    let idx = Index::create(dir, &model(), Config::default()).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[1, 2, 3], 0)).with_labels(&[1, 2, 3]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[4], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    let s = idx.snapshot();
    let l = s.active_log().unwrap().clone();
    (dir.join(&l.log.name), l.committed_len)
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

fn record(ids: &[u64]) -> Vec<u8> {
    let m = model();
    let meta = LogMeta {
        code_kind: m.code_kind,
        code_bytes: m.code_bytes,
        code_bits: m.code_bits,
        model_id: m.model_id,
        vectors: None,
    };
    LogBatch {
        ids: ids.to_vec(),
        codes: codes(ids, 5),
        ..LogBatch::default()
    }
    .encode(&meta, Path::new("test"))
    .unwrap()
}

#[test]
fn a_torn_log_tail_is_cut_off_and_reported_at_every_cut_point() {
    let rec = [record(&[10, 11]), record(&[12])].concat();
    let first = record(&[10, 11]).len();
    for cut in 1..rec.len() {
        let dir = scratch_dir();
        let (log, committed) = index_with_log(dir.path());
        append_raw(&log, &rec[..cut]);
        let idx = Index::open(dir.path(), Config::default()).unwrap();
        let t = idx.recovery().log_tail.clone().expect("tail reported");
        assert_eq!(t.committed_len, committed);
        assert_eq!(t.file_len, committed + cut as u64);
        let whole = (cut >= first) as u64;
        assert_eq!(t.uncommitted_batches, whole, "cut {cut}");
        assert_eq!(t.uncommitted_rows, 2 * whole);
        assert_eq!(t.torn_bytes, (cut - first * whole as usize) as u64);
        assert_eq!(t.torn_reason.is_some(), t.torn_bytes > 0);
        assert_eq!(std::fs::metadata(&log).unwrap().len(), committed, "cut off");
        assert_eq!(
            rows_of(&idx.snapshot()).keys().copied().collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        // Appends continue right after the committed length.
        idx.add_encoded(&RowBatch::new(&codes(&[7], 0)), &EncodedOptions::default())
            .unwrap();
        idx.commit().unwrap();
        drop(idx);
        let idx = Index::open(dir.path(), Config::default()).unwrap();
        assert!(idx.recovery().is_clean());
        assert_eq!(idx.snapshot().live_rows(), 5);
        drop(idx);
        assert_verifies(dir.path());
    }
}

#[test]
fn a_reader_ignores_the_tail_and_a_writer_cuts_random_garbage() {
    let dir = scratch_dir();
    let (log, committed) = index_with_log(dir.path());
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let garbage: Vec<u8> = (0..777).map(|_| rng.random()).collect();
    append_raw(&log, &garbage);
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.live_rows(), 4, "readers read only the committed prefix");
    assert_eq!(
        std::fs::metadata(&log).unwrap().len(),
        committed + 777,
        "readers never cut"
    );
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    let t = idx.recovery().log_tail.clone().unwrap();
    assert_eq!((t.uncommitted_batches, t.torn_bytes), (0, 777));
    assert_eq!(rows_of(&idx.snapshot()), rows_of(&s));
}

#[test]
fn damage_inside_the_committed_length_is_an_error_not_a_tail() {
    let dir = scratch_dir();
    let (log, committed) = index_with_log(dir.path());
    let original = std::fs::read(&log).unwrap();
    let mut p = std::fs::metadata(&log).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    std::fs::set_permissions(&log, p).unwrap();
    // A flipped bit in any committed record byte.
    for pos in [130usize, 200, committed as usize - 1] {
        let mut b = original.clone();
        b[pos] ^= 0x04;
        std::fs::write(&log, &b).unwrap();
        for e in [
            Index::open(dir.path(), Config::default()).unwrap_err(),
            Snapshot::open(dir.path()).unwrap_err(),
        ] {
            assert!(matches!(e, StorageError::Format(_)), "byte {pos}: {e}");
            assert!(e.to_string().contains("log record"), "byte {pos}: {e}");
        }
        assert!(!verify_path(dir.path(), &mut |_| {}).ok());
    }
    // A log cut below its committed length lost acknowledged rows: an error, never a tail.
    std::fs::write(&log, &original[..committed as usize - 5]).unwrap();
    let e = Index::open(dir.path(), Config::default()).unwrap_err();
    assert!(e.to_string().contains("commits"), "{e}");
    std::fs::write(&log, &original).unwrap();
    Index::open(dir.path(), Config::default()).unwrap();
}

#[test]
fn leftovers_of_an_interrupted_commit_are_removed_on_open_and_by_gc() {
    let dir = scratch_dir();
    let idx = Index::create(dir.path(), &model(), crash_config()).unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[1], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    let m = Manifest::open(&dir.path().join("v00000000000000000002.manifest")).unwrap();
    drop(idx);
    // What a crash between "publish the files" and "publish the manifest" leaves: a temporary
    // manifest and a published but unreferenced segment.
    std::fs::write(
        dir.path().join("v00000000000000000003.manifest.tmp"),
        b"partial",
    )
    .unwrap();
    let seg = dir.path().join("seg-0123456789abcdef0123456789abcdef.seg");
    std::fs::write(&seg, b"never referenced").unwrap();
    let idx = Index::open(dir.path(), crash_config()).unwrap();
    assert_eq!(
        idx.recovery().removed_temp_files,
        vec!["v00000000000000000003.manifest.tmp".to_string()]
    );
    assert_eq!(idx.version(), m.version);
    let g = idx.gc().unwrap();
    assert!(
        g.removed
            .contains(&"seg-0123456789abcdef0123456789abcdef.seg".to_string())
    );
    assert!(!seg.exists());
    idx.add_encoded(&RowBatch::new(&codes(&[2], 0)), &EncodedOptions::default())
        .unwrap();
    assert_eq!(idx.commit().unwrap(), 3);
    drop(idx);
    assert_verifies(dir.path());
}
