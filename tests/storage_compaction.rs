//! Compaction: the size-tiered policy, streaming with a tiny buffer, commits made during a
//! merge, segments written by other tools (unsorted ids), and damaged sources.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod storage_support;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use codedb::format::{
    FileId, FileRef, Manifest, OpenOptions, SegmentData, SegmentEntry, SegmentLayout,
    SegmentReader, section_kind,
};
use codedb::{CompactionPolicy, Config, Index, ReadOptions, Snapshot, StorageError};
use codedb::{EncodedOptions, RowBatch};
use storage_support::*;

/// Adds `ids` and commits; with `small_config(1)` every commit seals one segment.
fn add_commit(idx: &Index, ids: &[u64]) {
    let labels: Vec<u32> = ids.iter().map(|&i| (i % 5) as u32).collect();
    idx.add_encoded(
        &RowBatch::new(&codes(ids, 0))
            .with_ids(ids)
            .with_labels(&labels),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
}

#[test]
fn the_tiered_policy_merges_similar_sizes_and_rewrites_segments_with_many_deletes() {
    let dir = scratch_dir();
    let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
    let big: Vec<u64> = (1000..6000).collect();
    add_commit(&idx, &big);
    for k in 0..5u64 {
        add_commit(&idx, &[k * 2, k * 2 + 1]);
    }
    assert_eq!(idx.snapshot().segment_count(), 6);
    let policy = CompactionPolicy {
        min_merge: 4,
        max_merge: 16,
        tier_factor: 8,
        tier_floor_bytes: 4 << 10,
        max_deleted_fraction: 0.25,
        ..CompactionPolicy::default()
    };
    let r = idx.compact(&policy).unwrap();
    assert_eq!(r.merges.len(), 1, "{r:?}");
    assert_eq!(r.merges[0].sources.len(), 5, "the five small segments");
    assert_eq!(r.merges[0].rows, 10);
    assert_eq!(idx.snapshot().segment_count(), 2);
    assert_eq!(
        idx.compact(&policy).unwrap().version,
        None,
        "nothing left to do"
    );

    // 30% of the big segment deleted: it is rewritten alone, without them.
    let gone: Vec<u64> = (1000..2500).collect();
    idx.delete(&gone).unwrap();
    idx.commit().unwrap();
    let before = rows_of(&idx.snapshot());
    let r = idx.compact(&policy).unwrap();
    assert_eq!(r.merges.len(), 1);
    assert_eq!((r.merges[0].rows, r.merges[0].dropped), (3500, 1500));
    let s = idx.snapshot();
    assert_eq!(s.deleted_rows(), 0);
    assert_eq!(rows_of(&s), before);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn a_one_row_buffer_streams_the_same_rows_as_a_large_one() {
    let mut results = Vec::new();
    for buffer_rows in [1usize, 3, 1 << 16] {
        let dir = scratch_dir();
        let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
        for k in 0..7u64 {
            // Interleaved id ranges, so the k-way merge really interleaves sources.
            let ids: Vec<u64> = (0..50).map(|i| i * 7 + k).collect();
            add_commit(&idx, &ids);
        }
        let dels: Vec<u64> = (0..350).step_by(3).collect();
        idx.delete(&dels).unwrap();
        idx.commit().unwrap();
        let want = rows_of(&idx.snapshot());
        let r = idx
            .compact(&CompactionPolicy {
                buffer_rows,
                ..CompactionPolicy::full()
            })
            .unwrap();
        assert_eq!(r.merges.len(), 1);
        let s = idx.snapshot();
        assert_eq!(s.segment_count(), 1);
        assert_eq!(rows_of(&s), want);
        let b = s.blocks().next().unwrap();
        assert!(
            b.ids().unwrap().windows(2).all(|w| w[0] < w[1]),
            "merged output sorted by id"
        );
        results.push((
            b.ids().unwrap().to_vec(),
            b.codes().unwrap().to_vec(),
            b.labels().unwrap().map(<[u32]>::to_vec),
        ));
        drop(s);
        drop(idx);
        assert_verifies(dir.path());
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn commits_made_during_a_merge_are_carried_into_its_result() {
    let dir = scratch_dir();
    // The hook parks the merge right when it creates its output file, until the main thread
    // has committed more changes.
    let armed = Arc::new(AtomicBool::new(false));
    let parked = Arc::new(Barrier::new(2));
    let resume = Arc::new(Barrier::new(2));
    let hook = {
        let (armed, parked, resume) = (armed.clone(), parked.clone(), resume.clone());
        HookFs::new(move |op, path, _| {
            let seg_tmp = path.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with("seg-") && n.to_string_lossy().ends_with(".tmp")
            });
            if op == Op::Create && seg_tmp && armed.swap(false, Ordering::SeqCst) {
                parked.wait();
                resume.wait();
            }
            None
        })
    };
    let cfg = with_fs(small_config(1), Arc::new(Hooked(hook)));
    let idx = Arc::new(Index::create(dir.path(), &model(), cfg).unwrap());
    for k in 0..4u64 {
        add_commit(&idx, &[k * 10, k * 10 + 1, k * 10 + 2]);
    }
    // Class ids apart from the rows' labels (0-4): these raw records count no row.
    idx.add_class(&[class(101, "base", None, 1, 2, 1.0)])
        .unwrap();
    idx.commit().unwrap();
    idx.add_class(&[class(101, "base", None, 1, 2, 1.0)])
        .unwrap();
    idx.commit().unwrap();
    armed.store(true, Ordering::SeqCst);
    let compaction = {
        let idx = idx.clone();
        std::thread::spawn(move || idx.compact(&CompactionPolicy::full()).unwrap())
    };
    parked.wait();
    // While the merge is parked: delete rows of its sources and commit, add a class record,
    // and stage (without committing) one more delete.
    idx.delete(&[0, 21]).unwrap();
    idx.add_class(&[class(102, "late", None, 1, 2, 2.0)])
        .unwrap();
    let v_late = idx.commit().unwrap();
    idx.delete(&[32]).unwrap();
    resume.wait();
    let r = compaction.join().unwrap();
    assert_eq!(
        r.based_on, v_late,
        "published on top of the commit made meanwhile"
    );
    let s = idx.snapshot();
    assert_eq!(s.segment_count(), 1);
    let ids: Vec<u64> = rows_of(&s).keys().copied().collect();
    assert_eq!(ids, vec![1, 2, 10, 11, 12, 20, 22, 30, 31, 32]);
    assert_eq!(
        s.deleted_rows(),
        2,
        "the late deletes became the merged segment's bitmap"
    );
    let t = s.classes().unwrap();
    assert_eq!(
        s.manifest().class_files.len(),
        1,
        "the late delta was folded too"
    );
    assert_eq!(t.classes.iter().map(|c| c.count).sum::<u64>(), 3);
    // The staged delete lands on the merged segment at the next commit.
    idx.commit().unwrap();
    assert!(idx.snapshot().get(32).unwrap().is_none());
    drop(s);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn segments_with_unsorted_ids_from_another_tool_are_looked_up_and_merged() {
    let dir = scratch_dir();
    let m = model();
    let idx = Index::create(dir.path(), &m, small_config(1)).unwrap();
    add_commit(&idx, &[1, 4]);
    drop(idx);
    // Another tool adds a segment with unsorted ids and publishes version 3 naming it.
    let seg_id = FileId::generate();
    let name = format!("seg-{}.seg", seg_id.to_hex());
    let data = SegmentData {
        segment_id: seg_id,
        layout: SegmentLayout {
            code_kind: m.code_kind,
            code_bytes: m.code_bytes,
            code_bits: m.code_bits,
            model_id: m.model_id,
        },
        ids: vec![9, 3, 7, 5],
        codes: codes(&[9, 3, 7, 5], 0),
        labels: None,
        lists: None,
        vectors: None,
    };
    std::fs::write(dir.path().join(&name), data.to_bytes().unwrap()).unwrap();
    let (mut man, _) =
        Manifest::open_with_log(&dir.path().join("v00000000000000000002.manifest")).unwrap();
    man.version = 3;
    man.file_id = FileId::generate();
    man.next_auto_id = 10;
    man.segments.push(SegmentEntry {
        segment: FileRef { id: seg_id, name },
        rows: 4,
        deleted: 0,
        deletions: None,
    });
    std::fs::write(
        dir.path().join("v00000000000000000003.manifest"),
        man.to_bytes().unwrap(),
    )
    .unwrap();

    let idx = Index::open(dir.path(), small_config(1)).unwrap();
    assert!(matches!(
        idx.add_encoded(
            &RowBatch::new(&code(7, 1)).with_ids(&[7]),
            &EncodedOptions::default()
        ),
        Err(StorageError::DuplicateId { id: 7, .. })
    ));
    idx.delete(&[3]).unwrap();
    idx.upsert_encoded(
        &RowBatch::new(&code(9, 1)).with_ids(&[9]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    let want = rows_of(&idx.snapshot());
    assert_eq!(
        want.keys().copied().collect::<Vec<_>>(),
        vec![1, 4, 5, 7, 9]
    );
    assert_eq!(want[&9].0, code(9, 1).to_vec());
    let r = idx.compact(&CompactionPolicy::full()).unwrap();
    assert_eq!(r.merges.len(), 1);
    assert_eq!(rows_of(&idx.snapshot()), want);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn compaction_refuses_to_copy_a_damaged_column() {
    let dir = scratch_dir();
    // Every segment opened without column checksums, as large segments are.
    let cfg = Config {
        read: ReadOptions {
            full_check_below: 0,
            ..ReadOptions::default()
        },
        ..small_config(1)
    };
    let idx = Index::create(dir.path(), &model(), cfg.clone()).unwrap();
    add_commit(&idx, &(0..100).collect::<Vec<_>>());
    add_commit(&idx, &(100..200).collect::<Vec<_>>());
    drop(idx);
    let s = Snapshot::open(dir.path()).unwrap();
    let seg = dir.path().join(&s.manifest().segments[0].segment.name);
    drop(s);
    let r = SegmentReader::open(&seg, OpenOptions::default()).unwrap();
    let ci = r
        .container()
        .find_one(section_kind::SEG_CODES)
        .unwrap()
        .unwrap();
    let offset = r.container().entries()[ci].offset as usize + 5;
    drop(r);
    flip_byte(&seg, offset);

    let idx = Index::open(dir.path(), cfg).unwrap();
    let before = idx.snapshot().live_rows();
    // Reading the rows checks them: the damaged block is never handed out.
    let e = idx.snapshot().rows().err().unwrap();
    assert!(
        e.to_string().contains("checksum mismatch in codes block 0"),
        "{e}"
    );
    let e = idx.compact(&CompactionPolicy::full()).unwrap_err();
    assert!(e.to_string().contains("checksum mismatch in codes"), "{e}");
    assert_eq!(idx.snapshot().segment_count(), 2, "nothing published");
    // Not poisoned: the writer still works.
    idx.add_encoded(
        &RowBatch::new(&codes(&[500], 0)).with_ids(&[500]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    assert_eq!(idx.snapshot().live_rows(), before + 1);
}

fn flip_byte(path: &Path, offset: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[offset] ^= 0x01;
    let mut p = std::fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    std::fs::set_permissions(path, p).unwrap();
    std::fs::write(path, b).unwrap();
}

#[test]
fn deleted_rows_are_reclaimed_from_the_threshold_on_and_the_report_says_why() {
    use codedb::MergeReason;
    let dir = scratch_dir();
    let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
    add_commit(&idx, &(0..100).collect::<Vec<_>>());
    idx.delete(&(0..19).collect::<Vec<_>>()).unwrap();
    idx.commit().unwrap();
    let policy = CompactionPolicy::default();
    assert_eq!(policy.max_deleted_fraction, 0.2);
    let r = idx.compact(&policy).unwrap();
    assert_eq!(
        (r.version, r.deleted_rows_kept),
        (None, 19),
        "19 % is below 20 %"
    );

    idx.delete(&[19]).unwrap();
    idx.commit().unwrap();
    let r = idx.compact(&policy).unwrap();
    assert!(r.version.is_some(), "exactly 20 % deleted is reclaimed");
    assert_eq!(r.merges.len(), 1);
    assert_eq!(r.merges[0].reason, MergeReason::Deletes);
    assert_eq!((r.merges[0].rows, r.merges[0].dropped), (80, 20));
    assert_eq!(r.deleted_rows_kept, 0);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["merges"][0]["reason"], "deletes");

    // Threshold 0 reclaims a single deleted row; without deleted rows nothing is due.
    idx.delete(&[50]).unwrap();
    idx.commit().unwrap();
    assert_eq!(idx.compact(&policy).unwrap().deleted_rows_kept, 1);
    let any = CompactionPolicy {
        max_deleted_fraction: 0.0,
        ..CompactionPolicy::default()
    };
    let r = idx.compact(&any).unwrap();
    assert_eq!((r.merges.len(), r.deleted_rows_kept), (1, 0));
    assert_eq!(idx.compact(&any).unwrap().version, None);
    drop(idx);
    assert_verifies(dir.path());
}
