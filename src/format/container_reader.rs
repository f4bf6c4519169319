//! Validating reader of the container. Nothing read from disk is trusted: the header checksum,
//! the trailer checksum over the section table, and the exact tiling of the file by its sections
//! (each at the next 64-byte boundary, zero padding, no gaps, no overlap, no trailing bytes) are
//! all checked before any section is handed out. Section checksums are checked per section, so a
//! caller may defer the O(file) work for large columns (see [`ChecksumPolicy`]).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::container::{
    Codec, END_MAGIC, FileKind, FormatVersion, HEADER_LEN, Header, SECTION_ENTRY_LEN, TRAILER_LEN,
    align_up,
};
use super::error::{FormatError, Result};
use super::file_bytes::{FileBytes, LoadMode};
use super::le::{LeReader, to_usize};
use super::section_kind;

/// Largest raw/stored size ratio a compressed section may claim. Writers store a section
/// uncompressed rather than exceed it, so a reader can refuse a "decompression bomb" before it
/// allocates anything.
pub const MAX_ZSTD_RATIO: u64 = 4096;

/// Which section checksums a reader checks when it opens a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumPolicy {
    /// Check every section's CRC32 on open (default): an `Ok` never carries bytes that differ
    /// from what was written.
    #[default]
    All,
    /// Check header, section table and every small section, but not the large row columns of a
    /// segment (ids, codes, labels, lists, vectors): opening a multi-GB segment stays O(1).
    /// `codedb verify` (or [`Container::verify_all`]) checks the rest.
    SkipColumns,
}

/// A parsed, structurally valid container.
pub struct Container {
    bytes: FileBytes,
    path: PathBuf,
    header: Header,
    entries: Vec<super::container::SectionEntry>,
}

impl std::fmt::Debug for Container {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Container")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("sections", &self.entries.len())
            .finish()
    }
}

impl Container {
    /// Opens and structurally validates the file at `path`.
    pub fn open(path: &Path, mode: LoadMode, expect: Option<FileKind>) -> Result<Container> {
        let bytes = FileBytes::open(path, mode)?;
        Container::parse(bytes, path, expect)
    }

    /// Parses bytes already in memory; `path` only names them in errors.
    pub fn from_slice(bytes: &[u8], path: &Path, expect: Option<FileKind>) -> Result<Container> {
        Container::parse(FileBytes::from_slice(bytes), path, expect)
    }

    fn parse(bytes: FileBytes, path: &Path, expect: Option<FileKind>) -> Result<Container> {
        let b = bytes.as_bytes();
        let header = Header::decode(b, path)?;
        if let Some(want) = expect
            && header.kind != want
        {
            return Err(FormatError::WrongKind {
                path: path.to_path_buf(),
                expected: want.name(),
                found: header.kind.name().to_string(),
            });
        }
        let entries = parse_footer(b, path, header.kind)?;
        // Newer minor versions are readable only if this build knows all required sections.
        for e in &entries {
            if e.required() && section_kind::name(header.kind, e.kind).is_none() {
                return Err(FormatError::UnknownRequiredSection {
                    path: path.to_path_buf(),
                    section: section_kind::label(header.kind, e.kind),
                });
            }
            if e.codec != Codec::None && !section_kind::compressible(header.kind, e.kind) {
                return Err(FormatError::Corrupt {
                    path: path.to_path_buf(),
                    section: section_kind::label(header.kind, e.kind),
                    detail: format!("codec {} is not allowed for this section", e.codec.name()),
                });
            }
        }
        Ok(Container {
            bytes,
            path: path.to_path_buf(),
            header,
            entries,
        })
    }

    /// The file the container was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// The decoded header.
    pub fn header(&self) -> &Header {
        &self.header
    }
    /// The section table.
    pub fn entries(&self) -> &[super::container::SectionEntry] {
        &self.entries
    }
    /// Length of the file in bytes.
    pub fn file_len(&self) -> u64 {
        self.bytes.as_bytes().len() as u64
    }
    /// True when the file is memory-mapped rather than read into memory.
    pub fn is_mapped(&self) -> bool {
        self.bytes.is_mapped()
    }

