//! The rows one call adds: codes plus the optional columns (ids, labels, list ids, stored
//! vectors, attributes), and their validation against the index before anything is written:
//! the columns against the model and the vector setting ([`check_batch`]), the attribute
//! columns against the schema ([`conform_write`] — a column the schema lacks, of another type
//! or of another length is refused naming it; in schema order, a column the write leaves out
//! taking its default).

use std::path::Path;

use ndarray::ArrayView2;

use crate::format::{
    AttributeError, Attributes, CodeKind, ModelFile, Schema, VectorBuf, VectorSpec,
    append_log::{NO_LABEL, NO_LIST},
};

use super::attributes::defaults;
use super::error::{Result, StorageError};

/// Encoded rows to add ([`super::Index::add_encoded`]) or upsert
/// ([`super::Index::upsert_encoded`]): the low-level write path.
///
/// `codes` holds `code_bytes` per row, row-major; every other column has one entry (or one
/// vector row) per code.
#[derive(Debug, Clone, Copy)]
pub struct RowBatch<'a> {
    /// Codes, `code_bytes` per row, row-major.
    pub codes: &'a [u8],
    /// Row ids; `None` assigns them automatically (not allowed for upserts).
    pub ids: Option<&'a [u64]>,
    /// Class labels (`u32::MAX` is reserved for "no label").
    pub labels: Option<&'a [u32]>,
    /// Inverted-list ids (`u32::MAX` is reserved for "no list"). Sealed segments store rows
    /// grouped by list (FORMAT.md §3.3), so scans can visit chosen lists only.
    pub lists: Option<&'a [u32]>,
    /// One stored vector per row: required exactly when the index stores vectors
    /// ([`super::CreateOptions::store_vectors`]), of its dimension, finite.
    pub vectors: Option<ArrayView2<'a, f32>>,
}

