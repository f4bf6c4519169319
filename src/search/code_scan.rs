//! The code scan of one search: the query side prepared once per kind and mode (codes,
//! LUT-8 / LUT-4 tables, projected floats), then every block's rows in scope scanned by the
//! kernel of its codes — in place for fast-scan segments, through multi-index hashing tables
//! where they pay ([`super::mih`]), over the passing rows gathered into one buffer under a
//! filter where that pays — and each query's candidates merged over blocks.

use std::ops::Range;

use ndarray::ArrayView2;

use crate::format::{CodeKind, RowColumn};
use crate::model::{AdcMetric, Model};
use crate::scan::{
    CodeRows, DenseRows, Direction, Metric, ScanOptions, dense_topk, hamming_topk_batch,
    lut4_topk_batch, lut8_topk_batch,
};
use crate::storage::Block;

use super::asym::asym_tables;
use super::error::{SearchError, invalid};
use super::float_codes::FloatColumn;
use super::list_scope::range_deleted;
use super::mih::{self, AUTO_MIN_ROWS, AUTO_WORK_DIVISOR, MihChoice};
use super::mode::SearchMode;
use super::pq4_fastscan::fastscan_scope;
use super::query::{Prepared, Queries, SearchParams};
use super::rerank::Candidate;
use super::text;

/// Scans every block's codes: the `k` best candidates per query by the mode's score, merged
/// over blocks, best first, ties by smaller id.
pub(super) fn scan_codes(
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
