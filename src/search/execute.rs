//! The plan of one search over a snapshot: the kind's checks, `k` capped at the live rows,
//! the stored vectors when re-ranking or an exact mode needs them, the filter compiled into
//! per-block bitmaps (rejected rows hidden like deleted ones), the IVF plan under a filter,
//! the inverted lists each query scans (given, or probed per query), then per group of
//! queries the scan of the rows in scope ([`super::block_scan`]).

use std::ops::Range;

use ndarray::{Array2, ArrayView2, Axis};

use crate::model::Model;
use crate::storage::{Block, Snapshot};

use super::block_scan::search_scoped;
use super::error::{SearchError, invalid};
use super::filter::{BlockFilter, RowFilter, filter_ranges};
use super::ivf_filter::{
    IvfOutcome, ListCounts, QueryPlan, check_plan, ivf_filter_scans_passing, list_counts,
    search_ivf_filtered,
};
use super::list_scope::{block_ranges, list_coverage};
use super::mode::SearchMode;
use super::query::{Hit, Queries, SearchParams, cap_at_live_rows, check, check_stored};
use super::vectors::{SnapshotVectors, VectorSource};
use super::{examples, ivf_scan, probe, text};

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

/// [`search_snapshot`] for image or text query rows.
pub(crate) fn search_rows(
    snapshot: &Snapshot,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    search_plan(snapshot, q, params, source, None)
}

/// Whether a search of `model` with `params` runs the filtered IVF plan ([`super::ivf_filter`]):
/// a probed ADC search of an IVF model under a filter, its lists chosen by `nprobe`.
fn ivf_plan_applies(model: &Model, params: &SearchParams) -> bool {
    params.filter.is_some()
        && params.nprobe.is_some()
        && model.ivf().is_some()
        && params.mode == SearchMode::AdcL2
        && params.lists.is_none()
}

/// The filtered IVF plan's counts of `queries` (see [`list_counts`]; `start` and `count` as
/// there), or `None` when a search with `params` does not run the plan (another mode, no
/// filter, no `nprobe`, not an IVF model): the words a driver of several snapshots decides
/// from ([`super::ivf_probe_decision`]).
pub(crate) fn plan_counts(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    start: &[usize],
    count: Option<usize>,
) -> Result<Option<Vec<ListCounts>>, SearchError> {
    let model = snapshot.model()?;
    check(model, queries, params)?;
    if !ivf_plan_applies(model, params) {
        return Ok(None);
    }
    let Some(f) = &params.filter else {
        return Ok(None);
    };
    let c = f.compile(snapshot.attribute_schema())?;
    let blocks: Vec<Block<'_>> = snapshot.blocks().collect();
    let live = snapshot.live_rows();
    list_counts(&blocks, model, queries, params, &c, live, start, count).map(Some)
}

/// The live rows of `snapshot` that `filter` passes (the count the plans of a filtered probed
/// search decide by, [`ivf_filter_scans_passing`]).
pub(crate) fn passing_rows(snapshot: &Snapshot, filter: &RowFilter) -> Result<u64, SearchError> {
    let c = filter.compile(snapshot.attribute_schema())?;
    let mut n = 0;
    for b in snapshot.blocks() {
        n += c.block(&b)?.live_passing;
    }
    Ok(n)
}

/// [`search_snapshot`] following a driver's `plan` for the filtered IVF plan: per query the
/// lists to scan or the flat search over the passing rows ([`QueryPlan`]), instead of this
/// snapshot's own probing rule. Only for a probed search of an IVF model under a filter: by
/// ADC (the filtered IVF plan), or in an exact mode, whose plan per query is its `nprobe`
/// lists or the passing rows ([`ivf_filter_scans_passing`], and a query short of passing rows
/// searched again over the passing rows), each query scanning what the plan gives it.
pub(crate) fn search_planned(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    plan: &[QueryPlan],
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let model = snapshot.model()?;
    check(model, queries, params)?;
    let exact_ivf = params.mode.is_exact()
        && params.filter.is_some()
        && params.nprobe.is_some()
        && params.lists.is_none()
        && model.ivf().is_some();
    if !(ivf_plan_applies(model, params) || exact_ivf) {
        return Err(invalid(
            "plan",
            "a planned search is a probed search of an IVF model under a filter, by ADC or \
             an exact mode (nprobe and where or ids)",
        ));
    }
    check_plan(plan, queries.nrows(), model.ivf().map_or(0, |c| c.lists()))?;
    search_plan(snapshot, Queries::Image(queries), params, None, Some(plan))
}

