//! Golden files written by earlier (and the current) format versions must keep being read with
//! exactly the values they were written with. `CODEDB_BLESS=1 cargo test --test
//! backward_compatibility` writes the current version's set (format/golden/v1.8); older
//! folders are never rewritten.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::path::{Path, PathBuf};

use codedb::EncodedOptions;
use codedb::format::attribute_index::{AttributeIndex, ColumnIndex, IndexSource};
use codedb::format::{
    ClassTable, CodeKind, ContainerWriter, FileKind, FormatError, FormatVersion, ListEntry,
    Manifest, ModelFile, OpenOptions, SegmentData, SegmentReader, VectorSlice, append_log,
    section_kind,
};
use codedb::format::{DeletionBitmap, LoadMode};
use codedb::{CompactionPolicy, Config, Index, RowBatch, Snapshot};
use common::{
    golden, golden_v1_1 as g11, golden_v1_2 as g12, golden_v1_3 as g13, golden_v1_4 as g14,
    golden_v1_5 as g15, golden_v1_6 as g16, golden_v1_6_hom as g16h, golden_v1_6_ivf as g16i,
    golden_v1_6_mih as g16m, golden_v1_7 as g17, golden_v1_8 as g18,
};

/// The v1.0 folder (never rewritten).
fn v1_0_dir() -> PathBuf {
    golden::dir()
}

/// The v1.1 folder (never rewritten).
fn bless_or_read() -> PathBuf {
    g11::dir()
}

/// The v1.2 folder (never rewritten).
fn bless_or_read_v1_2() -> PathBuf {
    g12::dir()
}

/// The v1.3 folder (never rewritten).
fn bless_or_read_v1_3() -> PathBuf {
    g13::dir()
}

/// The v1.4 folder (never rewritten).
fn bless_or_read_v1_4() -> PathBuf {
    g14::dir()
}

/// The v1.5 folder (never rewritten).
fn bless_or_read_v1_5() -> PathBuf {
    g15::dir()
}

/// A v1.6 folder (never rewritten: the current version is 1.8).
fn bless_or_read_v1_6() -> PathBuf {
    g16::dir()
}

/// A v1.6 folder (never rewritten: the current version is 1.8).
fn bless_or_read_v1_6_ivf() -> PathBuf {
    g16i::dir()
}

#[test]
fn v1_0_golden_files_read_with_their_values() {
    let dir = v1_0_dir();
    let p = |n: String| dir.join(n);
    use golden::*;

    let m = ModelFile::open(&p(name("model", MODEL_ID, "model"))).unwrap();
    assert_eq!(m, model());

    for (id, want) in [(SEG_A_ID, segment_a()), (SEG_B_ID, segment_b())] {
        let r = SegmentReader::open(&p(name("seg", id, "seg")), OpenOptions::default()).unwrap();
        assert!(
            r.container().is_mapped(),
            "segments are read through the mmap"
        );
        assert_eq!(SegmentData::from_reader(&r).unwrap(), want);
    }
    let a = SegmentReader::open(&p(name("seg", SEG_A_ID, "seg")), OpenOptions::default()).unwrap();
    assert_eq!(a.ids(), &[10, 11, 12, 20, 21]);
    assert_eq!(a.code(3), Some(&[0xaa, 0x55][..]));
    assert_eq!(a.labels(), Some(&[1, 1, 2, 3, 2][..]));
    assert_eq!(
        a.codes().as_ptr() as usize % 64,
        0,
        "code column is 64-byte aligned"
    );

    let d = DeletionBitmap::open(&p(name("del", DEL_ID, "del"))).unwrap();
    assert_eq!(d, deletions());
    assert_eq!(d.deleted_count(), 2);
    assert!(d.is_deleted(1) && d.is_deleted(3) && !d.is_deleted(0));

    let mut base = ClassTable::open(&p(name("classes", CLS_ID, "cls"))).unwrap();
    assert_eq!(base, classes());
    let delta = ClassTable::open(&p(name("classes", CLS_DELTA_ID, "cls"))).unwrap();
    assert_eq!(delta, classes_delta());
    base.fold(&delta, &dir).unwrap();
    let shirt = base.classes.iter().find(|c| c.name == "shirt").unwrap();
    assert_eq!(shirt.count, 3);
    assert_eq!(shirt.sum, vec![1.5, 2.5, 3.5, 4.5]);
    assert_eq!(base.classes.len(), 4);

    let man = Manifest::open(&p("v00000000000000000001.manifest".into())).unwrap();
    assert_eq!(man, manifest());
    assert_eq!(man.live_rows(), 6);
}

/// `bytes` with the header's minor version set to `minor` and the header CRC recomputed.
fn with_minor(mut bytes: Vec<u8>, minor: u8) -> Vec<u8> {
    bytes[10] = minor;
    let crc = crc32fast::hash(&bytes[..60]);
    bytes[60..64].copy_from_slice(&crc.to_le_bytes());
    bytes
}

/// `new` (this build's bytes for the values of golden file `name`) equals `old` (the file as
/// written by format 1.`minor`) but for the minor version and the sections of kinds `added`:
/// every old section is there with the same flags, codec and stored bytes, in the same order.
fn same_but_added_sections(name: &str, new: &[u8], old: &[u8], minor: u8, added: &[u32]) {
    use codedb::format::Container;
    let (n, o) = (Path::new("new"), Path::new("old"));
    let new_c = Container::from_slice(new, n, None).unwrap();
    let old_c = Container::from_slice(old, o, None).unwrap();
    assert_eq!(old_c.version(), (1, minor as u16), "{name}");
    assert_eq!(
        new_c.version(),
        (1, FormatVersion::MINOR),
        "{name}: this build's version"
    );
    assert_eq!(new_c.header().kind, old_c.header().kind, "{name}");
    assert_eq!(new_c.header().file_id, old_c.header().file_id, "{name}");
    let kept: Vec<usize> = (0..new_c.entries().len())
        .filter(|&i| !added.contains(&new_c.entries()[i].kind))
        .collect();
    assert_eq!(kept.len(), old_c.entries().len(), "{name}: sections");
    for (j, &i) in kept.iter().enumerate() {
        let (a, b) = (new_c.entries()[i], old_c.entries()[j]);
        assert_eq!(
            (a.kind, a.flags, a.codec, a.raw_len, a.crc32),
            (b.kind, b.flags, b.codec, b.raw_len, b.crc32),
            "{name}: section {j}"
        );
        assert!(new_c.stored(i) == old_c.stored(j), "{name}: section {j}");
    }
}

#[test]
fn v1_0_values_written_by_this_build_change_only_the_minor_version_and_add_the_list_index() {
    // Format 1.1 changed no 1.0 byte layout: re-written by this build, every 1.0 file differs
    // only in its minor version (and so its header CRC), except that a segment whose rows are
    // grouped by list now also carries its list index, and (1.3) every segment its block
    // checksums; every section 1.0 wrote is unchanged.
    let dir = v1_0_dir();
    let seg_b = golden::name("seg", golden::SEG_B_ID, "seg");
    for (name, bytes) in golden::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        assert_eq!(
            bytes[10] as u16,
            FormatVersion::MINOR,
            "{name}: this build's minor"
        );
        if name == seg_b {
            let r = SegmentReader::from_bytes(&bytes, Path::new(&name)).unwrap();
            let e = |list, first_row| ListEntry { list, first_row };
            assert_eq!(r.list_index(), Some(&[e(0, 0), e(2, 1)][..]));
            let old = SegmentReader::open(&dir.join(&name), OpenOptions::default()).unwrap();
            assert_eq!(old.list_index(), None, "1.0 segments have no list index");
            assert_eq!(
                SegmentData::from_reader(&r).unwrap(),
                SegmentData::from_reader(&old).unwrap()
            );
        }
        if name.starts_with("seg-") {
            let added = [
                section_kind::SEG_LIST_INDEX,
                section_kind::SEG_BLOCK_CHECKSUMS,
            ];
            same_but_added_sections(&name, &bytes, &on_disk, 0, &added);
        } else {
            assert!(
                with_minor(bytes, 0) == on_disk,
                "{name}: this build's bytes differ from 1.0 beyond the minor version"
            );
        }
    }
}

#[test]
fn v1_1_values_written_by_this_build_change_only_the_minor_version() {
    // Formats 1.2 and 1.3 changed no 1.1 byte layout (the v1.1 set has no 4-bit PQ segment):
    // re-written by this build, every 1.1 file differs only in its minor version and header
    // CRC (the log carries its version in its own header the same way), and the segment also
    // in its added block checksums (1.3).
    let dir = bless_or_read();
    for (name, bytes) in g11::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        assert_eq!(
            bytes[10] as u16,
            FormatVersion::MINOR,
            "{name}: this build's minor"
        );
        if name.starts_with("seg-") {
            let added = [section_kind::SEG_BLOCK_CHECKSUMS];
            same_but_added_sections(&name, &bytes, &on_disk, 1, &added);
        } else {
            assert!(
                with_minor(bytes, 1) == on_disk,
                "{name}: this build's bytes differ from 1.1 beyond the minor version"
            );
        }
    }
}

