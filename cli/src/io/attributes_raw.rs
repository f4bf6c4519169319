//! What every reader of `--attributes` hands on (`attributes_arrow.rs`, `attributes_npy.rs`,
//! and `attributes_input.rs`, which fits it to the index's schema): the file's columns typed
//! by the file with nulls kept ([`RawColumn`]), where an error points ([`Source`]) and the
//! errors themselves ([`AttributesInputError`]). Apart from `attributes_input.rs` so that the
//! readers it calls do not import it back.

use std::path::{Path, PathBuf};

use codedb::{ColumnType, Value};

/// Why a columns file could not be read: each variant names the file, and the column and row
/// (from 0) where one is at fault.
#[derive(Debug, thiserror::Error)]
pub enum AttributesInputError {
    /// The operating system refused to open or read the file.
    #[error("{flag} {path}: {source}")]
    Io {
        flag: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a readable file of its format (the reader's message).
    #[error("{flag} {path}: not a readable {format} file: {detail}")]
    Malformed {
        flag: String,
        path: PathBuf,
        format: &'static str,
        detail: String,
    },
    /// The file holds another number of rows than the data.
    #[error("{flag} {path}: {found} rows, the data has {rows} rows")]
    RowCount {
        flag: String,
        path: PathBuf,
        found: String,
        rows: usize,
    },
    /// A column's type has no attribute type (a nested type other than a list of strings,
    /// a binary or decimal column, …).
    #[error(
        "{flag} {path}: column {column:?}: {dtype} has no attribute type (integers, floats, \
         booleans, strings, lists of strings and timestamps do)"
    )]
    UnsupportedType {
        flag: String,
        path: PathBuf,
        column: String,
        dtype: String,
    },
    /// A column that does not fit the index (unknown to its schema, or of another type).
    #[error("{flag} {path}: column {column:?}: {detail}")]
    Column {
        flag: String,
        path: PathBuf,
        column: String,
        detail: String,
    },
    /// One row's value cannot be stored (an unsigned integer beyond 2⁶³ − 1, a null tag, a
    /// timestamp out of range, a malformed date).
    #[error("{flag} {path}: column {column:?}, row {row}: {detail}")]
    Value {
        flag: String,
        path: PathBuf,
        column: String,
        row: usize,
        detail: String,
    },
}

/// Where errors point: the option and the file.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The option, `--attributes`.
    pub flag: &'a str,
    /// The file or directory.
    pub path: &'a Path,
}

impl Source<'_> {
    pub fn io(&self, source: std::io::Error) -> AttributesInputError {
        AttributesInputError::Io {
            flag: self.flag.into(),
            path: self.path.into(),
            source,
        }
    }

    pub fn malformed(&self, format: &'static str, detail: impl ToString) -> AttributesInputError {
        AttributesInputError::Malformed {
            flag: self.flag.into(),
            path: self.path.into(),
            format,
            detail: detail.to_string(),
        }
    }

    pub fn row_count(&self, found: impl ToString, rows: usize) -> AttributesInputError {
        AttributesInputError::RowCount {
            flag: self.flag.into(),
            path: self.path.into(),
            found: found.to_string(),
            rows,
        }
    }

    pub fn unsupported(&self, column: &str, dtype: impl ToString) -> AttributesInputError {
        AttributesInputError::UnsupportedType {
            flag: self.flag.into(),
            path: self.path.into(),
            column: column.into(),
            dtype: dtype.to_string(),
        }
    }

    pub fn column(&self, column: &str, detail: impl ToString) -> AttributesInputError {
        AttributesInputError::Column {
            flag: self.flag.into(),
            path: self.path.into(),
            column: column.into(),
            detail: detail.to_string(),
        }
    }

    pub fn value(&self, column: &str, row: usize, detail: impl ToString) -> AttributesInputError {
        AttributesInputError::Value {
            flag: self.flag.into(),
            path: self.path.into(),
            column: column.into(),
            row,
            detail: detail.to_string(),
        }
    }
}

/// One column as a file holds it, a value or a null (`None`) per row, typed by the file.
#[derive(Debug, Clone, PartialEq)]
pub enum RawColumn {
    /// Integers (Arrow Int8–Int64, UInt8–UInt64 up to 2⁶³ − 1; `.npy` int32/int64/uint8/uint64).
    Int(Vec<Option<i64>>),
    /// Floats.
    Float(Vec<Option<f64>>),
    /// Microseconds since 1970 (Arrow Timestamp of any unit, Date32, Date64).
    Timestamp(Vec<Option<i64>>),
    /// Booleans.
    Bool(Vec<Option<bool>>),
    /// Strings.
    Str(Vec<Option<String>>),
    /// String lists (tag sets; a row's repeated tags count once).
    Tags(Vec<Option<Vec<String>>>),
}

