//! Queries over a [`Snapshot`]: k-NN search ([`Snapshot::search`]), radius lookup
//! ([`Snapshot::search_radius`]), NCM classification ([`Snapshot::classify`]) and training
//! from an index's codes ([`train_from_index`]). Each uses the snapshot's own model, so no
//! search can run with a model other than the one that encoded the index.
//!
//! Scan plans: a query batch over a snapshot compiles to one kernel per block and the per-block
//! top-k lists merge into one list per query, best first, ties by smaller id.
//!
//! | mode | codes | query becomes | kernel | score |
//! |---|---|---|---|---|
//! | `hamming` | binary | its code ([`Model::encode`]) | Hamming | bits that differ (smaller better) |
//! | `asym` | binary | projected, not binarised ([`Model::project`]) | LUT-8 | Σ of the margins of disagreeing bits, see [`asym`] (smaller better) |
//! | `adc` / `adc-ip` | PQ8 / PQ4 | M tables of 256 / 16 ([`Model::adc_tables`]) | LUT-8 / LUT-4, or fast-scan for PQ4 segments of format 1.2 (in place, exact re-scoring) | squared L2 (smaller) / inner product (larger) |
//! | `float` / `float-ip` | float32 / float16 | projected ([`Model::project`]) | dense | squared L2 / inner product |
//! | `exact` / `exact-ip` | any, with stored vectors | the raw query | dense | squared L2 / inner product |
//!
//! Re-ranking ([`SearchParams::rerank`]) takes the R best by the mode's score and re-scores
//! them against stored vectors (see [`rerank`]); radius lookups of short binary codes use a
//! hash table ([`HammingTable`]). Deleted rows never appear. With `k` larger than the number
//! of live rows, every live row is returned.
//!
//! **Inverted class lists.** [`SearchParams::lists`] restricts every mode (re-ranking and exact
//! included) to the rows of the given lists — contiguous runs of each block, found through its
//! list index ([`list_scope`]) — and [`SearchParams::nprobe`] picks, per query, the lists of
//! the nearest class means (IVF with the class means as coarse quantiser, [`probe`]). Rows
//! without a list id are scanned by every list-restricted search (see [`list_scope`];
//! [`list_coverage`] counts them); on an index where no row has one, such a search is refused
//! ([`SearchError::NoLists`]).
//!
//! **IVF models** (`ivf:K,pq:Mx8`, see [`ivf_scan`]): the lists are the model's k-means cells
//! and the codes encode residuals. `adc` scores them per probed list (`nprobe`, default all K
//! lists: the flat residual search); the exact modes restrict to the probed cells; `lists`
//! (class ids) and text or classifier queries are refused.

mod api;
pub mod asym;
mod classify;
mod error;
mod examples;
pub(crate) mod filter;
mod float_codes;
mod ivf_filter;
mod ivf_scan;
pub(crate) mod list_scope;
mod mih;
pub mod mode;
mod pq4_fastscan;
mod probe;
pub mod radius;
pub mod rerank;
mod text;
mod train_from_index;
pub mod vectors;

use std::ops::Range;

use ndarray::{Array2, ArrayView2, Axis};
use serde::Serialize;

use crate::format::append_log::NO_LIST;
use crate::format::{CodeKind, RowColumn};
use crate::model::{AdcMetric, Model};
use crate::scan::{
    CodeRows, DenseRows, Direction, Metric, ScanOptions, dense_topk, hamming_topk_batch,
    lut4_topk_batch, lut8_topk_batch,
};
use crate::storage::{Block, Snapshot};

pub use asym::{asym_bit_terms, asym_tables};
pub use error::SearchError;
pub use examples::{
    CodeClassifier, DEFAULT_RANDOM_NEGATIVES, ExampleClassifier, ExampleParams, ExampleSet,
    Negatives, example_groups,
};
pub use mih::{AUTO_MIN_ROWS, AUTO_WORK_DIVISOR, MihChoice, mih_search};
pub use mode::{MODE_NAMES, SearchMode, UnknownMode};
pub use radius::{HammingTable, MAX_RADIUS, MAX_TABLE_CODE_BYTES};
pub use vectors::{MemoryVectors, RowRef, SnapshotVectors, VectorSource};

