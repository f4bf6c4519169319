//! The table-lookup entry points: the checked tables ([`Tables`]), the choice of kernel (scalar,
//! AVX2 / AVX-512 gathers, query lanes; the children of `lut/`) and the top-k and batch
//! drivers over code rows (the module documentation of `lut/`).

use super::super::dispatch::{Dispatch, Isa, avx512_full_width};
use super::super::error::{Result, ScanError};
use super::super::hamming::merge_parts;
use super::super::rows::{CodeRows, Sink, TopKSink};
use super::super::schedule::{ScanOptions, block_rows, group_block_rows, run, run_blocks};
use super::super::topk::{Direction, TopK, f32_to_key, key_to_score};
use super::scalar;
#[cfg(target_arch = "x86_64")]
use super::x86;

/// Validated tables, negated for larger-is-better so every kernel ranks smaller-is-better.
pub(crate) struct Tables<const E: usize> {
    /// `nq * m` tables of `E` entries.
    pub t: Vec<[f32; E]>,
    pub m: usize,
}

impl<const E: usize> Tables<E> {
    pub fn new(luts: &[f32], m: usize, direction: Direction) -> Result<Self> {
        if m == 0 {
            return Err(ScanError::Invalid {
                argument: "m",
                detail: "at least one table is needed".into(),
            });
        }
        if luts.is_empty() {
            return Err(ScanError::Empty { argument: "lut" });
        }
        let per_query = m * E;
        if !luts.len().is_multiple_of(per_query) {
            return Err(ScanError::NotMultiple {
                argument: "lut",
                found: luts.len(),
                unit: per_query,
                what: "m tables of E entries per query",
            });
        }
        if let Some((index, &value)) = luts.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(ScanError::NonFinite {
                argument: "lut",
                index,
                value,
            });
        }
        let sign = match direction {
            Direction::SmallerIsBetter => 1.0f32,
            Direction::LargerIsBetter => -1.0f32,
        };
        let (tables, _) = luts.as_chunks::<E>();
        let t: Vec<[f32; E]> = tables.iter().map(|t| t.map(|x| sign * x)).collect();
        for q in t.chunks_exact(m) {
            let bound: f64 = q
                .iter()
                .map(|t| t.iter().fold(0.0f64, |a, &x| a.max(f64::from(x).abs())))
                .sum();
            if bound > f64::from(f32::MAX) / 2.0 {
                return Err(ScanError::LutRange { bound });
            }
        }
        Ok(Tables { t, m })
    }

    pub fn nq(&self) -> usize {
        self.t.len() / self.m
    }

    pub fn query(&self, q: usize) -> &[[f32; E]] {
        self.t.get(q * self.m..(q + 1) * self.m).unwrap_or(&[])
    }
}

/// Which LUT-8 kernel a scan runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lut8Kernel {
    /// The portable kernel ([`scalar::scan8`]), one query at a time.
    Scalar,
    /// The f32 gather kernels of this ISA, one query at a time.
    Gather(Isa),
    /// Groups of 8 queries, one per lane, tables interleaved (`x86::scan8_lanes_avx2`).
    QueryLanes,
    /// Groups of 16 queries, one per lane (`x86::scan8_lanes_avx512`).
    QueryLanes16,
}

/// Fewest queries for which the query-lane kernel runs (and fewest in a group of 8 it runs
/// for; a smaller last group runs the scalar kernel per query). A group costs about as much
/// per row as 2 (M = 8) to 2.5 (M = 16) single-query scalar passes on AMD Zen 3 (its tables,
/// 8 KiB per code byte, are read from L2), so it pays from 3 queries on.
const QUERY_LANES_MIN_NQ: usize = 3;

