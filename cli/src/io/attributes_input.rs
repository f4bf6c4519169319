//! `--attributes FILE` of `build` and `add` in every format it takes: the format is chosen by
//! the file's extension (or `--attributes-format`), the file is read into typed columns with
//! nulls kept ([`RawColumn`]), and the columns are fitted to the index's schema (or a schema is
//! inferred from them) — one path for every format, so a value means the same thing whatever
//! file it came in. The readers are `attributes.rs` (JSON lines), `attributes_arrow.rs`
//! (Parquet, Arrow IPC) and `attributes_npy.rs` (a directory of `.npy` files).
//!
//! A null (or, in JSON lines, an absent value) takes the column's default, as an added row
//! that leaves a column out does. Every failure is an [`AttributesInputError`] naming the file,
//! the column and, where one is at fault, the row (counted from 0), before anything is written.

use std::path::Path;

use codedb::{Attributes, ColumnBuilder, Schema, Value};

use super::attributes_raw::{AttributesInputError, RawColumn, Source};

/// The formats `--attributes` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttributesFormat {
    /// One JSON object per row (`.jsonl`, `.ndjson`, `.json`, and any unknown extension).
    JsonLines,
    /// Apache Parquet (`.parquet`, `.pq`).
    Parquet,
    /// Arrow IPC, file or stream (`.arrow`, `.feather`, `.ipc`, `.arrows`).
    Arrow,
    /// A directory of `.npy` files, one per column, named after it (`year.npy`).
    NpyDir,
}

impl AttributesFormat {
    /// The names `--attributes-format` takes.
    pub const NAMES: [&'static str; 4] = ["jsonl", "parquet", "arrow", "npy"];

    /// The format named `name` (one of [`AttributesFormat::NAMES`]).
    pub fn parse(name: &str) -> Option<AttributesFormat> {
        Some(match name {
            "jsonl" => AttributesFormat::JsonLines,
            "parquet" => AttributesFormat::Parquet,
            "arrow" => AttributesFormat::Arrow,
            "npy" => AttributesFormat::NpyDir,
            _ => return None,
        })
    }

    /// The format of `path` by its extension: a directory is `.npy` columns, an unknown
    /// extension JSON lines.
    pub fn detect(path: &Path) -> AttributesFormat {
        if path.is_dir() {
            return AttributesFormat::NpyDir;
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("parquet" | "pq") => AttributesFormat::Parquet,
            Some("arrow" | "feather" | "ipc" | "arrows") => AttributesFormat::Arrow,
            _ => AttributesFormat::JsonLines,
        }
    }

    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            AttributesFormat::JsonLines => "JSON lines",
            AttributesFormat::Parquet => "Parquet",
            AttributesFormat::Arrow => "Arrow IPC",
            AttributesFormat::NpyDir => ".npy directory",
        }
    }
}

/// The columns of `path` (in `format`) for `rows` rows: those of `schema` the file names
/// (typed by it), or, without a schema, every column the file holds, typed by the file (the
/// inferred schema is returned).
pub fn read_attributes(
    flag: &str,
    path: &Path,
    format: Option<AttributesFormat>,
    rows: usize,
    schema: Option<&Schema>,
) -> anyhow::Result<(Attributes, Schema)> {
    let src = Source { flag, path };
    let columns = match format.unwrap_or_else(|| AttributesFormat::detect(path)) {
        AttributesFormat::JsonLines => {
            return super::attributes::read_jsonl(flag, path, rows, schema);
        }
        AttributesFormat::Parquet => super::attributes_arrow::read_parquet(src, rows)?,
        AttributesFormat::Arrow => super::attributes_arrow::read_ipc(src, rows)?,
        AttributesFormat::NpyDir => super::attributes_npy::read_npy_dir(src, rows)?,
    };
    Ok(fit(src, columns, rows, schema)?)
}

/// `columns` (each of `rows` rows) as the engine's attributes under `schema`, or under the
/// schema the columns' own types make.
pub fn fit(
    src: Source<'_>,
    columns: Vec<(String, RawColumn)>,
    rows: usize,
    schema: Option<&Schema>,
) -> Result<(Attributes, Schema), AttributesInputError> {
    let schema = match schema {
        Some(s) => s.clone(),
        None => Schema::new(
            columns
                .iter()
                .map(|(n, c)| (n.clone(), c.natural_type()))
                .collect(),
        )
        .map_err(|e| src.column(&e.column, e.detail))?,
    };
    let mut out = Vec::with_capacity(columns.len());
    for (name, raw) in &columns {
        let Some((i, t)) = schema.find(name) else {
            return Err(src.column(
                name,
                format!("the index has no such column (columns: {})", schema.known()),
            ));
        };
        if raw.len() != rows {
            return Err(src.row_count(format!("column {name:?} has {}", raw.len()), rows));
        }
        if !raw.fits(t) {
            return Err(src.column(
                name,
                format!(
                    "the file holds {}, the index's column is {}",
                    raw.kind(),
                    t.name()
                ),
            ));
        }
        let default = schema.default_value(i).cloned().unwrap_or(Value::zero(t));
        let mut b = ColumnBuilder::new(t);
        for r in 0..rows {
            match raw.value(r, t) {
                Ok(Some(v)) => b.push_value(&v),
                Ok(None) => b.push_value(&default),
                Err(detail) => return Err(src.value(name, r, format!("({}) {detail}", t.name()))),
            }
        }
        out.push((name.clone(), b.finish()));
    }
    let attrs = Attributes::new(rows, out).map_err(|e| match e.row {
        Some(r) => src.value(&e.column, r as usize, e.detail),
        None => src.column(&e.column, e.detail),
    })?;
    Ok((attrs, schema))
}