#[test]
fn v1_2_values_written_by_this_build_add_only_the_block_checksums() {
    let dir = bless_or_read_v1_2();
    for (name, bytes) in g12::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        let added = [section_kind::SEG_BLOCK_CHECKSUMS];
        same_but_added_sections(&name, &bytes, &on_disk, 2, &added);
    }
}

#[test]
fn v1_3_values_written_by_this_build_change_only_the_minor_version() {
    // Format 1.4 changed no class-table byte (the v1.3 set holds class tables only).
    let dir = bless_or_read_v1_3();
    for (name, bytes) in g13::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        assert!(
            with_minor(bytes, 3) == on_disk,
            "{name}: this build's bytes differ from 1.3 beyond the minor version"
        );
    }
}

#[test]
fn v1_4_values_written_by_this_build_change_only_the_minor_version() {
    // Format 1.5 changed no segment byte (the v1.4 set holds segments only).
    let dir = bless_or_read_v1_4();
    for (name, bytes) in g14::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        same_but_added_sections(&name, &bytes, &on_disk, 4, &[]);
        assert!(
            with_minor(bytes, 4) == on_disk,
            "{name}: this build's bytes differ from 1.4 beyond the minor version"
        );
    }
}

#[test]
fn v1_5_values_written_by_this_build_change_only_the_minor_version() {
    // Format 1.6 changed no byte of a 1.5 model (the v1.5 set holds one model, with no origin).
    let dir = bless_or_read_v1_5();
    for (name, bytes) in g15::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        same_but_added_sections(&name, &bytes, &on_disk, 5, &[]);
        assert!(
            with_minor(bytes, 5) == on_disk,
            "{name}: this build's bytes differ from 1.5 beyond the minor version"
        );
    }
}

#[test]
fn v1_6_values_change_only_the_minor_version() {
    // Format 1.7 changed no byte of these files but the minor version.
    let dir = bless_or_read_v1_6();
    for (name, bytes) in g16::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        same_but_added_sections(&name, &bytes, &on_disk, 6, &[]);
        assert!(
            with_minor(bytes, 6) == on_disk,
            "{name}: this build's bytes differ from 1.6 beyond the minor version"
        );
    }
}