    /// A label for section `i` in messages.
    pub fn label(&self, i: usize) -> String {
        let kind = self.entries.get(i).map(|e| e.kind).unwrap_or(0);
        section_kind::label(self.header.kind, kind)
    }

    /// Index of the only section of `kind`; an error if it appears more than once, `None` if
    /// absent.
    pub fn find_one(&self, kind: u32) -> Result<Option<usize>> {
        let mut it = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == kind);
        let first = it.next().map(|(i, _)| i);
        if it.next().is_some() {
            return Err(self.corrupt(
                &section_kind::label(self.header.kind, kind),
                "section appears more than once",
            ));
        }
        Ok(first)
    }

    /// Index of the only section of `kind`, which must be present.
    pub fn require(&self, kind: u32) -> Result<usize> {
        self.find_one(kind)?.ok_or_else(|| {
            self.corrupt(
                &section_kind::label(self.header.kind, kind),
                "required section is missing",
            )
        })
    }

    /// Indices of all sections of `kind`, in file order.
    pub fn find_all(&self, kind: u32) -> Vec<usize> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == kind)
            .map(|(i, _)| i)
            .collect()
    }

    /// Stored bytes of section `i` (compressed if its codec says so). Not checksum-checked.
    pub fn stored(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        // Offsets and lengths were validated against the file length in `parse_footer`.
        &self.bytes.as_bytes()[e.offset as usize..(e.offset + e.stored_len) as usize]
    }

    /// Checks section `i`'s CRC32.
    pub fn verify_section(&self, i: usize) -> Result<()> {
        let e = &self.entries[i];
        if crc32fast::hash(self.stored(i)) != e.crc32 {
            return Err(FormatError::ChecksumMismatch {
                path: self.path.clone(),
                section: self.label(i),
            });
        }
        Ok(())
    }

    /// Checks every section's CRC32, calling `progress(bytes)` after each section.
    pub fn verify_all(&self, mut progress: impl FnMut(u64)) -> Result<()> {
        for i in 0..self.entries.len() {
            self.verify_section(i)?;
            progress(self.entries[i].stored_len);
        }
        Ok(())
    }

    /// The decoded bytes of section `i`: a borrowed view for uncompressed sections, an owned
    /// buffer for compressed ones (never larger than the declared raw length).
    pub fn decoded(&self, i: usize) -> Result<Cow<'_, [u8]>> {
        let e = self.entries[i];
        match e.codec {
            Codec::None => Ok(Cow::Borrowed(self.stored(i))),
            Codec::Zstd => {
                use std::io::Read;
                let label = self.label(i);
                let raw = to_usize(e.raw_len, &self.path, &label, "raw length")?;
                if e.raw_len > e.stored_len.saturating_mul(MAX_ZSTD_RATIO) {
                    return Err(self.corrupt(
                        &label,
                        &format!(
                            "claims {} raw bytes from {} stored (ratio above {MAX_ZSTD_RATIO}:1)",
                            e.raw_len, e.stored_len
                        ),
                    ));
                }
                // Streamed, without pre-allocating the claimed size: memory grows only with
                // output the data really decodes to, and stops one byte past the claim.
                let mut out = Vec::new();
                let undecodable = |source| FormatError::Decompress {
                    path: self.path.clone(),
                    section: label.clone(),
                    source,
                };
                let decoder =
                    zstd::stream::read::Decoder::new(self.stored(i)).map_err(undecodable)?;
                decoder
                    .take(e.raw_len.saturating_add(1))
                    .read_to_end(&mut out)
                    .map_err(undecodable)?;
                if out.len() != raw {
                    return Err(self.corrupt(
                        &label,
                        &format!("decodes to {} bytes, table says {raw}", out.len()),
                    ));
                }
                Ok(Cow::Owned(out))
            }
        }
    }

    /// A [`FormatError::Corrupt`] naming this file and `section`.
    pub fn corrupt(&self, section: &str, detail: &str) -> FormatError {
        FormatError::Corrupt {
            path: self.path.clone(),
            section: section.to_string(),
            detail: detail.to_string(),
        }
    }

    /// The format version the file was written with.
    pub fn version(&self) -> (u16, u16) {
        (self.header.major, self.header.minor)
    }

    /// Whether this file was written by a newer minor version than this build's.
    pub fn is_newer_minor(&self) -> bool {
        self.header.minor > FormatVersion::MINOR
    }
}