/// The LUT-8 kernel for `nq` queries under `dispatch`.
///
/// - `Scalar` → the scalar kernel.
/// - `Auto`, fewer than [`QUERY_LANES_MIN_NQ`] queries → the scalar kernel on every CPU: f32
///   gathers lost to it by 3-5× where measured (AMD Zen 3, `benches/scan.rs`, modes `scalar` vs
///   `gather`), and its eight-row loop measured 1.25-1.55× the four-row one.
/// - `Avx2` / `Avx512`, fewer than [`QUERY_LANES_MIN_NQ`] queries → the gather kernels
///   (explicit requests only, kept to re-measure them on other CPUs).
/// - `Auto` / `Avx2` / `Avx512` with at least [`QUERY_LANES_MIN_NQ`] queries on a CPU with AVX2
///   → the query-lane kernel, no gathers: one 32-byte load and one add per code byte for 8
///   queries (3.4-5× the scalar kernel per query at M = 16 / 8, nq = 16, AMD Zen 3); a last
///   group of fewer than [`QUERY_LANES_MIN_NQ`] queries runs the scalar kernel per query. On
///   AVX-512 CPUs whose 512-bit adds run at full width ([`avx512_full_width`]: Intel Xeon,
///   AMD Zen 5), and under an explicit `Avx512`, the 16-lane kernel (groups of 16 queries);
///   on Zen 4 `Auto` keeps the 8-lane kernel, as a 16-lane add there costs two 8-lane ones.
fn lut8_kernel(dispatch: Dispatch, nq: usize) -> Result<Lut8Kernel> {
    let isa = dispatch.resolve()?;
    let lanes_ok = nq >= QUERY_LANES_MIN_NQ && cfg!(target_arch = "x86_64") && isa >= Isa::Avx2;
    let wide = isa == Isa::Avx512 && (dispatch == Dispatch::Avx512 || avx512_full_width());
    Ok(match dispatch {
        Dispatch::Scalar => Lut8Kernel::Scalar,
        _ if lanes_ok && wide => Lut8Kernel::QueryLanes16,
        _ if lanes_ok => Lut8Kernel::QueryLanes,
        Dispatch::Auto => Lut8Kernel::Scalar,
        _ => Lut8Kernel::Gather(isa),
    })
}

/// The tables of up to `L` queries interleaved for a query-lane kernel: entry `j * 256 + v`
/// holds, in lane `l`, query `q0 + l`'s table-`j` entry for byte value `v` (`0.0` in lanes past
/// the last query). `4 L` KiB per code byte.
fn interleave<const L: usize>(tables: &Tables<256>, q0: usize) -> Vec<[f32; L]> {
    let m = tables.m;
    let qs: Vec<&[[f32; 256]]> = (q0..(q0 + L).min(tables.nq()))
        .map(|q| tables.query(q))
        .collect();
    (0..m * 256)
        .map(|e| {
            let (j, v) = (e / 256, e % 256);
            core::array::from_fn(|l| qs.get(l).and_then(|t| t.get(j)).map_or(0.0, |t| t[v]))
        })
        .collect()
}

fn scan8_with<S: Sink>(isa: Isa, codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `Isa::Avx512` is only produced after the runtime probe found avx512f,
            // avx512bw, avx2 and fma.
            unsafe { x86::scan8_avx512(codes, base, lut, sink) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `Isa::Avx2` is only produced after the probe found avx2 and fma.
            unsafe { x86::scan8_avx2(codes, base, lut, sink) }
        }
        _ => scalar::scan8(codes, base, lut, sink),
    }
}

fn scan4_with<S: Sink>(
    isa: Isa,
    codes: &[u8],
    row_bytes: usize,
    base: usize,
    lut: &[[f32; 16]],
    sink: &mut S,
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            // SAFETY: `Isa::Avx512` is only produced after the runtime probe found avx512f,
            // avx512bw, avx2 and fma.
            unsafe { x86::scan4_avx512(codes, row_bytes, base, lut, sink) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            // SAFETY: `Isa::Avx2` is only produced after the probe found avx2 and fma.
            unsafe { x86::scan4_avx2(codes, row_bytes, base, lut, sink) }
        }
        _ => scalar::scan4(codes, row_bytes, base, lut, sink),
    }
}

