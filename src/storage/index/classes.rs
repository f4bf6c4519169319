//! Class statistics follow the rows: a labelled row of a class counts in that class's count and
//! descriptor sum (FORMAT.md §5), so removing the row — a delete, or the old row of an upsert —
//! removes its contribution in the same commit, as a delta with `removed` images and a negative
//! sum (format 1.3). Class means (Mensink et al., TPAMI 2013, eq. 2) then stay the means of the
//! images that are really there, through deletes, upserts and compaction.
//!
//! **The rule**: in an index with a class table, every live row whose label is a class of the
//! table counts in it. The writer keeps it true: rows added with such a label must be counted by
//! the class records of the same call (`Index::add` computes them; encoded rows must bring
//! them), and a new class may not take an id that live rows already carry as a label
//! (they were never counted in it).
//!
//! **The descriptor of a removed row** is what the class sum holds for it: the row's stored
//! vector. With f32 vectors that is the input itself; with f16 vectors the class layer adds the
//! f16-rounded vector, exactly what is stored, so the subtraction is exact either way. An index
//! that stores no vectors has no copy of the descriptor: removing a counted row is then refused
//! ([`StorageError::ClassStatsNeedVectors`]) unless the caller asks for [`ClassStats::Keep`] —
//! the class keeps the row's image in its count and sum, as it keeps images given to
//! `add-class` that were never rows.
//!
//! Class records are staged like rows ([`Index::add_class`]; [`Index::add_new_classes`] plans
//! them from images, a given mean or the hierarchy with `classes::plan_new_classes`) and
//! published by the next commit as one class-table delta.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::classes::class_ref::{ClassLookup, ClassRef};
use crate::classes::{ClassError, NewClass, PlannedClass, plan_new_classes};
use crate::format::append_log::NO_LABEL;
use crate::format::class_table::class_name_problem;
use crate::format::{ClassRecord, ClassTable, FileId, RowColumn};

use super::handle::Index;
use super::writer_state::{WLoc, Writer};
use crate::storage::error::{Result, StorageError};
use crate::storage::log_rows::LogBatchEntry;

/// What a delete or an upsert does to the class statistics of the labelled rows it removes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ClassStats {
    /// Subtract each removed row's descriptor (its stored vector) from its class's count and
    /// sum, in the same commit. The default. Needs stored vectors when a removed row counts in
    /// a class.
    #[default]
    Update,
    /// Leave every class's count and sum as they are: the removed rows stay in their classes'
    /// means (as images the classes learnt from). For indexes that store no vectors.
    Keep,
}

/// The log batch holding log row `row`, and the row's index in it.
pub(crate) fn log_row(
    batches: &[std::sync::Arc<LogBatchEntry>],
    row: u64,
) -> Option<(&LogBatchEntry, usize)> {
    let k = batches.partition_point(|b| b.first_row + b.rows() <= row);
    let b = batches.get(k)?;
    (row >= b.first_row).then(|| (&**b, (row - b.first_row) as usize))
}

/// The class record of `id` in the committed table or the staged records.
fn class_of<'a>(w: &'a Writer, id: u32) -> Option<&'a ClassRecord> {
    let find = |t: &'a ClassTable| t.classes.iter().find(|c| c.id == id);
    w.committed
        .classes
        .as_deref()
        .and_then(find)
        .or_else(|| w.pending.classes.as_ref().and_then(find))
}

/// Ids of every class in the committed table and the staged records.
fn class_ids(w: &Writer) -> HashSet<u32> {
    w.committed
        .classes
        .iter()
        .map(|t| &**t)
        .chain(w.pending.classes.as_ref())
        .flat_map(|t| t.classes.iter().map(|c| c.id))
        .collect()
}

impl Index {
    /// The class ids of `classes` (each a name or an id) in the class table as the next commit
    /// will publish it (committed classes plus those staged), for [`AddOptions::labels`](super::AddOptions::labels). A
    /// class that does not exist is [`ClassError::UnknownClass`] (in [`StorageError::Class`])
    /// naming `classes[i]`.
    pub fn class_ids(&self, classes: &[ClassRef]) -> Result<Vec<u32>> {
        let table = self.staged_classes()?;
        let lookup = ClassLookup::new(table.as_ref());
        let mut resolved: HashMap<&ClassRef, u32> = HashMap::new();
        let mut ids = Vec::with_capacity(classes.len());
        for (i, r) in classes.iter().enumerate() {
            let id = match resolved.get(r) {
                Some(id) => *id,
                None => {
                    let c = lookup.resolve(r, &format!("classes[{i}]"))?;
                    resolved.insert(r, c.id);
                    c.id
                }
            };
            debug_assert_ne!(id, NO_LABEL);
            ids.push(id);
        }
        Ok(ids)
    }