impl<'a> RowBatch<'a> {
    /// Rows of these codes and nothing else.
    pub fn new(codes: &'a [u8]) -> RowBatch<'a> {
        RowBatch {
            codes,
            ids: None,
            labels: None,
            lists: None,
            vectors: None,
        }
    }

    /// The same rows with explicit ids.
    pub fn with_ids(self, ids: &'a [u64]) -> RowBatch<'a> {
        RowBatch {
            ids: Some(ids),
            ..self
        }
    }

    /// The same rows with class labels.
    pub fn with_labels(self, labels: &'a [u32]) -> RowBatch<'a> {
        RowBatch {
            labels: Some(labels),
            ..self
        }
    }

    /// The same rows with inverted-list ids.
    pub fn with_lists(self, lists: &'a [u32]) -> RowBatch<'a> {
        RowBatch {
            lists: Some(lists),
            ..self
        }
    }

    /// The same rows with stored vectors, one row per code.
    pub fn with_vectors(self, vectors: ArrayView2<'a, f32>) -> RowBatch<'a> {
        RowBatch {
            vectors: Some(vectors),
            ..self
        }
    }
}

/// A batch that passed every check: its row count and its vectors in the index's storage type.
pub(crate) struct CheckedRows {
    pub rows: usize,
    pub vectors: Option<VectorBuf>,
}

fn invalid(dir: &Path, argument: &str, detail: impl Into<String>) -> StorageError {
    StorageError::invalid(dir, argument, detail)
}

/// The number of lists of the model's coarse quantiser (stage kind IVF), if it has one.
fn ivf_lists(model: &ModelFile) -> Option<u64> {
    model
        .stages
        .iter()
        .find(|s| s.kind == crate::format::stage_kind::IVF)
        .and_then(|s| s.tensors.first())
        .and_then(|t| t.shape.first().copied())
}

/// Checks `batch` against the index (model layout, stored-vector setting) without touching
/// anything; every failure names the argument.
pub(crate) fn check_batch(
    dir: &Path,
    model: &ModelFile,
    spec: Option<VectorSpec>,
    batch: &RowBatch<'_>,
) -> Result<CheckedRows> {
    let rows = check_codes(dir, model, batch.codes)?;
    let per_row = |name: &str, len: usize| -> Result<()> {
        if len != rows {
            return Err(invalid(
                dir,
                name,
                format!("{len} {name} for {rows} codes (one per row)"),
            ));
        }
        Ok(())
    };
    if let Some(ids) = batch.ids {
        per_row("ids", ids.len())?;
        if let Some(r) = ids.iter().position(|&x| x == u64::MAX) {
            return Err(invalid(
                dir,
                "ids",
                format!("row {r}: id {} is reserved", u64::MAX),
            ));
        }
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        if let Some(&dup) = ids.iter().find(|&&x| !seen.insert(x)) {
            return Err(invalid(dir, "ids", format!("id {dup} appears twice")));
        }
    }
    for (name, col, reserved_means) in [
        ("labels", batch.labels, "no label"),
        ("lists", batch.lists, "no list"),
    ] {
        if let Some(c) = col {
            per_row(name, c.len())?;
            debug_assert_eq!(NO_LABEL, NO_LIST);
            if let Some(r) = c.iter().position(|&x| x == NO_LABEL) {
                return Err(invalid(
                    dir,
                    name,
                    format!(
                        "row {r}: {} is reserved (it means \"{reserved_means}\")",
                        u32::MAX
                    ),
                ));
            }
        }
    }
    // An IVF model's codes are residuals to their list's centroid: each row needs that list.
    if let Some(k) = ivf_lists(model) {
        match batch.lists {
            None => {
                return Err(invalid(
                    dir,
                    "lists",
                    format!(
                        "the model is an IVF model of {k} lists: rows encoded by it need the \
                         list each was encoded against"
                    ),
                ));
            }
            Some(l) => {
                if let Some((r, &x)) = l.iter().enumerate().find(|(_, x)| **x as u64 >= k) {
                    return Err(invalid(
                        dir,
                        "lists",
                        format!("row {r}: list {x}, the model's coarse quantiser has {k} lists"),
                    ));
                }
            }
        }
    }
    let vectors = match (spec, &batch.vectors) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(invalid(
                dir,
                "vectors",
                "this index stores no vectors (create it with store_vectors to keep them)",
            ));
        }
        (Some(s), None) => {
            return Err(invalid(
                dir,
                "vectors",
                format!(
                    "this index stores a {}-D {} vector per row; none given",
                    s.dim,
                    s.dtype.name()
                ),
            ));
        }
        (Some(s), Some(v)) => {
            if v.nrows() != rows || v.ncols() != s.dim as usize {
                return Err(invalid(
                    dir,
                    "vectors",
                    format!(
                        "shape {}x{}, expected {rows}x{} (one {}-D vector per code)",
                        v.nrows(),
                        v.ncols(),
                        s.dim,
                        s.dim
                    ),
                ));
            }
            if let Some(((r, c), x)) = v.indexed_iter().find(|(_, x)| !x.is_finite()) {
                return Err(invalid(
                    dir,
                    "vectors",
                    format!("row {r} column {c} is {x} (stored vectors must be finite)"),
                ));
            }
            let buf = VectorBuf::from_f32(s.dtype, v.iter().copied());
            if !buf.as_slice().all_finite() {
                return Err(invalid(
                    dir,
                    "vectors",
                    format!(
                        "a value overflows {} (largest finite f16 is 65504)",
                        s.dtype.name()
                    ),
                ));
            }
            Some(buf)
        }
    };
    Ok(CheckedRows { rows, vectors })
}

/// Checks a code buffer against the model's layout; returns the row count.
fn check_codes(dir: &Path, m: &ModelFile, codes: &[u8]) -> Result<usize> {
    let width = m.code_bytes as usize;
    if codes.is_empty() {
        return Err(invalid(dir, "codes", "no rows given"));
    }
    if !codes.len().is_multiple_of(width) {
        return Err(invalid(
            dir,
            "codes",
            format!(
                "{} bytes is not a whole number of {width}-byte codes",
                codes.len()
            ),
        ));
    }
    let rows = codes.len() / width;
    let bad_row = match m.code_kind {
        CodeKind::Binary | CodeKind::Pq4 if !m.code_bits.is_multiple_of(8) => {
            // Bits past code_bits in the last byte must be zero, or a Hamming scan over whole
            // bytes would count them.
            let mask = !((1u8 << (m.code_bits % 8)) - 1);
            codes
                .chunks_exact(width)
                .position(|c| c[width - 1] & mask != 0)
                .map(|r| (r, "has bits set past the code's bit count"))
        }
        CodeKind::Float32 => codes
            .chunks_exact(width)
            .position(|c| {
                c.chunks_exact(4)
                    .any(|x| !f32::from_le_bytes([x[0], x[1], x[2], x[3]]).is_finite())
            })
            .map(|r| (r, "holds NaN or Inf")),
        CodeKind::Float16 => codes
            .chunks_exact(width)
            .position(|c| {
                c.chunks_exact(2)
                    .any(|x| !half::f16::from_le_bytes([x[0], x[1]]).is_finite())
            })
            .map(|r| (r, "holds NaN or Inf")),
        _ => None,
    };
    if let Some((r, what)) = bad_row {
        return Err(invalid(dir, "codes", format!("code of row {r} {what}")));
    }
    Ok(rows)
}

/// The columns a write of `rows` rows stores: `attrs` conformed to `schema` (missing columns
/// take their defaults), every column's default when the write gives none, and `None` when the
/// index has no columns. Refused, naming the column, when `attrs` has a column the schema lacks
/// or of another type, or another number of rows.
pub(crate) fn conform_write(
    dir: &Path,
    schema: &Schema,
    attrs: Option<&Attributes>,
    rows: usize,
) -> Result<Option<Attributes>> {
    let Some(a) = attrs else {
        return Ok((!schema.is_empty()).then(|| defaults(schema, rows)));
    };
    if a.rows() != rows {
        let column = a
            .schema()
            .columns()
            .first()
            .map_or(String::new(), |(n, _)| n.clone());
        return Err(StorageError::attributes(
            dir,
            AttributeError::column(
                &column,
                format!("{} rows of attributes for {rows} rows", a.rows()),
            ),
        ));
    }
    let c = a
        .conform(schema)
        .map_err(|e| StorageError::attributes(dir, e))?;
    Ok((!schema.is_empty()).then_some(c))
}
