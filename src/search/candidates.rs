//! A code scan's candidates and the stored vectors that re-score them: each candidate's row
//! found in its block, its stored vector gathered, each query's candidates re-scored by the
//! score a query kind gives and the `k` best kept.
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

use crate::scan::Direction;
use crate::storage::Block;

use super::error::{SearchError, invalid};
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

pub(crate) fn no_vector(at: RowRef) -> SearchError {
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
