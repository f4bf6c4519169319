//! Manifests (FORMAT.md §7): one file per index version, the single source of truth of what
//! the version contains — the model, the live segments with their deletion bitmaps, the class
//! table and its deltas, and (§10.4) the active append log with its committed length.
//!
//! The active log lives beside [`Manifest`] as an [`ActiveLogEntry`] rather than inside it, and
//! its section is written only when the index has an active log: a manifest without one keeps
//! exactly the bytes of the golden 1.0 files.

use super::attribute_columns::{self, Schema};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use super::append_log::LOG_DATA_START;
use super::container::{FileId, FileKind};
use super::container_reader::Container;
use super::container_writer::ContainerWriter;
use super::error::{FormatError, Result};
use super::le::{LeReader, LeWriter, checked_mul};
use super::section_kind::{
    MAN_ACTIVE_LOG, MAN_ATTRIBUTE_SCHEMA, MAN_CLASS_FILES, MAN_SEGMENTS, MAN_STRINGS, MAN_VECTORS,
    META,
};
use super::segment_meta::VectorDType;
use super::segment_vectors::VectorSpec;

/// A file named by a manifest: its identity and its name inside the index directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// The referenced file's header id; `verify` checks the named file carries it.
    pub id: FileId,
    /// The file's name inside the index directory (a plain name: no separators, no `..`, no control characters).
    pub name: String,
}

/// One segment of a version: the segment and the rows this version deletes from it (FORMAT.md §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentEntry {
    /// The segment file.
    pub segment: FileRef,
    /// Rows stored in the segment.
    pub rows: u64,
    /// Rows of this segment deleted in this version.
    pub deleted: u64,
    /// The deletion bitmap, when any row is deleted.
    pub deletions: Option<FileRef>,
}

/// One class-table file of a version (FORMAT.md §7.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassFileEntry {
    /// The class-table file.
    pub file: FileRef,
    /// A delta (applied in order on top of the base table) rather than the base table.
    pub delta: bool,
}

/// One committed version of an index (FORMAT.md §7): everything a reader needs to pin it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The manifest's own file id.
    pub file_id: FileId,
    /// Version number, one more than the version it was committed on (FORMAT.md §11.2).
    pub version: u64,
    /// Commit time in milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// The next id handed out to rows added without an explicit id.
    pub next_auto_id: u64,
    /// The model every segment of this version was encoded with.
    pub model: FileRef,
    /// The sealed segments, in the order their rows are numbered.
    pub segments: Vec<SegmentEntry>,
    /// The base class table first (if any), then its deltas in order.
    pub class_files: Vec<ClassFileEntry>,
    /// The vectors every row of the index stores beside its code (format 1.1, §7.3), fixed
    /// when the index is created; `None`: the index stores none.
    pub vectors: Option<VectorSpec>,
    /// The index's attribute columns: names, types and defaults (format 1.7, §7.4), fixed
    /// when the index is created, grown by `Index::add_column`; empty: no columns.
    pub attributes: Schema,
}

/// The active append log of a version (FORMAT.md §10.4): rows not yet sealed into a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveLogEntry {
    /// The append-log file.
    pub log: FileRef,
    /// Bytes of the log that belong to this version (header and meta included); the records
    /// tile `[128, committed_len)` exactly.
    pub committed_len: u64,
    /// Rows in the committed records.
    pub rows: u64,
    /// Rows of the log deleted in this version.
    pub deleted: u64,
    /// The log's deletion bitmap (its segment id is the log's file id); it may cover fewer rows
    /// than the log has: rows past the bitmap are not deleted.
    pub deletions: Option<FileRef>,
}

const SEGMENT_RECORD_LEN: u64 = 64;
const CLASS_RECORD_LEN: u64 = 32;
const ACTIVE_LOG_LEN: usize = 80;
const VECTORS_LEN: usize = 16;

/// Whether `name` is a plain file name inside the index directory (no separators, no `..`,
/// no control characters): a manifest can never make codedb touch a file outside its index.
pub fn valid_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

impl Manifest {
    /// Live rows: stored rows minus deleted rows.
    pub fn live_rows(&self) -> u64 {
        (self.segments.iter()).fold(0, |a, s| a.saturating_add(s.rows.saturating_sub(s.deleted)))
    }

