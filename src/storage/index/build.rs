//! Building an index from raw descriptors: create the directory with the model, encode the rows
//! in bounded chunks, append, commit once with the rows sealed into one segment.

use std::path::Path;

use ndarray::ArrayView2;

use crate::classes::label_sums::class_records_stored;
use crate::classes::{ListAssignment, assign_lists};
use crate::format::{Attributes, Schema};
use crate::format::{ClassTable, FileId, VectorDType, VectorSpec};
use crate::model::{Cancel, Model};
use crate::storage::config::{Config, CreateOptions};
use crate::storage::error::StorageError;
use crate::storage::row_batch::RowBatch;
use crate::storage::row_batch::{check_batch, conform_write};

use super::add_rows::{IVF_OWN_LISTS, encode_chunked};
use super::handle::Index;

/// What `dir` was before a build, so a failed build can remove what it created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirBefore {
    Absent,
    Empty,
    /// Held files (or could not be listed): a failed build leaves it alone.
    Other,
}

impl DirBefore {
    fn of(dir: &Path) -> DirBefore {
        match std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => DirBefore::Absent,
            Ok(true) => DirBefore::Empty,
            _ => DirBefore::Other,
        }
    }

    /// Puts `dir` back as it was (the failed build's index handle is already dropped).
    fn undo(self, dir: &Path) -> std::io::Result<()> {
        match self {
            DirBefore::Absent => match std::fs::remove_dir_all(dir) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                r => r,
            },
            DirBefore::Empty => {
                for e in std::fs::read_dir(dir)? {
                    let path = e?.path();
                    if path.is_dir() {
                        std::fs::remove_dir_all(&path)?;
                    } else {
                        std::fs::remove_file(&path)?;
                    }
                }
                Ok(())
            }
            DirBefore::Other => Ok(()),
        }
    }
}

/// What [`Index::build`] adds besides the vectors.
#[derive(Debug, Clone)]
pub struct BuildOptions<'a> {
    /// One user id per row (default: 0, 1, 2, … assigned by the index).
    pub ids: Option<&'a [u64]>,
    /// One class label per row.
    pub labels: Option<&'a [u32]>,
    /// Keep every row's input vector, as f32 or f16, for re-ranking and exact search.
    pub store_vectors: Option<VectorDType>,
    /// Give every row an inverted-list id: its label, or its nearest class mean (which needs
    /// the class table made from `labels`). `None`: rows have no list.
    pub lists: Option<ListAssignment>,
    /// With `labels`: also create the class table from them in the same commit (class id = the
    /// label, name = the label in decimal, count and f64 sum of its rows), so NCM
    /// classification and `nprobe` search work right after the build. **Default true**; it
    /// has no effect without labels.
    pub classes_from_labels: bool,
    /// The new index's attribute columns (names, types, defaults; fixed at create, see
    /// [`CreateOptions::attributes`]). `None`: the columns of `attributes`, with the types'
    /// zero defaults (or none).
    pub schema: Option<&'a Schema>,
    /// The rows' attribute columns, one value per row in `data`'s row order; a column of the
    /// schema left out takes its default. Checked before the directory is touched.
    pub attributes: Option<&'a Attributes>,
    /// The new index's configuration.
    pub config: Config,
    /// Stops the build with [`ModelError::Cancelled`](crate::model::ModelError::Cancelled)
    /// (checked while encoding, before the directory is touched). `None`: never cancelled.
    pub cancel: Option<&'a Cancel>,
}

impl Default for BuildOptions<'_> {
    fn default() -> Self {
        BuildOptions {
            ids: None,
            labels: None,
            store_vectors: None,
            lists: None,
            classes_from_labels: true,
            schema: None,
            attributes: None,
            config: Config::default(),
            cancel: None,
        }
    }
}

