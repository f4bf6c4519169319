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

pub mod api;
pub mod asym;
mod error;
mod float_codes;
pub(crate) mod list_scope;
pub mod mode;
mod pq4_fastscan;
pub mod probe;
pub mod radius;
pub mod rerank;
pub mod vectors;

use std::ops::Range;

use ndarray::{Array2, ArrayView2, Axis};
use serde::Serialize;

use crate::format::CodeKind;
use crate::format::append_log::NO_LIST;
use crate::model::{AdcMetric, Model};
use crate::scan::{
    CodeRows, DenseRows, DenseValues, Direction, ScanOptions, dense_topk, hamming_topk_batch,
    lut4_topk_batch, lut8_topk_batch,
};
use crate::storage::{Block, Snapshot};

pub use asym::{asym_bit_terms, asym_tables};
pub use error::SearchError;
pub use mode::{MODE_NAMES, SearchMode};
pub use radius::{HammingTable, MAX_RADIUS, MAX_TABLE_CODE_BYTES};
pub use vectors::{MemoryVectors, RowRef, SnapshotVectors, VectorSource};

use error::invalid;
use float_codes::FloatColumn;
pub use list_scope::{ListCoverage, list_coverage};
use list_scope::{block_ranges, range_deleted};
use pq4_fastscan::{PackedBlock, fastscan_scope};
pub use probe::probe_lists;
use rerank::{Candidate, exact_search};

/// One result row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
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
    pub mode: SearchMode,
    /// Re-rank the best `R` (≥ k) by the mode's score with the stored vectors
    /// ([`SearchMode::rerank_metric`]); `None`: no re-ranking.
    pub rerank: Option<usize>,
    /// Scan threads (see [`ScanOptions::threads`]; the results do not depend on it).
    pub threads: usize,
    /// Scan only the rows of these inverted lists (class ids; rows with no list are always
    /// scanned, see [`list_scope`]); `None`: every row. Not with `nprobe`.
    pub lists: Option<Vec<u32>>,
    /// IVF: per query, scan only the lists of the `n` class means nearest the query (NCM in the
    /// model's projected space, see [`probe`]); needs a class table. `None`: every row.
    pub nprobe: Option<usize>,
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
        }
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

    pub fn rerank(self, r: usize) -> SearchParams {
        SearchParams {
            rerank: Some(r),
            ..self
        }
    }

    pub fn threads(self, threads: usize) -> SearchParams {
        SearchParams { threads, ..self }
    }
}

/// The `k` best live rows of `snapshot` for each query row, best first (ties: smaller id).
pub fn search(
    snapshot: &Snapshot,
    model: &Model,
    queries: ArrayView2<f32>,
    k: usize,
    mode: SearchMode,
    threads: usize,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    search_with(
        snapshot,
        model,
        queries,
        &SearchParams::new(k, mode).threads(threads),
    )
}

/// [`search`] with every option; re-ranking and exact modes read the vectors stored in the
/// snapshot's segments ([`SnapshotVectors`]) and fail with [`SearchError::NoVectors`] when
/// some rows have none.
pub fn search_with(
    snapshot: &Snapshot,
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    check(snapshot, model, queries, params)?;
    if params.rerank.is_some() || params.mode.is_exact() {
        let source = SnapshotVectors::new(snapshot)?;
        search_with_source(snapshot, model, queries, params, Some(&source))
    } else {
        search_with_source(snapshot, model, queries, params, None)
    }
}

/// [`search_with`] reading full vectors from `source` (required for re-ranking and the exact
/// modes).
pub fn search_with_source(
    snapshot: &Snapshot,
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
    source: Option<&dyn VectorSource>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    check(snapshot, model, queries, params)?;
    let blocks: Vec<Block<'_>> = snapshot.blocks().collect();
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
        (None, Some(n)) => probe::probe_groups(snapshot, model, queries, n)?,
    };
    // Lists that do not exist cannot restrict anything: say so rather than scan every row.
    if params.lists.is_some() || params.nprobe.is_some() {
        let c = list_coverage(snapshot);
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
        let scopes = scopes(&blocks, lists.as_deref());
        return search_scoped(&blocks, &scopes, model, queries, params, source);
    }
    let mut out: Vec<Vec<Hit>> = vec![Vec::new(); queries.nrows()];
    for (lists, rows) in &groups {
        let q: Array2<f32> = queries.select(Axis(0), rows);
        let scopes = scopes(&blocks, lists.as_deref());
        let hits = search_scoped(&blocks, &scopes, model, q.view(), params, source)?;
        for (&r, h) in rows.iter().zip(hits) {
            if let Some(slot) = out.get_mut(r) {
                *slot = h;
            }
        }
    }
    Ok(out)
}

/// The row ranges each block contributes to a scan restricted to `lists`.
fn scopes(blocks: &[Block<'_>], lists: Option<&[u32]>) -> Vec<Vec<Range<usize>>> {
    blocks.iter().map(|b| block_ranges(b, lists)).collect()
}

/// One search over the rows `scopes` names in each block.
fn search_scoped(
    blocks: &[Block<'_>],
    scopes: &[Vec<Range<usize>>],
    model: &Model,
    queries: ArrayView2<f32>,
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
    let candidates = scan_codes(blocks, scopes, model, queries, params.mode, kc, opts)?;
    match params.rerank {
        None => Ok(candidates
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .map(|c| Hit {
                        id: c.id,
                        score: c.score,
                    })
                    .collect()
            })
            .collect()),
        Some(_) => rerank::rerank(
            blocks,
            &candidates,
            queries,
            metric,
            params.k,
            need_source()?,
        ),
    }
}

