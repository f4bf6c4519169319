//! Long writes say how far they are: `add` and `upsert` report the rows encoded so far (per
//! chunk, ending at the batch's size), a compaction reports every column of every merge from 0
//! to the merge's live rows, and an error in a later chunk of a batch still names its row in
//! the whole batch.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::{Arc, Mutex};

use codedb::model::ModelError;
use codedb::{
    AddOptions, BuildOptions, CompactProgress, CompactionPolicy, Index, Model, PipelineSpec,
    StorageError, TrainOptions,
};
use ndarray::Array2;

/// `n` rows of 16 dimensions, seeded.
fn rows(n: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_fn((n, 16), |(i, j)| {
        let h = (i as u64 * 2_654_435_761 + j as u64 * 40_503 + seed * 97) % 10_007;
        (h as f32 / 10_007.0) * 4.0 - 2.0 + (i % 5) as f32
    })
}

fn model() -> Model {
    let spec = PipelineSpec::parse("pca-itq:16").unwrap();
    Model::train(&spec, rows(1_000, 1).view(), &TrainOptions::default())
        .unwrap()
        .0
}

/// An index of 10 rows in `dir/i`.
fn ten_rows(dir: &std::path::Path) -> Index {
    Index::build(
        &dir.join("i"),
        &model(),
        rows(10, 2).view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap()
}

#[test]
fn add_reports_rows_encoded_per_chunk_up_to_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let idx = ten_rows(dir.path());
    let heard = Mutex::new(Vec::new());
    let report = |n: usize| heard.lock().unwrap().push(n);
    let n = 150_000;
    let ids: Vec<u64> = (1_000..1_000 + n as u64).collect();
    let opts = AddOptions {
        ids: Some(&ids),
        progress: Some(&report),
        ..AddOptions::default()
    };
    idx.add(rows(n, 3).view(), &opts).unwrap();
    // Chunks of 65,536 rows: three reports, increasing, the last the whole batch.
    assert_eq!(*heard.lock().unwrap(), vec![65_536, 131_072, n]);
    heard.lock().unwrap().clear();
    idx.upsert(
        rows(5, 4).view(),
        &AddOptions {
            ids: Some(&ids[..5]),
            ..opts
        },
    )
    .unwrap();
    assert_eq!(*heard.lock().unwrap(), vec![5]);
}

#[test]
fn a_bad_value_in_a_later_chunk_names_its_row_in_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let idx = ten_rows(dir.path());
    let mut x = rows(70_000, 5);
    x[[68_000, 3]] = f32::NAN;
    let ids: Vec<u64> = (100..70_100).collect();
    let err = idx
        .add(
            x.view(),
            &AddOptions {
                ids: Some(&ids),
                ..AddOptions::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Model(ModelError::NonFinite {
                row: 68_000,
                col: 3,
                ..
            })
        ),
        "{err}"
    );
    // And the build of the same rows says the same.
    let err = Index::build(
        &dir.path().join("j"),
        &model(),
        x.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            err,
            StorageError::Model(ModelError::NonFinite { row: 68_000, .. })
        ),
        "{err}"
    );
}

#[test]
fn compaction_reports_every_column_of_every_merge_up_to_its_live_rows() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::build(
        &dir.path().join("i"),
        &model(),
        rows(3_000, 6).view(),
        &BuildOptions {
            labels: Some(&[1u32; 3_000]),
            classes_from_labels: false,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let ids: Vec<u64> = (10_000..12_000).collect();
    idx.add(
        rows(2_000, 7).view(),
        &AddOptions {
            ids: Some(&ids),
            ..AddOptions::default()
        },
    )
    .unwrap();
    idx.commit().unwrap();
    idx.delete(&[0, 1, 2]).unwrap();
    idx.commit().unwrap();
    let heard: Arc<Mutex<Vec<CompactProgress>>> = Arc::default();
    let h = heard.clone();
    let policy = CompactionPolicy {
        buffer_rows: 1_000,
        ..CompactionPolicy::full()
    };
    let report = idx
        .compact_sealed_cancellable(
            &policy,
            &codedb::model::Cancel::new(),
            Some(Arc::new(move |p: &CompactProgress| {
                h.lock().unwrap().push(p.clone())
            })),
        )
        .unwrap();
    assert_eq!(report.compaction.merges.len(), 1);
    let live = report.compaction.merges[0].rows;
    assert_eq!(live, 4_997);
    let heard = heard.lock().unwrap();
    let columns: Vec<&str> = {
        let mut c: Vec<&str> = heard.iter().map(|p| p.column).collect();
        c.dedup();
        c
    };
    assert_eq!(columns, ["ids", "codes", "labels"]);
    for col in columns {
        let done: Vec<u64> = heard
            .iter()
            .filter(|p| p.column == col)
            .map(|p| p.done)
            .collect();
        // Buffers of 1,000 rows: 1000, 2000, …, then the live rows.
        assert_eq!(done, [1_000, 2_000, 3_000, 4_000, live], "{col}");
    }
    assert!(
        heard
            .iter()
            .all(|p| p.total == live && p.merge == 1 && p.merges == 1)
    );
}