/// Turns sorted key lists back into scores (the order is unchanged: keys are monotone).
pub(crate) fn to_scores(lists: Vec<Vec<(u32, u64)>>, direction: Direction) -> Vec<Vec<(f32, u64)>> {
    lists
        .into_iter()
        .map(|l| {
            l.into_iter()
                .map(|(key, id)| (key_to_score(key, direction), id))
                .collect()
        })
        .collect()
}

/// The `k` best live rows for one LUT-8 query: `lut` is `code_bytes` tables of 256 f32.
pub fn lut8_topk(
    codes: &[u8],
    code_bytes: usize,
    ids: &[u64],
    deleted: Option<&[u64]>,
    lut: &[f32],
    direction: Direction,
    k: usize,
) -> Result<Vec<(f32, u64)>> {
    let rows = CodeRows::new(codes, code_bytes, ids, deleted)?;
    let mut out = lut8_topk_batch(&rows, lut, direction, k, ScanOptions::default())?;
    Ok(out.pop().unwrap_or_default())
}

/// LUT-8 top-k for nq queries: `luts` holds nq × `code_bytes` tables of 256 f32, back to back.
/// Blocked and threaded like [`crate::scan::hamming_topk_batch`].
pub fn lut8_topk_batch(
    rows: &CodeRows<'_>,
    luts: &[f32],
    direction: Direction,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>> {
    let m = rows.code_bytes();
    let tables = Tables::<256>::new(luts, m, direction)?;
    TopK::new(k)?;
    let nq = tables.nq();
    let kernel = lut8_kernel(opts.dispatch, nq)?;
    let rows = *rows;
    let make = |_| TopKSink::new(k, rows.ids(), rows.deleted());
    let parts = match kernel {
        Lut8Kernel::QueryLanes => lane_groups::<8>(&tables, rows, opts.threads, k),
        Lut8Kernel::QueryLanes16 => lane_groups::<16>(&tables, rows, opts.threads, k),
        Lut8Kernel::Scalar | Lut8Kernel::Gather(_) => {
            let isa = match kernel {
                Lut8Kernel::Gather(isa) => isa,
                _ => Isa::Scalar,
            };
            run(
                rows.len(),
                nq,
                opts.threads,
                block_rows(m, nq),
                make,
                |range, q, sink: &mut Result<TopKSink<'_>>| {
                    if let Ok(sink) = sink {
                        let codes = rows.codes_of(range.start, range.end);
                        scan8_with(isa, codes, range.start, tables.query(q), sink);
                    }
                },
            )
        }
    };
    Ok(to_scores(merge_parts(parts, nq, k)?, direction))
}

/// Scans with a query-lane kernel in groups of `L` queries; a last group too small to fill
/// the lanes ([`QUERY_LANES_MIN_NQ`]) runs the scalar kernel per query instead (no
/// interleaved tables built for it).
fn lane_groups<'r, const L: usize>(
    tables: &Tables<256>,
    rows: CodeRows<'r>,
    threads: usize,
    k: usize,
) -> Vec<Vec<Result<TopKSink<'r>>>>
where
    [f32; L]: LaneTables,
{
    let (m, nq) = (tables.m, tables.nq());
    let groups: Vec<Option<Vec<[f32; L]>>> = (0..nq)
        .step_by(L)
        .map(|q0| (nq - q0 >= QUERY_LANES_MIN_NQ).then(|| interleave::<L>(tables, q0)))
        .collect();
    run_blocks(
        rows.len(),
        nq,
        threads,
        group_block_rows(m),
        |_| TopKSink::new(k, rows.ids(), rows.deleted()),
        |range, sinks: &mut [Result<TopKSink<'_>>]| {
            let codes = rows.codes_of(range.start, range.end);
            for (gi, (t, group)) in groups.iter().zip(sinks.chunks_mut(L)).enumerate() {
                if let Some(t) = t {
                    let mut lanes: Vec<&mut TopKSink<'_>> =
                        group.iter_mut().filter_map(|s| s.as_mut().ok()).collect();
                    <[f32; L]>::scan(codes, range.start, m, t, &mut lanes);
                } else {
                    for (l, sink) in group.iter_mut().enumerate() {
                        if let Ok(sink) = sink {
                            scalar::scan8(codes, range.start, tables.query(gi * L + l), sink);
                        }
                    }
                }
            }
        },
    )
}

