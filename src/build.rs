//! Building an index from raw descriptors: create the directory with the model, encode the rows
//! in bounded chunks, append, commit once with the rows sealed into one segment.

use std::path::Path;

use ndarray::ArrayView2;

use crate::classes::{ListAssignment, assign_lists, class_records_from_labels};
use crate::error::Error;
use crate::format::{ClassTable, FileId, VectorDType, VectorSpec};
use crate::model::Model;
use crate::storage::{Config, CreateOptions, Index, RowBatch};

/// Rows encoded per chunk (bounds the memory of the float → code step).
const ENCODE_CHUNK: usize = 65_536;

/// Creates an index in `dir` with `model` and adds every row of `data` (optional `ids` and
/// class `labels`, one per row, stored on the rows only), committed as one version:
/// [`build_index_with`] without stored vectors.
pub fn build_index(
    dir: &Path,
    model: &Model,
    data: ArrayView2<f32>,
    ids: Option<&[u64]>,
    labels: Option<&[u32]>,
    config: Config,
    progress: &mut dyn FnMut(usize),
) -> Result<Index, Error> {
    build_index_with(dir, model, data, ids, labels, None, config, progress)
}

/// [`build_index`] that, with `store_vectors`, makes the index keep every row's input vector
/// (`data`'s row, as f32 or rounded to f16) beside its code, for re-ranking. Labels are stored
/// on the rows only (no class table; [`build_index_opts`] makes one).
#[allow(clippy::too_many_arguments)]
pub fn build_index_with(
    dir: &Path,
    model: &Model,
    data: ArrayView2<f32>,
    ids: Option<&[u64]>,
    labels: Option<&[u32]>,
    store_vectors: Option<VectorDType>,
    config: Config,
    progress: &mut dyn FnMut(usize),
) -> Result<Index, Error> {
    build_index_opts(
        dir,
        model,
        data,
        &BuildOptions {
            ids,
            labels,
            store_vectors,
            lists: None,
            classes_from_labels: false,
            config,
        },
        progress,
    )
}

/// Creates an index in `dir` with `model` and adds every row of `data` as [`BuildOptions`]
/// says — ids, labels, the class table made from the labels, inverted-list ids, stored
/// vectors — all committed as one version, the rows sealed into one segment
/// ([`Index::commit_sealed`]). `progress(rows_done)` is called per encoded chunk.
/// Every input is checked and every row encoded before the directory is created; nothing is
/// left half-built on error (at worst the directory holds only the empty first version).
pub fn build_index_opts(
    dir: &Path,
    model: &Model,
    data: ArrayView2<f32>,
    opts: &BuildOptions<'_>,
    progress: &mut dyn FnMut(usize),
) -> Result<Index, Error> {
    let n = data.nrows();
    let bad = |argument: &str, detail: String| Error::InvalidArgument {
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
    // The class table of the labels (checked and summed before anything is created).
    let classes = match opts.labels {
        Some(l) if opts.classes_from_labels => class_records_from_labels(data, l)?,
        _ => Vec::new(),
    };
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
    let mut codes = Vec::with_capacity(n * model.code_bytes());
    let mut start = 0;
    while start < n {
        let end = (start + ENCODE_CHUNK).min(n);
        codes.extend(model.encode(data.slice(ndarray::s![start..end, ..]))?);
        start = end;
        progress(end);
    }
    let options = CreateOptions {
        store_vectors: opts
            .store_vectors
            .map(|t| VectorSpec::new(t, model.input_dim() as u32)),
    };
    let index = Index::create_with(dir, &model.to_model_file(), &options, opts.config.clone())?;
    index.add_rows_with_classes(
        &RowBatch {
            ids: opts.ids,
            labels: opts.labels,
            lists: lists.as_deref(),
            vectors: opts.store_vectors.map(|_| data.view()),
            ..RowBatch::new(&codes)
        },
        &classes,
    )?;
    // One sealed segment, not a log: sorted rows (grouped by list), the fast-scan layout for
    // pq4 codes, memory-mapped rather than held in memory.
    index.commit_sealed()?;
    // The sealed log was never named by a manifest: remove it now rather than at the first GC.
    index.gc()?;
    Ok(index)
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
    pub config: Config,
}

impl Default for BuildOptions<'_> {
    fn default() -> Self {
        BuildOptions {
            ids: None,
            labels: None,
            store_vectors: None,
            lists: None,
            classes_from_labels: true,
            config: Config::default(),
        }
    }
}

impl Index {
    /// Creates an index in `dir` holding every row of `data` encoded with `model`, committed
    /// as one version (see [`build_index_opts`], which also reports progress).
    pub fn build(
        dir: &Path,
        model: &Model,
        data: ArrayView2<f32>,
        options: BuildOptions<'_>,
    ) -> Result<Index, Error> {
        build_index_opts(dir, model, data, &options, &mut |_| {})
    }
}