/// Parses the trailer and the section table and checks the tiling of the whole file.
fn parse_footer(
    b: &[u8],
    path: &Path,
    kind: FileKind,
) -> Result<Vec<super::container::SectionEntry>> {
    let len = b.len() as u64;
    let min = (HEADER_LEN + TRAILER_LEN) as u64;
    if len < min {
        return Err(FormatError::Truncated {
            path: path.to_path_buf(),
            section: "trailer".into(),
            detail: format!("file is {len} bytes, the smallest valid file is {min}"),
        });
    }
    let trailer = &b[b.len() - TRAILER_LEN..];
    if trailer[16..24] != END_MAGIC {
        return Err(FormatError::Truncated {
            path: path.to_path_buf(),
            section: "trailer".into(),
            detail: "end marker missing (file cut short or overwritten)".into(),
        });
    }
    let mut r = LeReader::new(trailer, path, "trailer");
    let table_offset = r.u64()?;
    let count = r.u32()?;
    let cks_type = r.u8()?;
    r.zeros(3, "reserved")?;
    r.take(8)?; // end magic, checked above
    r.zeros(4, "reserved")?;
    let crc = r.u32()?;
    if cks_type != super::container::CHECKSUM_CRC32 {
        return Err(r.corrupt(format!("unknown checksum type {cks_type}")));
    }
    let table_len = (count as u64) * SECTION_ENTRY_LEN as u64;
    let table_end = len - TRAILER_LEN as u64;
    if table_offset < HEADER_LEN as u64
        || table_offset > table_end
        || table_end - table_offset != table_len
    {
        return Err(FormatError::Corrupt {
            path: path.to_path_buf(),
            section: "trailer".into(),
            detail: format!(
                "section table at {table_offset} with {count} entries does not end where the \
                 trailer starts ({table_end})"
            ),
        });
    }
    let table = &b[table_offset as usize..table_end as usize];
    let mut h = crc32fast::Hasher::new();
    h.update(table);
    h.update(&trailer[..28]);
    if h.finalize() != crc {
        return Err(FormatError::ChecksumMismatch {
            path: path.to_path_buf(),
            section: "section table".into(),
        });
    }
    let mut r = LeReader::new(table, path, "section table");
    let mut entries = Vec::with_capacity(count as usize);
    let mut expected = HEADER_LEN as u64;
    for i in 0..count as usize {
        let e = super::container::SectionEntry::decode(&mut r, i)?;
        let name = section_kind::label(kind, e.kind);
        let start = align_up(expected).unwrap_or(u64::MAX);
        if e.offset != start {
            return Err(FormatError::Corrupt {
                path: path.to_path_buf(),
                section: name,
                detail: format!("starts at {}, expected {start}", e.offset),
            });
        }
        let end = e
            .offset
            .checked_add(e.stored_len)
            .filter(|&end| end <= table_offset)
            .ok_or_else(|| FormatError::Corrupt {
                path: path.to_path_buf(),
                section: name.clone(),
                detail: format!(
                    "{} bytes at {} run past the section table at {table_offset}",
                    e.stored_len, e.offset
                ),
            })?;
        check_zero_padding(b, expected, e.offset, path, &name)?;
        expected = end;
        entries.push(e);
    }
    r.finish()?;
    let table_start = align_up(expected).unwrap_or(u64::MAX);
    if table_start != table_offset {
        return Err(FormatError::Corrupt {
            path: path.to_path_buf(),
            section: "section table".into(),
            detail: format!("starts at {table_offset}, expected {table_start}"),
        });
    }
    check_zero_padding(b, expected, table_offset, path, "section table")?;
    Ok(entries)
}

fn check_zero_padding(b: &[u8], from: u64, to: u64, path: &Path, before: &str) -> Result<()> {
    if b[from as usize..to as usize].iter().any(|&x| x != 0) {
        return Err(FormatError::Corrupt {
            path: path.to_path_buf(),
            section: format!("padding before {before}"),
            detail: "alignment padding is not zero".into(),
        });
    }
    Ok(())
}
