//! Deletion bitmaps (FORMAT.md §6): which rows of one segment are deleted.
//!
//! Bit `r % 64` of word `r / 64` is set when row `r` is deleted. Bitmaps are copy-on-write: a
//! commit that deletes rows writes a new bitmap file, so older versions keep theirs.

use std::io::Write;
use std::path::Path;

use super::container::{FileId, FileKind};
use super::container_reader::Container;
use super::container_writer::ContainerWriter;
use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter, to_usize};
use super::section_kind::{DEL_BITS, META};

/// The deleted rows of one segment, one bit per row (FORMAT.md §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletionBitmap {
    /// The bitmap's own file id.
    pub file_id: FileId,
    /// The segment whose rows this bitmap covers.
    pub segment_id: FileId,
    /// Rows the bitmap covers.
    pub rows: u64,
    words: Vec<u64>,
}

impl DeletionBitmap {
    /// An empty bitmap (nothing deleted) for a segment of `rows` rows.
    pub fn new(file_id: FileId, segment_id: FileId, rows: u64) -> DeletionBitmap {
        DeletionBitmap {
            file_id,
            segment_id,
            rows,
            words: vec![0; rows.div_ceil(64) as usize],
        }
    }

    /// Marks row `row` deleted; false if it is out of range.
    pub fn delete(&mut self, row: u64) -> bool {
        if row >= self.rows {
            return false;
        }
        self.words[(row / 64) as usize] |= 1 << (row % 64);
        true
    }

    /// True when `row` is deleted; rows past `rows` are not.
    pub fn is_deleted(&self, row: u64) -> bool {
        row < self.rows && self.words[(row / 64) as usize] >> (row % 64) & 1 == 1
    }

    /// The raw words, for scans that skip deleted rows.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Number of deleted rows.
    pub fn deleted_count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// Serialises the bitmap.
    pub fn write_to<W: Write>(&self, out: W, path: &Path) -> Result<W> {
        let mut w = ContainerWriter::new(out, FileKind::DeletionBitmap, self.file_id, path)?;
        let mut m = LeWriter::new();
        m.bytes(&self.segment_id.0)
            .u64(self.rows)
            .u64(self.deleted_count());
        w.section(META, true, &m.buf)?;
        let bits: Vec<u8> = self.words.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.section(DEL_BITS, true, &bits)?;
        w.finish()
    }

    /// Serialises the bitmap into a byte vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.write_to(Vec::new(), Path::new("<memory>"))
    }

    /// Reads and validates the deletion bitmap at `path`.
    pub fn open(path: &Path) -> Result<DeletionBitmap> {
        let c = Container::open(
            path,
            super::file_bytes::LoadMode::Read,
            Some(FileKind::DeletionBitmap),
        )?;
        DeletionBitmap::from_container(&c)
    }

    /// Parses a deletion bitmap from bytes in memory.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<DeletionBitmap> {
        let c = Container::from_slice(bytes, path, Some(FileKind::DeletionBitmap))?;
        DeletionBitmap::from_container(&c)
    }

    /// Reads a deletion bitmap from an opened container, checking every section.
    pub fn from_container(c: &Container) -> Result<DeletionBitmap> {
        c.verify_all(|_| {})?;
        let path = c.path();
        let mi = c.require(META)?;
        let mut r = LeReader::new(c.stored(mi), path, "meta");
        let segment_id = FileId(r.array()?);
        let rows = r.u64()?;
        let deleted = r.u64()?;
        if !c.is_newer_minor() {
            r.finish()?;
        }
        let bi = c.require(DEL_BITS)?;
        let bits = c.stored(bi);
        let nwords = rows.div_ceil(64);
        if bits.len() as u64 != nwords * 8 {
            return Err(FormatError::Corrupt {
                path: path.to_path_buf(),
                section: "bits".into(),
                detail: format!("{} bytes, {rows} rows need {}", bits.len(), nwords * 8),
            });
        }
        to_usize(nwords, path, "bits", "word count")?;
        let words: Vec<u64> = bits
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        if rows % 64 != 0
            && let Some(&last) = words.last()
            && last >> (rows % 64) != 0
        {
            return Err(FormatError::Corrupt {
                path: path.to_path_buf(),
                section: "bits".into(),
                detail: format!("bits set beyond row {rows}"),
            });
        }
        let b = DeletionBitmap {
            file_id: c.header().file_id,
            segment_id,
            rows,
            words,
        };
        if b.deleted_count() != deleted {
            return Err(FormatError::Corrupt {
                path: path.to_path_buf(),
                section: "meta".into(),
                detail: format!(
                    "says {deleted} deleted rows, bitmap has {}",
                    b.deleted_count()
                ),
            });
        }
        Ok(b)
    }
}
