//! Streaming writer of the container: header, aligned sections, section table, trailer.
//!
//! Sections are streamed (a billion-row code column never needs to sit in memory) and their
//! CRC32 is computed on the way out. The writer only appends, so it works on any `Write`.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::block_checksums::{BlockHasher, ColumnBlockCrcs};
use super::container::{
    CHECKSUM_CRC32, Codec, END_MAGIC, FileId, FileKind, FormatVersion, Header, SECTION_ALIGN,
    SECTION_REQUIRED, SectionEntry, align_up,
};
use super::container_reader::MAX_ZSTD_RATIO;
use super::error::{FormatError, Result};
use super::le::LeWriter;
use super::section_kind;

struct OpenSection {
    kind: u32,
    flags: u32,
    offset: u64,
    hasher: crc32fast::Hasher,
    /// Per-block CRCs of the section, when asked for ([`ContainerWriter::begin_section_blocks`]).
    blocks: Option<BlockHasher>,
}

/// Writes one codedb file to `out`.
pub struct ContainerWriter<W: Write> {
    out: W,
    path: PathBuf,
    kind: FileKind,
    pos: u64,
    entries: Vec<SectionEntry>,
    open: Option<OpenSection>,
    block_crcs: Vec<ColumnBlockCrcs>,
}

impl<W: Write> ContainerWriter<W> {
    /// Starts a file of `kind` with identity `file_id`; `path` is only used in error messages.
    pub fn new(out: W, kind: FileKind, file_id: FileId, path: &Path) -> Result<Self> {
        let (major, minor) = FormatVersion::CURRENT.numbers();
        let mut w = ContainerWriter {
            out,
            path: path.to_path_buf(),
            kind,
            pos: 0,
            entries: Vec::new(),
            open: None,
            block_crcs: Vec::new(),
        };
        let header = Header {
            major,
            minor,
            kind,
            file_id,
        };
        w.raw(&header.encode())?;
        Ok(w)
    }

    fn io(&self, source: std::io::Error) -> FormatError {
        FormatError::Io {
            path: self.path.clone(),
            source,
        }
    }