#[test]
fn v1_6_golden_model_reads_with_its_origin() {
    use codedb::format::stage_kind;
    use codedb::model::Model;
    let dir = bless_or_read_v1_6();
    let path = dir.join(golden::name("model", g16::MODEL_ID, "model"));
    let mf = ModelFile::open(&path).unwrap();
    assert!(mf.skipped_stages.is_empty());
    let last = mf.stages.last().unwrap();
    assert_eq!((last.kind, last.required), (stage_kind::ORIGIN, false));
    let names: Vec<&str> = last.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["spec", "stage_steps", "seed"]);
    let m = Model::from_model_file(&mf).unwrap();
    assert_eq!(m, g16::model());
    let o = m.origin().unwrap();
    assert_eq!((o.spec(), o.seed()), (g16::SPEC, g16::SEED));
    let steps: Vec<&str> = (0..3).map(|i| o.step_of(i).unwrap()).collect();
    assert_eq!(steps, ["cca:16", "cca:16", "bits"]);
    // inspect names the step behind each stage.
    let report = codedb::admin::inspect_file(&path).unwrap();
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains(r#""step":"cca:16""#), "{json}");
    assert!(json.contains(r#""spec":"cca:16,bits","seed":42"#), "{json}");
    // A 1.5 reader does not know stage kind 10: in a file that says 1.5 it is skipped and
    // reported, and the model reads without its origin, encoding exactly as before.
    let bytes = std::fs::read(&path).unwrap();
    let old = ModelFile::from_bytes(&with_minor(bytes.clone(), 5), Path::new("m")).unwrap();
    assert_eq!(old.skipped_stages, [stage_kind::ORIGIN]);
    let bare = Model::from_model_file(&old).unwrap();
    assert_eq!(bare.origin(), None);
    assert_eq!(bare.stages(), m.stages());
    // Marked REQUIRED, it would be refused by such a reader (and by this one in a 1.5 file).
    let mut req = mf.clone();
    req.stages.last_mut().unwrap().required = true;
    let req = with_minor(req.to_bytes().unwrap(), 5);
    let e = ModelFile::from_bytes(&req, Path::new("m"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("kind 10"), "{e}");
    // An origin naming more stages than the model has is refused, naming the stage.
    let mut bad = mf.clone();
    let o4 = codedb::model::Origin::new(g16::SPEC.into(), vec![0, 0, 1, 1], 1).unwrap();
    *bad.stages.last_mut().unwrap() = o4.to_record();
    let e = Model::from_model_file(&bad).unwrap_err().to_string();
    assert!(e.contains("origin names the steps of 4 stages"), "{e}");
}

#[test]
fn v1_5_golden_model_reads_with_its_text_head() {
    use codedb::format::stage_kind;
    use codedb::model::Model;
    let dir = bless_or_read_v1_5();
    let path = dir.join(golden::name("model", g15::MODEL_ID, "model"));
    let mf = ModelFile::open(&path).unwrap();
    assert!(mf.skipped_stages.is_empty());
    let last = mf.stages.last().unwrap();
    assert_eq!((last.kind, last.required), (stage_kind::TEXT, false));
    let names: Vec<&str> = last.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["words", "word_ends", "idf", "weight"]);
    let m = Model::from_model_file(&mf).unwrap();
    let head = m.text_head().unwrap();
    assert_eq!(head.vocabulary().words(), g15::WORDS);
    assert_eq!(head.vocabulary().idf(), g15::IDF);
    assert_eq!((head.dim(), head.weight()), (g15::DIM, &g15::weight()[..]));
    // Without its head it is the plain pipeline, which encodes as before.
    let bare = Model::from_model_file(&g15::bare_model_file()).unwrap();
    assert_eq!(m.clone().without_text_head(), bare);
    // "Red, CAFÉ!": tf-idf-norm over red (0.75) and café (0.25), u = Wᵀq.
    let q = head.query("Red, CAFÉ! pear").unwrap();
    assert_eq!(q.vector.unknown, ["pear"]);
    let n = (0.75f64 * 0.75 + 0.25 * 0.25).sqrt();
    let w = g15::weight();
    for (j, u) in q.u.iter().enumerate() {
        let want = (0.25 / n) * f64::from(w[16 + j]) + (0.75 / n) * f64::from(w[32 + j]);
        assert!(
            (f64::from(*u) - want).abs() < 1e-6,
            "u[{j}] = {u}, want {want}"
        );
    }
    // A 1.4 reader does not know stage kind 9: in a file that says 1.4 the stage is unknown
    // and optional, so it is skipped and reported, and the model reads without its head.
    let bytes = std::fs::read(&path).unwrap();
    let old = ModelFile::from_bytes(&with_minor(bytes.clone(), 4), Path::new("m")).unwrap();
    assert_eq!(old.skipped_stages, [stage_kind::TEXT]);
    assert_eq!(Model::from_model_file(&old).unwrap(), bare);
    // Marked REQUIRED, it would be refused by such a reader (and by this one in a 1.4 file).
    let mut req = mf.clone();
    req.stages.last_mut().unwrap().required = true;
    let req = with_minor(req.to_bytes().unwrap(), 4);
    let e = ModelFile::from_bytes(&req, Path::new("m"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("kind 9"), "{e}");
}

#[test]
fn v1_3_golden_class_delta_removes_images_exactly() {
    let dir = bless_or_read_v1_3();
    let base_path = dir.join(golden::name("classes", g13::BASE_ID, "cls"));
    let delta_path = dir.join(golden::name("classes", g13::DELTA_ID, "cls"));
    let mut base = ClassTable::open(&base_path).unwrap();
    assert_eq!(base, g13::base());
    let delta = ClassTable::open(&delta_path).unwrap();
    assert_eq!(delta, g13::delta());
    let bytes = std::fs::read(&delta_path).unwrap();
    assert_eq!(bytes[10], 3, "written by format 1.3");
    let c = codedb::format::Container::from_slice(&bytes, &delta_path, None).unwrap();
    let removed = c
        .entries()
        .iter()
        .find(|e| e.kind == section_kind::CLS_REMOVED)
        .expect("the delta carries a removed section");
    assert!(
        removed.required(),
        "a reader that does not know it must refuse the delta"
    );
    assert_eq!(removed.raw_len, 4 * 8);
    // The base, which removes nothing, has no such section (its bytes are a 1.2 table's).
    let b = std::fs::read(&base_path).unwrap();
    let cb = codedb::format::Container::from_slice(&b, &base_path, None).unwrap();
    assert!(
        cb.entries()
            .iter()
            .all(|e| e.kind != section_kind::CLS_REMOVED)
    );

    base.fold(&delta, &dir).unwrap();
    let got: Vec<(u32, u64, Vec<f64>)> = base
        .classes
        .iter()
        .map(|c| (c.id, c.count, c.sum.clone()))
        .collect();
    let want: Vec<(u32, u64, Vec<f64>)> = g13::folded()
        .into_iter()
        .map(|(id, n, s)| (id, n, s.to_vec()))
        .collect();
    assert_eq!(got, want, "counts and sums after the removals, exactly");
    assert!(
        base.classes.iter().all(|c| c.removed == 0),
        "a folded table holds counts"
    );
    let emptied = &base.classes[1];
    assert!(emptied.sum.iter().all(|v| v.to_bits() == 0), "exactly +0.0");
}

#[test]
fn class_removals_break_no_rule_unnoticed() {
    let dir = bless_or_read_v1_3();
    let delta_path = dir.join(golden::name("classes", g13::DELTA_ID, "cls"));
    let good = std::fs::read(&delta_path).unwrap();
    let corrupt = |bytes: &[u8], want: &str| {
        let err = ClassTable::from_bytes(bytes, &delta_path).unwrap_err();
        assert!(matches!(&err, FormatError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(want), "{err}");
    };
    // The section in a file that claims format 1.2, which does not define it.
    corrupt(&with_minor(good.clone(), 2), "format 1.2 file");
    // A 1.2 reader meets an unknown required section: rebuilt with kind 37 renamed to an
    // unknown kind, this build refuses it the way 1.2 refuses kind 37.
    let c = codedb::format::Container::from_slice(&good, &delta_path, None).unwrap();
    let rebuild = |kind_of: &dyn Fn(u32) -> u32, delta: bool| {
        let mut w = ContainerWriter::new(
            Vec::new(),
            FileKind::ClassTable,
            c.header().file_id,
            &delta_path,
        )
        .unwrap();
        for (i, e) in c.entries().iter().enumerate() {
            let mut bytes = c.stored(i).to_vec();
            if e.kind == section_kind::META && !delta {
                bytes[12..32].fill(0); // no DELTA flag, no base id
            }
            w.section(kind_of(e.kind), e.required(), &bytes).unwrap();
        }
        w.finish().unwrap()
    };
    let unknown = rebuild(
        &|k| {
            if k == section_kind::CLS_REMOVED {
                39
            } else {
                k
            }
        },
        true,
    );
    let err = ClassTable::from_bytes(&unknown, &delta_path).unwrap_err();
    assert!(
        matches!(&err, FormatError::UnknownRequiredSection { .. }),
        "{err}"
    );
    // Removals in a base table.
    corrupt(&rebuild(&|k| k, false), "removes no images");
    // A delta that removes more images than the class has.
    let mut base = g13::base();
    let mut greedy = g13::delta();
    greedy.classes[1].removed = 3;
    let err = base.fold(&greedy, &dir).unwrap_err();
    assert!(
        err.to_string().contains("3 image(s) removed, it has 2"),
        "{err}"
    );
    assert_eq!(base, g13::base(), "a refused fold changes nothing");
    // Writers refuse removals in a base table too.
    let mut b = g13::base();
    b.classes[0].removed = 1;
    assert!(b.to_bytes().is_err());
}

#[test]
fn v1_2_golden_fastscan_segment_reads_with_its_values() {
    let dir = bless_or_read_v1_2();
    let path = dir.join(golden::name("seg", g12::SEG_ID, "seg"));
    let r = SegmentReader::open(&path, OpenOptions::default()).unwrap();
    assert!(r.container().is_mapped());
    assert_eq!(r.container().header().minor, 2);
    assert_eq!(SegmentData::from_reader(&r).unwrap(), g12::segment());
    let m = r.meta();
    assert_eq!(
        (m.rows, m.code_kind, m.code_bytes, m.code_bits),
        (37, CodeKind::Pq4, 2, 12)
    );
    assert_eq!(r.ids()[36], 1000 + 3 * 36);
    assert_eq!(r.labels().unwrap()[5], 1);
    let sections: Vec<u32> = r.container().entries().iter().map(|e| e.kind).collect();
    assert!(sections.contains(&section_kind::SEG_CODES_FASTSCAN));
    assert!(!sections.contains(&section_kind::SEG_CODES));

    // The packed column, in place: 2 blocks of M2 × 16 = 64 bytes, 64-byte aligned.
    let (packed, mm) = r.fastscan_codes().unwrap();
    assert_eq!((packed.len(), mm), (128, 3));
    assert_eq!(packed.as_ptr() as usize % 64, 0, "viewed in place, aligned");
    // Byte 16j + i of block b = (row 32b+16+i's index << 4) | row 32b+i's index, value by value.
    for b in 0..2 {
        for j in 0..4 {
            for i in 0..16 {
                let idx = |r: usize| {
                    if j < 3 && r < 37 { g12::index(r, j) } else { 0 }
                };
                let want = (idx(32 * b + 16 + i) << 4) | idx(32 * b + i);
                assert_eq!(
                    packed[64 * b + 16 * j + i],
                    want,
                    "block {b} j {j} byte {i}"
                );
            }
        }
    }
    // Hand-checked: row 1 (j0 = 1) and row 17 (j0 = 17 % 16 = 1) share byte 1: 0x11; row 36
    // (block 1, i = 4) has j1 = (36·5 + 1) % 16 = 5 in the low nibble of byte 64 + 16 + 4.
    assert_eq!(packed[1], 0x11);
    assert_eq!(packed[64 + 16 + 4], 0x05);
    assert_eq!(&packed[64 + 48..], &[0u8; 16], "padding sub-quantiser");
    for row in 0..37 {
        assert_eq!(
            r.row_code(row).unwrap().as_ref(),
            &g12::code(row),
            "row {row}"
        );
        assert_eq!(r.code(row).unwrap(), &g12::code(row), "row {row}");
    }
    assert_eq!(r.row_code(37), None);
    let mut some = Vec::new();
    r.codes_into(35..40, &mut some);
    assert_eq!(some, [g12::code(35), g12::code(36)].concat());
}

/// The golden fast-scan segment rebuilt section by section with `packed` as its code column
/// (and the header's minor version set to `minor`), checksums recomputed.
fn fastscan_segment_with(packed: &[u8], minor: u8) -> (PathBuf, Vec<u8>) {
    let path = bless_or_read_v1_2().join(golden::name("seg", g12::SEG_ID, "seg"));
    let r = SegmentReader::open(&path, OpenOptions::default()).unwrap();
    let c = r.container();
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, &path).unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        let bytes = if e.kind == section_kind::SEG_CODES_FASTSCAN {
            packed
        } else {
            c.stored(i)
        };
        w.section(e.kind, e.required(), bytes).unwrap();
    }
    let bytes = w.finish().unwrap();
    (path, with_minor(bytes, minor))
}

#[test]
fn fastscan_segments_break_no_rule_unnoticed() {
    let path = bless_or_read_v1_2().join(golden::name("seg", g12::SEG_ID, "seg"));
    let good = std::fs::read(&path).unwrap();
    let r = SegmentReader::from_bytes(&good, &path).unwrap();
    let packed = r.fastscan_codes().unwrap().0.to_vec();
    let (_, same) = fastscan_segment_with(&packed, 2);
    assert!(same == good, "the rebuild reproduces the golden bytes");
    let corrupt = |bytes: &[u8], want: &str| {
        let err = SegmentReader::from_bytes(bytes, &path).unwrap_err();
        assert!(
            matches!(&err, FormatError::Corrupt { section, .. } if section == "codes_fastscan"),
            "{err}"
        );
        assert!(err.to_string().contains(want), "{err}");
    };
    // A padding row of the last block (row 37 = block 1, i = 5, sub-quantiser 0).
    let mut dirty = packed.clone();
    dirty[64 + 5] = 0x01;
    corrupt(
        &fastscan_segment_with(&dirty, 2).1,
        "padding nibble of row 37 sub-quantiser 0",
    );
    // Also when the codes column is not checksum-checked on open.
    let (p, bytes) = fastscan_segment_with(&dirty, 2);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join(p.file_name().unwrap());
    std::fs::write(&file, &bytes).unwrap();
    let opts = OpenOptions {
        load: LoadMode::Read,
        checksums: codedb::format::ChecksumPolicy::SkipColumns,
    };
    assert!(SegmentReader::open(&file, opts).is_err());
    // The padding sub-quantiser of an odd M, in the first (full) block.
    let mut dirty = packed.clone();
    dirty[48 + 3] = 0x10;
    corrupt(
        &fastscan_segment_with(&dirty, 2).1,
        "row 19 sub-quantiser 3",
    );
    // Block count vs rows: one block too few, one too many.
    corrupt(
        &fastscan_segment_with(&packed[..64], 2).1,
        "expected 2 blocks",
    );
    corrupt(
        &fastscan_segment_with(&[&packed[..], &[0; 64]].concat(), 2).1,
        "expected 2 blocks",
    );
    // The section in a file that claims format 1.1 (which does not define it).
    corrupt(&fastscan_segment_with(&packed, 1).1, "format 1.1 file");
    // The golden bytes themselves are clean; verify-level checks agree.
    r.check_code_padding(true).unwrap();
}

#[test]
fn v1_1_golden_files_read_with_their_values() {
    let dir = bless_or_read();
    let p = |n: String| dir.join(n);
    let seg_path = p(golden::name("seg", g11::SEG_ID, "seg"));
    let r = SegmentReader::open(&seg_path, OpenOptions::default()).unwrap();
    assert_eq!(SegmentData::from_reader(&r).unwrap(), g11::segment());
    assert_eq!(r.container().header().minor, 1);
    let e = |list, first_row| ListEntry { list, first_row };
    assert_eq!(r.list_index(), Some(&[e(1, 0), e(3, 2)][..]));
    assert!(!r.vectors_compressed());
    match r.vector_column() {
        Some(VectorSlice::F16(v)) => {
            assert_eq!(v.len(), 20);
            assert_eq!(v[4].to_f32(), 47.0);
            assert_eq!(
                v.as_ptr() as usize % 64,
                0,
                "vectors are viewed in place, aligned"
            );
        }
        other => panic!("expected an f16 column, got {other:?}"),
    }
    assert_eq!(
        DeletionBitmap::open(&p(golden::name("del", g11::SEG_DEL_ID, "del"))).unwrap(),
        g11::segment_deletions()
    );
    let log_path = p(golden::name("log", g11::LOG_ID, "log"));
    let log = std::fs::read(&log_path).unwrap();
    let c = append_log::read_log(&log, &log_path, Some(log.len() as u64)).unwrap();
    assert_eq!(c.meta, g11::log_meta());
    assert_eq!(c.batches, g11::log_batches());
    assert_eq!(c.tail.bytes, 0);
    let (m, l) = Manifest::open_with_log(&p("v00000000000000000001.manifest".into())).unwrap();
    assert_eq!(m, g11::manifest());
    assert_eq!(l, Some(g11::active_log()));
}

/// The 1.1 golden directory opened as an index: stored vectors, list ids and labels of every
/// live row, sealed or logged, through the snapshot API; list ranges visit only their lists.
fn check_golden_index(s: &Snapshot) {
    assert_eq!(s.vector_spec(), Some(g11::SPEC));
    let mut seen = Vec::new();
    for b in s.blocks() {
        assert_eq!(b.vector_dim, 4);
        for i in 0..b.rows() {
            if b.is_deleted(i) {
                continue;
            }
            let id = b.ids().unwrap()[i];
            assert_eq!(
                b.vector(i).unwrap().unwrap(),
                g11::vector(id),
                "vector of id {id}"
            );
            seen.push((id, b.list(i).unwrap(), b.label(i).unwrap()));
        }
        // Every block of the golden index is grouped by list.
        let lists = b.lists().unwrap().unwrap();
        for &l in lists {
            let want: Vec<usize> = (0..b.rows()).filter(|&i| lists[i] == l).collect();
            let got: Vec<usize> = b.list_range(l).unwrap().collect();
            assert_eq!(got, want, "rows of list {l}");
        }
        assert_eq!(b.list_range(99), Some(0..0));
        let want: Vec<usize> = (0..b.rows())
            .filter(|&i| matches!(lists[i], 1 | 4))
            .collect();
        let got: Vec<usize> = b
            .rows_in_lists(&[4, 1])
            .unwrap()
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(got, want);
    }
    seen.sort_unstable();
    assert_eq!(seen, g11::live_rows());
    assert_eq!(s.vector(53).unwrap().unwrap(), g11::vector(53));
    assert_eq!(s.vector(41).unwrap(), None, "deleted");
    let (b, i) = s.locate(45).unwrap().unwrap();
    assert_eq!(
        (b.list(i).unwrap(), b.label(i).unwrap()),
        (Some(3), Some(3))
    );
}

#[test]
fn the_v1_1_golden_directory_opens_as_an_index_and_survives_writes_and_compaction() {
    let golden = bless_or_read();
    let s = Snapshot::open(&golden).unwrap();
    check_golden_index(&s);
    // The writer path on a copy: add rows, seal, compact, reopen.
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&golden).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
        let p = tmp.path().join(e.file_name());
        let mut perm = std::fs::metadata(&p).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(&p, perm).unwrap();
    }
    let cfg = Config {
        seal_bytes: 1,
        ..Config::default()
    };
    let idx = Index::open(tmp.path(), cfg.clone()).unwrap();
    let v = ndarray::arr2(&[g11::vector(60)]);
    let err = idx
        .add_encoded(
            &RowBatch::new(&[60, 0]).with_ids(&[60]).with_lists(&[1]),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("vectors"), "{err}");
    idx.add_encoded(
        &RowBatch::new(&[60, 0])
            .with_ids(&[60])
            .with_lists(&[1])
            .with_vectors(v.view()),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    idx.compact(&CompactionPolicy::full()).unwrap();
    drop(idx);
    let s = Snapshot::open(tmp.path()).unwrap();
    assert_eq!(s.segment_count(), 1);
    assert_eq!(s.vector(60).unwrap().unwrap(), g11::vector(60));
    let b = s.blocks().next().unwrap();
    assert_eq!(b.list_range(1).map(|r| r.len()), Some(3), "ids 40, 47, 60");
    assert_eq!(s.live_rows(), 8);
}

#[test]
fn unknown_major_version_is_refused_with_a_clear_error() {
    let dir = v1_0_dir();
    let path = dir.join(golden::name("model", golden::MODEL_ID, "model"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 2; // major version 2
    let err = ModelFile::from_bytes(&bytes, &path).unwrap_err();
    assert!(
        matches!(err, FormatError::UnsupportedVersion { found: (2, 0), .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("unsupported format version 2.0"),
        "{err}"
    );
}

/// A golden v1.4 segment rebuilt section by section, with section kind `kind` replaced by
/// `with` (when given) and the header's minor version set to `minor`; checksums recomputed.
fn v1_4_segment_with(id: u128, kind: u32, with: Option<&[u8]>, minor: u8) -> Vec<u8> {
    let path = bless_or_read_v1_4().join(golden::name("seg", id, "seg"));
    let r = SegmentReader::open(&path, OpenOptions::default()).unwrap();
    let c = r.container();
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, &path).unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        let bytes = match with {
            Some(b) if e.kind == kind => b,
            _ => c.stored(i),
        };
        w.section(e.kind, e.required(), bytes).unwrap();
    }
    with_minor(w.finish().unwrap(), minor)
}

#[test]
fn v1_4_golden_segments_read_with_their_values_and_their_block_checksums() {
    use codedb::format::RowColumn;
    use codedb::format::block_checksums;
    let dir = bless_or_read_v1_4();
    let path_a = dir.join(golden::name("seg", g14::SEG_A_ID, "seg"));
    let path_b = dir.join(golden::name("seg", g14::SEG_B_ID, "seg"));
    let a = SegmentReader::open(&path_a, OpenOptions::default()).unwrap();
    let b = SegmentReader::open(&path_b, OpenOptions::default()).unwrap();
    assert_eq!(a.container().header().minor, 4);
    let rows = g14::ROWS;
    assert_eq!(a.ids(), &(0..rows).map(g14::id_a).collect::<Vec<_>>()[..]);
    assert_eq!(
        a.codes(),
        &(0..rows).flat_map(g14::code_a).collect::<Vec<_>>()[..]
    );
    assert_eq!(a.labels().unwrap()[7], g14::label_a(7));
    assert_eq!(a.lists().unwrap()[599], 9);
    let e = |list, first_row| ListEntry { list, first_row };
    assert_eq!(
        a.list_index(),
        Some(&[e(0, 0), e(3, 150), e(6, 300), e(9, 450)][..])
    );
    let v = a.vector_column().unwrap();
    let mut row = [0f32; g14::DIM];
    assert!(v.row_into(599, g14::DIM, &mut row));
    assert_eq!(row, g14::vector_a(599));
    assert_eq!(b.ids()[599], g14::id_b(599));
    assert_eq!(b.fastscan_codes().unwrap().1, g14::M_B);
    for r in [0, 31, 32, 599] {
        assert_eq!(b.code(r).unwrap(), &g14::code_b(r), "row {r}");
    }

    // The section: optional, 4 KiB blocks, one entry per row column in file order.
    for (seg, want) in [
        (&a, &[(2u32, 2usize), (3, 3), (4, 1), (5, 1), (6, 3)][..]),
        (&b, &[(2, 2), (8, 5)][..]),
    ] {
        let c = seg.container();
        let i = c
            .find_one(section_kind::SEG_BLOCK_CHECKSUMS)
            .unwrap()
            .unwrap();
        assert!(!c.entries()[i].required(), "a 1.2 reader may skip it");
        let cols = block_checksums::decode(c.stored(i), c.path()).unwrap();
        let got: Vec<(u32, usize)> = cols.iter().map(|c| (c.kind, c.crcs.len())).collect();
        assert_eq!(got, want);
        for col in &cols {
            assert_eq!(col.block_bytes, 4096);
            let k = c.find_one(col.kind).unwrap().unwrap();
            let want: Vec<u32> = c.stored(k).chunks(4096).map(crc32fast::hash).collect();
            assert_eq!(col.crcs, want, "section kind {}", col.kind);
        }
        for col in RowColumn::ALL {
            let (checked, total) = seg.checked_blocks(col);
            assert_eq!(checked, total, "opened with every checksum checked");
            assert_eq!(seg.has_block_checksums(col), total > 0);
        }
    }

    // A flipped byte in any block of any column: the segment opens unchecked (O(1)), rows in
    // other blocks read, the rows of that block fail naming file, section, block and rows.
    let good = std::fs::read(&path_a).unwrap();
    let c = a.container();
    let col_of = |kind: u32| match kind {
        2 => RowColumn::Ids,
        3 => RowColumn::Codes,
        4 => RowColumn::Labels,
        5 => RowColumn::Lists,
        _ => RowColumn::Vectors,
    };
    for (i, e) in c.entries().iter().enumerate() {
        if !(2..=6).contains(&e.kind) {
            continue;
        }
        let width = e.stored_len as usize / rows;
        for block in 0..e.stored_len.div_ceil(4096) as usize {
            let at = e.offset as usize + block * 4096 + 100;
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            let label = c.label(i);
            let cont =
                codedb::format::Container::from_slice(&bad, &path_a, Some(FileKind::Segment))
                    .unwrap();
            let r =
                SegmentReader::from_container(cont, codedb::format::ChecksumPolicy::SkipColumns)
                    .unwrap();
            let row = (block * 4096 + 100) / width;
            let err = r.check_rows(col_of(e.kind), row..row + 1).unwrap_err();
            match &err {
                FormatError::BlockChecksumMismatch {
                    path,
                    section,
                    block: b,
                    first_row,
                    end_row,
                } => {
                    assert_eq!(path, &path_a);
                    assert_eq!((section.as_str(), *b as usize), (label.as_str(), block));
                    assert!(
                        (*first_row as usize..*end_row as usize).contains(&row),
                        "{err}"
                    );
                }
                other => panic!("{label} block {block}: {other}"),
            }
            let msg = err.to_string();
            assert!(msg.contains(&format!("{label} block {block}")), "{msg}");
            // Other blocks still read; the bad one fails again (a failure is not remembered).
            let other = if block == 0 { rows - 1 } else { 0 };
            if e.stored_len > 4096 {
                r.check_rows(col_of(e.kind), other..other + 1).unwrap();
            }
            assert!(r.check_rows(col_of(e.kind), 0..rows).is_err());
            assert!(
                SegmentReader::from_bytes(&bad, &path_a).is_err(),
                "{label} {block}"
            );
        }
    }

    // Fast-scan column: block 1 holds the groups of rows 128..256 (4 groups of 1024 bytes).
    let cb = b.container();
    let k = cb
        .find_one(section_kind::SEG_CODES_FASTSCAN)
        .unwrap()
        .unwrap();
    let mut bad = std::fs::read(&path_b).unwrap();
    bad[cb.entries()[k].offset as usize + 4096 + 7] ^= 1;
    let cont =
        codedb::format::Container::from_slice(&bad, &path_b, Some(FileKind::Segment)).unwrap();
    let r =
        SegmentReader::from_container(cont, codedb::format::ChecksumPolicy::SkipColumns).unwrap();
    r.check_rows(RowColumn::Codes, 0..128).unwrap();
    r.check_rows(RowColumn::Codes, 256..600).unwrap();
    let err = r.check_rows(RowColumn::Codes, 200..201).unwrap_err();
    assert!(
        err.to_string()
            .contains("codes_fastscan block 1 (rows 128..256)"),
        "{err}"
    );
}

#[test]
fn block_checksum_sections_break_no_rule_unnoticed() {
    use codedb::format::block_checksums;
    use codedb::format::block_checksums::ColumnBlockCrcs;
    let path = bless_or_read_v1_4().join(golden::name("seg", g14::SEG_B_ID, "seg"));
    let r = SegmentReader::open(&path, OpenOptions::default()).unwrap();
    let c = r.container();
    let i = c
        .find_one(section_kind::SEG_BLOCK_CHECKSUMS)
        .unwrap()
        .unwrap();
    let cols = block_checksums::decode(c.stored(i), &path).unwrap();
    let kind = section_kind::SEG_BLOCK_CHECKSUMS;
    let good = std::fs::read(&path).unwrap();
    assert!(
        v1_4_segment_with(g14::SEG_B_ID, kind, None, 4) == good,
        "the rebuild is exact"
    );
    let refused = |cols: &[ColumnBlockCrcs], minor: u8, want: &str| {
        let bytes = v1_4_segment_with(
            g14::SEG_B_ID,
            kind,
            Some(&block_checksums::encode(cols)),
            minor,
        );
        let err = SegmentReader::from_bytes(&bytes, &path).unwrap_err();
        assert!(
            matches!(&err, FormatError::Corrupt { section, .. } if section == "block_checksums"),
            "{err}"
        );
        assert!(err.to_string().contains(want), "{err}");
    };
    // In a file that claims 1.3, which does not define the section.
    refused(&cols, 3, "format 1.3 file");
    // Checksums of a column the segment does not have, or listed twice.
    let mut extra = cols.clone();
    extra.push(ColumnBlockCrcs {
        kind: 4,
        ..cols[0].clone()
    });
    refused(&extra, 4, "labels, which is not a row column");
    let mut twice = cols.clone();
    twice.push(cols[0].clone());
    refused(&twice, 4, "listed twice");
    // A column length that is not the column's.
    let mut short = cols.clone();
    short[0].len -= 8;
    let n = short[0].len.div_ceil(4096) as usize;
    short[0].crcs.truncate(n);
    refused(&short, 4, "the column has 4800 bytes");
    // A wrong checksum with a consistent section CRC: refused when every checksum is checked.
    let mut wrong = cols.clone();
    wrong[1].crcs[4] ^= 1;
    let bytes = v1_4_segment_with(
        g14::SEG_B_ID,
        kind,
        Some(&block_checksums::encode(&wrong)),
        4,
    );
    let err = SegmentReader::from_bytes(&bytes, &path).unwrap_err();
    assert!(
        err.to_string()
            .contains("codes_fastscan block 4 (rows 512..600)"),
        "{err}"
    );
    // Without the section (as a 1.3 writer would have written it) the file still reads, one
    // block per column.
    let w = {
        let mut w =
            ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, &path).unwrap();
        for (k, e) in c.entries().iter().enumerate() {
            if e.kind != kind {
                w.section(e.kind, e.required(), c.stored(k)).unwrap();
            }
        }
        w.finish().unwrap()
    };
    let r2 = SegmentReader::from_bytes(&w, &path).unwrap();
    assert_eq!(r2.checked_blocks(codedb::format::RowColumn::Codes), (1, 1));
    assert!(!r2.has_block_checksums(codedb::format::RowColumn::Codes));
}

/// A v1.6 folder (never rewritten: the current version is 1.8).
fn bless_or_read_v1_6_hom() -> PathBuf {
    g16h::dir()
}

#[test]
fn v1_6_hom_values_change_only_the_minor_version() {
    // Format 1.7 changed no byte of these files but the minor version.
    let dir = bless_or_read_v1_6_hom();
    for (name, bytes) in g16h::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        same_but_added_sections(&name, &bytes, &on_disk, 6, &[]);
        assert!(
            with_minor(bytes, 6) == on_disk,
            "{name}: this build's bytes differ from 1.6 beyond the minor version"
        );
    }
}

#[test]
fn v1_6_ivf_values_change_only_the_minor_version() {
    // Format 1.7 changed no byte of these files but the minor version.
    let dir = bless_or_read_v1_6_ivf();
    for (name, bytes) in g16i::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        same_but_added_sections(&name, &bytes, &on_disk, 6, &[]);
        assert!(
            with_minor(bytes, 6) == on_disk,
            "{name}: this build's bytes differ from 1.6 beyond the minor version"
        );
    }
}

