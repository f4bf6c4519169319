//! Captions (or tags) of training rows, for the text head (`codedb train --captions`).
//!
//! Two forms, aligned with the rows of `--data` (caption `i` describes row `i`):
//! - a `.json` file holding one JSON list with one entry per row: a string (a caption) or a
//!   list of strings (tags; each tag may hold several words); `[]` or `""` = no caption;
//! - any other file: UTF-8 text, one caption per line (`\n` or `\r\n`); an empty line = no
//!   caption.
//!
//! Each caption becomes its words by `codedb::model::tokenize` (lower-case, split on
//! non-letters).

use std::path::Path;

use anyhow::{Context, Result, bail};
use codedb::model::tokenize;

/// The words of each caption in `path`; `rows`: how many there must be.
pub fn read_captions(path: &Path, rows: usize) -> Result<Vec<Vec<String>>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: reading captions (UTF-8 text)", path.display()))?;
    let captions: Vec<Vec<String>> = if path.extension().is_some_and(|e| e == "json") {
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid JSON", path.display()))?;
        let Some(items) = v.as_array() else {
            bail!(
                "{}: expected a JSON list of captions (strings or lists of tags)",
                path.display()
            );
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                serde_json::Value::String(s) => Ok(tokenize(s)),
                serde_json::Value::Array(tags) => {
                    let mut words = Vec::new();
                    for t in tags {
                        let Some(s) = t.as_str() else {
                            bail!("{}: entry {i}: a tag is not a string: {t}", path.display());
                        };
                        words.extend(tokenize(s));
                    }
                    Ok(words)
                }
                other => bail!(
                    "{}: entry {i} is neither a string nor a list of tags: {other}",
                    path.display()
                ),
            })
            .collect::<Result<_>>()?
    } else {
        text.lines().map(tokenize).collect()
    };
    if captions.len() != rows {
        bail!(
            "{}: {} captions for {rows} rows (one per row, in row order)",
            path.display(),
            captions.len()
        );
    }
    Ok(captions)
}
