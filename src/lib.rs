#![doc = include_str!("../README.md")]
//!
//! # Crate layout
//!
//! - [`format`]: bytes ⇄ structures — the versioned, checksummed file format (FORMAT.md).
//! - [`storage`]: files and versions — the index directory, the writer, snapshots, compaction,
//!   garbage collection, inspection, verification.
//! - [`model`]: the math — PCA, ITQ, LSH, SKLSH, RFF, PQ/OPQ stages, pipelines, training.
//! - [`scan`]: kernels — Hamming, LUT, dense, top-k, with runtime CPU dispatch.
//! - [`classes`]: class-mean tables — NCM classification, new classes, zero-shot priors.
//! - [`search`]: scan plans — a query batch over a snapshot, per-block kernels, merged top-k.

pub mod classes;
pub mod error;
pub mod format;
pub mod model;
pub mod scan;
pub mod search;
pub mod storage;

pub use error::Error;
pub use format::FormatError;
pub use model::Model;
pub use search::{Hit, SearchMode, SearchParams};
pub use storage::{BuildOptions, Index, Snapshot, StorageError};
