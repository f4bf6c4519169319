//! IVFADC under a filter (Jégou et al., TPAMI 2011, §III-A and §IV): per query, the probed
//! lists' passing rows, probing further lists in centroid order while they hold too few
//! (docs/filtering.md, "IVF").
//!
//! The filter is evaluated **only over the rows the search reads**: a list's rows in every
//! block, the first time any query of the search probes the list (cached for the search, so a
//! batch evaluates the union of its queries' lists once). Its passing live rows are gathered
//! (ids, codes and where they lie) and scanned by the LUT-8 kernel with the list's table, as
//! [`super::ivf_scan`] scans a whole list. A query probes its `nprobe` nearest lists; while
//! they hold fewer passing rows than the collector's depth (k, or R when re-ranked: the
//! re-ranking then sees as many candidates as without a filter) it goes on to the next-nearest
//! list — unless the passing fraction measured on its lists so far says probing on would read
//! more rows than a flat search over every passing row, `(target − found) / p̂ > p̂ · live
//! rows` with `p̂ = (found + 1) / (rows read + 2)`. Such a query is left to the flat search over the
//! passing rows ([`IvfOutcome::Flat`]). So a query ends with min(k, passing live rows) hits:
//! its lists hold that many, or every list was read, or the flat search answers.
//!
//! The plan is also offered in words a driver of several snapshots (a sharded index) uses to
//! reach the one-index answer: [`list_counts`] reports per query its lists in probe order
//! with their passing and live rows, [`ivf_probe_decision`] (the rule this file's own plan
//! follows, [`ProbeRule`]) decides from the counts summed over the snapshots, and
//! [`search_ivf_filtered`] given a [`QueryPlan`] per query scans exactly the decided lists.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

use ndarray::{ArrayView2, Axis};

use crate::model::CoarseQuantizer;
use crate::model::Model;
use crate::scan::{ListTable, ListTopK, LutTerms};
use crate::storage::Block;

use super::block_scan::rerank;
use super::candidates::{Candidate, hits};
use super::error::{SearchError, invalid};
use super::filter::CompiledFilter;
use super::ivf_scan::{in_chunks, ivf_nprobe, list_terms};
use super::list_scope::range_deleted;
use super::query::{Hit, SearchParams};
use super::vectors::VectorSource;

/// What the filtered IVF plan made of one query.
#[derive(Debug)]
pub(crate) enum IvfOutcome {
    /// Its hits, best first.
    Hits(Vec<Hit>),
    /// Probing on would read more rows than the flat search over the passing rows: the caller
    /// runs that search for this query.
    Flat,
}

/// What the filtered IVF plan decides for one query from its lists' counts in probe order
/// ([`ivf_probe_decision`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeDecision {
    /// Scan the first `n` lists of the probe order.
    Lists(usize),
    /// Probing on would read more rows than the flat search over every passing row: that
    /// search answers the query.
    Flat,
    /// The counts given end before the rule decides: the next lists' counts are needed.
    Undecided,
}

/// One query's lists in probe order (the `nprobe` nearest centroids, then the others by
/// distance, Jégou et al., TPAMI 2011, §III-A), from a given position on, with the rows each
/// holds in one snapshot ([`crate::Snapshot::ivf_list_counts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListCounts {
    /// The list ids, in probe order.
    pub lists: Vec<u32>,
    /// Per list, its live rows the filter passes.
    pub passing: Vec<u64>,
    /// Per list, its live rows (passing or not): the measure of the passing fraction.
    pub read: Vec<u64>,
}

/// What a filtered IVF search does for one query when the plan is given
/// ([`crate::Snapshot::search_ivf_planned`]): what [`ivf_probe_decision`] decided over the
/// counts of every snapshot, so each snapshot runs the same one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryPlan {
    /// Scan these lists' passing rows (ADC with each list's table, as the plan does).
    Lists(Vec<u32>),
    /// The flat search over every passing row.
    Flat,
}

