//! Streaming writer of segment files (FORMAT.md §3).
//!
//! Columns are written one after another, each streamed in chunks of any size, so a segment of
//! a billion codes never sits in memory: ids, then codes, then the optional labels, list ids and
//! stored vectors; then the per-block checksums of those columns, computed on the way out
//! ([`super::block_checksums`], format 1.4); the 64-byte metadata goes last because only then
//! are the row count and the id range known. The writer checks that every column has the same
//! number of rows.
//!
//! 4-bit PQ codes (of at most [`MAX_M`] sub-quantisers) are stored in the block-interleaved
//! fast-scan layout ([`super::fastscan_layout`], section `codes_fastscan`): rows arrive
//! row-major as for every kind, are packed a block of 32 rows at a time (at most 31 rows wait
//! in memory), and the last partial block is written zero-padded when the column closes.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::attribute_columns::{self, Attributes};
use super::attribute_index::AttributeIndex;
use super::block_checksums::{self, BLOCK_BYTES, MAX_BLOCK_BYTES, MIN_BLOCK_BYTES};
use super::container::{FileId, FileKind};
use super::container_writer::ContainerWriter;
use super::error::{FormatError, Result};
use super::fastscan_layout::{BLOCK_ROWS, MAX_M, block_bytes, pack_block};
use super::mih_build::{BUILD_BYTES, MihBuild};
use super::mih_tables::MihShape;
use super::model_file::CodeKind;
use super::section_kind::{
    META, SEG_BLOCK_CHECKSUMS, SEG_CODES, SEG_CODES_FASTSCAN, SEG_IDS, SEG_LABELS, SEG_LIST_INDEX,
    SEG_LISTS, SEG_MIH, SEG_VECTORS,
};
use super::section_kind::{SEG_ATTRIBUTE_POSTINGS, SEG_ATTRIBUTE_ZONES, SEG_ATTRIBUTES};
use super::segment_meta::{SegmentMeta, VectorDType};
use super::segment_vectors::{VectorSlice, VectorSpec};

/// The fixed properties of a segment, given before any row is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentLayout {
    /// How codes are laid out.
    pub code_kind: CodeKind,
    /// Bytes per code.
    pub code_bytes: u32,
    /// Meaningful bits per code.
    pub code_bits: u32,
    /// The model the codes were encoded with.
    pub model_id: FileId,
}

