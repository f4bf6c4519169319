//! Text queries with their relevant rows, for `codedb eval --task text`.
//!
//! Two forms:
//! - a `.json` file holding a list of `{"text": "...", "relevant": [row, ...]}` objects (the
//!   openclipart exporter's `queries.json`);
//! - any other file: UTF-8 text, one query per line (empty lines skipped); a row is relevant
//!   when its caption holds every word of the query (PAMIR §5).

use std::path::Path;

use anyhow::{Context, Result, bail};
use codedb::model::tokenize;

use crate::eval::TextEvalQuery;

/// The queries of `path`; `captions`: the words of each row (for text files).
pub fn read_text_queries(path: &Path, captions: &[Vec<String>]) -> Result<Vec<TextEvalQuery>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: reading queries (UTF-8 text)", path.display()))?;
    let out: Vec<TextEvalQuery> = if path.extension().is_some_and(|e| e == "json") {
        #[derive(serde::Deserialize)]
        struct Q {
            text: String,
            relevant: Vec<usize>,
        }
        let qs: Vec<Q> = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: expected a JSON list of {{\"text\": string, \"relevant\": [row, ...]}}",
                path.display()
            )
        })?;
        qs.into_iter()
            .map(|q| TextEvalQuery {
                text: q.text,
                relevant: q.relevant,
            })
            .collect()
    } else {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let words = tokenize(l);
                let relevant = (0..captions.len())
                    .filter(|&r| !words.is_empty() && words.iter().all(|w| captions[r].contains(w)))
                    .collect();
                TextEvalQuery {
                    text: l.to_string(),
                    relevant,
                }
            })
            .collect()
    };
    if out.is_empty() {
        bail!("{}: holds no query", path.display());
    }
    Ok(out)
}
