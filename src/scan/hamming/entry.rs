//! The Hamming entry points: argument checks, the choice of kernel (scalar, AVX2, AVX-512,
//! NEON; the children of `hamming/`) and the top-k, batch and radius drivers over code rows
//! (the module documentation of `hamming/`).

use super::super::dispatch::{Dispatch, Isa};
use super::super::error::{Result, ScanError};
use super::super::rows::{CodeRows, RadiusSink, Sink, TopKSink};
use super::super::schedule::{ScanOptions, block_rows, run};
use super::super::topk::TopK;
#[cfg(target_arch = "aarch64")]
use super::neon;
use super::scalar;
#[cfg(target_arch = "x86_64")]
use super::x86;

/// Hamming distance between two codes of equal length.
pub fn hamming_distance(a: &[u8], b: &[u8]) -> Result<u32> {
    if a.len() != b.len() {
        return Err(ScanError::Length {
            argument: "b",
            expected: a.len(),
            found: b.len(),
        });
    }
    Ok(scalar::distance(a, b))
}

/// Runs the kernel of `isa` over `codes` (whole rows of `query.len()` bytes; the first is row
/// `base` of the column the sink reports ids for).
fn scan_with<S: Sink>(isa: Isa, codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `Isa::Avx512` is only produced by `Dispatch::resolve` after the runtime
            // probe found avx512f, avx512bw, avx512vpopcntdq, avx2 and popcnt.
            unsafe { x86::scan_avx512(codes, base, query, sink) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `Isa::Avx2` is only produced after the probe found avx2 and popcnt.
            unsafe { x86::scan_avx2(codes, base, query, sink) }
        }
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            // SAFETY: `Isa::Neon` is only produced after the runtime probe found neon.
            unsafe { neon::scan_neon(codes, base, query, sink) }
        }
        _ => scalar::scan(codes, base, query, sink),
    }
}

/// Rows per block when several queries share a pass: [`block_rows`], but for the AVX2 kernel
/// and 16- or 32-byte codes rounded up to a multiple of 192 rows (576 rows, 18 KiB, at 32
/// bytes), so its 12-row steps tile the block. Otherwise every block ended in rows the scalar
/// twin scored for each query: 8 of every 512 rows at 32 bytes, which took 4 % of a 16-query
/// scan (`perf record`, AMD Zen 4, AVX2 path), three times their share. The AVX-512 kernel's
/// steps divide 512 rows already, and its 256-bit scan at nq = 256 measured 3-7 % slower
/// with the larger block (AMD Zen 4), so it keeps [`block_rows`].
fn step_block_rows(isa: Isa, code_bytes: usize, nq: usize) -> usize {
    let rows = block_rows(code_bytes, nq);
    if isa == Isa::Avx2 && rows != usize::MAX && matches!(code_bytes, 16 | 32) {
        rows.div_ceil(192) * 192
    } else {
        rows
    }
}

/// Asks the cache for `bytes` without waiting, for the AVX2 kernel only (x86 `prefetcht0`).
/// With several queries per block, the first query to reach a block read it from memory while
/// the others read it from L1: with the AVX2 kernel, at nq = 16 a 256-bit Hamming scan ran 10 %
/// fewer rows per second than at nq = 256 (BENCHMARKS.md, "Scans vs FAISS"). Each query's pass
/// over a block asks for its 1/nq share of the next block, so the lines arrive while the block
/// is scanned. The AVX-512 kernel, twice as fast per row, ran 256-bit codes at nq = 16 a fifth
/// slower with the same prefetch (AMD Zen 4), so it goes without.
fn prefetch_with(isa: Isa, bytes: &[u8]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `Isa::Avx2` is only produced after the runtime probe found avx2.
            unsafe { x86::prefetch(bytes) }
        }
        // No prefetch elsewhere: the bytes are only a hint.
        _ => {
            let _ = bytes;
        }
    }
}

