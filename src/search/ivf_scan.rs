//! IVFADC search (Jégou et al., TPAMI 2011, §IV): k-NN over the residual PQ codes of an IVF
//! model (`ivf:K,pq:Mx8`).
//!
//! Per query, the `nprobe` coarse centroids nearest its projection `x` are probed (all K
//! without `nprobe`: the flat residual search). The rows of list `l` are scanned by the LUT-8
//! kernel with the table `‖x − c_l‖² + B_l − 2·A_x`, where `B_l` is the list's precomputed
//! term ([`crate::model::CoarseQuantizer::list_terms`]) and `A_x` the query's inner-product
//! table; the score of a code is then `‖x − (c_l + r̂)‖²`, the squared distance to the row's
//! reconstruction. The per-list tables are assembled from terms checked once (the list terms
//! when the model is loaded, the query's when they are computed), not re-checked per (query,
//! list) pair. One collector per query runs over its lists, ties by smaller id, so results do
//! not depend on the order lists are visited; with `nprobe = K` every row is scored.
//! Re-ranking with stored vectors works on the candidates as for every other mode.

use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::ArrayView2;
use rayon::prelude::*;

use crate::format::RowColumn;
use crate::model::{CoarseQuantizer, Model, ProductQuantizer};
use crate::scan::{ListTable, ListTopK, LutTerms, Terms};
use crate::storage::Block;

use super::block_scan::rerank;
use super::candidates::{Candidate, hits};
use super::error::{SearchError, invalid};
use super::filter::{BlockFilter, filter_ranges};
use super::mode::SearchMode;
use super::query::{Hit, SearchParams};
use super::vectors::VectorSource;

/// One chunk of queries' candidates, best first.
type ChunkResult = Result<Vec<Vec<Candidate>>, SearchError>;

/// Queries whose inner-product tables are computed together (one multi-row product; bounds
/// their memory: 64 × M × 1 KiB, in L2) and which a worker takes at once.
const QUERY_CHUNK: usize = 64;

/// The coarse quantiser of `model` and the number of lists to probe (`nprobe`, or all),
/// checked: 1 ≤ nprobe ≤ K.
pub(crate) fn ivf_nprobe(
    model: &Model,
    nprobe: Option<usize>,
) -> Result<Option<(&CoarseQuantizer, usize)>, SearchError> {
    let Some(c) = model.ivf() else {
        return Ok(None);
    };
    let n = nprobe.unwrap_or(c.lists());
    if n == 0 || n > c.lists() {
        return Err(invalid(
            "nprobe",
            format!(
                "{n}: the model's coarse quantiser has {} lists (1 ≤ nprobe ≤ {})",
                c.lists(),
                c.lists()
            ),
        ));
    }
    Ok(Some((c, n)))
}

/// The probed lists of each query (ascending ids), from the model's coarse quantiser.
pub(crate) fn ivf_probe_lists(
    model: &Model,
    queries: ArrayView2<f32>,
    nprobe: usize,
) -> Result<Vec<Vec<u32>>, SearchError> {
    let Some((_, n)) = ivf_nprobe(model, Some(nprobe))? else {
        return Err(invalid("nprobe", "the model has no coarse quantiser"));
    };
    Ok(model.probe_lists(queries, n)?.unwrap_or_default())
}