impl SegmentLayout {
    /// The number of sub-quantisers `M` when this build stores the codes in the fast-scan
    /// layout: 4-bit PQ of 1 to [`MAX_M`] sub-quantisers. `None`: stored row-major.
    pub fn fastscan_m(&self) -> Option<usize> {
        let m = (self.code_bits / 4) as usize;
        (self.code_kind == CodeKind::Pq4 && (1..=MAX_M).contains(&m)).then_some(m)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Column {
    Start,
    Ids,
    Codes,
    Labels,
    Lists,
    Vectors,
    Attributes,
    Mih,
}

/// Writes one segment file.
pub struct SegmentWriter<W: Write> {
    w: ContainerWriter<W>,
    path: PathBuf,
    layout: SegmentLayout,
    column: Column,
    /// Rows written to the current column (bytes / width for codes).
    count: u64,
    rows: Option<u64>,
    min_id: u64,
    max_id: u64,
    vectors: Option<(VectorDType, u32)>,
    /// The vectors column is open for [`SegmentWriter::vector_rows`].
    vectors_streaming: bool,
    /// Runs of the lists column so far: (list id, first row), while it is non-decreasing.
    list_runs: Vec<(u32, u64)>,
    /// The lists column has been non-decreasing so far (its rows are grouped by list).
    lists_grouped: bool,
    /// Fast-scan layout: `M`, and the rows (row-major, fewer than 32) not yet packed.
    fastscan: Option<(usize, Vec<u8>)>,
    /// Bytes per checksummed block of every row column (FORMAT.md §3.5).
    block_bytes: u64,
}

impl<W: Write> SegmentWriter<W> {
    /// A writer of one segment to `out`; `path` names it in errors.
    pub fn new(out: W, segment_id: FileId, layout: SegmentLayout, path: &Path) -> Result<Self> {
        if !layout
            .code_kind
            .consistent(layout.code_bytes, layout.code_bits)
        {
            return Err(FormatError::InvalidArgument {
                path: path.to_path_buf(),
                argument: "code layout".into(),
                detail: format!(
                    "{} codes of {} bytes cannot hold {} bits",
                    layout.code_kind.name(),
                    layout.code_bytes,
                    layout.code_bits
                ),
            });
        }
        Ok(SegmentWriter {
            w: ContainerWriter::new(out, FileKind::Segment, segment_id, path)?,
            path: path.to_path_buf(),
            layout,
            column: Column::Start,
            count: 0,
            rows: None,
            min_id: u64::MAX,
            max_id: 0,
            vectors: None,
            vectors_streaming: false,
            list_runs: Vec::new(),
            lists_grouped: true,
            fastscan: layout.fastscan_m().map(|m| (m, Vec::new())),
            block_bytes: BLOCK_BYTES,
        })
    }

    /// Checksums the row columns in blocks of `bytes` instead of [`BLOCK_BYTES`] (a power of
    /// two from 4 KiB to 1 GiB; small blocks let tests and golden files span several blocks).
    /// Only before the first column.
    pub fn with_block_bytes(mut self, bytes: u64) -> Result<Self> {
        if self.column != Column::Start {
            return Err(self.bad("block size", "set before any column is written".into()));
        }
        if !bytes.is_power_of_two() || !(MIN_BLOCK_BYTES..=MAX_BLOCK_BYTES).contains(&bytes) {
            return Err(self.bad(
                "block size",
                format!(
                    "{bytes} is not a power of two from {MIN_BLOCK_BYTES} to {MAX_BLOCK_BYTES}"
                ),
            ));
        }
        self.block_bytes = bytes;
        Ok(self)
    }

    fn bad(&self, argument: &str, detail: String) -> FormatError {
        FormatError::InvalidArgument {
            path: self.path.clone(),
            argument: argument.into(),
            detail,
        }
    }

    /// Closes the current column and opens `next`, which must come later in the fixed order.
    fn switch(&mut self, next: Column, kind: u32, name: &str) -> Result<()> {
        if next <= self.column {
            return Err(self.bad(
                name,
                "columns must be written in order ids, codes, labels, lists, vectors".into(),
            ));
        }
        self.close_column()?;
        self.column = next;
        self.count = 0;
        self.w.begin_section_blocks(kind, true, self.block_bytes)
    }

    fn close_column(&mut self) -> Result<()> {
        match self.column {
            Column::Start => Ok(()),
            Column::Ids => {
                self.rows = Some(self.count);
                self.w.end_section()
            }
            c => {
                if c == Column::Codes {
                    self.flush_fastscan()?;
                }
                let rows = self.rows.unwrap_or(0);
                if self.count != rows {
                    return Err(self.bad(
                        &format!("{c:?}").to_lowercase(),
                        format!("has {} rows, the ids column has {rows}", self.count),
                    ));
                }
                self.w.end_section()?;
                if c == Column::Lists && self.lists_grouped {
                    self.write_list_index()?;
                }
                Ok(())
            }
        }
    }

    /// The list index (FORMAT.md §3.3) of a lists column whose rows are grouped by list: one
    /// 16-byte entry `list id u32 | zero u32 | first row u64` per distinct list, in order.
    fn write_list_index(&mut self) -> Result<()> {
        let mut buf = Vec::with_capacity(self.list_runs.len() * 16);
        for &(list, first) in &self.list_runs {
            buf.extend_from_slice(&list.to_le_bytes());
            buf.extend_from_slice(&[0; 4]);
            buf.extend_from_slice(&first.to_le_bytes());
        }
        self.w.section(SEG_LIST_INDEX, false, &buf)
    }

    /// Appends row ids (the first column; it fixes the row count).
    pub fn ids(&mut self, ids: &[u64]) -> Result<()> {
        if self.column != Column::Ids {
            self.switch(Column::Ids, SEG_IDS, "ids")?;
        }
        for &id in ids {
            self.min_id = self.min_id.min(id);
            self.max_id = self.max_id.max(id);
        }
        self.count += ids.len() as u64;
        self.w.write(bytemuck::cast_slice(&ids_le(ids)))
    }

    /// Appends whole codes (`code_bytes` each), row-major.
    pub fn codes(&mut self, codes: &[u8]) -> Result<()> {
        if self.column != Column::Codes {
            if self.column < Column::Ids {
                self.switch(Column::Ids, SEG_IDS, "ids")?;
            }
            self.open_codes()?;
        }
        let width = self.layout.code_bytes as usize;
        if !codes.len().is_multiple_of(width) {
            return Err(self.bad(
                "codes",
                format!(
                    "{} bytes is not a whole number of {width}-byte codes",
                    codes.len()
                ),
            ));
        }
        if self.layout.code_kind == CodeKind::Pq4 && self.layout.code_bits % 8 == 4 {
            let dirty = |c: &[u8]| c.last().is_some_and(|b| b & 0xf0 != 0);
            if let Some(r) = codes.chunks_exact(width).position(dirty) {
                return Err(self.bad(
                    "codes",
                    format!(
                        "row {}: the unused high nibble of an odd-M pq4 code must be zero",
                        self.count + r as u64
                    ),
                ));
            }
        }
        self.count += (codes.len() / width) as u64;
        let Some((m, pending)) = &mut self.fastscan else {
            return self.w.write(codes);
        };
        // Top the pending rows up to a whole block, then pack whole blocks straight from
        // `codes`; at most 31 rows wait for the next call.
        let (m, chunk) = (*m, BLOCK_ROWS * width);
        let mut rest = codes;
        if !pending.is_empty() {
            let need = (chunk - pending.len()).min(rest.len());
            pending.extend_from_slice(&rest[..need]);
            rest = &rest[need..];
            if pending.len() == chunk {
                let block = std::mem::take(pending);
                self.write_packed(&block, m)?;
            }
        }
        let whole = rest.len() / chunk * chunk;
        self.write_packed(&rest[..whole], m)?;
        if let Some((_, pending)) = &mut self.fastscan {
            pending.extend_from_slice(&rest[whole..]);
        }
        Ok(())
    }

    /// Packs row-major 4-bit codes (whole blocks of 32 rows but for a last partial one, which
    /// is zero-padded) and writes them.
    fn write_packed(&mut self, rows: &[u8], m: usize) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let chunk = BLOCK_ROWS * self.layout.code_bytes as usize;
        let bb = block_bytes(m);
        let mut packed = vec![0u8; rows.len().div_ceil(chunk) * bb];
        for (r, block) in rows.chunks(chunk).zip(packed.chunks_exact_mut(bb)) {
            pack_block(r, m, block);
        }
        self.w.write(&packed)
    }

    fn open_codes(&mut self) -> Result<()> {
        let kind = match self.fastscan {
            Some(_) => SEG_CODES_FASTSCAN,
            None => SEG_CODES,
        };
        self.switch(Column::Codes, kind, "codes")
    }

    /// Writes the rows still pending at the end of a fast-scan column as its last, zero-padded
    /// block.
    fn flush_fastscan(&mut self) -> Result<()> {
        let Some((m, pending)) = &mut self.fastscan else {
            return Ok(());
        };
        let (m, rows) = (*m, std::mem::take(pending));
        self.write_packed(&rows, m)
    }

    /// Appends class labels (u32 per row).
    pub fn labels(&mut self, labels: &[u32]) -> Result<()> {
        if self.column != Column::Labels {
            self.require_codes("labels")?;
            self.switch(Column::Labels, SEG_LABELS, "labels")?;
        }
        self.count += labels.len() as u64;
        self.w.write(&u32s_le(labels))
    }

    /// Appends inverted-list ids (u32 per row).
    pub fn lists(&mut self, lists: &[u32]) -> Result<()> {
        if self.column != Column::Lists {
            self.require_codes("lists")?;
            self.switch(Column::Lists, SEG_LISTS, "lists")?;
        }
        if self.lists_grouped {
            for (k, &l) in lists.iter().enumerate() {
                match self.list_runs.last() {
                    Some(&(last, _)) if l == last => {}
                    Some(&(last, _)) if l < last => {
                        self.lists_grouped = false;
                        self.list_runs = Vec::new();
                        break;
                    }
                    _ => self.list_runs.push((l, self.count + k as u64)),
                }
            }
        }
        self.count += lists.len() as u64;
        self.w.write(&u32s_le(lists))
    }

    fn require_codes(&self, name: &str) -> Result<()> {
        if self.column < Column::Codes {
            return Err(self.bad(name, "the codes column must be written first".into()));
        }
        Ok(())
    }

    /// Writes the stored vectors in one call (`rows * dim` values), optionally zstd-compressed.
    /// `f16` stores IEEE half precision (rounded to nearest even).
    pub fn vectors(
        &mut self,
        data: &[f32],
        dim: u32,
        dtype: VectorDType,
        zstd_level: Option<i32>,
    ) -> Result<()> {
        self.require_codes("vectors")?;
        if self.column >= Column::Vectors {
            return Err(self.bad("vectors", "stored vectors were already written".into()));
        }
        self.close_column()?;
        self.column = Column::Vectors;
        let rows = self.rows.unwrap_or(0);
        if dim == 0 || data.len() as u64 != rows * dim as u64 {
            return Err(self.bad(
                "vectors",
                format!(
                    "{} values are not {rows} rows of dimension {dim}",
                    data.len()
                ),
            ));
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(self.bad(
                "vectors",
                format!(
                    "row {} column {} is not finite",
                    i / dim as usize,
                    i % dim as usize
                ),
            ));
        }
        let raw: Vec<u8> = match dtype {
            VectorDType::F32 => data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            VectorDType::F16 => data
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
        };
        self.vectors = Some((dtype, dim));
        self.count = rows;
        match zstd_level {
            Some(level) => self.w.section_zstd(SEG_VECTORS, true, &raw, level),
            None => self
                .w
                .section_blocks(SEG_VECTORS, true, &raw, self.block_bytes),
        }
    }

    /// Appends rows of stored vectors (`values.len()` a multiple of `spec.dim`, of type
    /// `spec.dtype`, all finite), streaming the column uncompressed so that readers view it in
    /// place. Every call of one segment passes the same `spec`.
    pub fn vector_rows(&mut self, spec: VectorSpec, values: VectorSlice<'_>) -> Result<()> {
        if !self.vectors_streaming {
            self.require_codes("vectors")?;
            if self.column >= Column::Vectors {
                return Err(self.bad("vectors", "stored vectors were already written".into()));
            }
            if spec.dim == 0 {
                return Err(self.bad("vectors", "dimension 0".into()));
            }
            self.close_column()?;
            self.column = Column::Vectors;
            self.count = 0;
            self.vectors = Some(spec.pair());
            self.vectors_streaming = true;
            self.w
                .begin_section_blocks(SEG_VECTORS, true, self.block_bytes)?;
        }
        if self.vectors != Some(spec.pair()) || values.dtype() != spec.dtype {
            return Err(self.bad(
                "vectors",
                format!(
                    "{} values of dimension {} after rows of {:?}",
                    values.dtype().name(),
                    spec.dim,
                    self.vectors
                ),
            ));
        }
        let dim = spec.dim as usize;
        if !values.len().is_multiple_of(dim) {
            return Err(self.bad(
                "vectors",
                format!("{} values are not rows of dimension {dim}", values.len()),
            ));
        }
        if !values.all_finite() {
            return Err(self.bad("vectors", "stored vectors must be finite".into()));
        }
        self.count += (values.len() / dim) as u64;
        self.w.write(values.as_bytes())
    }

    /// Writes the rows' attribute columns (section `attributes`, format 1.7, FORMAT.md §3.7)
    /// and their indexes — the tag postings and the zone maps (sections `attribute_postings`
    /// and `attribute_zones`, format 1.8, §3.8), so that a reader opening the segment reads
    /// them rather than building them — after the row columns and before the multi-index
    /// hashing tables: `attrs` holds one value per row written, in row order. Checked on
    /// first touch by readers (section CRC, structure, dictionary codes), like the code
    /// blocks.
    pub fn attributes(&mut self, attrs: &Attributes) -> Result<()> {
        self.require_codes("attributes")?;
        if self.column >= Column::Attributes {
            return Err(self.bad("attributes", "written after the tables or twice".into()));
        }
        if self.column != Column::Vectors || self.vectors_streaming {
            self.close_column()?;
        }
        self.column = Column::Attributes;
        let rows = self.rows.unwrap_or(0);
        if attrs.rows() as u64 != rows {
            return Err(self.bad(
                "attributes",
                format!("{} rows of attributes for {rows} rows", attrs.rows()),
            ));
        }
        let bytes = attribute_columns::encode(attrs)
            .map_err(|e| attribute_columns::invalid(&self.path, e))?;
        self.w.begin_section(SEG_ATTRIBUTES, true)?;
        self.w.write(&bytes)?;
        self.w.end_section()?;
        // Optional: a reader that skips them builds the same indexes from the columns.
        let (postings, zones) = AttributeIndex::encode(attrs);
        self.w.begin_section(SEG_ATTRIBUTE_POSTINGS, false)?;
        self.w.write(&postings)?;
        self.w.end_section()?;
        self.w.begin_section(SEG_ATTRIBUTE_ZONES, false)?;
        self.w.write(&zones)?;
        self.w.end_section()
    }

    /// Writes the multi-index hashing tables of the codes written (section `mih`, format 1.6,
    /// optional; [`super::mih_tables`]), after every column. `rescan(sink)` must feed the code
    /// column again to `sink`, whole codes in row order: it is called once to count and once
    /// per fill pass (`MihBuild::passes`), so memory stays the counts plus
    /// `mih_build::BUILD_BYTES`. Only binary
    /// codes of 32-256 bits, `shape.bits = 8 × code_bytes`.
    pub fn mih_tables<E: From<FormatError>>(
        &mut self,
        shape: MihShape,
        mut rescan: impl FnMut(&mut dyn FnMut(&[u8])) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        self.require_codes("mih")?;
        if self.column == Column::Mih {
            return Err(self.bad("mih", "tables were already written".into()).into());
        }
        if self.layout.code_kind != CodeKind::Binary || shape.bits != 8 * self.layout.code_bytes {
            return Err(self
                .bad(
                    "mih",
                    format!(
                        "tables of {} bits for {} codes of {} bytes (binary codes only)",
                        shape.bits,
                        self.layout.code_kind.name(),
                        self.layout.code_bytes
                    ),
                )
                .into());
        }
        if self.column < Column::Attributes
            && (self.column != Column::Vectors || self.vectors_streaming)
        {
            self.close_column()?;
        }
        self.column = Column::Mih;
        let rows = self.rows.unwrap_or(0);
        let width = self.layout.code_bytes as usize;
        let mut build = MihBuild::new(shape, width, rows);
        rescan(&mut |c| build.count(c))?;
        build.offsets(&self.path)?;
        self.w.begin_section(SEG_MIH, false)?;
        self.w.write(&shape.encode_header(rows))?;
        for j in 0..shape.m {
            self.w.write(&u32s_le(build.table_offsets(j)))?;
        }
        let mut stage = Vec::new();
        for pass in build.passes(BUILD_BYTES) {
            let mut fill = build.fill(&pass, &mut stage);
            rescan(&mut |c| fill.add(c))?;
            let w = &mut self.w;
            fill.finish(&self.path, &mut |b| w.write(b))?;
        }
        self.w.end_section()?;
        Ok(())
    }

    /// Writes the metadata, section table and trailer; returns the sink and the metadata.
    pub fn finish(mut self) -> Result<(W, SegmentMeta)> {
        if self.column < Column::Codes {
            if self.column < Column::Ids {
                self.switch(Column::Ids, SEG_IDS, "ids")?;
            }
            self.open_codes()?;
        }
        if self.column < Column::Vectors
            || (self.column == Column::Vectors && self.vectors_streaming)
        {
            self.close_column()?;
        }
        let rows = self.rows.unwrap_or(0);
        let meta = SegmentMeta {
            rows,
            code_kind: self.layout.code_kind,
            code_bytes: self.layout.code_bytes,
            code_bits: self.layout.code_bits,
            vectors: self.vectors,
            model_id: self.layout.model_id,
            min_id: if rows == 0 { 0 } else { self.min_id },
            max_id: if rows == 0 { 0 } else { self.max_id },
        };
        let crcs = block_checksums::encode(self.w.block_crcs());
        self.w.section(SEG_BLOCK_CHECKSUMS, false, &crcs)?;
        self.w.section(META, true, &meta.encode())?;
        Ok((self.w.finish()?, meta))
    }
}

fn ids_le(ids: &[u64]) -> Vec<u64> {
    ids.iter().map(|v| v.to_le()).collect()
}

fn u32s_le(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::segment_reader::SegmentReader;

    fn write(layout: SegmentLayout, rows: usize, codes: &[u8], chunk_rows: usize) -> Vec<u8> {
        let p = Path::new("<memory>");
        let mut w = SegmentWriter::new(Vec::new(), FileId::ZERO, layout, p).unwrap();
        w.ids(&(0..rows as u64).collect::<Vec<_>>()).unwrap();
        let cb = layout.code_bytes as usize;
        for c in codes.chunks(chunk_rows * cb) {
            w.codes(c).unwrap();
        }
        w.finish().unwrap().0
    }

    fn pq4(m: u32) -> SegmentLayout {
        SegmentLayout {
            code_kind: CodeKind::Pq4,
            code_bytes: m.div_ceil(2),
            code_bits: 4 * m,
            model_id: FileId::ZERO,
        }
    }

    #[test]
    fn fastscan_packing_does_not_depend_on_how_rows_are_streamed() {
        let (m, rows) = (5u32, 101usize);
        let cb = m.div_ceil(2) as usize;
        let codes: Vec<u8> = (0..rows * cb)
            .map(|x| {
                let b = (x * 29 + 3) as u8;
                if x % cb == cb - 1 { b & 0x0f } else { b }
            })
            .collect();
        let one = write(pq4(m), rows, &codes, rows);
        for chunk in [1, 7, 31, 32, 33, 64] {
            assert_eq!(write(pq4(m), rows, &codes, chunk), one, "chunks of {chunk}");
        }
        let r = SegmentReader::from_bytes(&one, Path::new("<memory>")).unwrap();
        let (packed, mm) = r.fastscan_codes().unwrap();
        assert_eq!((packed.len(), mm), (4 * 6 * 16, 5));
        assert_eq!(r.codes(), &codes[..]);
        // pq4 beyond MAX_M sub-quantisers stays row-major.
        let wide = SegmentLayout {
            code_bits: 4 * 258,
            code_bytes: 129,
            ..pq4(1)
        };
        let r2 = write(wide, 3, &vec![0u8; 3 * 129], 3);
        let r2 = SegmentReader::from_bytes(&r2, Path::new("<memory>")).unwrap();
        assert!(r2.fastscan_codes().is_none());
    }

    #[test]
    fn odd_m_codes_with_a_set_unused_nibble_are_refused() {
        let p = Path::new("<memory>");
        let mut w = SegmentWriter::new(Vec::new(), FileId::ZERO, pq4(3), p).unwrap();
        w.ids(&[1, 2]).unwrap();
        let err = w.codes(&[0x21, 0x03, 0x54, 0x16]).unwrap_err();
        assert!(
            err.to_string().contains("row 1: the unused high nibble"),
            "{err}"
        );
    }

    /// Tables are built from several passes over the codes; a pass that gives other codes than
    /// the first (a source changed under the writer) must fail the write, not write tables
    /// that name rows in the wrong buckets.
    #[test]
    fn tables_from_passes_that_disagree_are_refused() {
        let layout = SegmentLayout {
            code_kind: CodeKind::Binary,
            code_bytes: 8,
            code_bits: 64,
            model_id: FileId::ZERO,
        };
        let rows = 1000usize;
        let codes: Vec<u8> = (0..rows as u64 * 8)
            .map(|x| ((x * 2_654_435_761) >> 7) as u8)
            .collect();
        let p = Path::new("<memory>");
        let shape = MihShape::choose(8, rows as u64).unwrap();
        let run = |change: &dyn Fn(usize, &mut Vec<u8>)| {
            let mut w = SegmentWriter::new(Vec::new(), FileId::ZERO, layout, p).unwrap();
            w.ids(&(0..rows as u64).collect::<Vec<_>>()).unwrap();
            w.codes(&codes).unwrap();
            let mut pass = 0;
            let r = w.mih_tables::<FormatError>(shape, |sink| {
                let mut c = codes.clone();
                change(pass, &mut c);
                pass += 1;
                sink(&c);
                Ok(())
            });
            r.and_then(|()| w.finish().map(|_| ()))
        };
        assert!(run(&|_, _| {}).is_ok());
        let other_codes = |pass: usize, c: &mut Vec<u8>| {
            if pass > 0 {
                c[8 * 17] ^= 0x0f;
            }
        };
        let fewer_rows = |pass: usize, c: &mut Vec<u8>| {
            if pass > 0 {
                c.truncate(8 * (rows - 1));
            }
        };
        for (what, change) in [
            ("other codes", &other_codes as &dyn Fn(usize, &mut Vec<u8>)),
            ("fewer rows", &fewer_rows),
        ] {
            let e = run(change).expect_err(what);
            assert!(e.to_string().contains("mih"), "{what}: {e}");
        }
    }
}
