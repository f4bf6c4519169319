//! The container every codedb file shares: a 64-byte header, 64-byte aligned sections, a section
//! table and a 32-byte trailer. `format/FORMAT.md` §2 draws it byte by byte.
//!
//! ```text
//! 0        64                                              table_offset          len-32    len
//! +--------+--------------+--+--------------+--+---- ... --+--------------------+---------+
//! | header | section 0    |p | section 1    |p |           | section table      | trailer |
//! +--------+--------------+--+--------------+--+---- ... --+--------------------+---------+
//!            every section starts at a multiple of 64; padding (p) is zero
//! ```

use std::path::Path;

use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter};

/// First eight bytes of every codedb file. The high byte and the CR LF / SUB / LF sequence catch
/// 7-bit and text-mode transfers the way PNG's signature does.
pub const MAGIC: [u8; 8] = [0x89, b'C', b'D', b'B', b'\r', b'\n', 0x1a, b'\n'];
/// Last eight bytes of every codedb file: a cheap check that the file was not cut short.
pub const END_MAGIC: [u8; 8] = *b"CDB-END\n";
/// Length of the file header in bytes (FORMAT.md §2.1).
pub const HEADER_LEN: usize = 64;
/// Length of the file trailer in bytes (FORMAT.md §2.4).
pub const TRAILER_LEN: usize = 32;
/// Length of one section-table entry in bytes (FORMAT.md §2.3).
pub const SECTION_ENTRY_LEN: usize = 48;
/// Alignment of every section start (a cache line; enough for any SIMD load).
pub const SECTION_ALIGN: u64 = 64;

/// Format versions. A reader accepts its own major version and any minor version of it; a newer
/// minor is readable as long as it adds only optional sections (unknown required sections are
/// refused by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FormatVersion {
    /// 1.0: the first version (segment, model, class table, deletion bitmap, manifest).
    V1_0,
    /// 1.1: append-log records carry list ids and stored vectors (log meta declares the
    /// vectors), manifests may name the index's stored-vector setting (section 68), segments
    /// whose rows are grouped by list id carry a list index (section 7). Every 1.0 file is a
    /// valid 1.1 file.
    V1_1,
    /// 1.2: segments of 4-bit PQ codes store them block-interleaved for fast-scan (section 8,
    /// `codes_fastscan`, FORMAT.md §3.4) instead of row-major (section 3). A 1.1 reader refuses
    /// such a segment as an unknown required section; every 1.1 file is a valid 1.2 file.
    V1_2,
    /// 1.3: class-table deltas may remove images from classes (section 37, `removed`,
    /// FORMAT.md §5.2), so deletes and upserts of labelled rows keep class means exact. A 1.2
    /// reader refuses such a delta as an unknown required section; every 1.2 file is a valid
    /// 1.3 file.
    V1_3,
    /// 1.4: segments carry one CRC-32 per 64 KiB block of every row column (optional section
    /// 9, `block_checksums`, FORMAT.md §3.5), so a reader that opened a large segment without
    /// checksumming its columns checks exactly the blocks a scan touches, once. A 1.3 reader
    /// skips the section; every 1.3 file is a valid 1.4 file.
    V1_4,
    /// 1.5: model files may carry a text head (stage kind 9, `text`, written OPTIONAL,
    /// FORMAT.md §4.3): a vocabulary with idf and the PAMIR matrix that scores text queries.
    /// A 1.4 reader skips it (and lists it as skipped); every 1.4 file is a valid 1.5 file.
    V1_5,
    /// 1.6: model files may carry their origin (stage kind 10, `origin`, written OPTIONAL,
    /// FORMAT.md §4.4): the training spec, seed and the step that learned each stage. A 1.5
    /// reader skips it; every 1.5 file is a valid 1.6 file.
    /// Also in 1.6: model files may hold a `hom` stage (stage kind 11, REQUIRED, FORMAT.md
    /// §1.2): the explicit χ² / intersection kernel map. A 1.5 reader refuses such a model (an
    /// unknown required stage).
    /// Also in 1.6: model files may carry a coarse quantiser (stage kind 12, `ivf`, REQUIRED,
    /// FORMAT.md §4.5) right before an 8-bit PQ stage that then encodes residuals; such an
    /// index's list column holds each row's k-means list. A 1.5 reader refuses such a model (an
    /// unknown required stage).
    /// Also in 1.6: binary segments may carry multi-index hashing tables (optional section 10,
    /// `mih`, FORMAT.md §3.6); a 1.5 reader skips the section and scans linearly.
    V1_6,
    /// 1.7: attribute columns (FORMAT.md §3.7, §7.4, §10.2): segments may carry the rows'
    /// typed attribute values (section 11, `attributes`, REQUIRED), append-log records the
    /// same bytes (record flag bit 3), and manifests the index's schema (section 69,
    /// `attribute_schema`, REQUIRED). A 1.6 reader refuses such files (an unknown required
    /// section, a reserved record flag); every 1.6 file is a valid 1.7 file.
    V1_7,
    /// 1.8: segments with attribute columns store their tag postings and zone maps (optional
    /// sections 12 `attribute_postings` and 13 `attribute_zones`, FORMAT.md §3.8), so opening
    /// one reads them instead of rebuilding them. A 1.7 reader skips the sections and builds
    /// the same indexes in memory; every 1.7 file is a valid 1.8 file.
    V1_8,
}