fn check_query(rows: &CodeRows<'_>, query: &[u8]) -> Result<()> {
    if query.len() != rows.code_bytes() {
        return Err(ScanError::Length {
            argument: "query",
            expected: rows.code_bytes(),
            found: query.len(),
        });
    }
    Ok(())
}

/// The `k` nearest live rows to `query` by Hamming distance, best first, ties by smaller id.
///
/// `codes` holds `code_bytes` bytes per row, `ids` one user id per row, `deleted` an optional
/// bitmap (bit `r % 64` of word `r / 64` = row `r` deleted). Runs the best kernels of this CPU on
/// the calling thread; `k` larger than the number of live rows returns them all.
pub fn hamming_topk(
    codes: &[u8],
    code_bytes: usize,
    ids: &[u64],
    deleted: Option<&[u64]>,
    query: &[u8],
    k: usize,
) -> Result<Vec<(u32, u64)>> {
    let rows = CodeRows::new(codes, code_bytes, ids, deleted)?;
    let mut out = hamming_topk_batch(&rows, query, k, ScanOptions::default())?;
    Ok(out.pop().unwrap_or_default())
}

/// Top-k for several queries at once (`queries` = nq codes back to back), one list per query.
///
/// For nq > 1 the rows are scanned in cache-sized blocks, each block for every query, so the
/// codes are read from memory once; `opts.threads` splits the rows over rayon tasks whose
/// collectors are merged (the result does not depend on the thread count).
pub fn hamming_topk_batch(
    rows: &CodeRows<'_>,
    queries: &[u8],
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(u32, u64)>>> {
    let w = rows.code_bytes();
    let nq = query_count(queries, w)?;
    let isa = opts.dispatch.resolve()?;
    TopK::new(k)?;
    let rows = *rows;
    let parts = run(
        rows.len(),
        nq,
        opts.threads,
        step_block_rows(isa, w, nq),
        |_| TopKSink::new(k, rows.ids(), rows.deleted()),
        |range, q, sink: &mut Result<TopKSink<'_>>| {
            if nq > 1 && isa == Isa::Avx2 {
                // This query's share of the next block, so the block is in cache when its
                // first query reaches it (see [`prefetch_with`]).
                let n = rows.len();
                let next = rows.codes_of(range.end.min(n), (2 * range.end - range.start).min(n));
                let share = next.len() * q / nq..next.len() * (q + 1) / nq;
                prefetch_with(isa, next.get(share).unwrap_or(&[]));
            }
            if let (Ok(sink), Some(query)) = (sink, queries.get(q * w..(q + 1) * w)) {
                scan_with(
                    isa,
                    rows.codes_of(range.start, range.end),
                    range.start,
                    query,
                    sink,
                );
            }
        },
    );
    merge_parts(parts, nq, k)
}

/// Adds the rows of one more column (segment) to a running collector: the collector's
/// threshold carries over, so later segments skip more.
pub fn hamming_topk_into(
    rows: &CodeRows<'_>,
    query: &[u8],
    topk: &mut TopK,
    dispatch: Dispatch,
) -> Result<()> {
    check_query(rows, query)?;
    let isa = dispatch.resolve()?;
    let mut sink = TopKSink::new(topk.k(), rows.ids(), rows.deleted())?;
    std::mem::swap(&mut sink.topk, topk);
    scan_with(isa, rows.codes(), 0, query, &mut sink);
    std::mem::swap(&mut sink.topk, topk);
    Ok(())
}

