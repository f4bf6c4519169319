//! `codedb add` and `codedb delete`: rows in and out of an index, one commit each.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use codedb::{AddOptions, ClassStats, StorageError};

use crate::args;
use crate::inputs;
use crate::out::outln;
use crate::progress;

#[derive(Args)]
/// Append descriptors to an index (encoded with its model) and commit; prints the ids of
/// the new rows.
#[command(after_help = "Examples:
  codedb add my-index --data new.npy
  codedb add my-index --data new.npy --ids new_ids.npy --json
  codedb add my-index --data fixed.npy --ids ids.npy --upsert
  codedb add my-index --data new.npy --labels new_labels.npy --lists label

With --labels on an index with a class table, every label must be a class (add new ones with \
codedb add-class first) and the rows' descriptors are added to their classes' means in the same \
commit. An index that stores vectors keeps the new rows' vectors too. A given id that is \
already live is an error unless --upsert, which replaces that row (in the same commit; a \
replaced labelled row leaves its class as in codedb delete, see its --help). \
--json prints {\"added\": n, \"ids\": [...], \"replaced\": r, \"version\": v}.")]
// The row-file options' help, worded for rows added to an index that exists.
#[command(
    mut_arg("data", |a| a.help(
        "Descriptors, one row per image, in the index model's input dimension"
    )),
    mut_arg("labels", |a| a.help("Class labels (.npy int32/int64), one per row")),
    mut_arg("ids", |a| a.help(
        "Row ids (.npy integers), one per row (default: assigned by the index)"
    )),
    mut_arg("attributes", |a| a.help(
        "Attribute columns of the rows, in row order: JSON lines, Parquet, Arrow IPC or a \
         directory of .npy files, as for build (a column absent from a row, or a null, takes its \
         default; an upsert's row replaces the old row's values)"
    )),
)]
pub struct AddArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The row files: descriptors, labels, ids, lists, attributes and their format.
    #[command(flatten)]
    pub files: inputs::RowFileArgs,
    /// Replace the live rows whose ids are given instead of refusing them (needs --ids).
    #[arg(long, requires = "ids")]
    pub upsert: bool,
    /// With --upsert: replaced rows stay in their classes' counts and sums (needed to
    /// replace labelled rows of an index without stored vectors).
    #[arg(long, requires = "upsert")]
    pub keep_class_stats: bool,
    /// Print {added, ids, replaced, version} as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
/// Delete rows by id and commit.
#[command(after_help = "Examples:
  codedb delete my-index --ids 4,8,15
  codedb delete my-index --ids-file gone.npy
  codedb delete my-index --ids 4,8,99999 --ignore-missing --json
  codedb delete my-index --ids 4,8 --keep-class-stats   # no stored vectors

An id that is not live aborts the whole delete (nothing is deleted) unless --ignore-missing, \
which deletes the live ones and lists the others. --json prints {\"deleted\": n, \"missing\": \
[...], \"version\": v, \"class_stats\": \"updated\"|\"kept\"}; with nothing to delete, no version \
is written.

A deleted row that counts in a class (its label is a class of the class table) leaves it in the \
same commit: its stored vector is subtracted from the class's sum and the count drops by one, so \
class means stay the means of the rows that are there. Without stored vectors the row's \
descriptor is unknown and the delete is refused, unless --keep-class-stats keeps every class's \
count and sum as they are.")]
pub struct DeleteArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// Comma-separated ids.
    #[arg(
        long,
        value_delimiter = ',',
        required_unless_present = "ids_file",
        allow_negative_numbers = true,
        value_parser = args::u64_0
    )]
    pub ids: Vec<u64>,
    /// A .npy file of ids.
    #[arg(long)]
    pub ids_file: Option<PathBuf>,
    /// Skip ids that are not live instead of refusing the batch (they are listed).
    #[arg(long)]
    pub ignore_missing: bool,
    /// Print {deleted, missing, version} as JSON.
    #[arg(long)]
    pub json: bool,
    /// Leave class counts and sums unchanged (the deleted rows stay in their classes'
    /// means); needed to delete labelled rows from an index without stored vectors.
    #[arg(long)]
    pub keep_class_stats: bool,
}