use error::invalid;
use filter::{BlockFilter, RowFilter, filter_ranges};
use float_codes::FloatColumn;
use ivf_filter::IvfOutcome;
pub use list_scope::{ListCoverage, list_coverage};
use list_scope::{block_ranges, range_deleted};
use pq4_fastscan::fastscan_scope;
use rerank::{Candidate, exact_search};
pub use text::text_tables;
pub use train_from_index::{fit_classifier_from_index, train_from_index};

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

/// The `k` best live rows of `snapshot` for each query row (see [`Snapshot::search`]), full
/// vectors for re-ranking and the exact modes read from `source`, or from the snapshot's
/// stored vectors ([`SnapshotVectors`]) when `source` is `None`.
pub(crate) fn search_snapshot(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    search_rows(snapshot, Queries::Image(queries), params, source)
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
    fn view(&self) -> ArrayView2<'a, f32> {
        match *self {
            Queries::Image(v) | Queries::Text(v) | Queries::Linear(v, _) => v,
        }
    }

    /// The same kind of query rows over `v` (a classifier keeps its re-ranking weights: a
    /// classifier query is one row).
    fn with<'b>(&self, v: ArrayView2<'b, f32>) -> Queries<'b>
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

/// [`search_snapshot`] for image or text query rows.
pub(crate) fn search_rows(
    snapshot: &Snapshot,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let model = snapshot.model()?;
    let queries = q.view();
    match q {
        Queries::Image(v) => check(model, v, params)?,
        Queries::Text(u) => text::check_text(model, u, params)?,
        Queries::Linear(u, _) => examples::check_linear(model, u, params)?,
    }
    // At most the live rows can be returned: cap k (and the re-ranking depth) at them before
    // anything is sized by k, so a huge k (2⁶², usize::MAX) asks for no memory it cannot
    // fill. Both are capped alike, so R ≥ k still holds.
    let capped;
    let params = match cap_at_live_rows(params, snapshot.live_rows()) {
        Some(p) => {
            capped = p;
            &capped
        }
        None => params,
    };
    let stored;
    let source = match source {
        Some(s) => Some(s),
        None if params.rerank.is_some() || params.mode.is_exact() => {
            stored = SnapshotVectors::new(snapshot)?;
            Some(&stored as &dyn VectorSource)
        }
        None => None,
    };
    let all_blocks: Vec<Block<'_>> = snapshot.blocks().collect();
    // A probed ADC search of an IVF model under a filter evaluates the filter only over the
    // lists its queries read, probing on while they hold too few passing rows
    // (`ivf_filter`); the queries it leaves to the flat search over the passing rows run
    // below, through the whole blocks' filters.
    let mut ivf_outcomes: Option<Vec<IvfOutcome>> = None;
    if let (Some(f), Some(_), Queries::Image(v)) = (&params.filter, params.nprobe, q)
        && model.ivf().is_some()
        && params.mode == SearchMode::AdcL2
        && params.lists.is_none()
    {
        let c = f.compile(snapshot.attribute_schema())?;
        let live = snapshot.live_rows();
        let out = ivf_filter::search_ivf_filtered(&all_blocks, model, v, params, source, &c, live)?;
        if out.iter().all(|o| matches!(o, IvfOutcome::Hits(_))) {
            return Ok(out
                .into_iter()
                .map(|o| match o {
                    IvfOutcome::Hits(h) => h,
                    IvfOutcome::Flat => Vec::new(),
                })
                .collect());
        }
        ivf_outcomes = Some(out);
    }
    // A filter hides the rows it rejects: to this search they are deleted rows.
    let filters: Option<Vec<BlockFilter>> = match &params.filter {
        None => None,
        Some(f) => {
            let c = f.compile(snapshot.attribute_schema())?;
            Some(
                all_blocks
                    .iter()
                    .map(|b| c.block(b))
                    .collect::<Result<_, _>>()?,
            )
        }
    };
    let blocks: Vec<Block<'_>> = match &filters {
        None => all_blocks,
        Some(fs) => all_blocks
            .into_iter()
            .zip(fs)
            .map(|(b, f)| b.hiding(&f.hidden))
            .collect(),
    };
    let view = FilteredBlocks {
        blocks: &blocks,
        filters: filters.as_deref(),
    };
    // The plan of an IVF search under a filter: when the live passing rows are no more than
    // the probed lists hold (nprobe/K of the live rows, the lists' mean), a scan of the
    // passing rows alone reads no more rows than the probed search would and misses none of
    // them; when the probed lists are expected to hold fewer than k passing rows (nprobe/K of
    // the passing rows), most queries would fall back to that scan after the probed pass
    // anyway. Either way every query runs the scan instead — a selective filter otherwise
    // pays the probed pass and then that scan too. Re-ranked ADC (stored vectors): the
    // passing rows are scored exactly by the re-ranking metric (the exact mode: the true
    // top-k, by the scores re-ranking gives); otherwise in the mode asked (ADC over every
    // list's passing rows; a mode an IVF model cannot scan is refused as without a filter).
    // Either way the answer is the brute-force top-k over the passing rows by its scores, at
    // least the probed search's.
    if let Some(outcomes) = ivf_outcomes {
        // The flat search over the passing rows for the queries left to it: scored exactly
        // when re-ranked with stored vectors (the true top-k over the passing rows, by the
        // scores re-ranking gives), else by ADC over every list's passing rows.
        let flat: Vec<usize> = (0..outcomes.len())
            .filter(|&i| matches!(outcomes[i], IvfOutcome::Flat))
            .collect();
        let exact = params.rerank.is_some() && source.is_some();
        let all = SearchParams {
            nprobe: None,
            mode: if exact {
                SearchMode::ExactL2
            } else {
                params.mode
            },
            rerank: if exact { None } else { params.rerank },
            ..params.clone()
        };
        let sub: Array2<f32> = queries.select(Axis(0), &flat);
        let mut again =
            search_blocks(snapshot, &view, q.with(sub.view()), &all, source)?.into_iter();
        return Ok(outcomes
            .into_iter()
            .map(|o| match o {
                IvfOutcome::Hits(h) => h,
                IvfOutcome::Flat => again.next().unwrap_or_default(),
            })
            .collect());
    }
    if let (Some(fs), Some(n)) = (&filters, params.nprobe)
        && let Some((coarse, n)) = ivf_scan::ivf_nprobe(snapshot.model()?, Some(n))?
    {
        let passing: u64 = fs.iter().map(|f| f.live_passing).sum();
        let share = n as f64 / coarse.lists() as f64;
        let probed = snapshot.live_rows() as f64 * share;
        if passing as f64 <= probed || (passing as f64 * share) < params.k as f64 {
            let exact =
                params.mode == SearchMode::AdcL2 && params.rerank.is_some() && source.is_some();
            let all = SearchParams {
                nprobe: None,
                mode: if exact {
                    SearchMode::ExactL2
                } else {
                    params.mode
                },
                rerank: if exact { None } else { params.rerank },
                ..params.clone()
            };
            return search_blocks(snapshot, &view, q, &all, source);
        }
    }
    let mut hits = search_blocks(snapshot, &view, q, params, source)?;
    // A probed search (nprobe) can find fewer than k passing rows in the lists it probes
    // although more pass elsewhere: such a query is searched again over every list, so a
    // filtered search returns min(k, passing live rows) hits whatever nprobe is.
    if let (Some(fs), Some(_)) = (&filters, params.nprobe) {
        let passing: u64 = fs.iter().map(|f| f.live_passing).sum();
        let want = params.k.min(usize::try_from(passing).unwrap_or(usize::MAX));
        let short: Vec<usize> = (0..hits.len()).filter(|&i| hits[i].len() < want).collect();
        if !short.is_empty() {
            let sub: Array2<f32> = queries.select(Axis(0), &short);
            let all = SearchParams {
                nprobe: None,
                ..params.clone()
            };
            let again = search_blocks(snapshot, &view, q.with(sub.view()), &all, source)?;
            for (&i, h) in short.iter().zip(again) {
                hits[i] = h;
            }
        }
    }
    Ok(hits)
}