impl FormatVersion {
    /// The version this build writes.
    pub const CURRENT: FormatVersion = FormatVersion::V1_8;
    /// Major version this build reads and writes; any other major is refused.
    pub const MAJOR: u16 = 1;
    /// Newest minor version this build understands.
    pub const MINOR: u16 = 8;

    /// The `(major, minor)` numbers stored in the header.
    pub fn numbers(self) -> (u16, u16) {
        match self {
            FormatVersion::V1_0 => (1, 0),
            FormatVersion::V1_1 => (1, 1),
            FormatVersion::V1_2 => (1, 2),
            FormatVersion::V1_3 => (1, 3),
            FormatVersion::V1_4 => (1, 4),
            FormatVersion::V1_5 => (1, 5),
            FormatVersion::V1_6 => (1, 6),
            FormatVersion::V1_7 => (1, 7),
            FormatVersion::V1_8 => (1, 8),
        }
    }
}

/// What a file holds. Stored as a `u16` at header offset 12.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum FileKind {
    /// An immutable segment of codes, ids and optional vectors (FORMAT.md §3).
    Segment = 1,
    /// A trained model: the stages that turn descriptors into codes (FORMAT.md §4).
    Model = 2,
    /// Class means and counts, full or as a delta (FORMAT.md §5).
    ClassTable = 3,
    /// The deleted rows of one segment (FORMAT.md §6).
    DeletionBitmap = 4,
    /// One committed version of an index: its segments, model and class table (FORMAT.md §7).
    Manifest = 5,
    /// The active segment's append log (FORMAT.md §10): header, log meta, checksummed batches.
    /// The only kind that is not a sectioned container and the only file that grows.
    AppendLog = 6,
}

impl FileKind {
    /// Every kind, in numeric order.
    pub const ALL: [FileKind; 6] = [
        FileKind::Segment,
        FileKind::Model,
        FileKind::ClassTable,
        FileKind::DeletionBitmap,
        FileKind::Manifest,
        FileKind::AppendLog,
    ];

    /// The kind stored as `v`, or `None` for an unknown number.
    pub fn from_u16(v: u16) -> Option<FileKind> {
        FileKind::ALL.into_iter().find(|k| *k as u16 == v)
    }

    /// Human-readable name used in messages and `inspect` output.
    pub fn name(self) -> &'static str {
        match self {
            FileKind::Segment => "segment",
            FileKind::Model => "model",
            FileKind::ClassTable => "class table",
            FileKind::DeletionBitmap => "deletion bitmap",
            FileKind::Manifest => "manifest",
            FileKind::AppendLog => "append log",
        }
    }
}

