//! Re-ranking and exact search with full-precision vectors.
//!
//! Re-ranking (`--rerank R`, the standard ADC + re-rank recipe of Jégou et al. TPAMI 2011,
//! §IV-B): the code scan keeps the R best candidates per query; each is re-scored exactly
//! (squared L2 or inner product between the raw float query and the row's stored vector) and
//! the k best of those are returned. The result is exact search restricted to the R
//! candidates, so with R ≥ the number of live rows it equals exact search.
//!
//! Candidates come out of the scan as ids; their rows are found in their block by binary
//! search of the id column (segments written in id order, the common case) or, for blocks
//! whose ids are not sorted, by one pass over the id column for all candidates of the block.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use half::f16;
use ndarray::ArrayView2;

use crate::format::RowColumn;
use crate::scan::{
    DenseRows, DenseValues, Direction, Dispatch, Metric, ScanOptions, TopK, dense_f32, dense_topk,
    f32_to_key, key_to_score,
};
use crate::storage::Block;

use super::error::{SearchError, invalid};
use super::list_scope::range_deleted;
use super::query::Hit;
use super::vectors::{RowRef, VectorSource};

/// A candidate from the code scan: its code score, id and block, and its row in the block
/// when the scan knows it (IVF lists); otherwise re-ranking finds it by id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    pub score: f32,
    pub id: u64,
    pub block: usize,
    pub row: Option<usize>,
}

/// Each query's candidates as hits (their score as is), when no re-ranking follows.
pub(crate) fn hits(lists: Vec<Vec<Candidate>>) -> Vec<Vec<Hit>> {
    lists
        .into_iter()
        .map(|l| {
            l.into_iter()
                .map(|c| Hit {
                    id: c.id,
                    score: c.score,
                })
                .collect()
        })
        .collect()
}

/// Rows of the live rows with the given ids in `block`.
pub(crate) fn locate_rows(
    block: &Block<'_>,
    wanted: &HashSet<u64>,
) -> Result<HashMap<u64, usize>, SearchError> {
    let mut found = HashMap::with_capacity(wanted.len());
    let mut missing = HashSet::new();
    let ids = block.ids()?;
    for &id in wanted {
        match ids.binary_search(&id) {
            Ok(r) if !block.is_deleted(r) => {
                found.insert(id, r);
            }
            _ => {
                missing.insert(id);
            }
        }
    }
    if !missing.is_empty() {
        for (r, id) in ids.iter().enumerate() {
            if missing.contains(id) && !block.is_deleted(r) {
                found.insert(*id, r);
            }
        }
    }
    if let Some(id) = wanted.iter().find(|id| !found.contains_key(id)) {
        // The scan reported this id from this block, so it is there: an internal fault.
        return Err(invalid(
            "candidates",
            format!("id {id} is not a live row of its block (internal error)"),
        ));
    }
    Ok(found)
}

/// Sorts best first (by `direction`), ties by smaller id, and keeps `k`.
pub(crate) fn sort_truncate(list: &mut Vec<Hit>, direction: Direction, k: usize) {
    list.sort_by(|a, b| {
        let s = match direction {
            Direction::SmallerIsBetter => a.score.total_cmp(&b.score),
            Direction::LargerIsBetter => b.score.total_cmp(&a.score),
        };
        s.then(a.id.cmp(&b.id))
    });
    list.truncate(k);
}

/// Candidates ahead of the one being scored whose rows are prefetched.
const PREFETCH_AHEAD: usize = 2;

