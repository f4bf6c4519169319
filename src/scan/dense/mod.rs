//! Dense vector kernels: dot product and squared L2 on f32 (and f32 × f16 storage), for
//! re-ranking the candidates of a compressed scan with stored vectors and for class-mean (NCM)
//! scans (`distance.rs`: one pair, and the top-k of a query over stored rows); and the encoders' kernels in the same fixed order: many rows against a weight matrix
//! (`block.rs`), the nearest PQ centroid (`nearest.rs`) and the ADC tables (`columns.rs`).
//!
//! Both the AVX2+FMA kernel and its scalar twin sum in one fixed, lane-blocked order (documented
//! in `scalar.rs`), so results are bit-identical across paths. Results that are not finite
//! (non-finite inputs, or overflow) are errors, so NaN never reaches a ranking.

mod block;
mod columns;
mod distance;
mod nearest;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use block::{dot_rows_fixed_order, dot_rows_fixed_order_with};
pub use columns::{ColumnOp, columns_fixed_order, columns_fixed_order_with};
pub use distance::{
    DenseRows, DenseValues, Metric, dense_f32, dense_f32_f16, dense_topk, dot_f32, dot_f32_f16,
    dot_fixed_order, dot_fixed_order_scalar, l2sq_f32, l2sq_f32_f16, prefetch,
};
pub use nearest::{
    nearest_centroid_l2, nearest_centroid_l2_pair, nearest_centroid_l2_pair_with,
    nearest_centroid_l2_with,
};
