//! Snapshots: one pinned index version. Everything a snapshot shows belongs to that version,
//! whatever writers, compactions and garbage collections do meanwhile.
//!
//! A snapshot holds an `Arc` of its version: the mapped segments, the deletion bitmaps, the
//! committed log rows (in memory) and the folded class table. Within the process, garbage
//! collection keeps every file of a version some snapshot still holds. A snapshot opened by
//! another process ([`Snapshot::open`]) reads the newest manifest and opens all its files at
//! once; from then on it needs nothing from the directory (mappings outlive unlinking).
//!
//! A snapshot holds its index's model ([`Snapshot::model`], decoded once per model file) and
//! the class means projected through it ([`Snapshot::class_means`], built once per class
//! table), so searching and classifying need nothing but the snapshot.

use std::path::Path;
use std::sync::Arc;

use crate::classes::{ClassError, ClassMeans};
use crate::format::{
    ActiveLogEntry, Attributes, ClassTable, ColumnBuilder, Manifest, ModelFile, Schema, Value,
    VectorSpec,
};
use crate::model::{Model, ModelError};

use super::block::{Block, Row};
use super::config::ReadOptions;
use super::error::{Result, StorageError};
use super::layout::{list_manifests, manifest_file_name};
use super::loaded_version::{Loc, VersionState, choose_manifest, load_version, read_manifest};
use super::recovery_report::SkippedManifest;

/// A pinned index version.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) v: Arc<VersionState>,
    skipped: Arc<[SkippedManifest]>,
}

impl Snapshot {
    pub(crate) fn from_state(v: Arc<VersionState>, skipped: Arc<[SkippedManifest]>) -> Snapshot {
        Snapshot { v, skipped }
    }

    /// Opens the newest version of the index in `dir` for reading, without any lock (readers
    /// in any number of processes). A newer manifest that does not read is skipped and listed
    /// in [`Snapshot::skipped_manifests`] — the snapshot then shows an older version than the
    /// newest one written, and callers should say so; if garbage collection removes a file
    /// while this runs, it retries with the newest version.
    pub fn open(dir: &Path) -> Result<Snapshot> {
        Snapshot::open_with(dir, &ReadOptions::default())
    }