    fn raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| self.io(e))?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    fn pad_to_alignment(&mut self) -> Result<()> {
        let target = align_up(self.pos).ok_or_else(|| self.too_big())?;
        let pad = (target - self.pos) as usize;
        self.raw(&[0u8; SECTION_ALIGN as usize][..pad])
    }

    fn too_big(&self) -> FormatError {
        FormatError::InvalidArgument {
            path: self.path.clone(),
            argument: "file size".into(),
            detail: "exceeds 2^64 bytes".into(),
        }
    }

    fn flags(required: bool) -> u32 {
        if required { SECTION_REQUIRED } else { 0 }
    }

    /// Opens a section to be filled with [`Self::write`]; closed by [`Self::end_section`].
    pub fn begin_section(&mut self, kind: u32, required: bool) -> Result<()> {
        self.begin(kind, required, None)
    }

    /// [`Self::begin_section`], also recording one CRC-32 per `block_bytes` of the section
    /// (see [`Self::block_crcs`]).
    pub fn begin_section_blocks(
        &mut self,
        kind: u32,
        required: bool,
        block_bytes: u64,
    ) -> Result<()> {
        self.begin(kind, required, Some(BlockHasher::new(block_bytes)))
    }

    fn begin(&mut self, kind: u32, required: bool, blocks: Option<BlockHasher>) -> Result<()> {
        self.assert_closed("begin_section")?;
        self.pad_to_alignment()?;
        self.open = Some(OpenSection {
            kind,
            flags: Self::flags(required),
            offset: self.pos,
            hasher: crc32fast::Hasher::new(),
            blocks,
        });
        Ok(())
    }

    /// Appends bytes to the open section.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self.open.as_mut() {
            Some(OpenSection {
                hasher,
                blocks: Some(b),
                ..
            }) => b.update(bytes, hasher),
            Some(s) => s.hasher.update(bytes),
            None => return Err(self.misuse("write without begin_section")),
        }
        self.raw(bytes)
    }

    /// The block CRCs of every section written with [`Self::begin_section_blocks`] so far, in
    /// file order.
    pub fn block_crcs(&self) -> &[ColumnBlockCrcs] {
        &self.block_crcs
    }

    /// Closes the open section and records its table entry.
    pub fn end_section(&mut self) -> Result<()> {
        let mut s = self
            .open
            .take()
            .ok_or_else(|| self.misuse("end_section without begin_section"))?;
        let len = self.pos - s.offset;
        if let Some(b) = s.blocks.take() {
            let block_bytes = b.block_bytes();
            self.block_crcs.push(ColumnBlockCrcs {
                kind: s.kind,
                block_bytes,
                len,
                crcs: b.finish(&mut s.hasher),
            });
        }
        self.entries.push(SectionEntry {
            kind: s.kind,
            flags: s.flags,
            offset: s.offset,
            stored_len: len,
            raw_len: len,
            codec: Codec::None,
            checksum_type: CHECKSUM_CRC32,
            crc32: s.hasher.finalize(),
        });
        Ok(())
    }

    /// Writes a whole uncompressed section.
    pub fn section(&mut self, kind: u32, required: bool, bytes: &[u8]) -> Result<()> {
        self.begin_section(kind, required)?;
        self.write(bytes)?;
        self.end_section()
    }

    /// Writes a whole uncompressed section with block CRCs ([`Self::begin_section_blocks`]).
    pub fn section_blocks(
        &mut self,
        kind: u32,
        required: bool,
        bytes: &[u8],
        block_bytes: u64,
    ) -> Result<()> {
        self.begin_section_blocks(kind, required, block_bytes)?;
        self.write(bytes)?;
        self.end_section()
    }

    /// Writes a whole section compressed with zstd at `level` (only for compressible kinds).
    pub fn section_zstd(
        &mut self,
        kind: u32,
        required: bool,
        raw: &[u8],
        level: i32,
    ) -> Result<()> {
        if !section_kind::compressible(self.kind, kind) {
            return Err(self.misuse("zstd requested for a section that must stay uncompressed"));
        }
        let stored = zstd::bulk::compress(raw, level).map_err(|e| self.io(e))?;
        if (raw.len() as u64) > (stored.len() as u64).saturating_mul(MAX_ZSTD_RATIO) {
            // Readers refuse ratios above the limit (bomb protection): store it plain.
            return self.section(kind, required, raw);
        }
        self.begin_section(kind, required)?;
        self.write(&stored)?;
        self.end_section()?;
        if let Some(e) = self.entries.last_mut() {
            e.codec = Codec::Zstd;
            e.raw_len = raw.len() as u64;
        }
        Ok(())
    }

    fn assert_closed(&self, what: &str) -> Result<()> {
        if self.open.is_some() {
            return Err(self.misuse(&format!("{what} while a section is open")));
        }
        Ok(())
    }

    fn misuse(&self, detail: &str) -> FormatError {
        FormatError::InvalidArgument {
            path: self.path.clone(),
            argument: "writer".into(),
            detail: detail.into(),
        }
    }

    /// Writes the section table and trailer, flushes, and returns the sink.
    pub fn finish(mut self) -> Result<W> {
        self.assert_closed("finish")?;
        self.pad_to_alignment()?;
        let table_offset = self.pos;
        let mut t = LeWriter::new();
        for e in &self.entries {
            e.encode(&mut t);
        }
        let count = u32::try_from(self.entries.len()).map_err(|_| self.too_big())?;
        t.u64(table_offset)
            .u32(count)
            .u8(CHECKSUM_CRC32)
            .zeros(3)
            .bytes(&END_MAGIC)
            .zeros(4);
        let crc = crc32fast::hash(&t.buf);
        t.u32(crc);
        let bytes = t.into_inner();
        self.raw(&bytes)?;
        self.out.flush().map_err(|e| self.io(e))?;
        Ok(self.out)
    }
}
