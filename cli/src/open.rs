//! Opening an index at the command line: the warning every command that reads an index prints
//! when it fell back to an older version (newer manifests do not read), and the refusal writers
//! give before any work.

use std::path::Path;

use anyhow::Result;
use codedb::admin::{SkippedManifest, fell_back_warning};
use codedb::{Config, Index, Snapshot};

use crate::out::errln;

/// Says on stderr that `dir` is served at `version` because newer manifests do not read (the
/// engine's text, [`fell_back_warning`], which Python's `FallbackWarning` carries too).
pub fn warn_fell_back(dir: &Path, version: u64, skipped: &[SkippedManifest]) {
    for line in fell_back_warning(dir, version, skipped) {
        errln!("codedb: warning: {line}");
    }
}

/// Opens the newest readable version of `dir` for reading, warning when it fell back.
pub fn open_snapshot(dir: &Path) -> Result<Snapshot> {
    let snap = Snapshot::open(dir)?;
    warn_fell_back(dir, snap.version(), snap.skipped_manifests());
    Ok(snap)
}

/// Opens `dir` for writing, refusing at once (before any work) when it fell back.
pub fn open_writer(dir: &Path) -> Result<Index> {
    let index = Index::open(dir, Config::default())?;
    index.check_writable()?;
    Ok(index)
}