/// The probing rule of the filtered IVF plan, fed one list's counts at a time in probe order:
/// the `nprobe` nearest lists are always read; then a query stops once its lists hold
/// `target` passing rows or every list was read, and goes flat once [`flat_is_cheaper`].
#[derive(Debug, Clone)]
struct ProbeRule {
    nprobe: usize,
    lists: usize,
    target: u64,
    live: u64,
    found: u64,
    read: u64,
    seen: usize,
}

impl ProbeRule {
    fn new(nprobe: usize, lists: usize, target: u64, live: u64) -> ProbeRule {
        ProbeRule {
            nprobe: nprobe.min(lists),
            lists,
            target,
            live,
            found: 0,
            read: 0,
            seen: 0,
        }
    }

    fn push(&mut self, passing: u64, read: u64) {
        self.found += passing;
        self.read += read;
        self.seen += 1;
    }

    fn decide(&self) -> ProbeDecision {
        if self.seen < self.nprobe {
            return ProbeDecision::Undecided;
        }
        if self.found >= self.target || self.seen >= self.lists {
            return ProbeDecision::Lists(self.seen);
        }
        if flat_is_cheaper(self.found, self.read, self.target, self.live) {
            return ProbeDecision::Flat;
        }
        ProbeDecision::Undecided
    }
}

/// The collector depth the plan fills for `k` (or `R` when re-ranked) over `live` rows: both
/// capped at the live rows as every search caps them.
fn plan_target(k: usize, rerank: Option<usize>, live: u64) -> u64 {
    let cap = usize::try_from(live).unwrap_or(usize::MAX).max(1);
    rerank.unwrap_or(k).min(cap) as u64
}

/// The filtered IVF plan's decision for one query (the module doc; Jégou et al., TPAMI 2011,
/// §III-A, probing on under a filter): `passing[i]` and `read[i]` are the passing and live
/// rows of the query's `i`-th list in probe order ([`ListCounts`], summed over the snapshots
/// of a sharded index), `lists` the model's lists, `k` / `rerank` the search's, `live` the
/// live rows of the whole index. The same rule the engine's own plan follows, so a driver
/// deciding from summed counts probes exactly the lists one index holding every row probes.
pub fn ivf_probe_decision(
    passing: &[u64],
    read: &[u64],
    nprobe: usize,
    lists: usize,
    k: usize,
    rerank: Option<usize>,
    live: u64,
) -> ProbeDecision {
    let mut rule = ProbeRule::new(nprobe, lists, plan_target(k, rerank, live), live);
    let mut decision = rule.decide();
    for (&p, &r) in passing.iter().zip(read) {
        if decision != ProbeDecision::Undecided {
            break;
        }
        rule.push(p, r);
        decision = rule.decide();
    }
    decision
}

/// The plan of a probed IVF search under a filter in the modes the filtered IVF plan does not
/// scan (the exact ones): every query scans the passing rows instead of its lists when the
/// `passing` live rows are no more than its `nprobe` of `lists` lists hold (nprobe/K of the
/// `live` rows), or those lists are expected to hold fewer than `k` of them (nprobe/K of the
/// passing rows): no more rows than the probed search, none of them missed. `k` is capped at
/// the live rows as every search caps it. With `passing` and `live` summed over the shards of
/// a sharded index, the decision of one index holding every row.
pub fn ivf_filter_scans_passing(
    passing: u64,
    live: u64,
    nprobe: usize,
    lists: usize,
    k: usize,
) -> bool {
    let k = plan_target(k, None, live);
    let share = nprobe as f64 / lists.max(1) as f64;
    let probed = live as f64 * share;
    passing as f64 <= probed || (passing as f64 * share) < k as f64
}

