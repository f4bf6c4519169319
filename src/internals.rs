//! The search room's internals, for the benchmarks and tests that measure or check them piece
//! by piece (`codedb bench mih`, `tests/search_modes.rs`, `tests/backward_compatibility.rs`,
//! `tests/mih_search.rs`): the lookup tables a query compiles to, multi-index hashing and its
//! tuning constants, the hash table of radius lookups, the stored-vector sources re-ranking
//! reads and the blocks a scan visits. Not an API: hidden from the documentation, and its
//! names change with the engine. An application reaches all of it through
//! [`Snapshot::search`](crate::Snapshot::search).

pub use crate::search::{
    AUTO_MIN_ROWS as MIH_AUTO_MIN_ROWS, AUTO_WORK_DIVISOR as MIH_AUTO_WORK_DIVISOR, HammingTable,
    MAX_RADIUS, MAX_TABLE_CODE_BYTES, MemoryVectors, RowRef, SnapshotVectors, VectorSource,
    asym_bit_terms, asym_tables, list_coverage, mih_search, text_tables,
};
pub use crate::storage::Block;
pub use crate::storage::block::FastScanRun;
