//! `codedb inspect`: what a file or an index directory holds, as a serialisable report.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::format::{
    ActiveLogEntry, ChecksumPolicy, ClassTable, Codec, Container, DeletionBitmap, FileKind,
    FormatError, Header, LoadMode, Manifest, ModelFile, SegmentReader, append_log, section_kind,
    stage_kind,
};

use crate::format::attribute_index::IndexSource;
use crate::model::Origin;

use super::layout::list_manifests;
use super::loaded_version::{choose_manifest, read_manifest};
use super::recovery_report::recovery_records;
use super::recovery_report::{RecoveryRecord, SkippedManifest};
use super::shard_layout::{ShardLayout, read_shard_layout};

/// One section of a file, as `inspect` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct SectionReport {
    /// Section kind name (or number, for a kind this build does not know).
    pub kind: String,
    /// Byte offset of the section in the file.
    pub offset: u64,
    /// Bytes stored on disk.
    pub stored_bytes: u64,
    /// Bytes after decoding.
    pub raw_bytes: u64,
    /// Codec name (`none`, `zstd`).
    pub codec: &'static str,
    /// Whether a reader that does not know the kind must refuse the file.
    pub required: bool,
    /// Whether the stored bytes match the section's CRC32.
    pub checksum_ok: bool,
}

/// A segment's tag postings and zone maps (FORMAT.md §3.8), as `inspect` shows them.
#[derive(Debug, Clone, Serialize)]
pub struct AttributeIndexReport {
    /// `stored` (sections `attribute_postings` / `attribute_zones`, format 1.8) or `built in
    /// memory on first use` (format 1.7: the same indexes, made from the columns).
    pub source: &'static str,
    /// One entry per indexed column, in column order.
    pub columns: Vec<ColumnIndexReport>,
}

/// The index of one attribute column of a segment.
#[derive(Debug, Clone, Serialize)]
pub struct ColumnIndexReport {
    /// The column's name.
    pub column: String,
    /// `postings` (a tags column) or `zones` (int, float, timestamp).
    pub index: &'static str,
    /// Row numbers of the postings, or zones of the zone map.
    pub entries: u64,
    /// Bytes of the column's entry in its stored section; in memory when built.
    pub bytes: u64,
}

/// The attribute index of segment `r`, for `inspect` (reads and checks the columns and the
/// stored sections; builds the index of a 1.7 segment).
fn attribute_index_report(r: &SegmentReader) -> Result<Option<AttributeIndexReport>, FormatError> {
    let (Some(a), Some(ix)) = (r.attributes()?, r.attribute_index()?) else {
        return Ok(None);
    };
    let columns = (0..a.schema().len())
        .filter_map(|i| {
            let (index, entries) = ix.column(i)?.describe()?;
            let bytes = match ix.source() {
                IndexSource::Stored => ix.stored_bytes(i),
                IndexSource::Built => ix.column(i).map_or(0, |c| c.bytes() as u64),
            };
            Some(ColumnIndexReport {
                column: a.schema().columns()[i].0.clone(),
                index,
                entries: entries as u64,
                bytes,
            })
        })
        .collect();
    Ok(Some(AttributeIndexReport {
        source: ix.source().name(),
        columns,
    }))
}

/// One tensor of a model stage.
#[derive(Debug, Clone, Serialize)]
pub struct TensorReport {
    /// Tensor name.
    pub name: String,
    /// Element type name.
    pub dtype: &'static str,
    /// Dimensions, outermost first.
    pub shape: Vec<u64>,
}

/// One stage of a model.
#[derive(Debug, Clone, Serialize)]
pub struct StageReport {
    /// Stage kind name.
    pub kind: String,
    /// Whether the stage is needed to encode.
    pub required: bool,
    /// The stage's tensors.
    pub tensors: Vec<TensorReport>,
    /// The training step that learned it (e.g. `cca:32`), when the model records its origin.
    pub step: Option<String>,
}

/// How a model was trained (its optional `origin` stage, format 1.6).
#[derive(Debug, Clone, Serialize)]
pub struct OriginReport {
    /// The explicit pipeline spec, e.g. `cca:32,itq,bits`.
    pub spec: String,
    /// The training seed.
    pub seed: u64,
}

/// One class record of a class table.
#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    /// Class id.
    pub id: u32,
    /// Class name.
    pub name: String,
    /// Parent class id, if any.
    pub parent: Option<u32>,
    /// Images the record adds (a delta) or holds (a base table).
    pub count: u64,
    /// Images a delta's record removes (format 1.3; 0 in base tables).
    pub removed: u64,
    /// Number of NCMC centroids.
    pub centroids: usize,
}

/// One segment entry of a manifest.
#[derive(Debug, Clone, Serialize)]
pub struct ManifestSegmentReport {
    /// Segment file name.
    pub file: String,
    /// Rows stored in the segment.
    pub rows: u64,
    /// Rows this version deletes from it.
    pub deleted: u64,
    /// Deletion bitmap file name, when any row is deleted.
    pub deletions: Option<String>,
}