    /// Stages class records for the class table (visible at the next commit, as one delta
    /// file). Per class id, counts and sums add to the existing class and centroids replace
    /// its centroids; new ids create classes (FORMAT.md §5). The records are checked against
    /// the table as it will be after the commit: names and parents must agree with existing
    /// classes, parents must exist, sums must be finite and of the table's dimension.
    pub fn add_class(&self, classes: &[ClassRecord]) -> Result<()> {
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let pending = self.stage_classes(&w, classes)?;
        w.pending.classes = Some(pending);
        w.pending.changed = true;
        Ok(())
    }

    /// The class table as the next commit will publish it: the committed table with the
    /// staged records folded in (`None` when there is neither).
    pub fn staged_classes(&self) -> Result<Option<ClassTable>> {
        let w = self.shared.writer.lock();
        let dir = &self.shared.dir;
        let committed = w.committed.classes.clone();
        match (committed, &w.pending.classes) {
            (c, None) => Ok(c.map(|t| (*t).clone())),
            (Some(base), Some(p)) => {
                let mut t = (*base).clone();
                t.fold(p, dir)?;
                Ok(Some(t))
            }
            (None, Some(p)) => {
                let mut t = ClassTable {
                    file_id: p.delta_of.unwrap_or(FileId::ZERO),
                    dim: p.dim,
                    delta_of: None,
                    classes: Vec::new(),
                };
                t.fold(p, dir)?;
                Ok(Some(t))
            }
        }
    }

    /// The pending class table after staging `classes` (checked against the committed table
    /// with everything staged so far), without installing it.
    pub(super) fn stage_classes(&self, w: &Writer, classes: &[ClassRecord]) -> Result<ClassTable> {
        let dir = &self.shared.dir;
        let Some(first) = classes.first() else {
            return Err(self.invalid("classes", "no class records given"));
        };
        let committed = w.committed.classes.clone();
        let dim = committed
            .as_ref()
            .map(|t| t.dim)
            .or(w.pending.classes.as_ref().map(|t| t.dim))
            .unwrap_or(first.sum.len() as u32);
        let exists = |id: u32| {
            let has = |t: &ClassTable| t.classes.iter().any(|c| c.id == id);
            committed.as_deref().is_some_and(has) || w.pending.classes.as_ref().is_some_and(has)
        };
        if let Some(problem) = classes
            .iter()
            .filter(|c| !exists(c.id))
            .find_map(|c| class_name_problem(&c.name))
        {
            return Err(self.invalid("classes", format!("class name {problem}")));
        }
        self.check_new_class_ids(w, classes)?;
        if let Some(c) = classes.iter().find(|c| c.sum.len() != dim as usize) {
            return Err(self.invalid(
                "classes",
                format!(
                    "class {} has a sum of {} values, the table's dimension is {dim}",
                    c.id,
                    c.sum.len()
                ),
            ));
        }
        let base = match &committed {
            Some(t) => (**t).clone(),
            None => ClassTable {
                file_id: FileId::generate(),
                dim,
                delta_of: None,
                classes: Vec::new(),
            },
        };
        let mut pending = w.pending.classes.clone().unwrap_or_else(|| ClassTable {
            file_id: FileId::generate(),
            dim,
            delta_of: Some(base.file_id),
            classes: Vec::new(),
        });
        pending.delta_of = Some(base.file_id);
        let call = ClassTable {
            file_id: FileId::generate(),
            dim,
            delta_of: Some(pending.file_id),
            classes: classes.to_vec(),
        };
        let map = |e: crate::format::FormatError| match e {
            crate::format::FormatError::Corrupt { detail, .. } => self.invalid("classes", detail),
            other => StorageError::Format(other),
        };
        pending.fold(&call, dir).map_err(map)?;
        let mut trial = base;
        trial.fold(&pending, dir).map_err(map)?;
        Ok(pending)
    }