/// Re-scores each query's candidates exactly with `metric` and keeps the `k` best. `queries`
/// are as wide as `source`'s vectors and finite: the plan checked them where the query entered
/// ([`super::query::check_stored`]).
pub(crate) fn rerank(
    blocks: &[Block<'_>],
    candidates: &[Vec<Candidate>],
    queries: ArrayView2<f32>,
    metric: Metric,
    k: usize,
    source: &dyn VectorSource,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let mut buf = vec![0.0f32; source.dim()];
    rescore(blocks, candidates, metric.direction(), k, |qi, rows| {
        let q: Vec<f32> = queries.row(qi).to_vec();
        // In storage order (the candidates of one probed list lie in one run of rows), each
        // row prefetched a few candidates ahead of its scoring.
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_unstable_by_key(|&i| (rows[i].block, rows[i].row));
        let mut scores = vec![0f32; rows.len()];
        for (n, &i) in order.iter().enumerate() {
            if let Some(&next) = order.get(n + PREFETCH_AHEAD) {
                source.prefetch(rows[next]);
            }
            let at = rows[i];
            scores[i] = source
                .score(at, &q, metric, &mut buf)?
                .ok_or_else(|| no_vector(at))?;
        }
        Ok(scores)
    })
}

/// The stored vectors of `rows`, row-major (`source.dim()` values each), for scores that need
/// the vectors themselves.
pub(crate) fn gather(source: &dyn VectorSource, rows: &[RowRef]) -> Result<Vec<f32>, SearchError> {
    let dim = source.dim();
    let mut out = vec![0.0f32; rows.len() * dim];
    for (&at, o) in rows.iter().zip(out.chunks_exact_mut(dim.max(1))) {
        if !source.vector(at, o)? {
            return Err(no_vector(at));
        }
    }
    Ok(out)
}

fn no_vector(at: RowRef) -> SearchError {
    SearchError::NoVectors {
        detail: format!("row id {} (block {}) has no stored vector", at.id, at.block),
    }
}

/// Re-scores each query's candidates with `score(query, rows)` (the candidates' rows, in
/// candidate order → one score each) and keeps the `k` best by `direction`, ties by smaller id.
pub(crate) fn rescore(
    blocks: &[Block<'_>],
    candidates: &[Vec<Candidate>],
    direction: Direction,
    k: usize,
    mut score: impl FnMut(usize, &[RowRef]) -> Result<Vec<f32>, SearchError>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let rows = candidate_rows(blocks, candidates)?;
    let mut out = Vec::with_capacity(candidates.len());
    let mut refs = Vec::new();
    for (qi, (cands, rows)) in candidates.iter().zip(&rows).enumerate() {
        refs.clear();
        refs.extend(cands.iter().zip(rows).map(|(c, &row)| RowRef {
            block: c.block,
            row,
            id: c.id,
        }));
        let scores = if cands.is_empty() {
            Vec::new()
        } else {
            score(qi, &refs)?
        };
        let mut list: Vec<Hit> = cands
            .iter()
            .zip(scores)
            .map(|(c, score)| Hit { id: c.id, score })
            .collect();
        sort_truncate(&mut list, direction, k);
        out.push(list);
    }
    Ok(out)
}

/// The row of every candidate in its block: the row the scan reported (checked against the id
/// column), else by binary search of the id column (segments without lists are written in id
/// order), then, for the candidates still not found live, one pass over the id column of
/// their block ([`locate_rows`]; rows grouped by list are not in id order).
fn candidate_rows(
    blocks: &[Block<'_>],
    candidates: &[Vec<Candidate>],
) -> Result<Vec<Vec<usize>>, SearchError> {
    let mut ids: Vec<Option<&[u64]>> = vec![None; blocks.len()];
    let mut missing: HashMap<usize, HashSet<u64>> = HashMap::new();
    let mut rows = Vec::with_capacity(candidates.len());
    for cands in candidates {
        let mut rs = Vec::with_capacity(cands.len());
        for c in cands {
            let block = blocks.get(c.block).ok_or_else(|| {
                invalid("candidates", format!("block {} does not exist", c.block))
            })?;
            let col = match ids[c.block] {
                Some(col) => col,
                None => *ids[c.block].insert(block.ids()?),
            };
            let known = c.row.filter(|&r| col.get(r) == Some(&c.id));
            match known
                .ok_or(())
                .or_else(|_| col.binary_search(&c.id).map_err(|_| ()))
            {
                Ok(r) if !block.is_deleted(r) => rs.push(r),
                _ => {
                    missing.entry(c.block).or_default().insert(c.id);
                    rs.push(usize::MAX);
                }
            }
        }
        rows.push(rs);
    }
    for (b, wanted) in missing {
        let found = locate_rows(&blocks[b], &wanted)?;
        for (cands, rs) in candidates.iter().zip(&mut rows) {
            for (c, r) in cands.iter().zip(rs.iter_mut()) {
                if c.block == b && *r == usize::MAX {
                    *r = found.get(&c.id).copied().unwrap_or(usize::MAX);
                }
            }
        }
    }
    Ok(rows)
}

/// Per query, the (score, id) pairs one kernel call found.
type QueryParts = Vec<Vec<(f32, u64)>>;

/// Rows gathered per kernel call by [`exact_gathered`] (at most 64 Ki rows' vectors copied at a
/// time: 24 MiB of 96-D f32).
const EXACT_GATHER_ROWS: usize = 1 << 16;

/// Exact search of a filtered block's live rows in `ranges` gathered into one buffer, when
/// fewer than half of the ranges' rows are live and the source holds the block's vectors as a
/// column (`None` otherwise: the caller scans the ranges in place, masked). A sparse filter's
/// ranges are runs of 64-row words mostly of rejected rows, and many of them: scanned in place,
/// each run is a kernel call that scores every row of it for every query; gathered, one call
/// per [`EXACT_GATHER_ROWS`] scores only the passing rows, each by the same arithmetic.
fn exact_gathered(
    (b, block): (usize, &Block<'_>),
    ranges: &[Range<usize>],
    deleted: Option<&[u64]>,
    source: &dyn VectorSource,
    (queries, metric, k): (&[f32], Metric, usize),
    opts: ScanOptions,
) -> Result<Option<Vec<QueryParts>>, SearchError> {
    let dim = source.dim();
    let is_dead = |row: usize| {
        deleted
            .and_then(|d| d.get(row / 64))
            .is_some_and(|w| (w >> (row % 64)) & 1 == 1)
    };
    let len: usize = ranges.iter().map(|r| r.len()).sum();
    let live = ranges
        .iter()
        .flat_map(|r| r.clone())
        .filter(|&row| !is_dead(row))
        .count();
    if 2 * live >= len {
        return Ok(None);
    }
    let Some(first) = ranges.first() else {
        return Ok(None);
    };
    if source.column(b, first.clone())?.is_none() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    let (mut ids, mut v32, mut v16): (Vec<u64>, Vec<f32>, Vec<f16>) = Default::default();
    let flush =
        |ids: &mut Vec<u64>, v32: &mut Vec<f32>, v16: &mut Vec<f16>| -> Result<_, SearchError> {
            let values = if v16.is_empty() {
                DenseValues::F32(v32)
            } else {
                DenseValues::F16(v16)
            };
            let rows = DenseRows::new(values, dim, ids, None)?;
            let part = dense_topk(&rows, queries, metric, k, opts)?;
            ids.clear();
            v32.clear();
            v16.clear();
            Ok(part)
        };
    for r in ranges {
        for col in [RowColumn::Ids, RowColumn::Vectors] {
            block.check_par(col, r.clone(), opts.threads)?;
        }
        let rids = block.ids_in(r.clone())?;
        let values = source.column(b, r.clone())?.ok_or_else(|| {
            invalid(
                "vectors",
                "a block's vectors are a column for some rows only",
            )
        })?;
        for (j, &id) in rids.iter().enumerate() {
            if is_dead(r.start + j) {
                continue;
            }
            let span = j * dim..(j + 1) * dim;
            let short = || {
                invalid(
                    "vectors",
                    format!("row {} has fewer than {dim} values", r.start + j),
                )
            };
            match values {
                DenseValues::F32(v) => v32.extend_from_slice(v.get(span).ok_or_else(short)?),
                DenseValues::F16(v) => v16.extend_from_slice(v.get(span).ok_or_else(short)?),
            }
            ids.push(id);
            if ids.len() == EXACT_GATHER_ROWS {
                parts.push(flush(&mut ids, &mut v32, &mut v16)?);
            }
        }
    }
    if !ids.is_empty() {
        parts.push(flush(&mut ids, &mut v32, &mut v16)?);
    }
    Ok(Some(parts))
}

/// Exact search over the stored vectors of the rows `scopes` names in each block: the `k`
/// best live rows per query (`queries` checked as for [`rerank`]).
pub(crate) fn exact_search(
    blocks: &[Block<'_>],
    scopes: &[Vec<Range<usize>>],
    queries: ArrayView2<f32>,
    metric: Metric,
    k: usize,
    source: &dyn VectorSource,
    opts: ScanOptions,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let dim = source.dim();
    let flat: Vec<f32> = queries.iter().copied().collect();
    let nq = queries.nrows();
    let direction = metric.direction();
    let mut lists: Vec<Vec<Hit>> = vec![Vec::new(); nq];
    let mut buf = vec![0.0f32; dim];
    for ((b, block), ranges) in blocks.iter().enumerate().zip(scopes) {
        if ranges.is_empty() {
            continue;
        }
        let deleted = block.deleted_words();
        if block.is_filtered()
            && let Some(parts) = exact_gathered(
                (b, block),
                ranges,
                deleted.as_deref(),
                source,
                (&flat, metric, k),
                opts,
            )?
        {
            for part in parts {
                for (acc, p) in lists.iter_mut().zip(part) {
                    acc.extend(p.into_iter().map(|(score, id)| Hit { id, score }));
                }
            }
            continue;
        }
        for r in ranges {
            for col in [RowColumn::Ids, RowColumn::Vectors] {
                block.check_par(col, r.clone(), opts.threads)?;
            }
            let del = deleted.as_deref().map(|d| range_deleted(d, r.clone()));
            let ids = block.ids_in(r.clone())?;
            let part: Vec<Vec<(f32, u64)>> = match source.column(b, r.clone())? {
                Some(values) => {
                    let rows = DenseRows::new(values, dim, ids, del.as_deref())?;
                    dense_topk(&rows, &flat, metric, k, opts)?
                }
                None => {
                    let mut tops: Vec<TopK> =
                        (0..nq).map(|_| TopK::new(k)).collect::<Result<_, _>>()?;
                    for (j, &id) in ids.iter().enumerate() {
                        let row = r.start + j;
                        if block.is_deleted(row) {
                            continue;
                        }
                        let at = RowRef { block: b, row, id };
                        if !source.vector(at, &mut buf)? {
                            return Err(no_vector(at));
                        }
                        for (t, q) in tops.iter_mut().zip(flat.chunks_exact(dim)) {
                            let s = dense_f32(metric, q, &buf, Dispatch::Auto)?;
                            let key = match direction {
                                Direction::SmallerIsBetter => f32_to_key(s),
                                Direction::LargerIsBetter => f32_to_key(-s),
                            };
                            t.push(key, id);
                        }
                    }
                    tops.into_iter()
                        .map(|t| {
                            t.into_sorted_vec()
                                .into_iter()
                                .map(|(key, id)| (key_to_score(key, direction), id))
                                .collect()
                        })
                        .collect()
                }
            };
            for (acc, p) in lists.iter_mut().zip(part) {
                acc.extend(p.into_iter().map(|(score, id)| Hit { id, score }));
            }
        }
    }
    for l in &mut lists {
        sort_truncate(l, direction, k);
    }
    Ok(lists)
}