/// What a file holds, by kind.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contents {
    /// A segment (FORMAT.md §3).
    Segment {
        /// Number of rows.
        rows: u64,
        /// Code kind name.
        code_kind: &'static str,
        /// Bytes per code.
        code_bytes: u32,
        /// Meaningful bits per code.
        code_bits: u32,
        /// The encoding model's file id, in hex.
        model_id: String,
        /// Smallest row id.
        min_id: u64,
        /// Largest row id.
        max_id: u64,
        /// Whether the segment stores labels.
        labels: bool,
        /// Whether the segment stores list ids.
        lists: bool,
        /// Stored vectors as `type x dim`, with ` (zstd)` when compressed; `None` when the segment keeps none.
        vectors: Option<String>,
        /// The tag postings and zone maps of its attribute columns (`None` when it stores
        /// no columns).
        attribute_index: Option<AttributeIndexReport>,
    },
    /// A model (FORMAT.md §4).
    Model {
        /// Dimension of the input descriptors.
        input_dim: u32,
        /// Code kind name.
        code_kind: &'static str,
        /// Bytes per code.
        code_bytes: u32,
        /// Meaningful bits per code.
        code_bits: u32,
        /// The pipeline's stages, in order.
        stages: Vec<StageReport>,
        /// Kind numbers of optional stages this build does not know.
        skipped_stages: Vec<u16>,
        /// How the model was trained, when it records that.
        origin: Option<OriginReport>,
    },
    /// A class table, base or delta (FORMAT.md §5).
    ClassTable {
        /// Descriptor dimension of every sum and centroid.
        dim: u32,
        /// For a delta: the base table's id, in hex.
        delta_of: Option<String>,
        /// The class records.
        classes: Vec<ClassReport>,
    },
    /// A deletion bitmap (FORMAT.md §6).
    DeletionBitmap {
        /// Id of the segment it covers, in hex.
        segment_id: String,
        /// Rows it covers.
        rows: u64,
        /// Rows marked deleted.
        deleted: u64,
    },
    /// A manifest (FORMAT.md §7).
    Manifest {
        /// Version number.
        version: u64,
        /// Commit time in milliseconds since the Unix epoch.
        created_unix_ms: u64,
        /// Next automatic row id.
        next_auto_id: u64,
        /// Model file name.
        model: String,
        /// Live rows, the active log's included.
        live_rows: u64,
        /// Deleted rows still stored, the active log's included.
        deleted_rows: u64,
        /// The segment entries.
        segments: Vec<ManifestSegmentReport>,
        /// Class-table file names, base first.
        class_files: Vec<String>,
        /// The index's attribute columns (format 1.7, §7.4).
        attributes: Vec<AttributeColumnReport>,
    },
}

/// An append log read on its own (it has no sections; FORMAT.md §10).
#[derive(Debug, Clone, Serialize)]
pub struct LogReport {
    /// Code kind name.
    pub code_kind: &'static str,
    /// Bytes per code.
    pub code_bytes: u32,
    /// Meaningful bits per code.
    pub code_bits: u32,
    /// The encoding model's file id, in hex.
    pub model_id: String,
    /// Valid batch records from the start of the file.
    pub batches: usize,
    /// Rows in the valid records.
    pub rows: u64,
    /// Offset where the valid records end.
    pub valid_bytes: u64,
    /// Bytes after them (uncommitted or torn; a writer cuts them off when it opens the index).
    pub tail_bytes: u64,
}

/// The active log named by a manifest (FORMAT.md §10.4).
#[derive(Debug, Clone, Serialize)]
pub struct ActiveLogReport {
    /// Log file name.
    pub file: String,
    /// Bytes of the log this version commits.
    pub committed_bytes: u64,
    /// Rows in the committed records.
    pub rows: u64,
    /// Rows of the log deleted in this version.
    pub deleted: u64,
    /// The log's deletion bitmap file name, if any.
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

/// What one file holds: header, sections and decoded contents.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// File kind name.
    pub file_kind: &'static str,
    /// Format version as `major.minor`.
    pub format_version: String,
    /// File id, in hex.
    pub file_id: String,
    /// File length in bytes.
    pub bytes: u64,
    /// The section table.
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
    /// Why the contents did not decode, if they did not.
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
                attribute_index: attribute_index_report(&r)?,
            }
        }
        FileKind::Model => {
            let m = ModelFile::from_container(c)?;
            let origin = model_origin(&m, path)?;
            let step = |i: usize| {
                origin
                    .as_ref()
                    .and_then(|o| o.step_of(i))
                    .map(str::to_string)
            };
            Contents::Model {
                input_dim: m.input_dim,
                code_kind: m.code_kind.name(),
                code_bytes: m.code_bytes,
                code_bits: m.code_bits,
                stages: m
                    .stages
                    .iter()
                    .enumerate()
                    .map(|(i, s)| StageReport {
                        step: step(i),
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
                origin: origin.map(|o| OriginReport {
                    spec: o.spec().to_string(),
                    seed: o.seed(),
                }),
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
                attributes: attribute_columns(&m.attributes),
            }
        }
    })
}