/// A query's lists in probe order, ranked as far as they are read: its `nprobe` nearest
/// (`first`, as probed), then the others of its `WIDEN` times as many nearest (at least
/// `WIDEN_MIN`), and so on in stages of `WIDEN` times the lists ranked so far up to every
/// list, each stage's new lists by centroid distance. Ranking every list
/// exactly costs more than scanning a few, and most queries that probe on stop within the
/// first stage. The engine's plan and [`list_counts`] both read this order, so a driver's
/// decision over summed counts names the lists the engine's own plan would read.
struct ProbeOrder<'q> {
    coarse: &'q CoarseQuantizer,
    row: &'q [f32],
    order: Vec<(u32, f32)>,
    ranked: Vec<bool>,
    /// Lists ranked so far (the nearest `width`).
    width: usize,
}

impl<'q> ProbeOrder<'q> {
    fn new(coarse: &'q CoarseQuantizer, row: &'q [f32], first: &[(u32, f32)]) -> Self {
        let mut ranked = vec![false; coarse.lists()];
        for &(l, _) in first {
            if let Some(r) = ranked.get_mut(l as usize) {
                *r = true;
            }
        }
        ProbeOrder {
            coarse,
            row,
            order: first.to_vec(),
            ranked,
            width: first.len(),
        }
    }

    /// The `i`-th list in probe order and its centroid distance; `None` past the last list.
    fn get(&mut self, i: usize) -> Option<(u32, f32)> {
        let all = self.coarse.lists();
        while i >= self.order.len() && self.width < all {
            let stage = (WIDEN * self.order.len().max(1)).max(WIDEN_MIN).min(all);
            self.width = if stage > self.width { stage } else { all };
            let near = self.coarse.probe(self.row, self.width);
            for &(l, dist) in near.first().map_or(&[][..], |o| o.as_slice()) {
                if let Some(r) = self.ranked.get_mut(l as usize)
                    && !*r
                {
                    *r = true;
                    self.order.push((l, dist));
                }
            }
        }
        self.order.get(i).copied()
    }
}

/// The passing live rows of one list over every block, gathered.
#[derive(Debug, Default)]
struct ListRows {
    ids: Vec<u64>,
    codes: Vec<u8>,
    /// (block, row) of each gathered row.
    at: Vec<(usize, usize)>,
    /// Live rows of the list read (passing or not): the measure of the passing fraction.
    read: u64,
}

/// Queries a worker takes at once (their inner-product tables are computed together).
const QUERY_CHUNK: usize = 64;

/// A query probing on ranks its nearest lists in stages of `WIDEN` times those ranked so far,
/// the first at least `WIDEN_MIN` ([`ProbeOrder`]).
const WIDEN: usize = 4;
const WIDEN_MIN: usize = 32;

/// The lists' rows of a search's blocks and the per-list evaluations, made on first use.
struct Lists<'s, 'a> {
    blocks: &'s [Block<'a>],
    filter: &'s CompiledFilter<'s>,
    deleted: Vec<Option<Cow<'a, [u64]>>>,
    /// Blocks without a list index: their rows' ranges per list, from one pass over the list
    /// column.
    unindexed: Vec<Option<HashMap<u32, Vec<Range<usize>>>>>,
    code_bytes: usize,
    cache: Vec<OnceLock<ListRows>>,
}

