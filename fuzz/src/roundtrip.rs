//! The property every fuzz target checks, one function per parser: arbitrary bytes either give
//! an `Err`, or a value that re-serialises (`to_bytes`), re-parses to the same value, and
//! re-serialises to the same bytes. Any panic — in the parser, in the writer, in an accessor
//! called on the parsed value, or from a failed assertion here — is a finding.
//!
//! `tests/fuzz_regressions.rs` includes this file with `#[path]`, so a crash artifact is replayed
//! by `cargo test` through exactly the checks the fuzz target ran.

use std::path::Path;

use codedb::format::{
    ClassTable, DeletionBitmap, Manifest, ModelFile, SegmentData, SegmentReader, VectorsView,
};

const INPUT: &str = "fuzz-input";
const REWRITTEN: &str = "fuzz-rewritten";

/// Values are compared both with `==` and through their `Debug` text: `==` on floats says
/// `-0.0 == 0.0` and `NaN != NaN`, the `Debug` text tells the sign of zero apart and prints every
/// NaN alike (NaN payloads are covered by the byte comparison of the two serialisations).
fn assert_same<T: PartialEq + std::fmt::Debug>(first: &T, second: &T, what: &str) {
    let (a, b) = (format!("{first:?}"), format!("{second:?}"));
    assert_eq!(a, b, "{what}: re-parsed value differs from the first parse");
    if !a.contains("NaN") {
        assert!(first == second, "{what}: values differ under ==");
    }
}

/// Segment: parse (all checksums), copy every column out, exercise the views, round-trip.
pub fn segment(data: &[u8]) {
    let Ok(r) = SegmentReader::from_bytes(data, Path::new(INPUT)) else {
        return;
    };
    exercise_segment(&r);
    let Ok(first) = SegmentData::from_reader(&r) else {
        return;
    };
    let bytes = first
        .to_bytes()
        .expect("a segment that parsed must serialise again");
    let r2 = SegmentReader::from_bytes(&bytes, Path::new(REWRITTEN))
        .expect("a re-serialised segment must parse");
    exercise_segment(&r2);
    let second = SegmentData::from_reader(&r2).expect("re-serialised segment columns must read");
    assert_same(&first, &second, "segment");
    let again = second.to_bytes().expect("second serialisation");
    assert!(
        again == bytes,
        "segment: serialisation is not a fixed point"
    );
}

fn exercise_segment(r: &SegmentReader) {
    let m = *r.meta();
    assert_eq!(r.ids().len(), r.rows(), "ids view length");
    assert_eq!(
        r.codes().len() as u64,
        m.rows * m.code_bytes as u64,
        "codes view length"
    );
    for row in 0..r.rows() {
        assert!(r.code(row).is_some(), "row {row} has no code");
    }
    assert!(r.code(r.rows()).is_none(), "a code past the last row");
    if let Some(l) = r.labels() {
        assert_eq!(l.len(), r.rows(), "labels view length");
    }
    if let Some(l) = r.lists() {
        assert_eq!(l.len(), r.rows(), "lists view length");
    }
    r.check_id_range().expect("ids were range-checked on open");
    if let (Ok(Some(v)), Some((_, dim))) = (r.vectors(), m.vectors) {
        let n = match &v {
            VectorsView::F32(x) => x.len(),
            VectorsView::F16(x) => x.len(),
        };
        assert_eq!(n as u64, m.rows * dim as u64, "vectors view length");
        for row in 0..r.rows() {
            assert_eq!(v.row_f32(row, dim as usize).len(), dim as usize);
        }
    }
}

/// Model. Unknown optional stages are skipped on read and therefore not written back: the
/// comparison ignores `skipped_stages` of the first parse (the second must have none).
pub fn model(data: &[u8]) {
    let Ok(mut first) = ModelFile::from_bytes(data, Path::new(INPUT)) else {
        return;
    };
    first.skipped_stages.clear();
    let bytes = first
        .to_bytes()
        .expect("a model that parsed must serialise again");
    let second =
        ModelFile::from_bytes(&bytes, Path::new(REWRITTEN)).expect("a re-serialised model parses");
    assert_same(&first, &second, "model");
    let again = second.to_bytes().expect("second serialisation");
    assert!(again == bytes, "model: serialisation is not a fixed point");
}

/// Class table (base or delta); also folds the table into a base copy of itself.
pub fn class_table(data: &[u8]) {
    let Ok(first) = ClassTable::from_bytes(data, Path::new(INPUT)) else {
        return;
    };
    let bytes = first
        .to_bytes()
        .expect("a class table that parsed must serialise again");
    let second = ClassTable::from_bytes(&bytes, Path::new(REWRITTEN))
        .expect("a re-serialised class table parses");
    assert_same(&first, &second, "class table");
    let again = second.to_bytes().expect("second serialisation");
    assert!(
        again == bytes,
        "class table: serialisation is not a fixed point"
    );

    // Folding must never panic (sums may overflow to infinity, counts may overflow: errors).
    let mut base = first.clone();
    base.delta_of = None;
    let mut delta = first;
    delta.delta_of = Some(base.file_id);
    let before = base.clone();
    if base.fold(&delta, Path::new(INPUT)).is_err() {
        assert_eq!(base, before, "a failed fold must leave the table unchanged");
    }
}

/// Deletion bitmap; also queries every row.
pub fn deletion_bitmap(data: &[u8]) {
    let Ok(first) = DeletionBitmap::from_bytes(data, Path::new(INPUT)) else {
        return;
    };
    let deleted = (0..first.rows.min(1 << 16))
        .filter(|&r| first.is_deleted(r))
        .count() as u64;
    if first.rows <= 1 << 16 {
        assert_eq!(
            deleted,
            first.deleted_count(),
            "is_deleted vs deleted_count"
        );
    }
    assert!(
        !first.is_deleted(first.rows),
        "a row past the end is deleted"
    );
    let bytes = first
        .to_bytes()
        .expect("a bitmap that parsed must serialise again");
    let second = DeletionBitmap::from_bytes(&bytes, Path::new(REWRITTEN))
        .expect("a re-serialised bitmap parses");
    assert_same(&first, &second, "deletion bitmap");
    let again = second.to_bytes().expect("second serialisation");
    assert!(
        again == bytes,
        "deletion bitmap: serialisation is not a fixed point"
    );
}

/// Manifest; also computes the row totals a caller would show.
pub fn manifest(data: &[u8]) {
    let Ok(first) = Manifest::from_bytes(data, Path::new(INPUT)) else {
        return;
    };
    let live = first.live_rows();
    let deleted = first.deleted_rows();
    assert!(live.checked_add(deleted).is_some(), "row totals overflow");
    let bytes = first
        .to_bytes()
        .expect("a manifest that parsed must serialise again");
    let second = Manifest::from_bytes(&bytes, Path::new(REWRITTEN))
        .expect("a re-serialised manifest parses");
    assert_same(&first, &second, "manifest");
    let again = second.to_bytes().expect("second serialisation");
    assert!(
        again == bytes,
        "manifest: serialisation is not a fixed point"
    );
}
