//! `codedb verify`: reads every byte, checks every checksum and every cross-reference, and lists
//! each problem with the file and section it is in.
//!
//! For the newest version it also checks the index-wide invariants the writer keeps: no id is
//! live twice, and `next_auto_id` is above every stored id (so an assigned id never collides).
//! That check holds one u64 per live row in memory.
//!
//! An append log is judged by what says which of its bytes are committed. In an index, the
//! manifests do: damage inside a committed length is a problem, bytes past the newest one are a
//! crash tail (a note). Given on its own, nothing does, so every byte must belong to a whole,
//! valid record (FORMAT.md §10.3).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format::{
    ActiveLogEntry, ChecksumPolicy, ClassTable, Container, DeletionBitmap, FileKind, FormatError,
    Header, LoadMode, Manifest, ModelFile, SegmentEntry, SegmentMeta, SegmentReader, append_log,
};

use super::layout::{LOCK_FILE, RECOVERED_DIR, TMP_SUFFIX, list_manifests};
use super::loaded_version::read_manifest;
use super::recovery_report::recovery_records;
use super::shard_layout::{SHARD_CUT_FILE, SHARD_LAYOUT_FILE, read_shard_cut, read_shard_layout};

/// One thing wrong, with where it is.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Problem {
    /// The file the problem is in.
    pub path: PathBuf,
    /// Section, field or cross-reference the problem is in.
    pub section: String,
    /// What is wrong.
    pub message: String,
    /// The manifests of the index that name this file (empty for a file no manifest names, a
    /// manifest, or the directory): each problem is listed once, however many versions share
    /// the file.
    pub referenced_by: Vec<String>,
}

/// Something worth knowing that is not a problem (a log's crash tail).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Note {
    /// The file the note is about.
    pub path: PathBuf,
    /// What was found.
    pub message: String,
}

/// What `verify` checked and found: problems make the index unsound, notes do not.
#[derive(Debug, Clone, Serialize, Default)]
pub struct VerifyReport {
    /// Files checked.
    pub files_checked: usize,
    /// Bytes read and checked.
    pub bytes_checked: u64,
    /// Manifests read.
    pub manifests_checked: usize,
    /// Everything wrong, each once.
    pub problems: Vec<Problem>,
    /// Things worth knowing that are not problems.
    pub notes: Vec<Note>,
    /// Files that no manifest references (left for garbage collection; not a problem).
    pub unreferenced: Vec<String>,
}

impl VerifyReport {
    /// True when no problem was found.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn push_err(&mut self, e: &FormatError) {
        self.push(e.path(), e.section().unwrap_or("file"), e.to_string());
    }

    fn push(&mut self, path: &Path, section: &str, message: String) {
        self.problems.push(Problem {
            path: path.to_path_buf(),
            section: section.to_string(),
            message,
            referenced_by: Vec::new(),
        });
    }

    fn note(&mut self, path: &Path, message: String) {
        self.notes.push(Note {
            path: path.to_path_buf(),
            message,
        });
    }
}

/// Verifies a file or an index directory. `progress(bytes)` is called as bytes are checked.
pub fn verify_path(path: &Path, progress: &mut dyn FnMut(u64)) -> VerifyReport {
    let mut report = VerifyReport::default();
    if path.is_dir() {
        verify_dir(path, &mut report, progress);
    } else {
        verify_file(path, &mut report, progress);
    }
    report
}

/// Total bytes `verify_path` will read (for a progress bar).
pub fn bytes_to_verify(path: &Path) -> u64 {
    if path.is_dir() {
        std::fs::read_dir(path)
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    } else {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }
}

/// Whether `path` starts with a valid header of an append log (which is not a sectioned
/// container and is checked by [`verify_log_file`]).
fn is_append_log(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; crate::format::container::HEADER_LEN];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && Header::decode(&head, path).is_ok_and(|h| h.kind == FileKind::AppendLog)
}