/// One retained version of an index.
#[derive(Debug, Clone, Serialize)]
pub struct VersionReport {
    /// Version number.
    pub version: u64,
    /// Manifest file name.
    pub manifest: String,
    /// Live rows, the active log's included.
    pub rows: u64,
    /// Deleted rows still stored.
    pub deleted: u64,
    /// Number of sealed segments.
    pub segments: usize,
    /// Rows in the active log (0 when the version has none).
    pub log_rows: u64,
}

/// The model of an index; the optional fields are `None` when the model file does not read.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    /// Model file name.
    pub file: String,
    /// Model file id, in hex.
    pub id: String,
    /// Dimension of the input descriptors.
    pub input_dim: Option<u32>,
    /// Code kind name.
    pub code_kind: Option<&'static str>,
    /// Bytes per code.
    pub code_bytes: Option<u32>,
    /// Meaningful bits per code.
    pub code_bits: Option<u32>,
    /// Stage kind names, in pipeline order.
    pub stages: Vec<String>,
    /// The pipeline spec the model was trained with (its origin stage, format 1.6), if recorded.
    pub trained_as: Option<String>,
}

/// An index directory at the version readers open (the newest that reads). The top-level keys
/// `version`, `rows`, `deleted`, `segments`, `classes`, `model`, `bytes`, `skipped_manifests`
/// and `recoveries` are a stable contract for scripts.
#[derive(Debug, Clone, Serialize)]
pub struct IndexReport {
    /// The index directory.
    pub dir: PathBuf,
    /// The version readers open.
    pub version: u64,
    /// Manifests newer than `version` that do not read: when not empty the index *fell back*
    /// (their writes are not visible, and writers refuse until `codedb recover`).
    pub skipped_manifests: Vec<SkippedManifest>,
    /// Past recoveries (`codedb recover`): the versions they dropped, oldest first.
    pub recoveries: Vec<RecoveryRecord>,
    /// The shard layout record (FORMAT.md §8.1) when the index is a shard of a sharded index
    /// (`None` when it has none or it does not read; `verify` reports the latter).
    pub shard_layout: Option<ShardLayout>,
    /// Live rows.
    pub rows: u64,
    /// Deleted rows still stored.
    pub deleted: u64,
    /// Number of sealed segments.
    pub segments: usize,
    /// Number of classes.
    pub classes: usize,
    /// The model of this version.
    pub model: ModelSummary,
    /// Bytes on disk of all files in the directory.
    pub bytes: u64,
    /// The newest version's active log, if any (its rows are included in `rows`/`deleted`).
    pub active_log: Option<ActiveLogReport>,
    /// The attribute columns of the version readers open (its schema), in order.
    pub attributes: Vec<AttributeColumnReport>,
    /// Every retained version whose manifest reads, oldest first.
    pub versions: Vec<VersionReport>,
    /// Every file in the directory that has a readable container.
    pub files: Vec<FileReport>,
}

/// One attribute column of an index's schema (FORMAT.md §7.4), as `inspect` shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AttributeColumnReport {
    /// The column's name.
    pub name: String,
    /// Its type: `int`, `float`, `timestamp`, `bool`, `string` or `tags`.
    #[serde(rename = "type")]
    pub column_type: &'static str,
    /// The value of rows that do not give it (as text: a number, `true`, a quoted string, a
    /// list of quoted tags).
    pub default: String,
}

/// The columns of `schema`, for reports.
pub fn attribute_columns(schema: &crate::format::Schema) -> Vec<AttributeColumnReport> {
    schema
        .columns()
        .iter()
        .enumerate()
        .map(|(i, (name, t))| AttributeColumnReport {
            name: name.clone(),
            column_type: t.name(),
            default: schema
                .default_value(i)
                .map_or(String::new(), |v| v.to_string()),
        })
        .collect()
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
        shard_layout: read_shard_layout(dir).and_then(|(_, r)| r.ok()),
        recoveries,
        rows: newest.live_rows_with(newest_log.as_ref()),
        deleted: newest.deleted_rows_with(newest_log.as_ref()),
        segments: newest.segments.len(),
        attributes: attribute_columns(&newest.attributes),
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
            trained_as: match &model {
                Some(m) => {
                    model_origin(m, &dir.join(&newest.model.name))?.map(|o| o.spec().to_string())
                }
                None => None,
            },
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

/// The model's origin stage, read and checked (a malformed one is an error naming the file).
fn model_origin(m: &ModelFile, path: &Path) -> Result<Option<Origin>, FormatError> {
    let Some((i, rec)) = m
        .stages
        .iter()
        .enumerate()
        .find(|(_, s)| s.kind == stage_kind::ORIGIN)
    else {
        return Ok(None);
    };
    Origin::from_record(rec)
        .map(Some)
        .map_err(|e| FormatError::InvalidStage {
            path: path.to_path_buf(),
            stage: format!("{i} (origin)"),
            source: Box::new(e),
        })
}
