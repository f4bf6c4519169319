//! `codedb compact` and `codedb gc`: merge segments, drop deleted rows, remove unreferenced files.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use std::sync::Arc;

use codedb::model::Cancel;
use codedb::{CompactProgress, CompactProgressFn, CompactionPolicy, MergeReason};

use crate::args;
use crate::out::{errln, outln};
use crate::progress;

#[derive(Args)]
/// Seal the active log into a segment (one commit, if it holds rows), then merge segments,
/// drop deleted rows and fold class deltas (one commit). `--json` adds `sealed_log_rows`
/// and `sealed_version` to the compaction report.
#[command(after_help = "Examples:
  codedb compact my-index                        # merge similar-sized segments
  codedb compact my-index --full                 # merge every segment into one
  codedb compact my-index --deleted-threshold 0  # also drop every deleted row
  codedb compact my-index --json

The default (tiered) policy merges at least 4 segments of a similar size, and rewrites a segment
on its own when 20% or more of its rows are deleted (--deleted-threshold); deleted rows of other
segments stay stored, and the output says how many. --json reports each merge with its reason
(tier, deletes, full) and deleted_rows_kept.")]
pub struct CompactArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Merge every segment into one (default: the tiered policy, which merges only runs of
    /// similar-sized segments).
    #[arg(long)]
    pub full: bool,
    /// Rewrite a segment on its own when at least this fraction of its rows is deleted
    /// (0 to 1; 0 = any deleted row).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.2,
          value_parser = args::fraction, allow_negative_numbers = true)]
    pub deleted_threshold: f64,
    /// Print the compaction report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
/// Remove files that no retained version references. Refuses while a manifest does not
/// read (which files it names is unknown): see `codedb recover`.
#[command(after_help = "Examples:
  codedb gc my-index
  codedb gc my-index --json       # {removed, removed_bytes, kept_versions, ...}

Retained: the newest versions and recent ones (see docs/durability.md, \"Retention\").")]
pub struct GcArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Print the report (files removed, bytes, versions kept) as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn compact(a: CompactArgs) -> Result<ExitCode> {
    let CompactArgs {
        dir,
        full,
        deleted_threshold,
        json,
    } = a;
    let dir = dir.as_path();
    let policy = CompactionPolicy {
        full,
        max_deleted_fraction: deleted_threshold,
        ..CompactionPolicy::default()
    };
    let index = crate::inputs::open_writer(dir)?;
    let bar = progress::spinner("compacting");
    let step = std::sync::Mutex::new(String::new());
    let shown = bar.clone();
    let heard: CompactProgressFn = Arc::new(move |p: &CompactProgress| {
        let name = p.step();
        let mut step = step.lock().unwrap_or_else(|e| e.into_inner());
        if *step != name {
            progress::count(&shown, &name, "rows", p.done, p.total);
            *step = name;
        } else {
            shown.set_position(p.done);
        }
    });
    let done = index.compact_sealed_cancellable(&policy, &Cancel::new(), Some(heard))?;
    bar.finish_and_clear();
    let (log_rows, sealed) = (done.sealed_log_rows, done.sealed_version);
    let r = &done.compaction;
    if let Some(e) = &r.gc_error {
        errln!("codedb: warning: the compaction is committed, but garbage collection failed: {e}");
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&done)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(v) = sealed {
        outln!("sealed the active log ({log_rows} rows) into a segment: version {v}");
    }
    for m in &r.merges {
        outln!(
            "merged {} segment(s) ({}): {} rows kept, {} deleted rows dropped",
            m.sources.len(),
            match m.reason {
                MergeReason::Tier => "size tier",
                MergeReason::Deletes => "deleted share at or above the threshold",
                MergeReason::Full => "--full",
            },
            m.rows,
            m.dropped
        );
    }
    match r.version {
        Some(v) => outln!("compacted: version {v}, {} merge(s)", r.merges.len()),
        None => outln!("nothing to compact (version {})", r.based_on),
    }
    if r.deleted_rows_kept > 0 {
        outln!(
            "{} deleted row(s) stay stored: no segment holding them has {}% or more of its rows \
             deleted (--deleted-threshold 0 or --full drops them)",
            r.deleted_rows_kept,
            deleted_threshold * 100.0
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn gc(a: GcArgs) -> Result<ExitCode> {
    let GcArgs { dir, json } = a;
    let dir = dir.as_path();
    let index = crate::inputs::open_writer(dir)?;
    let r = index.gc()?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        outln!(
            "removed {} file(s), {} bytes; kept versions {:?}",
            r.removed.len(),
            r.removed_bytes,
            r.kept_versions
        );
    }
    Ok(ExitCode::SUCCESS)
}