/// A snapshot's blocks as one search sees them: with the rows its filter rejects hidden, and
/// each block's filter bitmap.
struct FilteredBlocks<'b, 'a> {
    blocks: &'b [Block<'a>],
    filters: Option<&'b [BlockFilter]>,
}

/// [`search_rows`] over blocks already filtered.
fn search_blocks(
    snapshot: &Snapshot,
    view: &FilteredBlocks<'_, '_>,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let model = snapshot.model()?;
    let queries = q.view();
    let blocks = view.blocks;
    // IVF models: the lists are the coarse quantiser's k-means cells, the codes residuals.
    if model.ivf().is_some() {
        let Queries::Image(v) = q else {
            return Err(invalid(
                "queries",
                "text and classifier queries cannot score an IVF model's residual codes",
            ));
        };
        if params.lists.is_some() {
            return Err(invalid(
                "lists",
                "this index's inverted lists are its model's k-means cells (ivf:K), not \
                 classes: probe them with nprobe",
            ));
        }
        ivf_scan::ivf_nprobe(model, params.nprobe)?;
        if !params.mode.is_exact() {
            return ivf_scan::search_ivf(blocks, model, v, params, source, view.filters);
        }
    }
    let groups: probe::ProbeGroups = match (&params.lists, params.nprobe) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "nprobe",
                "give lists or nprobe, not both (nprobe chooses the lists per query)",
            ));
        }
        (None, None) => vec![(None, (0..queries.nrows()).collect())],
        (Some(l), None) => {
            let mut l = l.clone();
            l.sort_unstable();
            l.dedup();
            vec![(Some(l), (0..queries.nrows()).collect())]
        }
        (None, Some(n)) => match q {
            Queries::Image(v) => probe::probe_groups(snapshot, v, n)?,
            Queries::Text(u) | Queries::Linear(u, _) => probe::probe_groups_ip(snapshot, u, n)?,
        },
    };
    // Lists that do not exist cannot restrict anything: say so rather than scan every row.
    if params.lists.is_some() || params.nprobe.is_some() {
        let c = list_coverage(snapshot)?;
        if c.listed_rows == 0 && c.unlisted_rows > 0 {
            return Err(SearchError::NoLists {
                argument: if params.lists.is_some() {
                    "lists"
                } else {
                    "nprobe"
                },
                live_rows: c.unlisted_rows,
            });
        }
    }
    if let [(lists, _)] = groups.as_slice() {
        let scopes = scopes(view, lists.as_deref())?;
        return search_scoped(blocks, &scopes, model, q, params, source);
    }
    let mut out: Vec<Vec<Hit>> = vec![Vec::new(); queries.nrows()];
    for (lists, rows) in &groups {
        let sub: Array2<f32> = queries.select(Axis(0), rows);
        let scopes = scopes(view, lists.as_deref())?;
        let hits = search_scoped(blocks, &scopes, model, q.with(sub.view()), params, source)?;
        for (&r, h) in rows.iter().zip(hits) {
            if let Some(slot) = out.get_mut(r) {
                *slot = h;
            }
        }
    }
    Ok(out)
}

