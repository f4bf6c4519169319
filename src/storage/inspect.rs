//! `codedb inspect`: what a file or an index directory holds, as a serialisable report.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format::{
    ActiveLogEntry, ChecksumPolicy, ClassTable, Codec, Container, DeletionBitmap, FileKind,
    FormatError, Header, LoadMode, Manifest, ModelFile, SegmentReader, append_log, section_kind,
    stage_kind,
};

use super::layout::list_manifests;
use super::recovery::recovery_records;
use super::recovery::{RecoveryRecord, SkippedManifest};
use super::version::{choose_manifest, read_manifest};

#[derive(Debug, Clone, Serialize)]
pub struct SectionReport {
    pub kind: String,
    pub offset: u64,
    pub stored_bytes: u64,
    pub raw_bytes: u64,
    pub codec: &'static str,
    pub required: bool,
    pub checksum_ok: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct TensorReport {
    pub name: String,
    pub dtype: &'static str,
    pub shape: Vec<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    pub kind: String,
    pub required: bool,
    pub tensors: Vec<TensorReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    pub id: u32,
    pub name: String,
    pub parent: Option<u32>,
    /// Images the record adds (a delta) or holds (a base table).
    pub count: u64,
    /// Images a delta's record removes (format 1.3; 0 in base tables).
    pub removed: u64,
    pub centroids: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ManifestSegmentReport {
    pub file: String,
    pub rows: u64,
    pub deleted: u64,
    pub deletions: Option<String>,
}

/// What a file holds, by kind.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contents {
    Segment {
        rows: u64,
        code_kind: &'static str,
        code_bytes: u32,
        code_bits: u32,
        model_id: String,
        min_id: u64,
        max_id: u64,
        labels: bool,
        lists: bool,
        vectors: Option<String>,
    },
    Model {
        input_dim: u32,
        code_kind: &'static str,
        code_bytes: u32,
        code_bits: u32,
        stages: Vec<StageReport>,
        skipped_stages: Vec<u16>,
    },
    ClassTable {
        dim: u32,
        delta_of: Option<String>,
        classes: Vec<ClassReport>,
    },
    DeletionBitmap {
        segment_id: String,
        rows: u64,
        deleted: u64,
    },
    Manifest {
        version: u64,
        created_unix_ms: u64,
        next_auto_id: u64,
        model: String,
        live_rows: u64,
        deleted_rows: u64,
        segments: Vec<ManifestSegmentReport>,
        class_files: Vec<String>,
    },
}

/// An append log read on its own (it has no sections; FORMAT.md §10).
#[derive(Debug, Clone, Serialize)]
pub struct LogReport {
    pub code_kind: &'static str,
    pub code_bytes: u32,
    pub code_bits: u32,
    pub model_id: String,
    /// Valid batch records from the start of the file.
    pub batches: usize,
    pub rows: u64,
    /// Offset where the valid records end.
    pub valid_bytes: u64,
    /// Bytes after them (uncommitted or torn; a writer cuts them off when it opens the index).
    pub tail_bytes: u64,
}

/// The active log named by a manifest (FORMAT.md §10.4).
#[derive(Debug, Clone, Serialize)]
pub struct ActiveLogReport {
    pub file: String,
    pub committed_bytes: u64,
    pub rows: u64,
    pub deleted: u64,
    pub deletions: Option<String>,
}

impl ActiveLogReport {
    fn of(l: &ActiveLogEntry) -> ActiveLogReport {
        ActiveLogReport {
            file: l.log.name.clone(),
            committed_bytes: l.committed_len,
            rows: l.rows,
            deleted: l.deleted,
            deletions: l.deletions.as_ref().map(|d| d.name.clone()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    pub path: PathBuf,
    pub file_kind: &'static str,
    pub format_version: String,
    pub file_id: String,
    pub bytes: u64,
    pub sections: Vec<SectionReport>,
    /// Decoded contents, or `None` with `error` set when the file does not decode (and for an
    /// append log, which is reported in `log`).
    pub contents: Option<Contents>,
    /// For an append log: what it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogReport>,
    /// For a manifest: its active log, if it has one (its rows are counted in `live_rows`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_log: Option<ActiveLogReport>,
    pub error: Option<String>,
}

/// Reports on one file. Fails only when the container itself (header, section table) is
/// unreadable; a section that does not decode is reported in `error`.
pub fn inspect_file(path: &Path) -> Result<FileReport, FormatError> {
    if let Some(r) = inspect_log(path)? {
        return Ok(r);
    }
    let c = Container::open(path, LoadMode::Mmap, None)?;
    let kind = c.header().kind;
    let sections = (0..c.entries().len())
        .map(|i| {
            let e = c.entries()[i];
            SectionReport {
                kind: section_kind::label(kind, e.kind),
                offset: e.offset,
                stored_bytes: e.stored_len,
                raw_bytes: e.raw_len,
                codec: e.codec.name(),
                required: e.required(),
                checksum_ok: c.verify_section(i).is_ok(),
            }
        })
        .collect();
    let (major, minor) = c.version();
    let (contents, error) = match contents(c.header().kind, &c, path) {
        Ok(x) => (Some(x), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let active_log = if kind == FileKind::Manifest {
        Manifest::from_container_with_log(&c)
            .ok()
            .and_then(|(_, l)| l.as_ref().map(ActiveLogReport::of))
    } else {
        None
    };
    Ok(FileReport {
        path: path.to_path_buf(),
        file_kind: kind.name(),
        format_version: format!("{major}.{minor}"),
        file_id: c.header().file_id.to_hex(),
        bytes: c.file_len(),
        sections,
        contents,
        log: None,
        active_log,
        error,
    })
}

/// Reports on `path` if it is an append log (`Ok(None)` otherwise).
fn inspect_log(path: &Path) -> Result<Option<FileReport>, FormatError> {
    let io = |source| FormatError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = {
        use std::io::Read;
        let mut head = [0u8; crate::format::container::HEADER_LEN];
        let mut f = std::fs::File::open(path).map_err(io)?;
        if f.read_exact(&mut head).is_err()
            || !Header::decode(&head, path).is_ok_and(|h| h.kind == FileKind::AppendLog)
        {
            return Ok(None);
        }
        std::fs::read(path).map_err(io)?
    };
    let header = Header::decode(&bytes, path)?;
    let (log, error) = match append_log::read_log(&bytes, path, None) {
        Ok(c) => (
            Some(LogReport {
                code_kind: c.meta.code_kind.name(),
                code_bytes: c.meta.code_bytes,
                code_bits: c.meta.code_bits,
                model_id: c.meta.model_id.to_hex(),
                batches: c.batches.len(),
                rows: c.rows,
                valid_bytes: c.end,
                tail_bytes: c.tail.bytes,
            }),
            None,
        ),
        Err(e) => (None, Some(e.to_string())),
    };
    Ok(Some(FileReport {
        path: path.to_path_buf(),
        file_kind: FileKind::AppendLog.name(),
        format_version: format!("{}.{}", header.major, header.minor),
        file_id: header.file_id.to_hex(),
        bytes: bytes.len() as u64,
        sections: Vec::new(),
        contents: None,
        log,
        active_log: None,
        error,
    }))
}

fn contents(kind: FileKind, c: &Container, path: &Path) -> Result<Contents, FormatError> {
    Ok(match kind {
        FileKind::Segment => {
            let c = Container::open(path, LoadMode::Mmap, Some(FileKind::Segment))?;
            let has_zstd = c.entries().iter().any(|e| e.codec == Codec::Zstd);
            let r = SegmentReader::from_container(c, ChecksumPolicy::SkipColumns)?;
            let m = r.meta();
            Contents::Segment {
                rows: m.rows,
                code_kind: m.code_kind.name(),
                code_bytes: m.code_bytes,
                code_bits: m.code_bits,
                model_id: m.model_id.to_hex(),
                min_id: m.min_id,
                max_id: m.max_id,
                labels: r.labels().is_some(),
                lists: r.lists().is_some(),
                vectors: m.vectors.map(|(t, d)| {
                    format!(
                        "{} x {d}{}",
                        t.name(),
                        if has_zstd { " (zstd)" } else { "" }
                    )
                }),
            }
        }
        FileKind::Model => {
            let m = ModelFile::from_container(c)?;
            Contents::Model {
                input_dim: m.input_dim,
                code_kind: m.code_kind.name(),
                code_bytes: m.code_bytes,
                code_bits: m.code_bits,
                stages: m
                    .stages
                    .iter()
                    .map(|s| StageReport {
                        kind: stage_kind::name(s.kind)
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("kind {}", s.kind)),
                        required: s.required,
                        tensors: s
                            .tensors
                            .iter()
                            .map(|t| TensorReport {
                                name: t.name.clone(),
                                dtype: t.data.dtype().name(),
                                shape: t.shape.clone(),
                            })
                            .collect(),
                    })
                    .collect(),
                skipped_stages: m.skipped_stages,
            }
        }
        FileKind::ClassTable => {
            let t = ClassTable::from_container(c)?;
            Contents::ClassTable {
                dim: t.dim,
                delta_of: t.delta_of.map(|f| f.to_hex()),
                classes: t
                    .classes
                    .iter()
                    .map(|c| ClassReport {
                        id: c.id,
                        name: c.name.clone(),
                        parent: c.parent,
                        count: c.count,
                        removed: c.removed,
                        centroids: c.centroids.len(),
                    })
                    .collect(),
            }
        }
        FileKind::DeletionBitmap => {
            let d = DeletionBitmap::from_container(c)?;
            Contents::DeletionBitmap {
                segment_id: d.segment_id.to_hex(),
                rows: d.rows,
                deleted: d.deleted_count(),
            }
        }
        FileKind::AppendLog => {
            return Err(c.corrupt("log", "an append log has no sections (see FileReport.log)"));
        }
        FileKind::Manifest => {
            let (m, log) = Manifest::from_container_with_log(c)?;
            Contents::Manifest {
                version: m.version,
                created_unix_ms: m.created_unix_ms,
                next_auto_id: m.next_auto_id,
                model: m.model.name.clone(),
                live_rows: m.live_rows_with(log.as_ref()),
                deleted_rows: m.deleted_rows_with(log.as_ref()),
                segments: m
                    .segments
                    .iter()
                    .map(|s| ManifestSegmentReport {
                        file: s.segment.name.clone(),
                        rows: s.rows,
                        deleted: s.deleted,
                        deletions: s.deletions.as_ref().map(|d| d.name.clone()),
                    })
                    .collect(),
                class_files: m.class_files.iter().map(|c| c.file.name.clone()).collect(),
            }
        }
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct VersionReport {
    pub version: u64,
    pub manifest: String,
    /// Live rows, the active log's included.
    pub rows: u64,
    pub deleted: u64,
    pub segments: usize,
    /// Rows in the active log (0 when the version has none).
    pub log_rows: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    pub file: String,
    pub id: String,
    pub input_dim: Option<u32>,
    pub code_kind: Option<&'static str>,
    pub code_bytes: Option<u32>,
    pub code_bits: Option<u32>,
    pub stages: Vec<String>,
}

/// An index directory at the version readers open (the newest that reads). The top-level keys
/// `version`, `rows`, `deleted`, `segments`, `classes`, `model`, `bytes`, `skipped_manifests`
/// and `recoveries` are a stable contract for scripts.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    pub dir: PathBuf,
    pub version: u64,
    /// Manifests newer than `version` that do not read: when not empty the index *fell back*
    /// (their writes are not visible, and writers refuse until `codedb recover`).
    pub skipped_manifests: Vec<SkippedManifest>,
    /// Past recoveries (`codedb recover`): the versions they dropped, oldest first.
    pub recoveries: Vec<RecoveryRecord>,
    /// Live rows.
    pub rows: u64,
    /// Deleted rows still stored.
    pub deleted: u64,
    pub segments: usize,
    pub classes: usize,
    pub model: ModelSummary,
    /// Bytes on disk of all files in the directory.
    pub bytes: u64,
    /// The newest version's active log, if any (its rows are included in `rows`/`deleted`).
    pub active_log: Option<ActiveLogReport>,
    pub versions: Vec<VersionReport>,
    pub files: Vec<FileReport>,
}

/// Reports on an index directory: the version readers open (and the newer manifests that do
/// not read), all retained versions, every file, past recoveries.
pub fn inspect_dir(dir: &Path) -> Result<IndexReport, FormatError> {
    let manifests = list_manifests(dir)?;
    if manifests.is_empty() {
        return Err(FormatError::InvalidArgument {
            path: dir.to_path_buf(),
            argument: "PATH".into(),
            detail: "directory holds no manifest: not a codedb index".into(),
        });
    }
    let choice = choose_manifest(dir)?;
    let Some((_, newest, newest_log)) = choice.newest else {
        let why = choice
            .skipped
            .first()
            .map_or(String::new(), |s| s.error.clone());
        return Err(FormatError::InvalidArgument {
            path: dir.to_path_buf(),
            argument: "PATH".into(),
            detail: format!("no manifest reads (newest: {why})"),
        });
    };
    let mut recoveries: Vec<RecoveryRecord> = recovery_records(dir)
        .into_iter()
        .filter_map(|(_, r)| r.ok())
        .collect();
    recoveries.sort_by_key(|r| r.recovered_unix_ms);
    let mut versions = Vec::new();
    for (v, p) in &manifests {
        if let Ok((m, log)) = read_manifest(p, *v) {
            versions.push(VersionReport {
                version: *v,
                manifest: file_name(p),
                rows: m.live_rows_with(log.as_ref()),
                deleted: m.deleted_rows_with(log.as_ref()),
                segments: m.segments.len(),
                log_rows: log.as_ref().map_or(0, |l| l.rows),
            });
        }
    }
    let model_path = dir.join(&newest.model.name);
    let model = ModelFile::open(&model_path).ok();
    let classes = class_count(dir, &newest)?;
    let mut files = Vec::new();
    let mut bytes = 0;
    let io = |source| FormatError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let md = e.metadata().map_err(io)?;
        if !md.is_file() {
            continue;
        }
        bytes += md.len();
        if let Ok(r) = inspect_file(&e.path()) {
            files.push(r);
        }
    }
    Ok(IndexReport {
        dir: dir.to_path_buf(),
        version: newest.version,
        skipped_manifests: choice.skipped,
        recoveries,
        rows: newest.live_rows_with(newest_log.as_ref()),
        deleted: newest.deleted_rows_with(newest_log.as_ref()),
        segments: newest.segments.len(),
        classes,
        model: ModelSummary {
            file: newest.model.name.clone(),
            id: newest.model.id.to_hex(),
            input_dim: model.as_ref().map(|m| m.input_dim),
            code_kind: model.as_ref().map(|m| m.code_kind.name()),
            code_bytes: model.as_ref().map(|m| m.code_bytes),
            code_bits: model.as_ref().map(|m| m.code_bits),
            stages: model
                .as_ref()
                .map(|m| {
                    m.stages
                        .iter()
                        .map(|s| stage_kind::name(s.kind).unwrap_or("?").to_string())
                        .collect()
                })
                .unwrap_or_default(),
        },
        bytes,
        active_log: newest_log.as_ref().map(ActiveLogReport::of),
        versions,
        files,
    })
}

/// Number of classes after folding the base table and its deltas.
pub fn class_count(dir: &Path, m: &Manifest) -> Result<usize, FormatError> {
    let Some(first) = m.class_files.first() else {
        return Ok(0);
    };
    let mut table = ClassTable::open(&dir.join(&first.file.name))?;
    for d in &m.class_files[1..] {
        let delta = ClassTable::open(&dir.join(&d.file.name))?;
        table.fold(&delta, &dir.join(&d.file.name))?;
    }
    Ok(table.classes.len())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
