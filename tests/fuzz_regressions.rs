//! Inputs found by the fuzz targets in `fuzz/` (and the bugs they stand for), replayed by
//! `cargo test`. Each regression keeps the fuzzer's input (a file under `tests/fuzz_regressions/`
//! or the bytes inline) and runs it through exactly the checks the target ran — this file
//! includes the fuzz crate's `checksums.rs` and `roundtrip.rs` with `#[path]` — plus a small
//! hand-built input that shows the cause. How to add one: `fuzz/README.md`.
//!
//! A test marked `#[ignore = "bug: ..."]` documents a bug that is not fixed yet: it fails today
//! and must pass once the fix lands (then drop the `ignore`).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

#[path = "../fuzz/src/checksums.rs"]
mod checksums;
#[path = "../fuzz/src/roundtrip.rs"]
mod roundtrip;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use codedb::format::section_kind::{CLS_RECORDS, MAN_SEGMENTS, MAN_STRINGS, META, SEG_VECTORS};
use codedb::format::{
    ClassTable, Container, FileKind, FormatError, Manifest, SegmentData, SegmentReader,
};
use codedb::format::{SECTION_ENTRY_LEN, TRAILER_LEN};
use common::golden;

// ---------------------------------------------------------------------------------------------
// Helpers

/// Replays `data` through a fuzz target's check exactly as the target does (as is, then with
/// checksums fixed); a panic fails the test with the target's name.
fn replay(target: &str, check: fn(&[u8]), data: &[u8]) {
    let fixed = checksums::with_fixed_checksums(data);
    for (what, bytes) in [("as is", data), ("checksums fixed", &fixed[..])] {
        if catch_unwind(AssertUnwindSafe(|| check(bytes))).is_err() {
            panic!("fuzz target {target} panics on this input ({what})");
        }
    }
}

fn golden_bytes(name: &str) -> Vec<u8> {
    std::fs::read(golden::dir().join(name)).unwrap()
}

/// Byte offset of the only section of `kind` and of its section-table entry.
fn section_and_entry(bytes: &[u8], file: FileKind, kind: u32) -> (usize, usize) {
    let c = Container::from_slice(bytes, Path::new("golden"), Some(file)).unwrap();
    let i = c.find_one(kind).unwrap().unwrap();
    let table = bytes.len() - TRAILER_LEN - c.entries().len() * SECTION_ENTRY_LEN;
    (
        c.entries()[i].offset as usize,
        table + i * SECTION_ENTRY_LEN,
    )
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

// ---------------------------------------------------------------------------------------------
// The harness itself (these must always pass, or the regressions below prove nothing)

#[test]
fn golden_files_pass_every_fuzz_target_check() {
    type Check = fn(&[u8]);
    let targets: [(&str, Check); 5] = [
        ("segment", roundtrip::segment),
        ("model", roundtrip::model),
        ("class_table", roundtrip::class_table),
        ("deletion_bitmap", roundtrip::deletion_bitmap),
        ("manifest", roundtrip::manifest),
    ];
    let mut files = 0;
    for e in std::fs::read_dir(golden::dir()).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        for (name, check) in targets {
            replay(name, check, &bytes);
        }
        files += 1;
    }
    assert_eq!(files, 7);
}

#[test]
fn checksum_fixup_leaves_intact_files_unchanged() {
    for e in std::fs::read_dir(golden::dir()).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        assert!(checksums::with_fixed_checksums(&bytes) == bytes);
    }
}

