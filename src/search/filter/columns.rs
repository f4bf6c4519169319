//! Attribute values as a filter reads them: borrowed column views ([`ColumnData`]) and a set of
//! owned columns in memory ([`Attributes`]), each checked to hold one value per row.

use std::collections::HashMap;

use super::schema::{ColumnType, Schema};
use crate::search::error::{SearchError, invalid};

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

    /// Whether every code and offset lies inside its dictionary and values: what a reader checks
    /// before a filter reads the column (a filter never indexes out of bounds on bad bytes).
    pub fn check(&self) -> Result<(), String> {
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
                if offsets.windows(2).any(|w| w[0] > w[1]) {
                    return Err("tag offsets decrease".into());
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

/// One owned column (see [`ColumnData`]).
#[derive(Debug, Clone, PartialEq)]
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

/// Codes of `s` in `dict`, growing it (first appearance order).
fn encode<'s>(dict: &mut Vec<String>, index: &mut HashMap<&'s str, u32>, s: &'s str) -> u32 {
    *index.entry(s).or_insert_with(|| {
        dict.push(s.to_owned());
        (dict.len() - 1) as u32
    })
}

impl Column {
    /// A string column, dictionary-encoded in order of first appearance.
    pub fn strings<S: AsRef<str>>(values: &[S]) -> Column {
        let (mut dict, mut index) = (Vec::new(), HashMap::new());
        let codes = values
            .iter()
            .map(|s| encode(&mut dict, &mut index, s.as_ref()))
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
                .map(|s| encode(&mut dict, &mut index, s.as_ref()))
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
    pub fn new(rows: usize, columns: Vec<(String, Column)>) -> Result<Attributes, SearchError> {
        let schema = Schema::new(
            columns
                .iter()
                .map(|(n, c)| (n.clone(), c.view().column_type()))
                .collect(),
        )?;
        for (name, c) in &columns {
            let v = c.view();
            if v.rows() != rows {
                return Err(invalid(
                    &format!("attributes column {name}"),
                    format!("{} values for {rows} rows", v.rows()),
                ));
            }
            if let Err(detail) = v.check() {
                return Err(invalid(&format!("attributes column {name}"), detail));
            }
        }
        Ok(Attributes {
            schema,
            columns: columns.into_iter().map(|(_, c)| c).collect(),
            rows,
        })
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
}
