//! 4-bit PQ fast-scan (André, Kermarrec & Le Scouarnec, VLDB 2015, "Cache locality is not
//! enough"; as in FAISS's IndexPQFastScan): tables quantised to u8 and held in registers,
//! looked up with byte shuffles over block-interleaved codes ([`layout`]), summed in u16.
//!
//! **Exact results.** The quantised sums only *filter*: a row whose quantised sum proves its
//! exact score cannot reach the current k-th is skipped; every other row is re-scored exactly
//! (f32, sub-quantisers in ascending order — the plain LUT-4 kernel's order) and offered to the
//! collector. So the top-k list is identical, bit for bit, to [`crate::scan::lut4_topk_batch`]
//! on the same codes; quantisation only changes how many rows are re-scored.
//!
//! Quantisation (per query, after negating tables for larger-is-better): table `j` minus its
//! minimum `m_j`, times one global scale `a = L / max_j (max_j − m_j)` with `L` =
//! [`LEVELS`](quant_lut::LEVELS) `= 63`, rounded: `q_j(i) = round(a (t_j(i) − m_j)) ∈ [0, 63]`, so four lookups
//! add in one byte without overflow (the AVX-512 kernel sums four sub-quantisers in u8 before
//! widening) and a row's `Q = Σ_j q_j ≤ 63 M2` fits u16 for `M ≤ 256`. Six bits instead of
//! FAISS's eight only widen the band of rows that are re-scored: the filter's slack is ½ level
//! per table either way, and with random tables at M = 16 that band holds well under one row
//! per 10⁶ beyond the true top-k. Since `t_j(i) − m_j ≥ (q_j(i) − ½) / a`, the real sum `S ≥ (Q − ½M)/a + Σ m_j`;
//! with `γ` bounding the f32 rounding of the exact sum (`γ = M · 2⁻²³ · Σ_j max|t_j|`), a row
//! can only have exact score `≤ θ` (the k-th) if `Q ≤ (θ + γ − Σ m_j)·a + ½M` (+1 for the f64
//! arithmetic of this bound). Rows over that bound are skipped.

mod entry;
pub mod layout;
mod quant_lut;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use entry::{FastScanRows, fastscan_topk, fastscan_topk_batch};
pub use layout::{pack_fastscan, unpack_row};
