//! Damaged manifests at the command line: the warning every command that reads an index prints
//! when it fell back to an older version, the refusal writers give, and `codedb recover`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use codedb::storage::{Config, Index, SkippedManifest, Snapshot};

use crate::out::{errln, outln};

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

pub fn recover(dir: &Path, to_version: u64, json: bool) -> Result<ExitCode> {
    let index = Index::recover(dir, to_version, Config::default())?;
    let report = index.recovery();
    let Some(record) = &report.recovered else {
        anyhow::bail!("{}: internal: recovery left no record", dir.display());
    };
    if json {
        let mut v = serde_json::to_value(record)?;
        if let Some(o) = v.as_object_mut() {
            o.insert("version".into(), index.version().into());
        }
        outln!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(ExitCode::SUCCESS);
    }
    for d in &record.dropped {
        outln!(
            "set aside manifest version {} ({}): {}",
            d.version,
            d.moved_to,
            d.error
        );
    }
    match record.published_version {
        Some(v) => outln!(
            "kept version {} as version {v}; the index is writable again (record in {}/recovered/)",
            record.kept_version,
            dir.display()
        ),
        None => outln!(
            "kept version {}; garbage collection works again (record in {}/recovered/)",
            record.kept_version,
            dir.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}