#[test]
fn v1_6_golden_hom_model_reads_and_encodes_by_its_formula() {
    use codedb::format::stage_kind;
    use codedb::model::{HomKernel, Model, Stage};
    let path = bless_or_read_v1_6_hom().join(golden::name("model", g16h::MODEL_ID, "model"));
    let mf = ModelFile::open(&path).unwrap();
    assert_eq!(mf.stages[0].kind, stage_kind::HOM);
    let m = Model::from_model_file(&mf).unwrap();
    let Stage::Hom(h) = &m.stages()[0] else {
        panic!("stage 0 is not hom")
    };
    assert_eq!(
        (h.kernel(), h.order(), h.period()),
        (HomKernel::Chi2, 1, g16h::PERIOD)
    );
    // ψ by its formula (κ(λ) = sech(πλ)), then W ψ, then sign bits.
    let x = [0.0f32, 0.25, 1.0, 3.5];
    let l = g16h::PERIOD;
    let mut psi = [0f64; 12];
    for (i, &v) in x.iter().enumerate() {
        if v > 0.0 {
            let v = f64::from(v);
            let a = (2.0 * v * l / (std::f64::consts::PI * l).cosh()).sqrt();
            psi[i] = (v * l).sqrt();
            psi[4 + i] = a * (l * v.ln()).cos();
            psi[8 + i] = a * (l * v.ln()).sin();
        }
    }
    let w = g16h::weight();
    let code = m
        .encode(ndarray::ArrayView2::from_shape((1, 4), &x).unwrap())
        .unwrap();
    for j in 0..16 {
        let y: f64 = (0..12).map(|k| f64::from(w[12 * j + k]) * psi[k]).sum();
        assert!(y.abs() > 1e-4, "bit {j} too close to its threshold");
        assert_eq!(code[j / 8] >> (j % 8) & 1 == 1, y > 0.0, "bit {j}");
    }
    // A 1.5 reader does not know stage kind 11: in a file that says 1.5 the REQUIRED stage is
    // refused by name.
    let bytes = with_minor(std::fs::read(&path).unwrap(), 5);
    let err = ModelFile::from_bytes(&bytes, &path).unwrap_err();
    assert!(
        matches!(err, FormatError::UnknownStage { ref stage, .. } if stage.contains("kind 11")),
        "{err}"
    );
}