    /// The class records that take the rows `rows` (live rows about to be deleted or
    /// replaced) out of their classes: per class, `removed` = its rows among them and `sum` =
    /// minus their descriptors. Empty with [`ClassStats::Keep`], without a class table, or when
    /// no row counts in a class. Reads every column it uses checksummed.
    pub(crate) fn removal_records(
        &self,
        w: &Writer,
        rows: &[(u64, WLoc)],
        stats: ClassStats,
    ) -> Result<Vec<ClassRecord>> {
        if stats == ClassStats::Keep
            || (w.committed.classes.is_none() && w.pending.classes.is_none())
        {
            return Ok(Vec::new());
        }
        let dim = w
            .committed
            .classes
            .as_deref()
            .or(w.pending.classes.as_ref())
            .map_or(0, |t| t.dim as usize);
        let mut acc: BTreeMap<u32, (u64, Vec<f64>)> = BTreeMap::new();
        let mut v = vec![0f32; dim];
        for &(id, loc) in rows {
            let (label, has_vector) = match loc {
                WLoc::Segment { slot, row } => {
                    let Some(s) = w.committed.segments.get(slot) else {
                        continue;
                    };
                    // Labels and vectors decide what a class loses: never from unchecked bytes.
                    s.seg.verify_columns()?;
                    let r = row as usize;
                    let label = s.seg.reader().labels().and_then(|l| l.get(r).copied());
                    let fits = s
                        .seg
                        .reader()
                        .meta()
                        .vectors
                        .is_some_and(|(_, d)| d as usize == dim);
                    let has = fits && s.seg.vectors().is_some_and(|x| x.row_into(r, dim, &mut v));
                    (label, has)
                }
                WLoc::Log(row) => {
                    let Some((b, r)) = w.log.as_ref().and_then(|l| log_row(&l.batches, row)) else {
                        continue;
                    };
                    let label = b.batch.labels.as_ref().and_then(|l| l.get(r).copied());
                    let fits = w
                        .log
                        .as_ref()
                        .and_then(|l| l.meta.vectors)
                        .is_some_and(|s| s.dim as usize == dim);
                    let has = fits
                        && b.batch
                            .vectors
                            .as_ref()
                            .is_some_and(|x| x.as_slice().row_into(r, dim, &mut v));
                    (label, has)
                }
            };
            let Some(label) = label.filter(|&l| l != NO_LABEL) else {
                continue;
            };
            let Some(class) = class_of(w, label) else {
                continue;
            };
            if !has_vector {
                return Err(StorageError::ClassStatsNeedVectors {
                    dir: self.shared.dir.clone(),
                    id,
                    class: label,
                    name: class.name.clone(),
                });
            }
            let (n, sum) = acc.entry(label).or_insert_with(|| (0, vec![0f64; dim]));
            *n += 1;
            for (s, x) in sum.iter_mut().zip(&v) {
                *s -= *x as f64;
            }
        }
        Ok(acc
            .into_iter()
            .filter_map(|(id, (removed, sum))| {
                let c = class_of(w, id)?;
                Some(ClassRecord {
                    id,
                    name: c.name.clone(),
                    parent: c.parent,
                    count: 0,
                    sum,
                    centroids: Vec::new(),
                    removed,
                })
            })
            .collect())
    }

