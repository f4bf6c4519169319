//! Scan kernels: the hot loops every query compiles to (ARCHITECTURE.md, "Rooms": the second
//! room, which knows bytes but not models, files or queries).
//!
//! This layer knows kernels, not files: it works over slices handed in by a segment
//! ([`CodeRows`]: row-major codes, user ids, optional deletion bitmap) and returns results as
//! `(score, id)` pairs in a total order — better score first, ties by smaller id — so the SIMD
//! and scalar paths, any thread count, and any split into segments give the identical list.
//!
//! - [`hamming`]: popcount(code XOR query) for any width (scalar, AVX2, AVX-512 VPOPCNTDQ).
//! - [`lut`]: Σ_j lut[j][code_j] — PQ ADC with 256- or 16-entry tables, asymmetric binary
//!   distance, linear scores of bits.
//! - [`fastscan`]: 4-bit PQ over block-interleaved codes, u8 tables in registers, exact
//!   re-scoring (same lists as [`lut4_topk_batch`]).
//! - [`dense`]: dot / squared L2 on f32 and f16 vectors (re-ranking, class means).
//! - [`topk`]: bounded collectors with a threshold kernels filter against in registers.
//! - [`dispatch`]: picks the kernels once per process from the CPU's features.
//! - [`schedule`]: threads over row ranges and cache blocking for several queries.
//!
//! Every SIMD kernel has a scalar twin that gives the same integers or bit-identical floats
//! (`tests/scan_equivalence.rs`). Multi-segment search: scan each segment into one collector
//! ([`hamming_topk_into`]) or merge per-segment lists ([`merge_score_lists`],
//! [`merge_distance_lists`], [`TopK::merge`]).
//!
//! `unsafe` appears here only for SIMD: calling `#[target_feature]` kernels after the runtime
//! probe, and unaligned vector loads / table gathers whose addresses are proven in bounds. Each block
//! carries a `// SAFETY:` comment.

#[allow(unsafe_code)] // SIMD kernels (ARCHITECTURE.md, "unsafe")
pub mod dense;
pub mod dispatch;
pub mod error;
#[allow(unsafe_code)] // SIMD kernels (ARCHITECTURE.md, "unsafe")
pub mod fastscan;
#[allow(unsafe_code)] // SIMD kernels (ARCHITECTURE.md, "unsafe")
pub mod hamming;
#[allow(unsafe_code)] // SIMD kernels (ARCHITECTURE.md, "unsafe")
pub mod lut;
pub mod rows;
pub mod schedule;
pub mod topk;

pub use dense::{
    DenseRows, DenseValues, Metric, dense_f32, dense_f32_f16, dense_topk, dot_f32, dot_f32_f16,
    l2sq_f32, l2sq_f32_f16,
};
pub use dispatch::{Dispatch, Isa, available_dispatches, best_available, detected_isa};
pub use error::ScanError;
pub use fastscan::{FastScanRows, fastscan_topk, fastscan_topk_batch, pack_fastscan, unpack_row};
pub use hamming::{
    hamming_distance, hamming_topk, hamming_topk_batch, hamming_topk_into, hamming_within,
};
pub(crate) use lut::lists::{ListTable, ListTopK, LutTerms, Terms};
pub use lut::{
    lut_key, lut4_score, lut4_topk, lut4_topk_batch, lut8_from_bit_terms, lut8_score, lut8_topk,
    lut8_topk_batch,
};
pub use rows::CodeRows;
pub use schedule::ScanOptions;
pub use topk::{
    Direction, ScoreTopK, TopK, f32_to_key, key_to_f32, key_to_score, merge_distance_lists,
    merge_score_lists,
};
