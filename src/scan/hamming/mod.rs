//! Hamming ranking of binary codes: `popcount(code XOR query)`, for any code width.
//!
//! Symmetric binary search (ITQ, Gong et al. TPAMI 2013, §3: codes compared by Hamming
//! distance; LSH, PCA-RR …). Kernels: scalar `count_ones`, AVX2 nibble-table popcount,
//! AVX-512 VPOPCNTDQ, AArch64 NEON `cnt`; 8/16/32/64-byte codes (64/128/256/512 bits) have dedicated layouts.
//! Every path yields the same integers, and the collector's total order makes the top-k lists
//! identical.

mod entry;
#[cfg(target_arch = "aarch64")]
mod neon;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;

pub(crate) use entry::merge_parts;
pub use entry::{
    hamming_distance, hamming_topk, hamming_topk_batch, hamming_topk_into, hamming_within,
};
