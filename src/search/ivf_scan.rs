//! IVFADC search (Jégou et al., TPAMI 2011, §IV): k-NN over the residual PQ codes of an IVF
//! model (`ivf:K,pq:Mx8`).
//!
//! Per query, the `nprobe` coarse centroids nearest its projection `x` are probed (all K
//! without `nprobe`: the flat residual search). The rows of list `l` are scanned by the LUT-8
//! kernel with the table `‖x − c_l‖² + B_l − 2·A_x`, where `B_l` is the list's precomputed
//! term ([`crate::model::CoarseQuantizer::list_terms`]) and `A_x` the query's inner-product
//! table; the score of a code is then `‖x − (c_l + r̂)‖²`, the squared distance to the row's
//! reconstruction. Queries are grouped by list, so each list's rows are read once per batch of
//! queries that probe it. Results merge over lists and blocks, ties by smaller id, so they do
//! not depend on the order lists are visited; with `nprobe = K` every row is scored.
//! Re-ranking with stored vectors works on the candidates as for every other mode.

use std::collections::BTreeMap;

use ndarray::ArrayView2;

use crate::format::RowColumn;
use crate::model::{CoarseQuantizer, Model};
use crate::scan::{CodeRows, Direction, Dispatch, ScanOptions, lut8_topk_batch};
use crate::storage::Block;

use super::error::{SearchError, invalid};
use super::list_scope::range_deleted;
use super::rerank::{Candidate, hits, rerank};
use super::{Hit, SearchMode, SearchParams, VectorSource};

/// Queries whose tables are built and scanned together per list (bounds the tables' memory:
/// 512 × M × 1 KiB).
const QUERY_CHUNK: usize = 512;

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
    let Some((c, n)) = ivf_nprobe(model, Some(nprobe))? else {
        return Err(invalid("nprobe", "the model has no coarse quantiser"));
    };
    let y = model.project(queries)?;
    let flat: Vec<f32> = y.iter().copied().collect();
    Ok(c.probe(&flat, n)
        .into_iter()
        .map(|p| {
            let mut l: Vec<u32> = p.into_iter().map(|(l, _)| l).collect();
            l.sort_unstable();
            l
        })
        .collect())
}

/// k-NN by ADC over the residual codes of an IVF model, re-ranked when `params.rerank`.
pub(crate) fn search_ivf(
    blocks: &[Block<'_>],
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
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
    let mut opts = ScanOptions {
        threads: params.threads.max(1),
        ..ScanOptions::default()
    };
    // A list holds N/K rows: too few for the query-lane kernel's interleaved tables (a pass
    // over 8 × M × 256 floats per 8 queries) to pay, so `Auto` runs the one-query kernel it
    // runs for one or two queries (same scores bit for bit, see `scan::lut`).
    if opts.dispatch == Dispatch::Auto {
        opts.dispatch = Dispatch::Scalar;
    }
    let kc = params.rerank.unwrap_or(params.k);
    let y = model.project(queries)?;
    let flat: Vec<f32> = y.iter().copied().collect();
    let probes = coarse.probe(&flat, nprobe);
    let width = pq.m() * pq.ksub();
    // −2⟨x_m, p_{m,j}⟩ per query.
    let ip = pq.scaled_ip_tables(&flat, -2.0);
    // list → (query, ‖x − c‖²)
    let mut by_list: BTreeMap<u32, Vec<(usize, f32)>> = BTreeMap::new();
    for (q, p) in probes.into_iter().enumerate() {
        for (l, dist) in p {
            by_list.entry(l).or_default().push((q, dist));
        }
    }
    let mut acc: Vec<Vec<Candidate>> = vec![Vec::new(); queries.nrows()];
    let mut terms = vec![0f32; width];
    let mut tables = vec![0f32; QUERY_CHUNK.min(queries.nrows()) * width];
    for (l, qs) in &by_list {
        // The list's rows in every block.
        let mut scopes = Vec::new();
        for (b, block) in blocks.iter().enumerate() {
            for r in block.rows_in_lists(&[*l])? {
                if !r.is_empty() {
                    scopes.push((b, r));
                }
            }
        }
        if scopes.is_empty() {
            continue;
        }
        model.ivf_list_terms(*l as usize, &mut terms);
        for chunk in qs.chunks(QUERY_CHUNK) {
            let tables = &mut tables[..chunk.len() * width];
            for (t, &(q, dist)) in tables.chunks_exact_mut(width).zip(chunk) {
                let a = &ip[q * width..(q + 1) * width];
                for ((o, &b), &a) in t.iter_mut().zip(&terms).zip(a) {
                    *o = b + a;
                }
                for o in t.iter_mut().take(pq.ksub()) {
                    *o += dist;
                }
            }
            for (b, r) in &scopes {
                let block = &blocks[*b];
                for col in [RowColumn::Ids, RowColumn::Codes] {
                    block.check_par(col, r.clone(), opts.threads)?;
                }
                let deleted = block.deleted_words();
                let del = deleted.as_deref().map(|d| range_deleted(d, r.clone()));
                let ids = block.ids_in(r.clone())?;
                let codes = block.codes_in(r.clone())?;
                let rows = CodeRows::new(codes, pq.m(), ids, del.as_deref())?;
                let part = lut8_topk_batch(&rows, tables, Direction::SmallerIsBetter, kc, opts)?;
                for (&(q, _), p) in chunk.iter().zip(part) {
                    let a = &mut acc[q];
                    a.extend(p.into_iter().map(|(score, id)| Candidate {
                        score,
                        id,
                        block: *b,
                    }));
                    if a.len() >= 4 * kc.max(64) {
                        best_first(a, kc);
                    }
                }
            }
        }
    }
    for a in &mut acc {
        best_first(a, kc);
    }
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

/// Sorts candidates by score then id and keeps the `k` best.
fn best_first(a: &mut Vec<Candidate>, k: usize) {
    a.sort_by(|x, y| x.score.total_cmp(&y.score).then(x.id.cmp(&y.id)));
    a.truncate(k);
}
