//! `codedb build`: a new index from a model file and descriptors (`codedb::Index::build`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use codedb::Index;
use codedb::format::{ModelFile, VectorDType};
use codedb::model::Model;
use codedb::{BuildOptions, Schema};

use crate::args::usage;
use crate::inputs;
use crate::out::outln;
use crate::progress;

/// `build --help` text after the options.
pub const BUILD_HELP: &str = "\
Examples:
  codedb build my-index --model itq64.model --data X.npy --labels labels.npy
  codedb build my-index --model pq.model --data X.npy --store-vectors f16
  codedb build my-index --model itq64.model --data X.npy --labels L.npy \\
      --lists label

--labels stores each row's class label and creates the class table from them in the same commit \
(class id = the label, name = the label in decimal, with the count and sum of its rows), so \
codedb classify and search --nprobe work right away. --lists label files each row under its \
label's inverted list; --lists nearest under the class whose mean is nearest (needs --labels \
here, since the class table comes from them). Rows grouped by list let search --classes and \
--nprobe scan only some lists. --store-vectors keeps the input vectors (for --rerank and the \
exact modes).

--attributes F stores attribute columns with the rows, for search --where and --with, one value \
per row in row order: JSON lines (one object per row, {\"year\": 2010, \"tags\": [\"cat\"]}), \
Parquet (.parquet), Arrow IPC file or stream (.arrow, .feather, .ipc), or a directory of .npy \
files, one per column, named after it (year.npy; int, float, bool and unicode arrays); \
--attributes-format names the format when the extension does not. A column absent from a row, or \
a null, takes its default. Arrow types: integers -> int, floats -> float, Boolean -> bool, \
strings and dictionaries of strings -> string, lists of strings -> tags, Timestamp (any unit, \
stored as microseconds) and Date -> timestamp. --schema year:int,taken:timestamp,licence:string,tags:tags \
fixes the index's columns (types int, float, timestamp, bool, string, tags; defaults 0, false, \
the empty string, no tags); without it the columns and their types are inferred from the file's \
first value of each (integer, number, boolean, string, array of strings) and printed. A value \
that does not fit its column (1.5 in an int column, say) fails naming the line and the column, \
before anything is written.

A build publishes its first version only with every row: killed at any instant, it leaves no \
index (run the same command again) or the whole one.";

#[derive(Args)]
/// Create an index from a model file and descriptors (encoded and committed as version 2).
#[command(after_help = BUILD_HELP)]
pub struct BuildArgs {
    /// The index directory to create (must not hold an index; what a killed build left is replaced).
    pub dir: PathBuf,
    /// The model file (from codedb train) that encodes the rows.
    #[arg(long)]
    pub model: PathBuf,
    /// The row files: descriptors, labels, ids, lists, attributes and their format.
    #[command(flatten)]
    pub files: inputs::RowFileArgs,
    /// Keep every row's input vector (f16 or f32) for --rerank and the exact modes.
    #[arg(long, value_parser = ["f16", "f32"])]
    pub store_vectors: Option<String>,
    /// The index's attribute columns, name:type,… (int, float, timestamp, bool, string, tags);
    /// default: inferred from --attributes.
    #[arg(long, value_name = "SPEC")]
    pub schema: Option<String>,
}

fn load_model(path: &Path) -> Result<Model> {
    let mf = ModelFile::open(path)?;
    Model::from_model_file(&mf).with_context(|| format!("{}", path.display()))
}

pub fn run(a: BuildArgs) -> Result<ExitCode> {
    let store_vectors = match a.store_vectors.as_deref() {
        None => None,
        Some(name) => match VectorDType::parse(name) {
            Some(t) => Some(t),
            None => bail!("--store-vectors {name}: expected f16 or f32"),
        },
    };
    let model = load_model(&a.model)?;
    let schema = match a.schema.as_deref() {
        None => None,
        Some(text) => match Schema::parse(text) {
            Ok(s) => Some(s),
            Err(e) => usage!("--schema {text:?}: {e}"),
        },
    };
    let rows = inputs::rows(
        &a.files,
        model.input_dim(),
        &format!("model {}", a.model.display()),
        schema.as_ref(),
    )?;
    let (attrs, schema) = match rows.attributes {
        None => (None, schema),
        Some((attrs, s)) => (Some(attrs), Some(s)),
    };
    let bar = progress::bar(rows.x.nrows() as u64, "encoding", "rows");
    let index = Index::build(
        &a.dir,
        &model,
        rows.x.view(),
        &BuildOptions {
            ids: rows.ids.as_deref(),
            labels: rows.labels.as_deref(),
            store_vectors,
            lists: rows.lists,
            schema: schema.as_ref(),
            attributes: attrs.as_ref(),
            ..BuildOptions::default()
        },
        &mut |n| bar.set_position(n as u64),
    )
    .with_context(|| format!("building {}", a.dir.display()))?;
    bar.finish_and_clear();
    let snap = index.snapshot();
    let columns: Vec<String> = snap
        .attribute_schema()
        .columns()
        .iter()
        .map(|(n, t)| format!("{n}:{}", t.name()))
        .collect();
    outln!(
        "built {}: version {}, {} rows{}{}",
        a.dir.display(),
        index.version(),
        snap.live_rows(),
        match snap.classes() {
            Some(t) => format!(", {} classes", t.classes.len()),
            None => String::new(),
        },
        if columns.is_empty() {
            String::new()
        } else {
            format!(", attributes {}", columns.join(","))
        }
    );
    Ok(ExitCode::SUCCESS)
}
