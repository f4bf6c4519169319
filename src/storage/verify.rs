//! `codedb verify`: reads every byte, checks every checksum and every cross-reference, and lists
//! each problem with the file and section it is in.
//!
//! For the newest version it also checks the index-wide invariants the writer keeps: no id is
//! live twice, and `next_auto_id` is above every stored id (so an assigned id never collides).
//! That check holds one u64 per live row in memory.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format::{
    ActiveLogEntry, ChecksumPolicy, ClassTable, Container, DeletionBitmap, FileKind, FormatError,
    Header, LoadMode, Manifest, ModelFile, SegmentReader, append_log,
};

use super::layout::list_manifests;

/// One thing wrong, with where it is.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    /// Section, field or cross-reference the problem is in.
    pub section: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct VerifyReport {
    pub files_checked: usize,
    pub bytes_checked: u64,
    pub manifests_checked: usize,
    pub problems: Vec<Problem>,
    /// Files that no manifest references (left for garbage collection; not a problem).
    pub unreferenced: Vec<String>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn push_err(&mut self, e: &FormatError) {
        self.problems.push(Problem {
            path: e.path().to_path_buf(),
            section: e.section().unwrap_or("file").to_string(),
            message: e.to_string(),
        });
    }

    fn push(&mut self, path: &Path, section: &str, message: String) {
        self.problems.push(Problem {
            path: path.to_path_buf(),
            section: section.to_string(),
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

/// Checks an append log on its own: prelude and every record up to the first invalid one (a
/// torn tail is not a problem by itself: only a manifest says which bytes were committed).
fn verify_log_file(path: &Path, report: &mut VerifyReport, progress: &mut dyn FnMut(u64)) {
    match std::fs::read(path) {
        Ok(bytes) => {
            report.bytes_checked += bytes.len() as u64;
            progress(bytes.len() as u64);
            if let Err(e) = append_log::read_log(&bytes, path, None) {
                report.push_err(&e);
            }
        }
        Err(source) => report.push_err(&FormatError::Io {
            path: path.to_path_buf(),
            source,
        }),
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
        if n.ends_with(".tmp") || n == "LOCK" {
            continue;
        }
        verify_file(&dir.join(n), report, progress);
    }
    let mut referenced = HashSet::new();
    let newest_readable = manifests
        .iter()
        .rev()
        .find(|(_, p)| Manifest::open(p).is_ok())
        .map(|(v, _)| *v);
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
        check_manifest(dir, path, &m, log.as_ref(), newest, report, &mut referenced);
    }
    for (_, p) in &manifests {
        if let Some(n) = p.file_name() {
            referenced.insert(n.to_string_lossy().into_owned());
        }
    }
    report.unreferenced = names
        .into_iter()
        .filter(|n| !referenced.contains(n) && n != "LOCK")
        .collect();
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
    referenced: &mut HashSet<String>,
) {
    // Live ids and the largest stored id, for the newest version's invariants.
    let mut live_ids: Vec<u64> = Vec::new();
    let mut max_id: Option<u64> = None;
    let open_container = |name: &str, kind: FileKind, report: &mut VerifyReport| {
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
    };
    referenced.insert(m.model.name.clone());
    let model = open_container(&m.model.name, FileKind::Model, report).and_then(|c| {
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
        referenced.insert(s.segment.name.clone());
        let spath = dir.join(&s.segment.name);
        let Some(c) = open_container(&s.segment.name, FileKind::Segment, report) else {
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
        let mut seg_bitmap: Option<DeletionBitmap> = None;
        if meta.rows != s.rows {
            report.push(
                &spath,
                "meta.rows",
                format!("has {} rows, manifest says {}", meta.rows, s.rows),
            );
        }
        if meta.model_id != m.model.id {
            report.push(
                &spath,
                "meta.model_id",
                format!(
                    "encoded with model {}, index model is {}",
                    meta.model_id, m.model.id
                ),
            );
        }
        if let Some(model) = &model
            && (model.code_kind, model.code_bytes, model.code_bits)
                != (meta.code_kind, meta.code_bytes, meta.code_bits)
        {
            report.push(
                &spath,
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
        if let Some(d) = &s.deletions {
            referenced.insert(d.name.clone());
            let dpath = dir.join(&d.name);
            if let Some(c) = open_container(&d.name, FileKind::DeletionBitmap, report)
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
            referenced,
            &mut live_ids,
            &mut max_id,
        );
    }
    if newest {
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
    let mut tables: HashMap<usize, ClassTable> = HashMap::new();
    for (i, cf) in m.class_files.iter().enumerate() {
        referenced.insert(cf.file.name.clone());
        if let Some(c) = open_container(&cf.file.name, FileKind::ClassTable, report)
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
    referenced: &mut HashSet<String>,
    live_ids: &mut Vec<u64>,
    max_id: &mut Option<u64>,
) {
    referenced.insert(l.log.name.clone());
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
        referenced.insert(d.name.clone());
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