impl Index {
    /// Creates an index in `dir` with `model` and adds every row of `data` as [`BuildOptions`]
    /// says — ids, labels, the class table made from the labels, inverted-list ids, stored
    /// vectors — all committed as one version, the rows sealed into one segment
    /// ([`Index::commit_sealed`]). `progress(rows_done)` is called per encoded chunk (`&mut |_| {}`
    /// for none). The one way to build an index from raw descriptors.
    ///
    /// Every input is checked (ids unique and not reserved, labels, finite data, values that fit
    /// the stored-vector type) and every row encoded before anything is written. If a write fails
    /// after that (I/O), what this build created is removed: the directory itself when it did not
    /// exist, its entries when it was empty; a directory that held other files keeps them (and
    /// whatever the failed build left, which the error then names).
    ///
    /// Killed at any instant (SIGKILL, power loss), a build leaves no index or the whole one
    /// (FORMAT.md §11.8): its first published manifest, version 2, already holds every row, so
    /// the same build run again finds no manifest, replaces what the killed one left, and
    /// succeeds. A directory holding an index is refused ([`StorageError::AlreadyExists`]).
    pub fn build(
        dir: &Path,
        model: &Model,
        data: ArrayView2<f32>,
        opts: &BuildOptions<'_>,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Index, StorageError> {
        let n = data.nrows();
        let bad = |argument: &str, detail: String| StorageError::InvalidArgument {
            dir: dir.to_path_buf(),
            argument: argument.into(),
            detail,
        };
        if n == 0 {
            return Err(bad("data", "no rows to build an index from".into()));
        }
        if data.ncols() != model.input_dim() {
            return Err(bad(
                "data",
                format!(
                    "{} columns, the model takes {}-D vectors",
                    data.ncols(),
                    model.input_dim()
                ),
            ));
        }
        if let Some(i) = opts.ids
            && i.len() != n
        {
            return Err(bad("ids", format!("{} ids for {n} rows", i.len())));
        }
        if let Some(l) = opts.labels
            && l.len() != n
        {
            return Err(bad("labels", format!("{} labels for {n} rows", l.len())));
        }
        // The class table of the labels (checked and summed before anything is created), of the
        // vectors as the index stores them (f16-rounded with f16), so deletes subtract exactly.
        let classes = match opts.labels {
            Some(l) if opts.classes_from_labels => {
                class_records_stored(data, l, opts.store_vectors)?
            }
            _ => Vec::new(),
        };
        if model.ivf().is_some() && opts.lists.is_some() {
            return Err(bad("lists", IVF_OWN_LISTS.into()));
        }
        let lists = match opts.lists {
            None => None,
            Some(how) => {
                let table = (!classes.is_empty()).then(|| ClassTable {
                    file_id: FileId::ZERO,
                    dim: model.input_dim() as u32,
                    delta_of: None,
                    classes: classes.clone(),
                });
                Some(assign_lists(how, model, data, opts.labels, table.as_ref())?)
            }
        };
        // Encode everything first: a bad row (NaN, …) fails before the index exists.
        let never = Cancel::new();
        let (codes, ivf_lists) =
            encode_chunked(model, data, opts.cancel.unwrap_or(&never), &mut |done| {
                progress(done)
            })?;
        let lists = ivf_lists.or(lists);
        let spec = opts
            .store_vectors
            .map(|t| VectorSpec::new(t, model.input_dim() as u32));
        let model_file = model.to_model_file();
        let batch = RowBatch {
            ids: opts.ids,
            labels: opts.labels,
            lists: lists.as_deref(),
            vectors: opts.store_vectors.map(|_| data.view()),
            ..RowBatch::new(&codes)
        };
        // Ids, labels, list ids and stored vectors are checked as the add will check them, before
        // the directory is touched.
        let checked = check_batch(dir, &model_file, spec, &batch)?;
        let schema = match (opts.schema, opts.attributes) {
            (Some(s), _) => s.clone(),
            (None, Some(a)) => a.schema().clone(),
            (None, None) => Schema::default(),
        };
        // Checked (and conformed) now, so bad columns fail before the index exists.
        let attrs = conform_write(dir, &schema, opts.attributes, n)?;
        // The point of no return: past it the index is written.
        if let Some(c) = opts.cancel {
            c.commit()?;
        }
        let before = DirBefore::of(dir);
        let built = (|| -> Result<Index, StorageError> {
            // Version 1 stays in memory: the first manifest this build publishes is the one
            // with its rows (see `create_unpublished`), so a killed build leaves no index.
            let index = Index::create_unpublished(
                dir,
                &model_file,
                &CreateOptions {
                    store_vectors: spec,
                    attributes: schema.clone(),
                },
                opts.config.clone(),
            )?;
            index.add_checked_rows(&batch, checked, &classes, attrs.as_ref())?;
            // One sealed segment, not a log: sorted rows (grouped by list), the fast-scan layout
            // for pq4 codes, memory-mapped rather than held in memory.
            index.commit_sealed()?;
            // The sealed log was never named by a manifest: remove it now rather than at the
            // first GC.
            index.gc()?;
            Ok(index)
        })();
        match built {
            Ok(index) => Ok(index),
            Err(e) if matches!(e, StorageError::AlreadyExists { .. }) => Err(e),
            Err(e) => match before.undo(dir) {
                Ok(()) => Err(e),
                Err(cleanup) => Err(StorageError::BuildLeftovers {
                    dir: dir.to_path_buf(),
                    cause: Box::new(e),
                    cleanup,
                }),
            },
        }
    }
}
