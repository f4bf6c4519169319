//! The attribute columns of writes and of stored blocks, seen through the index's schema
//! (docs/filtering.md, "How attributes are stored"; FORMAT.md §3.7).
//!
//! A write's columns are checked against the schema before anything is written — a column the
//! schema lacks, a column of another type, a column of another length is refused naming it —
//! and conformed to it: in schema order, a column the write leaves out taking its default. A
//! stored block (a segment written before a column was added) is conformed the same way when
//! read, so every block a search or a compaction sees has the schema's columns.

use std::borrow::Cow;
use std::path::Path;

use crate::format::{AttributeError, Attributes, Schema};

use super::error::{Result, StorageError};

/// The columns a write of `rows` rows stores: `attrs` conformed to `schema` (missing columns
/// take their defaults), every column's default when the write gives none, and `None` when the
/// index has no columns. Refused, naming the column, when `attrs` has a column the schema lacks
/// or of another type, or another number of rows.
pub(crate) fn conform_write(
    dir: &Path,
    schema: &Schema,
    attrs: Option<&Attributes>,
    rows: usize,
) -> Result<Option<Attributes>> {
    let Some(a) = attrs else {
        return Ok((!schema.is_empty()).then(|| defaults(schema, rows)));
    };
    if a.rows() != rows {
        let column = a
            .schema()
            .columns()
            .first()
            .map_or(String::new(), |(n, _)| n.clone());
        return Err(StorageError::attributes(
            dir,
            AttributeError::column(
                &column,
                format!("{} rows of attributes for {rows} rows", a.rows()),
            ),
        ));
    }
    let c = a
        .conform(schema)
        .map_err(|e| StorageError::attributes(dir, e))?;
    Ok((!schema.is_empty()).then_some(c))
}

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
