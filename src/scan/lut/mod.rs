//! Table-lookup scoring: score(row) = Σ_j lut[j][code_j], one kernel for several query kinds.
//!
//! - **PQ ADC** (Jégou et al., TPAMI 2011, eq. 13, as FAISS's IndexPQ does it): table `j` holds
//!   the distance (L2, smaller is better) or inner product (larger is better) between the
//!   query's j-th sub-vector and each of the 256 (LUT-8) or 16 (LUT-4) centroids.
//! - **Asymmetric binary distance** (query projected but not binarised): table `j` holds, for
//!   each value of code byte `j`, the sum of the per-bit terms of its 8 bits — see
//!   [`lut8_from_bit_terms`].
//! - **Linear scoring of bits** (score = b + Σ w_i h_i, PiCoDes / SVM on codes): the same tables
//!   with terms `0` and `w_i`, the bias added to every entry of table 0.
//!
//! Scores are summed in `f32` in ascending `j` in every kernel (see `scalar.rs`), so the SIMD and
//! scalar paths give bit-identical scores and identical top-k lists. NaN cannot arise: tables
//! must be finite and the sum over tables of their largest |entry| must stay below
//! `f32::MAX / 2` (checked up front), so no partial sum can overflow. For larger-is-better
//! scores the tables are negated (exact) and the kernels rank smaller-is-better; reported scores
//! are negated back, equal to summing the original tables.
//!
//! Kernels: LUT-8 has a scalar kernel (code read as u64 words, one table load per byte, eight
//! rows at a time for M = 8 and 16), AVX2 / AVX-512 gather kernels, and for several queries
//! query-lane kernels (8 queries' tables interleaved on AVX2, 16 on AVX-512; one query per
//! lane, no gathers); `Dispatch::Auto` runs the scalar kernel for one or two queries and a
//! query-lane kernel from three (see [`lut8_kernel`](entry::lut8_kernel)).
//! LUT-4 keeps each 16-entry table in registers (`vpermps`) on AVX2 / AVX-512.
//!
//! LUT-4 codes hold two sub-quantiser indices per byte, **low nibble first** (sub-quantiser
//! `2i` in bits 0-3 of byte `i`, `2i + 1` in bits 4-7); with an odd M the last high nibble is
//! ignored. This is the plain (row-major) PQ4 ADC; the block-interleaved fast-scan layout is a
//! separate kernel.

mod entry;
pub(crate) mod lists;
pub(crate) mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use entry::{Tables, to_scores};
pub use entry::{
    lut_key, lut4_score, lut4_topk, lut4_topk_batch, lut8_from_bit_terms, lut8_score, lut8_topk,
    lut8_topk_batch,
};