/// How a section's stored bytes are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Codec {
    /// Stored as is.
    None = 0,
    /// zstd frame; only allowed for sections the spec marks compressible (stored vectors).
    Zstd = 1,
}

impl Codec {
    /// The codec stored as `v`, or `None` for an unknown number.
    pub fn from_u8(v: u8) -> Option<Codec> {
        match v {
            0 => Some(Codec::None),
            1 => Some(Codec::Zstd),
            _ => None,
        }
    }
    /// Human-readable name used in messages and `inspect` output.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Zstd => "zstd",
        }
    }
}

/// The checksum algorithm byte stored beside every checksum, so the algorithm can change in a
/// later version without changing the layout.
pub const CHECKSUM_CRC32: u8 = 1;

/// Section flag: a reader that does not know this section kind must refuse the file.
pub const SECTION_REQUIRED: u32 = 1;

/// The globally unique identity of a file, written in its header. Manifests, segments and
/// deletion bitmaps refer to each other by it, so `verify` can tell a swapped file from the
/// right one even when names match.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub [u8; 16]);

impl FileId {
    /// The all-zero id, meaning "none" where a reference is optional.
    pub const ZERO: FileId = FileId([0; 16]);

    /// A fresh id: time, process id and a process-wide counter, mixed by SplitMix64. Unique in
    /// practice; not a security token.
    pub fn generate() -> FileId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let c = COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id() as u64;
        let a = splitmix64(nanos ^ splitmix64(pid));
        let b = splitmix64(a ^ c.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&a.to_le_bytes());
        out[8..].copy_from_slice(&b.to_le_bytes());
        FileId(out)
    }

    /// A fixed id (golden files, tests).
    pub fn from_u128(v: u128) -> FileId {
        FileId(v.to_be_bytes())
    }

    /// The 32 lowercase hex digits of the id.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// True for [`FileId::ZERO`].
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl std::fmt::Debug for FileId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileId({})", self.to_hex())
    }
}

impl std::fmt::Display for FileId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The decoded 64-byte header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Format major version the file was written with.
    pub major: u16,
    /// Format minor version the file was written with.
    pub minor: u16,
    /// What the file holds.
    pub kind: FileKind,
    /// The file's unique identity.
    pub file_id: FileId,
}

impl Header {
    /// Encodes the header, its CRC32 in the last four bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut w = LeWriter::new();
        w.bytes(&MAGIC)
            .u16(self.major)
            .u16(self.minor)
            .u16(self.kind as u16)
            .u16(0)
            .bytes(&self.file_id.0)
            .zeros(24)
            .u8(CHECKSUM_CRC32)
            .zeros(3);
        let crc = crc32fast::hash(&w.buf);
        w.u32(crc);
        let mut out = [0u8; HEADER_LEN];
        out.copy_from_slice(&w.buf);
        out
    }

    /// Decodes and validates a header: magic, checksum, version, kind.
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Header> {
        if bytes.len() < HEADER_LEN {
            if bytes.len() < 8 || bytes[..8] != MAGIC {
                return Err(FormatError::BadMagic {
                    path: path.to_path_buf(),
                });
            }
            return Err(FormatError::Truncated {
                path: path.to_path_buf(),
                section: "header".into(),
                detail: format!("file is {} bytes, header needs {HEADER_LEN}", bytes.len()),
            });
        }
        let h = &bytes[..HEADER_LEN];
        if h[..8] != MAGIC {
            return Err(FormatError::BadMagic {
                path: path.to_path_buf(),
            });
        }
        let mut r = LeReader::new(h, path, "header");
        r.take(8)?;
        let major = r.u16()?;
        let minor = r.u16()?;
        let kind = r.u16()?;
        let flags = r.u16()?;
        let file_id = FileId(r.array()?);
        let reserved = r.take(24)?;
        let cks_type = r.u8()?;
        let reserved2 = r.take(3)?;
        let crc = r.u32()?;
        // Version before checksum: a future version may lay the header out differently, and the
        // user must hear "unsupported version", not "checksum mismatch".
        if major != FormatVersion::MAJOR {
            return Err(FormatError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: (major, minor),
                supported: (FormatVersion::MAJOR, FormatVersion::MINOR),
            });
        }
        if cks_type != CHECKSUM_CRC32 {
            return Err(r.corrupt(format!("unknown checksum type {cks_type}")));
        }
        if crc32fast::hash(&h[..60]) != crc {
            return Err(FormatError::ChecksumMismatch {
                path: path.to_path_buf(),
                section: "header".into(),
            });
        }
        if flags != 0 || reserved.iter().chain(reserved2).any(|&b| b != 0) {
            return Err(r.corrupt("reserved header bytes are not zero"));
        }
        let kind = FileKind::from_u16(kind).ok_or_else(|| FormatError::WrongKind {
            path: path.to_path_buf(),
            expected: "a known file kind",
            found: format!("kind {kind}"),
        })?;
        Ok(Header {
            major,
            minor,
            kind,
            file_id,
        })
    }
}