/// The row ranges each block contributes to a scan restricted to `lists` and to the rows its
/// filter passes (see [`filter_ranges`]: nothing for a block without a passing row, only the
/// passing rows' runs for a sparse filter).
fn scopes(
    view: &FilteredBlocks<'_, '_>,
    lists: Option<&[u32]>,
) -> Result<Vec<Vec<Range<usize>>>, SearchError> {
    view.blocks
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let r = block_ranges(b, lists)?;
            Ok(match view.filters.and_then(|f| f.get(i)) {
                Some(f) => filter_ranges(&r, &f.pass, b.rows()),
                None => r,
            })
        })
        .collect()
}

/// One search over the rows `scopes` names in each block.
fn search_scoped(
    blocks: &[Block<'_>],
    scopes: &[Vec<Range<usize>>],
    model: &Model,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let opts = ScanOptions {
        threads: params.threads.max(1),
        ..ScanOptions::default()
    };
    let need_source = || {
        source.ok_or_else(|| SearchError::NoVectors {
            detail: format!(
                "{} needs stored vectors and none were given",
                if params.mode.is_exact() {
                    params.mode.name()
                } else {
                    "re-ranking"
                }
            ),
        })
    };
    let metric = params.mode.rerank_metric();
    let queries = q.view();
    if params.mode.is_exact() {
        return exact_search(
            blocks,
            scopes,
            queries,
            metric,
            params.k,
            need_source()?,
            opts,
        );
    }
    let kc = params.rerank.unwrap_or(params.k);
    let candidates = scan_codes(blocks, scopes, model, q, params, kc, opts)?;
    match (params.rerank, q) {
        (None, _) => Ok(rerank::hits(candidates)),
        (Some(_), Queries::Image(_)) => rerank::rerank(
            blocks,
            &candidates,
            queries,
            metric,
            params.k,
            need_source()?,
        ),
        (Some(_), Queries::Text(u)) => {
            text::rerank_text(blocks, &candidates, model, u, params.k, need_source()?)
        }
        (Some(_), Queries::Linear(_, r)) => {
            let r = r.ok_or_else(|| invalid("rerank", "no classifier for the stored vectors"))?;
            text::rerank_text(blocks, &candidates, model, r, params.k, need_source()?)
        }
    }
}

/// Argument checks shared by every entry point (`model`: the snapshot's).
fn check(
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

/// The query side of a code scan, query after query.
pub(crate) enum Prepared {
    Codes(Vec<u8>),
    Lut8(Vec<f32>),
    Lut4(Vec<f32>, usize),
    Floats(Vec<f32>),
}

/// Scans every block's codes: the `k` best candidates per query by the mode's score, merged
/// over blocks, best first, ties by smaller id.
fn scan_codes(
    blocks: &[Block<'_>],
    scopes: &[Vec<Range<usize>>],
    model: &Model,
    q: Queries<'_>,
    params: &SearchParams,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<Candidate>>, SearchError> {
    let mode = params.mode;
    let queries = match q {
        Queries::Image(v) => v,
        Queries::Text(u) | Queries::Linear(u, _) => {
            let prepared = text::prepare_text(model, u)?;
            let (d, m) = (Direction::LargerIsBetter, Metric::Dot);
            let how = (mode, d, m, u.nrows());
            return scan_prepared(
                blocks,
                scopes,
                model,
                &prepared,
                how,
                (k, MihChoice::Off),
                opts,
            );
        }
    };
    let prepared = prepare(model, queries, mode)?;
    let how = (
        mode,
        mode.direction(),
        mode.rerank_metric(),
        queries.nrows(),
    );
    scan_prepared(blocks, scopes, model, &prepared, how, (k, params.mih), opts)
}

/// The query side of an image query scan in `mode`.
fn prepare(
    model: &Model,
    queries: ArrayView2<f32>,
    mode: SearchMode,
) -> Result<Prepared, SearchError> {
    let kind = model.code_kind();
    let adc = |metric| -> Result<Vec<f32>, SearchError> {
        Ok(model
            .adc_tables(queries, metric)?
            .into_raw_vec_and_offset()
            .0)
    };
    let prepared = match mode {
        SearchMode::Hamming => Prepared::Codes(model.encode(queries)?),
        SearchMode::Asym => Prepared::Lut8(asym_tables(model, queries)?),
        SearchMode::AdcL2 | SearchMode::AdcIp => {
            let metric = if mode == SearchMode::AdcL2 {
                AdcMetric::L2
            } else {
                AdcMetric::InnerProduct
            };
            match (kind, model.pq()) {
                (CodeKind::Pq4, Some(pq)) => Prepared::Lut4(adc(metric)?, pq.m()),
                _ => Prepared::Lut8(adc(metric)?),
            }
        }
        SearchMode::FloatL2 | SearchMode::FloatDot => {
            let p = model.project(queries)?;
            Prepared::Floats(p.iter().copied().collect())
        }
        SearchMode::ExactL2 | SearchMode::ExactDot => {
            return Err(invalid("mode", "exact modes do not scan codes"));
        }
    };
    Ok(prepared)
}

/// Scans every block's codes with a prepared query side; `how`: the mode (for messages), the
/// score's direction, the dense kernels' metric and the number of queries; `(k, mih)`: results
/// per query and the use of multi-index hashing tables ([`mih`]).
fn scan_prepared(
    blocks: &[Block<'_>],
    scopes: &[Vec<Range<usize>>],
    model: &Model,
    prepared: &Prepared,
    how: (SearchMode, Direction, Metric, usize),
    (k, mih): (usize, MihChoice),
    opts: ScanOptions,
) -> Result<Vec<Vec<Candidate>>, SearchError> {
    let (mode, direction, metric, nq) = how;
    let cb = model.code_bytes();
    let mut lists: Vec<Vec<Candidate>> = vec![Vec::new(); nq];
    for ((b, block), ranges) in blocks.iter().enumerate().zip(scopes) {
        if ranges.is_empty() {
            continue;
        }
        let deleted = block.deleted_words();
        // 4-bit PQ segments of format 1.2 are scanned in place in the fast-scan layout.
        let fastscan = match (prepared, block.fastscan_m()) {
            (Prepared::Lut4(_, m), Some(pm)) if pm == *m => true,
            (_, Some(pm)) => {
                return Err(invalid(
                    "index",
                    format!(
                        "a fast-scan segment of {pm} sub-quantisers cannot be scanned by {}",
                        mode.name()
                    ),
                ));
            }
            _ => false,
        };
        if let Prepared::Codes(q) = prepared
            && mih_block(block, ranges, mih, (q, cb), k, (b, &mut lists), opts)?
        {
            continue;
        }
        // A filtered block is scanned over its passing rows gathered into one buffer when
        // that pays (see `gather_pays`): a sparse filter's many short runs then cost one kernel
        // call rather than one per run, and a broad one's kernels read only the passing rows.
        if block.is_filtered()
            && !fastscan
            && (ranges.len() > 1 || gather_pays(ranges, deleted.as_deref(), nq))
        {
            for_each_gathered(block, ranges, deleted.as_deref(), cb, |ids, codes| {
                let rows = CodeRows::new(codes, cb, ids, None)?;
                let part = scan_rows(&rows, model, prepared, (direction, metric), k, opts)?;
                extend_candidates(&mut lists, part, b);
                Ok(())
            })?;
            continue;
        }
        for r in ranges {
            // Every accessor below checks the rows it returns (see `storage::Block`); checking
            // them here first spreads a first scan's checksums over the scan's threads.
            for col in [RowColumn::Ids, RowColumn::Codes] {
                block.check_par(col, r.clone(), opts.threads)?;
            }
            if let (true, Prepared::Lut4(l, _)) = (fastscan, prepared) {
                let part =
                    fastscan_scope(block, deleted.as_deref(), r.clone(), l, direction, k, opts)?;
                extend_candidates(&mut lists, part, b);
                continue;
            }
            let del = deleted.as_deref().map(|d| range_deleted(d, r.clone()));
            let ids = block.ids_in(r.clone())?;
            let codes = block.codes_in(r.clone())?;
            let rows = CodeRows::new(codes, cb, ids, del.as_deref())?;
            let part = scan_rows(&rows, model, prepared, (direction, metric), k, opts)?;
            extend_candidates(&mut lists, part, b);
        }
    }
    for l in &mut lists {
        l.sort_by(|a, b| {
            let s = match direction {
                Direction::SmallerIsBetter => a.score.total_cmp(&b.score),
                Direction::LargerIsBetter => b.score.total_cmp(&a.score),
            };
            s.then(a.id.cmp(&b.id))
        });
        l.truncate(k);
    }
    Ok(lists)
}

/// A scan of a filtered block reads the codes of its passing rows gathered into one buffer
/// when the kernel work this saves — every query skips the rejected rows — exceeds the
/// gathering's: one pass copying each passing row's id and code, about as costly as scanning
/// that row for `GATHER_COST` queries (a gathered row is an 8-byte id and a code appended with
/// a bit test; the AVX-512 Hamming kernel scans a 64-bit code in about 0.1 ns per query, the
/// cheapest of the kernels, BENCHMARKS.md "Filtered search"). So a filter passing half of a
/// block is gathered for 32 queries or more, one passing a fifth for 8 or more; a search of
/// one query masks the rejected rows in the collector instead.
const GATHER_COST: u64 = 32;

/// At most this many rows are gathered at once (16 MiB of ids, and their codes): a broad
/// filter over a large segment is scanned in slices of this many passing rows, each merged
/// into the queries' lists, so gathering never holds a copy of the whole segment.
const GATHER_MAX_ROWS: usize = 1 << 21;

/// Appends each query's `(score, id)` hits from block `b` to its candidate list.
fn extend_candidates(lists: &mut [Vec<Candidate>], part: Vec<Vec<(f32, u64)>>, b: usize) {
    for (acc, p) in lists.iter_mut().zip(part) {
        acc.extend(p.into_iter().map(|(score, id)| Candidate {
            score,
            id,
            block: b,
            row: None,
        }));
    }
}

/// Whether gathering the live rows of `ranges` (`deleted`: the block's deletion words, filter
/// included) before scanning them for `nq` queries costs less than masking (see
/// [`GATHER_COST`]).
fn gather_pays(ranges: &[Range<usize>], deleted: Option<&[u64]>, nq: usize) -> bool {
    let Some(d) = deleted else {
        return false;
    };
    let total: usize = ranges.iter().map(|r| r.len()).sum();
    let gone: usize = ranges.iter().map(|r| count_set(d, r.clone())).sum();
    let live = (total - gone.min(total)) as u64;
    (nq as u64).saturating_mul(gone as u64) >= GATHER_COST.saturating_mul(live)
}

/// Set bits of `words` among rows `r`.
fn count_set(words: &[u64], r: Range<usize>) -> usize {
    let mut n = 0;
    let mut i = r.start;
    while i < r.end {
        let (w, b) = (i / 64, i % 64);
        let take = (64 - b).min(r.end - i);
        let mask = if take == 64 {
            u64::MAX
        } else {
            ((1u64 << take) - 1) << b
        };
        n += (words.get(w).copied().unwrap_or(0) & mask).count_ones() as usize;
        i += take;
    }
    n
}

/// Calls `f(ids, codes)` on the rows of `ranges` that `deleted` (the block's deletion words,
/// filter included) leaves, in row order, at most [`GATHER_MAX_ROWS`] at a time: their ids and
/// codes (`cb` bytes each) copied back to back. Whole live 64-row words are copied in one go.
fn for_each_gathered(
    block: &Block<'_>,
    ranges: &[Range<usize>],
    deleted: Option<&[u64]>,
    cb: usize,
    mut f: impl FnMut(&[u64], &[u8]) -> Result<(), SearchError>,
) -> Result<(), SearchError> {
    let (mut ids, mut codes) = (Vec::new(), Vec::new());
    for r in ranges {
        let (rid, rcodes) = (block.ids_in(r.clone())?, block.codes_in(r.clone())?);
        let mut i = r.start;
        while i < r.end {
            let (w, b) = (i / 64, i % 64);
            let take = (64 - b).min(r.end - i);
            let span = if take == 64 {
                u64::MAX
            } else {
                (1u64 << take) - 1
            };
            let gone = deleted.and_then(|d| d.get(w)).map_or(0, |&x| x >> b) & span;
            let o = i - r.start;
            if gone == 0 {
                ids.extend_from_slice(rid.get(o..o + take).unwrap_or(&[]));
                codes.extend_from_slice(rcodes.get(o * cb..(o + take) * cb).unwrap_or(&[]));
            } else {
                let mut live = !gone & span;
                while live != 0 {
                    let j = o + live.trailing_zeros() as usize;
                    live &= live - 1;
                    if let (Some(&id), Some(c)) = (rid.get(j), rcodes.get(j * cb..(j + 1) * cb)) {
                        ids.push(id);
                        codes.extend_from_slice(c);
                    }
                }
            }
            i += take;
            if ids.len() >= GATHER_MAX_ROWS {
                f(&ids, &codes)?;
                ids.clear();
                codes.clear();
            }
        }
    }
    if !ids.is_empty() {
        f(&ids, &codes)?;
    }
    Ok(())
}

/// One kernel call over `rows` with the prepared query side: the `k` best per query as
/// (score, id).
fn scan_rows(
    rows: &CodeRows<'_>,
    model: &Model,
    prepared: &Prepared,
    (direction, metric): (Direction, Metric),
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>, SearchError> {
    Ok(match prepared {
        Prepared::Codes(q) => hamming_topk_batch(rows, q, k, opts)?
            .into_iter()
            .map(|l| l.into_iter().map(|(d, id)| (d as f32, id)).collect())
            .collect(),
        Prepared::Lut8(l) => lut8_topk_batch(rows, l, direction, k, opts)?,
        Prepared::Lut4(l, m) => lut4_topk_batch(rows, *m, l, direction, k, opts)?,
        Prepared::Floats(q) => {
            let floats = FloatColumn::new(rows.codes(), model.code_kind())?;
            let dense = DenseRows::new(
                floats.values(),
                model.project_dim(),
                rows.ids(),
                rows.deleted(),
            )?;
            dense_topk(&dense, q, metric, k, opts)?
        }
    })
}

/// Searches a whole segment block through its multi-index hashing tables when `mih` says so
/// (see [`MihChoice`]), adding each query's k best to `lists` (block number `b`); `false`
/// (nothing done) when the block is to be scanned linearly.
fn mih_block(
    block: &Block<'_>,
    ranges: &[Range<usize>],
    mih: MihChoice,
    (queries, cb): (&[u8], usize),
    k: usize,
    (b, lists): (usize, &mut [Vec<Candidate>]),
    opts: ScanOptions,
) -> Result<bool, SearchError> {
    let n = block.rows();
    let whole = matches!(ranges, [r] if *r == (0..n));
    let size_ok = mih == MihChoice::On || n >= AUTO_MIN_ROWS;
    let Some(seg) = block.segment() else {
        return Ok(false);
    };
    if mih == MihChoice::Off || !whole || !size_ok {
        return Ok(false);
    }
    let Some(t) = seg.mih_tables()? else {
        return Ok(false);
    };
    for col in [RowColumn::Ids, RowColumn::Codes] {
        block.check_par(col, 0..n, opts.threads)?;
    }
    let (ids, codes) = (block.ids()?, block.codes()?);
    let deleted = block.deleted_words();
    // The probing budget is a fraction of what the linear scan it may switch to costs: under a
    // filter whose passing rows are gathered, a scan of those rows only.
    let nq = queries.len() / cb.max(1);
    let gathered = block.is_filtered() && gather_pays(ranges, deleted.as_deref(), nq);
    let scanned = match (gathered, deleted.as_deref()) {
        (true, Some(d)) => n - count_set(d, 0..n).min(n),
        _ => n,
    };
    let budget = (mih == MihChoice::Auto).then_some(scanned / AUTO_WORK_DIVISOR);
    let mut linear = Vec::new();
    for (qi, q) in queries.chunks_exact(cb).enumerate() {
        match mih::mih_topk(&t, codes, ids, deleted.as_deref(), q, k, budget)? {
            Some(hits) => lists[qi].extend(hits.into_iter().map(|(d, id)| Candidate {
                score: d as f32,
                id,
                block: b,
                row: None,
            })),
            None => linear.push(qi),
        }
    }
    if !linear.is_empty() {
        let sub: Vec<u8> = (linear.iter())
            .flat_map(|&qi| &queries[qi * cb..(qi + 1) * cb])
            .copied()
            .collect();
        let mut scan = |rows: &CodeRows<'_>| -> Result<(), SearchError> {
            for (&qi, p) in linear.iter().zip(hamming_topk_batch(rows, &sub, k, opts)?) {
                lists[qi].extend(p.into_iter().map(|(d, id)| Candidate {
                    score: d as f32,
                    id,
                    block: b,
                    row: None,
                }));
            }
            Ok(())
        };
        // A broad filter's queries that give up probing scan only the passing rows when
        // gathering them pays, as a linear scan of the block would.
        if gathered && gather_pays(ranges, deleted.as_deref(), linear.len()) {
            for_each_gathered(block, ranges, deleted.as_deref(), cb, |ids, codes| {
                scan(&CodeRows::new(codes, cb, ids, None)?)
            })?;
        } else {
            scan(&CodeRows::new(codes, cb, ids, deleted.as_deref())?)?;
        }
    }
    Ok(true)
}

/// Every live row within Hamming distance `radius` of each query's code (see
/// [`Snapshot::search_radius`]), only rows `filter` passes when given.
pub(crate) fn radius_snapshot(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    radius: u32,
    filter: Option<&RowFilter>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let model = snapshot.model()?;
    check(model, queries, &SearchParams::new(1, SearchMode::Hamming))?;
    if radius > MAX_RADIUS {
        return Err(invalid(
            "radius",
            format!("{radius}: hash lookup probes radius 0, 1 or 2"),
        ));
    }
    let table = match filter {
        None => HammingTable::from_snapshot(snapshot)?,
        Some(f) => {
            let c = f.compile(snapshot.attribute_schema())?;
            let blocks: Vec<Block<'_>> = snapshot.blocks().collect();
            let fs: Vec<BlockFilter> = blocks
                .iter()
                .map(|b| c.block(b))
                .collect::<Result<_, _>>()?;
            let hiding: Vec<Block<'_>> = blocks
                .into_iter()
                .zip(&fs)
                .filter(|(_, f)| f.live_passing > 0)
                .map(|(b, f)| b.hiding(&f.hidden))
                .collect();
            HammingTable::from_blocks(snapshot, &hiding)?
        }
    };
    let codes = model.encode(queries)?;
    let cb = model.code_bytes();
    codes
        .chunks_exact(cb)
        .map(|q| {
            Ok(table
                .lookup(q, radius)?
                .into_iter()
                .map(|(d, id)| Hit {
                    id,
                    score: d as f32,
                })
                .collect())
        })
        .collect()
}
