//! The words every query kind shares: what a search returns ([`Hit`]), what it is asked to do
//! ([`SearchParams`]), the query rows of each kind ([`Queries`]: image, text, linear
//! classifier), the query side of a code scan ([`Prepared`]) and the argument checks every
//! kind runs first. The room's files use these from here; none of them uses another kind.

use ndarray::ArrayView2;
use serde::Serialize;

use crate::format::append_log::NO_LIST;
use crate::model::Model;
#[cfg(doc)]
use crate::scan::ScanOptions;

use super::error::{SearchError, invalid};
use super::filter::RowFilter;
use super::mih::MihChoice;
use super::mode::SearchMode;
use super::vectors::VectorSource;

/// One result row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
    /// The row's id.
    pub id: u64,
    /// The mode's score: Hamming distance, asymmetric distance, squared L2 (smaller is better)
    /// or inner product (larger is better); after re-ranking, the exact score.
    pub score: f32,
}

/// What a search does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchParams {
    /// Results per query (≥ 1; more than the live rows returns them all).
    pub k: usize,
    /// How codes are compared with the queries.
    pub mode: SearchMode,
    /// Re-rank the best `R` (≥ k) by the mode's score with the stored vectors
    /// ([`SearchMode::rerank_metric`]); `None`: no re-ranking.
    pub rerank: Option<usize>,
    /// Scan threads (see [`ScanOptions::threads`]; the results do not depend on it).
    pub threads: usize,
    /// Scan only the rows of these inverted lists (class ids; rows with no list are always
    /// scanned); `None`: every row. Not with `nprobe`.
    pub lists: Option<Vec<u32>>,
    /// IVF: per query, scan only the lists of the `n` class means nearest the query (NCM in the
    /// model's projected space); needs a class table. `None`: every row.
    pub nprobe: Option<usize>,
    /// Hamming mode: whether segments with multi-index hashing tables are searched through
    /// them (format 1.6; same results, see [`MihChoice`]). Other modes ignore it.
    pub mih: MihChoice,
    /// Only rows this filter passes (an id selector and/or a predicate: [`RowFilter`],
    /// docs/filtering.md); `None`: every live row.
    pub filter: Option<RowFilter>,
}

impl SearchParams {
    /// `k` results by `mode`, one thread, no re-ranking.
    pub fn new(k: usize, mode: SearchMode) -> SearchParams {
        SearchParams {
            k,
            mode,
            rerank: None,
            threads: 1,
            lists: None,
            nprobe: None,
            mih: MihChoice::Auto,
            filter: None,
        }
    }

    /// The same search over the rows `filter` passes only.
    pub fn filter(self, filter: RowFilter) -> SearchParams {
        SearchParams {
            filter: Some(filter),
            ..self
        }
    }

    /// The same search, choosing the multi-index hashing tables by `mih`.
    pub fn mih(self, mih: MihChoice) -> SearchParams {
        SearchParams { mih, ..self }
    }

    /// Restricts the search to the rows of `lists` (and rows with no list).
    pub fn lists(self, lists: Vec<u32>) -> SearchParams {
        SearchParams {
            lists: Some(lists),
            ..self
        }
    }

    /// Scans, per query, the lists of the `n` nearest class means.
    pub fn nprobe(self, n: usize) -> SearchParams {
        SearchParams {
            nprobe: Some(n),
            ..self
        }
    }

    /// The same search, re-ranking the best `r` with the stored vectors.
    pub fn rerank(self, r: usize) -> SearchParams {
        SearchParams {
            rerank: Some(r),
            ..self
        }
    }

    /// The same search on `threads` scan threads.
    pub fn threads(self, threads: usize) -> SearchParams {
        SearchParams { threads, ..self }
    }
}