    /// Refuses rows labelled with a class (of the table, or created by `classes`) that the
    /// call's class records do not count: `classes` must add at least as many images to the
    /// class as the batch has rows with its label.
    pub(crate) fn check_labels_counted(
        &self,
        w: &Writer,
        labels: Option<&[u32]>,
        classes: &[ClassRecord],
    ) -> Result<()> {
        let Some(labels) = labels else {
            return Ok(());
        };
        let mut known = class_ids(w);
        known.extend(classes.iter().map(|c| c.id));
        if known.is_empty() {
            return Ok(());
        }
        let mut rows: HashMap<u32, u64> = HashMap::new();
        for l in labels.iter().filter(|l| known.contains(l)) {
            *rows.entry(*l).or_default() += 1;
        }
        let mut counted: HashMap<u32, u64> = HashMap::new();
        for c in classes {
            *counted.entry(c.id).or_default() += c.count;
        }
        let mut rows: Vec<(u32, u64)> = rows.into_iter().collect();
        rows.sort_unstable();
        for (id, n) in rows {
            let m = counted.get(&id).copied().unwrap_or(0);
            if m < n {
                return Err(self.invalid(
                    "labels",
                    format!(
                        "{n} row(s) carry label {id}, a class of the class table, but the class \
                         records given with them count {m} image(s) of it: a labelled row counts \
                         in its class's mean (Index::add adds its descriptor; with encoded \
                         rows, give the class's count and sum)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Refuses class records that create a class whose id live rows already carry as their
    /// label: those rows were never counted in it, so its mean would leave them out and
    /// deleting them would subtract what was never added.
    pub(crate) fn check_new_class_ids(&self, w: &Writer, classes: &[ClassRecord]) -> Result<()> {
        let known = class_ids(w);
        let new: BTreeSet<u32> = classes
            .iter()
            .map(|c| c.id)
            .filter(|id| !known.contains(id))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let used = labels_in_use(w)?;
        if let Some(id) = new.intersection(&used).next() {
            return Err(self.invalid(
                "classes",
                format!(
                    "class id {id} is the label of live rows that no class counts; a new class \
                     cannot take it (its mean would leave those rows out): choose another id"
                ),
            ));
        }
        Ok(())
    }

    /// The labels carried by live rows, committed or staged (segment label columns checked as
    /// they are read: FORMAT.md §3.5).
    pub fn row_labels(&self) -> Result<BTreeSet<u32>> {
        labels_in_use(&self.shared.writer.lock())
    }

    /// Plans `new` classes (ids, parents, means and priors) against the class table as the next
    /// commit will have it and stages them; visible at the next [`Index::commit`]. On error
    /// nothing is staged. Descriptors are of the model's input dimension.
    pub fn add_new_classes(
        &self,
        new: &[NewClass<'_>],
    ) -> std::result::Result<Vec<PlannedClass>, StorageError> {
        let table = self.staged_classes()?;
        let dim = self.model_file().input_dim as usize;
        // Rows labelled before their class existed were never counted in it: a new class takes
        // none of their labels (automatic ids go past them, given ones are refused).
        let labels = self.row_labels()?;
        let known = |id: u32| {
            table
                .as_ref()
                .is_some_and(|t| t.classes.iter().any(|c| c.id == id))
        };
        if let Some(id) = new
            .iter()
            .filter_map(|c| c.id)
            .find(|&id| labels.contains(&id) && !known(id))
        {
            return Err(ClassError::DuplicateId {
                id,
                detail: "live rows carry it as their label, and no class counts them".into(),
            }
            .into());
        }
        let max_label = labels.last().copied();
        let planned = plan_new_classes(table.as_ref(), dim, new, max_label)?;
        let records: Vec<ClassRecord> = planned.iter().map(|p| p.record.clone()).collect();
        self.add_class(&records)?;
        Ok(planned)
    }
}

/// The labels of the writer's live rows: committed segments (less their deleted rows) and the
/// active log (committed and staged rows, less deleted ones). One pass over the label columns;
/// labels below 2^16 (every class id in practice) are marked in a bitmap, so 10^6 rows cost
/// about a millisecond.
pub(crate) fn labels_in_use(w: &Writer) -> Result<BTreeSet<u32>> {
    const SMALL: usize = 1 << 16;
    let mut small = vec![false; SMALL];
    let mut out = BTreeSet::new();
    let mut mark = |x: u32| match small.get_mut(x as usize) {
        Some(s) => *s = true,
        None if x != NO_LABEL => {
            out.insert(x);
        }
        None => {}
    };
    for s in &w.committed.segments {
        s.seg.reader().check_column(RowColumn::Labels)?;
        if let Some(l) = s.seg.reader().labels() {
            if s.deletions.is_none() {
                l.iter().for_each(|&x| mark(x));
            } else {
                for (r, &x) in l.iter().enumerate() {
                    if !s.is_deleted(r as u64) {
                        mark(x);
                    }
                }
            }
        }
    }
    if let Some(log) = &w.log {
        for b in &log.batches {
            if let Some(l) = &b.batch.labels {
                for (r, &x) in l.iter().enumerate() {
                    if !log.is_deleted(b.first_row + r as u64) {
                        mark(x);
                    }
                }
            }
        }
    }
    out.extend((0..SMALL as u32).filter(|&x| small[x as usize]));
    Ok(out)
}