/// Reads a log file whole, counting its bytes as checked (`None`, reported, when it cannot).
fn read_log_file(
    path: &Path,
    report: &mut VerifyReport,
    progress: &mut dyn FnMut(u64),
) -> Option<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => {
            report.bytes_checked += bytes.len() as u64;
            progress(bytes.len() as u64);
            Some(bytes)
        }
        Err(source) => {
            report.push_err(&FormatError::Io {
                path: path.to_path_buf(),
                source,
            });
            None
        }
    }
}

/// Checks an append log given on its own. Nothing says how much of it was committed, so it
/// passes only when it is its prelude and one or more whole, valid records to its last byte.
/// Bytes that are not a whole record are reported with their offset and count, and as
/// corruption, naming the record, when valid records follow them.
fn verify_log_file(path: &Path, report: &mut VerifyReport, progress: &mut dyn FnMut(u64)) {
    let Some(bytes) = read_log_file(path, report, progress) else {
        return;
    };
    let c = match append_log::read_log(&bytes, path, None) {
        Ok(c) => c,
        Err(e) => return report.push_err(&e),
    };
    let record = c.batches.len();
    if c.tail.bytes > 0 {
        let section = format!("log record {record} at offset {}", c.end);
        let reason = c.tail.torn_reason.as_deref().unwrap_or("not a record");
        let later = append_log::records_after(&bytes, &c.meta, c.end);
        let message = match later.first_offset {
            Some(at) => format!(
                "record {record} at offset {} is damaged ({reason}), and {} valid record(s) \
                 ({} rows) follow it from offset {at}: corruption inside the log, not a torn tail",
                c.end, later.records, later.rows
            ),
            None => format!(
                "the last {} bytes, from offset {} (record {record}), are not a valid whole \
                 record ({reason}) and no valid record follows: a torn tail, as a crash during an \
                 append leaves, and as a cut copy or damage to the last record leave too; without \
                 a manifest nothing says whether they held committed rows ({} rows in {record} \
                 whole record(s) before them)",
                c.tail.bytes, c.end, c.rows
            ),
        };
        report.push(path, &section, message);
    } else if c.batches.is_empty() {
        report.push(
            path,
            "log",
            "holds no record: the engine commits only logs that hold rows (FORMAT.md §10.4), so \
             this is a log whose first append never completed, or a copy cut after its prelude"
                .into(),
        );
    }
}

/// Checks one file: structure, every section checksum, and its decoded contents.
fn verify_file(path: &Path, report: &mut VerifyReport, progress: &mut dyn FnMut(u64)) {
    report.files_checked += 1;
    if is_append_log(path) {
        verify_log_file(path, report, progress);
        return;
    }
    let c = match Container::open(path, LoadMode::Mmap, None) {
        Ok(c) => c,
        Err(e) => {
            report.push_err(&e);
            return;
        }
    };
    report.bytes_checked += c.file_len();
    let mut checksums_ok = true;
    for i in 0..c.entries().len() {
        if let Err(e) = c.verify_section(i) {
            report.push_err(&e);
            checksums_ok = false;
        }
        progress(c.entries()[i].stored_len);
    }
    if !checksums_ok {
        return;
    }
    let decoded = match c.header().kind {
        FileKind::Segment => SegmentReader::from_container(c, ChecksumPolicy::SkipColumns)
            .and_then(|r| {
                r.check_all_blocks()?;
                r.check_id_range()?;
                r.vectors()?;
                r.check_code_padding(true)?;
                r.check_mih()?;
                r.attributes()?;
                r.check_attribute_index()?;
                let mut seen = HashSet::with_capacity(r.rows());
                if let Some(pos) = r.ids().iter().position(|id| !seen.insert(*id)) {
                    return Err(r
                        .container()
                        .corrupt("ids", &format!("row {pos} repeats id {}", r.ids()[pos])));
                }
                Ok(())
            }),
        FileKind::Model => ModelFile::from_container(&c).map(|_| ()),
        FileKind::ClassTable => ClassTable::from_container(&c).map(|_| ()),
        FileKind::DeletionBitmap => DeletionBitmap::from_container(&c).map(|_| ()),
        FileKind::Manifest => Manifest::from_container(&c).map(|_| ()),
        FileKind::AppendLog => Ok(()), // handled by verify_log_file
    };
    if let Err(e) = decoded {
        report.push_err(&e);
    }
}

