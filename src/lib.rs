#![doc = include_str!("../README.md")]
//!
//! # Crate layout
//!
//! - [`format`]: bytes ⇄ structures — the versioned, checksummed file format (FORMAT.md).
//! - [`storage`]: files and versions — the index directory, the writer, snapshots, compaction,
//!   garbage collection, inspection, verification.

pub mod format;
pub mod storage;

pub use format::FormatError;
pub use storage::{Index, Snapshot, StorageError};
