//! `codedb inspect` and `codedb verify`: what a file or index holds, and whether every byte of
//! it checks out.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use codedb::admin::{ClassReport, Contents, FileReport, IndexReport, StageReport};
use codedb::admin::{VerifyReport, bytes_to_verify, verify_path};
use codedb::admin::{inspect_dir, inspect_file};

use crate::out::outln;
use crate::progress;

#[derive(Args)]
/// Show what a codedb file or index directory holds: kind, version, sections, rows, model
/// stages, classes, manifest versions.
#[command(after_help = "Examples:
  codedb inspect my-index
  codedb inspect my-index/seg-0123….seg          # one file
  codedb inspect my-index --json | jq .rows

Exit codes: 0 success, 1 unreadable file or not an index, 2 usage error.")]
pub struct InspectArgs {
    /// A codedb file (segment, model, class table, deletion bitmap, manifest) or an index
    /// directory.
    pub path: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
/// Read every byte, check every checksum and cross-reference; print each problem with its
/// file and section.
#[command(after_help = "Examples:
  codedb verify my-index
  codedb verify my-index/seg-0123….seg --json

Exit codes: 0 clean, 1 at least one problem found, 2 usage error.")]
pub struct VerifyArgs {
    /// A codedb file or an index directory.
    pub path: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn inspect(a: InspectArgs) -> Result<ExitCode> {
    let InspectArgs { path, json } = a;
    let path = path.as_path();
    if !path.exists() {
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    if path.is_dir() {
        let r = inspect_dir(path)?;
        crate::inputs::warn_fell_back(path, r.version, &r.skipped_manifests);
        if json {
            outln!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print_index(&r);
        }
    } else {
        let r = inspect_file(path)?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print_file(&r, "");
        }
        if r.error.is_some() || r.sections.iter().any(|s| !s.checksum_ok) {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_index(r: &IndexReport) {
    outln!("index      {}", r.dir.display());
    outln!("version    {}", r.version);
    for s in &r.skipped_manifests {
        outln!(
            "skipped    version {} ({}) does not read: writes refused until codedb recover",
            s.version,
            s.file
        );
    }
    for rec in &r.recoveries {
        let dropped: Vec<String> = rec.dropped.iter().map(|d| d.version.to_string()).collect();
        outln!(
            "recovered  kept version {}, dropped damaged version(s) {} (see recovered/)",
            rec.kept_version,
            dropped.join(", ")
        );
    }
    if let Some(l) = &r.shard_layout {
        let partition = match &l.list_shards {
            None => "rows by id".to_string(),
            Some(ls) => format!(
                "rows by inverted list: {} of the {} lists here",
                ls.iter().filter(|&&s| s == l.shard).count(),
                ls.len()
            ),
        };
        outln!(
            "shard      {} of {} (sharded index {}, model {}; {partition})",
            l.shard,
            l.shards,
            l.layout,
            l.model
        );
    }
    outln!("rows       {} live, {} deleted", r.rows, r.deleted);
    outln!("segments   {}", r.segments);
    outln!("classes    {}", r.classes);
    if r.attributes.is_empty() {
        outln!("attributes none");
    } else {
        let cols: Vec<String> = r
            .attributes
            .iter()
            .map(|c| format!("{}:{} (default {})", c.name, c.column_type, c.default))
            .collect();
        outln!("attributes {}", cols.join(", "));
    }
    let m = &r.model;
    match (m.code_kind, m.code_bytes, m.code_bits, m.input_dim) {
        (Some(kind), Some(bytes), Some(bits), Some(dim)) => outln!(
            "model      {} ({dim}-D in, {kind} codes of {bytes} bytes / {bits} bits; stages: {})",
            m.file,
            m.stages.join(" → ")
        ),
        _ => outln!("model      {} (unreadable: run codedb verify)", m.file),
    }
    if let Some(spec) = &m.trained_as {
        outln!("trained as {spec}");
    }
    outln!("bytes      {}", r.bytes);
    outln!("versions:");
    for v in &r.versions {
        outln!(
            "  {:>6}  {}  {} rows, {} deleted, {} segments",
            v.version,
            v.manifest,
            v.rows,
            v.deleted,
            v.segments
        );
    }
    outln!("files:");
    for f in &r.files {
        let name = f.path.file_name().map(|n| n.to_string_lossy().into_owned());
        outln!(
            "  {:<48} {:<16} {:>10} bytes{}",
            name.unwrap_or_default(),
            f.file_kind,
            f.bytes,
            if f.error.is_some() || f.sections.iter().any(|s| !s.checksum_ok) {
                "  PROBLEM (run codedb verify)"
            } else {
                ""
            }
        );
    }
}

fn print_file(r: &FileReport, indent: &str) {
    outln!("{indent}{}", r.path.display());
    outln!(
        "{indent}  kind       {} (format {})",
        r.file_kind,
        r.format_version
    );
    outln!("{indent}  file id    {}", r.file_id);
    outln!("{indent}  size       {} bytes", r.bytes);
    match (&r.contents, &r.log) {
        (Some(c), _) => print_contents(c, indent),
        (None, Some(l)) => {
            outln!(
                "{indent}  codes      {}, {} bytes ({} bits) per row",
                l.code_kind,
                l.code_bytes,
                l.code_bits
            );
            outln!("{indent}  model      {}", l.model_id);
            outln!(
                "{indent}  batches    {} valid, {} rows, {} bytes",
                l.batches,
                l.rows,
                l.valid_bytes
            );
            outln!(
                "{indent}  tail       {} bytes after the last valid batch",
                l.tail_bytes
            );
        }
        (None, None) => outln!(
            "{indent}  ERROR      {}",
            r.error.as_deref().unwrap_or("unknown")
        ),
    }
    outln!("{indent}  sections:");
    outln!(
        "{indent}    {:<18} {:>10} {:>12} {:>12} {:<5} {:<8} checksum",
        "kind",
        "offset",
        "stored",
        "raw",
        "codec",
        "required"
    );
    for s in &r.sections {
        outln!(
            "{indent}    {:<18} {:>10} {:>12} {:>12} {:<5} {:<8} {}",
            s.kind,
            s.offset,
            s.stored_bytes,
            s.raw_bytes,
            s.codec,
            if s.required { "yes" } else { "no" },
            if s.checksum_ok { "ok" } else { "MISMATCH" }
        );
    }
}

fn print_contents(c: &Contents, indent: &str) {
    let p = |k: &str, v: String| outln!("{indent}  {k:<10} {v}");
    match c {
        Contents::Segment {
            rows,
            code_kind,
            code_bytes,
            code_bits,
            model_id,
            min_id,
            max_id,
            labels,
            lists,
            vectors,
            attribute_index,
        } => {
            p("rows", rows.to_string());
            p(
                "codes",
                format!("{code_kind}, {code_bytes} bytes ({code_bits} bits) per row"),
            );
            p("model", model_id.clone());
            p("ids", format!("{min_id} to {max_id}"));
            p("labels", yes_no(*labels));
            p("lists", yes_no(*lists));
            p("vectors", vectors.clone().unwrap_or_else(|| "none".into()));
            if let Some(ix) = attribute_index {
                let cols: Vec<String> = ix
                    .columns
                    .iter()
                    .map(|c| format!("{} {} {} ({} bytes)", c.column, c.index, c.entries, c.bytes))
                    .collect();
                p(
                    "attribute index",
                    format!("{}: {}", ix.source, cols.join(", ")),
                );
            }
        }
        Contents::Model {
            input_dim,
            code_kind,
            code_bytes,
            code_bits,
            stages,
            skipped_stages,
            origin,
        } => {
            p("input", format!("{input_dim}-D"));
            p(
                "codes",
                format!("{code_kind}, {code_bytes} bytes ({code_bits} bits)"),
            );
            if let Some(o) = origin {
                p("trained as", format!("{} (seed {})", o.spec, o.seed));
            }
            print_stages(stages, indent);
            if !skipped_stages.is_empty() {
                p(
                    "skipped",
                    format!("unknown optional stages {skipped_stages:?}"),
                );
            }
        }
        Contents::ClassTable {
            dim,
            delta_of,
            classes,
        } => {
            p("dim", dim.to_string());
            p(
                "type",
                match delta_of {
                    Some(b) => format!("delta of {b}"),
                    None => "base table".into(),
                },
            );
            p("classes", classes.len().to_string());
            print_class_rows(classes, indent);
        }
        Contents::DeletionBitmap {
            segment_id,
            rows,
            deleted,
        } => {
            p("segment", segment_id.clone());
            p("rows", rows.to_string());
            p("deleted", deleted.to_string());
        }
        Contents::Manifest {
            version,
            created_unix_ms,
            next_auto_id,
            model,
            live_rows,
            deleted_rows,
            segments,
            class_files,
            attributes,
        } => {
            if !attributes.is_empty() {
                let cols: Vec<String> = attributes
                    .iter()
                    .map(|c| format!("{}:{} (default {})", c.name, c.column_type, c.default))
                    .collect();
                p("attributes", cols.join(", "));
            }
            p("version", version.to_string());
            p(
                "created",
                format!("{created_unix_ms} ms since the Unix epoch"),
            );
            p("next id", next_auto_id.to_string());
            p("model", model.clone());
            p("rows", format!("{live_rows} live, {deleted_rows} deleted"));
            outln!("{indent}  segments:");
            for s in segments {
                outln!(
                    "{indent}    {}  {} rows, {} deleted{}",
                    s.file,
                    s.rows,
                    s.deleted,
                    s.deletions
                        .as_ref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                );
            }
            p("classes", class_files.join(", "));
        }
    }
}

/// A model's stages, one line each: kind, tensors, and the SPEC step that learned it.
fn print_stages(stages: &[StageReport], indent: &str) {
    outln!("{indent}  stages:");
    for (i, s) in stages.iter().enumerate() {
        let tensors: Vec<String> = s
            .tensors
            .iter()
            .map(|t| format!("{} {}{:?}", t.name, t.dtype, t.shape))
            .collect();
        let step = s
            .step
            .as_ref()
            .map(|st| format!("  (learned by {st})"))
            .unwrap_or_default();
        outln!(
            "{indent}    {i}. {:<10} {}{step}",
            s.kind,
            tensors.join(", ")
        );
    }
}

/// A class table's classes, one line each.
fn print_class_rows(classes: &[ClassReport], indent: &str) {
    for c in classes {
        outln!(
            "{indent}    {:>6}  {:<24} parent {:<8} count {:<10} centroids {}{}",
            c.id,
            codedb_cli::io::tsv_field(&c.name),
            c.parent
                .map(|x| x.to_string())
                .unwrap_or_else(|| "-".into()),
            c.count,
            c.centroids,
            if c.removed > 0 {
                format!("  removed {}", c.removed)
            } else {
                String::new()
            }
        );
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

pub fn verify(a: VerifyArgs) -> Result<ExitCode> {
    let VerifyArgs { path, json } = a;
    let path = path.as_path();
    if !path.exists() {
        anyhow::bail!("{}: no such file or directory", path.display());
    }
    let total = bytes_to_verify(path);
    let bar = progress::bytes(total, "verifying");
    let report: VerifyReport = verify_path(path, &mut |n| bar.inc(n));
    bar.finish_and_clear();
    if json {
        outln!("{}", serde_json::to_string_pretty(&report).context("JSON")?);
    } else {
        for p in &report.problems {
            let by = if p.referenced_by.is_empty() {
                String::new()
            } else {
                format!(" (named by {})", p.referenced_by.join(", "))
            };
            outln!(
                "PROBLEM {} [{}]: {}{by}",
                p.path.display(),
                p.section,
                p.message
            );
        }
        for n in &report.notes {
            outln!("note: {}: {}", n.path.display(), n.message);
        }
        if !report.unreferenced.is_empty() {
            outln!(
                "note: {} file(s) referenced by no manifest (garbage collection removes them): {}",
                report.unreferenced.len(),
                report.unreferenced.join(", ")
            );
        }
        outln!(
            "{}: {} file(s), {} bytes, {} manifest(s) checked, {} problem(s)",
            if report.ok() { "OK" } else { "FAILED" },
            report.files_checked,
            report.bytes_checked,
            report.manifests_checked,
            report.problems.len()
        );
    }
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
