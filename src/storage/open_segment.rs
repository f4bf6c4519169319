//! An opened, immutable segment shared by every version that lists it, with the lazily built
//! id lookup the writer needs for duplicate checks, deletes and upserts.
//!
//! Segments the engine writes without list ids store their rows sorted by id, so a lookup is a
//! binary search straight in the mapped id column and costs no memory. Segments grouped by list
//! id (sorted by list, then id) and segments written by other tools use a row permutation
//! built on the first lookup (4 bytes per row below 2^32 rows, else 8).

use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::format::{
    ChecksumPolicy, Container, FileKind, FormatError, RowColumn, SegmentReader, VectorBuf,
    VectorSlice,
};

use super::config::ReadOptions;

/// How the rows of a segment are ordered by id.
#[derive(Debug)]
pub(crate) enum IdOrder {
    /// Strictly increasing ids: binary search the column.
    Sorted,
    /// Row numbers in increasing id order.
    Permuted(Vec<u64>),
    /// The same, for segments of fewer than 2^32 rows.
    Permuted32(Vec<u32>),
}

#[derive(Debug, Clone)]
struct IdFault {
    detail: String,
}

/// A segment opened for a version.
#[derive(Debug)]
pub struct OpenSegment {
    reader: SegmentReader,
    file_len: u64,
    columns_verified: AtomicBool,
    ids: OnceLock<Result<IdOrder, IdFault>>,
    /// A zstd-compressed vectors column, decoded on first use.
    decoded_vectors: OnceLock<Option<VectorBuf>>,
}

impl OpenSegment {
    /// Opens a segment: fully checksummed below `opts.full_check_below` bytes, otherwise with
    /// `ChecksumPolicy::SkipColumns` (see [`ReadOptions`]).
    pub(crate) fn open(path: &Path, opts: &ReadOptions) -> Result<OpenSegment, FormatError> {
        let c = Container::open(path, opts.load, Some(FileKind::Segment))?;
        let file_len = c.file_len();
        let policy = if file_len < opts.full_check_below {
            ChecksumPolicy::All
        } else {
            ChecksumPolicy::SkipColumns
        };
        let reader = SegmentReader::from_container(c, policy)?;
        Ok(OpenSegment {
            reader,
            file_len,
            columns_verified: AtomicBool::new(policy == ChecksumPolicy::All),
            ids: OnceLock::new(),
            decoded_vectors: OnceLock::new(),
        })
    }

    /// The validated segment.
    pub fn reader(&self) -> &SegmentReader {
        &self.reader
    }

    /// Length of the segment file in bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Checksums every column not checked at open (before compaction copies them, so a
    /// damaged column is never rewritten under a fresh checksum).
    pub(crate) fn verify_columns(&self) -> Result<(), FormatError> {
        if self.columns_verified.load(Ordering::Acquire) {
            return Ok(());
        }
        let c = self.reader.container();
        for i in 0..c.entries().len() {
            c.verify_section(i)?;
        }
        self.reader.mark_all_blocks_checked();
        self.reader.check_id_range()?;
        self.reader.check_list_index()?;
        self.reader.vectors()?;
        self.columns_verified.store(true, Ordering::Release);
        Ok(())
    }

    /// The id order, built (and the id column checked) on first use.
    pub(crate) fn id_order(&self) -> Result<&IdOrder, FormatError> {
        if self.ids.get().is_none() {
            // Not cached when it fails: a damaged block or an id outside the segment's
            // recorded range is reported, as itself, on every lookup.
            self.reader.check_column(RowColumn::Ids)?;
            if !self.columns_verified.load(Ordering::Acquire) {
                self.reader.check_id_range()?;
            }
        }
        let r = self.ids.get_or_init(|| self.build_id_order());
        r.as_ref().map_err(|f| FormatError::Corrupt {
            path: self.reader.path().to_path_buf(),
            section: "ids".into(),
            detail: f.detail.clone(),
        })
    }

    fn build_id_order(&self) -> Result<IdOrder, IdFault> {
        let ids = self.reader.ids();
        if ids.windows(2).all(|w| w[0] < w[1]) {
            return Ok(IdOrder::Sorted);
        }
        let dup = |a: u64, b: u64| IdFault {
            detail: format!("rows {a} and {b} share id {}", ids[a as usize]),
        };
        if let Ok(n) = u32::try_from(ids.len()) {
            let mut perm: Vec<u32> = (0..n).collect();
            perm.sort_unstable_by_key(|&r| ids[r as usize]);
            if let Some(w) = perm
                .windows(2)
                .find(|w| ids[w[0] as usize] == ids[w[1] as usize])
            {
                return Err(dup(w[0] as u64, w[1] as u64));
            }
            return Ok(IdOrder::Permuted32(perm));
        }
        let mut perm: Vec<u64> = (0..ids.len() as u64).collect();
        perm.sort_unstable_by_key(|&r| ids[r as usize]);
        if let Some(w) = perm
            .windows(2)
            .find(|w| ids[w[0] as usize] == ids[w[1] as usize])
        {
            return Err(dup(w[0], w[1]));
        }
        Ok(IdOrder::Permuted(perm))
    }

    /// The stored vectors: a view of the mapping, or (for a zstd-compressed column, which
    /// the engine never writes) the column decoded once and kept. `None` without vectors or
    /// when a compressed column fails to decode (`verify` reports it).
    pub fn vectors(&self) -> Option<VectorSlice<'_>> {
        if let Some(v) = self.reader.vector_column() {
            return Some(v);
        }
        self.decoded_vectors
            .get_or_init(|| {
                let v = self.reader.vectors().ok()??;
                let dtype = self.reader.meta().vectors?.0;
                Some(match v {
                    crate::format::VectorsView::F32(x) => VectorBuf::F32(x.into_owned()),
                    crate::format::VectorsView::F16(x) => VectorBuf::F16(x.into_owned()),
                })
                .filter(|b| b.dtype() == dtype)
            })
            .as_ref()
            .map(|b| b.as_slice())
    }

    /// Whether the rows are stored in strictly increasing id order.
    pub(crate) fn is_sorted(&self) -> Result<bool, FormatError> {
        Ok(matches!(self.id_order()?, IdOrder::Sorted))
    }

    /// The row holding `id`, deleted or not.
    pub(crate) fn find(&self, id: u64) -> Result<Option<u64>, FormatError> {
        let m = self.reader.meta();
        if m.rows == 0 || id < m.min_id || id > m.max_id {
            return Ok(None);
        }
        let ids = self.reader.ids();
        Ok(match self.id_order()? {
            IdOrder::Sorted => ids.binary_search(&id).ok().map(|r| r as u64),
            IdOrder::Permuted(perm) => perm
                .binary_search_by_key(&id, |&r| ids[r as usize])
                .ok()
                .map(|k| perm[k]),
            IdOrder::Permuted32(perm) => perm
                .binary_search_by_key(&id, |&r| ids[r as usize])
                .ok()
                .map(|k| perm[k] as u64),
        })
    }
}