/// Every live row within Hamming distance `radius` of `query`, sorted by (distance, id).
///
/// A linear scan with the same kernels (the bound is fixed at `radius`); for codes of at most
/// 32 bits a hash-table lookup over the ≤ 2-bit neighbourhood (ITQ §5.3) belongs to the index
/// that owns such a table.
pub fn hamming_within(
    rows: &CodeRows<'_>,
    query: &[u8],
    radius: u32,
    opts: ScanOptions,
) -> Result<Vec<(u32, u64)>> {
    check_query(rows, query)?;
    let isa = opts.dispatch.resolve()?;
    let rows = *rows;
    let parts = run(
        rows.len(),
        1,
        opts.threads,
        block_rows(rows.code_bytes(), 1),
        |_| RadiusSink::new(radius, rows),
        |range, _, sink| {
            scan_with(
                isa,
                rows.codes_of(range.start, range.end),
                range.start,
                query,
                sink,
            );
        },
    );
    let mut out: Vec<(u32, u64)> = parts.into_iter().flatten().flat_map(|s| s.found).collect();
    out.sort_unstable();
    Ok(out)
}

/// Number of queries in `queries` (codes of `w` bytes back to back); empty or ragged is an
/// error.
fn query_count(queries: &[u8], w: usize) -> Result<usize> {
    if queries.is_empty() {
        return Err(ScanError::Empty {
            argument: "queries",
        });
    }
    if !queries.len().is_multiple_of(w) {
        return Err(ScanError::NotMultiple {
            argument: "queries",
            found: queries.len(),
            unit: w,
            what: "code_bytes",
        });
    }
    Ok(queries.len() / w)
}

/// Merges `[task][query]` collectors into one sorted list per query.
pub(crate) fn merge_parts(
    parts: Vec<Vec<Result<TopKSink<'_>>>>,
    nq: usize,
    k: usize,
) -> Result<Vec<Vec<(u32, u64)>>> {
    let mut merged: Vec<TopK> = (0..nq).map(|_| TopK::new(k)).collect::<Result<_>>()?;
    for task in parts {
        for (m, sink) in merged.iter_mut().zip(task) {
            m.merge(sink?.topk);
        }
    }
    Ok(merged.into_iter().map(TopK::into_sorted_vec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::dispatch::available_dispatches;

    #[test]
    fn distance_examples() {
        assert_eq!(hamming_distance(&[0xff, 0x00], &[0x0f, 0x01]).unwrap(), 5);
        assert_eq!(hamming_distance(&[0u8; 13], &[0xffu8; 13]).unwrap(), 104);
        assert!(hamming_distance(&[0u8; 3], &[0u8; 4]).is_err());
    }

    #[test]
    fn small_example_all_dispatches() {
        // Row r = r ones in the low bits of an 8-byte code.
        let codes: Vec<u8> = (0..40u32)
            .flat_map(|r| (((1u128 << (r % 33)) - 1) as u64).to_le_bytes())
            .collect();
        let ids: Vec<u64> = (0..40).map(|r| 100 + r).collect();
        let rows = CodeRows::new(&codes, 8, &ids, None).unwrap();
        for d in available_dispatches() {
            let opts = ScanOptions {
                dispatch: d,
                threads: 1,
            };
            let got = hamming_topk_batch(&rows, &[0u8; 8], 3, opts).unwrap();
            assert_eq!(got, vec![vec![(0, 100), (0, 133), (1, 101)]], "{d:?}");
            let within = hamming_within(&rows, &[0u8; 8], 1, opts).unwrap();
            assert_eq!(within, vec![(0, 100), (0, 133), (1, 101), (1, 134)]);
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let codes = [0u8; 16];
        let ids = [1u64, 2];
        assert!(matches!(
            hamming_topk(&codes, 8, &ids, None, &[0u8; 7], 1),
            Err(ScanError::NotMultiple { .. })
        ));
        assert!(matches!(
            hamming_topk(&codes, 8, &ids, None, &[], 1),
            Err(ScanError::Empty { .. })
        ));
        assert_eq!(
            hamming_topk(&codes, 8, &ids, None, &[0u8; 8], 0),
            Err(ScanError::ZeroK)
        );
        let rows = CodeRows::new(&codes, 8, &ids, None).unwrap();
        let mut t = TopK::new(1).unwrap();
        assert!(hamming_topk_into(&rows, &[0u8; 9], &mut t, Dispatch::Scalar).is_err());
    }
}