#[test]
fn v1_6_golden_ivf_model_and_segment_read_with_their_values() {
    use codedb::format::stage_kind;
    use codedb::model::Model;
    let dir = bless_or_read_v1_6_ivf();
    let mpath = dir.join(golden::name("model", g16i::MODEL_ID, "model"));
    let mf = ModelFile::open(&mpath).unwrap();
    assert_eq!(mf.stages[0].kind, stage_kind::IVF);
    assert!(mf.stages[0].required);
    let m = Model::from_model_file(&mf).unwrap();
    assert_eq!(m, g16i::model());
    let coarse = m.ivf().unwrap();
    assert_eq!(coarse.lists(), g16i::LISTS);
    for l in 0..g16i::LISTS {
        assert_eq!(coarse.centroid(l), &g16i::centroids()[4 * l..4 * (l + 1)]);
    }
    let seg = dir.join(golden::name("seg", g16i::SEG_ID, "seg"));
    let r = SegmentReader::open(&seg, OpenOptions::default()).unwrap();
    let data = SegmentData::from_reader(&r).unwrap();
    let rows = g16i::rows();
    assert_eq!(data.ids, rows.iter().map(|r| r.0).collect::<Vec<_>>());
    assert_eq!(
        data.codes,
        rows.iter().flat_map(|r| r.1).collect::<Vec<_>>()
    );
    assert_eq!(
        data.lists.as_deref().unwrap(),
        &rows.iter().map(|r| r.2).collect::<Vec<_>>()[..]
    );
    // Every list is used, and each row's code and list re-encode from its vector.
    assert!((0..g16i::LISTS as u32).all(|l| rows.iter().any(|r| r.2 == l)));
    let x = ndarray::Array2::from_shape_vec((1, 4), g16i::vector(5).to_vec()).unwrap();
    let (code, list) = m.encode_lists(x.view()).unwrap();
    let row = rows.iter().find(|r| r.0 == g16i::id(5)).unwrap();
    assert_eq!((&code[..], list.unwrap()[0]), (&row.1[..], row.2));
    // A file that says 1.5 does not define stage kind 12: it is an unknown required stage.
    let bytes = std::fs::read(&mpath).unwrap();
    let e = ModelFile::from_bytes(&with_minor(bytes, 5), Path::new("m")).unwrap_err();
    assert!(
        matches!(&e, FormatError::UnknownStage { stage, .. } if stage.contains("kind 12")),
        "{e}"
    );
}

