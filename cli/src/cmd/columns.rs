//! `codedb add-column`: argument plumbing over the engine's `Index::add_column` (a column of
//! the attribute schema, docs/filtering.md), with the default given as text.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use codedb::{ColumnType, Value};

use crate::args::usage;
use crate::inputs;
use crate::out::outln;

#[derive(Args)]
/// Add an attribute column to the index's schema and commit: rows stored before it (and
/// writes that leave it out) read its default. Columns are never removed or retyped.
#[command(after_help = "Examples:
  codedb add-column my-index --name source --type string --default flickr
  codedb add-column my-index --name taken --type timestamp --default 2010-01-01
  codedb add-column my-index --name kw --type tags --default cat,dog --json

Types: int, float, timestamp, bool, string, tags. --default is read as the type says: an \
integer, a number, 'YYYY-MM-DD[THH:MM[:SS[.ffffff]]]' (UTC), true/false, the text itself, or \
comma-separated tags; without it the type's zero (0, 0.0, the epoch, false, the empty string, \
no tags). A name taken or not allowed, or a default that does not read as the type, is a usage \
error and changes nothing.")]
pub struct AddColumnArgs {
    /// The index directory.
    pub dir: PathBuf,
    /// The new column's name.
    #[arg(long)]
    pub name: String,
    /// The column's type: int, float, timestamp, bool, string or tags.
    #[arg(long = "type", value_parser = ["int", "float", "timestamp", "bool", "string", "tags"])]
    pub column_type: String,
    /// The value older rows read (as text, read as the type says; default: the type's zero).
    #[arg(long)]
    pub default: Option<String>,
    /// Print the new column (name, type, default; a timestamp in microseconds since the epoch)
    /// and the committed version as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `text` as a value of type `t` (the CLI's spelling of `add_column`'s default).
fn default_value(t: ColumnType, text: &str) -> Result<Value> {
    let bad = |want: &str| -> Result<Value> { usage!("--default {text:?}: expected {want}") };
    Ok(match t {
        ColumnType::Int => match text.trim().parse() {
            Ok(v) => Value::Int(v),
            Err(_) => return bad("an integer"),
        },
        ColumnType::Float => match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Value::Float(v),
            _ => return bad("a finite number"),
        },
        ColumnType::Bool => match text.trim() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return bad("true or false"),
        },
        ColumnType::Timestamp => match codedb::parse_timestamp(text.trim(), 0) {
            Ok(us) => Value::Timestamp(us),
            Err(e) => usage!("--default: {e}"),
        },
        ColumnType::Str => Value::Str(text.to_owned()),
        ColumnType::Tags => {
            let mut tags: Vec<String> = text
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect();
            tags.sort();
            tags.dedup();
            Value::Tags(tags)
        }
    })
}

fn json_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) | Value::Timestamp(i) => serde_json::json!(i),
        Value::Float(f) => serde_json::json!(f),
        Value::Bool(b) => serde_json::json!(b),
        Value::Str(s) => serde_json::json!(s),
        Value::Tags(t) => serde_json::json!(t),
    }
}

pub fn add_column(a: AddColumnArgs) -> Result<ExitCode> {
    let Some(t) = ColumnType::parse(&a.column_type) else {
        usage!(
            "--type {:?}: expected int, float, timestamp, bool, string or tags",
            a.column_type
        );
    };
    let default = match &a.default {
        Some(text) => default_value(t, text)?,
        None => Value::zero(t),
    };
    let index = inputs::open_writer(&a.dir)?;
    if let Err(e) = index.add_column(&a.name, t, default.clone()) {
        // A bad name (taken, not allowed) is the caller's to fix: a usage error.
        if matches!(e, codedb::StorageError::InvalidArgument { .. }) {
            usage!("{e}");
        }
        return Err(e.into());
    }
    let version = index.commit()?;
    if a.json {
        outln!(
            "{}",
            serde_json::json!({
                "name": a.name, "type": t.name(), "default": json_value(&default),
                "version": version,
            })
        );
    } else {
        outln!(
            "added column {} ({}) at version {version}",
            a.name,
            t.name()
        );
    }
    Ok(ExitCode::SUCCESS)
}