pub fn add(a: AddArgs) -> Result<ExitCode> {
    let index = inputs::open_writer(&a.dir)?;
    let rows = inputs::rows(
        &a.files,
        index.model()?.input_dim(),
        &inputs::index_model(&a.dir),
        Some(&index.attribute_schema()),
    )?;
    let attrs = rows.attributes.map(|(attrs, _)| attrs);
    let bar = progress::bar(rows.x.nrows() as u64, "encoding", "rows");
    let report = |n: usize| bar.set_position(n as u64);
    let opts = AddOptions {
        ids: rows.ids.as_deref(),
        labels: rows.labels.as_deref(),
        lists: rows.lists,
        class_stats: class_stats(a.keep_class_stats),
        progress: Some(&report),
        attributes: attrs.as_ref(),
        ..AddOptions::default()
    };
    let added = if a.upsert {
        index.upsert(rows.x.view(), &opts)
    } else {
        index.add(rows.x.view(), &opts).map(|ids| (ids, 0))
    };
    let (ids, replaced) = match added {
        Err(StorageError::DuplicateId { dir, id }) => bail!(
            "{}: id {id} is already a live row (add --upsert replaces live rows); nothing added",
            dir.display()
        ),
        r => {
            r.with_context(|| format!("adding {} to {}", a.files.data.display(), a.dir.display()))?
        }
    };
    progress::phase(&bar, "committing");
    let version = index.commit()?;
    bar.finish_and_clear();
    if a.json {
        outln!(
            "{}",
            serde_json::json!({
                "added": ids.len(), "ids": ids, "replaced": replaced, "version": version,
            })
        );
    } else {
        outln!(
            "added {} rows ({}{}), version {version}",
            ids.len(),
            id_summary(&ids),
            if a.upsert {
                format!("; replaced {replaced} live rows")
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Ids for a one-line report: a range when consecutive, else the first few.
fn id_summary(ids: &[u64]) -> String {
    const SHOWN: usize = 10;
    match ids {
        [] => "no ids".into(),
        [one] => format!("id {one}"),
        [first, .., last] if ids.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("ids {first} to {last}")
        }
        _ if ids.len() <= SHOWN => format!("ids {}", join(ids)),
        _ => format!(
            "ids {}, … ({} in all; --json lists them)",
            join(&ids[..SHOWN]),
            ids.len()
        ),
    }
}

fn join(ids: &[u64]) -> String {
    ids.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--keep-class-stats` as the library's choice.
fn class_stats(keep: bool) -> ClassStats {
    if keep {
        ClassStats::Keep
    } else {
        ClassStats::Update
    }
}

pub fn delete(a: DeleteArgs) -> Result<ExitCode> {
    let DeleteArgs {
        dir,
        mut ids,
        ids_file,
        ignore_missing,
        json,
        keep_class_stats,
    } = a;
    let (dir, ids_file) = (dir.as_path(), ids_file.as_deref());
    if let Some(f) = ids_file {
        ids.extend(codedb_cli::io::read_ids(f)?);
    }
    let index = inputs::open_writer(dir)?;
    let stats = class_stats(keep_class_stats);
    let staged = if ignore_missing {
        index.delete_live(&ids, stats)
    } else {
        index.delete_with(&ids, stats).map(|()| Vec::new())
    };
    let missing = match staged {
        Err(StorageError::UnknownId { dir, id }) => bail!(
            "{}: id {id} is not a live row; nothing deleted (--ignore-missing skips such ids)",
            dir.display()
        ),
        r => r?,
    };
    let deleted = ids.len() - missing.len();
    let version = if deleted == 0 {
        index.version()
    } else {
        index.commit()?
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "deleted": deleted, "missing": missing, "version": version,
                "class_stats": if keep_class_stats { "kept" } else { "updated" },
            })
        );
    } else {
        let skipped = if missing.is_empty() {
            String::new()
        } else {
            format!(
                "; skipped {} not live: {}",
                missing.len(),
                id_summary(&missing)
            )
        };
        let committed = if deleted == 0 {
            format!("nothing to commit (version {version})")
        } else {
            format!("version {version}")
        };
        outln!(
            "deleted {} row{}{skipped}, {committed}{}",
            deleted,
            if deleted == 1 { "" } else { "s" },
            if keep_class_stats && deleted > 0 {
                " (class counts and sums kept)"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
