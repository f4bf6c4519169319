//! Attribute columns (format 1.7, FORMAT.md §3.7, §7.4, §10.2): typed values stored beside each
//! row's code so that a search can filter on them (docs/filtering.md).
//!
//! This file holds the structures and their bytes, both: the schema of an index (names, types
//! and the default of each column: [`Schema`]), owned columns in memory ([`Column`],
//! [`Attributes`]) and borrowed views of them ([`ColumnData`]), and the one encoding that a
//! segment's `attributes` section, an append-log record and the manifest's `attribute_schema`
//! section share ([`encode`], [`decode`], [`encode_schema`], [`decode_schema`]). They live in
//! the lowest room because the manifest and the segments carry them; the filter language that
//! reads them is in `search/filter/`.
//!
//! Nothing read from disk is trusted (FORMAT.md §1.4): [`decode`] checks every length against
//! the bytes present before allocating, every name and dictionary string for UTF-8, every
//! dictionary code and tag offset for range ([`ColumnData::check`]), every padding byte for
//! zero, so a filter never indexes out of bounds on damaged bytes.

use std::collections::HashMap;
use std::path::Path;

use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter, to_usize};

/// The name of the row id in the filter language: always present, an unsigned 64-bit integer,
/// never an attribute column's name.
pub const ID_COLUMN: &str = "id";
/// Most attribute columns an index may have.
pub const MAX_COLUMNS: usize = 1024;
/// Longest column name, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

/// Attribute values that do not fit a schema or a batch of rows: names the column and, where
/// one is at fault, the row (0-based within the batch).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("attributes column {column}{}: {detail}", row.map(|r| format!(", row {r}")).unwrap_or_default())]
pub struct AttributeError {
    /// The column at fault (`""` when the fault is the set of columns itself).
    pub column: String,
    /// The row at fault, when one is.
    pub row: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

impl AttributeError {
    /// An error about column `column` (no particular row).
    pub fn column(column: &str, detail: impl Into<String>) -> AttributeError {
        AttributeError {
            column: column.to_owned(),
            row: None,
            detail: detail.into(),
        }
    }

    /// An error about row `row` of column `column`.
    pub fn row(column: &str, row: u64, detail: impl Into<String>) -> AttributeError {
        AttributeError {
            column: column.to_owned(),
            row: Some(row),
            detail: detail.into(),
        }
    }
}

/// The type of an attribute column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// Signed 64-bit integers; compared with integer literals.
    Int,
    /// 64-bit floats; compared with integer or float literals (IEEE: a NaN value satisfies
    /// only `!=`).
    Float,
    /// Microseconds since 1970-01-01T00:00:00Z, signed 64-bit; compared with `TIMESTAMP '…'`,
    /// a quoted ISO-8601 date or date-time (UTC), or an integer count of microseconds.
    Timestamp,
    /// `TRUE` / `FALSE`; tested bare (`flag`, `NOT flag`) or with `=` / `!=`.
    Bool,
    /// Strings, dictionary-encoded; tested with `=`, `!=`, `IN`, `NOT IN`.
    Str,
    /// Sets of strings per row (tags); tested with `HAS`, `HAS ANY`, `HAS ALL`.
    Tags,
}

impl ColumnType {
    /// Every type, in the order of their codes.
    pub const ALL: [ColumnType; 6] = [
        ColumnType::Int,
        ColumnType::Float,
        ColumnType::Timestamp,
        ColumnType::Bool,
        ColumnType::Str,
        ColumnType::Tags,
    ];

    /// The type's name in schemas and messages.
    pub fn name(self) -> &'static str {
        match self {
            ColumnType::Int => "int",
            ColumnType::Float => "float",
            ColumnType::Timestamp => "timestamp",
            ColumnType::Bool => "bool",
            ColumnType::Str => "string",
            ColumnType::Tags => "tags",
        }
    }

    /// Parses a type name as [`ColumnType::name`] writes it.
    pub fn parse(s: &str) -> Option<ColumnType> {
        ColumnType::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The type's byte in the file (FORMAT.md §3.7): 1 int, 2 float, 3 timestamp, 4 bool,
    /// 5 string, 6 tags.
    pub fn code(self) -> u8 {
        match self {
            ColumnType::Int => 1,
            ColumnType::Float => 2,
            ColumnType::Timestamp => 3,
            ColumnType::Bool => 4,
            ColumnType::Str => 5,
            ColumnType::Tags => 6,
        }
    }

    /// The type stored as `code`, or `None` for an unknown byte.
    pub fn from_code(code: u8) -> Option<ColumnType> {
        ColumnType::ALL.into_iter().find(|t| t.code() == code)
    }
}

/// One attribute value: a column's default, or one row's value as `--with` shows it.
#[derive(Debug, Clone)]
pub enum Value {
    /// An `int` value.
    Int(i64),
    /// A `float` value.
    Float(f64),
    /// A `timestamp` value, microseconds since the Unix epoch.
    Timestamp(i64),
    /// A `bool` value.
    Bool(bool),
    /// A `string` value.
    Str(String),
    /// A `tags` value: the row's distinct tags.
    Tags(Vec<String>),
}

