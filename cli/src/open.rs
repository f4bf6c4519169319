//! Opening an index at the command line: the warning every command that reads an index prints
//! when it fell back to an older version (newer manifests do not read), and the refusal writers
//! give before any work.

use std::path::Path;

use anyhow::Result;
use codedb::admin::SkippedManifest;
use codedb::{Config, Index, Snapshot};

use crate::out::errln;

/// Says on stderr that `dir` is served at `version` because newer manifests do not read.
pub fn warn_fell_back(dir: &Path, version: u64, skipped: &[SkippedManifest]) {
    if skipped.is_empty() {
        return;
    }
    let lost: Vec<String> = skipped.iter().map(|s| s.version.to_string()).collect();
    for s in skipped {
        errln!(
            "codedb: warning: {}: manifest version {} ({}) does not read: {}",
            dir.display(),
            s.version,
            s.file,
            s.error
        );
    }
    errln!(
        "codedb: warning: {}: serving version {version}, without the writes of version(s) {}; \
         writers refuse until `codedb recover {} --to-version {version}` accepts the loss (or \
         the damaged file is restored)",
        dir.display(),
        lost.join(", "),
        dir.display()
    );
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
