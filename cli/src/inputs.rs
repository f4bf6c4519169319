//! What a command reads before any work starts, each in one place: the index it opens (for
//! reading, with the warning every command that reads an index prints when it fell back to an
//! older version because newer manifests do not read; for writing, refused at once when it fell
//! back), and the data files (descriptors, labels, ids, attributes in their format, the list
//! choice), read together for the commands that add rows ([`rows`]). Every error names the file,
//! and a descriptor file whose width does not fit names the index or model it must fit.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use codedb::admin::{SkippedManifest, fell_back_warning};
use codedb::{Attributes, Config, Index, ListAssignment, Schema, Snapshot};
use codedb_cli::demo_tour::labels_u32;
use codedb_cli::io::attributes_input::{AttributesFormat, read_attributes};
use ndarray::Array2;

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

/// The options naming the files of the rows a command adds, flattened into `build` and `add`
/// so that each is declared and explained once; [`rows`] reads them. The help lines are
/// `build`'s; `add` words four of them for an index that exists (`#[command(mut_arg)]`).
#[derive(Args)]
pub struct RowFileArgs {
    /// Descriptors, one row per image, in the model's input dimension.
    #[arg(long)]
    pub data: PathBuf,
    /// Class labels (.npy int32/int64), one per row; also creates the class table.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Row ids (.npy integers), one per row (default: 0, 1, 2, …).
    #[arg(long)]
    pub ids: Option<PathBuf>,
    /// Inverted-list id of each row: its label, or its nearest class mean.
    #[arg(long, value_parser = ["label", "nearest"])]
    pub lists: Option<String>,
    /// Attribute columns of the rows, in row order: JSON lines, Parquet, Arrow IPC, or a
    /// directory of .npy files (one per column), by extension.
    #[arg(long, value_name = "F")]
    pub attributes: Option<PathBuf>,
    /// The format of --attributes when its extension does not say it (default: .parquet/.pq
    /// Parquet, .arrow/.feather/.ipc Arrow IPC, a directory .npy columns, else JSON lines).
    #[arg(long, value_name = "FORMAT", requires = "attributes",
          value_parser = ["jsonl", "parquet", "arrow", "npy"])]
    pub attributes_format: Option<String>,
}

/// The rows a command adds, read and checked: what [`rows`] returns.
pub struct Rows {
    /// The descriptors, as wide as the model takes.
    pub x: Array2<f32>,
    /// One class id per row.
    pub labels: Option<Vec<u32>>,
    /// One id per row.
    pub ids: Option<Vec<u64>>,
    /// How the rows get their inverted lists.
    pub lists: Option<ListAssignment>,
    /// The rows' attribute columns and the schema they were fitted to (or inferred).
    pub attributes: Option<(Attributes, Schema)>,
}

/// Reads every file of `files`, in the order a user fixes them: the list choice, the
/// descriptors (`dim` columns, to fit `whom`: "the model of index DIR", "model FILE"), labels,
/// ids, then the attributes, one value per descriptor row, fitted to `schema` (an index's) or
/// inferring one when `None`.
pub fn rows(files: &RowFileArgs, dim: usize, whom: &str, schema: Option<&Schema>) -> Result<Rows> {
    let lists = lists(files.lists.as_deref())?;
    let x = vectors_for("--data", &files.data, dim, whom)?;
    let labels = labels(files.labels.as_deref())?;
    let ids = ids(files.ids.as_deref())?;
    let attributes = match files.attributes.as_deref() {
        None => None,
        Some(path) => Some(read_attributes(
            "--attributes",
            path,
            // clap has checked the name; `None`: by the file's extension.
            files
                .attributes_format
                .as_deref()
                .and_then(AttributesFormat::parse),
            x.nrows(),
            schema,
        )?),
    };
    Ok(Rows {
        x,
        labels,
        ids,
        lists,
        attributes,
    })
}

/// Descriptors from `path` (given as `flag`), which must have `dim` columns to fit `whom`
/// ("the model of index DIR", "model FILE").
pub fn vectors_for(flag: &str, path: &Path, dim: usize, whom: &str) -> Result<Array2<f32>> {
    let x = codedb_cli::io::load_vectors(path)?;
    if x.ncols() != dim {
        bail!(
            "{flag} {}: {} columns, but {whom} takes {dim}-D vectors",
            path.display(),
            x.ncols()
        );
    }
    Ok(x)
}

/// "the model of index DIR", for [`vectors_for`].
pub fn index_model(dir: &Path) -> String {
    format!("the model of index {}", dir.display())
}

/// Class labels from `path` as u32 class ids.
pub fn labels(path: Option<&Path>) -> Result<Option<Vec<u32>>> {
    path.map(|p| -> Result<Vec<u32>> {
        let l = codedb_cli::io::load_labels(p)?;
        labels_u32(&l).with_context(|| format!("{}", p.display()))
    })
    .transpose()
}

/// Row ids from `path`.
pub fn ids(path: Option<&Path>) -> Result<Option<Vec<u64>>> {
    Ok(path.map(codedb_cli::io::read_ids).transpose()?)
}

/// The `--lists` choice: `label` or `nearest`.
pub fn lists(name: Option<&str>) -> Result<Option<ListAssignment>> {
    name.map(|l| {
        ListAssignment::parse(l).with_context(|| format!("--lists {l}: expected label or nearest"))
    })
    .transpose()
}