    /// [`Snapshot::open`] with read options (map or copy segments, when to checksum columns).
    pub fn open_with(dir: &Path, opts: &ReadOptions) -> Result<Snapshot> {
        const ATTEMPTS: usize = 5;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let choice = choose_manifest(dir)?;
            let Some((_, manifest, log)) = choice.newest else {
                return Err(StorageError::NotAnIndex {
                    dir: dir.to_path_buf(),
                    detail: match choice.skipped.first() {
                        Some(s) => format!("no manifest reads (newest: {})", s.error),
                        None => "no manifest found".into(),
                    },
                });
            };
            match load_version(dir, manifest, log, opts, false) {
                Ok(l) => {
                    return Ok(Snapshot {
                        v: Arc::new(l.state),
                        skipped: Arc::from(choice.skipped),
                    });
                }
                Err(e) if e.is_not_found() && attempt < ATTEMPTS => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Opens `version` of the index in `dir` for reading, whether or not it is the newest.
    ///
    /// Why: a sharded index publishes one version of the whole as a cut record naming each
    /// shard's version (docs/distributed.md), written after every shard committed; a reader
    /// pins the cut, so it opens each shard at the cut's version even when that shard has
    /// committed past it (a sharded commit under way, or one cut short by a crash). The
    /// version must still be on disk — garbage collection keeps the retained versions
    /// (FORMAT.md §11.5) — else an `InvalidArgument` on `version` listing the versions there;
    /// a manifest that does not read is an error, never a fallback to another version.
    pub fn open_version(dir: &Path, version: u64) -> Result<Snapshot> {
        Snapshot::open_version_with(dir, version, &ReadOptions::default())
    }

    /// [`Snapshot::open_version`] with read options.
    pub fn open_version_with(dir: &Path, version: u64, opts: &ReadOptions) -> Result<Snapshot> {
        let path = dir.join(manifest_file_name(version));
        if !path.exists() {
            let on_disk: Vec<String> = list_manifests(dir)?
                .iter()
                .map(|(v, _)| v.to_string())
                .collect();
            if on_disk.is_empty() {
                return Err(StorageError::NotAnIndex {
                    dir: dir.to_path_buf(),
                    detail: "no manifest found".into(),
                });
            }
            return Err(StorageError::invalid(
                dir,
                "version",
                format!(
                    "version {version} is not on disk (versions there: {}; garbage collection \
                     removes versions past the retention)",
                    on_disk.join(", ")
                ),
            ));
        }
        let (manifest, log) = read_manifest(&path, version)?;
        let loaded = load_version(dir, manifest, log, opts, false)?;
        Ok(Snapshot {
            v: Arc::new(loaded.state),
            skipped: Arc::from(Vec::new()),
        })
    }

    /// The version this snapshot pins.
    pub fn version(&self) -> u64 {
        self.v.version()
    }

    /// The index's directory.
    pub fn dir(&self) -> &Path {
        &self.v.dir
    }

    /// The version's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.v.manifest
    }

    /// The active log's committed state in this version.
    pub fn active_log(&self) -> Option<&ActiveLogEntry> {
        self.v.log_entry()
    }

    /// The model that encodes this index's codes, decoded on first use and kept (shared by
    /// every snapshot of the same [`crate::storage::Index`] handle). An error when the stored
    /// model file does not decode: the index still reads, lists, inspects and verifies, but
    /// nothing that needs the model runs.
    pub fn model(&self) -> std::result::Result<&Model, ModelError> {
        self.v.model.decoded()
    }

    /// The model file as stored (what inspection and verification report).
    pub fn model_file(&self) -> &ModelFile {
        self.v.model.file()
    }

    /// Bytes per code.
    pub fn code_bytes(&self) -> usize {
        self.v.model.file().code_bytes as usize
    }

    /// The vectors every row of the index stores (fixed at creation), if any.
    pub fn vector_spec(&self) -> Option<VectorSpec> {
        self.v.manifest.vectors
    }

    /// Rows not deleted.
    pub fn live_rows(&self) -> u64 {
        self.v.live_rows()
    }

    /// Deleted rows still stored (dropped by compaction).
    pub fn deleted_rows(&self) -> u64 {
        self.v.manifest.deleted_rows_with(self.v.log_entry())
    }

    /// Sealed segments in this version.
    pub fn segment_count(&self) -> usize {
        self.v.segments.len()
    }

    /// The class table with every delta of this version folded in.
    pub fn classes(&self) -> Option<&ClassTable> {
        self.v.classes.as_deref()
    }

    /// The NCM classifier of this version: the class means of [`Snapshot::classes`] projected
    /// through [`Snapshot::model`], built on first use and kept; versions of one
    /// [`crate::storage::Index`] handle with the same class table share them. An error when
    /// the version has no class with images.
    pub fn class_means(&self) -> std::result::Result<&ClassMeans, ClassError> {
        if let Some(m) = self.v.class_means.get() {
            return Ok(m);
        }
        let no_classes = || ClassError::NoClasses {
            dir: self.dir().display().to_string(),
        };
        let table = self.classes().ok_or_else(no_classes)?;
        let means = ClassMeans::build(table, self.model()?)?;
        if means.is_empty() {
            return Err(no_classes());
        }
        Ok(self.v.class_means.get_or_init(|| means))
    }

    /// Newer manifests that did not read when this snapshot (or the [`crate::storage::Index`]
    /// it came from) was opened: when not empty, the snapshot shows an older version than the
    /// newest one written, without those versions' writes.
    pub fn skipped_manifests(&self) -> &[SkippedManifest] {
        &self.skipped
    }

    /// Every block of rows: the sealed segments in manifest order, then the active log's
    /// committed batches.
    pub fn blocks(&self) -> impl Iterator<Item = Block<'_>> + '_ {
        let segs = self.v.segments.iter().map(move |s| self.segment_block(s));
        let log = self
            .v
            .log
            .iter()
            .flat_map(move |l| l.batches.iter().map(move |b| self.log_block(l, b)));
        segs.chain(log)
    }

    fn segment_block<'a>(&'a self, s: &'a super::loaded_version::SegmentSlot) -> Block<'a> {
        let r = s.seg.reader();
        Block {
            ids: r.ids(),
            codes: if r.fastscan_codes().is_some() {
                &[]
            } else {
                // Viewed, not read: every accessor checks the rows it hands out.
                r.codes()
            },
            labels: r.labels(),
            lists: r.lists(),
            vectors: s.seg.vectors(),
            vector_dim: r.meta().vectors.map_or(0, |v| v.1 as usize),
            list_index: r.list_index(),
            code_bytes: self.code_bytes(),
            deletions: s.deletions.as_deref(),
            row_offset: 0,
            segment: Some(r),
            hidden: None,
            log_attributes: None,
        }
    }

    fn log_block<'a>(
        &'a self,
        l: &'a super::log_rows::LogView,
        b: &'a super::log_rows::LogBatchEntry,
    ) -> Block<'a> {
        Block {
            ids: &b.batch.ids,
            codes: &b.batch.codes,
            labels: b.batch.labels.as_deref(),
            lists: b.batch.lists.as_deref(),
            vectors: b.batch.vectors.as_ref().map(|v| v.as_slice()),
            vector_dim: l.meta.vectors.map_or(0, |v| v.dim as usize),
            list_index: b.list_index.as_deref(),
            code_bytes: self.code_bytes(),
            deletions: l.deletions.as_deref(),
            row_offset: b.first_row,
            segment: None,
            hidden: None,
            log_attributes: b.batch.attributes.as_ref(),
        }
    }

    /// Every live row (segments in manifest order, then the log in insertion order). The
    /// columns a [`Row`] shows are checked in every segment first (see [`Block`]): a damaged
    /// block is an error before any row is returned.
    pub fn rows(&self) -> Result<impl Iterator<Item = Row<'_>> + '_> {
        let blocks: Vec<Block<'_>> = self.blocks().collect();
        for b in &blocks {
            b.check_row_columns()?;
        }
        let mut rows = Vec::with_capacity(blocks.len());
        for b in blocks {
            let codes = b.codes()?;
            rows.push((b, codes));
        }
        Ok(rows.into_iter().flat_map(|(b, codes)| {
            let cb = b.code_bytes;
            (0..b.rows())
                .filter(move |&i| !b.is_deleted(i))
                .map(move |i| Row {
                    id: b.ids[i],
                    code: codes.get(i * cb..(i + 1) * cb).unwrap_or(&[]),
                    label: b.label_unchecked(i),
                    list: b.list_unchecked(i),
                })
        }))
    }

    /// The live row with `id`, if any. May fail when a segment's id column does not match its
    /// checksum (checked on the first lookup in a segment opened without column checks).
    pub fn get(&self, id: u64) -> Result<Option<Row<'_>>> {
        Ok(self.locate(id)?.map(|(b, i)| b.row(i)).transpose()?)
    }

    /// The block holding the live row `id` and the row's index in it (for its stored vector,
    /// list id, label, … through the [`Block`] accessors).
    pub fn locate(&self, id: u64) -> Result<Option<(Block<'_>, usize)>> {
        Ok(match self.v.find(id)? {
            None => None,
            Some(Loc::Segment { slot, row }) => {
                Some((self.segment_block(&self.v.segments[slot]), row as usize))
            }
            Some(Loc::Log { row }) => self.v.log.as_ref().and_then(|l| {
                let k = l.batch_of(row)?;
                let b = &l.batches[k];
                Some((self.log_block(l, b), (row - b.first_row) as usize))
            }),
        })
    }

    /// The index's attribute columns in this version (names, types, defaults; FORMAT.md §7.4):
    /// what a filter may name besides `id`, and what [`Snapshot::attribute_values`] reads.
    pub fn attribute_schema(&self) -> &Schema {
        &self.v.manifest.attributes
    }

    /// Columns `columns` of the live rows `ids`, one row per id in `ids`' order (what
    /// `search --with` shows beside the hits). A row stored before a column was added holds
    /// the column's default. A name the schema lacks is [`StorageError::InvalidArgument`]
    /// naming it; an id that is not live is [`StorageError::UnknownId`]; a damaged attribute
    /// section is the format error naming its file.
    pub fn attribute_values(&self, ids: &[u64], columns: &[&str]) -> Result<Attributes> {
        let schema = self.attribute_schema();
        let mut cols = Vec::with_capacity(columns.len());
        for &name in columns {
            let (i, t) = schema.find(name).ok_or_else(|| {
                StorageError::invalid(
                    self.dir(),
                    "columns",
                    format!("no attribute column {name:?} (columns: {})", schema.known()),
                )
            })?;
            cols.push((name, i, t));
        }
        let mut builders: Vec<ColumnBuilder<'_>> = cols
            .iter()
            .map(|&(_, _, t)| ColumnBuilder::new(t))
            .collect();
        for &id in ids {
            let (b, row) = self.locate(id)?.ok_or_else(|| StorageError::UnknownId {
                dir: self.dir().to_path_buf(),
                id,
            })?;
            let stored = b.attributes()?;
            for (k, &(name, i, t)) in cols.iter().enumerate() {
                let v = stored
                    .and_then(|a| a.column_named(name))
                    .filter(|c| c.column_type() == t)
                    .and_then(|c| c.value(row));
                match v {
                    Some(v) => builders[k].push_value(&v),
                    None => {
                        let d = schema.default_value(i).cloned().unwrap_or(Value::zero(t));
                        builders[k].push_value(&d)
                    }
                }
            }
        }
        let named = cols
            .iter()
            .zip(builders)
            .map(|(&(name, _, _), b)| (name.to_owned(), b.finish()))
            .collect();
        Attributes::new(ids.len(), named).map_err(|e| StorageError::attributes(self.dir(), e))
    }

    /// The stored vector of the live row `id`, widened to f32 (`None`: no such live row, or the
    /// index stores no vectors).
    pub fn vector(&self, id: u64) -> Result<Option<Vec<f32>>> {
        Ok(match self.locate(id)? {
            Some((b, i)) => b.vector(i)?,
            None => None,
        })
    }

    /// The stored vectors of the live rows `ids`, widened to f32, one row of `dim` values per
    /// id in `ids`' order (FAISS's `reconstruct_n`; f16 vectors come back as stored, rounded).
    /// An index that stores no vectors is [`StorageError::InvalidArgument`] naming `ids` (it
    /// keeps codes only: decode those with the model instead); an id that is not live is
    /// [`StorageError::UnknownId`]. Everything is checked before the output is sized.
    pub fn reconstruct(&self, ids: &[u64]) -> Result<(Vec<f32>, usize)> {
        let Some(spec) = self.vector_spec() else {
            return Err(StorageError::invalid(
                self.dir(),
                "ids",
                "this index stores no vectors (create or build it with stored vectors); \
                 decode its codes with the model instead",
            ));
        };
        let dim = spec.dim as usize;
        let mut out = Vec::new();
        for &id in ids {
            match self.vector(id)? {
                Some(v) if v.len() == dim => out.extend_from_slice(&v),
                Some(v) => {
                    return Err(StorageError::invalid(
                        self.dir(),
                        "ids",
                        format!(
                            "row {id}: stored vector of {} values, expected {dim}",
                            v.len()
                        ),
                    ));
                }
                None => {
                    return Err(StorageError::UnknownId {
                        dir: self.dir().to_path_buf(),
                        id,
                    });
                }
            }
        }
        Ok((out, dim))
    }
}