/// A v1.6 folder (never rewritten: the current version is 1.8).
fn bless_or_read_v1_6_mih() -> PathBuf {
    g16m::dir()
}

#[test]
fn v1_6_mih_values_change_only_the_minor_version() {
    let dir = bless_or_read_v1_6_mih();
    for (name, bytes) in g16m::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        same_but_added_sections(&name, &bytes, &on_disk, 6, &[]);
        assert!(
            with_minor(bytes, 6) == on_disk,
            "{name}: this build's bytes differ from 1.6 beyond the minor version"
        );
    }
}

fn v1_6_mih_path() -> PathBuf {
    bless_or_read_v1_6_mih().join(golden::name("seg", g16m::SEG_ID, "seg"))
}

#[test]
fn v1_6_golden_mih_segment_reads_with_its_tables() {
    use codedb::format::mih_tables::substring;
    use codedb::internals::mih_search;
    use codedb::kernels::{CodeRows, ScanOptions, hamming_topk_batch};
    let r = SegmentReader::open(&v1_6_mih_path(), OpenOptions::default()).unwrap();
    assert_eq!(r.container().version(), (1, 6));
    assert_eq!(r.rows(), g16m::ROWS);
    for row in 0..g16m::ROWS {
        assert_eq!(r.ids()[row], g16m::id(row));
        assert_eq!(r.code(row).unwrap(), &g16m::code(row)[..]);
    }
    let t = r
        .mih_tables()
        .unwrap()
        .expect("the golden segment has tables");
    assert_eq!(t.shape(), g16m::shape());
    assert_eq!((t.shape().m, t.shape().bits), (8, 64));
    // Every bucket holds exactly the rows of its substring value, in row order.
    for j in 0..t.shape().m {
        let (s, l) = t.shape().sub(j);
        for v in 0..1u32 << l {
            let want: Vec<u32> = (0..g16m::ROWS as u32)
                .filter(|&row| substring(&g16m::code(row as usize), s, l) == v)
                .collect();
            assert_eq!(t.bucket(j, v), &want[..], "table {j} value {v}");
        }
    }
    r.check_mih().unwrap();
    // Searched through the tables = the linear scan, ties by id included.
    let rows = CodeRows::new(r.codes(), 8, r.ids(), None).unwrap();
    for qr in [0usize, 1, 2, 150, 299] {
        let q = g16m::code(qr);
        for k in [1, 5, 40, 301] {
            let linear = hamming_topk_batch(&rows, &q, k, ScanOptions::default()).unwrap();
            let mih = mih_search(&t, r.codes(), r.ids(), None, &q, k).unwrap();
            assert_eq!(mih, linear[0], "query row {qr}, k {k}");
        }
    }
}

/// The golden segment rebuilt with its `mih` section replaced by `with` (or kept), flagged
/// REQUIRED when `required`, the header saying 1.`minor`.
fn v1_6_mih_segment_with(with: Option<&[u8]>, required: bool, minor: u8) -> Vec<u8> {
    let path = v1_6_mih_path();
    let r = SegmentReader::open(&path, OpenOptions::default()).unwrap();
    let c = r.container();
    let mut w =
        ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, &path).unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        let mih = e.kind == section_kind::SEG_MIH;
        let bytes = match with {
            Some(b) if mih => b,
            _ => c.stored(i),
        };
        w.section(e.kind, e.required() || (mih && required), bytes)
            .unwrap();
    }
    with_minor(w.finish().unwrap(), minor)
}

#[test]
fn mih_tables_are_optional_and_a_1_5_file_reads_without_them() {
    let p = Path::new("mih.seg");
    let same = v1_6_mih_segment_with(None, false, 6);
    assert!(same == std::fs::read(v1_6_mih_path()).unwrap());
    // A 1.5 reader skips the optional section: labelled 1.5, this build does the same.
    let old = SegmentReader::from_bytes(&v1_6_mih_segment_with(None, false, 5), p).unwrap();
    assert!(old.mih_tables().unwrap().is_none());
    assert_eq!(
        old.codes(),
        SegmentReader::from_bytes(&same, p).unwrap().codes()
    );
    // Marked REQUIRED in a file that says 1.5, it is a section such a reader does not know.
    let e = SegmentReader::from_bytes(&v1_6_mih_segment_with(None, true, 5), p).unwrap_err();
    assert!(
        matches!(e, FormatError::UnknownRequiredSection { ref section, .. } if section == "section kind 10"),
        "{e}"
    );
}

