//! One index version in memory: its manifest and every file it names, opened and
//! cross-checked. Versions are immutable and shared (`Arc`) by snapshots; a new version reuses
//! the opened segments, bitmaps and log batches of the one before, its model (decoded at most
//! once per model file, [`IndexModel`]) and, when its class table is the same, the class means
//! projected through that model ([`ClassMeansCache`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::classes::ClassMeans;
use crate::format::{
    ActiveLogEntry, ClassTable, DeletionBitmap, FileRef, FormatError, LogMeta, LogTail, Manifest,
    ModelFile, SegmentEntry, append_log,
};
use crate::model::{Model, ModelError};

use super::config::ReadOptions;
use super::error::{Result, StorageError};
use super::layout::list_manifests;
use super::log_rows::{LogBatchEntry, LogView};
use super::open_segment::OpenSegment;
use super::recovery_report::SkippedManifest;

/// A segment of a version with the deletion bitmap that version gives it.
#[derive(Debug, Clone)]
pub(crate) struct SegmentSlot {
    pub entry: SegmentEntry,
    pub seg: Arc<OpenSegment>,
    pub deletions: Option<Arc<DeletionBitmap>>,
}

impl SegmentSlot {
    pub(crate) fn is_deleted(&self, row: u64) -> bool {
        self.deletions.as_ref().is_some_and(|d| d.is_deleted(row))
    }
}

/// The index's model: the file as stored and the [`Model`] it decodes to.
///
/// Decoding is lazy: the engine stores and checks codes without interpreting the model, so an
/// index whose model file reads but does not decode (a newer stage kind, say) still opens,
/// lists, inspects and verifies; only what needs the model (search, classification) fails,
/// with the decoding error. A successful decode is kept (once per `IndexModel`: one per opened
/// index or snapshot, shared by every version made from it); a failed one is not cached and
/// is reported afresh on each call (decoding is deterministic).
#[derive(Debug)]
pub(crate) struct IndexModel {
    file: ModelFile,
    decoded: OnceLock<Model>,
}

impl IndexModel {
    pub(crate) fn new(file: ModelFile) -> IndexModel {
        IndexModel {
            file,
            decoded: OnceLock::new(),
        }
    }

    /// The model file as stored.
    pub(crate) fn file(&self) -> &ModelFile {
        &self.file
    }

    /// The decoded model, decoded on first use.
    pub(crate) fn decoded(&self) -> std::result::Result<&Model, ModelError> {
        if let Some(m) = self.decoded.get() {
            return Ok(m);
        }
        let m = Model::from_model_file(&self.file)?;
        // Another thread may have decoded it meanwhile: the first one stored is kept.
        Ok(self.decoded.get_or_init(|| m))
    }
}

/// The class means of a version's class table projected through the index's model, built on
/// first use (classification, `nprobe`). Projecting costs C × (model cost), so versions whose
/// folded class table is the same (`Arc`) share one cache: a commit that only adds or deletes
/// rows keeps it, a commit with new class records or a compaction that folds the class files
/// starts a new one ([`VersionState::class_means_for`]).
pub(crate) type ClassMeansCache = Arc<OnceLock<ClassMeans>>;

/// Everything one manifest version names, opened.
#[derive(Debug)]
pub(crate) struct VersionState {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub model: Arc<IndexModel>,
    pub segments: Vec<SegmentSlot>,
    pub log: Option<LogView>,
    /// The class table with every delta folded in.
    pub classes: Option<Arc<ClassTable>>,
    /// `classes` projected through the model, when something needed them.
    pub class_means: ClassMeansCache,
}

/// Where a live row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    Segment { slot: usize, row: u64 },
    Log { row: u64 },
}

impl VersionState {
    pub(crate) fn version(&self) -> u64 {
        self.manifest.version
    }

    pub(crate) fn log_entry(&self) -> Option<&ActiveLogEntry> {
        self.log.as_ref().map(|l| &l.entry)
    }

    pub(crate) fn live_rows(&self) -> u64 {
        self.manifest.live_rows_with(self.log_entry())
    }

    /// The class-means cache of a successor of this version whose folded class table is
    /// `classes`: this version's when it is the same table, a new one otherwise.
    pub(crate) fn class_means_for(&self, classes: &Option<Arc<ClassTable>>) -> ClassMeansCache {
        let same = match (&self.classes, classes) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        if same {
            self.class_means.clone()
        } else {
            ClassMeansCache::default()
        }
    }