// Floats compare by their bits, so equality is reflexive (a NaN default equals itself) and
// `Schema` can be `Eq`.
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) | (Value::Timestamp(a), Value::Timestamp(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Tags(a), Value::Tags(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Value {
    /// The default of a column of type `t` when none is given: 0, 0.0, the epoch, false, the
    /// empty string, no tags.
    pub fn zero(t: ColumnType) -> Value {
        match t {
            ColumnType::Int => Value::Int(0),
            ColumnType::Float => Value::Float(0.0),
            ColumnType::Timestamp => Value::Timestamp(0),
            ColumnType::Bool => Value::Bool(false),
            ColumnType::Str => Value::Str(String::new()),
            ColumnType::Tags => Value::Tags(Vec::new()),
        }
    }

    /// The value's type.
    pub fn column_type(&self) -> ColumnType {
        match self {
            Value::Int(_) => ColumnType::Int,
            Value::Float(_) => ColumnType::Float,
            Value::Timestamp(_) => ColumnType::Timestamp,
            Value::Bool(_) => ColumnType::Bool,
            Value::Str(_) => ColumnType::Str,
            Value::Tags(_) => ColumnType::Tags,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Int(v) | Value::Timestamp(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Tags(t) => write!(f, "{t:?}"),
        }
    }
}

/// The attribute columns of an index (names, types and defaults, in order), besides the row
/// id. Fixed when the index is created; a column added later (`Index::add_column`) takes its
/// default in every row stored before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schema {
    columns: Vec<(String, ColumnType)>,
    defaults: Vec<Value>,
}

/// Whether `name` may name a column: `[A-Za-z_][A-Za-z0-9_]*`, at most [`MAX_NAME_BYTES`],
/// not `id`. `Err` says why not.
fn check_name(name: &str) -> std::result::Result<(), &'static str> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err("use letters, digits and '_', not starting with a digit");
    }
    if name.len() > MAX_NAME_BYTES {
        return Err("longer than 255 bytes");
    }
    if name == ID_COLUMN {
        return Err("the row id's");
    }
    Ok(())
}

impl Schema {
    /// A schema of these columns, each defaulting to its type's zero ([`Value::zero`]). Names
    /// are `[A-Za-z_][A-Za-z0-9_]*`, unique, and not `id`; at most [`MAX_COLUMNS`] columns.
    pub fn new(columns: Vec<(String, ColumnType)>) -> std::result::Result<Schema, AttributeError> {
        if columns.len() > MAX_COLUMNS {
            return Err(AttributeError::column(
                "",
                format!("{} columns (at most {MAX_COLUMNS})", columns.len()),
            ));
        }
        for (i, (name, _)) in columns.iter().enumerate() {
            let bad = |why: &str| Err(AttributeError::column(name, format!("bad name: {why}")));
            if let Err(why) = check_name(name) {
                return bad(why);
            }
            if columns[..i].iter().any(|(n, _)| n == name) {
                return bad("given twice");
            }
        }
        let defaults = columns.iter().map(|(_, t)| Value::zero(*t)).collect();
        Ok(Schema { columns, defaults })
    }

    /// Parses `name:type,name:type,…` (types as [`ColumnType::name`] writes them; spaces
    /// around names and types are ignored): the CLI's `--schema`.
    pub fn parse(text: &str) -> std::result::Result<Schema, AttributeError> {
        let mut cols = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let Some((name, ty)) = part.split_once(':') else {
                return Err(AttributeError::column(
                    part,
                    "write name:type (types: int, float, timestamp, bool, string, tags)",
                ));
            };
            let (name, ty) = (name.trim(), ty.trim());
            let t = ColumnType::parse(ty).ok_or_else(|| {
                AttributeError::column(
                    name,
                    format!("unknown type {ty:?} (int, float, timestamp, bool, string, tags)"),
                )
            })?;
            cols.push((name.to_owned(), t));
        }
        Schema::new(cols)
    }

    /// The same schema with `value` as column `name`'s default (of the column's type).
    pub fn with_default(
        mut self,
        name: &str,
        value: Value,
    ) -> std::result::Result<Schema, AttributeError> {
        let (i, t) = self
            .find(name)
            .ok_or_else(|| AttributeError::column(name, "no such column"))?;
        check_default(name, t, &value)?;
        self.defaults[i] = value;
        Ok(self)
    }

    /// The same schema with one more column, last, of type `t` and default `default`.
    pub fn with_column(
        &self,
        name: &str,
        t: ColumnType,
        default: Value,
    ) -> std::result::Result<Schema, AttributeError> {
        let mut cols = self.columns.clone();
        cols.push((name.to_owned(), t));
        let mut s = Schema::new(cols)?;
        check_default(name, t, &default)?;
        s.defaults[..self.defaults.len()].clone_from_slice(&self.defaults);
        s.defaults[self.columns.len()] = default;
        Ok(s)
    }

    /// The columns, in order.
    pub fn columns(&self) -> &[(String, ColumnType)] {
        &self.columns
    }

    /// Column `i`'s default.
    pub fn default_value(&self, i: usize) -> Option<&Value> {
        self.defaults.get(i)
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether the schema has no column.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The position and type of column `name`.
    pub fn find(&self, name: &str) -> Option<(usize, ColumnType)> {
        self.columns
            .iter()
            .position(|(n, _)| n == name)
            .map(|i| (i, self.columns[i].1))
    }

    /// Whether `other` has the same names and types in the same order (defaults aside).
    pub fn same_columns(&self, other: &Schema) -> bool {
        self.columns == other.columns
    }

    /// Every name an expression may use, for messages.
    pub fn known(&self) -> String {
        std::iter::once(ID_COLUMN)
            .chain(self.columns.iter().map(|(n, _)| n.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn check_default(name: &str, t: ColumnType, v: &Value) -> std::result::Result<(), AttributeError> {
    if v.column_type() != t {
        return Err(AttributeError::column(
            name,
            format!(
                "a {} default for a {} column",
                v.column_type().name(),
                t.name()
            ),
        ));
    }
    if let Value::Tags(tags) = v {
        let mut seen = std::collections::HashSet::new();
        if tags.iter().any(|t| !seen.insert(t)) {
            return Err(AttributeError::column(
                name,
                "a default with a repeated tag",
            ));
        }
    }
    Ok(())
}

/// One column's values for a run of rows, borrowed.
#[derive(Debug, Clone, Copy)]
pub enum ColumnData<'a> {
    /// Signed integers.
    Int(&'a [i64]),
    /// Floats.
    Float(&'a [f64]),
    /// Microseconds since the Unix epoch.
    Timestamp(&'a [i64]),
    /// Booleans.
    Bool(&'a [bool]),
    /// Dictionary-encoded strings: row `i` is `dict[codes[i]]`.
    Str {
        /// One code per row.
        codes: &'a [u32],
        /// The distinct strings.
        dict: &'a [String],
    },
    /// Tag sets: row `i`'s tags are `dict[values[offsets[i]..offsets[i + 1]]]`.
    Tags {
        /// Rows + 1 offsets into `values`, non-decreasing, starting at 0.
        offsets: &'a [u32],
        /// Dictionary codes of every row's tags.
        values: &'a [u32],
        /// The distinct tags.
        dict: &'a [String],
    },
}

impl<'a> ColumnData<'a> {
    /// The same column over rows `r` only (a tag column keeps its offsets into the whole
    /// `values`, which every reader takes relative to the first offset); `None` when `r` is
    /// past the rows.
    pub fn slice(&self, r: std::ops::Range<usize>) -> Option<ColumnData<'a>> {
        Some(match *self {
            ColumnData::Int(v) => ColumnData::Int(v.get(r)?),
            ColumnData::Timestamp(v) => ColumnData::Timestamp(v.get(r)?),
            ColumnData::Float(v) => ColumnData::Float(v.get(r)?),
            ColumnData::Bool(v) => ColumnData::Bool(v.get(r)?),
            ColumnData::Str { codes, dict } => ColumnData::Str {
                codes: codes.get(r)?,
                dict,
            },
            ColumnData::Tags {
                offsets,
                values,
                dict,
            } => ColumnData::Tags {
                offsets: offsets.get(r.start..r.end.checked_add(1)?)?,
                values,
                dict,
            },
        })
    }
}

impl ColumnData<'_> {
    /// The rows the column holds.
    pub fn rows(&self) -> usize {
        match self {
            ColumnData::Int(v) | ColumnData::Timestamp(v) => v.len(),
            ColumnData::Float(v) => v.len(),
            ColumnData::Bool(v) => v.len(),
            ColumnData::Str { codes, .. } => codes.len(),
            ColumnData::Tags { offsets, .. } => offsets.len().saturating_sub(1),
        }
    }

    /// The column's type.
    pub fn column_type(&self) -> ColumnType {
        match self {
            ColumnData::Int(_) => ColumnType::Int,
            ColumnData::Float(_) => ColumnType::Float,
            ColumnData::Timestamp(_) => ColumnType::Timestamp,
            ColumnData::Bool(_) => ColumnType::Bool,
            ColumnData::Str { .. } => ColumnType::Str,
            ColumnData::Tags { .. } => ColumnType::Tags,
        }
    }

    /// Row `row`'s value (`None` past the end).
    pub fn value(&self, row: usize) -> Option<Value> {
        if row >= self.rows() {
            return None;
        }
        Some(match self {
            ColumnData::Int(v) => Value::Int(v[row]),
            ColumnData::Float(v) => Value::Float(v[row]),
            ColumnData::Timestamp(v) => Value::Timestamp(v[row]),
            ColumnData::Bool(v) => Value::Bool(v[row]),
            ColumnData::Str { codes, dict } => Value::Str(dict.get(codes[row] as usize)?.clone()),
            ColumnData::Tags {
                offsets,
                values,
                dict,
            } => {
                let (a, b) = (offsets[row] as usize, offsets[row + 1] as usize);
                let mut tags = Vec::with_capacity(b.saturating_sub(a));
                for &c in values.get(a..b)? {
                    tags.push(dict.get(c as usize)?.clone());
                }
                Value::Tags(tags)
            }
        })
    }

    /// Whether every code and offset lies inside its dictionary and values: what a reader checks
    /// before a filter reads the column (a filter never indexes out of bounds on bad bytes).
    pub fn check(&self) -> std::result::Result<(), String> {
        match self {
            ColumnData::Str { codes, dict } => {
                if let Some((i, c)) = codes
                    .iter()
                    .enumerate()
                    .find(|(_, c)| **c as usize >= dict.len())
                {
                    return Err(format!(
                        "row {i}: code {c} outside a dictionary of {}",
                        dict.len()
                    ));
                }
            }
            ColumnData::Tags {
                offsets,
                values,
                dict,
            } => {
                if offsets.first().is_some_and(|&o| o != 0) || offsets.is_empty() {
                    return Err("tag offsets do not start at 0".into());
                }
                if let Some(i) = offsets.windows(2).position(|w| w[0] > w[1]) {
                    return Err(format!("row {i}: tag offsets decrease"));
                }
                if offsets.last().is_some_and(|&o| o as usize != values.len()) {
                    return Err(format!(
                        "tag offsets end at {:?}, the values hold {}",
                        offsets.last(),
                        values.len()
                    ));
                }
                if let Some(c) = values.iter().find(|c| **c as usize >= dict.len()) {
                    return Err(format!(
                        "tag code {c} outside a dictionary of {}",
                        dict.len()
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// One owned column (see [`ColumnData`]). Equality compares floats by their bits, so a column
/// (and a set of [`Attributes`]) holding a NaN equals itself.
#[derive(Debug, Clone)]
pub enum Column {
    /// Signed integers.
    Int(Vec<i64>),
    /// Floats.
    Float(Vec<f64>),
    /// Microseconds since the Unix epoch.
    Timestamp(Vec<i64>),
    /// Booleans.
    Bool(Vec<bool>),
    /// Dictionary-encoded strings.
    Str {
        /// One code per row.
        codes: Vec<u32>,
        /// The distinct strings.
        dict: Vec<String>,
    },
    /// Tag sets.
    Tags {
        /// Rows + 1 offsets into `values`.
        offsets: Vec<u32>,
        /// Dictionary codes of every row's tags.
        values: Vec<u32>,
        /// The distinct tags.
        dict: Vec<String>,
    },
}

impl PartialEq for Column {
    fn eq(&self, other: &Column) -> bool {
        match (self, other) {
            (Column::Float(a), Column::Float(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (Column::Int(a), Column::Int(b)) | (Column::Timestamp(a), Column::Timestamp(b)) => {
                a == b
            }
            (Column::Bool(a), Column::Bool(b)) => a == b,
            (
                Column::Str { codes, dict },
                Column::Str {
                    codes: c2,
                    dict: d2,
                },
            ) => codes == c2 && dict == d2,
            (
                Column::Tags {
                    offsets,
                    values,
                    dict,
                },
                Column::Tags {
                    offsets: o2,
                    values: v2,
                    dict: d2,
                },
            ) => offsets == o2 && values == v2 && dict == d2,
            _ => false,
        }
    }
}

/// Codes of `s` in `dict`, growing it (first appearance order).
fn encode_str(dict: &mut Vec<String>, index: &mut HashMap<String, u32>, s: &str) -> u32 {
    if let Some(&c) = index.get(s) {
        return c;
    }
    dict.push(s.to_owned());
    let c = (dict.len() - 1) as u32;
    index.insert(s.to_owned(), c);
    c
}

impl Column {
    /// A string column, dictionary-encoded in order of first appearance.
    pub fn strings<S: AsRef<str>>(values: &[S]) -> Column {
        let (mut dict, mut index) = (Vec::new(), HashMap::new());
        let codes = values
            .iter()
            .map(|s| encode_str(&mut dict, &mut index, s.as_ref()))
            .collect();
        Column::Str { codes, dict }
    }

    /// A tag-set column; a row's repeated tags count once.
    pub fn tags<S: AsRef<str>>(rows: &[Vec<S>]) -> Column {
        let (mut dict, mut index) = (Vec::new(), HashMap::new());
        let (mut offsets, mut values) = (vec![0u32], Vec::new());
        for r in rows {
            let mut codes: Vec<u32> = r
                .iter()
                .map(|s| encode_str(&mut dict, &mut index, s.as_ref()))
                .collect();
            codes.sort_unstable();
            codes.dedup();
            values.extend(codes);
            offsets.push(values.len() as u32);
        }
        Column::Tags {
            offsets,
            values,
            dict,
        }
    }

    /// `rows` rows of `value`.
    pub fn filled(value: &Value, rows: usize) -> Column {
        let mut b = ColumnBuilder::new(value.column_type());
        for _ in 0..rows {
            b.push_value(value);
        }
        b.finish()
    }

    /// The column as a borrowed view.
    pub fn view(&self) -> ColumnData<'_> {
        match self {
            Column::Int(v) => ColumnData::Int(v),
            Column::Float(v) => ColumnData::Float(v),
            Column::Timestamp(v) => ColumnData::Timestamp(v),
            Column::Bool(v) => ColumnData::Bool(v),
            Column::Str { codes, dict } => ColumnData::Str { codes, dict },
            Column::Tags {
                offsets,
                values,
                dict,
            } => ColumnData::Tags {
                offsets,
                values,
                dict,
            },
        }
    }
}

/// Builds one column row by row, re-coding strings and tags into one dictionary (sealing and
/// compaction gather rows of several blocks, each with its own dictionary).
#[derive(Debug)]
pub struct ColumnBuilder<'a> {
    col: Column,
    index: HashMap<String, u32>,
    /// Per source dictionary seen (by its address and length): its codes in this column's
    /// dictionary, so a string is hashed once per source, not once per row. The sources
    /// outlive the builder (`'a`), so an address is never reused for another dictionary.
    recode: HashMap<(usize, usize), Vec<u32>>,
    _sources: std::marker::PhantomData<&'a [String]>,
}

impl<'a> ColumnBuilder<'a> {
    /// An empty column of type `t`.
    pub fn new(t: ColumnType) -> ColumnBuilder<'a> {
        let col = match t {
            ColumnType::Int => Column::Int(Vec::new()),
            ColumnType::Float => Column::Float(Vec::new()),
            ColumnType::Timestamp => Column::Timestamp(Vec::new()),
            ColumnType::Bool => Column::Bool(Vec::new()),
            ColumnType::Str => Column::Str {
                codes: Vec::new(),
                dict: Vec::new(),
            },
            ColumnType::Tags => Column::Tags {
                offsets: vec![0],
                values: Vec::new(),
                dict: Vec::new(),
            },
        };
        ColumnBuilder {
            col,
            index: HashMap::new(),
            recode: HashMap::new(),
            _sources: std::marker::PhantomData,
        }
    }

    /// Appends `v` (of the column's type; another type appends the type's zero, which callers
    /// rule out by checking types first).
    pub fn push_value(&mut self, v: &Value) {
        match (&mut self.col, v) {
            (Column::Int(c), Value::Int(x)) | (Column::Timestamp(c), Value::Timestamp(x)) => {
                c.push(*x)
            }
            (Column::Float(c), Value::Float(x)) => c.push(*x),
            (Column::Bool(c), Value::Bool(x)) => c.push(*x),
            (Column::Str { codes, dict }, Value::Str(s)) => {
                let code = encode_str(dict, &mut self.index, s);
                codes.push(code)
            }
            (
                Column::Tags {
                    offsets,
                    values,
                    dict,
                },
                Value::Tags(t),
            ) => {
                let mut codes: Vec<u32> = t
                    .iter()
                    .map(|s| encode_str(dict, &mut self.index, s))
                    .collect();
                codes.sort_unstable();
                codes.dedup();
                values.extend(codes);
                offsets.push(values.len() as u32);
            }
            (c, _) => {
                let zero = Value::zero(c.view().column_type());
                self.push_value(&zero)
            }
        }
    }

    /// Appends rows `rows` of `src` (of the column's type, checked by the caller;
    /// [`ColumnData::check`]ed). Strings and tags are re-coded into this column's dictionary
    /// once per source dictionary.
    pub fn push_rows(&mut self, src: ColumnData<'a>, rows: std::ops::Range<usize>) {
        let ColumnBuilder {
            col, index, recode, ..
        } = self;
        let key = |d: &[String]| (d.as_ptr() as usize, d.len());
        match (src, col) {
            (ColumnData::Int(s), Column::Int(c))
            | (ColumnData::Timestamp(s), Column::Timestamp(c)) => c.extend_from_slice(&s[rows]),
            (ColumnData::Float(s), Column::Float(c)) => c.extend_from_slice(&s[rows]),
            (ColumnData::Bool(s), Column::Bool(c)) => c.extend_from_slice(&s[rows]),
            (
                ColumnData::Str { codes, dict },
                Column::Str {
                    codes: out,
                    dict: out_dict,
                },
            ) => {
                let map = recode
                    .entry(key(dict))
                    .or_insert_with(|| dict_codes(out_dict, index, dict));
                out.extend(codes[rows].iter().map(|&c| map[c as usize]));
            }
            (
                ColumnData::Tags {
                    offsets,
                    values,
                    dict,
                },
                Column::Tags {
                    offsets: out_off,
                    values: out_val,
                    dict: out_dict,
                },
            ) => {
                let map = recode
                    .entry(key(dict))
                    .or_insert_with(|| dict_codes(out_dict, index, dict));
                for r in rows {
                    let (a, b) = (offsets[r] as usize, offsets[r + 1] as usize);
                    let start = out_val.len();
                    out_val.extend(values[a..b].iter().map(|&c| map[c as usize]));
                    out_val[start..].sort_unstable();
                    out_off.push(out_val.len() as u32);
                }
            }
            (s, c) => {
                // A type mismatch the caller should have refused: keep the row count right.
                debug_assert!(false, "push_rows of a {} column", s.column_type().name());
                let zero = Value::zero(c.view().column_type());
                for _ in rows {
                    self.push_value(&zero);
                }
            }
        }
    }

    /// The column built.
    pub fn finish(self) -> Column {
        self.col
    }
}

/// The codes, in `dict` (grown as needed), of the strings of `src`.
fn dict_codes(
    dict: &mut Vec<String>,
    index: &mut HashMap<String, u32>,
    src: &[String],
) -> Vec<u32> {
    src.iter().map(|s| encode_str(dict, index, s)).collect()
}

/// Attribute columns in memory, one value per row each, with their schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Attributes {
    schema: Schema,
    columns: Vec<Column>,
    rows: usize,
}

impl Attributes {
    /// Named columns of `rows` rows each; the schema follows their order and types. Refused
    /// (naming the column) when a name is not a column name, a column holds another number of
    /// rows, or a dictionary code lies outside its dictionary.
    pub fn new(
        rows: usize,
        columns: Vec<(String, Column)>,
    ) -> std::result::Result<Attributes, AttributeError> {
        let schema = Schema::new(
            columns
                .iter()
                .map(|(n, c)| (n.clone(), c.view().column_type()))
                .collect(),
        )?;
        for (name, c) in &columns {
            let v = c.view();
            if v.rows() != rows {
                return Err(AttributeError::column(
                    name,
                    format!("{} values for {rows} rows", v.rows()),
                ));
            }
            if let Err(detail) = v.check() {
                return Err(AttributeError::column(name, detail));
            }
            if let Column::Tags { .. } = c
                && let Err((row, detail)) = check_distinct_tags(v)
            {
                return Err(AttributeError::row(name, row as u64, detail));
            }
        }
        Ok(Attributes {
            schema,
            columns: columns.into_iter().map(|(_, c)| c).collect(),
            rows,
        })
    }

    /// Rows with no column (for an index without attributes).
    pub fn empty(rows: usize) -> Attributes {
        Attributes {
            schema: Schema::default(),
            columns: Vec::new(),
            rows,
        }
    }

    /// The schema (names and types, in order).
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Rows per column.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Column `i` of the schema.
    pub fn column(&self, i: usize) -> Option<ColumnData<'_>> {
        self.columns.get(i).map(Column::view)
    }

    /// Column `name`.
    pub fn column_named(&self, name: &str) -> Option<ColumnData<'_>> {
        self.schema.find(name).and_then(|(i, _)| self.column(i))
    }

    /// These rows as columns of `schema`, in its order: a column the rows lack takes its
    /// default (a column added later, or left out of a write); a column `schema` lacks, or
    /// one of another type, is refused naming it.
    pub fn conform(&self, schema: &Schema) -> std::result::Result<Attributes, AttributeError> {
        for (name, t) in self.schema.columns() {
            match schema.find(name) {
                None => {
                    return Err(AttributeError::column(
                        name,
                        format!(
                            "the index has no such column (columns: {})",
                            if schema.is_empty() {
                                "none".to_owned()
                            } else {
                                schema
                                    .columns()
                                    .iter()
                                    .map(|(n, t)| format!("{n}:{}", t.name()))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            }
                        ),
                    ));
                }
                Some((_, want)) if want != *t => {
                    return Err(AttributeError::column(
                        name,
                        format!("{} values for a {} column", t.name(), want.name()),
                    ));
                }
                Some(_) => {}
            }
        }
        if self.schema == *schema {
            return Ok(self.clone());
        }
        let columns = schema
            .columns()
            .iter()
            .enumerate()
            .map(|(i, (name, _))| match self.schema.find(name) {
                Some((j, _)) => self.columns[j].clone(),
                None => Column::filled(&schema.defaults[i], self.rows),
            })
            .collect();
        Ok(Attributes {
            schema: schema.clone(),
            columns,
            rows: self.rows,
        })
    }

    /// Rows `rows` (any order, repeats allowed) of these columns, in that order.
    pub fn take(&self, rows: &[usize]) -> Attributes {
        let columns = self
            .columns
            .iter()
            .map(|c| {
                let mut b = ColumnBuilder::new(c.view().column_type());
                for &r in rows {
                    b.push_rows(c.view(), r..r + 1);
                }
                b.finish()
            })
            .collect();
        Attributes {
            schema: self.schema.clone(),
            columns,
            rows: rows.len(),
        }
    }
}

/// Whether every row's tag codes increase strictly (how writers store them, which proves them
/// distinct), decided without a branch per row: a 64-position word of descents
/// (`values[j-1] >= values[j]`) must hold none outside the positions where a row starts. A
/// row at a time, the unpredictable row lengths cost 30 ns a row; this is two linear passes.
/// `false` sends the caller to the row-by-row check, which finds the row at fault (or
/// accepts rows stored out of order but distinct).
fn rows_ascend(offsets: &[u32], values: &[u32]) -> bool {
    let n = values.len();
    let mut start = vec![0u64; n.div_ceil(64)];
    for &o in offsets {
        if let Some(w) = start.get_mut(o as usize / 64) {
            *w |= 1 << (o % 64);
        }
    }
    let mut stray = 0u64;
    for (w, &starts) in start.iter().enumerate() {
        let base = w * 64;
        let mut descents = 0u64;
        for j in base.max(1)..(base + 64).min(n) {
            descents |= u64::from(values[j - 1] >= values[j]) << (j - base);
        }
        stray |= descents & !starts;
    }
    stray == 0
}

/// Row and reason of the first row of a tags column that lists a tag twice.
fn check_distinct_tags(v: ColumnData<'_>) -> std::result::Result<(), (usize, String)> {
    if let ColumnData::Tags {
        offsets, values, ..
    } = v
    {
        if rows_ascend(offsets, values) {
            return Ok(());
        }
        let mut sorted = Vec::new();
        for r in 0..v.rows() {
            let s = &values[offsets[r] as usize..offsets[r + 1] as usize];
            // Writers store a row's tag codes in increasing order, which proves them distinct
            // in one pass; otherwise rows hold a few tags: compare pairwise, sort a copy of
            // long ones.
            let twice = if s.windows(2).all(|w| w[0] < w[1]) {
                None
            } else if s.len() <= 16 {
                (1..s.len()).find_map(|i| s[..i].contains(&s[i]).then_some(s[i]))
            } else {
                sorted.clear();
                sorted.extend_from_slice(s);
                sorted.sort_unstable();
                sorted.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
            };
            if let Some(c) = twice {
                return Err((r, format!("tag code {c} listed twice")));
            }
        }
    }
    Ok(())
}

/// Builds [`Attributes`] of a schema row run by row run, from blocks conformed to it: what
/// sealing and compaction use to write the columns of a new segment in its row order.
#[derive(Debug)]
pub struct AttributesBuilder<'a> {
    schema: Schema,
    columns: Vec<ColumnBuilder<'a>>,
    rows: usize,
}

impl<'a> AttributesBuilder<'a> {
    /// An empty set of `schema`'s columns.
    pub fn new(schema: &Schema) -> AttributesBuilder<'a> {
        AttributesBuilder {
            schema: schema.clone(),
            columns: schema
                .columns()
                .iter()
                .map(|(_, t)| ColumnBuilder::new(*t))
                .collect(),
            rows: 0,
        }
    }

    /// Appends rows `rows` of `src`, whose schema has the builder's columns.
    pub fn push(&mut self, src: &'a Attributes, rows: std::ops::Range<usize>) {
        debug_assert!(src.schema.same_columns(&self.schema));
        self.rows += rows.len();
        for (b, c) in self.columns.iter_mut().zip(&src.columns) {
            b.push_rows(c.view(), rows.clone());
        }
    }

    /// The columns built.
    pub fn finish(self) -> Attributes {
        Attributes {
            schema: self.schema,
            columns: self
                .columns
                .into_iter()
                .map(ColumnBuilder::finish)
                .collect(),
            rows: self.rows,
        }
    }
}

// ---- bytes (FORMAT.md §3.7) ----

fn u32s(w: &mut LeWriter, v: &[u32]) {
    for x in v {
        w.u32(*x);
    }
}

/// Writes a dictionary: `count u32 | zero u32 | bytes u64 | offsets (count+1) × u32 | bytes |
/// pad to 8`.
fn put_dict(w: &mut LeWriter, dict: &[String]) -> std::result::Result<(), String> {
    let total: usize = dict.iter().map(String::len).sum();
    if dict.len() >= u32::MAX as usize || total > u32::MAX as usize {
        return Err(format!(
            "a dictionary of {} strings and {total} bytes (at most 2^32 - 1 of each)",
            dict.len()
        ));
    }
    w.u32(dict.len() as u32).u32(0).u64(total as u64);
    let mut off = 0u32;
    w.u32(0);
    for s in dict {
        off += s.len() as u32;
        w.u32(off);
    }
    for s in dict {
        w.bytes(s.as_bytes());
    }
    w.align8();
    Ok(())
}

/// The body of one column (FORMAT.md §3.7), a multiple of 8 bytes.
fn encode_body(c: ColumnData<'_>) -> std::result::Result<Vec<u8>, String> {
    let mut w = LeWriter::new();
    match c {
        ColumnData::Int(v) | ColumnData::Timestamp(v) => {
            for x in v {
                w.bytes(&x.to_le_bytes());
            }
        }
        ColumnData::Float(v) => {
            for x in v {
                w.bytes(&x.to_le_bytes());
            }
        }
        ColumnData::Bool(v) => {
            let mut words = vec![0u64; v.len().div_ceil(64)];
            for (i, &b) in v.iter().enumerate() {
                if b {
                    words[i / 64] |= 1 << (i % 64);
                }
            }
            for x in words {
                w.u64(x);
            }
        }
        ColumnData::Str { codes, dict } => {
            put_dict(&mut w, dict)?;
            u32s(&mut w, codes);
            w.align8();
        }
        ColumnData::Tags {
            offsets,
            values,
            dict,
        } => {
            put_dict(&mut w, dict)?;
            w.u64(values.len() as u64);
            u32s(&mut w, offsets);
            w.align8();
            u32s(&mut w, values);
            w.align8();
        }
    }
    Ok(w.into_inner())
}

/// The bytes of `attrs` (FORMAT.md §3.7): `rows u64 | column count u32 | zero u32`, then per
/// column `type u8 | zero[3] | name length u32 | body length u64 | name, zero-padded to 8 |
/// body`. The same bytes are a segment's `attributes` section and an append-log record's
/// attribute block. `Err` (a column's dictionary or tag values past u32) names the column.
pub fn encode(attrs: &Attributes) -> std::result::Result<Vec<u8>, AttributeError> {
    let mut w = LeWriter::new();
    w.u64(attrs.rows as u64)
        .u32(attrs.columns.len() as u32)
        .u32(0);
    for ((name, t), c) in attrs.schema.columns().iter().zip(&attrs.columns) {
        if let ColumnData::Tags { values, .. } = c.view()
            && values.len() > u32::MAX as usize
        {
            return Err(AttributeError::column(
                name,
                "more than 2^32 - 1 tags in one block",
            ));
        }
        let body = encode_body(c.view()).map_err(|d| AttributeError::column(name, d))?;
        w.u8(t.code())
            .zeros(3)
            .u32(name.len() as u32)
            .u64(body.len() as u64)
            .bytes(name.as_bytes())
            .align8()
            .bytes(&body);
    }
    Ok(w.into_inner())
}

fn read_u32s(r: &mut LeReader<'_>, n: usize) -> Result<Vec<u32>> {
    let b = r.take(
        n.checked_mul(4)
            .ok_or_else(|| r.corrupt("size overflows"))?,
    )?;
    Ok(b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn read_dict(r: &mut LeReader<'_>, path: &Path, section: &str) -> Result<Vec<String>> {
    let count = r.u32()? as usize;
    r.zeros(4, "dictionary reserved")?;
    let total = to_usize(r.u64()?, path, section, "dictionary bytes")?;
    if count == u32::MAX as usize {
        return Err(r.corrupt("dictionary count 2^32 - 1"));
    }
    let offsets = read_u32s(r, count + 1)?;
    let bytes = r.take(total)?;
    r.align8()?;
    if offsets[0] != 0
        || offsets.windows(2).any(|w| w[0] > w[1])
        || offsets[count] as usize != total
    {
        return Err(r.corrupt("dictionary offsets do not tile its bytes"));
    }
    let mut dict = Vec::with_capacity(count);
    for (i, w) in offsets.windows(2).enumerate() {
        let s = std::str::from_utf8(&bytes[w[0] as usize..w[1] as usize])
            .map_err(|_| r.corrupt(format!("dictionary string {i} is not UTF-8")))?;
        dict.push(s.to_owned());
    }
    Ok(dict)
}

fn decode_body(
    t: ColumnType,
    body: &[u8],
    rows: usize,
    path: &Path,
    section: &str,
) -> Result<Column> {
    let mut r = LeReader::new(body, path, section);
    let words8 = |r: &mut LeReader<'_>, n: usize| -> Result<Vec<[u8; 8]>> {
        let b = r.take(
            n.checked_mul(8)
                .ok_or_else(|| r.corrupt("size overflows"))?,
        )?;
        Ok(b.chunks_exact(8)
            .map(|c| c.try_into().unwrap_or([0; 8]))
            .collect())
    };
    let col = match t {
        ColumnType::Int => Column::Int(
            words8(&mut r, rows)?
                .into_iter()
                .map(i64::from_le_bytes)
                .collect(),
        ),
        ColumnType::Timestamp => Column::Timestamp(
            words8(&mut r, rows)?
                .into_iter()
                .map(i64::from_le_bytes)
                .collect(),
        ),
        ColumnType::Float => Column::Float(
            words8(&mut r, rows)?
                .into_iter()
                .map(f64::from_le_bytes)
                .collect(),
        ),
        ColumnType::Bool => {
            let words: Vec<u64> = words8(&mut r, rows.div_ceil(64))?
                .into_iter()
                .map(u64::from_le_bytes)
                .collect();
            if !rows.is_multiple_of(64) && words.last().is_some_and(|w| w >> (rows % 64) != 0) {
                return Err(r.corrupt("bool bits past the last row are set"));
            }
            Column::Bool(
                (0..rows)
                    .map(|i| (words[i / 64] >> (i % 64)) & 1 == 1)
                    .collect(),
            )
        }
        ColumnType::Str => {
            let dict = read_dict(&mut r, path, section)?;
            let codes = read_u32s(&mut r, rows)?;
            r.align8()?;
            Column::Str { codes, dict }
        }
        ColumnType::Tags => {
            let dict = read_dict(&mut r, path, section)?;
            let n = to_usize(r.u64()?, path, section, "tag values")?;
            if n > u32::MAX as usize {
                return Err(r.corrupt(format!("{n} tag values (at most 2^32 - 1)")));
            }
            let n_off = rows
                .checked_add(1)
                .ok_or_else(|| r.corrupt("rows overflow"))?;
            let offsets = read_u32s(&mut r, n_off)?;
            r.align8()?;
            let values = read_u32s(&mut r, n)?;
            r.align8()?;
            Column::Tags {
                offsets,
                values,
                dict,
            }
        }
    };
    r.finish()?;
    let v = col.view();
    if let Err(detail) = v.check() {
        return Err(r.corrupt(detail));
    }
    if let Err((row, detail)) = check_distinct_tags(v) {
        return Err(r.corrupt(format!("row {row}: {detail}")));
    }
    Ok(col)
}

/// Parses and checks the bytes [`encode`] writes; errors name `path` and `section`. `rows`:
/// the rows the bytes must hold (the segment's or the record's).
pub fn decode(bytes: &[u8], rows: u64, path: &Path, section: &str) -> Result<Attributes> {
    let mut r = LeReader::new(bytes, path, section);
    let n = r.u64()?;
    if n != rows {
        return Err(r.corrupt(format!("{n} rows, the block holds {rows}")));
    }
    let rows = to_usize(n, path, section, "rows")?;
    let count = r.u32()? as usize;
    r.zeros(4, "reserved")?;
    if count > MAX_COLUMNS {
        return Err(r.corrupt(format!("{count} columns (at most {MAX_COLUMNS})")));
    }
    let mut cols = Vec::with_capacity(count);
    let mut names = Vec::with_capacity(count);
    for _ in 0..count {
        let code = r.u8()?;
        r.zeros(3, "column reserved")?;
        let name_len = r.u32()? as usize;
        let body_len = to_usize(r.u64()?, path, section, "column body")?;
        let t = ColumnType::from_code(code)
            .ok_or_else(|| r.corrupt(format!("unknown column type {code}")))?;
        let name = std::str::from_utf8(r.take(name_len)?)
            .map_err(|_| r.corrupt("a column name is not UTF-8"))?
            .to_owned();
        r.align8()?;
        if let Err(why) = check_name(&name) {
            return Err(r.corrupt(format!("column name {name:?}: {why}")));
        }
        if names.contains(&name) {
            return Err(r.corrupt(format!("column {name} appears twice")));
        }
        let body = r.take(body_len)?;
        let col = decode_body(t, body, rows, path, &format!("{section} column {name}"))?;
        names.push(name.clone());
        cols.push((name, col));
    }
    r.finish()?;
    Attributes::new(rows, cols).map_err(|e| corrupt_attributes(&r, &e))
}

/// The bytes of a schema (FORMAT.md §7.4): `column count u32 | zero u32`, then per column
/// `type u8 | zero[3] | name length u32 | default length u64 | name, padded to 8 | default`,
/// the default being the one-row body of the column's type (§3.7).
pub fn encode_schema(schema: &Schema) -> std::result::Result<Vec<u8>, AttributeError> {
    let mut w = LeWriter::new();
    w.u32(schema.len() as u32).u32(0);
    for (i, (name, t)) in schema.columns().iter().enumerate() {
        let d = Column::filled(&schema.defaults[i], 1);
        let body = encode_body(d.view()).map_err(|e| AttributeError::column(name, e))?;
        w.u8(t.code())
            .zeros(3)
            .u32(name.len() as u32)
            .u64(body.len() as u64)
            .bytes(name.as_bytes())
            .align8()
            .bytes(&body);
    }
    Ok(w.into_inner())
}

/// Parses and checks the bytes [`encode_schema`] writes.
pub fn decode_schema(bytes: &[u8], path: &Path, section: &str) -> Result<Schema> {
    let mut r = LeReader::new(bytes, path, section);
    let count = r.u32()? as usize;
    r.zeros(4, "reserved")?;
    if count > MAX_COLUMNS {
        return Err(r.corrupt(format!("{count} columns (at most {MAX_COLUMNS})")));
    }
    let mut cols = Vec::with_capacity(count);
    let mut defaults = Vec::with_capacity(count);
    for _ in 0..count {
        let code = r.u8()?;
        r.zeros(3, "column reserved")?;
        let name_len = r.u32()? as usize;
        let body_len = to_usize(r.u64()?, path, section, "default")?;
        let t = ColumnType::from_code(code)
            .ok_or_else(|| r.corrupt(format!("unknown column type {code}")))?;
        let name = std::str::from_utf8(r.take(name_len)?)
            .map_err(|_| r.corrupt("a column name is not UTF-8"))?
            .to_owned();
        r.align8()?;
        let body = r.take(body_len)?;
        let d = decode_body(t, body, 1, path, &format!("{section} column {name}"))?;
        defaults.push(
            d.view()
                .value(0)
                .ok_or_else(|| r.corrupt("empty default"))?,
        );
        cols.push((name, t));
    }
    r.finish()?;
    let mut s = Schema::new(cols).map_err(|e| corrupt_attributes(&r, &e))?;
    s.defaults = defaults;
    Ok(s)
}

/// The [`FormatError::Corrupt`] of stored columns that fail [`Attributes::new`]'s checks.
fn corrupt_attributes(r: &LeReader<'_>, e: &AttributeError) -> FormatError {
    r.corrupt(match e.row {
        Some(row) => format!("column {}, row {row}: {}", e.column, e.detail),
        None => format!("column {}: {}", e.column, e.detail),
    })
}

/// `FormatError::InvalidArgument` for attributes a writer was handed.
pub(crate) fn invalid(path: &Path, e: AttributeError) -> FormatError {
    FormatError::InvalidArgument {
        path: path.to_path_buf(),
        argument: format!("attributes column {}", e.column),
        detail: match e.row {
            Some(r) => format!("row {r}: {}", e.detail),
            None => e.detail,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time test agrees with a row-by-row one on columns with empty rows,
    /// ascending rows, repeats and descents (seeded).
    #[test]
    fn ascending_rows_are_found_word_by_word() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for case in 0..400 {
            let rows = next(300) as usize;
            let mut offsets = vec![0u32];
            let mut values = Vec::new();
            for _ in 0..rows {
                let n = next(4);
                let mut row: Vec<u32> = (0..n).map(|_| next(50) as u32).collect();
                if next(40) != 0 {
                    row.sort_unstable();
                    row.dedup();
                }
                values.extend(row);
                offsets.push(values.len() as u32);
            }
            let naive = (0..rows).all(|r| {
                values[offsets[r] as usize..offsets[r + 1] as usize]
                    .windows(2)
                    .all(|w| w[0] < w[1])
            });
            assert_eq!(rows_ascend(&offsets, &values), naive, "case {case}");
        }
    }

    fn sample() -> Attributes {
        Attributes::new(
            4,
            vec![
                ("year".into(), Column::Int(vec![2009, -1, i64::MAX, 0])),
                (
                    "score".into(),
                    Column::Float(vec![0.5, f64::NAN, -0.0, 1e300]),
                ),
                ("taken".into(), Column::Timestamp(vec![0, 1, -5, i64::MIN])),
                ("public".into(), Column::Bool(vec![true, false, true, true])),
                (
                    "licence".into(),
                    Column::strings(&["cc0", "café", "", "cc0"]),
                ),
                (
                    "tags".into(),
                    Column::tags(&[vec!["cat", "dog"], vec![], vec!["dog"], vec!["é", "cat"]]),
                ),
            ],
        )
        .unwrap()
    }

    fn same(a: &Attributes, b: &Attributes) {
        assert_eq!(a.rows(), b.rows());
        assert!(a.schema().same_columns(b.schema()));
        for i in 0..a.schema().len() {
            for r in 0..a.rows() {
                assert_eq!(a.column(i).unwrap().value(r), b.column(i).unwrap().value(r));
            }
        }
    }

    #[test]
    fn bytes_round_trip_every_type() {
        let a = sample();
        let bytes = encode(&a).unwrap();
        assert_eq!(bytes.len() % 8, 0);
        let p = Path::new("x");
        same(&a, &decode(&bytes, 4, p, "attributes").unwrap());
        assert!(decode(&bytes, 5, p, "attributes").is_err());
        // Every truncation and every single-bit flip of a length or code is refused or reads
        // as values that pass the checks; none panics.
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], 4, p, "attributes").is_err(),
                "cut {cut}"
            );
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                let _ = decode(&b, 4, p, "attributes");
            }
        }
        let empty = Attributes::empty(3);
        same(
            &empty,
            &decode(&encode(&empty).unwrap(), 3, p, "a").unwrap(),
        );
    }

    #[test]
    fn schemas_round_trip_with_defaults() {
        let s = Schema::parse(
            "year:int, score:float,taken:timestamp,public:bool,licence:string,tags:tags",
        )
        .unwrap()
        .with_default("licence", Value::Str("unknown".into()))
        .unwrap()
        .with_default("tags", Value::Tags(vec!["a".into(), "b".into()]))
        .unwrap()
        .with_default("score", Value::Float(f64::NAN))
        .unwrap();
        let p = Path::new("m");
        let back = decode_schema(&encode_schema(&s).unwrap(), p, "attribute_schema").unwrap();
        assert_eq!(back, s);
        assert!(Schema::parse("year").is_err());
        assert!(Schema::parse("year:integer").is_err());
        assert!(Schema::parse("id:int").is_err());
        assert!(
            s.clone()
                .with_default("year", Value::Str("x".into()))
                .is_err()
        );
        assert!(
            s.with_column("year", ColumnType::Int, Value::Int(1))
                .is_err()
        );
    }

    #[test]
    fn conform_fills_defaults_and_refuses_strangers() {
        let s = Schema::parse("year:int,licence:string")
            .unwrap()
            .with_default("licence", Value::Str("none".into()))
            .unwrap();
        let a = Attributes::new(2, vec![("year".into(), Column::Int(vec![1, 2]))]).unwrap();
        let c = a.conform(&s).unwrap();
        assert_eq!(
            c.column(1).unwrap().value(1),
            Some(Value::Str("none".into()))
        );
        let bad = Attributes::new(2, vec![("yaer".into(), Column::Int(vec![1, 2]))]).unwrap();
        assert_eq!(bad.conform(&s).unwrap_err().column, "yaer");
        let wrong =
            Attributes::new(2, vec![("year".into(), Column::Float(vec![1.0, 2.0]))]).unwrap();
        assert!(
            wrong
                .conform(&s)
                .unwrap_err()
                .detail
                .contains("float values for a int")
        );
    }

    #[test]
    fn builder_recodes_dictionaries() {
        let a = sample();
        let b = Attributes::new(
            2,
            vec![
                ("year".into(), Column::Int(vec![7, 8])),
                ("score".into(), Column::Float(vec![1.0, 2.0])),
                ("taken".into(), Column::Timestamp(vec![3, 4])),
                ("public".into(), Column::Bool(vec![false, true])),
                ("licence".into(), Column::strings(&["new", "cc0"])),
                ("tags".into(), Column::tags(&[vec!["bird"], vec!["cat"]])),
            ],
        )
        .unwrap();
        let mut m = AttributesBuilder::new(a.schema());
        m.push(&b, 1..2);
        m.push(&a, 0..4);
        m.push(&b, 0..1);
        let out = m.finish();
        let want = [(&b, 1), (&a, 0), (&a, 1), (&a, 2), (&a, 3), (&b, 0)];
        for (i, (src, r)) in want.iter().enumerate() {
            for c in 0..6 {
                assert_eq!(
                    out.column(c).unwrap().value(i),
                    src.column(c).unwrap().value(*r)
                );
            }
        }
        let t = a.take(&[3, 0, 3]);
        assert_eq!(
            t.column(4).unwrap().value(1),
            Some(Value::Str("cc0".into()))
        );
        assert_eq!(t.rows(), 3);
    }

    #[test]
    fn ragged_and_bad_codes_are_refused() {
        assert!(Attributes::new(3, vec![("a".into(), Column::Int(vec![1, 2]))]).is_err());
        let bad = Column::Str {
            codes: vec![0, 5],
            dict: vec!["x".into()],
        };
        assert!(Attributes::new(2, vec![("a".into(), bad)]).is_err());
        let dup = Column::Tags {
            offsets: vec![0, 2],
            values: vec![0, 0],
            dict: vec!["x".into()],
        };
        let e = Attributes::new(1, vec![("t".into(), dup)]).unwrap_err();
        assert_eq!((e.column.as_str(), e.row), ("t", Some(0)));
    }
}