#[test]
fn malformed_mih_tables_are_refused_naming_the_section() {
    let p = Path::new("mih.seg");
    let r = SegmentReader::open(&v1_6_mih_path(), OpenOptions::default()).unwrap();
    let i = r
        .container()
        .find_one(section_kind::SEG_MIH)
        .unwrap()
        .unwrap();
    let good = r.container().stored(i).to_vec();
    let u32_at = |b: &mut Vec<u8>, o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_le_bytes());
    let offsets0 = 32; // table 0's offsets follow the 32-byte header
    let rows0 = 32 + 8 * 257 * 4; // table 0's rows follow the 8 offset arrays
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("substrings", {
            let mut b = good.clone();
            u32_at(&mut b, 0, 2); // 2 substrings of 32 bits: longer than 24
            b
        }),
        ("rows", {
            let mut b = good.clone();
            b[8] ^= 1; // 301 rows
            b
        }),
        ("reserved", {
            let mut b = good.clone();
            b[20] = 1;
            b
        }),
        ("offsets", {
            let mut b = good.clone();
            u32_at(&mut b, offsets0 + 4 * 3, 299); // offsets decrease after value 3
            b
        }),
        ("row", {
            let mut b = good.clone();
            u32_at(&mut b, rows0, 300); // a row past the segment
            b
        }),
        ("bucket", {
            let mut b = good.clone();
            // Swap two rows of different buckets: every row still once, in the wrong bucket.
            let (x, y) = (rows0, rows0 + 4 * 299);
            let (bx, by) = (b[x..x + 4].to_vec(), b[y..y + 4].to_vec());
            b[x..x + 4].copy_from_slice(&by);
            b[y..y + 4].copy_from_slice(&bx);
            b
        }),
        ("length", good[..good.len() - 4].to_vec()),
    ];
    for (what, bytes) in cases {
        let file = v1_6_mih_segment_with(Some(&bytes), false, 6);
        // A full open checks everything; the error names the file and the section.
        let e = SegmentReader::from_bytes(&file, p).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e, FormatError::Corrupt { ref section, .. } if section == "mih"),
            "{what}: {msg}"
        );
        assert!(msg.contains("mih.seg"), "{what}: {msg}");
    }
    // The tables of a segment of PQ codes.
    let c = r.container();
    let mut w = ContainerWriter::new(Vec::new(), FileKind::Segment, c.header().file_id, p).unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        let mut bytes = c.stored(i).to_vec();
        if e.kind == section_kind::META {
            bytes[12] = CodeKind::Pq8 as u8;
        }
        w.section(e.kind, e.required(), &bytes).unwrap();
    }
    let e = SegmentReader::from_bytes(&w.finish().unwrap(), p).unwrap_err();
    assert!(
        matches!(e, FormatError::Corrupt { ref section, .. } if section == "mih"),
        "{e}"
    );
}

/// The v1.7 folder (never rewritten: the current version is 1.8).
fn bless_or_read_v1_7() -> PathBuf {
    g17::dir()
}

#[test]
fn v1_7_values_change_only_the_minor_version_and_add_the_attribute_indexes() {
    // Format 1.8 changed no 1.7 byte: re-written by this build, the segment gains its stored
    // tag postings and zone maps (sections 12, 13) and the log and manifest differ only in
    // their minor version (and header CRC).
    let dir = bless_or_read_v1_7();
    for (name, bytes) in g17::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        if name.starts_with("seg-") {
            let added = [
                section_kind::SEG_ATTRIBUTE_POSTINGS,
                section_kind::SEG_ATTRIBUTE_ZONES,
            ];
            same_but_added_sections(&name, &bytes, &on_disk, 7, &added);
        } else {
            assert!(
                with_minor(bytes, 7) == on_disk,
                "{name}: this build's bytes differ from 1.7 beyond the minor version"
            );
        }
    }
}

/// Every value of `a`'s columns equals `b`'s (NaN equal to NaN).
fn same_attributes(a: &codedb::Attributes, b: &codedb::Attributes) {
    assert_eq!(a.rows(), b.rows());
    assert_eq!(a.schema().columns(), b.schema().columns());
    for c in 0..a.schema().len() {
        for r in 0..a.rows() {
            assert_eq!(
                a.column(c).unwrap().value(r),
                b.column(c).unwrap().value(r),
                "column {c} row {r}"
            );
        }
    }
}

#[test]
fn v1_7_golden_attribute_columns_read_with_their_values() {
    let dir = bless_or_read_v1_7();
    let seg_path = dir.join(golden::name("seg", g17::SEG_ID, "seg"));
    let seg = std::fs::read(&seg_path).unwrap();
    let r = SegmentReader::from_bytes(&seg, &seg_path).unwrap();
    same_attributes(
        r.attributes().unwrap().unwrap(),
        &g17::attributes(g17::ROWS),
    );
    // No stored indexes in 1.7: built in memory, the same as this build stores.
    let built = r.attribute_index().unwrap().unwrap();
    assert_eq!(built.source(), IndexSource::Built);
    assert_eq!(r.attribute_index_source(), Some(IndexSource::Built));
    let fresh = g17::segment();
    let stored = SegmentReader::from_bytes(&fresh, Path::new("new")).unwrap();
    let stored = stored.attribute_index().unwrap().unwrap();
    assert_eq!(stored.source(), IndexSource::Stored);
    assert_eq!(stored.first_difference(built), None);
    let m = Manifest::from_bytes(
        &std::fs::read(dir.join("v00000000000000000001.manifest")).unwrap(),
        Path::new("m"),
    )
    .unwrap();
    assert_eq!(m.attributes, g17::schema());
    let log_path = dir.join(golden::name("log", g17::LOG_ID, "log"));
    let log = append_log::read_log(&std::fs::read(&log_path).unwrap(), &log_path, None).unwrap();
    assert_eq!(log.batches.len(), 1);
    same_attributes(
        log.batches[0].attributes.as_ref().unwrap(),
        &g17::attributes(3),
    );
    // The same files labelled 1.6 are refused: kind 11 and 69 are unknown required sections
    // there.
    for (what, bytes) in [
        ("segment", with_minor(seg.clone(), 6)),
        (
            "manifest",
            with_minor(g17::manifest().to_bytes().unwrap(), 6),
        ),
    ] {
        let e = if what == "segment" {
            SegmentReader::from_bytes(&bytes, Path::new("s")).map(|_| ())
        } else {
            Manifest::from_bytes(&bytes, Path::new("m")).map(|_| ())
        };
        assert!(
            matches!(e, Err(FormatError::UnknownRequiredSection { .. })),
            "{what}: {e:?}"
        );
    }
    // Every flipped byte of the section is refused, naming it.
    let c = codedb::format::Container::from_slice(&seg, &seg_path, None).unwrap();
    let e = *c
        .entries()
        .iter()
        .find(|e| e.kind == section_kind::SEG_ATTRIBUTES)
        .unwrap();
    for i in e.offset..e.offset + e.stored_len {
        let mut bad = seg.clone();
        bad[i as usize] ^= 0x01;
        let err = SegmentReader::from_bytes(&bad, &seg_path).unwrap_err();
        assert!(err.to_string().contains("attributes"), "{err}");
    }
}

/// The current version's folder (v1.8), written first when `CODEDB_BLESS` is set.
fn bless_or_read_v1_8() -> PathBuf {
    static BLESS: std::sync::Once = std::sync::Once::new();
    let dir = g18::dir();
    BLESS.call_once(|| {
        if std::env::var_os("CODEDB_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            for (name, bytes) in g18::files() {
                std::fs::write(dir.join(name), bytes).unwrap();
            }
        }
    });
    dir
}

#[test]
fn current_writer_reproduces_v1_8_bytes() {
    // The writer is deterministic: the same values give the same bytes. If this fails, the
    // format changed: bump the version, keep format/golden/v1.8 and add a new folder.
    let dir = bless_or_read_v1_8();
    for (name, bytes) in g18::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        assert!(
            on_disk == bytes,
            "{name} differs from what this build writes"
        );
    }
}

