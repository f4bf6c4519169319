//! Golden files written by earlier (and the current) format versions must keep being read with
//! exactly the values they were written with. `CODEDB_BLESS=1 cargo test --test
//! backward_compatibility` writes the current version's set (do that only for a new version,
//! into a new folder).

mod common;

use codedb::format::{
    ClassTable, DeletionBitmap, FormatError, Manifest, ModelFile, OpenOptions, SegmentData,
    SegmentReader,
};
use common::golden;

fn bless_or_read() -> std::path::PathBuf {
    static BLESS: std::sync::Once = std::sync::Once::new();
    let dir = golden::dir();
    BLESS.call_once(|| {
        if std::env::var_os("CODEDB_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            for (name, bytes) in golden::files() {
                std::fs::write(dir.join(name), bytes).unwrap();
            }
        }
    });
    dir
}

#[test]
fn v1_0_golden_files_read_with_their_values() {
    let dir = bless_or_read();
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

#[test]
fn current_writer_reproduces_v1_0_bytes() {
    // The writer is deterministic: the same values give the same bytes. If this fails, the
    // format changed: bump the version, keep format/golden/v1.0 and add a new folder.
    let dir = bless_or_read();
    for (name, bytes) in golden::files() {
        let on_disk = std::fs::read(dir.join(&name)).unwrap();
        assert!(
            on_disk == bytes,
            "{name} differs from what this build writes"
        );
    }
}

#[test]
fn unknown_major_version_is_refused_with_a_clear_error() {
    let dir = bless_or_read();
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