#[test]
fn checksum_fixup_makes_an_edited_file_pass_every_checksum() {
    let mut b = golden_bytes(&golden::name("seg", golden::SEG_A_ID, "seg"));
    let (meta, _) = section_and_entry(&b, FileKind::Segment, META);
    b[meta + 63] = 0xff; // a reserved byte of the segment meta
    b[10] = 7; // header: minor version 7
    let e = SegmentReader::from_bytes(&b, Path::new("x")).unwrap_err();
    assert!(matches!(e, FormatError::ChecksumMismatch { .. }), "{e}");
    checksums::fix_checksums(&mut b);
    let c = Container::from_slice(&b, Path::new("x"), None).unwrap();
    c.verify_all(|_| {}).unwrap();
    assert_eq!(c.version(), (1, 7));
    // Past every checksum, the reader's own validation now speaks.
    let e = SegmentReader::from_bytes(&b, Path::new("x")).unwrap_err();
    assert!(
        matches!(&e, FormatError::Corrupt { section, .. } if section == "meta"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions

/// Found by `manifest` within seconds (2026-11-23): two segment entries whose row counts add up
/// past `u64::MAX` (here `u64::MAX` and 3) parse fine, and `Manifest::live_rows()` then
/// overflows: a panic in debug builds, a wrapped (wrong) total in release builds.
#[test]
fn manifest_whose_row_counts_overflow_u64_is_refused() {
    // The fuzzer's input (it changed the rows of both segment entries).
    let artifact = include_bytes!("fuzz_regressions/manifest/row-total-overflow.bin");
    replay("manifest", roundtrip::manifest, artifact);

    // The cause, by hand: segment 0 of the golden manifest claims u64::MAX rows.
    let mut b = golden_bytes("v00000000000000000001.manifest");
    let (segs, _) = section_and_entry(&b, FileKind::Manifest, MAN_SEGMENTS);
    put_u64(&mut b, segs + 16, u64::MAX);
    checksums::fix_checksums(&mut b);
    match catch_unwind(|| Manifest::from_bytes(&b, Path::new("m")).map(|m| m.live_rows())) {
        Ok(Err(FormatError::Corrupt { .. })) => {}
        Ok(other) => panic!("expected a Corrupt error, got {other:?}"),
        Err(_) => panic!("live_rows() panicked on a manifest that parsed"),
    }
}

/// Found by reading `Container::decoded` while writing the `segment` target (the target's
/// allocation limit is there to catch it): a segment's stored-vector section is zstd-compressed,
/// and the decoder reserves the section's declared raw length up front
/// (`zstd::bulk::decompress(stored, raw_len)` allocates `raw_len`). The raw length only has to
/// match `rows x dim x 2` from the metadata, and `dim` is a free `u32`, so a 656-byte file can
/// make the reader reserve 384 MiB (here) or, with `dim = u32::MAX`, ~24 GiB, which aborts the
/// process where the allocation fails.
#[test]
fn segment_with_a_huge_declared_vector_length_does_not_reserve_it() {
    let mut b = golden_bytes(&golden::name("seg", golden::SEG_B_ID, "seg"));
    let (meta, _) = section_and_entry(&b, FileKind::Segment, META);
    let (_, entry) = section_and_entry(&b, FileKind::Segment, SEG_VECTORS);
    let dim: u32 = 1 << 26;
    put_u32(&mut b, meta + 16, dim); // meta: vector dimension (f16, 3 rows)
    put_u64(&mut b, entry + 24, 3 * dim as u64 * 2); // table: raw length of the vectors
    checksums::fix_checksums(&mut b);
    // The claim is refused from the section table alone (raw length above 4096 x stored),
    // before any buffer is reserved.
    let result =
        SegmentReader::from_bytes(&b, Path::new("s")).and_then(|r| SegmentData::from_reader(&r));
    match result {
        Err(FormatError::Corrupt { section, .. }) => assert_eq!(section, "vectors"),
        other => panic!("expected Corrupt vectors, got {other:?}"),
    }
    replay("segment", roundtrip::segment, &b);
}

/// Found by reading `ClassTable::from_container`: class names are (offset, length) slices of the
/// `names` section and the reader only checks that the lengths add up to the section length.
/// Overlapping slices pass, leaving other bytes unreferenced, so a file can carry names its
/// writer never wrote: here "lothing" and "shirts" for "clothing" and "shirt". The writer always
/// lays names out back to back, so the reader can require exactly that.
#[test]
fn class_table_with_overlapping_names_is_refused() {
    let mut b = golden_bytes(&golden::name("classes", golden::CLS_ID, "cls"));
    let (recs, _) = section_and_entry(&b, FileKind::ClassTable, CLS_RECORDS);
    // Record layout: id, parent, count, name_off @16, name_len @20 (40 bytes per class).
    put_u32(&mut b, recs + 16, 1); // "clothing" at 0..8  -> "lothing" at 1..8
    put_u32(&mut b, recs + 20, 7);
    put_u32(&mut b, recs + 40 + 20, 6); // "shirt" at 8..13 -> "shirts" at 8..14
    checksums::fix_checksums(&mut b);
    replay("class_table", roundtrip::class_table, &b);
    match ClassTable::from_bytes(&b, Path::new("c")) {
        Err(FormatError::Corrupt { section, .. }) => assert_eq!(section, "names"),
        Ok(t) => panic!(
            "read as {:?}",
            t.classes.iter().map(|c| &c.name).collect::<Vec<_>>()
        ),
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Same as above for the manifest's `strings` section: the model name becomes "odel-….model"
/// and the first segment's name "seg-….segd", byte 0 is owned by nobody.
#[test]
fn manifest_with_overlapping_strings_is_refused() {
    let mut b = golden_bytes("v00000000000000000001.manifest");
    let (meta, _) = section_and_entry(&b, FileKind::Manifest, META);
    let (segs, _) = section_and_entry(&b, FileKind::Manifest, MAN_SEGMENTS);
    let (strings, _) = section_and_entry(&b, FileKind::Manifest, MAN_STRINGS);
    assert_eq!(&b[strings..strings + 6], b"model-");
    // meta: model name offset @40, length @44; segment record: name offset @32, length @36.
    put_u32(&mut b, meta + 40, 1);
    put_u32(&mut b, meta + 44, 43);
    put_u32(&mut b, segs + 36, 41);
    checksums::fix_checksums(&mut b);
    replay("manifest", roundtrip::manifest, &b);
    match Manifest::from_bytes(&b, Path::new("m")) {
        Err(FormatError::Corrupt { section, .. }) => assert_eq!(section, "strings"),
        Ok(m) => panic!(
            "read with model {:?} and segment {:?}",
            m.model.name, m.segments[0].segment.name
        ),
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Found while writing the round-trip check (the property "the writer accepts what the reader
/// accepts" has a converse): `ModelFile::write_to` writes a model with `input_dim == 0`, which
/// `ModelFile::from_container` then refuses ("input dimension is 0"), so codedb can produce a
/// model file it cannot read. The writer's `validate` should refuse it as `InvalidArgument`.
#[test]
fn model_writer_refuses_what_the_reader_refuses() {
    let mut m = golden::model();
    m.input_dim = 0;
    match m.to_bytes() {
        Err(FormatError::InvalidArgument { .. }) => {}
        Ok(bytes) => panic!(
            "wrote a model the reader refuses: {:?}",
            codedb::format::ModelFile::from_bytes(&bytes, Path::new("m")).map(|_| ())
        ),
        Err(e) => panic!("unexpected error {e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The append-log and block-check targets (format 1.4)

/// Every golden file of every version, by folder.
fn all_golden_files() -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden");
    let mut out = Vec::new();
    for v in [
        "v1.0", "v1.1", "v1.2", "v1.3", "v1.4", "v1.5", "v1.6", "v1.7",
    ] {
        let mut names: Vec<_> = std::fs::read_dir(root.join(v))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let b = std::fs::read(&p).unwrap();
            out.push((p, b));
        }
    }
    out
}

/// [`replay`] for the append-log target, which fixes the log's own checksums.
fn replay_log(data: &[u8]) {
    let fixed = checksums::with_fixed_log_checksums(data);
    for (what, bytes) in [("as is", data), ("checksums fixed", &fixed[..])] {
        if catch_unwind(AssertUnwindSafe(|| roundtrip::append_log(bytes))).is_err() {
            panic!("fuzz target append_log panics on this input ({what})");
        }
    }
}

#[test]
fn golden_files_pass_the_append_log_and_block_check_targets() {
    let files = all_golden_files();
    assert!(files.len() >= 16, "{}", files.len());
    for (_, bytes) in &files {
        replay_log(bytes);
        replay("block_checks", roundtrip::block_checks, bytes);
    }
}

#[test]
fn damaged_logs_keep_the_append_log_properties() {
    let (_, log) = all_golden_files()
        .into_iter()
        .find(|(p, _)| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    assert!(
        checksums::with_fixed_log_checksums(&log) == log,
        "fix-up leaves a good log alone"
    );
    let whole = codedb::format::append_log::read_log(&log, Path::new("g"), None).unwrap();
    assert_eq!(whole.batches.len(), 2);
    // Cut anywhere, flip any byte (as is, and with the record checksums fixed).
    for cut in (0..log.len()).step_by(7).chain([log.len() - 1]) {
        replay_log(&log[..cut]);
    }
    for at in (0..log.len()).step_by(5) {
        let mut b = log.clone();
        b[at] ^= 0x41;
        replay_log(&b);
    }
    // A flipped payload byte of the first record with its checksums fixed: the record reads,
    // with the changed value, and re-encodes to the changed bytes.
    let mut b = log.clone();
    b[128 + 32] ^= 1;
    let fixed = checksums::with_fixed_log_checksums(&b);
    let read = codedb::format::append_log::read_log(&fixed, Path::new("g"), None).unwrap();
    assert_eq!(read.batches[0].ids[0], whole.batches[0].ids[0] ^ 1);
    roundtrip::append_log(&fixed);
}

#[test]
fn block_checks_report_every_damaged_block_of_the_v1_3_golden_segments() {
    use codedb::format::section_kind::{SEG_CODES, SEG_CODES_FASTSCAN, SEG_IDS, SEG_VECTORS};
    let segs: Vec<_> = all_golden_files()
        .into_iter()
        .filter(|(p, _)| p.parent().unwrap().ends_with("v1.4"))
        .collect();
    assert_eq!(segs.len(), 2);
    for (_, good) in segs {
        let c = Container::from_slice(&good, Path::new("g"), Some(FileKind::Segment)).unwrap();
        for e in c.entries() {
            if ![SEG_IDS, SEG_CODES, SEG_CODES_FASTSCAN, SEG_VECTORS].contains(&e.kind) {
                continue;
            }
            for at in (0..e.stored_len as usize).step_by(1500) {
                let mut b = good.clone();
                b[e.offset as usize + at] ^= 0x10;
                // As is: the section CRC fails too; with checksums fixed only the block CRC
                // sees it. Either way the oracle in the target must agree with the reader.
                replay("block_checks", roundtrip::block_checks, &b);
                let fixed = checksums::with_fixed_checksums(&b);
                assert!(
                    SegmentReader::from_bytes(&fixed, Path::new("g")).is_err(),
                    "a fully checked open refuses a stale block checksum"
                );
            }
        }
    }
}

/// The stored tag postings and zone maps (format 1.8, FORMAT.md §3.8) through the segment
/// target's checks (they read, and read back as the indexes the columns give): the 1.8 seed
/// kept in `fuzz/corpus/segment/` (12 rows of an int, a float and a tags column, written by
/// `codedb build`) and the v1.8 golden segment, which is over the corpus's 4 KiB.
#[test]
fn stored_attribute_indexes_pass_the_segment_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in [
        root.join("fuzz/corpus/segment/050bb8561cdc5293a411a636bb1f830ddd9b045a"),
        root.join("format/golden/v1.8/seg-00000000000000000000000000018001.seg"),
    ] {
        let bytes = std::fs::read(&file).unwrap();
        let r = SegmentReader::from_bytes(&bytes, &file).unwrap();
        assert_eq!(
            r.attribute_index().unwrap().unwrap().source().name(),
            "stored",
            "{}",
            file.display()
        );
        replay("segment", roundtrip::segment, &bytes);
    }
}
