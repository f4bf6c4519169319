//! The attribute columns of writes and of stored blocks, seen through the index's schema
//! (docs/filtering.md, "How attributes are stored"; FORMAT.md §3.7).
//!
//! A stored block (a segment written before a column was added) is conformed to the schema when
//! read — in schema order, a column it lacks taking its default — so every block a search or a
//! compaction sees has the schema's columns; a write's columns are conformed the same way
//! before anything is written (`row_batch.rs`'s `conform_write`).

use std::borrow::Cow;

use crate::format::{AttributeError, Attributes, Schema};

/// `rows` rows holding every column's default.
pub(crate) fn defaults(schema: &Schema, rows: usize) -> Attributes {
    Attributes::empty(rows)
        .conform(schema)
        .unwrap_or_else(|_| Attributes::empty(rows))
}

/// A stored block's columns as `schema`'s (borrowed when they already are): columns the block
/// lacks take their defaults (added after it was written); `stored = None` is a block written
/// before the index had columns.
pub(crate) fn conformed<'a>(
    schema: &Schema,
    stored: Option<&'a Attributes>,
    rows: usize,
) -> std::result::Result<Cow<'a, Attributes>, AttributeError> {
    match stored {
        Some(a) if a.schema().same_columns(schema) => Ok(Cow::Borrowed(a)),
        Some(a) => a.conform(schema).map(Cow::Owned),
        None => Ok(Cow::Owned(defaults(schema, rows))),
    }
}