/// What the manifests of a directory say about its files, gathered while checking them.
#[derive(Default)]
struct Referenced {
    /// File name → the manifests (file names) that name it.
    by: BTreeMap<String, Vec<String>>,
    /// Log name → (largest committed length of a readable manifest, bytes past it, whole
    /// uncommitted records and rows in them, torn bytes and why).
    log_tails: HashMap<String, (u64, append_log::LogTail)>,
}

impl Referenced {
    fn add(&mut self, name: &str, manifest: &Path) {
        let m = manifest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let list = self.by.entry(name.to_string()).or_default();
        if !list.contains(&m) {
            list.push(m);
        }
    }
}

fn verify_dir(dir: &Path, report: &mut VerifyReport, progress: &mut dyn FnMut(u64)) {
    let manifests = match list_manifests(dir) {
        Ok(m) => m,
        Err(e) => {
            report.push_err(&e);
            return;
        }
    };
    if manifests.is_empty() {
        report.push(
            dir,
            "directory",
            "no manifest found: not a codedb index".into(),
        );
        return;
    }
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .filter(|e| e.metadata().map(|m| m.is_file()).unwrap_or(false))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(source) => {
            report.push_err(&FormatError::Io {
                path: dir.to_path_buf(),
                source,
            });
            return;
        }
    };
    names.sort();
    for n in &names {
        if n.ends_with(TMP_SUFFIX)
            || n == LOCK_FILE
            || n == SHARD_LAYOUT_FILE
            || n == SHARD_CUT_FILE
        {
            continue;
        }
        let path = dir.join(n);
        if is_append_log(&path) {
            // Its records are judged against the manifests that commit them (check_log).
            report.files_checked += 1;
            if let Some(bytes) = read_log_file(&path, report, progress)
                && let Err(e) = append_log::read_prelude(&bytes, &path)
            {
                report.push_err(&e);
            }
            continue;
        }
        verify_file(&path, report, progress);
    }
    let mut refs = Referenced::default();
    let readable: Vec<bool> = manifests
        .iter()
        .map(|(v, p)| read_manifest(p, *v).is_ok())
        .collect();
    let newest_readable = manifests
        .iter()
        .zip(&readable)
        .rev()
        .find(|(_, ok)| **ok)
        .map(|((v, _), _)| *v);
    let skipped: Vec<u64> = manifests
        .iter()
        .zip(&readable)
        .filter(|((v, _), ok)| !**ok && newest_readable.is_none_or(|n| *v > n))
        .map(|((v, _), _)| *v)
        .collect();
    if !skipped.is_empty() {
        let list: Vec<String> = skipped.iter().map(u64::to_string).collect();
        report.push(
            dir,
            "manifests",
            match newest_readable {
                Some(n) => format!(
                    "the newest manifest(s), version(s) {}, do not read: readers serve version \
                     {n} without their writes, and writers refuse until `codedb recover {} \
                     --to-version {n}` accepts the loss (or the files are restored)",
                    list.join(", "),
                    dir.display()
                ),
                None => "no manifest reads".into(),
            },
        );
    }
    for (version, path) in &manifests {
        report.manifests_checked += 1;
        let (m, log) = match Manifest::open_with_log(path) {
            Ok(m) => m,
            Err(_) => continue, // already reported by verify_file
        };
        if m.version != *version {
            report.push(
                path,
                "meta.version",
                format!(
                    "file name says version {version}, manifest says {}",
                    m.version
                ),
            );
        }
        let newest = Some(*version) == newest_readable;
        check_manifest(dir, path, &m, log.as_ref(), newest, report, &mut refs);
    }
    note_log_tails(dir, &refs, report);
    verify_recovery_records(dir, report);
    let newest_model = newest_readable
        .and_then(|v| manifests.iter().find(|(m, _)| *m == v))
        .and_then(|(v, p)| read_manifest(p, *v).ok())
        .map(|(m, _)| m.model.id.to_hex());
    verify_shard_layout(dir, newest_model.as_deref(), report);
    // One problem per file, section and message, naming every manifest that names the file.
    let mut seen = HashSet::new();
    report
        .problems
        .retain(|p| seen.insert((p.path.clone(), p.section.clone(), p.message.clone())));
    for p in &mut report.problems {
        if p.path.parent() == Some(dir)
            && let Some(n) = p.path.file_name()
            && let Some(by) = refs.by.get(n.to_string_lossy().as_ref())
        {
            p.referenced_by = by.clone();
        }
    }
    for (_, p) in &manifests {
        if let Some(n) = p.file_name() {
            refs.by.entry(n.to_string_lossy().into_owned()).or_default();
        }
    }
    report.unreferenced = names
        .into_iter()
        .filter(|n| {
            !refs.by.contains_key(n)
                && n != LOCK_FILE
                && n != SHARD_LAYOUT_FILE
                && n != SHARD_CUT_FILE
        })
        .collect();
}