/// [`search_rows`], the filtered IVF plan following `plan` when given.
fn search_plan(
    snapshot: &Snapshot,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
    plan: Option<&[QueryPlan]>,
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
    // Re-ranking and the exact modes score the raw image queries against the stored vectors
    // (Jégou et al. TPAMI 2011, §IV-B): checked here once, whichever path below scores them.
    if let (Queries::Image(v), Some(s)) = (q, source)
        && (params.rerank.is_some() || params.mode.is_exact())
    {
        check_stored(v, s)?;
    }
    let all_blocks: Vec<Block<'_>> = snapshot.blocks().collect();
    // A probed ADC search of an IVF model under a filter evaluates the filter only over the
    // lists its queries read, probing on while they hold too few passing rows
    // (`ivf_filter`); the queries it leaves to the flat search over the passing rows run
    // below, through the whole blocks' filters.
    let mut ivf_outcomes: Option<Vec<IvfOutcome>> = None;
    if let (Some(f), Queries::Image(v)) = (&params.filter, q)
        && ivf_plan_applies(model, params)
    {
        let c = f.compile(snapshot.attribute_schema())?;
        let live = snapshot.live_rows();
        let out = search_ivf_filtered(&all_blocks, model, v, params, source, &c, live, plan)?;
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
    if let (Some(plan), true) = (plan, params.mode.is_exact()) {
        return search_exact_by_plan(&view, model, q, params, source, plan);
    }
    if let Some(outcomes) = ivf_outcomes {
        return search_left_to_flat(snapshot, &view, q, params, source, outcomes);
    }
    // The plan of an IVF search under a filter in the other modes (the exact ones; a mode the
    // model cannot scan is refused as without a filter): when the live passing rows are no
    // more than the probed lists hold (nprobe/K of the live rows), or the probed lists are
    // expected to hold fewer than k of them (nprobe/K of the passing rows), every query scans
    // the passing rows instead: no more rows than the probed search, none of them missed.
    if let (Some(fs), Some(n)) = (&filters, params.nprobe)
        && let Some((coarse, n)) = ivf_scan::ivf_nprobe(snapshot.model()?, Some(n))?
    {
        let passing: u64 = fs.iter().map(|f| f.live_passing).sum();
        if ivf_filter_scans_passing(passing, snapshot.live_rows(), n, coarse.lists(), params.k) {
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

/// An exact mode following a driver's plan (checked by [`search_planned`]): each query scans
/// its given lists' passing rows, or every passing row; queries with the same lists are
/// scanned together.
fn search_exact_by_plan(
    view: &FilteredBlocks<'_, '_>,
    model: &Model,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
    plan: &[QueryPlan],
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let queries = q.view();
    let mut groups: std::collections::BTreeMap<Option<Vec<u32>>, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (i, p) in plan.iter().enumerate() {
        let key = match p {
            QueryPlan::Lists(l) => {
                let mut l = l.clone();
                l.sort_unstable();
                Some(l)
            }
            QueryPlan::Flat => None,
        };
        groups.entry(key).or_default().push(i);
    }
    let mut out: Vec<Vec<Hit>> = vec![Vec::new(); queries.nrows()];
    for (lists, rows) in &groups {
        let sub: Array2<f32> = queries.select(Axis(0), rows);
        let scopes = scopes(view, lists.as_deref())?;
        let all = SearchParams {
            nprobe: None,
            ..params.clone()
        };
        let hits = search_scoped(
            view.blocks,
            &scopes,
            model,
            q.with(sub.view()),
            &all,
            source,
        )?;
        for (&r, h) in rows.iter().zip(hits) {
            if let Some(slot) = out.get_mut(r) {
                *slot = h;
            }
        }
    }
    Ok(out)
}

/// The flat search over the passing rows for the queries the filtered IVF plan left to it:
/// scored exactly when re-ranked with stored vectors (the true top-k over the passing rows,
/// by the scores re-ranking gives), else by ADC over every list's passing rows.
fn search_left_to_flat(
    snapshot: &Snapshot,
    view: &FilteredBlocks<'_, '_>,
    q: Queries<'_>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
    outcomes: Vec<IvfOutcome>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
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
    let sub: Array2<f32> = q.view().select(Axis(0), &flat);
    let mut again = search_blocks(snapshot, view, q.with(sub.view()), &all, source)?.into_iter();
    Ok(outcomes
        .into_iter()
        .map(|o| match o {
            IvfOutcome::Hits(h) => h,
            IvfOutcome::Flat => again.next().unwrap_or_default(),
        })
        .collect())
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