/// The query rows of a search: raw descriptors (image queries), or `u = Wᵀq` of text queries
/// in the model's projected space (see [`text`]), or the weights of linear classifiers of the
/// codes, with the weights that re-rank on the stored vectors' projections (see [`examples`]).
#[derive(Clone, Copy)]
pub(crate) enum Queries<'a> {
    Image(ArrayView2<'a, f32>),
    Text(ArrayView2<'a, f32>),
    Linear(ArrayView2<'a, f32>, Option<ArrayView2<'a, f32>>),
}

impl<'a> Queries<'a> {
    pub(super) fn view(&self) -> ArrayView2<'a, f32> {
        match *self {
            Queries::Image(v) | Queries::Text(v) | Queries::Linear(v, _) => v,
        }
    }

    /// The same kind of query rows over `v` (a classifier keeps its re-ranking weights: a
    /// classifier query is one row).
    pub(super) fn with<'b>(&self, v: ArrayView2<'b, f32>) -> Queries<'b>
    where
        'a: 'b,
    {
        match *self {
            Queries::Image(_) => Queries::Image(v),
            Queries::Text(_) => Queries::Text(v),
            Queries::Linear(_, r) => Queries::Linear(v, r.map(|r| r.reborrow())),
        }
    }
}

/// The query side of a code scan, query after query.
pub(crate) enum Prepared {
    Codes(Vec<u8>),
    Lut8(Vec<f32>),
    Lut4(Vec<f32>, usize),
    Floats(Vec<f32>),
}

/// Argument checks shared by every entry point (`model`: the snapshot's).
pub(super) fn check(
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
) -> Result<(), SearchError> {
    if queries.nrows() == 0 {
        return Err(invalid("queries", "no query rows"));
    }
    if queries.ncols() != model.input_dim() {
        return Err(invalid(
            "queries",
            format!(
                "{} columns, the index's model takes {}-D vectors",
                queries.ncols(),
                model.input_dim()
            ),
        ));
    }
    check_params(model, params)
}

/// The check of image `queries` that re-ranking and the exact modes score against `source`'s
/// stored vectors (squared L2 or inner product on the raw floats, Jégou et al. TPAMI 2011,
/// §IV-B): as wide as the stored vectors, every value finite. Run once by the plan, before any
/// path scores them.
pub(super) fn check_stored(
    queries: ArrayView2<f32>,
    source: &dyn VectorSource,
) -> Result<(), SearchError> {
    if source.dim() != queries.ncols() {
        return Err(invalid(
            "queries",
            format!(
                "{} columns, the stored vectors are {}-D",
                queries.ncols(),
                source.dim()
            ),
        ));
    }
    if let Some(((r, c), v)) = queries.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(invalid(
            "queries",
            format!("row {r} column {c} is not finite ({v})"),
        ));
    }
    Ok(())
}

/// `params` with `k` and `rerank` capped at `live` rows (at least 1, the smallest valid k),
/// or `None` when neither exceeds it. What the CLI documents: k above the live rows returns
/// every live row.
pub(crate) fn cap_at_live_rows(params: &SearchParams, live: u64) -> Option<SearchParams> {
    let cap = usize::try_from(live).unwrap_or(usize::MAX).max(1);
    if params.k <= cap && params.rerank.is_none_or(|r| r <= cap) {
        return None;
    }
    let mut p = params.clone();
    p.k = p.k.min(cap);
    p.rerank = p.rerank.map(|r| r.min(cap));
    Some(p)
}

/// The checks of `params` shared by image and text queries.
pub(crate) fn check_params(model: &Model, params: &SearchParams) -> Result<(), SearchError> {
    if params.k == 0 {
        return Err(invalid("k", "must be at least 1"));
    }
    if let Some(r) = params.rerank
        && r < params.k
    {
        return Err(invalid(
            "rerank",
            format!(
                "{r} candidates cannot give k = {} results (use R ≥ k)",
                params.k
            ),
        ));
    }
    if params.rerank.is_some() && params.mode.is_exact() {
        return Err(invalid(
            "rerank",
            format!(
                "{} is already exact; re-ranking adds nothing",
                params.mode.name()
            ),
        ));
    }
    if let Some(l) = &params.lists {
        if l.is_empty() {
            return Err(invalid("lists", "no list ids given"));
        }
        if l.contains(&NO_LIST) {
            return Err(invalid(
                "lists",
                format!("{NO_LIST} is reserved (it means \"no list\")"),
            ));
        }
    }
    if params.nprobe == Some(0) {
        return Err(invalid("nprobe", "must be at least 1"));
    }
    params.mode.check_applies(model.code_kind())
}