/// A note for each active log with bytes past its committed length: a crash tail, not a
/// problem (a writer cuts it off when it opens the index).
fn note_log_tails(dir: &Path, refs: &Referenced, report: &mut VerifyReport) {
    for (name, (committed, tail)) in &refs.log_tails {
        if tail.bytes == 0 {
            continue;
        }
        let torn = match &tail.torn_reason {
            Some(r) => format!(", {} torn bytes ({r})", tail.torn_bytes),
            None => String::new(),
        };
        report.note(
            &dir.join(name),
            format!(
                "{} bytes past the committed length {committed} ({} whole uncommitted record(s) \
                 of {} rows{torn}): a crash tail, which a writer cuts off when it opens the index",
                tail.bytes, tail.complete_batches, tail.complete_rows
            ),
        );
    }
}

/// A shard's layout record (FORMAT.md §8.1), when the directory has one, reads and names the
/// model of the version readers open.
fn verify_shard_layout(dir: &Path, model: Option<&str>, report: &mut VerifyReport) {
    report.files_checked += usize::from(dir.join(SHARD_LAYOUT_FILE).is_file());
    report.files_checked += usize::from(dir.join(SHARD_CUT_FILE).is_file());
    if let Some((path, Err(e))) = read_shard_cut(dir) {
        report.push(&path, "shard cut", format!("cut record does not read: {e}"));
    }
    match read_shard_layout(dir) {
        None => {}
        Some((path, Err(e))) => report.push(
            &path,
            "shard layout",
            format!("shard layout record does not read: {e}"),
        ),
        Some((path, Ok(r))) => {
            if let Some(m) = model
                && r.model != m
            {
                report.push(
                    &path,
                    "shard layout",
                    format!(
                        "the record names model {}, the index holds model {m}",
                        r.model
                    ),
                );
            }
        }
    }
}

/// The records of past recoveries (`recovered/`, FORMAT.md §11.7) parse.
fn verify_recovery_records(dir: &Path, report: &mut VerifyReport) {
    for (path, r) in recovery_records(dir) {
        if let Err(e) = r {
            report.push(
                &path,
                RECOVERED_DIR,
                format!("recovery record does not read: {e}"),
            );
        }
    }
}