/// One row of the section table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionEntry {
    /// Section kind number (see `section_kind`).
    pub kind: u32,
    /// Section flags; bit 0 (value 1) marks a section a reader must understand.
    pub flags: u32,
    /// Byte offset of the section from the start of the file, a multiple of 64.
    pub offset: u64,
    /// Length of the stored (possibly compressed) bytes.
    pub stored_len: u64,
    /// Length after decoding; equals `stored_len` for [`Codec::None`].
    pub raw_len: u64,
    /// How the stored bytes are encoded.
    pub codec: Codec,
    /// Checksum algorithm of `crc32` (1: CRC32).
    pub checksum_type: u8,
    /// CRC32 (IEEE) of the stored bytes.
    pub crc32: u32,
}

impl SectionEntry {
    /// True when a reader that does not know this kind must refuse the file.
    pub fn required(&self) -> bool {
        self.flags & SECTION_REQUIRED != 0
    }

    pub(crate) fn encode(&self, w: &mut LeWriter) {
        w.u32(self.kind)
            .u32(self.flags)
            .u64(self.offset)
            .u64(self.stored_len)
            .u64(self.raw_len)
            .u8(self.codec as u8)
            .u8(self.checksum_type)
            .u16(0)
            .u32(self.crc32)
            .u64(0);
    }

    pub(crate) fn decode(r: &mut LeReader<'_>, index: usize) -> Result<SectionEntry> {
        let kind = r.u32()?;
        let flags = r.u32()?;
        let offset = r.u64()?;
        let stored_len = r.u64()?;
        let raw_len = r.u64()?;
        let codec_byte = r.u8()?;
        let checksum_type = r.u8()?;
        r.zeros(2, &format!("entry {index} reserved"))?;
        let crc32 = r.u32()?;
        r.zeros(8, &format!("entry {index} reserved"))?;
        let codec = Codec::from_u8(codec_byte)
            .ok_or_else(|| r.corrupt(format!("entry {index}: unknown codec {codec_byte}")))?;
        if checksum_type != CHECKSUM_CRC32 {
            return Err(r.corrupt(format!(
                "entry {index}: unknown checksum type {checksum_type}"
            )));
        }
        if flags & !SECTION_REQUIRED != 0 {
            return Err(r.corrupt(format!("entry {index}: unknown flags {flags:#x}")));
        }
        if codec == Codec::None && raw_len != stored_len {
            return Err(r.corrupt(format!(
                "entry {index}: raw length {raw_len} != stored length {stored_len} without a codec"
            )));
        }
        Ok(SectionEntry {
            kind,
            flags,
            offset,
            stored_len,
            raw_len,
            codec,
            checksum_type,
            crc32,
        })
    }
}

/// Rounds `v` up to the section alignment.
pub fn align_up(v: u64) -> Option<u64> {
    v.checked_add(SECTION_ALIGN - 1)
        .map(|x| x / SECTION_ALIGN * SECTION_ALIGN)
}
