//! Every golden file (`format/golden/v1.0`), damaged in every way a disk, a copy or a truncated
//! download can damage it, must be refused by its reader with a typed error that names the right
//! place — never a panic, never an `Ok` with other content. The format makes that possible: a CRC32
//! covers the header, every section, and the section table with the trailer, and the reader checks
//! that sections tile the file with zero padding, so no byte is unchecked.
//!
//! Also: wrong-kind, empty and magic-only files, an unknown major version, and files of a newer
//! minor version with unknown required (refused by name) and optional (skipped) sections, built
//! by re-writing the golden files section by section with `ContainerWriter`.
//!
//! Fast by construction (files are < 1 KB): ~60,000 parses in all.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use codedb::format::FormatVersion;
use codedb::format::{
    ClassTable, Codec, Container, ContainerWriter, DeletionBitmap, FileKind, FormatError, Header,
    Manifest, ModelFile, SegmentData, SegmentReader,
};
use codedb::format::{HEADER_LEN, SECTION_ENTRY_LEN, TRAILER_LEN};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A parsed file of any kind, compared against the golden file's own parse.
#[derive(Debug, PartialEq)]
enum Parsed {
    Segment(Box<SegmentData>),
    Model(ModelFile),
    ClassTable(ClassTable),
    DeletionBitmap(DeletionBitmap),
    Manifest(Manifest),
}

/// Runs the reader of `kind` (the full read a caller does: for a segment, open with every
/// checksum checked and copy every column out, stored vectors decoded).
fn read(kind: FileKind, bytes: &[u8], path: &Path) -> Result<Parsed, FormatError> {
    Ok(match kind {
        FileKind::Segment => {
            let r = SegmentReader::from_bytes(bytes, path)?;
            Parsed::Segment(Box::new(SegmentData::from_reader(&r)?))
        }
        FileKind::Model => Parsed::Model(ModelFile::from_bytes(bytes, path)?),
        FileKind::ClassTable => Parsed::ClassTable(ClassTable::from_bytes(bytes, path)?),
        FileKind::DeletionBitmap => {
            Parsed::DeletionBitmap(DeletionBitmap::from_bytes(bytes, path)?)
        }
        FileKind::Manifest => Parsed::Manifest(Manifest::from_bytes(bytes, path)?),
        // The v1.0 golden set predates the append log and holds none; its torn-tail and
        // corruption handling is tested in tests/crash_consistency.rs and storage_engine.rs.
        FileKind::AppendLog => panic!("no golden append log in format/golden/v1.0"),
    })
}

struct Golden {
    name: String,
    path: PathBuf,
    kind: FileKind,
    bytes: Vec<u8>,
    value: Parsed,
}

impl Golden {
    /// Reads a mutated copy, turning a panic into a test failure that names the case.
    fn read_mutant(&self, bytes: &[u8], case: &str) -> Result<Parsed, FormatError> {
        catch_unwind(AssertUnwindSafe(|| read(self.kind, bytes, &self.path)))
            .unwrap_or_else(|_| panic!("{}: reader panicked on {case}", self.name))
    }

    /// A mutant must be refused; `Ok` is only acceptable for unchanged bytes with the same value.
    fn expect_err(&self, bytes: &[u8], case: &str) -> FormatError {
        match self.read_mutant(bytes, case) {
            Err(e) => {
                assert_eq!(
                    e.path(),
                    self.path,
                    "{}: {case}: error names the file",
                    self.name
                );
                e
            }
            Ok(v) if v == self.value => panic!("{}: {case} was not detected", self.name),
            Ok(v) => panic!("{}: {case} read as different content: {v:?}", self.name),
        }
    }

    fn container(&self) -> Container {
        Container::from_slice(&self.bytes, &self.path, Some(self.kind)).unwrap()
    }
}

fn kind_of(name: &str) -> FileKind {
    match Path::new(name).extension().and_then(|e| e.to_str()) {
        Some("seg") => FileKind::Segment,
        Some("model") => FileKind::Model,
        Some("cls") => FileKind::ClassTable,
        Some("del") => FileKind::DeletionBitmap,
        Some("manifest") => FileKind::Manifest,
        other => panic!("golden file {name} has an unknown extension {other:?}"),
    }
}

