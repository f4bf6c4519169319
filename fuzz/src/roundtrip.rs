//! The property every fuzz target checks, one function per parser: arbitrary bytes either give
//! an `Err`, or a value that re-serialises (`to_bytes`), re-parses to the same value, and
//! re-serialises to the same bytes. Any panic — in the parser, in the writer, in an accessor
//! called on the parsed value, or from a failed assertion here — is a finding.
//!
//! `tests/fuzz_regressions.rs` includes this file with `#[path]`, so a crash artifact is replayed
//! by `cargo test` through exactly the checks the fuzz target ran.

use std::path::Path;

use codedb::format::{
    ChecksumPolicy, ClassTable, Codec, Container, DeletionBitmap, FileKind, FormatError, Manifest,
    ModelFile, RowColumn, SegmentData, SegmentReader, VectorsView, append_log, block_checksums,
    fastscan_layout, section_kind,
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
    // Attribute columns (format 1.7): what decodes re-encodes to a fixed point.
    if let Ok(Some(a)) = r.attributes() {
        assert_eq!(a.rows(), r.rows(), "attribute rows");
        let bytes =
            codedb::format::attribute_columns::encode(a).expect("attributes that decoded encode");
        let back = codedb::format::attribute_columns::decode(
            &bytes,
            a.rows() as u64,
            Path::new(REWRITTEN),
            "attributes",
        )
        .expect("re-encoded attributes must decode");
        let again = codedb::format::attribute_columns::encode(&back).expect("second encoding");
        assert!(again == bytes, "attributes: encoding is not a fixed point");
        // Stored tag postings and zone maps (format 1.8): what reads is the columns' index
        // shape, and the sections this build writes for the columns read back as the index
        // built from them.
        if let Ok(Some(ix)) = r.attribute_index() {
            for i in 0..a.schema().len() {
                let c = ix.column(i).expect("an index per column");
                if let (Some((_, n)), Some(codedb::format::ColumnData::Tags { values, .. })) =
                    (c.describe(), a.column(i))
                {
                    assert_eq!(n, values.len(), "postings hold every tag of every row");
                }
            }
            let _ = r.check_attribute_index();
        }
        let (p, z) = codedb::format::attribute_index::AttributeIndex::encode(a);
        let back = codedb::format::attribute_index::AttributeIndex::decode(
            Some(&p),
            Some(&z),
            a,
            Path::new(REWRITTEN),
        )
        .expect("the indexes this build writes must read");
        let built = codedb::format::attribute_index::AttributeIndex::build(a);
        assert_eq!(
            back.first_difference(&built),
            None,
            "stored indexes read back as built"
        );
    }
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

/// Append log, read on its own (as `verify` and `inspect` read a log file) and with committed
/// lengths (as the engine reads the log a manifest names): records re-encode to the exact bytes
/// they were read from; a committed length at a record boundary gives exactly the records
/// before it and counts the rest as an uncommitted tail; one past the valid records, inside a
/// record, or past the end of the file is an error; `records_after` (verify's search for valid
/// records after damage) stays inside the file.
pub fn append_log(data: &[u8]) {
    let p = Path::new(INPUT);
    let len = data.len() as u64;
    let Ok(whole) = append_log::read_log(data, p, None) else {
        assert!(append_log::read_log(data, p, Some(len)).is_err());
        return;
    };
    let end = whole.end;
    assert!(
        (append_log::LOG_DATA_START..=len).contains(&end),
        "end {end}"
    );
    let rows: u64 = whole.batches.iter().map(|b| b.rows() as u64).sum();
    assert_eq!(whole.rows, rows, "row count");
    assert_eq!(whole.tail.bytes, len - end, "tail length");
    assert_eq!(
        whole.tail.complete_batches, 0,
        "reading stopped at a valid record"
    );
    assert_eq!(
        whole.tail.torn_bytes, whole.tail.bytes,
        "the whole tail is torn"
    );
    assert_eq!(whole.tail.torn_reason.is_some(), end < len);
    let mut encoded = whole.meta.encode().to_vec();
    let mut bounds = vec![append_log::LOG_DATA_START];
    for b in &whole.batches {
        let rec = b
            .encode(&whole.meta, p)
            .expect("a batch that was read encodes");
        encoded.extend_from_slice(&rec);
        bounds.push(bounds[bounds.len() - 1] + rec.len() as u64);
    }
    assert!(
        encoded[..] == data[64..end as usize],
        "records do not re-encode to their bytes"
    );
    assert_eq!(bounds.last().copied(), Some(end));
    let n = whole.batches.len();
    for (i, &at) in bounds
        .iter()
        .enumerate()
        .filter(|(i, _)| *i < 8 || n - *i < 8)
    {
        let part = append_log::read_log(data, p, Some(at)).expect("a committed boundary reads");
        assert_eq!(part.end, at);
        assert!(
            part.batches[..] == whole.batches[..i],
            "the first {i} records"
        );
        assert_eq!(
            part.tail.complete_batches,
            (n - i) as u64,
            "uncommitted records"
        );
        assert_eq!(part.tail.torn_bytes, len - end, "torn bytes");
    }
    for pair in bounds.windows(2).take(8) {
        let inside = pair[0] + 8;
        if inside < pair[1] {
            assert!(
                append_log::read_log(data, p, Some(inside)).is_err(),
                "inside a record"
            );
        }
    }
    if end < len {
        assert!(
            append_log::read_log(data, p, Some(end + 1)).is_err(),
            "past the records"
        );
        assert!(
            append_log::read_log(data, p, Some(len)).is_err(),
            "torn bytes committed"
        );
    }
    assert!(
        append_log::read_log(data, p, Some(len + 1)).is_err(),
        "past the file"
    );
    // `codedb verify`'s search for whole records after the damaged one.
    let later = append_log::records_after(data, &whole.meta, end);
    assert_eq!(later.first_offset.is_some(), later.records > 0);
    assert!(later.rows >= later.records, "every record holds a row");
    if let Some(at) = later.first_offset {
        assert!(
            at > end && at < len,
            "a later record at {at} (damage at {end})"
        );
        assert_eq!((at - end) % 8, 0, "records start 8-byte aligned");
    }
}

/// The row columns of a segment and their section kinds.
fn row_columns(r: &SegmentReader) -> Vec<(RowColumn, usize)> {
    let c = r.container();
    let kinds = |col| match col {
        RowColumn::Ids => vec![section_kind::SEG_IDS],
        RowColumn::Codes => vec![section_kind::SEG_CODES, section_kind::SEG_CODES_FASTSCAN],
        RowColumn::Labels => vec![section_kind::SEG_LABELS],
        RowColumn::Lists => vec![section_kind::SEG_LISTS],
        RowColumn::Vectors => vec![section_kind::SEG_VECTORS],
    };
    RowColumn::ALL
        .into_iter()
        .filter_map(|col| {
            let i = kinds(col)
                .into_iter()
                .find_map(|k| c.find_one(k).ok().flatten())?;
            Some((col, i))
        })
        .collect()
}

/// Per-block checks of a segment opened without column checksums, against an oracle computed
/// here from the stored block checksums: a row's check passes exactly when every block that
/// holds its bytes matches, a failure names the block's section and a row range holding the
/// row, a column passes exactly when all its blocks match, and a fully checked open never
/// accepts what the block checks refuse. A damaged block must be reported, never accepted.
pub fn block_checks(data: &[u8]) {
    let p = Path::new(INPUT);
    let Ok(c) = Container::from_slice(data, p, Some(FileKind::Segment)) else {
        return;
    };
    let Ok(r) = SegmentReader::from_container(c, ChecksumPolicy::SkipColumns) else {
        return;
    };
    let c = r.container();
    let stored = match c.find_one(section_kind::SEG_BLOCK_CHECKSUMS) {
        Ok(Some(i)) => block_checksums::decode(c.stored(i), p).expect("checked on open"),
        _ => Vec::new(),
    };
    let rows = r.rows();
    let mut all_ok = true;
    for (col, i) in row_columns(&r) {
        let e = c.entries()[i];
        let bytes = c.stored(i);
        // (block bytes, good per block) by the oracle.
        let (bsize, good): (u64, Vec<bool>) = match stored.iter().find(|s| s.kind == e.kind) {
            Some(s) => (
                s.block_bytes,
                bytes
                    .chunks(s.block_bytes as usize)
                    .zip(&s.crcs)
                    .map(|(b, &crc)| crc32fast::hash(b) == crc)
                    .collect(),
            ),
            None if bytes.is_empty() => (1, vec![]),
            None => (bytes.len() as u64, vec![crc32fast::hash(bytes) == e.crc32]),
        };
        let col_ok = good.iter().all(|&g| g);
        all_ok &= col_ok;
        // The bytes of row `row` in the stored column.
        let span = |row: usize| -> (u64, u64) {
            if e.codec != Codec::None {
                return (0, bytes.len() as u64);
            }
            if let (RowColumn::Codes, Some((_, m))) = (col, r.fastscan_codes()) {
                let bb = fastscan_layout::block_bytes(m) as u64;
                let g = (row / fastscan_layout::BLOCK_ROWS) as u64;
                return (g * bb, (g + 1) * bb);
            }
            let w = bytes.len() as u64 / rows as u64;
            (row as u64 * w, (row as u64 + 1) * w)
        };
        let sample: Vec<usize> = if rows == 0 {
            vec![]
        } else {
            (0..rows)
                .step_by((rows / 32).max(1))
                .chain([rows - 1])
                .collect()
        };
        for row in sample {
            let (a, b) = span(row);
            let want = b <= a
                || (a / bsize..b.div_ceil(bsize))
                    .all(|k| good.get(k as usize).copied().unwrap_or(false));
            match r.check_rows(col, row..row + 1) {
                Ok(()) => assert!(want, "{col:?} row {row}: a damaged block was accepted"),
                Err(FormatError::BlockChecksumMismatch {
                    section,
                    first_row,
                    end_row,
                    ..
                }) => {
                    assert!(!want, "{col:?} row {row}: a good block was refused");
                    assert_eq!(section, c.label(i));
                    assert!(
                        (first_row..end_row).contains(&(row as u64)),
                        "{col:?} row {row} outside the reported rows {first_row}..{end_row}"
                    );
                }
                Err(other) => panic!("{col:?} row {row}: unexpected error {other}"),
            }
        }
        assert_eq!(r.check_column(col).is_ok(), col_ok, "{col:?}");
        let (done, total) = r.checked_blocks(col);
        assert_eq!(total, good.len(), "{col:?} block count");
        if col_ok {
            assert_eq!(done, total, "{col:?}: a checked column is remembered");
        } else {
            assert!(
                done < total,
                "{col:?}: a damaged block was remembered as good"
            );
        }
    }
    assert_eq!(r.check_all_blocks().is_ok(), all_ok);
    if SegmentReader::from_bytes(data, p).is_ok() {
        assert!(all_ok, "a fully checked open accepted a damaged block");
    }
}