/// Argument checks shared by every entry point.
fn check(
    snapshot: &Snapshot,
    model: &Model,
    queries: ArrayView2<f32>,
    params: &SearchParams,
) -> Result<(), SearchError> {
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
    if model.id() != snapshot.model().model_id {
        return Err(SearchError::WrongModel {
            index_model: snapshot.model().model_id.to_hex(),
            given: model.id().to_hex(),
        });
    }
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

/// The query side of a code scan.
enum Prepared {
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
    queries: ArrayView2<f32>,
    mode: SearchMode,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<Candidate>>, SearchError> {
    let nq = queries.nrows();
    let cb = model.code_bytes();
    let kind = model.code_kind();
    let direction = mode.direction();
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
    let metric = mode.rerank_metric();
    let mut lists: Vec<Vec<Candidate>> = vec![Vec::new(); nq];
    for ((b, block), ranges) in blocks.iter().enumerate().zip(scopes) {
        if ranges.is_empty() {
            continue;
        }
        let deleted = block.deleted_words();
        // 4-bit PQ segments of format 1.2 are scanned in place in the fast-scan layout.
        let packed = match (&prepared, block.fastscan_codes()) {
            (Prepared::Lut4(_, m), Some((packed, pm))) if pm == *m => Some(PackedBlock {
                packed,
                m: pm,
                ids: block.ids,
                deleted: deleted.as_deref(),
            }),
            (_, Some((_, pm))) => {
                return Err(invalid(
                    "index",
                    format!(
                        "a fast-scan segment of {pm} sub-quantisers cannot be scanned by {}",
                        mode.name()
                    ),
                ));
            }
            _ => None,
        };
        let floats = match &prepared {
            Prepared::Floats(_) => Some(FloatColumn::new(block.codes(), kind)?),
            _ => None,
        };
        for r in ranges {
            if let (Some(pb), Prepared::Lut4(l, _)) = (&packed, &prepared) {
                let part = fastscan_scope(pb, r.clone(), l, direction, k, opts)?;
                for (acc, p) in lists.iter_mut().zip(part) {
                    acc.extend(p.into_iter().map(|(score, id)| Candidate {
                        score,
                        id,
                        block: b,
                    }));
                }
                continue;
            }
            let del = deleted.as_deref().map(|d| range_deleted(d, r.clone()));
            let (Some(ids), Some(codes)) = (
                block.ids.get(r.clone()),
                block.codes().get(r.start * cb..r.end * cb),
            ) else {
                return Err(invalid(
                    "index",
                    format!("rows {r:?} lie outside a block of {} rows", block.rows()),
                ));
            };
            let rows = CodeRows::new(codes, cb, ids, del.as_deref())?;
            let part: Vec<Vec<(f32, u64)>> = match &prepared {
                Prepared::Codes(q) => hamming_topk_batch(&rows, q, k, opts)?
                    .into_iter()
                    .map(|l| l.into_iter().map(|(d, id)| (d as f32, id)).collect())
                    .collect(),
                Prepared::Lut8(l) => lut8_topk_batch(&rows, l, direction, k, opts)?,
                Prepared::Lut4(l, m) => lut4_topk_batch(&rows, *m, l, direction, k, opts)?,
                Prepared::Floats(q) => {
                    let dim = model.project_dim();
                    let values = floats
                        .as_ref()
                        .and_then(|c| slice_rows(c.values(), dim, r.clone()))
                        .ok_or_else(|| invalid("codes", "float codes shorter than the block"))?;
                    let dense = DenseRows::new(values, dim, ids, del.as_deref())?;
                    dense_topk(&dense, q, metric, k, opts)?
                }
            };
            for (acc, p) in lists.iter_mut().zip(part) {
                acc.extend(p.into_iter().map(|(score, id)| Candidate {
                    score,
                    id,
                    block: b,
                }));
            }
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

/// Rows `r` of a column of `dim` values per row.
pub(crate) fn slice_rows(
    values: DenseValues<'_>,
    dim: usize,
    r: Range<usize>,
) -> Option<DenseValues<'_>> {
    let (a, b) = (r.start.checked_mul(dim)?, r.end.checked_mul(dim)?);
    Some(match values {
        DenseValues::F32(v) => DenseValues::F32(v.get(a..b)?),
        DenseValues::F16(v) => DenseValues::F16(v.get(a..b)?),
    })
}

/// Every live row within Hamming distance `radius` (≤ 2) of each query's code, sorted by
/// distance then id: a hash-table lookup for binary codes of at most 32 bits (ITQ §4.5).
/// Builds the table on each call; keep a [`HammingTable`] to look up many batches.
pub fn search_radius(
    snapshot: &Snapshot,
    model: &Model,
    queries: ArrayView2<f32>,
    radius: u32,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    check(
        snapshot,
        model,
        queries,
        &SearchParams::new(1, SearchMode::Hamming),
    )?;
    if radius > MAX_RADIUS {
        return Err(invalid(
            "radius",
            format!("{radius}: hash lookup probes radius 0, 1 or 2"),
        ));
    }
    let table = HammingTable::from_snapshot(snapshot)?;
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