/// The checked-in golden files, each with its intact parse.
/// The kinds the v1.0 golden set holds (the append log, kind 6, has no golden file yet).
const GOLDEN_KINDS: [FileKind; 5] = [
    FileKind::Segment,
    FileKind::Model,
    FileKind::ClassTable,
    FileKind::DeletionBitmap,
    FileKind::Manifest,
];

fn goldens() -> Vec<Golden> {
    let dir = common::golden::dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let out: Vec<Golden> = names
        .into_iter()
        .map(|name| {
            let path = dir.join(&name);
            let bytes = std::fs::read(&path).unwrap();
            let kind = kind_of(&name);
            let value = read(kind, &bytes, &path)
                .unwrap_or_else(|e| panic!("intact golden file {name} must read: {e}"));
            Golden {
                name,
                path,
                kind,
                bytes,
                value,
            }
        })
        .collect();
    // The tests below must not pass vacuously on a missing or partial golden set.
    assert_eq!(out.len(), 7, "golden file count");
    for k in GOLDEN_KINDS {
        assert!(out.iter().any(|g| g.kind == k), "no golden {}", k.name());
    }
    out
}

fn flip(bytes: &[u8], pos: usize, bit: u32) -> Vec<u8> {
    let mut m = bytes.to_vec();
    m[pos] ^= 1 << bit;
    m
}

fn is_checksum(e: &FormatError, section: &str) -> bool {
    matches!(e, FormatError::ChecksumMismatch { section: s, .. } if s == section)
}

// ---------------------------------------------------------------------------------------------
// Truncation and bit flips

#[test]
fn truncation_at_every_length_is_refused() {
    for g in goldens() {
        for len in 0..g.bytes.len() {
            let e = g.expect_err(&g.bytes[..len], &format!("truncation to {len} bytes"));
            let want = if len < 8 {
                matches!(e, FormatError::BadMagic { .. })
            } else if len < HEADER_LEN {
                matches!(&e, FormatError::Truncated { section, .. } if section == "header")
            } else {
                // The end marker is no longer where the trailer must be.
                matches!(&e, FormatError::Truncated { section, .. } if section == "trailer")
            };
            assert!(
                want,
                "{}: truncation to {len}: unexpected error {e}",
                g.name
            );
        }
    }
}

#[test]
fn every_bit_flip_in_the_header_is_refused_naming_the_header() {
    for g in goldens() {
        for pos in 0..HEADER_LEN {
            for bit in 0..8 {
                let e = g.expect_err(
                    &flip(&g.bytes, pos, bit),
                    &format!("header flip {pos}.{bit}"),
                );
                let ok = match pos {
                    0..8 => matches!(e, FormatError::BadMagic { .. }),
                    // The major version is checked before the checksum on purpose.
                    8..10 => matches!(e, FormatError::UnsupportedVersion { .. }),
                    56 => matches!(&e, FormatError::Corrupt { section, .. } if section == "header"),
                    _ => is_checksum(&e, "header"),
                };
                assert!(ok, "{}: header byte {pos} bit {bit}: {e}", g.name);
                assert_eq!(e.section(), Some("header"), "{}: byte {pos}", g.name);
            }
        }
    }
}

#[test]
fn every_bit_flip_in_the_trailer_is_refused_naming_trailer_or_table() {
    for g in goldens() {
        let start = g.bytes.len() - TRAILER_LEN;
        for at in 0..TRAILER_LEN {
            for bit in 0..8 {
                let case = format!("trailer flip {at}.{bit}");
                let e = g.expect_err(&flip(&g.bytes, start + at, bit), &case);
                let ok = match at {
                    // table offset, count, checksum type, reserved bytes
                    0..16 | 24..28 => {
                        matches!(&e, FormatError::Corrupt { section, .. } if section == "trailer")
                    }
                    16..24 => {
                        matches!(&e, FormatError::Truncated { section, .. } if section == "trailer")
                    }
                    _ => is_checksum(&e, "section table"),
                };
                assert!(ok, "{}: trailer byte {at} bit {bit}: {e}", g.name);
            }
        }
    }
}

