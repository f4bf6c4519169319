//! Attribute columns from a JSON-lines file (`--attributes FILE` of `build` and `add`): one
//! JSON object per row, in row order, `{"year": 2010, "licence": "cc0", "tags": ["cat"]}`.
//! A column absent from a row (or `null`) takes its default; a value that does not fit the
//! column's type is refused naming the file, the line and the column, and nothing is written.
//!
//! | type | JSON |
//! |---|---|
//! | int | an integer (`1.5` is refused, not rounded) |
//! | float | a number |
//! | timestamp | an integer count of microseconds since 1970, or a string `YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z]` (UTC) |
//! | bool | `true` / `false` |
//! | string | a string |
//! | tags | an array of strings |
//!
//! Without a schema (a `build` without `--schema`) each column's type is inferred from its
//! first value: integer → int, other number → float, boolean → bool, string → string, array →
//! tags (timestamps need `--schema`).

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use codedb::{Attributes, ColumnBuilder, ColumnType, Schema, Value};
use serde_json::Value as Json;

/// The value of `v` in a column of type `t`, or why not.
fn convert(v: &Json, t: ColumnType) -> std::result::Result<Value, String> {
    let bad = |what: &str| Err(format!("{v} is not {what}"));
    match t {
        ColumnType::Int => match v.as_i64() {
            Some(x) => Ok(Value::Int(x)),
            None if v.is_u64() => bad("an integer in -2^63..2^63"),
            None => bad("an integer"),
        },
        ColumnType::Float => match v.as_f64() {
            Some(x) => Ok(Value::Float(x)),
            None => bad("a number"),
        },
        ColumnType::Timestamp => match (v.as_i64(), v.as_str()) {
            (Some(x), _) => Ok(Value::Timestamp(x)),
            (None, Some(s)) => codedb::parse_timestamp(s, 0)
                .map(Value::Timestamp)
                .map_err(|e| match e {
                    codedb::FilterError::Type { detail, .. } => detail,
                    e => e.to_string(),
                }),
            _ => bad("a timestamp (microseconds since 1970, or 'YYYY-MM-DD…')"),
        },
        ColumnType::Bool => match v.as_bool() {
            Some(x) => Ok(Value::Bool(x)),
            None => bad("true or false"),
        },
        ColumnType::Str => match v.as_str() {
            Some(s) => Ok(Value::Str(s.to_owned())),
            None => bad("a string"),
        },
        ColumnType::Tags => match v.as_array() {
            Some(a) => {
                let mut tags: Vec<String> = Vec::with_capacity(a.len());
                for x in a {
                    match x.as_str() {
                        Some(s) if !tags.iter().any(|t| t == s) => tags.push(s.to_owned()),
                        Some(_) => {}
                        None => return bad("an array of strings"),
                    }
                }
                Ok(Value::Tags(tags))
            }
            None => bad("an array of strings (tags)"),
        },
    }
}

/// The type a column's first value gives it (no schema).
fn infer(v: &Json) -> Option<ColumnType> {
    Some(match v {
        Json::Number(n) if n.is_i64() => ColumnType::Int,
        Json::Number(_) => ColumnType::Float,
        Json::Bool(_) => ColumnType::Bool,
        Json::String(_) => ColumnType::Str,
        Json::Array(_) => ColumnType::Tags,
        _ => return None,
    })
}

/// The columns of `path` for `rows` rows: those of `schema` the file names (all of them
/// typed by it), or, without a schema, every column the file names, typed by inference (the
/// inferred schema is returned). `flag` names the option in errors.
pub fn read_jsonl(
    flag: &str,
    path: &Path,
    rows: usize,
    schema: Option<&Schema>,
) -> Result<(Attributes, Schema)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("{flag} {}", path.display()))?;
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(&text)
        .split('\n')
        .collect();
    let lines = if text.is_empty() { Vec::new() } else { lines };
    if lines.len() != rows {
        bail!(
            "{flag} {}: {} lines (one JSON object per row), the data has {rows} rows",
            path.display(),
            lines.len()
        );
    }
    let mut names: Vec<String> = Vec::new();
    let mut types: HashMap<String, ColumnType> = HashMap::new();
    let mut values: HashMap<String, Vec<Option<Value>>> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        let at = || format!("{flag} {} line {}", path.display(), i + 1);
        let obj: serde_json::Map<String, Json> = serde_json::from_str(line.trim_end_matches('\r'))
            .with_context(|| format!("{}: not a JSON object (one object per row)", at()))?;
        for (name, v) in obj {
            if v.is_null() {
                continue;
            }
            let t = match types.get(&name) {
                Some(t) => *t,
                None => {
                    let t = match schema {
                        Some(s) => match s.find(&name) {
                            Some((_, t)) => t,
                            None => bail!(
                                "{}: column {name:?}: the index has no such column (columns: {})",
                                at(),
                                s.known()
                            ),
                        },
                        None => match infer(&v) {
                            Some(t) => t,
                            None => bail!("{}: column {name:?}: {v} is not a column value", at()),
                        },
                    };
                    types.insert(name.clone(), t);
                    names.push(name.clone());
                    t
                }
            };
            let value = convert(&v, t)
                .map_err(|e| anyhow::anyhow!("{}: column {name:?} ({}): {e}", at(), t.name()))?;
            let col = values
                .entry(name.clone())
                .or_insert_with(|| vec![None; rows]);
            col[i] = Some(value);
        }
    }
    let inferred = match schema {
        Some(s) => s.clone(),
        None => Schema::new(names.iter().map(|n| (n.clone(), types[n])).collect())
            .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?,
    };
    let mut cols = Vec::with_capacity(names.len());
    for name in &names {
        let (i, t) = inferred
            .find(name)
            .with_context(|| format!("{flag}: column {name}"))?;
        let default = inferred.default_value(i).cloned().unwrap_or(Value::zero(t));
        let mut b = ColumnBuilder::new(t);
        for v in &values[name] {
            b.push_value(v.as_ref().unwrap_or(&default));
        }
        cols.push((name.clone(), b.finish()));
    }
    let attrs = Attributes::new(rows, cols)
        .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    Ok((attrs, inferred))
}

/// `v` as a TSV field: numbers as written, strings with tabs and newlines escaped, tags
/// joined by `|`, a NaN as `NaN`.
pub fn tsv_field(v: &Value) -> String {
    let esc = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('\t', "\\t")
            .replace('\n', "\\n")
    };
    match v {
        Value::Int(x) | Value::Timestamp(x) => x.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Bool(x) => x.to_string(),
        Value::Str(s) => esc(s),
        Value::Tags(t) => t.iter().map(|s| esc(s)).collect::<Vec<_>>().join("|"),
    }
}

/// `v` as JSON (a NaN float as `null`: JSON has no NaN).
pub fn json_value(v: &Value) -> Json {
    match v {
        Value::Int(x) | Value::Timestamp(x) => Json::from(*x),
        Value::Float(x) => serde_json::Number::from_f64(*x).map_or(Json::Null, Json::Number),
        Value::Bool(x) => Json::Bool(*x),
        Value::Str(s) => Json::String(s.clone()),
        Value::Tags(t) => Json::Array(t.iter().map(|s| Json::String(s.clone())).collect()),
    }
}