impl RawColumn {
    /// Rows in the column.
    pub fn len(&self) -> usize {
        match self {
            RawColumn::Int(v) | RawColumn::Timestamp(v) => v.len(),
            RawColumn::Float(v) => v.len(),
            RawColumn::Bool(v) => v.len(),
            RawColumn::Str(v) => v.len(),
            RawColumn::Tags(v) => v.len(),
        }
    }

    /// True for a column of no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The attribute type the file's type gives the column (a schema inferred from the file).
    pub fn natural_type(&self) -> ColumnType {
        match self {
            RawColumn::Int(_) => ColumnType::Int,
            RawColumn::Float(_) => ColumnType::Float,
            RawColumn::Timestamp(_) => ColumnType::Timestamp,
            RawColumn::Bool(_) => ColumnType::Bool,
            RawColumn::Str(_) => ColumnType::Str,
            RawColumn::Tags(_) => ColumnType::Tags,
        }
    }

    /// The file's type in messages.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            RawColumn::Int(_) => "integers",
            RawColumn::Float(_) => "floats",
            RawColumn::Timestamp(_) => "timestamps",
            RawColumn::Bool(_) => "booleans",
            RawColumn::Str(_) => "strings",
            RawColumn::Tags(_) => "lists of strings",
        }
    }

    /// Appends `other` (a later batch of the same column, of the same kind).
    pub fn extend(&mut self, other: RawColumn) -> std::result::Result<(), (String, String)> {
        match (self, other) {
            (RawColumn::Int(a), RawColumn::Int(b)) => a.extend(b),
            (RawColumn::Float(a), RawColumn::Float(b)) => a.extend(b),
            (RawColumn::Timestamp(a), RawColumn::Timestamp(b)) => a.extend(b),
            (RawColumn::Bool(a), RawColumn::Bool(b)) => a.extend(b),
            (RawColumn::Str(a), RawColumn::Str(b)) => a.extend(b),
            (RawColumn::Tags(a), RawColumn::Tags(b)) => a.extend(b),
            (a, b) => return Err((a.kind().into(), b.kind().into())),
        }
        Ok(())
    }

    /// True when the column's values can be stored in a column of type `t` (see
    /// [`RawColumn::value`]).
    pub(super) fn fits(&self, t: ColumnType) -> bool {
        matches!(
            (self, t),
            (
                RawColumn::Int(_),
                ColumnType::Int | ColumnType::Float | ColumnType::Timestamp
            ) | (RawColumn::Float(_), ColumnType::Float)
                | (RawColumn::Timestamp(_), ColumnType::Timestamp)
                | (RawColumn::Bool(_), ColumnType::Bool)
                | (RawColumn::Str(_), ColumnType::Str | ColumnType::Timestamp)
                | (RawColumn::Tags(_), ColumnType::Tags)
        )
    }

    /// Row `i`'s value as a value of type `t` (`None` for a null), or why it does not fit.
    /// The conversions are those of JSON lines: an integer fits a float column and a
    /// timestamp column (microseconds), a string a timestamp column (an ISO date, UTC).
    pub(super) fn value(
        &self,
        i: usize,
        t: ColumnType,
    ) -> std::result::Result<Option<Value>, String> {
        Ok(Some(match (self, t) {
            (RawColumn::Int(v), ColumnType::Int) => match v[i] {
                Some(x) => Value::Int(x),
                None => return Ok(None),
            },
            (RawColumn::Int(v), ColumnType::Float) => match v[i] {
                Some(x) => Value::Float(x as f64),
                None => return Ok(None),
            },
            (RawColumn::Int(v) | RawColumn::Timestamp(v), ColumnType::Timestamp) => match v[i] {
                Some(x) => Value::Timestamp(x),
                None => return Ok(None),
            },
            (RawColumn::Float(v), ColumnType::Float) => match v[i] {
                Some(x) => Value::Float(x),
                None => return Ok(None),
            },
            (RawColumn::Bool(v), ColumnType::Bool) => match v[i] {
                Some(x) => Value::Bool(x),
                None => return Ok(None),
            },
            (RawColumn::Str(v), ColumnType::Str) => match &v[i] {
                Some(s) => Value::Str(s.clone()),
                None => return Ok(None),
            },
            (RawColumn::Str(v), ColumnType::Timestamp) => match &v[i] {
                Some(s) => codedb::parse_timestamp(s, 0)
                    .map(Value::Timestamp)
                    .map_err(|e| match e {
                        codedb::FilterError::Type { detail, .. } => detail,
                        e => e.to_string(),
                    })?,
                None => return Ok(None),
            },
            (RawColumn::Tags(v), ColumnType::Tags) => match &v[i] {
                Some(tags) => {
                    let mut distinct: Vec<String> = Vec::with_capacity(tags.len());
                    for s in tags {
                        if !distinct.contains(s) {
                            distinct.push(s.clone());
                        }
                    }
                    Value::Tags(distinct)
                }
                None => return Ok(None),
            },
            (raw, t) => {
                return Err(format!(
                    "the file holds {}, the index's column is {}",
                    raw.kind(),
                    t.name()
                ));
            }
        }))
    }
}