/// k-NN by ADC over the residual codes of an IVF model, re-ranked when `params.rerank`.
///
/// Query by query (each query's inner-product table stays in cache while its lists are
/// scanned, and the precomputed list terms are read once per probed list): per probed list the
/// table `B_l + A_x (+ ‖x − c_l‖²)` is assembled from terms checked once
/// ([`crate::scan::ListTable`]) and the list's rows in every block are scanned into one
/// collector per query, whose threshold carries from list to list. Under a filter, a list's
/// rows are scanned only where the filter passes some row (see [`ListScopes::new`]), and a list
/// without a passing row is skipped before its table is assembled. Queries run in chunks
/// over `params.threads` workers; results do not depend on the split.
pub(crate) fn search_ivf(
    blocks: &[Block<'_>],
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
    filters: Option<&[BlockFilter]>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    if params.mode != SearchMode::AdcL2 {
        return Err(invalid(
            "mode",
            format!(
                "{}: an IVF model's residual codes are searched by adc (squared L2) or exactly \
                 (exact, with stored vectors)",
                params.mode.name()
            ),
        ));
    }
    let (Some((coarse, nprobe)), Some(pq)) = (ivf_nprobe(model, params.nprobe)?, model.pq()) else {
        return Err(invalid("mode", "the model is not an IVF model"));
    };
    let threads = params.threads.max(1);
    let kc = params.rerank.unwrap_or(params.k);
    ListTopK::new(kc)?;
    let y = model.project(queries)?;
    let d = y.ncols();
    let flat: Vec<f32> = y.iter().copied().collect();
    let probes = coarse.probe(&flat, nprobe);
    let mut probed = vec![false; coarse.lists()];
    for p in &probes {
        for &(l, _) in p {
            if let Some(x) = probed.get_mut(l as usize) {
                *x = true;
            }
        }
    }
    let scopes = ListScopes::new(blocks, &probed, threads, filters)?;
    let deleted: Vec<_> = blocks.iter().map(|b| b.deleted_words()).collect();
    let nq = queries.nrows();
    let chunks: Vec<std::ops::Range<usize>> = (0..nq)
        .step_by(QUERY_CHUNK)
        .map(|s| s..(s + QUERY_CHUNK).min(nq))
        .collect();
    let run_chunk = |r: &std::ops::Range<usize>| -> ChunkResult {
        // −2⟨x_m, p_{m,j}⟩ per query.
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
            for &(l, dist) in &probes[q] {
                let runs = scopes.of(l);
                if runs.is_empty() {
                    continue;
                }
                let lt = list_terms(model, pq, l, &mut own)?;
                table.assemble(lt, qt, dist)?;
                for run in runs {
                    let del = deleted[run.block].as_deref();
                    top.scan(
                        &table,
                        run.codes,
                        run.ids,
                        del,
                        run.first_row,
                        run.block as u32,
                    )?;
                }
            }
            out.push(
                top.into_sorted()
                    .into_iter()
                    .map(|(score, id, b, row)| Candidate {
                        score,
                        id,
                        block: b as usize,
                        row: Some(row),
                    })
                    .collect(),
            );
        }
        Ok(out)
    };
    let acc: Vec<Vec<Candidate>> = in_chunks(&chunks, threads, run_chunk)?;
    match params.rerank {
        None => Ok(hits(acc)),
        Some(_) => {
            let source = source.ok_or_else(|| SearchError::NoVectors {
                detail: "re-ranking needs stored vectors and none were given".into(),
            })?;
            rerank(
                blocks,
                &acc,
                queries,
                params.mode.rerank_metric(),
                params.k,
                source,
            )
        }
    }
}

/// One run of a list's rows in one block: its codes and ids, checked.
struct Run<'a> {
    block: usize,
    first_row: usize,
    codes: &'a [u8],
    ids: &'a [u64],
}

/// The runs of rows of each probed list over all blocks, found and checked once per search.
struct ListScopes<'a> {
    /// Per list (indexed by list id): its runs; empty for lists not probed.
    runs: Vec<Vec<Run<'a>>>,
}