/// An interleaved table entry of a query-lane kernel, and the kernel that reads it.
trait LaneTables: Sized + Sync {
    fn scan<S: Sink>(codes: &[u8], base: usize, m: usize, t: &[Self], sinks: &mut [&mut S]);
}

impl LaneTables for [f32; 8] {
    fn scan<S: Sink>(codes: &[u8], base: usize, m: usize, t: &[Self], sinks: &mut [&mut S]) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `Lut8Kernel::QueryLanes` is only chosen after `Dispatch::resolve`
            // returned an ISA of at least `Isa::Avx2`, i.e. the probe found avx2 and fma.
            unsafe { x86::scan8_lanes_avx2(codes, base, m, t, sinks) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            // Never chosen off x86-64 (see `lut8_kernel`).
            let _ = (codes, base, m, t, sinks);
            debug_assert!(false, "query-lane kernel requested off x86-64");
        }
    }
}

impl LaneTables for [f32; 16] {
    fn scan<S: Sink>(codes: &[u8], base: usize, m: usize, t: &[Self], sinks: &mut [&mut S]) {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `Lut8Kernel::QueryLanes16` is only chosen after `Dispatch::resolve`
            // returned `Isa::Avx512`, i.e. the probe found avx512f, avx512bw, avx2 and fma.
            unsafe { x86::scan8_lanes_avx512(codes, base, m, t, sinks) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (codes, base, m, t, sinks);
            debug_assert!(false, "query-lane kernel requested off x86-64");
        }
    }
}

/// The `k` best live rows for one LUT-4 query: `m` sub-quantisers, `code_bytes = m.div_ceil(2)`,
/// `lut` is `m` tables of 16 f32.
pub fn lut4_topk(
    codes: &[u8],
    m: usize,
    ids: &[u64],
    deleted: Option<&[u64]>,
    lut: &[f32],
    direction: Direction,
    k: usize,
) -> Result<Vec<(f32, u64)>> {
    let rows = CodeRows::new(codes, m.div_ceil(2).max(1), ids, deleted)?;
    let mut out = lut4_topk_batch(&rows, m, lut, direction, k, ScanOptions::default())?;
    Ok(out.pop().unwrap_or_default())
}

/// LUT-4 top-k for nq queries: `luts` holds nq × `m` tables of 16 f32; the rows must be
/// `m.div_ceil(2)` bytes wide.
pub fn lut4_topk_batch(
    rows: &CodeRows<'_>,
    m: usize,
    luts: &[f32],
    direction: Direction,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>> {
    let row_bytes = rows.code_bytes();
    if m.div_ceil(2) != row_bytes {
        return Err(ScanError::Invalid {
            argument: "m",
            detail: format!(
                "{m} sub-quantisers need {} code bytes per row, the rows have {row_bytes}",
                m.div_ceil(2)
            ),
        });
    }
    let tables = Tables::<16>::new(luts, m, direction)?;
    let isa = opts.dispatch.resolve()?;
    TopK::new(k)?;
    let nq = tables.nq();
    let rows = *rows;
    let parts = run(
        rows.len(),
        nq,
        opts.threads,
        block_rows(row_bytes, nq),
        |_| TopKSink::new(k, rows.ids(), rows.deleted()),
        |range, q, sink: &mut Result<TopKSink<'_>>| {
            if let Ok(sink) = sink {
                let codes = rows.codes_of(range.start, range.end);
                scan4_with(isa, codes, row_bytes, range.start, tables.query(q), sink);
            }
        },
    );
    Ok(to_scores(merge_parts(parts, nq, k)?, direction))
}

