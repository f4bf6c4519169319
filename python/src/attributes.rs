//! `attributes=`: Python columns → the engine's [`codedb::Attributes`].
//!
//! A mapping of column name → values (a dict of arrays or lists, a pandas DataFrame, or a
//! pyarrow Table). Each column's type follows its values: numpy bool → `bool`, integers →
//! `int`, floats → `float`, `datetime64` → `timestamp` (microseconds), strings → `string`,
//! and a list (or array) of strings per row → `tags`. Numeric columns are read through numpy
//! (one conversion at most, to int64 / float64); strings are read one by one.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use codedb::{Attributes, Column};

use crate::errors;

/// The columns of `obj` for a write of `rows` rows.
pub fn attributes(obj: &Bound<'_, PyAny>, rows: usize) -> PyResult<Attributes> {
    let mut columns = Vec::new();
    for (name, values) in named_columns(obj)? {
        let col = column(&name, &values, rows)?;
        columns.push((name, col));
    }
    Attributes::new(rows, columns).map_err(|e| errors::invalid("attributes", e))
}

/// (name, values) of a dict, a pandas DataFrame (`.columns`) or a pyarrow Table
/// (`.column_names`), in their order.
fn named_columns<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let mut out = Vec::new();
    if let Ok(d) = obj.cast::<PyDict>() {
        for (k, v) in d.iter() {
            let name: String = k
                .extract()
                .map_err(|_| errors::invalid("attributes", "column names must be strings"))?;
            out.push((name, v));
        }
    } else if obj.hasattr("column_names")? && obj.hasattr("column")? {
        for name in obj.getattr("column_names")?.try_iter()? {
            let name: String = name?.extract()?;
            let col = obj.call_method1("column", (name.as_str(),))?;
            out.push((name, col.call_method0("to_numpy")?));
        }
    } else if obj.hasattr("columns")? && obj.hasattr("to_numpy")? {
        for name in obj.getattr("columns")?.try_iter()? {
            let key = name?;
            let name: String = key
                .extract()
                .map_err(|_| errors::invalid("attributes", "column names must be strings"))?;
            out.push((name, obj.get_item(key)?.call_method0("to_numpy")?));
        }
    } else {
        return Err(errors::invalid(
            "attributes",
            "expected a dict of column name → values, a pandas DataFrame or a pyarrow Table",
        ));
    }
    Ok(out)
}

/// One column's values (`rows` of them) as an engine column of the type they hold.
fn column(name: &str, values: &Bound<'_, PyAny>, rows: usize) -> PyResult<Column> {
    let py = values.py();
    let bad = |detail: String| errors::invalid("attributes", format!("column {name:?}: {detail}"));
    if values.is_instance_of::<PyString>() {
        return Err(bad("expected one value per row, not one string".into()));
    }
    let np = py.import("numpy")?;
    let is_array = values.is_instance(&np.getattr("ndarray")?)?;
    if is_array {
        let shape: Vec<usize> = values.getattr("shape")?.extract()?;
        if shape.len() != 1 {
            return Err(bad(format!(
                "an array of shape {shape:?}, expected ({rows},)"
            )));
        }
        let kind: String = values.getattr("dtype")?.getattr("kind")?.extract()?;
        match kind.as_str() {
            "b" => return Ok(Column::Bool(values.call_method0("tolist")?.extract()?)),
            "i" | "u" => {
                if kind == "u" && shape[0] > 0 {
                    let max: u64 = values.call_method0("max")?.extract()?;
                    if max > i64::MAX as u64 {
                        return Err(bad(format!("{max} does not fit a signed 64-bit int")));
                    }
                }
                let a = values.call_method1("astype", ("int64",))?;
                return Ok(Column::Int(a.call_method0("tolist")?.extract()?));
            }
            "f" => {
                let a = values.call_method1("astype", ("float64",))?;
                return Ok(Column::Float(a.call_method0("tolist")?.extract()?));
            }
            "M" => {
                let us = values
                    .call_method1("astype", ("datetime64[us]",))?
                    .call_method1("view", ("int64",))?;
                let v: Vec<i64> = us.call_method0("tolist")?.extract()?;
                if let Some(row) = v.iter().position(|&t| t == i64::MIN) {
                    return Err(bad(format!("row {row} is NaT (not a time)")));
                }
                return Ok(Column::Timestamp(v));
            }
            "U" | "S" | "O" => {}
            other => {
                return Err(bad(format!(
                    "numpy dtype kind {other:?} is not a column type"
                )));
            }
        }
    }
    let items: Vec<Bound<'_, PyAny>> = values
        .try_iter()
        .map_err(|_| bad("expected a sequence of values".into()))?
        .collect::<PyResult<_>>()?;
    let Some(first) = items.first() else {
        return Ok(Column::Int(Vec::new()));
    };
    let tag_like = |v: &Bound<'_, PyAny>| -> PyResult<bool> {
        Ok(v.is_instance_of::<PyList>()
            || v.is_instance_of::<PyTuple>()
            || v.is_instance(&py.import("builtins")?.getattr("set")?)?
            || v.is_instance(&np.getattr("ndarray")?)?)
    };
    if first.is_instance_of::<PyString>() {
        let mut s = Vec::with_capacity(items.len());
        for (row, v) in items.iter().enumerate() {
            s.push(v.extract::<String>().map_err(|_| {
                bad(format!(
                    "row {row}: not a string (the column holds strings)"
                ))
            })?);
        }
        return Ok(Column::strings(&s));
    }
    if tag_like(first)? {
        let mut t = Vec::with_capacity(items.len());
        for (row, v) in items.iter().enumerate() {
            if !tag_like(v)? {
                return Err(bad(format!("row {row}: not a list of tags")));
            }
            let mut tags = Vec::new();
            for tag in v.try_iter()? {
                tags.push(
                    tag?.extract::<String>()
                        .map_err(|_| bad(format!("row {row}: a tag that is not a string")))?,
                );
            }
            t.push(tags);
        }
        return Ok(Column::tags(&t));
    }
    // Python scalars: bool before int (bool is an int in Python).
    let all = |f: &dyn Fn(&Bound<'_, PyAny>) -> bool| items.iter().all(f);
    if all(&|v| v.is_instance_of::<pyo3::types::PyBool>()) {
        return Ok(Column::Bool(
            items.iter().map(|v| v.extract()).collect::<PyResult<_>>()?,
        ));
    }
    if all(&|v| {
        v.is_instance_of::<pyo3::types::PyInt>() && !v.is_instance_of::<pyo3::types::PyBool>()
    }) {
        let mut out = Vec::with_capacity(items.len());
        for (row, v) in items.iter().enumerate() {
            out.push(
                v.extract::<i64>()
                    .map_err(|_| bad(format!("row {row}: does not fit a signed 64-bit int")))?,
            );
        }
        return Ok(Column::Int(out));
    }
    if all(&|v| {
        (v.is_instance_of::<pyo3::types::PyFloat>() || v.is_instance_of::<pyo3::types::PyInt>())
            && !v.is_instance_of::<pyo3::types::PyBool>()
    }) {
        return Ok(Column::Float(
            items.iter().map(|v| v.extract()).collect::<PyResult<_>>()?,
        ));
    }
    Err(bad(
        "values of mixed or unknown types (expected bools, ints, floats, strings, lists of \
         string tags, or a numpy array; timestamps as numpy datetime64)"
            .into(),
    ))
}