impl<'a> ListScopes<'a> {
    /// The probed lists' runs. Under a filter (`filters`, one per block) a block without a
    /// passing row contributes nothing, and one whose passing rows are sparse (under
    /// [`SPARSE_FRACTION`](super::filter::block_filter::SPARSE_FRACTION)) only the parts of
    /// each list's rows inside the runs of 64-row words holding a passing row
    /// ([`filter_ranges`]): a selective filter then scans, and assembles tables for, only the
    /// lists and rows it passes — the plan that makes the every-list search of a probed query
    /// short of passing rows cost what the flat index's prefilter does, not a masked scan of
    /// every row.
    fn new(
        blocks: &[Block<'a>],
        probed: &[bool],
        threads: usize,
        filters: Option<&[BlockFilter]>,
    ) -> Result<Self, SearchError> {
        let mut runs: Vec<Vec<Run<'a>>> = (0..probed.len()).map(|_| Vec::new()).collect();
        let wanted: Vec<u32> = (0..probed.len() as u32)
            .filter(|&l| probed[l as usize])
            .collect();
        for (b, block) in blocks.iter().enumerate() {
            // The passing runs of a sparse filter; `None`: the block is scanned whole (masked).
            let passing: Option<Vec<std::ops::Range<usize>>> = match filters.and_then(|f| f.get(b))
            {
                None => None,
                Some(f) => {
                    let all = 0..block.rows();
                    let r = filter_ranges(std::slice::from_ref(&all), &f.pass, block.rows());
                    match r.as_slice() {
                        [] => continue,
                        [one] if *one == all => None,
                        _ => Some(r),
                    }
                }
            };
            let ranges: Vec<(u32, std::ops::Range<usize>)> = if block.list_index().is_some() {
                wanted
                    .iter()
                    .filter_map(|&l| block.list_range(l).map(|r| (l, r)))
                    .filter(|(_, r)| !r.is_empty())
                    .collect()
            } else {
                // One pass over the list column (a log batch, or a block written without a
                // list index).
                let mut out: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
                if let Some(col) = block.lists()? {
                    for (i, &l) in col.iter().enumerate() {
                        if !probed.get(l as usize).copied().unwrap_or(false) {
                            continue;
                        }
                        match out.last_mut() {
                            Some((pl, r)) if *pl == l && r.end == i => r.end = i + 1,
                            _ => out.push((l, i..i + 1)),
                        }
                    }
                }
                out
            };
            let ranges: Vec<(u32, std::ops::Range<usize>)> = match &passing {
                None => ranges,
                Some(p) => ranges
                    .into_iter()
                    .flat_map(|(l, r)| {
                        // The passing runs that end after r starts, while they start before
                        // it ends, clipped to r (both lists ascending and disjoint).
                        let (s, e) = (r.start, r.end);
                        let from = p.partition_point(|x| x.end <= s);
                        p[from..]
                            .iter()
                            .take_while(move |x| x.start < e)
                            .map(move |x| (l, x.start.max(s)..x.end.min(e)))
                    })
                    .collect(),
            };
            for (l, r) in ranges {
                for col in [RowColumn::Ids, RowColumn::Codes] {
                    block.check_par(col, r.clone(), threads)?;
                }
                if let Some(slot) = runs.get_mut(l as usize) {
                    slot.push(Run {
                        block: b,
                        first_row: r.start,
                        codes: block.codes_in(r.clone())?,
                        ids: block.ids_in(r)?,
                    });
                }
            }
        }
        Ok(ListScopes { runs })
    }

    fn of(&self, l: u32) -> &[Run<'a>] {
        self.runs.get(l as usize).map_or(&[], |r| r.as_slice())
    }
}

/// `run` over `chunks` of queries on `threads` workers, each taking the next chunk until none
/// is left (a dynamic schedule: results do not depend on the split), concatenated in order.
pub(super) fn in_chunks<T: Send>(
    chunks: &[std::ops::Range<usize>],
    threads: usize,
    run: impl Fn(&std::ops::Range<usize>) -> Result<Vec<T>, SearchError> + Sync,
) -> Result<Vec<T>, SearchError> {
    type Part<T> = Result<Vec<T>, SearchError>;
    let parts: Vec<Part<T>> = if threads == 1 || chunks.len() == 1 {
        chunks.iter().map(&run).collect()
    } else {
        let next = AtomicUsize::new(0);
        let done: Vec<Vec<(usize, Part<T>)>> = (0..threads.min(chunks.len()))
            .into_par_iter()
            .with_max_len(1)
            .map(|_| {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(r) = chunks.get(i) else { break };
                    mine.push((i, run(r)));
                }
                mine
            })
            .collect();
        let mut all: Vec<(usize, Part<T>)> = done.into_iter().flatten().collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, r)| r).collect()
    };
    let mut out = Vec::new();
    for p in parts {
        out.extend(p?);
    }
    Ok(out)
}

/// List `l`'s query-independent ADC terms (the residual's ‖p‖² + 2⟨c, p⟩ of Jégou et al., TPAMI
/// 2011, §III-B): the model's precomputed table, or, for a model that keeps none, computed into
/// `own` (reused for the next list).
pub(super) fn list_terms<'a>(
    model: &'a Model,
    pq: &ProductQuantizer,
    l: u32,
    own: &'a mut Option<LutTerms>,
) -> Result<Terms<'a>, SearchError> {
    match model.ivf_terms() {
        Some(t) => t.group(l as usize),
        None => {
            let mut terms = vec![0f32; pq.m() * pq.ksub()];
            model.ivf_list_terms(l as usize, &mut terms);
            own.insert(LutTerms::new(terms, pq.m(), "ivf list terms")?)
                .group(0)
        }
    }
    .ok_or_else(|| invalid("nprobe", format!("list {l}: no terms")))
}
