//! Names of the files inside an index directory (FORMAT.md §8).
//!
//! ```text
//! DIR/
//!   v00000000000000000007.manifest   one manifest per version (20-digit zero-padded number)
//!   model-<id>.model                 the model (id = 32 hex digits of its file id)
//!   seg-<id>.seg                     immutable segments
//!   del-<id>.del                     deletion bitmaps (copy-on-write, one per commit that deletes)
//!   classes-<id>.cls                 class table and its deltas
//!   log-<id>.log                     the active append log (the only file that grows)
//!   LOCK                             the writer lock (an OS file lock; empty)
//!   *.tmp                            files being written; never read, removed on open and by GC
//!   recovered/                       damaged manifests set aside by a recovery, and its records
//! ```
//! Names carry the file id so two files never share a name, and a file is never rewritten.

use std::path::{Path, PathBuf};

use crate::format::{FileId, FileKind, FormatError};

/// Extension of manifest file names (FORMAT.md §8).
pub const MANIFEST_EXT: &str = "manifest";
/// The lock file a writer holds an exclusive OS lock on (FORMAT.md §11.3).
pub const LOCK_FILE: &str = "LOCK";
/// Suffix of a file still being written (FORMAT.md §11.1).
pub const TMP_SUFFIX: &str = ".tmp";
/// The subdirectory where a recovery sets damaged manifests aside and keeps its records
/// (FORMAT.md §11.7); nothing reads it to open the index.
pub const RECOVERED_DIR: &str = "recovered";

/// `v00000000000000000007.manifest` for version 7.
pub fn manifest_file_name(version: u64) -> String {
    format!("v{version:020}.{MANIFEST_EXT}")
}

/// The version number in a manifest file name.
pub fn parse_manifest_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('v')?.strip_suffix(".manifest")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The file name of a non-manifest file of `kind` with identity `id`.
pub fn data_file_name(kind: FileKind, id: FileId) -> String {
    let (prefix, ext) = match kind {
        FileKind::Segment => ("seg", "seg"),
        FileKind::Model => ("model", "model"),
        FileKind::ClassTable => ("classes", "cls"),
        FileKind::DeletionBitmap => ("del", "del"),
        FileKind::Manifest => ("manifest", MANIFEST_EXT),
        FileKind::AppendLog => ("log", "log"),
    };
    format!("{prefix}-{}.{ext}", id.to_hex())
}

/// The kind of a data file from its name (`seg-<32 hex>.seg` …), or `None` for any other name;
/// garbage collection only ever removes names this recognises.
pub fn parse_data_file_name(name: &str) -> Option<FileKind> {
    let (stem, ext) = name.rsplit_once('.')?;
    let (prefix, hex) = stem.split_once('-')?;
    if hex.len() != 32 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let kind = match (prefix, ext) {
        ("seg", "seg") => FileKind::Segment,
        ("model", "model") => FileKind::Model,
        ("classes", "cls") => FileKind::ClassTable,
        ("del", "del") => FileKind::DeletionBitmap,
        ("log", "log") => FileKind::AppendLog,
        _ => return None,
    };
    Some(kind)
}

/// The temporary name a file is written under before it is renamed to `name`.
pub fn tmp_name(name: &str) -> String {
    format!("{name}{TMP_SUFFIX}")
}

/// All manifests in `dir`, sorted by version (oldest first).
pub fn list_manifests(dir: &Path) -> Result<Vec<(u64, PathBuf)>, FormatError> {
    let io = |source| FormatError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if let Some(v) = entry
            .file_name()
            .to_str()
            .and_then(parse_manifest_file_name)
        {
            out.push((v, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_names_round_trip_and_sort_by_version() {
        for v in [0, 1, 42, u64::MAX] {
            assert_eq!(parse_manifest_file_name(&manifest_file_name(v)), Some(v));
        }
        assert!(manifest_file_name(9) < manifest_file_name(10));
        for bad in [
            "v1.manifest",
            "x00000000000000000001.manifest",
            "v0000000000000000000a.manifest",
        ] {
            assert_eq!(parse_manifest_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn data_file_names_round_trip_and_nothing_else_parses() {
        let id = FileId::from_u128(0xabc);
        for kind in FileKind::ALL {
            if kind == FileKind::Manifest {
                continue;
            }
            assert_eq!(parse_data_file_name(&data_file_name(kind, id)), Some(kind));
        }
        for bad in [
            "LOCK",
            "seg-00000000000000000000000000000abc.seg.tmp",
            "seg-0000000000000000000000000000abc.seg",
            "seg-00000000000000000000000000000ABC.seg",
            "seg-00000000000000000000000000000abc.del",
            "notes.txt",
        ] {
            assert_eq!(parse_data_file_name(bad), None, "{bad}");
        }
    }
}
