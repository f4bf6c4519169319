//! Filtered search: which rows a query may return, decided before the scan (docs/filtering.md).
//!
//! A [`RowFilter`] is an id selector ([`IdSelector`], FAISS's `IDSelectorBatch`), a predicate
//! in the filter language ([`Predicate`]), or both (AND). A search checks the predicate against
//! the index's schema (the row id and its attribute columns: [`Schema`]) before anything is
//! read, then per block of rows turns the filter into a bitmap of the rows that pass
//! ([`BlockFilter`]). The scans honour it through the block's deletion mask — a row the filter
//! rejects is, for that search, a deleted row — so every kernel, the multi-index hashing
//! tables, re-ranking, IVF and radius lookups skip it exactly as they skip deletions:
//!
//! - a block with no passing row is not read at all;
//! - a filter passing few rows of a block (under
//!   [`SPARSE_FRACTION`](block_filter::SPARSE_FRACTION)) scans only the runs of 64-row words
//!   holding a passing row (a prefilter);
//! - a broad one, searched for enough queries, scans its passing rows gathered into one buffer;
//!   for few queries, the block's ranges whole, masking rejected rows in the top-k collector.
//!
//! So without IVF a filtered top-k is the brute-force top-k over the passing rows, ties by id
//! included.

mod block_filter;
mod check;
mod eval;
mod parse;
mod predicate;
mod row_filter;
mod schema;
mod selector;

pub use super::error::FilterError;
pub use crate::format::attribute_columns::{
    AttributeError, Attributes, AttributesBuilder, Column, ColumnBuilder, ColumnData, Value,
};
pub(crate) use block_filter::{BlockFilter, CompiledFilter, filter_ranges};
pub use parse::{MAX_DEPTH as MAX_FILTER_DEPTH, MAX_FILTER_BYTES};
pub use predicate::Predicate;
pub use row_filter::RowFilter;
pub use schema::{ColumnType, ID_COLUMN, Schema, parse_timestamp};
pub use selector::IdSelector;