#[test]
fn every_bit_flip_in_the_section_table_is_a_table_checksum_mismatch() {
    for g in goldens() {
        let n = g.container().entries().len();
        let end = g.bytes.len() - TRAILER_LEN;
        let start = end - n * SECTION_ENTRY_LEN;
        for pos in start..end {
            for bit in 0..8 {
                let e = g.expect_err(
                    &flip(&g.bytes, pos, bit),
                    &format!("table flip {pos}.{bit}"),
                );
                assert!(
                    is_checksum(&e, "section table"),
                    "{}: table byte {pos} bit {bit}: {e}",
                    g.name
                );
            }
        }
    }
}

#[test]
fn every_bit_flip_inside_a_section_is_a_checksum_mismatch_naming_that_section() {
    let mut seen = std::collections::BTreeSet::new();
    for g in goldens() {
        let c = g.container();
        for (i, e) in c.entries().iter().enumerate() {
            let label = c.label(i);
            seen.insert(format!("{}:{label}", g.kind.name()));
            for pos in e.offset as usize..(e.offset + e.stored_len) as usize {
                for bit in 0..8 {
                    let case = format!("flip {pos}.{bit} in {label}");
                    let err = g.expect_err(&flip(&g.bytes, pos, bit), &case);
                    assert!(is_checksum(&err, &label), "{}: {case}: {err}", g.name);
                }
            }
        }
    }
    // Every section kind of every file kind was covered, e.g. a flip in a segment's code column
    // is reported as `ChecksumMismatch { section: "codes" }`.
    for want in [
        "segment:meta",
        "segment:ids",
        "segment:codes",
        "segment:labels",
        "segment:lists",
        "segment:vectors",
        "model:meta",
        "model:stage",
        "class table:classes",
        "class table:names",
        "class table:sums",
        "class table:centroids",
        "class table:centroid_weights",
        "deletion bitmap:bits",
        "manifest:strings",
        "manifest:segments",
        "manifest:class_files",
    ] {
        assert!(seen.contains(want), "no golden section {want}");
    }
}

#[test]
fn every_bit_flip_in_alignment_padding_is_refused_as_padding() {
    let mut flipped = 0;
    for g in goldens() {
        let c = g.container();
        let table_at = g.bytes.len() - TRAILER_LEN - c.entries().len() * SECTION_ENTRY_LEN;
        // (end of the previous section, start of the next region, name of that region)
        let mut gaps = Vec::new();
        let mut prev_end = HEADER_LEN;
        for (i, e) in c.entries().iter().enumerate() {
            gaps.push((prev_end, e.offset as usize, c.label(i)));
            prev_end = (e.offset + e.stored_len) as usize;
        }
        gaps.push((prev_end, table_at, "section table".to_string()));
        for (from, to, before) in gaps {
            for pos in from..to {
                for bit in 0..8 {
                    flipped += 1;
                    let case = format!("padding flip {pos}.{bit} before {before}");
                    let e = g.expect_err(&flip(&g.bytes, pos, bit), &case);
                    let want = format!("padding before {before}");
                    assert!(
                        matches!(&e, FormatError::Corrupt { section, .. } if *section == want),
                        "{}: {case}: {e}",
                        g.name
                    );
                }
            }
        }
    }
    assert!(
        flipped > 1000,
        "golden files have padding to test ({flipped} flips)"
    );
}

#[test]
fn every_single_bit_flip_anywhere_is_refused() {
    // The region tests above each assert the exact error; this one is the blanket guarantee.
    for g in goldens() {
        for pos in 0..g.bytes.len() {
            for bit in 0..8 {
                let e = g.expect_err(&flip(&g.bytes, pos, bit), &format!("flip {pos}.{bit}"));
                assert!(e.section().is_some(), "{}: flip {pos}.{bit}: {e}", g.name);
            }
        }
    }
}

