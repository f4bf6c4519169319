#![doc = include_str!("../README.md")]
//!
//! # Crate layout
//!
//! - [`format`]: bytes ⇄ structures — the versioned, checksummed file format (FORMAT.md).
//! - [`storage`]: files and versions — the index directory, inspection, verification.

pub mod bench;
pub mod format;
pub mod storage;

pub use format::FormatError;