impl<'s, 'a> Lists<'s, 'a> {
    fn new(
        blocks: &'s [Block<'a>],
        filter: &'s CompiledFilter<'s>,
        lists: usize,
        code_bytes: usize,
    ) -> Result<Self, SearchError> {
        let mut unindexed = Vec::with_capacity(blocks.len());
        for b in blocks {
            let col = match b.list_index() {
                Some(_) => None,
                None => b.lists()?,
            };
            unindexed.push(match col {
                Some(col) => {
                    let mut m: HashMap<u32, Vec<Range<usize>>> = HashMap::new();
                    for (i, &l) in col.iter().enumerate() {
                        let v = m.entry(l).or_default();
                        match v.last_mut() {
                            Some(r) if r.end == i => r.end = i + 1,
                            _ => v.push(i..i + 1),
                        }
                    }
                    Some(m)
                }
                None => None,
            });
        }
        Ok(Lists {
            blocks,
            filter,
            deleted: blocks.iter().map(|b| b.deleted_words()).collect(),
            unindexed,
            code_bytes,
            cache: (0..lists).map(|_| OnceLock::new()).collect(),
        })
    }

    /// List `l`'s passing live rows, evaluated and gathered on first use.
    fn rows(&self, l: u32) -> Result<&ListRows, SearchError> {
        let slot = self
            .cache
            .get(l as usize)
            .ok_or_else(|| invalid("nprobe", format!("list {l} is not a list of the model")))?;
        if let Some(r) = slot.get() {
            return Ok(r);
        }
        let made = self.gather(l)?;
        Ok(slot.get_or_init(|| made))
    }

    fn gather(&self, l: u32) -> Result<ListRows, SearchError> {
        let cb = self.code_bytes;
        let mut out = ListRows::default();
        for (b, block) in self.blocks.iter().enumerate() {
            let ranges: Vec<Range<usize>> = match &self.unindexed[b] {
                Some(m) => m.get(&l).cloned().unwrap_or_default(),
                None if block.list_index().is_some() => block.list_range(l).into_iter().collect(),
                None => Vec::new(),
            };
            for r in ranges.into_iter().filter(|r| !r.is_empty()) {
                let pass = self.filter.pass_in(block, r.clone())?;
                let del = self.deleted[b]
                    .as_deref()
                    .map(|d| range_deleted(d, r.clone()));
                let (ids, codes) = (block.ids_in(r.clone())?, block.codes_in(r.clone())?);
                let mut gone = 0u64;
                for (w, &p) in pass.iter().enumerate() {
                    let d = del.as_deref().and_then(|d| d.get(w)).copied().unwrap_or(0);
                    let span = (r.len() - 64 * w).min(64);
                    let mask = if span == 64 {
                        u64::MAX
                    } else {
                        (1u64 << span) - 1
                    };
                    gone += u64::from((d & mask).count_ones());
                    let mut live = p & !d & mask;
                    while live != 0 {
                        let i = 64 * w + live.trailing_zeros() as usize;
                        live &= live - 1;
                        if let (Some(&id), Some(c)) = (ids.get(i), codes.get(i * cb..(i + 1) * cb))
                        {
                            out.ids.push(id);
                            out.codes.extend_from_slice(c);
                            out.at.push((b, r.start + i));
                        }
                    }
                }
                out.read += r.len() as u64 - gone;
            }
        }
        Ok(out)
    }
}

/// Whether a query that found `found` passing rows among `read` live rows of its lists stops
/// probing for the flat search: the rows it would still read for `target` at the passing
/// fraction measured so far, `(target − found) / p̂`, exceed what the flat search reads,
/// `p̂ · live` passing rows. `p̂ = (found + 1) / (read + 2)`, Laplace's rule of succession: a
/// small list that happens to hold no passing row says little about the fraction (at 1 %
/// passing, a 200-row list holds none one time in eight), so it must not send the query to
/// the flat search, while a long run of lists without one does.
fn flat_is_cheaper(found: u64, read: u64, target: u64, live: u64) -> bool {
    if read == 0 {
        return false;
    }
    let p = (found as f64 + 1.0) / (read as f64 + 2.0);
    target.saturating_sub(found) as f64 / p > p * live as f64
}