#[test]
fn random_overwrites_with_a_fixed_seed_are_refused() {
    const CASES: usize = 2000;
    for (fi, g) in goldens().into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(0xC0DE_DB00 + fi as u64);
        let mut unchanged = 0;
        for case in 0..CASES {
            let mut m = g.bytes.clone();
            let len = match rng.random_range(0..4) {
                0 => 1,
                1 => rng.random_range(2..=8),
                2 => rng.random_range(9..=64),
                _ => rng.random_range(65..=256),
            }
            .min(m.len());
            let at = rng.random_range(0..=m.len() - len);
            match rng.random_range(0..3) {
                0 => rng.fill(&mut m[at..at + len]),
                1 => m[at..at + len].fill(0),
                _ => m[at..at + len].fill(rng.random()),
            }
            let what = format!("overwrite #{case} of {len} bytes at {at}");
            if m == g.bytes {
                // e.g. zeros written over padding: the file is intact and must read as before.
                unchanged += 1;
                let v = g.read_mutant(&m, &what);
                assert!(v.is_ok_and(|v| v == g.value), "{}: {what}", g.name);
                continue;
            }
            g.expect_err(&m, &what);
        }
        assert!(unchanged < CASES / 4, "{}: too few real mutations", g.name);
    }
}

// ---------------------------------------------------------------------------------------------
// Wrong kind, empty, magic only, versions

#[test]
fn a_file_of_another_kind_is_refused_as_wrong_kind() {
    let all = goldens();
    for g in &all {
        for want in GOLDEN_KINDS.into_iter().filter(|&k| k != g.kind) {
            match read(want, &g.bytes, &g.path) {
                Err(FormatError::WrongKind {
                    expected, found, ..
                }) => {
                    assert_eq!(expected, want.name(), "{}", g.name);
                    assert_eq!(found, g.kind.name(), "{}", g.name);
                }
                other => panic!("{} read as {}: {other:?}", g.name, want.name()),
            }
        }
    }
}

#[test]
fn an_empty_file_is_not_a_codedb_file() {
    for k in GOLDEN_KINDS {
        let e = read(k, &[], Path::new("empty")).unwrap_err();
        assert!(
            matches!(e, FormatError::BadMagic { .. }),
            "{}: {e}",
            k.name()
        );
        assert_eq!(e.path(), Path::new("empty"));
    }
}

#[test]
fn a_file_of_only_the_magic_is_a_truncated_header() {
    let magic = codedb::format::MAGIC;
    for k in GOLDEN_KINDS {
        let e = read(k, &magic, Path::new("magic-only")).unwrap_err();
        assert!(
            matches!(&e, FormatError::Truncated { section, .. } if section == "header"),
            "{}: {e}",
            k.name()
        );
    }
}

/// Rewrites a golden file section by section (same kinds, flags, contents, codecs), with
/// `extra` sections (kind, required, bytes) placed *before* the known ones so that every known
/// section moves, `meta_tail` appended to the `meta` section, and the header version set to
/// `(major, minor)`.
fn rewrite(
    g: &Golden,
    (major, minor): (u16, u16),
    extra: &[(u32, bool, &[u8])],
    meta_tail: &[u8],
) -> Vec<u8> {
    let c = g.container();
    let file_id = c.header().file_id;
    let mut w = ContainerWriter::new(Vec::new(), g.kind, file_id, &g.path).unwrap();
    for &(kind, required, bytes) in extra {
        w.section(kind, required, bytes).unwrap();
    }
    for (i, e) in c.entries().iter().enumerate() {
        let mut data = c.decoded(i).unwrap().into_owned();
        if e.kind == codedb::format::section_kind::META {
            data.extend_from_slice(meta_tail);
        }
        match e.codec {
            // The golden writer used level 3; the same level gives the same frame.
            Codec::Zstd => w.section_zstd(e.kind, e.required(), &data, 3).unwrap(),
            Codec::None => w.section(e.kind, e.required(), &data).unwrap(),
        }
    }
    let mut out = w.finish().unwrap();
    let header = Header {
        major,
        minor,
        kind: g.kind,
        file_id,
    };
    out[..HEADER_LEN].copy_from_slice(&header.encode());
    out
}