    /// The live row in a sealed segment holding `id`, ignoring the ids in `skip`
    /// (rows deleted but not yet committed).
    pub(crate) fn find_in_segments(
        &self,
        id: u64,
        skip: impl Fn(u64) -> bool,
    ) -> std::result::Result<Option<(usize, u64)>, FormatError> {
        if skip(id) {
            return Ok(None);
        }
        for (i, s) in self.segments.iter().enumerate() {
            if let Some(row) = s.seg.find(id)?
                && !s.is_deleted(row)
            {
                return Ok(Some((i, row)));
            }
        }
        Ok(None)
    }

    /// Where the live row with `id` is in this version.
    pub(crate) fn find(&self, id: u64) -> std::result::Result<Option<Loc>, FormatError> {
        if let Some((slot, row)) = self.find_in_segments(id, |_| false)? {
            return Ok(Some(Loc::Segment { slot, row }));
        }
        Ok(self
            .log
            .as_ref()
            .and_then(|l| l.find_live(id))
            .map(|row| Loc::Log { row }))
    }
}

/// The newest readable manifest of a directory and the newer ones that did not read.
#[derive(Debug)]
pub(crate) struct ManifestChoice {
    pub newest: Option<(PathBuf, Manifest, Option<ActiveLogEntry>)>,
    /// The largest version number of any manifest file, readable or not (the next version is
    /// numbered past it, so a damaged file's name is never reused).
    pub max_version_seen: u64,
    pub skipped: Vec<SkippedManifest>,
}

/// Reads the manifest file `path`, named for version `v`: the manifest and its active log entry.
/// A manifest whose contents carry another version than its name does not read either (a
/// copied or renamed file must not pose as another version).
pub(crate) fn read_manifest(
    path: &Path,
    v: u64,
) -> std::result::Result<(Manifest, Option<ActiveLogEntry>), FormatError> {
    let (m, log) = Manifest::open_with_log(path)?;
    if m.version != v {
        return Err(FormatError::Corrupt {
            path: path.to_path_buf(),
            section: "meta.version".into(),
            detail: format!("file name says version {v}, contents say {}", m.version),
        });
    }
    Ok((m, log))
}

impl SkippedManifest {
    pub(crate) fn new(version: u64, path: &Path, error: &FormatError) -> SkippedManifest {
        SkippedManifest {
            version,
            file: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            error: error.to_string(),
        }
    }
}

/// Picks the newest manifest that reads ([`read_manifest`]). Newer manifests that fail are
/// reported, not silently ignored. A manifest that vanishes between listing and reading (a
/// concurrent GC or recovery in another process) is not damage: the listing is taken again.
pub(crate) fn choose_manifest(dir: &Path) -> std::result::Result<ManifestChoice, FormatError> {
    const ATTEMPTS: usize = 10;
    let mut attempt = 0;
    'relist: loop {
        attempt += 1;
        let all = list_manifests(dir)?;
        let max_version_seen = all.last().map_or(0, |(v, _)| *v);
        let mut skipped = Vec::new();
        for (v, path) in all.into_iter().rev() {
            match read_manifest(&path, v) {
                Ok((m, log)) => {
                    return Ok(ManifestChoice {
                        newest: Some((path, m, log)),
                        max_version_seen,
                        skipped,
                    });
                }
                Err(FormatError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound && attempt < ATTEMPTS =>
                {
                    continue 'relist;
                }
                Err(e) => skipped.push(SkippedManifest::new(v, &path, &e)),
            }
        }
        return Ok(ManifestChoice {
            newest: None,
            max_version_seen,
            skipped,
        });
    }
}

/// A version loaded from disk, and (for a writer) what lies past the log's committed length.
pub(crate) struct Loaded {
    pub state: VersionState,
    /// `(tail, file length)` of the active log, when the whole log was read.
    pub log_tail: Option<(LogTail, u64)>,
}

fn mismatch(path: &Path, section: &str, detail: String) -> StorageError {
    StorageError::Format(FormatError::Corrupt {
        path: path.to_path_buf(),
        section: section.to_string(),
        detail,
    })
}