/// `add_column`'s `default=` as a value of the column's type (`type_name`, as the engine names
/// types; an unknown one is left for the engine to refuse, naming it).
pub fn default_value(obj: &Bound<'_, PyAny>, type_name: &str) -> PyResult<codedb::Value> {
    use codedb::{ColumnType, Value};
    let bad = |want: &str| {
        errors::invalid(
            "default",
            format!(
                "{}: expected {want} (the column's type is {type_name})",
                obj.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ),
        )
    };
    let is_bool = obj.is_instance_of::<pyo3::types::PyBool>();
    Ok(match ColumnType::parse(type_name) {
        Some(ColumnType::Int) if !is_bool => Value::Int(obj.extract().map_err(|_| bad("an int"))?),
        Some(ColumnType::Float) if !is_bool => {
            Value::Float(obj.extract().map_err(|_| bad("a number"))?)
        }
        Some(ColumnType::Bool) if is_bool => Value::Bool(obj.extract()?),
        Some(ColumnType::Str) => Value::Str(obj.extract().map_err(|_| bad("a str"))?),
        Some(ColumnType::Tags) => {
            let mut tags: Vec<String> = obj.extract().map_err(|_| bad("a list of str"))?;
            tags.sort();
            tags.dedup();
            Value::Tags(tags)
        }
        Some(ColumnType::Timestamp) if obj.is_instance_of::<PyString>() => {
            // Text reads as the CLI's --default and the filter language read it.
            let text: String = obj.extract()?;
            let us = codedb::parse_timestamp(&text, 0)
                .map_err(|e| errors::invalid("default", e.to_string()))?;
            Value::Timestamp(us)
        }
        Some(ColumnType::Timestamp) => {
            // numpy says what an instant is (datetime64, datetime), in microseconds.
            let np = obj.py().import("numpy")?;
            let us = np
                .call_method1("datetime64", (obj, "us"))
                .and_then(|t| t.call_method1("astype", ("int64",)))
                .and_then(|t| t.extract::<i64>())
                .map_err(|_| bad("a datetime64, a datetime or 'YYYY-MM-DD[THH:MM[:SS]]' text"))?;
            Value::Timestamp(us)
        }
        Some(ColumnType::Int) => return Err(bad("an int")),
        Some(ColumnType::Float) => return Err(bad("a number")),
        Some(ColumnType::Bool) => return Err(bad("a bool")),
        None => Value::Int(0),
    })
}
