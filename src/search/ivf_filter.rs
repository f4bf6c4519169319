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

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

use ndarray::{ArrayView2, Axis};

use crate::model::Model;
use crate::scan::{ListTable, ListTopK, LutTerms};
use crate::storage::Block;

use super::error::{SearchError, invalid};
use super::filter::CompiledFilter;
use super::ivf_scan::{in_chunks, ivf_nprobe, list_terms};
use super::list_scope::range_deleted;
use super::query::{Hit, SearchParams};
use super::rerank::{Candidate, hits, rerank};
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

/// A query probing on first ranks its `WIDEN × nprobe` nearest lists, at least `WIDEN_MIN`,
/// and all of them only when those do not end it.
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
/// the snapshot's live rows.
pub(crate) fn search_ivf_filtered(
    blocks: &[Block<'_>],
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
    filter: &CompiledFilter<'_>,
    live: u64,
) -> Result<Vec<IvfOutcome>, SearchError> {
    let (Some((coarse, nprobe)), Some(pq)) = (ivf_nprobe(model, params.nprobe)?, model.pq()) else {
        return Err(invalid("mode", "the model is not an IVF model"));
    };
    let threads = params.threads.max(1);
    let kc = params.rerank.unwrap_or(params.k);
    ListTopK::new(kc)?;
    let y = model.project(queries)?;
    let d = y.ncols();
    let flat: Vec<f32> = y.iter().copied().collect();
    let first = coarse.probe(&flat, nprobe);
    let lists = Lists::new(blocks, filter, coarse.lists(), pq.m())?;
    let target = kc as u64;
    let nq = queries.nrows();
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
                let (mut found, mut read) = (0u64, 0u64);
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
                for &(l, dist) in &first[q] {
                    let (f, r) = scan(l, dist, &mut top)?;
                    (found, read) = (found + f, read + r);
                }
                let more = found < target && nprobe < coarse.lists();
                let mut to_flat = more && flat_is_cheaper(found, read, target, live);
                if more && !to_flat {
                    // The query's lists in centroid order, made only when it probes on: its
                    // `WIDEN` × nprobe (at least `WIDEN_MIN`) nearest, then — if those do not
                    // end it — all of them (ranking every list exactly costs more than the
                    // scan of a few lists).
                    let mut done = vec![false; coarse.lists()];
                    for &(l, _) in &first[q] {
                        if let Some(x) = done.get_mut(l as usize) {
                            *x = true;
                        }
                    }
                    let mut width = (WIDEN * nprobe).max(WIDEN_MIN).min(coarse.lists());
                    'widen: loop {
                        let order = coarse.probe(&flat[q * d..(q + 1) * d], width);
                        for &(l, dist) in order.first().map_or(&[][..], |o| o.as_slice()) {
                            if found >= target {
                                break 'widen;
                            }
                            if done.get(l as usize).copied().unwrap_or(true) {
                                continue;
                            }
                            if flat_is_cheaper(found, read, target, live) {
                                to_flat = true;
                                break 'widen;
                            }
                            let (f, r) = scan(l, dist, &mut top)?;
                            (found, read) = (found + f, read + r);
                            if let Some(x) = done.get_mut(l as usize) {
                                *x = true;
                            }
                        }
                        if width == coarse.lists() {
                            break;
                        }
                        width = coarse.lists();
                    }
                }
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

#[cfg(test)]
mod tests {
    use super::flat_is_cheaper;

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
}