/// Cross-references of one manifest: every file exists, has the recorded identity, and agrees on
/// row counts, model and segment ids. For the `newest` manifest, also the id invariants.
fn check_manifest(
    dir: &Path,
    mpath: &Path,
    m: &Manifest,
    log: Option<&ActiveLogEntry>,
    newest: bool,
    report: &mut VerifyReport,
    refs: &mut Referenced,
) {
    // Live ids and the largest stored id, for the newest version's invariants.
    let mut live_ids: Vec<u64> = Vec::new();
    let mut max_id: Option<u64> = None;
    add_references(mpath, m, log, refs);
    let model = open_referenced(dir, mpath, &m.model.name, FileKind::Model, report).and_then(|c| {
        if c.header().file_id != m.model.id {
            report.push(
                &dir.join(&m.model.name),
                "header.file_id",
                format!("manifest expects model id {}", m.model.id),
            );
        }
        ModelFile::from_container(&c).ok()
    });
    for (i, s) in m.segments.iter().enumerate() {
        let spath = dir.join(&s.segment.name);
        let Some(c) = open_referenced(dir, mpath, &s.segment.name, FileKind::Segment, report)
        else {
            continue;
        };
        if c.header().file_id != s.segment.id {
            report.push(
                &spath,
                "header.file_id",
                format!("manifest segment {i} expects id {}", s.segment.id),
            );
        }
        let Ok(seg) = SegmentReader::from_container(c, ChecksumPolicy::SkipColumns) else {
            continue;
        };
        let meta = seg.meta();
        if meta.rows > 0 {
            max_id = max_id.max(Some(meta.max_id));
        }
        check_segment_meta(&spath, m, s, meta, model.as_ref(), report);
        check_segment_schema(&seg, &spath, &m.attributes, report);
        let seg_bitmap = check_segment_deletions(dir, mpath, s, meta, report);
        if newest {
            live_ids.extend(
                seg.ids()
                    .iter()
                    .enumerate()
                    .filter(|(r, _)| !seg_bitmap.as_ref().is_some_and(|b| b.is_deleted(*r as u64)))
                    .map(|(_, &id)| id),
            );
        }
    }
    if let Some(l) = log {
        check_log(
            dir,
            mpath,
            m,
            l,
            model.as_ref(),
            report,
            refs,
            &mut live_ids,
            &mut max_id,
        );
    }
    if newest {
        check_live_ids(mpath, m, live_ids, max_id, report);
    }
    check_class_files(dir, mpath, m, report);
}

/// Records every file `m` (and its active log) names as referenced by `mpath`.
fn add_references(mpath: &Path, m: &Manifest, log: Option<&ActiveLogEntry>, refs: &mut Referenced) {
    refs.add(&m.model.name, mpath);
    for s in &m.segments {
        refs.add(&s.segment.name, mpath);
        if let Some(d) = &s.deletions {
            refs.add(&d.name, mpath);
        }
    }
    for cf in &m.class_files {
        refs.add(&cf.file.name, mpath);
    }
    if let Some(l) = log {
        refs.add(&l.log.name, mpath);
        if let Some(d) = &l.deletions {
            refs.add(&d.name, mpath);
        }
    }
}

/// The container `name` of `dir` that the manifest `mpath` references, opened as `kind`; a
/// missing file or one that does not open is reported, and `None`.
fn open_referenced(
    dir: &Path,
    mpath: &Path,
    name: &str,
    kind: FileKind,
    report: &mut VerifyReport,
) -> Option<Container> {
    let p = dir.join(name);
    if !p.is_file() {
        report.push(
            mpath,
            "reference",
            format!("references missing file {name}"),
        );
        return None;
    }
    Container::open(&p, LoadMode::Mmap, Some(kind))
        .map_err(|e| report.push_err(&e))
        .ok()
}

/// A segment's rows, model id and code layout against the manifest's entry `s` and the model.
fn check_segment_meta(
    spath: &Path,
    m: &Manifest,
    s: &SegmentEntry,
    meta: &SegmentMeta,
    model: Option<&ModelFile>,
    report: &mut VerifyReport,
) {
    if meta.rows != s.rows {
        report.push(
            spath,
            "meta.rows",
            format!("has {} rows, manifest says {}", meta.rows, s.rows),
        );
    }
    if meta.model_id != m.model.id {
        report.push(
            spath,
            "meta.model_id",
            format!(
                "encoded with model {}, index model is {}",
                meta.model_id, m.model.id
            ),
        );
    }
    if let Some(model) = model
        && (model.code_kind, model.code_bytes, model.code_bits)
            != (meta.code_kind, meta.code_bytes, meta.code_bits)
    {
        report.push(
            spath,
            "meta.code",
            format!(
                "code layout {} {}B/{}b differs from the model's {} {}B/{}b",
                meta.code_kind.name(),
                meta.code_bytes,
                meta.code_bits,
                model.code_kind.name(),
                model.code_bytes,
                model.code_bits
            ),
        );
    }
}