/// LUT-8 score of one code (e.g. to re-score candidates), summed in the kernels' order.
pub fn lut8_score(code: &[u8], lut: &[f32]) -> Result<f32> {
    let tables = Tables::<256>::new(lut, code.len().max(1), Direction::SmallerIsBetter)?;
    if tables.nq() != 1 || code.is_empty() {
        return Err(ScanError::Length {
            argument: "lut",
            expected: code.len() * 256,
            found: lut.len(),
        });
    }
    Ok(scalar::score8(code, tables.query(0)))
}

/// LUT-4 score of one code of `m` nibbles, summed in the kernels' order.
pub fn lut4_score(code: &[u8], m: usize, lut: &[f32]) -> Result<f32> {
    if code.len() != m.div_ceil(2) {
        return Err(ScanError::Length {
            argument: "code",
            expected: m.div_ceil(2),
            found: code.len(),
        });
    }
    let tables = Tables::<16>::new(lut, m, Direction::SmallerIsBetter)?;
    if tables.nq() != 1 {
        return Err(ScanError::Length {
            argument: "lut",
            expected: m * 16,
            found: lut.len(),
        });
    }
    Ok(scalar::score4(code, tables.query(0)))
}

/// Builds LUT-8 tables from per-bit terms: bit `i` of a code (bit `i % 8` of byte `i / 8`,
/// least significant first) contributes `zero[i]` when clear and `one[i]` when set, and table
/// `j` entry `v` is the sum of the terms of byte `j`'s 8 bits in value `v`, added in bit order
/// 0..8 in f32. `bias` is added to every entry of table 0 (after its bits), so the kernel's
/// score is `bias + Σ_i term_i`.
///
/// Linear scoring of bits `b + Σ w_i h_i`: `zero = 0`, `one = w`. An asymmetric distance
/// between a real-valued projected query `y` and a code `h` with `±1` bits:
/// `zero[i] = (y_i + 1)²`, `one[i] = (y_i − 1)²` gives `‖y − (2h − 1)‖²`.
pub fn lut8_from_bit_terms(zero: &[f32], one: &[f32], bias: f32) -> Result<Vec<f32>> {
    if zero.is_empty() {
        return Err(ScanError::Empty { argument: "zero" });
    }
    if one.len() != zero.len() {
        return Err(ScanError::Length {
            argument: "one",
            expected: zero.len(),
            found: one.len(),
        });
    }
    if !zero.len().is_multiple_of(8) {
        return Err(ScanError::NotMultiple {
            argument: "zero",
            found: zero.len(),
            unit: 8,
            what: "bits per code byte",
        });
    }
    for (argument, v) in [("zero", zero), ("one", one), ("bias", &[bias][..])] {
        if let Some((index, &value)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
            return Err(ScanError::NonFinite {
                argument,
                index,
                value,
            });
        }
    }
    let m = zero.len() / 8;
    let mut out = Vec::with_capacity(m * 256);
    for (j, (z, o)) in zero.chunks_exact(8).zip(one.chunks_exact(8)).enumerate() {
        for v in 0..256usize {
            let mut s = 0.0f32;
            for b in 0..8 {
                s += if (v >> b) & 1 == 1 { o[b] } else { z[b] };
            }
            if j == 0 {
                s += bias;
            }
            out.push(s);
        }
    }
    if let Some((index, &value)) = out.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(ScanError::NonFinite {
            argument: "lut (sum of bit terms overflowed)",
            index,
            value,
        });
    }
    Ok(out)
}