    /// Deleted rows summed over the segments (the active log not included).
    pub fn deleted_rows(&self) -> u64 {
        (self.segments.iter()).fold(0, |a, s| a.saturating_add(s.deleted))
    }

    fn validate(&self, log: Option<&ActiveLogEntry>, path: &Path, section: &str) -> Result<()> {
        let bad = |detail: String| FormatError::Corrupt {
            path: path.to_path_buf(),
            section: section.to_string(),
            detail,
        };
        let mut names = HashSet::new();
        let mut ids = HashSet::new();
        let mut check = |f: &FileRef, what: &str| -> Result<()> {
            if !valid_file_name(&f.name) {
                return Err(bad(format!("{what}: invalid file name {:?}", f.name)));
            }
            if !names.insert(f.name.clone()) || !ids.insert(f.id) {
                return Err(bad(format!("{what}: file {:?} is listed twice", f.name)));
            }
            Ok(())
        };
        check(&self.model, "model")?;
        let mut total = 0u64;
        for s in &self.segments {
            total = total
                .checked_add(s.rows)
                .ok_or_else(|| bad("segment row counts add up past 2^64".into()))?;
        }
        for (i, s) in self.segments.iter().enumerate() {
            check(&s.segment, &format!("segment {i}"))?;
            if s.deleted > s.rows {
                return Err(bad(format!(
                    "segment {i}: {} deleted of {} rows",
                    s.deleted, s.rows
                )));
            }
            match &s.deletions {
                Some(d) => check(d, &format!("segment {i} deletions"))?,
                None if s.deleted != 0 => {
                    return Err(bad(format!("segment {i}: deleted rows without a bitmap")));
                }
                None => {}
            }
        }
        for (i, c) in self.class_files.iter().enumerate() {
            check(&c.file, &format!("class file {i}"))?;
            if c.delta == (i == 0) {
                return Err(bad(format!(
                    "class file {i}: the base table must come first, then only deltas"
                )));
            }
        }
        if let Some(l) = log {
            check(&l.log, "active log")?;
            if l.rows == 0 || l.committed_len <= LOG_DATA_START {
                return Err(bad(format!(
                    "active log: {} rows in {} committed bytes (an active log holds rows)",
                    l.rows, l.committed_len
                )));
            }
            if l.deleted > l.rows {
                return Err(bad(format!(
                    "active log: {} deleted of {} rows",
                    l.deleted, l.rows
                )));
            }
            match &l.deletions {
                Some(d) => check(d, "active log deletions")?,
                None if l.deleted != 0 => {
                    return Err(bad("active log: deleted rows without a bitmap".into()));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Live rows including an active log's.
    pub fn live_rows_with(&self, log: Option<&ActiveLogEntry>) -> u64 {
        self.live_rows() + log.map_or(0, |l| l.rows - l.deleted)
    }

    /// Deleted rows still stored, including an active log's.
    pub fn deleted_rows_with(&self, log: Option<&ActiveLogEntry>) -> u64 {
        self.deleted_rows() + log.map_or(0, |l| l.deleted)
    }

    /// Writes a manifest without an active log (the §10.4 section is omitted).
    pub fn write_to<W: Write>(&self, out: W, path: &Path) -> Result<W> {
        self.write_with_log_to(None, out, path)
    }

    /// Writes the manifest and, when `log` is given, its active-log section (§10.4).
    pub fn write_with_log_to<W: Write>(
        &self,
        log: Option<&ActiveLogEntry>,
        out: W,
        path: &Path,
    ) -> Result<W> {
        self.validate(log, path, "manifest")?;
        let mut strings = Vec::new();
        let mut add = |s: &str| -> (u32, u32) {
            let off = strings.len() as u32;
            strings.extend_from_slice(s.as_bytes());
            (off, s.len() as u32)
        };
        let (mo, ml) = add(&self.model.name);
        let mut segs = LeWriter::new();
        for s in &self.segments {
            let (so, sl) = add(&s.segment.name);
            let (d_id, (dof, dl)) = match &s.deletions {
                Some(d) => (d.id, add(&d.name)),
                None => (FileId::ZERO, (0, 0)),
            };
            segs.bytes(&s.segment.id.0)
                .u64(s.rows)
                .u64(s.deleted)
                .u32(so)
                .u32(sl)
                .u32(dof)
                .u32(dl)
                .bytes(&d_id.0);
        }
        let mut cls = LeWriter::new();
        for c in &self.class_files {
            let (o, l) = add(&c.file.name);
            cls.bytes(&c.file.id.0)
                .u32(o)
                .u32(l)
                .u32(u32::from(c.delta))
                .u32(0);
        }
        let log_section = log.map(|l| {
            let (lo, ll) = add(&l.log.name);
            let (d_id, (dof, dl)) = match &l.deletions {
                Some(d) => (d.id, add(&d.name)),
                None => (FileId::ZERO, (0, 0)),
            };
            let mut w = LeWriter::new();
            w.bytes(&l.log.id.0)
                .u64(l.committed_len)
                .u64(l.rows)
                .u64(l.deleted)
                .u32(lo)
                .u32(ll)
                .u32(dof)
                .u32(dl)
                .bytes(&d_id.0)
                .zeros(8);
            debug_assert_eq!(w.buf.len(), ACTIVE_LOG_LEN);
            w.into_inner()
        });
        let mut m = LeWriter::new();
        m.u64(self.version)
            .u64(self.created_unix_ms)
            .u64(self.next_auto_id)
            .bytes(&self.model.id.0)
            .u32(mo)
            .u32(ml)
            .u32(self.segments.len() as u32)
            .u32(self.class_files.len() as u32)
            .zeros(8);
        let mut w = ContainerWriter::new(out, FileKind::Manifest, self.file_id, path)?;
        w.section(META, true, &m.buf)?;
        w.section(MAN_STRINGS, true, &strings)?;
        w.section(MAN_SEGMENTS, true, &segs.buf)?;
        w.section(MAN_CLASS_FILES, true, &cls.buf)?;
        if let Some(bytes) = &log_section {
            w.section(MAN_ACTIVE_LOG, true, bytes)?;
        }
        if let Some(v) = self.vectors {
            let mut b = LeWriter::new();
            b.u8(v.dtype as u8).zeros(3).u32(v.dim).zeros(8);
            debug_assert_eq!(b.buf.len(), VECTORS_LEN);
            w.section(MAN_VECTORS, true, &b.buf)?;
        }
        if !self.attributes.is_empty() {
            let b = attribute_columns::encode_schema(&self.attributes)
                .map_err(|e| attribute_columns::invalid(path, e))?;
            w.section(MAN_ATTRIBUTE_SCHEMA, true, &b)?;
        }
        w.finish()
    }

    /// Serialises a manifest without an active log into a byte vector.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.write_to(Vec::new(), Path::new("<memory>"))
    }

    /// Serialises a manifest and its active log entry, if any, into a byte vector.
    pub fn to_bytes_with_log(&self, log: Option<&ActiveLogEntry>) -> Result<Vec<u8>> {
        self.write_with_log_to(log, Vec::new(), Path::new("<memory>"))
    }

    /// Reads a manifest. Its active log, if any, is validated but not returned: use
    /// [`Manifest::open_with_log`] wherever the log's rows matter.
    pub fn open(path: &Path) -> Result<Manifest> {
        Ok(Manifest::open_with_log(path)?.0)
    }

    /// Reads a manifest and its active log entry (FORMAT.md §10.4).
    pub fn open_with_log(path: &Path) -> Result<(Manifest, Option<ActiveLogEntry>)> {
        let c = Container::open(
            path,
            super::file_bytes::LoadMode::Read,
            Some(FileKind::Manifest),
        )?;
        Manifest::from_container_with_log(&c)
    }

    /// Parses a manifest from bytes in memory, dropping its active log entry (see [`Manifest::open`]).
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Manifest> {
        Ok(Manifest::from_bytes_with_log(bytes, path)?.0)
    }

    /// Parses a manifest and its active log entry from bytes in memory.
    pub fn from_bytes_with_log(
        bytes: &[u8],
        path: &Path,
    ) -> Result<(Manifest, Option<ActiveLogEntry>)> {
        let c = Container::from_slice(bytes, path, Some(FileKind::Manifest))?;
        Manifest::from_container_with_log(&c)
    }

    /// Reads a manifest from an opened container, dropping its active log entry.
    pub fn from_container(c: &Container) -> Result<Manifest> {
        Ok(Manifest::from_container_with_log(c)?.0)
    }

    /// Reads a manifest and its active log entry from an opened container, checking every section.
    pub fn from_container_with_log(c: &Container) -> Result<(Manifest, Option<ActiveLogEntry>)> {
        c.verify_all(|_| {})?;
        let path = c.path();
        let mut r = LeReader::new(c.stored(c.require(META)?), path, "meta");
        let version = r.u64()?;
        let created_unix_ms = r.u64()?;
        let next_auto_id = r.u64()?;
        let model_id = FileId(r.array()?);
        let mo = r.u32()?;
        let ml = r.u32()?;
        let nseg = r.u32()? as u64;
        let ncls = r.u32()? as u64;
        r.zeros(8, "reserved")?;
        if !c.is_newer_minor() {
            r.finish()?;
        }
        let names = Names {
            c,
            bytes: c.stored(c.require(MAN_STRINGS)?),
            next: std::cell::Cell::new(0),
        };
        let model = FileRef {
            id: model_id,
            name: names.take(mo, ml, "model")?,
        };
        let segments = read_segments(c, nseg, &names)?;
        let class_files = read_class_files(c, ncls, &names)?;
        let vectors = read_vectors(c)?;
        let attributes = read_attribute_schema(c)?;
        let active_log = read_active_log(c, &names)?;
        if names.next.get() != names.bytes.len() {
            return Err(c.corrupt("strings", "string bytes not all referenced"));
        }
        let m = Manifest {
            file_id: c.header().file_id,
            version,
            created_unix_ms,
            next_auto_id,
            model,
            segments,
            class_files,
            vectors,
            attributes,
        };
        m.validate(active_log.as_ref(), path, "manifest")?;
        Ok((m, active_log))
    }
}

/// The manifest's `strings` section as it is read (FORMAT.md §7.2). Names lie back to back in
/// the order the writer adds them (model, then per segment its name and bitmap name, then
/// class files, then the active log's): each must start where the previous ended, so no two
/// names overlap and no byte is unowned.
struct Names<'c> {
    c: &'c Container,
    bytes: &'c [u8],
    /// Where the next name must start.
    next: std::cell::Cell<usize>,
}

impl Names<'_> {
    /// The name at `off..off + len`, which must start where the previous one ended.
    fn take(&self, off: u32, len: u32, what: &str) -> Result<String> {
        let (off, len) = (off as usize, len as usize);
        if off != self.next.get() {
            return Err(self.c.corrupt(
                "strings",
                &format!("{what}: name at {off}, expected {}", self.next.get()),
            ));
        }
        self.next.set(off.saturating_add(len));
        self.bytes
            .get(off..off.saturating_add(len))
            .and_then(|b| std::str::from_utf8(b).ok())
            .map(str::to_string)
            .ok_or_else(|| {
                self.c
                    .corrupt("strings", &format!("{what}: name out of range"))
            })
    }

    /// A deletion bitmap's reference: none when its name length is 0 (then its offset and id
    /// must be zero too, or `section` is corrupt with `stray`), else the file `id` named at
    /// `off..off + len`.
    fn deletions(
        &self,
        (section, stray): (&str, &str),
        off: u32,
        len: u32,
        id: FileId,
        what: &str,
    ) -> Result<Option<FileRef>> {
        if len == 0 {
            if off != 0 || !id.is_zero() {
                return Err(self.c.corrupt(section, stray));
            }
            return Ok(None);
        }
        Ok(Some(FileRef {
            id,
            name: self.take(off, len, what)?,
        }))
    }
}

/// The `segments` section (FORMAT.md §7.2): `nseg` fixed-size records, each a segment, its row
/// and deleted counts and its deletion bitmap, if any.
fn read_segments(c: &Container, nseg: u64, names: &Names<'_>) -> Result<Vec<SegmentEntry>> {
    let path = c.path();
    let segs = c.stored(c.require(MAN_SEGMENTS)?);
    if segs.len() as u64 != checked_mul(nseg, SEGMENT_RECORD_LEN, path, "segments", "size")? {
        return Err(c.corrupt(
            "segments",
            &format!("length does not match {nseg} segments"),
        ));
    }
    let mut sr = LeReader::new(segs, path, "segments");
    let mut segments = Vec::with_capacity(nseg as usize);
    for i in 0..nseg {
        let id = FileId(sr.array()?);
        let rows = sr.u64()?;
        let deleted = sr.u64()?;
        let (so, sl) = (sr.u32()?, sr.u32()?);
        let (dof, dl) = (sr.u32()?, sr.u32()?);
        let did = FileId(sr.array()?);
        let name = names.take(so, sl, &format!("segment {i}"))?;
        let stray = format!("segment {i}: stray bitmap fields");
        let deletions = names.deletions(
            ("segments", &stray),
            dof,
            dl,
            did,
            &format!("segment {i} deletions"),
        )?;
        segments.push(SegmentEntry {
            segment: FileRef { id, name },
            rows,
            deleted,
            deletions,
        });
    }
    Ok(segments)
}

/// The `class_files` section (FORMAT.md §7.2): `ncls` records, each a class table file, full
/// (kind 0) or a delta (kind 1).
fn read_class_files(c: &Container, ncls: u64, names: &Names<'_>) -> Result<Vec<ClassFileEntry>> {
    let path = c.path();
    let cls = c.stored(c.require(MAN_CLASS_FILES)?);
    if cls.len() as u64 != checked_mul(ncls, CLASS_RECORD_LEN, path, "class_files", "size")? {
        return Err(c.corrupt(
            "class_files",
            &format!("length does not match {ncls} class files"),
        ));
    }
    let mut cr = LeReader::new(cls, path, "class_files");
    let mut class_files = Vec::with_capacity(ncls as usize);
    for i in 0..ncls {
        let id = FileId(cr.array()?);
        let (o, l) = (cr.u32()?, cr.u32()?);
        let kind = cr.u32()?;
        cr.zeros(4, "reserved")?;
        if kind > 1 {
            return Err(c.corrupt("class_files", &format!("class file {i}: kind {kind}")));
        }
        class_files.push(ClassFileEntry {
            file: FileRef {
                id,
                name: names.take(o, l, &format!("class file {i}"))?,
            },
            delta: kind == 1,
        });
    }
    Ok(class_files)
}

/// The optional `vectors` section (FORMAT.md §7.3): the stored vectors' type and dimension.
fn read_vectors(c: &Container) -> Result<Option<VectorSpec>> {
    let Some(i) = c.find_one(MAN_VECTORS)? else {
        return Ok(None);
    };
    let b = c.stored(i);
    if b.len() != VECTORS_LEN {
        return Err(c.corrupt(
            "vectors",
            &format!("{} bytes, expected {VECTORS_LEN}", b.len()),
        ));
    }
    let mut vr = LeReader::new(b, c.path(), "vectors");
    let t = vr.u8()?;
    vr.zeros(3, "reserved")?;
    let dim = vr.u32()?;
    vr.zeros(8, "reserved")?;
    let dtype = VectorDType::from_u8(t)
        .ok_or_else(|| c.corrupt("vectors", &format!("unknown vector type {t}")))?;
    if dim == 0 {
        return Err(c.corrupt("vectors", "dimension 0"));
    }
    Ok(Some(VectorSpec::new(dtype, dim)))
}

/// The `attribute_schema` section (FORMAT.md §7.4): the attribute columns' names and types;
/// none is an empty schema.
fn read_attribute_schema(c: &Container) -> Result<Schema> {
    let path = c.path();
    match c.find_one(MAN_ATTRIBUTE_SCHEMA)? {
        None => Ok(Schema::default()),
        // Kind 69 is unknown to 1.0-1.6, so a file that says so is read as they would.
        Some(_) if c.version() < (1, 7) => Err(FormatError::UnknownRequiredSection {
            path: path.to_path_buf(),
            section: format!("section kind {MAN_ATTRIBUTE_SCHEMA}"),
        }),
        Some(i) => {
            let s = attribute_columns::decode_schema(c.stored(i), path, "attribute_schema")?;
            if s.is_empty() {
                return Err(c.corrupt("attribute_schema", "a schema of no columns"));
            }
            Ok(s)
        }
    }
}

/// The optional `active_log` section (FORMAT.md §10.4): the append log rows are staged in,
/// its committed prefix, counts and deletion bitmap.
fn read_active_log(c: &Container, names: &Names<'_>) -> Result<Option<ActiveLogEntry>> {
    let Some(i) = c.find_one(MAN_ACTIVE_LOG)? else {
        return Ok(None);
    };
    let b = c.stored(i);
    if b.len() != ACTIVE_LOG_LEN {
        return Err(c.corrupt(
            "active_log",
            &format!("{} bytes, expected {ACTIVE_LOG_LEN}", b.len()),
        ));
    }
    let mut lr = LeReader::new(b, c.path(), "active_log");
    let id = FileId(lr.array()?);
    let committed_len = lr.u64()?;
    let rows = lr.u64()?;
    let deleted = lr.u64()?;
    let (lo, ll) = (lr.u32()?, lr.u32()?);
    let (dof, dl) = (lr.u32()?, lr.u32()?);
    let did = FileId(lr.array()?);
    lr.zeros(8, "reserved")?;
    let name = names.take(lo, ll, "active log")?;
    let deletions = names.deletions(
        ("active_log", "stray bitmap fields"),
        dof,
        dl,
        did,
        "active log deletions",
    )?;
    Ok(Some(ActiveLogEntry {
        log: FileRef { id, name },
        committed_len,
        rows,
        deleted,
        deletions,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fref(n: u128, prefix: &str) -> FileRef {
        FileRef {
            id: FileId::from_u128(n),
            name: format!("{prefix}-{n}"),
        }
    }

    fn manifest() -> Manifest {
        Manifest {
            file_id: FileId::from_u128(1),
            version: 3,
            created_unix_ms: 5,
            next_auto_id: 10,
            model: fref(2, "model"),
            segments: vec![SegmentEntry {
                segment: fref(3, "seg"),
                rows: 4,
                deleted: 1,
                deletions: Some(fref(4, "del")),
            }],
            class_files: vec![],
            vectors: None,
            attributes: Schema::default(),
        }
    }

    #[test]
    fn the_vectors_setting_round_trips_and_is_absent_without_one() {
        let plain = manifest();
        let with = Manifest {
            vectors: Some(VectorSpec::new(VectorDType::F16, 12)),
            ..manifest()
        };
        let b = with.to_bytes().unwrap();
        assert_eq!(Manifest::from_bytes(&b, Path::new("m")).unwrap(), with);
        let p = plain.to_bytes().unwrap();
        assert!(
            b.len() > p.len(),
            "the section is written only with vectors"
        );
        assert_eq!(
            Manifest::from_bytes(&p, Path::new("m")).unwrap().vectors,
            None
        );
    }

    #[test]
    fn the_active_log_section_round_trips_and_is_absent_without_a_log() {
        let m = manifest();
        let log = ActiveLogEntry {
            log: fref(5, "log"),
            committed_len: 400,
            rows: 7,
            deleted: 2,
            deletions: Some(fref(6, "del")),
        };
        let with = m.to_bytes_with_log(Some(&log)).unwrap();
        let (back, back_log) = Manifest::from_bytes_with_log(&with, Path::new("m")).unwrap();
        assert_eq!((back, back_log.as_ref()), (m.clone(), Some(&log)));
        assert_eq!(m.live_rows_with(Some(&log)), 3 + 5);
        assert_eq!(m.deleted_rows_with(Some(&log)), 3);
        let without = m.to_bytes().unwrap();
        assert_eq!(m.to_bytes_with_log(None).unwrap(), without);
        assert_eq!(
            Manifest::from_bytes_with_log(&without, Path::new("m")).unwrap(),
            (m, None)
        );
    }

    #[test]
    fn invalid_active_log_entries_are_refused() {
        let m = manifest();
        let good = ActiveLogEntry {
            log: fref(5, "log"),
            committed_len: 400,
            rows: 7,
            deleted: 0,
            deletions: None,
        };
        let cases = [
            ActiveLogEntry {
                rows: 0,
                ..good.clone()
            },
            ActiveLogEntry {
                committed_len: LOG_DATA_START,
                ..good.clone()
            },
            ActiveLogEntry {
                deleted: 8,
                deletions: Some(fref(6, "del")),
                ..good.clone()
            },
            ActiveLogEntry {
                deleted: 1,
                ..good.clone()
            },
            ActiveLogEntry {
                log: fref(3, "seg"),
                ..good.clone()
            },
            ActiveLogEntry {
                log: FileRef {
                    id: FileId::from_u128(9),
                    name: "../escape".into(),
                },
                ..good.clone()
            },
        ];
        for (i, bad) in cases.iter().enumerate() {
            assert!(m.to_bytes_with_log(Some(bad)).is_err(), "case {i}");
        }
    }
}
