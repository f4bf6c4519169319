//! What every kind of `codedb search` prints: the `--with` columns of each hit's row and the
//! hits in TSV or JSON (the layout `SEARCH_HELP` documents).

use std::io::Write;

use anyhow::{Context, Result};
use codedb::Hit;
use codedb::{Snapshot, Value};
use std::collections::HashMap;

use super::search_args::SearchArgs;
use crate::args::usage;

/// `--with`'s columns, checked against the index's attribute columns: a name it lacks is a
/// usage error (exit 2) naming it.
pub(crate) fn check_with(snap: &Snapshot, a: &SearchArgs) -> Result<()> {
    let schema = snap.attribute_schema();
    for c in &a.with {
        if schema.find(c).is_none() {
            usage!(
                "--with {}: the index has no attribute column {c:?} (columns: {})",
                a.with.join(","),
                if schema.is_empty() {
                    "none".to_owned()
                } else {
                    schema
                        .columns()
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            );
        }
    }
    Ok(())
}

/// The `--with` columns of every hit's row: the names, and each hit id's values.
pub(crate) type WithValues = (Vec<String>, HashMap<u64, Vec<Value>>);

/// `--with`'s values for `hits` (`None` without `--with`).
pub(crate) fn with_values(
    snap: &Snapshot,
    hits: &[Vec<Hit>],
    a: &SearchArgs,
) -> Result<Option<WithValues>> {
    if a.with.is_empty() {
        return Ok(None);
    }
    check_with(snap, a)?;
    let mut ids: Vec<u64> = hits.iter().flatten().map(|h| h.id).collect();
    ids.sort_unstable();
    ids.dedup();
    let names: Vec<&str> = a.with.iter().map(String::as_str).collect();
    let v = snap
        .attribute_values(&ids, &names)
        .with_context(|| format!("--with {}", a.with.join(",")))?;
    let by_id = ids
        .iter()
        .enumerate()
        .map(|(r, &id)| {
            let row = (0..names.len())
                .map(|c| v.column(c).and_then(|col| col.value(r)))
                .collect::<Option<Vec<Value>>>()
                .unwrap_or_default();
            (id, row)
        })
        .collect();
    Ok(Some((a.with.clone(), by_id)))
}

/// The hits in the output format, in the order documented in `SEARCH_HELP`; with `--with`,
/// each hit's chosen columns after its score (TSV: one field each, tags joined by `|`; JSON:
/// an `attributes` object, a NaN float as null).
pub(crate) fn write_hits(
    hits: &[Vec<Hit>],
    format: &str,
    with: Option<&WithValues>,
) -> std::io::Result<()> {
    use codedb_cli::io::attributes::{json_value, tsv_field};
    let mut o = std::io::BufWriter::new(std::io::stdout().lock());
    let values = |id: u64| with.and_then(|(_, m)| m.get(&id));
    #[derive(serde::Serialize)]
    struct Query<'a, H> {
        query: usize,
        results: &'a [H],
    }
    #[derive(serde::Serialize)]
    struct HitWith {
        id: u64,
        score: f32,
        attributes: serde_json::Map<String, serde_json::Value>,
    }
    if format == "json" {
        if let Some((names, _)) = with {
            let rows: Vec<Vec<HitWith>> = hits
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|h| HitWith {
                            id: h.id,
                            score: h.score,
                            attributes: names
                                .iter()
                                .zip(values(h.id).into_iter().flatten())
                                .map(|(n, v)| (n.clone(), json_value(v)))
                                .collect(),
                        })
                        .collect()
                })
                .collect();
            let out: Vec<Query<'_, HitWith>> = rows
                .iter()
                .enumerate()
                .map(|(query, results)| Query { query, results })
                .collect();
            serde_json::to_writer(&mut o, &out)?;
            writeln!(o)?;
            return o.flush();
        }
        let out: Vec<Query<'_, Hit>> = hits
            .iter()
            .enumerate()
            .map(|(query, results)| Query { query, results })
            .collect();
        serde_json::to_writer(&mut o, &out)?;
        writeln!(o)?;
    } else {
        let extra: String = with
            .map(|(n, _)| n.iter().map(|c| format!("\t{c}")).collect())
            .unwrap_or_default();
        writeln!(o, "query\trank\tid\tscore{extra}")?;
        for (i, l) in hits.iter().enumerate() {
            for (r, h) in l.iter().enumerate() {
                let fields: String = values(h.id)
                    .map(|v| v.iter().map(|x| format!("\t{}", tsv_field(x))).collect())
                    .unwrap_or_default();
                writeln!(o, "{i}\t{r}\t{}\t{}{fields}", h.id, h.score)?;
            }
        }
    }
    o.flush()
}