/// Opens every file `manifest` names and checks that they agree with it: file ids, row counts,
/// model and code layout, bitmap coverage and counts. `whole_log` reads the log to its end (a
/// writer needs the tail); a reader reads only the committed prefix.
pub(crate) fn load_version(
    dir: &Path,
    manifest: Manifest,
    log_entry: Option<ActiveLogEntry>,
    opts: &ReadOptions,
    whole_log: bool,
) -> Result<Loaded> {
    let model_path = dir.join(&manifest.model.name);
    let model = ModelFile::open(&model_path)?;
    if model.model_id != manifest.model.id {
        return Err(mismatch(
            &model_path,
            "header.file_id",
            format!("the manifest names model {}", manifest.model.id),
        ));
    }
    let segments = open_segments(dir, &manifest, &model, opts)?;
    let (log, log_tail) = match log_entry {
        None => (None, None),
        Some(entry) => {
            let (view, tail) = open_log(dir, &manifest, &model, entry, whole_log)?;
            (Some(view), tail)
        }
    };
    let classes = fold_classes(dir, &manifest)?.map(Arc::new);
    Ok(Loaded {
        state: VersionState {
            dir: dir.to_path_buf(),
            manifest,
            model: Arc::new(IndexModel::new(model)),
            segments,
            log,
            classes,
            class_means: ClassMeansCache::default(),
        },
        log_tail,
    })
}

/// The segments a manifest lists, each checked against the manifest and the index's model
/// (file id, rows, code layout, stored vectors), with their deletion bitmaps. A step of
/// [`load_version`].
fn open_segments(
    dir: &Path,
    manifest: &Manifest,
    model: &ModelFile,
    opts: &ReadOptions,
) -> Result<Vec<SegmentSlot>> {
    let layout = (model.code_kind, model.code_bytes, model.code_bits);
    let mut segments = Vec::with_capacity(manifest.segments.len());
    for entry in &manifest.segments {
        let path = dir.join(&entry.segment.name);
        let seg = OpenSegment::open(&path, opts)?;
        let r = seg.reader();
        let m = r.meta();
        if r.container().header().file_id != entry.segment.id {
            return Err(mismatch(
                &path,
                "header.file_id",
                format!("the manifest names segment {}", entry.segment.id),
            ));
        }
        if m.rows != entry.rows {
            return Err(mismatch(
                &path,
                "meta.rows",
                format!("{} rows, the manifest says {}", m.rows, entry.rows),
            ));
        }
        if m.model_id != model.model_id || (m.code_kind, m.code_bytes, m.code_bits) != layout {
            return Err(mismatch(
                &path,
                "meta",
                "encoded with another model or code layout than the index's".into(),
            ));
        }
        // An index that stores vectors has them in every segment, of its type and dimension.
        // (An index without the setting may still list segments that carry vectors, e.g.
        // written by another tool: they are readable, and compaction keeps them apart.)
        if let Some(v) = manifest.vectors
            && m.vectors != Some(v.pair())
        {
            return Err(mismatch(
                &path,
                "meta.vectors",
                format!(
                    "stored vectors {:?}, the index stores {}-D {}",
                    m.vectors,
                    v.dim,
                    v.dtype.name()
                ),
            ));
        }
        let deletions = match &entry.deletions {
            None => None,
            Some(d) => Some(Arc::new(open_bitmap(
                dir,
                d,
                entry.segment.id,
                Some(m.rows),
                entry.deleted,
            )?)),
        };
        segments.push(SegmentSlot {
            entry: entry.clone(),
            seg: Arc::new(seg),
            deletions,
        });
    }
    Ok(segments)
}