/// The filtered IVFADC search of `queries` (see the module doc): per query its hits, or
/// [`IvfOutcome::Flat`] when the flat search over the passing rows is to answer it. `live`:
/// the snapshot's live rows. `plan`: per query, what a driver decided over the counts of
/// every snapshot ([`QueryPlan`]), followed instead of this snapshot's own rule; checked
/// against the queries and the model ([`check_plan`]) where a planned search enters.
#[allow(clippy::too_many_arguments)]
pub(crate) fn search_ivf_filtered(
    blocks: &[Block<'_>],
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
    filter: &CompiledFilter<'_>,
    live: u64,
    plan: Option<&[QueryPlan]>,
) -> Result<Vec<IvfOutcome>, SearchError> {
    let (Some((coarse, nprobe)), Some(pq)) = (ivf_nprobe(model, params.nprobe)?, model.pq()) else {
        return Err(invalid("mode", "the model is not an IVF model"));
    };
    let nq = queries.nrows();
    let threads = params.threads.max(1);
    let kc = params.rerank.unwrap_or(params.k);
    ListTopK::new(kc)?;
    let y = model.project(queries)?;
    let d = y.ncols();
    let flat: Vec<f32> = y.iter().copied().collect();
    let first = coarse.probe(&flat, nprobe);
    let lists = Lists::new(blocks, filter, coarse.lists(), pq.m())?;
    let chunks: Vec<Range<usize>> = (0..nq)
        .step_by(QUERY_CHUNK)
        .map(|s| s..(s + QUERY_CHUNK).min(nq))
        .collect();
    type Part = Result<Vec<Option<Vec<Candidate>>>, SearchError>;
    let run_chunk =
        |r: &Range<usize>| -> Part {
            let ip = pq.scaled_ip_tables(&flat[r.start * d..r.end * d], -2.0);
            let query_terms = LutTerms::new(ip, pq.m(), "query terms")?;
            let mut table = ListTable::new();
            let mut own: Option<LutTerms> = None;
            let mut out = Vec::with_capacity(r.len());
            for (qi, q) in r.clone().enumerate() {
                let qt = query_terms
                    .group(qi)
                    .ok_or_else(|| invalid("queries", "query terms missing"))?;
                let mut top = ListTopK::new(kc)?;
                // Scans list `l` into `top`: (passing live rows, live rows) it holds.
                let mut scan =
                    |l: u32, dist: f32, top: &mut ListTopK| -> Result<(u64, u64), SearchError> {
                        let rows = lists.rows(l)?;
                        let counts = (rows.ids.len() as u64, rows.read);
                        if rows.ids.is_empty() {
                            return Ok(counts);
                        }
                        let lt = list_terms(model, pq, l, &mut own)?;
                        table.assemble(lt, qt, dist)?;
                        top.scan(&table, &rows.codes, &rows.ids, None, 0, l)?;
                        Ok(counts)
                    };
                let qrow = &flat[q * d..(q + 1) * d];
                let to_flat = match plan.and_then(|p| p.get(q)) {
                    Some(QueryPlan::Flat) => true,
                    Some(QueryPlan::Lists(given)) => {
                        // The decided lists, each with its centroid distance (the ADC table's
                        // coarse term) from the query's probe of every list.
                        let all = coarse.probe(qrow, coarse.lists());
                        let all = all.first().map_or(&[][..], |o| o.as_slice());
                        for &l in given {
                            let dist =
                                all.iter().find(|p| p.0 == l).map(|p| p.1).ok_or_else(|| {
                                    invalid("plan", format!("list {l} not probed"))
                                })?;
                            scan(l, dist, &mut top)?;
                        }
                        false
                    }
                    None => {
                        let mut rule = ProbeRule::new(nprobe, coarse.lists(), kc as u64, live);
                        for &(l, dist) in &first[q] {
                            let (f, r) = scan(l, dist, &mut top)?;
                            rule.push(f, r);
                        }
                        let mut decision = rule.decide();
                        // The query's further lists, ranked only as it probes on.
                        let mut order = ProbeOrder::new(coarse, qrow, &first[q]);
                        let mut i = first[q].len();
                        while decision == ProbeDecision::Undecided {
                            let Some((l, dist)) = order.get(i) else {
                                break;
                            };
                            let (f, r) = scan(l, dist, &mut top)?;
                            rule.push(f, r);
                            decision = rule.decide();
                            i += 1;
                        }
                        decision == ProbeDecision::Flat
                    }
                };
                if to_flat {
                    out.push(None);
                    continue;
                }
                let mut cands = Vec::new();
                for (score, id, l, i) in top.into_sorted() {
                    let (block, row) =
                        lists.rows(l)?.at.get(i).copied().ok_or_else(|| {
                            invalid("nprobe", format!("list {l}: row {i} missing"))
                        })?;
                    cands.push(Candidate {
                        score,
                        id,
                        block,
                        row: Some(row),
                    });
                }
                out.push(Some(cands));
            }
            Ok(out)
        };
    let mut acc = in_chunks(&chunks, threads, run_chunk)?;
    // The queries answered here, re-ranked together when asked.
    let answered: Vec<usize> = (0..nq).filter(|&i| acc[i].is_some()).collect();
    let cands: Vec<Vec<Candidate>> = answered
        .iter()
        .map(|&i| acc[i].take().unwrap_or_default())
        .collect();
    let got = match params.rerank {
        None => hits(cands),
        Some(_) => {
            let source = source.ok_or_else(|| SearchError::NoVectors {
                detail: "re-ranking needs stored vectors and none were given".into(),
            })?;
            let sub = queries.select(Axis(0), &answered);
            rerank(
                blocks,
                &cands,
                sub.view(),
                params.mode.rerank_metric(),
                params.k,
                source,
            )?
        }
    };
    let mut out: Vec<IvfOutcome> = (0..nq).map(|_| IvfOutcome::Flat).collect();
    for (i, h) in answered.into_iter().zip(got) {
        out[i] = IvfOutcome::Hits(h);
    }
    Ok(out)
}

/// A driver's plan checked against the queries and the model: one entry per query, list ids
/// of the model.
pub(crate) fn check_plan(plan: &[QueryPlan], nq: usize, lists: usize) -> Result<(), SearchError> {
    if plan.len() != nq {
        return Err(invalid(
            "plan",
            format!("{} entries for {nq} queries (one per query)", plan.len()),
        ));
    }
    for (q, p) in plan.iter().enumerate() {
        if let QueryPlan::Lists(ls) = p {
            if ls.is_empty() {
                return Err(invalid("plan", format!("query {q}: no list to scan")));
            }
            if let Some(l) = ls.iter().find(|&&l| l as usize >= lists) {
                return Err(invalid(
                    "plan",
                    format!("query {q}: list {l} is not a list of the model ({lists} lists)"),
                ));
            }
            let mut sorted = ls.clone();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                return Err(invalid("plan", format!("query {q}: a list given twice")));
            }
        }
    }
    Ok(())
}

