//! The scan kernels, for whoever measures or extends them: the benchmarks, the equivalence
//! tests, the lab's experiments (`codedb bench`). An application does not need this module — [`Snapshot::search`](crate::Snapshot::search) picks and runs
//! the kernels itself.
//!
//! Every kernel works over slices ([`CodeRows`], [`DenseRows`], [`FastScanRows`]) and returns
//! `(score, id)` pairs in a total order (better score first, ties by smaller id); each SIMD
//! kernel has a scalar twin that gives the same integers or bit-identical floats, and
//! [`Dispatch`] picks one per process from the CPU's features (`CODEDB_SCAN_ISA`). Only the
//! scan room (`src/scan/`) is here: what a query compiles to before it reaches a kernel (lookup
//! tables, MIH and radius tables, the blocks of a snapshot) belongs to the search room.

pub use crate::scan::dense::{
    ColumnOp, columns_fixed_order, columns_fixed_order_with, dot_fixed_order,
    dot_fixed_order_scalar, dot_rows_fixed_order, dot_rows_fixed_order_with, nearest_centroid_l2,
    nearest_centroid_l2_pair, nearest_centroid_l2_pair_with, nearest_centroid_l2_with,
};
pub use crate::scan::{
    CodeRows, DenseRows, DenseValues, Direction, Dispatch, FastScanRows, Isa, Metric, ScanOptions,
    ScoreTopK, TopK, available_dispatches, best_available, dense_f32, dense_f32_f16, dense_topk,
    detected_isa, dot_f32, dot_f32_f16, f32_to_key, fastscan_topk, fastscan_topk_batch,
    hamming_distance, hamming_topk, hamming_topk_batch, hamming_topk_into, hamming_within,
    key_to_f32, key_to_score, l2sq_f32, l2sq_f32_f16, lut_key, lut4_score, lut4_topk,
    lut4_topk_batch, lut8_from_bit_terms, lut8_score, lut8_topk, lut8_topk_batch,
    merge_distance_lists, merge_score_lists, pack_fastscan, unpack_row,
};