/// The key a LUT score ranks by (exposed for callers that merge LUT results with their own).
pub fn lut_key(score: f32, direction: Direction) -> u32 {
    match direction {
        Direction::SmallerIsBetter => f32_to_key(score),
        Direction::LargerIsBetter => f32_to_key(-score),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::dispatch::available_dispatches;

    #[test]
    fn lut8_small_example() {
        // m = 4: table j entry v = v * (j + 1).
        let m = 4;
        let lut: Vec<f32> = (0..m)
            .flat_map(|j| (0..256).map(move |v| (v * (j + 1)) as f32))
            .collect();
        let codes: Vec<u8> = (0..20u8).flat_map(|r| [r, 0, 0, 20 - r]).collect();
        let ids: Vec<u64> = (0..20).collect();
        let rows = CodeRows::new(&codes, m, &ids, None).unwrap();
        for d in available_dispatches() {
            let opts = ScanOptions {
                dispatch: d,
                threads: 1,
            };
            let small = lut8_topk_batch(&rows, &lut, Direction::SmallerIsBetter, 2, opts).unwrap();
            // score(r) = r + 4 (20 - r) = 80 - 3r: best at r = 19, 18.
            assert_eq!(small, vec![vec![(23.0, 19), (26.0, 18)]], "{d:?}");
            let large = lut8_topk_batch(&rows, &lut, Direction::LargerIsBetter, 2, opts).unwrap();
            assert_eq!(large, vec![vec![(80.0, 0), (77.0, 1)]], "{d:?}");
        }
        assert_eq!(lut8_score(&codes[..4], &lut).unwrap(), 80.0);
    }

    #[test]
    fn kernel_choice() {
        assert_eq!(
            lut8_kernel(Dispatch::Scalar, 16).unwrap(),
            Lut8Kernel::Scalar
        );
        assert_eq!(lut8_kernel(Dispatch::Auto, 1).unwrap(), Lut8Kernel::Scalar);
        let have = available_dispatches();
        // `Auto` takes 16 lanes only where 512-bit adds run at full width.
        let auto_lanes = if have.contains(&Dispatch::Avx512) && avx512_full_width() {
            Lut8Kernel::QueryLanes16
        } else {
            Lut8Kernel::QueryLanes
        };
        if have.contains(&Dispatch::Avx512) {
            assert_eq!(
                lut8_kernel(Dispatch::Avx512, 3).unwrap(),
                Lut8Kernel::QueryLanes16
            );
            assert_eq!(
                lut8_kernel(Dispatch::Avx512, 2).unwrap(),
                Lut8Kernel::Gather(Isa::Avx512)
            );
        }
        if have.contains(&Dispatch::Avx2) {
            assert_eq!(lut8_kernel(Dispatch::Auto, 3).unwrap(), auto_lanes);
            assert_eq!(lut8_kernel(Dispatch::Auto, 2).unwrap(), Lut8Kernel::Scalar);
            assert_eq!(
                lut8_kernel(Dispatch::Avx2, 256).unwrap(),
                Lut8Kernel::QueryLanes
            );
            assert_eq!(
                lut8_kernel(Dispatch::Avx2, 1).unwrap(),
                Lut8Kernel::Gather(Isa::Avx2)
            );
        } else {
            assert_eq!(lut8_kernel(Dispatch::Auto, 16).unwrap(), Lut8Kernel::Scalar);
            assert!(lut8_kernel(Dispatch::Avx2, 16).is_err());
        }
    }

    #[test]
    fn interleave8_lanes_and_padding() {
        // 3 queries, m = 2: query q, table j, entry v = 1000 q + 256 j + v (exact in f32).
        let m = 2;
        let luts: Vec<f32> = (0..3)
            .flat_map(|q| (0..m * 256).map(move |e| (1000 * q + e) as f32))
            .collect();
        let tables = Tables::<256>::new(&luts, m, Direction::SmallerIsBetter).unwrap();
        let t = interleave::<8>(&tables, 0);
        assert_eq!(t.len(), m * 256);
        assert_eq!(t[256 + 7], [263.0, 1263.0, 2263.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let t1 = interleave::<8>(&tables, 2);
        assert_eq!(t1[5], [2005.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let t16 = interleave::<16>(&tables, 1);
        assert_eq!(t16.len(), m * 256);
        assert_eq!(&t16[256 + 7][..3], &[1263.0, 2263.0, 0.0]);
        assert!(t16[256 + 7][2..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn lut4_nibble_order() {
        // m = 3 (odd): byte 0 = (j0 low, j1 high), byte 1 = (j2 low, ignored high).
        let lut: Vec<f32> = (0..3)
            .flat_map(|j| (0..16).map(move |v| (v as f32) * 10f32.powi(j)))
            .collect();
        let code = [0x21u8, 0xf3];
        assert_eq!(lut4_score(&code, 3, &lut).unwrap(), 1.0 + 20.0 + 300.0);
        assert!(lut4_score(&code, 5, &lut).is_err());
    }

    #[test]
    fn bad_tables_are_errors() {
        let codes = [0u8; 8];
        let ids = [0u64, 1];
        let mut lut = vec![0.0f32; 4 * 256];
        lut[300] = f32::NAN;
        let e = lut8_topk(&codes, 4, &ids, None, &lut, Direction::SmallerIsBetter, 1);
        assert!(matches!(e, Err(ScanError::NonFinite { index: 300, .. })));
        let big = vec![f32::MAX; 4 * 256];
        assert!(matches!(
            lut8_topk(&codes, 4, &ids, None, &big, Direction::SmallerIsBetter, 1),
            Err(ScanError::LutRange { .. })
        ));
        assert!(matches!(
            lut8_topk(
                &codes,
                4,
                &ids,
                None,
                &lut[..1000],
                Direction::SmallerIsBetter,
                1
            ),
            Err(ScanError::NotMultiple { .. })
        ));
        assert!(matches!(
            lut4_topk(
                &codes[..7],
                3,
                &ids,
                None,
                &[0.0; 48],
                Direction::SmallerIsBetter,
                1
            ),
            Err(ScanError::CodesLength { .. })
        ));
    }

    #[test]
    fn bit_terms_linear_and_asymmetric() {
        let w: Vec<f32> = (0..16).map(|i| i as f32 * 0.5 - 3.0).collect();
        let lut = lut8_from_bit_terms(&[0.0; 16], &w, 1.5).unwrap();
        let code = [0b1000_0101u8, 0b0000_0010];
        let want = 1.5 + w[0] + w[2] + w[7] + w[9];
        assert_eq!(lut8_score(&code, &lut).unwrap(), want);
        // Asymmetric: ‖y − (2h − 1)‖².
        let y: Vec<f32> = (0..8).map(|i| i as f32 * 0.25 - 1.0).collect();
        let zero: Vec<f32> = y.iter().map(|v| (v + 1.0) * (v + 1.0)).collect();
        let one: Vec<f32> = y.iter().map(|v| (v - 1.0) * (v - 1.0)).collect();
        let lut = lut8_from_bit_terms(&zero, &one, 0.0).unwrap();
        let h = 0b0110_0011u8;
        let direct: f32 = (0..8)
            .map(|b| {
                let s = if (h >> b) & 1 == 1 { 1.0 } else { -1.0 };
                (y[b] - s) * (y[b] - s)
            })
            .fold(0.0, |a, x| a + x);
        assert_eq!(lut8_score(&[h], &lut).unwrap(), direct);
        assert!(lut8_from_bit_terms(&[0.0; 7], &[0.0; 7], 0.0).is_err());
        assert!(lut8_from_bit_terms(&[0.0; 8], &[f32::NAN; 8], 0.0).is_err());
    }
}