/// A minor version newer than this build's.
const NEWER_MINOR: (u16, u16) = (1, FormatVersion::MINOR + 1);

#[test]
fn rewriting_a_golden_file_unchanged_gives_identical_bytes() {
    // Guards the helper the version tests rely on: without extras it is the identity.
    for g in goldens() {
        assert!(rewrite(&g, (1, 0), &[], &[]) == g.bytes, "{}", g.name);
    }
}

#[test]
fn an_unknown_major_version_is_refused_as_unsupported() {
    for g in goldens() {
        let m = rewrite(&g, (2, 0), &[], &[]);
        match read(g.kind, &m, &g.path) {
            Err(FormatError::UnsupportedVersion {
                found, supported, ..
            }) => {
                assert_eq!(found, (2, 0), "{}", g.name);
                assert_eq!(supported, (1, FormatVersion::MINOR), "{}", g.name);
            }
            other => panic!("{}: {other:?}", g.name),
        }
    }
}

#[test]
fn a_newer_minor_with_an_unknown_required_section_is_refused_naming_it() {
    for g in goldens() {
        let m = rewrite(&g, NEWER_MINOR, &[(200, true, b"from the future")], &[]);
        match read(g.kind, &m, &g.path) {
            Err(FormatError::UnknownRequiredSection { section, .. }) => {
                assert_eq!(section, "section kind 200", "{}", g.name);
            }
            other => panic!("{}: {other:?}", g.name),
        }
    }
}

#[test]
fn a_newer_minor_with_an_unknown_optional_section_reads_as_before() {
    for g in goldens() {
        let m = rewrite(
            &g,
            NEWER_MINOR,
            &[(201, false, b"optional extra data")],
            &[],
        );
        let v = read(g.kind, &m, &g.path).unwrap_or_else(|e| panic!("{}: {e}", g.name));
        assert_eq!(v, g.value, "{}", g.name);
        let c = Container::from_slice(&m, &g.path, Some(g.kind)).unwrap();
        assert!(
            c.is_newer_minor() && c.version() == NEWER_MINOR,
            "{}",
            g.name
        );
    }
}

#[test]
fn a_longer_meta_section_is_read_from_a_newer_minor_only() {
    // A newer minor may append fields to `meta`; this build ignores them. In a file claiming
    // this build's own version they are trailing garbage.
    for g in goldens() {
        let newer = rewrite(&g, NEWER_MINOR, &[], &[0; 8]);
        let v = read(g.kind, &newer, &g.path).unwrap_or_else(|e| panic!("{}: {e}", g.name));
        assert_eq!(v, g.value, "{}", g.name);

        let same = rewrite(&g, (1, 0), &[], &[0; 8]);
        match read(g.kind, &same, &g.path) {
            Err(FormatError::Corrupt { section, .. }) => assert_eq!(section, "meta", "{}", g.name),
            other => panic!("{}: {other:?}", g.name),
        }
    }
}

#[test]
fn an_unknown_stage_is_refused_when_required_and_skipped_when_optional() {
    let mut model = common::golden::model();
    let extra = codedb::format::StageRecord {
        kind: 999,
        required: true,
        tensors: vec![codedb::format::Tensor::scalar_u64("x", 1)],
    };
    model.stages.insert(1, extra);
    let bytes = model.to_bytes().unwrap();
    match ModelFile::from_bytes(&bytes, Path::new("m")) {
        Err(FormatError::UnknownStage { stage, .. }) => assert_eq!(stage, "stage 1 (kind 999)"),
        other => panic!("{other:?}"),
    }
    model.stages[1].required = false;
    let read = ModelFile::from_bytes(&model.to_bytes().unwrap(), Path::new("m")).unwrap();
    assert_eq!(read.skipped_stages, vec![999]);
    assert_eq!(read.stages, common::golden::model().stages);
}
