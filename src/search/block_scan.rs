//! One search over the rows a plan scoped in each block: the exact scan of their stored
//! vectors (the `exact` modes), or the code scan — the query side prepared once per kind and
//! mode (codes, LUT-8 / LUT-4 tables, projected floats), then every block's rows in scope
//! scanned by the kernel of its codes: in place for fast-scan segments, through multi-index
//! hashing tables where they pay ([`super::mih`]), over the passing rows gathered into one
//! buffer under a filter where that pays — each query's candidates merged over blocks and,
//! with re-ranking, re-scored against the stored vectors ([`super::candidates`]).

use std::ops::Range;

use half::f16;
use ndarray::ArrayView2;

use crate::format::{CodeKind, RowColumn};
use crate::model::{AdcMetric, Model};
use crate::scan::{
    CodeRows, DenseRows, DenseValues, Direction, Dispatch, Metric, ScanOptions, TopK, dense_f32,
    dense_topk, f32_to_key, hamming_topk_batch, key_to_score, lut4_topk_batch, lut8_topk_batch,
};
use crate::storage::Block;

use super::asym::asym_tables;
use super::candidates::{self, Candidate, no_vector, rescore, sort_truncate};
use super::error::{SearchError, invalid};
use super::float_codes::FloatColumn;
use super::list_scope::range_deleted;
use super::mih::{self, AUTO_MIN_ROWS, AUTO_WORK_DIVISOR, MihChoice};
use super::mode::SearchMode;
use super::pq4_fastscan::fastscan_scope;
use super::query::{Hit, Prepared, Queries, SearchParams};
use super::text;
use super::vectors::{RowRef, VectorSource};

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

/// One search over the rows `scopes` names in each block.
pub(super) fn search_scoped(
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
        (None, _) => Ok(candidates::hits(candidates)),
        (Some(_), Queries::Image(_)) => rerank(
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

/// Candidates ahead of the one being scored whose rows are prefetched.
const PREFETCH_AHEAD: usize = 2;

/// Re-scores each query's candidates exactly with `metric` and keeps the `k` best. `queries`
/// are as wide as `source`'s vectors and finite: the plan checked them where the query entered
/// ([`super::query::check_stored`]).
pub(super) fn rerank(
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
fn exact_search(
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
