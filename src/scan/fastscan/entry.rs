//! The fast-scan entry points: a validated column in the fast-scan layout, the per-batch
//! preparation of the queries' quantised tables, and the top-k scans that dispatch to the
//! ISA kernels (`x86.rs`) or the scalar twin.

use std::ops::Range;

use super::layout::{BLOCK_ROWS, block_bytes, packed_len};
use super::quant_lut::QuantLut;
use crate::scan::dispatch::Isa;
use crate::scan::error::{Result, ScanError};
use crate::scan::hamming::merge_parts;
use crate::scan::lut::Tables;
use crate::scan::lut::to_scores;
use crate::scan::rows::{Sink, TopKSink};
use crate::scan::schedule::{ScanOptions, block_rows, run_blocks};
use crate::scan::topk::Direction;

use crate::format::fastscan_layout::MAX_M;

/// A column of 4-bit codes in the fast-scan layout, with ids and deletions, validated.
#[derive(Debug, Clone, Copy)]
pub struct FastScanRows<'a> {
    packed: &'a [u8],
    m: usize,
    ids: &'a [u64],
    deleted: Option<&'a [u64]>,
}

impl<'a> FastScanRows<'a> {
    /// `packed` from [`pack_fastscan`](super::layout::pack_fastscan) for `ids.len()` rows of `m` sub-quantisers.
    pub fn new(
        packed: &'a [u8],
        m: usize,
        ids: &'a [u64],
        deleted: Option<&'a [u64]>,
    ) -> Result<Self> {
        if m == 0 || m > MAX_M {
            return Err(ScanError::Invalid {
                argument: "m",
                detail: format!("fast-scan takes 1 to {MAX_M} sub-quantisers, got {m}"),
            });
        }
        let n = ids.len();
        if packed.len() != packed_len(n, m) {
            return Err(ScanError::Length {
                argument: "packed",
                expected: packed_len(n, m),
                found: packed.len(),
            });
        }
        if let Some(d) = deleted
            && d.len() != n.div_ceil(64)
        {
            return Err(ScanError::DeletedLength {
                words: d.len(),
                rows: n,
                expected: n.div_ceil(64),
            });
        }
        Ok(FastScanRows {
            packed,
            m,
            ids,
            deleted,
        })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Scalar twin: quantised sums of a block in plain integer arithmetic.
fn scan_scalar<S: Sink>(
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    ql: &QuantLut<'_>,
    sink: &mut S,
) {
    let bb = block_bytes(m);
    let mut tq = ql.q_bound(sink.bound());
    for b in rows.start / BLOCK_ROWS..rows.end.div_ceil(BLOCK_ROWS) {
        let Some(blk) = packed.get(b * bb..(b + 1) * bb) else {
            return;
        };
        let mut sums = [0u16; BLOCK_ROWS];
        for (plane, t) in blk.chunks_exact(16).zip(ql.q.chunks_exact(16)) {
            for (i, &byte) in plane.iter().enumerate() {
                sums[i] += u16::from(t[(byte & 0x0f) as usize]);
                sums[i + 16] += u16::from(t[(byte >> 4) as usize]);
            }
        }
        let mut pass = 0u32;
        for (i, &s) in sums.iter().enumerate() {
            if s <= tq {
                pass |= 1 << i;
            }
        }
        if pass != 0 {
            tq = ql.rescore(packed, b, pass, rows.end, sink);
        }
    }
}

/// Per-batch preparation of the kernels' tables, made once per batch rather than once per
/// block of rows: for the AVX2 kernel, each group of [`super::x86::GROUP_AVX2`] queries' tables
/// interleaved load by load (see `super::x86::interleave_avx2`). At M = 32 a block of 512 rows is
/// about 1,000 cycles of kernel per group of queries, so copying 1 KiB of tables and three
/// heap allocations per block and group cost a tenth of the scan (perf, AMD Zen 4, AVX2 path).
struct Prepared {
    /// AVX2: per group of queries, its interleaved tables; empty for the other kernels.
    avx2_groups: Vec<Vec<[u8; 32]>>,
}

impl Prepared {
    fn new(isa: Isa, quant: &[QuantLut<'_>], m: usize) -> Self {
        let avx2_groups = match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => quant
                .chunks(super::x86::GROUP_AVX2)
                .map(|g| super::x86::interleave_avx2(g, m))
                .collect(),
            _ => Vec::new(),
        };
        Prepared { avx2_groups }
    }
}

/// Scans `rows` for every query (`quant[q]` collects into `sinks[q]`). AVX-512 scores up to
/// four queries per pass over the codes, AVX2 four too (one split of the nibbles serves them all);
/// the scalar twin runs one query at a time. On AMD Zen 4 the AVX-512 kernel measured faster
/// than the AVX2 one at every M and nq measured (BENCHMARKS.md), so `Auto` uses it wherever
/// the CPU has it. Called once per block of rows: nothing here allocates.
fn scan_queries<S: Sink>(
    isa: Isa,
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    quant: &[QuantLut<'_>],
    prep: &Prepared,
    sinks: &mut [S],
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            for (qls, group) in quant
                .chunks(super::x86::GROUP)
                .zip(sinks.chunks_mut(super::x86::GROUP))
            {
                // SAFETY: `Isa::Avx512` is only produced after the runtime probe found
                // avx512f, avx512bw and avx2.
                unsafe { super::x86::scan_avx512(packed, m, rows.clone(), qls, group) }
            }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            for ((qls, group), tabs) in quant
                .chunks(super::x86::GROUP_AVX2)
                .zip(sinks.chunks_mut(super::x86::GROUP_AVX2))
                .zip(&prep.avx2_groups)
            {
                // SAFETY: `Isa::Avx2` is only produced after the runtime probe found avx2.
                unsafe { super::x86::scan_avx2(packed, m, rows.clone(), qls, tabs, group) }
            }
        }
        _ => {
            for (ql, sink) in quant.iter().zip(sinks) {
                scan_scalar(packed, m, rows.clone(), ql, sink);
            }
        }
    }
}

/// Fast-scan top-k for nq queries: `luts` holds nq × `m` tables of 16 f32 (as for
/// [`crate::scan::lut4_topk_batch`], whose results this returns exactly).
pub fn fastscan_topk_batch(
    rows: &FastScanRows<'_>,
    luts: &[f32],
    direction: Direction,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>> {
    let m = rows.m;
    let tables = Tables::<16>::new(luts, m, direction)?;
    let isa = opts.dispatch.resolve()?;
    let r = *rows;
    // Validates `k` once; every task's collectors are copies of this empty one.
    let empty = TopKSink::new(k, r.ids, r.deleted)?;
    let nq = tables.nq();
    let quant: Vec<QuantLut<'_>> = (0..nq).map(|q| QuantLut::new(tables.query(q))).collect();
    let prep = Prepared::new(isa, &quant, m);
    // Blocks of rows must start on a 32-row boundary: `run_blocks` cuts at multiples of 64.
    let block = block_rows(block_bytes(m) / BLOCK_ROWS, nq);
    let parts = run_blocks(
        r.len(),
        nq,
        opts.threads,
        block,
        |_| empty.clone(),
        |range, sinks: &mut [TopKSink<'_>]| {
            debug_assert!(range.start.is_multiple_of(BLOCK_ROWS));
            scan_queries(isa, r.packed, m, range, &quant, &prep, sinks);
        },
    );
    let parts = parts
        .into_iter()
        .map(|task| task.into_iter().map(Ok).collect())
        .collect();
    Ok(to_scores(merge_parts(parts, nq, k)?, direction))
}

/// Fast-scan top-k for one query over `packed` (from [`pack_fastscan`](super::layout::pack_fastscan)).
pub fn fastscan_topk(
    packed: &[u8],
    m: usize,
    ids: &[u64],
    deleted: Option<&[u64]>,
    lut: &[f32],
    direction: Direction,
    k: usize,
) -> Result<Vec<(f32, u64)>> {
    let rows = FastScanRows::new(packed, m, ids, deleted)?;
    let mut out = fastscan_topk_batch(&rows, lut, direction, k, ScanOptions::default())?;
    Ok(out.pop().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::fastscan::layout::{nibble, pack_fastscan};
    use crate::scan::topk::f32_to_key;

    #[test]
    fn quantised_bound_never_drops_a_needed_row() {
        // Every row whose exact score is <= theta must have Q <= q_bound(theta).
        let exact: Vec<[f32; 16]> = (0..7)
            .map(|j| core::array::from_fn(|i| ((i * 7 + j * 3) % 16) as f32 * 0.37 - 2.0))
            .collect();
        let ql = QuantLut::new(&exact);
        let codes: Vec<u8> = (0..4 * 300).map(|x| (x * 131 + 7) as u8).collect();
        let packed = pack_fastscan(&codes, 7).unwrap();
        let scores: Vec<f32> = (0..300).map(|r| ql.exact_score(&packed, r)).collect();
        for &theta in &scores {
            let tq = ql.q_bound(f32_to_key(theta));
            for (r, &s) in scores.iter().enumerate() {
                let qsum: u32 = (0..7)
                    .map(|j| u32::from(ql.q[16 * j + nibble(&packed, 7, r, j) as usize]))
                    .sum();
                if s <= theta {
                    assert!(qsum <= u32::from(tq), "row {r}: Q {qsum} > bound {tq}");
                }
            }
        }
    }

    /// Records every row offered, keeping a fixed bound: the rows offered are exactly those
    /// whose quantised sum passes the kernel's filter (and whose exact score is in the bound).
    struct Record(u32, Vec<usize>);

    impl Sink for Record {
        fn bound(&self) -> u32 {
            self.0
        }
        fn offer(&mut self, _key: u32, row: usize) -> u32 {
            self.1.push(row);
            self.0
        }
    }

    /// Every kernel filters the same rows as the plain integer sums: the block sums of the AVX2
    /// (bytes added before widening, one nibble plane at a time) and AVX-512 kernels are exact,
    /// not only safe. Covers every query-group width of both kernels (AVX2: 1 and 2, AVX-512: 1
    /// to 4; 5 and 9 split into groups), the fixed-load kernels (M = 8, 16, 24, 32) and the
    /// generic ones, whole and partial last blocks (1,000 rows: 8 rows in the last block; 95
    /// rows: 31), up to M = 256 (sums up to 63 · 256, under the AVX2 signed compare's 2¹⁵).
    #[test]
    fn every_kernel_passes_exactly_the_rows_whose_quantised_sum_is_in_the_bound() {
        use crate::scan::dispatch::available_dispatches;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (m, n) in [
            (1usize, 1_000usize),
            (2, 1_000),
            (5, 1_000),
            (8, 1_000),
            (8, 95),
            (9, 1_000),
            (16, 1_000),
            (16, 95),
            (17, 1_000),
            (24, 1_000),
            (32, 1_000),
            (32, 95),
            (64, 1_000),
            (200, 1_000),
            (256, 1_000),
        ] {
            let cb = m.div_ceil(2);
            let codes: Vec<u8> = (0..n * cb).map(|_| next() as u8).collect();
            let packed = pack_fastscan(&codes, m).unwrap();
            let exact: Vec<Vec<[f32; 16]>> = (0..9)
                .map(|_| {
                    (0..m)
                        .map(|_| core::array::from_fn(|_| (next() % 1_000) as f32 * 0.01))
                        .collect()
                })
                .collect();
            let qls: Vec<QuantLut<'_>> = exact.iter().map(|e| QuantLut::new(e)).collect();
            for quantile in [0, n / 10, n / 2, n - 1] {
                let mut keys = Vec::new();
                let mut want = Vec::new();
                for ql in &qls {
                    let scores: Vec<f32> = (0..n).map(|r| ql.exact_score(&packed, r)).collect();
                    let mut sorted = scores.clone();
                    sorted.sort_by(f32::total_cmp);
                    let key = f32_to_key(sorted[quantile]);
                    let tq = ql.q_bound(key);
                    want.push(
                        (0..n)
                            .filter(|&r| {
                                let q: u32 = (0..m)
                                    .map(|j| {
                                        u32::from(ql.q[16 * j + nibble(&packed, m, r, j) as usize])
                                    })
                                    .sum();
                                q <= u32::from(tq) && f32_to_key(scores[r]) <= key
                            })
                            .collect::<Vec<usize>>(),
                    );
                    keys.push(key);
                }
                for d in available_dispatches() {
                    let isa = d.resolve().unwrap();
                    for nq in [1, 2, 3, 4, 5, 9] {
                        let mut sinks: Vec<Record> =
                            keys[..nq].iter().map(|&k| Record(k, Vec::new())).collect();
                        let prep = Prepared::new(isa, &qls[..nq], m);
                        scan_queries(isa, &packed, m, 0..n, &qls[..nq], &prep, &mut sinks);
                        let got: Vec<Vec<usize>> = sinks.into_iter().map(|s| s.1).collect();
                        assert_eq!(got, want[..nq], "m={m} n={n} nq={nq} q={quantile} {d:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn rows_validation() {
        let packed = vec![0u8; 2 * 64];
        let ids: Vec<u64> = (0..40).collect();
        assert!(FastScanRows::new(&packed, 4, &ids, None).is_ok());
        assert!(FastScanRows::new(&packed, 3, &ids, None).is_ok());
        assert!(FastScanRows::new(&packed, 6, &ids, None).is_err());
        assert!(FastScanRows::new(&packed, 0, &ids, None).is_err());
        assert!(FastScanRows::new(&packed, 4, &ids[..10], None).is_err());
        assert!(FastScanRows::new(&packed, 4, &ids, Some(&[0, 0])).is_err());
    }
}
