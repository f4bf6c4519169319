//! `codedb versions` and `codedb recover`: the versions of an index, and accepting the loss of
//! those whose manifests do not read.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use codedb::admin::{SkippedManifest, list_versions};
use codedb::{Config, Index};

use crate::args;
use crate::out::{errln, outln};

#[derive(Args)]
/// List the versions (manifests) of an index; a manifest that does not read is listed as
/// DAMAGED with its reason, and the command then exits 1.
#[command(after_help = "Examples:
  codedb versions my-index
  codedb versions my-index --json | jq '.[-1].rows'

Exit codes: 0 every manifest reads, 1 a manifest does not read or DIR is not an index.")]
pub struct VersionsArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Print one object per version (version, file, rows, deleted, segments, …, error) as
    /// JSON; the counts are null for a manifest that does not read.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
/// Accept the loss of versions whose manifests do not read: keep the newest version that
/// reads (named with --to-version), set the damaged manifests aside in DIR/recovered/ with
/// a record of what was dropped, and make the index writable again.
#[command(after_help = "Examples:
  codedb recover my-index --to-version 3
  codedb recover my-index --to-version 3 --json

`codedb versions DIR` shows which version is damaged and which is the newest that reads.
Until this runs, commands that read the index warn that they serve an older version, and every
writer (add, delete, compact, gc, add-class) refuses. Restoring the damaged manifest from a
backup instead needs no recover. Version numbers are never reused: the kept version is
published again under a number above the dropped ones.")]
pub struct RecoverArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The version to keep: the newest one whose manifest reads.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = args::count_u64)]
    pub to_version: u64,
    /// Print the recovery record (kept_version, published_version, dropped, version) as
    /// JSON.
    #[arg(long)]
    pub json: bool,
}

/// Every manifest, a damaged one marked with its reason; exit 1 when any is damaged.
pub fn versions(a: VersionsArgs) -> Result<ExitCode> {
    let VersionsArgs { dir, json } = a;
    let dir = dir.as_path();
    let v = list_versions(dir)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for x in &v {
            match (&x.error, x.rows, x.deleted) {
                (None, Some(rows), Some(deleted)) => outln!(
                    "{:>8}  {}  {rows} rows, {deleted} deleted",
                    x.version,
                    x.file
                ),
                (error, ..) => outln!(
                    "{:>8}  {}  DAMAGED: {}",
                    x.version,
                    x.file,
                    error.as_deref().unwrap_or("does not read")
                ),
            }
        }
    }
    let damaged: Vec<_> = v.iter().filter(|x| x.is_damaged()).collect();
    if damaged.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let readable = v.iter().rev().find(|x| !x.is_damaged()).map(|x| x.version);
    let skipped: Vec<SkippedManifest> = damaged
        .iter()
        .filter(|x| readable.is_none_or(|r| x.version > r))
        .map(|x| SkippedManifest {
            version: x.version,
            file: x.file.clone(),
            error: x.error.clone().unwrap_or_default(),
        })
        .collect();
    match readable {
        Some(r) if !skipped.is_empty() => crate::inputs::warn_fell_back(dir, r, &skipped),
        Some(r) => errln!(
            "codedb: warning: {}: {} older manifest(s) do not read; garbage collection refuses \
             until `codedb recover {} --to-version {r}` sets them aside (or they are restored)",
            dir.display(),
            damaged.len(),
            dir.display()
        ),
        None => errln!("codedb: error: {}: no manifest reads", dir.display()),
    }
    Ok(ExitCode::from(1))
}

pub fn recover(a: RecoverArgs) -> Result<ExitCode> {
    let RecoverArgs {
        dir,
        to_version,
        json,
    } = a;
    let dir = dir.as_path();
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