/// The deletion bitmap of the manifest's segment entry `s`, checked against the entry and
/// the segment's `meta`: the bitmap when it reads.
fn check_segment_deletions(
    dir: &Path,
    mpath: &Path,
    s: &SegmentEntry,
    meta: &SegmentMeta,
    report: &mut VerifyReport,
) -> Option<DeletionBitmap> {
    let mut seg_bitmap: Option<DeletionBitmap> = None;
    if let Some(d) = &s.deletions {
        let dpath = dir.join(&d.name);
        if let Some(c) = open_referenced(dir, mpath, &d.name, FileKind::DeletionBitmap, report)
            && let Ok(bm) = DeletionBitmap::from_container(&c)
        {
            if bm.file_id != d.id {
                report.push(
                    &dpath,
                    "header.file_id",
                    format!("manifest expects {}", d.id),
                );
            }
            if bm.segment_id != s.segment.id {
                report.push(
                    &dpath,
                    "meta.segment_id",
                    format!("covers segment {}, not {}", bm.segment_id, s.segment.id),
                );
            }
            if bm.rows != meta.rows {
                report.push(
                    &dpath,
                    "meta.rows",
                    format!("covers {} rows, segment has {}", bm.rows, meta.rows),
                );
            }
            if bm.deleted_count() != s.deleted {
                report.push(
                    &dpath,
                    "bits",
                    format!(
                        "{} rows deleted, manifest says {}",
                        bm.deleted_count(),
                        s.deleted
                    ),
                );
            }
            seg_bitmap = Some(bm);
        }
    }
    seg_bitmap
}

/// The newest version's ids: none live twice, all below `next_auto_id`.
fn check_live_ids(
    mpath: &Path,
    m: &Manifest,
    mut live_ids: Vec<u64>,
    max_id: Option<u64>,
    report: &mut VerifyReport,
) {
    live_ids.sort_unstable();
    if let Some(w) = live_ids.windows(2).find(|w| w[0] == w[1]) {
        report.push(
            mpath,
            "ids",
            format!("id {} is live more than once in this version", w[0]),
        );
    }
    if let Some(max) = max_id
        && max >= m.next_auto_id
    {
        report.push(
            mpath,
            "meta.next_auto_id",
            format!(
                "next_auto_id {} is not above the largest stored id {max}",
                m.next_auto_id
            ),
        );
    }
}

/// The class files: each one's id, and the deltas folding onto the base table.
fn check_class_files(dir: &Path, mpath: &Path, m: &Manifest, report: &mut VerifyReport) {
    let mut tables: HashMap<usize, ClassTable> = HashMap::new();
    for (i, cf) in m.class_files.iter().enumerate() {
        if let Some(c) = open_referenced(dir, mpath, &cf.file.name, FileKind::ClassTable, report)
            && let Ok(t) = ClassTable::from_container(&c)
        {
            if t.file_id != cf.file.id {
                report.push(
                    &dir.join(&cf.file.name),
                    "header.file_id",
                    format!("manifest expects {}", cf.file.id),
                );
            }
            tables.insert(i, t);
        }
    }
    if let Some(mut base) = tables.remove(&0) {
        for (i, cf) in m.class_files.iter().enumerate().skip(1) {
            if let Some(delta) = tables.get(&i)
                && let Err(e) = base.fold(delta, &dir.join(&cf.file.name))
            {
                report.push_err(&e);
            }
        }
    }
}