fn v1_8_segment() -> (PathBuf, Vec<u8>) {
    let path = bless_or_read_v1_8().join(golden::name("seg", g18::SEG_ID, "seg"));
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

/// The entry of section `kind` in segment bytes `seg`.
fn entry_of(seg: &[u8], kind: u32) -> codedb::format::SectionEntry {
    let c = codedb::format::Container::from_slice(seg, Path::new("s"), None).unwrap();
    *c.entries().iter().find(|e| e.kind == kind).unwrap()
}

#[test]
fn v1_8_golden_segment_reads_its_stored_postings_and_zones() {
    let (path, seg) = v1_8_segment();
    let r = SegmentReader::from_bytes(&seg, &path).unwrap();
    let a = r.attributes().unwrap().unwrap();
    same_attributes(a, &g18::attributes());
    assert_eq!(r.attribute_index_source(), Some(IndexSource::Stored));
    let ix = r.attribute_index().unwrap().unwrap();
    assert_eq!(ix.source(), IndexSource::Stored);
    // The values, from the generator's formulas.
    let Some(ColumnIndex::Zones(year)) = ix.column(0) else {
        panic!("year has no zones")
    };
    let bound = |r: usize| 1990 + (r / 300) as i64;
    assert_eq!(
        year,
        &vec![
            (bound(0), bound(4095)),
            (bound(4096), bound(8191)),
            (bound(8192), bound(8194))
        ]
    );
    let Some(ColumnIndex::FloatZones { zones, nan }) = ix.column(1) else {
        panic!("score has no float zones")
    };
    assert_eq!(nan, &vec![0b111]);
    assert_eq!(zones[0], (g18::score_of(1), g18::score_of(4095)));
    assert_eq!(zones[1], (g18::score_of(4096), g18::score_of(8191)));
    assert_eq!(zones[2], (f64::INFINITY, f64::NEG_INFINITY));
    assert_eq!(ix.column(2), Some(&ColumnIndex::None));
    let Some(codedb::ColumnData::Tags { dict, .. }) = a.column(3) else {
        panic!("no tags")
    };
    let code = |t: &str| dict.iter().position(|d| d == t).unwrap() as u32;
    let tags = ix.column(3).unwrap();
    assert_eq!(tags.posting(code("rare")), &[5, 4100, 8194]);
    let ete: Vec<u32> = (0..g18::ROWS as u32).filter(|r| r % 1000 == 0).collect();
    assert_eq!(tags.posting(code("été")), ete.as_slice());
    let t3: Vec<u32> = (0..g18::ROWS as u32)
        .filter(|&r| r % 7 != 0 && r % 5 == 3)
        .collect();
    assert_eq!(tags.posting(code("t3")), t3.as_slice());
    // Equal to the indexes built from the columns (what a 1.7 segment uses), and verify agrees.
    assert_eq!(ix.first_difference(&AttributeIndex::build(a)), None);
    r.check_attribute_index().unwrap();
}

#[test]
fn v1_8_golden_segment_labelled_1_7_builds_the_same_indexes() {
    let (_, seg) = v1_8_segment();
    // A 1.7 reader skips the optional sections and builds the indexes from the columns.
    let old = with_minor(seg.clone(), 7);
    let r = SegmentReader::from_bytes(&old, Path::new("old")).unwrap();
    assert_eq!(r.attribute_index_source(), Some(IndexSource::Built));
    let built = r.attribute_index().unwrap().unwrap();
    let new = SegmentReader::from_bytes(&seg, Path::new("new")).unwrap();
    assert_eq!(
        new.attribute_index()
            .unwrap()
            .unwrap()
            .first_difference(built),
        None
    );
    // Marked REQUIRED in a file that says 1.7, a section is refused as unknown there.
    for kind in [
        section_kind::SEG_ATTRIBUTE_POSTINGS,
        section_kind::SEG_ATTRIBUTE_ZONES,
    ] {
        let bytes = rewrite_sections(&seg, 7, |k, _| (k == kind).then_some((true, None)));
        let e = SegmentReader::from_bytes(&bytes, Path::new("s")).unwrap_err();
        assert!(
            matches!(e, FormatError::UnknownRequiredSection { ref section, .. }
                if *section == format!("section kind {kind}")),
            "{e}"
        );
    }
}

/// `seg` rewritten with minor version `minor`: `change(kind, bytes)` gives a section's
/// (required, new bytes) to change it, `None` to keep it.
fn rewrite_sections(
    seg: &[u8],
    minor: u8,
    change: impl Fn(u32, &[u8]) -> Option<(bool, Option<Vec<u8>>)>,
) -> Vec<u8> {
    let c = codedb::format::Container::from_slice(seg, Path::new("s"), None).unwrap();
    let mut w = ContainerWriter::new(
        Vec::new(),
        FileKind::Segment,
        c.header().file_id,
        Path::new("s"),
    )
    .unwrap();
    for (i, e) in c.entries().iter().enumerate() {
        let (required, bytes) = match change(e.kind, c.stored(i)) {
            Some((req, b)) => (req, b.unwrap_or_else(|| c.stored(i).to_vec())),
            None => (e.required(), c.stored(i).to_vec()),
        };
        w.section(e.kind, required, &bytes).unwrap();
    }
    with_minor(w.finish().unwrap(), minor)
}

#[test]
fn damaged_stored_indexes_are_refused_naming_the_section() {
    let (path, seg) = v1_8_segment();
    for (kind, name) in [
        (section_kind::SEG_ATTRIBUTE_POSTINGS, "attribute_postings"),
        (section_kind::SEG_ATTRIBUTE_ZONES, "attribute_zones"),
    ] {
        let e = entry_of(&seg, kind);
        // Flipped bits (every 61st byte of the section, and its first and last): refused on
        // open with every checksum checked, and on first touch when opened without.
        let step = 61.min(e.stored_len.max(1));
        let mut at: Vec<u64> = (e.offset..e.offset + e.stored_len)
            .step_by(step as usize)
            .collect();
        at.push(e.offset + e.stored_len - 1);
        for i in at {
            let mut bad = seg.clone();
            bad[i as usize] ^= 0x10;
            let err = SegmentReader::from_bytes(&bad, &path).unwrap_err();
            assert!(
                matches!(err, FormatError::ChecksumMismatch { ref section, .. } if section == name),
                "{err}"
            );
            let c = codedb::format::Container::from_slice(&bad, &path, None).unwrap();
            let r = SegmentReader::from_container(c, codedb::format::ChecksumPolicy::SkipColumns)
                .unwrap();
            for _ in 0..2 {
                // Remembered: the second touch fails the same way.
                let err = r.attribute_index().unwrap_err();
                assert!(
                    matches!(err, FormatError::ChecksumMismatch { ref section, ref path }
                        if section == name && path.ends_with(path.file_name().unwrap())),
                    "{err}"
                );
            }
        }
    }
}

#[test]
fn malformed_stored_indexes_are_refused_naming_the_section() {
    let (_, seg) = v1_8_segment();
    let postings = {
        let c = codedb::format::Container::from_slice(&seg, Path::new("s"), None).unwrap();
        let i = c
            .entries()
            .iter()
            .position(|e| e.kind == section_kind::SEG_ATTRIBUTE_POSTINGS)
            .unwrap();
        c.stored(i).to_vec()
    };
    let zones = {
        let c = codedb::format::Container::from_slice(&seg, Path::new("s"), None).unwrap();
        let i = c
            .entries()
            .iter()
            .position(|e| e.kind == section_kind::SEG_ATTRIBUTE_ZONES)
            .unwrap();
        c.stored(i).to_vec()
    };
    let put = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    // Postings: n u32 | 0 u32 | column u32 | 0 u32 | d u64 | P u64 | starts | rows.
    let d = u64::from_le_bytes(postings[16..24].try_into().unwrap()) as usize;
    let starts_at = 32;
    let rows_at = starts_at + (4 * (d + 1)).next_multiple_of(8);
    let mut cases: Vec<(u32, Vec<u8>, &str)> = Vec::new();
    let mut b = postings.clone();
    put(&mut b, 0, &2u32.to_le_bytes());
    cases.push((
        section_kind::SEG_ATTRIBUTE_POSTINGS,
        b,
        "columns of postings",
    ));
    let mut b = postings.clone();
    put(&mut b, 8, &2u32.to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_POSTINGS, b, "comes"));
    let mut b = postings.clone();
    put(&mut b, 16, &(d as u64 + 1).to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_POSTINGS, b, "the column has"));
    let mut b = postings.clone();
    put(&mut b, starts_at, &1u32.to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_POSTINGS, b, "do not tile"));
    let mut b = postings.clone();
    put(&mut b, rows_at, &u32::MAX.to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_POSTINGS, b, "not ascending"));
    let mut b = postings.clone();
    b.extend_from_slice(&[0; 8]);
    cases.push((section_kind::SEG_ATTRIBUTE_POSTINGS, b, "trailing"));
    let mut b = postings.clone();
    b.truncate(b.len() - 8);
    cases.push((section_kind::SEG_ATTRIBUTE_POSTINGS, b, "needs"));
    // Zones: 4096 u32 | n u32 | column u32 | type u8 | 0 ×3 | z u64 | (lo, hi) × z | …
    let mut b = zones.clone();
    put(&mut b, 0, &1024u32.to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_ZONES, b, "zones of 1024 rows"));
    let mut b = zones.clone();
    put(&mut b, 12, &[2]);
    cases.push((section_kind::SEG_ATTRIBUTE_ZONES, b, "comes"));
    let mut b = zones.clone();
    put(&mut b, 13, &[1]);
    cases.push((section_kind::SEG_ATTRIBUTE_ZONES, b, "reserved"));
    let mut b = zones.clone();
    put(&mut b, 16, &4u64.to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_ZONES, b, "zones for"));
    let mut b = zones.clone();
    put(&mut b, 24, &i64::MAX.to_le_bytes());
    cases.push((section_kind::SEG_ATTRIBUTE_ZONES, b, "has bounds"));
    for (kind, bytes, says) in cases {
        let name = section_kind::name(FileKind::Segment, kind).unwrap();
        let bad = rewrite_sections(&seg, 8, |k, _| {
            (k == kind).then(|| (false, Some(bytes.clone())))
        });
        let c = codedb::format::Container::from_slice(&bad, Path::new("s"), None).unwrap();
        let r =
            SegmentReader::from_container(c, codedb::format::ChecksumPolicy::SkipColumns).unwrap();
        let err = r.attribute_index().unwrap_err();
        assert!(
            matches!(err, FormatError::Corrupt { ref section, .. }
                | FormatError::Truncated { ref section, .. } if section == name)
                && err.to_string().contains(says),
            "{says}: {err}"
        );
    }
    // Well-formed but not the column's: found by verify's comparison, naming the column.
    let mut b = zones.clone();
    put(&mut b, 24, &1000i64.to_le_bytes());
    let bad = rewrite_sections(&seg, 8, |k, _| {
        (k == section_kind::SEG_ATTRIBUTE_ZONES).then(|| (false, Some(b.clone())))
    });
    let r = SegmentReader::from_bytes(&bad, Path::new("s")).unwrap();
    let err = r.check_attribute_index().unwrap_err();
    assert!(
        matches!(err, FormatError::Corrupt { ref section, .. } if section == "attribute_zones")
            && err.to_string().contains("column year"),
        "{err}"
    );
}