/// Per query, its lists in probe order with their passing and live rows in these blocks
/// ([`ListCounts`]), from position `start[q]` on (every query from 0 when `start` is empty):
/// `count` lists (fewer at the end of the order), or with `count` `None` as many as this
/// snapshot's own plan reads before it decides (the `nprobe` nearest at least). The filter
/// is evaluated over the reported lists only, as the plan evaluates it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn list_counts(
    blocks: &[Block<'_>],
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    filter: &CompiledFilter<'_>,
    live: u64,
    start: &[usize],
    count: Option<usize>,
) -> Result<Vec<ListCounts>, SearchError> {
    let (Some((coarse, nprobe)), Some(pq)) = (ivf_nprobe(model, params.nprobe)?, model.pq()) else {
        return Err(invalid("mode", "the model is not an IVF model"));
    };
    let nq = queries.nrows();
    if !start.is_empty() && start.len() != nq {
        return Err(invalid(
            "start",
            format!("{} entries for {nq} queries (one per query)", start.len()),
        ));
    }
    let k_lists = coarse.lists();
    let y = model.project(queries)?;
    let d = y.ncols();
    let flat: Vec<f32> = y.iter().copied().collect();
    let first = coarse.probe(&flat, nprobe);
    let lists = Lists::new(blocks, filter, k_lists, pq.m())?;
    let target = plan_target(params.k, params.rerank, live);
    let chunks: Vec<Range<usize>> = (0..nq)
        .step_by(QUERY_CHUNK)
        .map(|s| s..(s + QUERY_CHUNK).min(nq))
        .collect();
    in_chunks(&chunks, params.threads.max(1), |r: &Range<usize>| {
        let mut out = Vec::with_capacity(r.len());
        for q in r.clone() {
            let from = start.get(q).copied().unwrap_or(0).min(k_lists);
            let mut order = ProbeOrder::new(coarse, &flat[q * d..(q + 1) * d], &first[q]);
            let end = match count {
                Some(c) => from.saturating_add(c).min(k_lists),
                None => {
                    let mut rule = ProbeRule::new(nprobe, k_lists, target, live);
                    let mut end = k_lists;
                    let mut i = 0;
                    while let Some((l, _)) = order.get(i) {
                        let rows = lists.rows(l)?;
                        rule.push(rows.ids.len() as u64, rows.read);
                        i += 1;
                        if rule.decide() != ProbeDecision::Undecided {
                            end = i;
                            break;
                        }
                    }
                    end.max(from)
                }
            };
            let mut c = ListCounts::default();
            for l in (from..end).filter_map(|i| order.get(i).map(|p| p.0)) {
                let rows = lists.rows(l)?;
                c.lists.push(l);
                c.passing.push(rows.ids.len() as u64);
                c.read.push(rows.read);
            }
            out.push(c);
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::{ProbeDecision, flat_is_cheaper, ivf_probe_decision};

    #[test]
    fn probing_stops_when_the_flat_search_reads_less() {
        // 1 % passing over 10⁶ rows: 10 of 1,000 read, 10 more wanted: 1,000 rows to read
        // against 10,000 passing rows: probe on.
        assert!(!flat_is_cheaper(10, 1000, 20, 1_000_000));
        // 0.1 %: 1 of 1,000, 19 more wanted: 19,000 rows against 1,000: the flat search.
        assert!(flat_is_cheaper(1, 1000, 20, 1_000_000));
        // Nothing read yet (empty lists): probe on.
        assert!(!flat_is_cheaper(0, 0, 20, 1_000_000));
        // 1 % passing, a 200-row list without a passing row: too small a sample, probe on;
        // 20,000 rows without one: the flat search.
        assert!(!flat_is_cheaper(0, 200, 20, 1_000_000));
        assert!(flat_is_cheaper(0, 20_000, 20, 1_000_000));
    }

    #[test]
    fn the_decision_reads_the_counts_in_probe_order() {
        // nprobe 2 of 8 lists, k 10 over 10⁶ live rows.
        let d = |p: &[u64], r: &[u64]| ivf_probe_decision(p, r, 2, 8, 10, None, 1_000_000);
        // Fewer than nprobe lists counted: undecided.
        assert_eq!(d(&[20], &[100]), ProbeDecision::Undecided);
        // The nprobe lists hold k: those two.
        assert_eq!(d(&[6, 4, 9], &[100, 100, 100]), ProbeDecision::Lists(2));
        // 5 of 200 read: probing on is cheaper (5 more at 2.5 %: 200 rows against 25,000).
        assert_eq!(d(&[3, 2], &[100, 100]), ProbeDecision::Undecided);
        assert_eq!(
            d(&[3, 2, 1, 4], &[100, 100, 100, 100]),
            ProbeDecision::Lists(4)
        );
        // 1 of 2,000 read: the flat search reads less (9 more at 0.05 % against 500 rows).
        assert_eq!(d(&[1, 0, 7], &[1000, 1000, 10]), ProbeDecision::Flat);
        // Every list read: those lists, however few they hold (here empty lists, which say
        // nothing of the passing fraction, and one row in the last).
        let last = [0u64, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(
            ivf_probe_decision(&last, &last, 2, 8, 10, None, 8),
            ProbeDecision::Lists(8)
        );
        // The depth is R when re-ranked, capped at the live rows: R = 50 over 12 live rows
        // needs 12.
        assert_eq!(
            ivf_probe_decision(&[6, 6], &[6, 6], 1, 4, 10, Some(50), 12),
            ProbeDecision::Lists(2)
        );
    }
}