/// The active log of a manifest: the committed records read, and agree with the manifest, the
/// model and the log's bitmap.
#[allow(clippy::too_many_arguments)]
fn check_log(
    dir: &Path,
    mpath: &Path,
    m: &Manifest,
    l: &ActiveLogEntry,
    model: Option<&ModelFile>,
    report: &mut VerifyReport,
    refs: &mut Referenced,
    live_ids: &mut Vec<u64>,
    max_id: &mut Option<u64>,
) {
    let lpath = dir.join(&l.log.name);
    let bytes = match std::fs::read(&lpath) {
        Ok(b) => b,
        Err(_) => {
            report.push(
                mpath,
                "reference",
                format!("references missing file {}", l.log.name),
            );
            return;
        }
    };
    let contents = match append_log::read_log(&bytes, &lpath, Some(l.committed_len)) {
        Ok(c) => c,
        Err(e) => {
            report.push_err(&e);
            return;
        }
    };
    let tail = refs
        .log_tails
        .entry(l.log.name.clone())
        .or_insert((0, Default::default()));
    if l.committed_len >= tail.0 {
        *tail = (l.committed_len, contents.tail.clone());
    }
    if contents.file_id != l.log.id {
        report.push(
            &lpath,
            "header.file_id",
            format!("manifest expects log id {}", l.log.id),
        );
    }
    if contents.rows != l.rows {
        report.push(
            &lpath,
            "log",
            format!("{} committed rows, manifest says {}", contents.rows, l.rows),
        );
    }
    if contents.meta.model_id != m.model.id {
        report.push(
            &lpath,
            "log meta.model_id",
            format!(
                "written for model {}, index model is {}",
                contents.meta.model_id, m.model.id
            ),
        );
    }
    if let Some(model) = model
        && (model.code_kind, model.code_bytes, model.code_bits)
            != (
                contents.meta.code_kind,
                contents.meta.code_bytes,
                contents.meta.code_bits,
            )
    {
        report.push(
            &lpath,
            "log meta",
            "code layout differs from the model's".into(),
        );
    }
    let mut bitmap = None;
    if let Some(d) = &l.deletions {
        let dpath = dir.join(&d.name);
        match DeletionBitmap::open(&dpath) {
            Err(e) => report.push_err(&e),
            Ok(bm) => {
                if bm.file_id != d.id {
                    report.push(
                        &dpath,
                        "header.file_id",
                        format!("manifest expects {}", d.id),
                    );
                }
                if bm.segment_id != l.log.id {
                    report.push(
                        &dpath,
                        "meta.segment_id",
                        format!("covers {}, not the log {}", bm.segment_id, l.log.id),
                    );
                }
                if bm.rows > l.rows {
                    report.push(
                        &dpath,
                        "meta.rows",
                        format!("covers {} rows, the log has {}", bm.rows, l.rows),
                    );
                }
                if bm.deleted_count() != l.deleted {
                    report.push(
                        &dpath,
                        "bits",
                        format!(
                            "{} rows deleted, manifest says {}",
                            bm.deleted_count(),
                            l.deleted
                        ),
                    );
                }
                bitmap = Some(bm);
            }
        }
    }
    let mut row = 0u64;
    for b in &contents.batches {
        for &id in &b.ids {
            *max_id = (*max_id).max(Some(id));
            if !bitmap.as_ref().is_some_and(|bm| bm.is_deleted(row)) {
                live_ids.push(id);
            }
            row += 1;
        }
    }
}

/// A segment's stored attribute columns against the manifest's schema (FORMAT.md §3.7): each
/// must be a schema column of the same type. A schema column the segment lacks is fine (added
/// after the segment was written: its rows hold the default). A column the schema lacks or
/// types otherwise would be refused by a filter that reads it, so it is a problem naming the
/// file and the column. A damaged section was reported when the file was checked.
fn check_segment_schema(
    seg: &SegmentReader,
    spath: &Path,
    schema: &crate::format::Schema,
    report: &mut VerifyReport,
) {
    let Ok(Some(attrs)) = seg.attributes() else {
        return;
    };
    for (name, t) in attrs.schema().columns() {
        let message = match schema.find(name) {
            None => format!(
                "stores column {name} ({}), which the index's schema does not have (its columns: {})",
                t.name(),
                schema.known()
            ),
            Some((_, want)) if want != *t => format!(
                "stores column {name} as {}, the index's schema types it {}",
                t.name(),
                want.name()
            ),
            Some(_) => continue,
        };
        report.push(spath, &format!("attributes column {name}"), message);
    }
}
