//! Building an index from raw descriptors: create the directory with the model, encode the rows
//! in bounded chunks, append, commit once.

use std::path::Path;

use ndarray::ArrayView2;

use crate::error::Error;
use crate::format::{VectorDType, VectorSpec};
use crate::model::Model;
use crate::storage::{Config, CreateOptions, Index, RowBatch};

/// Rows encoded per chunk (bounds the memory of the float → code step).
const ENCODE_CHUNK: usize = 65_536;

/// Creates an index in `dir` with `model` and adds every row of `data` (optional `ids` and
/// class `labels`, one per row), committed as one version: [`build_index_with`] without
/// stored vectors.
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
/// (`data`'s row, as f32 or rounded to f16) beside its code, for re-ranking. `progress(rows_done)` is called per
/// chunk. Nothing is left half-built on error: the directory then holds only the empty first
/// version (or nothing, if creation itself failed).
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
    if let Some(i) = ids
        && i.len() != n
    {
        return Err(bad("ids", format!("{} ids for {n} rows", i.len())));
    }
    if let Some(l) = labels
        && l.len() != n
    {
        return Err(bad("labels", format!("{} labels for {n} rows", l.len())));
    }
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
        store_vectors: store_vectors.map(|t| VectorSpec::new(t, model.input_dim() as u32)),
    };
    let index = Index::create_with(dir, &model.to_model_file(), &options, config)?;
    index.add_rows(&RowBatch {
        ids,
        labels,
        vectors: store_vectors.map(|_| data.view()),
        ..RowBatch::new(&codes)
    })?;
    index.commit()?;
    Ok(index)
}

/// What [`Index::build`] adds besides the vectors.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions<'a> {
    /// One user id per row (default: 0, 1, 2, … assigned by the index).
    pub ids: Option<&'a [u64]>,
    /// One class label per row.
    pub labels: Option<&'a [u32]>,
    pub config: Config,
}

impl Index {
    /// Creates an index in `dir` holding every row of `data` encoded with `model`, committed
    /// as one version (see [`build_index`], which also reports progress).
    pub fn build(
        dir: &Path,
        model: &Model,
        data: ArrayView2<f32>,
        options: BuildOptions<'_>,
    ) -> Result<Index, Error> {
        build_index(
            dir,
            model,
            data,
            options.ids,
            options.labels,
            options.config,
            &mut |_| {},
        )
    }
}
