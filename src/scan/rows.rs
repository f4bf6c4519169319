//! A checked view of one segment's code column: codes, ids and the optional deletion bitmap.
//!
//! The scan layer knows slices, not files: a segment hands over `codes` (row-major,
//! `code_bytes` per row), `ids` (the user id of each row) and `deleted` (bit `r % 64` of word
//! `r / 64` set = row `r` deleted). [`CodeRows::new`] checks the three agree once, so kernels can
//! index without checks. Deleted rows are filtered where a candidate is offered to a collector,
//! i.e. only for rows that already beat the current k-th, so a scan with nothing deleted costs
//! the same as one without a bitmap.

use super::error::{Result, ScanError};
use super::topk::TopK;

/// Codes, ids and deletions of one segment, validated to agree.
#[derive(Debug, Clone, Copy)]
pub struct CodeRows<'a> {
    codes: &'a [u8],
    code_bytes: usize,
    ids: &'a [u64],
    deleted: Option<&'a [u64]>,
}

impl<'a> CodeRows<'a> {
    /// Checks `codes.len()` is a multiple of `code_bytes` (> 0), that there is one id per row,
    /// and that `deleted`, when present, has exactly `rows.div_ceil(64)` words (bits past the
    /// last row are ignored).
    pub fn new(
        codes: &'a [u8],
        code_bytes: usize,
        ids: &'a [u64],
        deleted: Option<&'a [u64]>,
    ) -> Result<Self> {
        if code_bytes == 0 {
            return Err(ScanError::ZeroCodeWidth);
        }
        if !codes.len().is_multiple_of(code_bytes) {
            return Err(ScanError::CodesLength {
                codes_len: codes.len(),
                code_bytes,
            });
        }
        let rows = codes.len() / code_bytes;
        if ids.len() != rows {
            return Err(ScanError::IdsLength {
                ids_len: ids.len(),
                rows,
            });
        }
        if let Some(d) = deleted {
            let expected = rows.div_ceil(64);
            if d.len() != expected {
                return Err(ScanError::DeletedLength {
                    words: d.len(),
                    rows,
                    expected,
                });
            }
        }
        Ok(CodeRows {
            codes,
            code_bytes,
            ids,
            deleted,
        })
    }

    /// Number of rows (deleted ones included).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Bytes per code.
    pub fn code_bytes(&self) -> usize {
        self.code_bytes
    }

    /// All codes, row-major.
    pub fn codes(&self) -> &'a [u8] {
        self.codes
    }

    /// The user ids, one per row.
    pub fn ids(&self) -> &'a [u64] {
        self.ids
    }

    /// The deletion bitmap, if any.
    pub fn deleted(&self) -> Option<&'a [u64]> {
        self.deleted
    }

    /// The codes of rows `start..end` (caller keeps the range inside `0..len()`).
    pub(crate) fn codes_of(&self, start: usize, end: usize) -> &'a [u8] {
        debug_assert!(start <= end && end <= self.len());
        &self.codes[start * self.code_bytes..end * self.code_bytes]
    }

    /// True if row `row` is marked deleted.
    #[inline]
    pub fn is_deleted(&self, row: usize) -> bool {
        bit_set(self.deleted, row)
    }
}

/// Where a kernel sends the rows that pass its in-register filter.
///
/// A kernel keeps `bound()` in a register, computes a block of keys, and calls `offer` only for
/// rows whose key is `<= bound`; `offer` returns the new bound.
pub(crate) trait Sink {
    fn bound(&self) -> u32;
    fn offer(&mut self, key: u32, row: usize) -> u32;
}

/// True if bit `row` of the deletion bitmap is set.
#[inline]
pub(crate) fn bit_set(deleted: Option<&[u64]>, row: usize) -> bool {
    deleted.is_some_and(|d| d.get(row / 64).is_some_and(|w| (w >> (row % 64)) & 1 == 1))
}

/// Collects the k best live rows of one column for one query.
#[derive(Clone)]
pub(crate) struct TopKSink<'a> {
    pub topk: TopK,
    ids: &'a [u64],
    deleted: Option<&'a [u64]>,
}

impl<'a> TopKSink<'a> {
    /// A sink reporting `ids[row]` for live rows (ids and bitmap already validated).
    pub fn new(k: usize, ids: &'a [u64], deleted: Option<&'a [u64]>) -> Result<Self> {
        Ok(TopKSink {
            topk: TopK::new(k)?,
            ids,
            deleted,
        })
    }
}

impl Sink for TopKSink<'_> {
    #[inline]
    fn bound(&self) -> u32 {
        self.topk.threshold()
    }

    #[inline]
    fn offer(&mut self, key: u32, row: usize) -> u32 {
        if !bit_set(self.deleted, row)
            && let Some(&id) = self.ids.get(row)
        {
            self.topk.push(key, id);
        }
        self.topk.threshold()
    }
}

/// Collects every live row whose key is at most a fixed radius.
pub(crate) struct RadiusSink<'a> {
    pub radius: u32,
    pub found: Vec<(u32, u64)>,
    rows: CodeRows<'a>,
}

impl<'a> RadiusSink<'a> {
    pub fn new(radius: u32, rows: CodeRows<'a>) -> Self {
        RadiusSink {
            radius,
            found: Vec::new(),
            rows,
        }
    }
}

impl Sink for RadiusSink<'_> {
    #[inline]
    fn bound(&self) -> u32 {
        self.radius
    }

    #[inline]
    fn offer(&mut self, key: u32, row: usize) -> u32 {
        if key <= self.radius
            && !self.rows.is_deleted(row)
            && let Some(&id) = self.rows.ids.get(row)
        {
            self.found.push((key, id));
        }
        self.radius
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_the_argument() {
        let codes = [0u8; 24];
        let ids = [0u64; 3];
        assert!(CodeRows::new(&codes, 8, &ids, None).is_ok());
        assert_eq!(
            CodeRows::new(&codes, 0, &ids, None).unwrap_err(),
            ScanError::ZeroCodeWidth
        );
        assert!(matches!(
            CodeRows::new(&codes, 5, &ids, None),
            Err(ScanError::CodesLength { .. })
        ));
        assert!(matches!(
            CodeRows::new(&codes, 8, &ids[..2], None),
            Err(ScanError::IdsLength {
                ids_len: 2,
                rows: 3
            })
        ));
        assert!(matches!(
            CodeRows::new(&codes, 8, &ids, Some(&[0, 0])),
            Err(ScanError::DeletedLength { expected: 1, .. })
        ));
        let e = CodeRows::new(&codes, 8, &ids, Some(&[])).unwrap_err();
        assert!(e.to_string().contains("deleted"), "{e}");
    }

    #[test]
    fn deleted_bits() {
        let codes = [0u8; 70];
        let ids: Vec<u64> = (0..70).collect();
        let del = [1u64 << 3, 1u64 << 5];
        let rows = CodeRows::new(&codes, 1, &ids, Some(&del)).unwrap();
        let dels: Vec<usize> = (0..70).filter(|&r| rows.is_deleted(r)).collect();
        assert_eq!(dels, vec![3, 69]);
    }
}