/// The active log of a version: its committed batches, checked against the manifest and the
/// index's model (file id, meta, committed rows), with its deletion bitmap; and `(tail, file
/// length)` when `whole_log` (the writer's open reads past the committed length). A step of
/// [`load_version`].
fn open_log(
    dir: &Path,
    manifest: &Manifest,
    model: &ModelFile,
    entry: ActiveLogEntry,
    whole_log: bool,
) -> Result<(LogView, Option<(LogTail, u64)>)> {
    let path = dir.join(&entry.log.name);
    let bytes = read_log_bytes(&path, (!whole_log).then_some(entry.committed_len))?;
    let contents = append_log::read_log(&bytes, &path, Some(entry.committed_len))?;
    let want = LogMeta {
        code_kind: model.code_kind,
        code_bytes: model.code_bytes,
        code_bits: model.code_bits,
        model_id: model.model_id,
        vectors: manifest.vectors,
    };
    if contents.file_id != entry.log.id {
        return Err(mismatch(
            &path,
            "header.file_id",
            format!("the manifest names log {}", entry.log.id),
        ));
    }
    if contents.meta != want {
        return Err(mismatch(
            &path,
            "log meta",
            "written for another model, code layout or stored-vector setting than the index's"
                .into(),
        ));
    }
    if contents.rows != entry.rows {
        return Err(mismatch(
            &path,
            "log",
            format!(
                "{} committed rows, the manifest says {}",
                contents.rows, entry.rows
            ),
        ));
    }
    let log_tail = whole_log.then(|| (contents.tail.clone(), bytes.len() as u64));
    let deletions = match &entry.deletions {
        None => None,
        Some(d) => Some(Arc::new(open_bitmap(
            dir,
            d,
            entry.log.id,
            None,
            entry.deleted,
        )?)),
    };
    if let Some(d) = &deletions
        && d.rows > entry.rows
    {
        return Err(mismatch(
            &dir.join(d_name(&entry)),
            "meta.rows",
            format!("covers {} rows, the log has {}", d.rows, entry.rows),
        ));
    }
    let mut first_row = 0;
    let batches = contents
        .batches
        .into_iter()
        .map(|b| {
            let e = LogBatchEntry::new(b, first_row);
            first_row += e.rows();
            Arc::new(e)
        })
        .collect();
    let view = LogView {
        entry,
        meta: contents.meta,
        batches,
        deletions,
    };
    Ok((view, log_tail))
}

fn d_name(entry: &ActiveLogEntry) -> String {
    entry
        .deletions
        .as_ref()
        .map(|d| d.name.clone())
        .unwrap_or_default()
}

/// Opens a deletion bitmap and checks it covers `segment` (`rows` rows when given) with
/// `deleted` rows set.
fn open_bitmap(
    dir: &Path,
    d: &FileRef,
    segment: crate::format::FileId,
    rows: Option<u64>,
    deleted: u64,
) -> Result<DeletionBitmap> {
    let path = dir.join(&d.name);
    let bm = DeletionBitmap::open(&path)?;
    if bm.file_id != d.id {
        return Err(mismatch(
            &path,
            "header.file_id",
            format!("the manifest names bitmap {}", d.id),
        ));
    }
    if bm.segment_id != segment {
        return Err(mismatch(
            &path,
            "meta.segment_id",
            format!("covers {}, not {segment}", bm.segment_id),
        ));
    }
    if let Some(rows) = rows
        && bm.rows != rows
    {
        return Err(mismatch(
            &path,
            "meta.rows",
            format!("covers {} rows, the segment has {rows}", bm.rows),
        ));
    }
    if bm.deleted_count() != deleted {
        return Err(mismatch(
            &path,
            "bits",
            format!(
                "{} rows deleted, the manifest says {deleted}",
                bm.deleted_count()
            ),
        ));
    }
    Ok(bm)
}

/// Reads a log file, or only its first `limit` bytes.
pub(crate) fn read_log_bytes(path: &Path, limit: Option<u64>) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(StorageError::io(path, "open"))?;
    let mut bytes = Vec::new();
    match limit {
        Some(n) => file.take(n).read_to_end(&mut bytes),
        None => (&file).read_to_end(&mut bytes),
    }
    .map_err(StorageError::io(path, "read"))?;
    Ok(bytes)
}

/// The base class table with every delta of `m` folded in, in order.
pub(crate) fn fold_classes(dir: &Path, m: &Manifest) -> Result<Option<ClassTable>> {
    let Some(first) = m.class_files.first() else {
        return Ok(None);
    };
    let check_id = |t: &ClassTable, f: &FileRef| -> Result<()> {
        if t.file_id != f.id {
            return Err(mismatch(
                &dir.join(&f.name),
                "header.file_id",
                format!("the manifest names class file {}", f.id),
            ));
        }
        Ok(())
    };
    let mut table = ClassTable::open(&dir.join(&first.file.name))?;
    check_id(&table, &first.file)?;
    for d in &m.class_files[1..] {
        let path = dir.join(&d.file.name);
        let delta = ClassTable::open(&path)?;
        check_id(&delta, &d.file)?;
        table.fold(&delta, &path)?;
    }
    Ok(Some(table))
}
