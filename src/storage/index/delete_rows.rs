//! Rows out: deletes by id, visible at the next commit. A deleted row of the active log is
//! marked in the log's deletion bitmap at once; deletes of sealed rows wait in memory, by id,
//! resolved at commit. A deleted labelled row leaves its class in the same commit
//! ([`ClassStats`]).

use std::collections::HashSet;

use crate::storage::error::{Result, StorageError};

use super::classes::ClassStats;
use super::handle::Index;
use super::writer_state::{WLoc, Writer};

impl Index {
    /// Marks located live rows deleted (segment rows by id, resolved at commit).
    pub(super) fn stage_deletes(w: &mut Writer, rows: &[(u64, WLoc)]) {
        for &(id, loc) in rows {
            match loc {
                WLoc::Segment { .. } => {
                    w.pending.segment_deletes.insert(id);
                }
                WLoc::Log(row) => {
                    if let Some(l) = w.log.as_mut() {
                        l.delete(row);
                    }
                }
            }
        }
        w.pending.changed |= !rows.is_empty();
    }

    /// Deletes the live rows with these ids (visible at the next commit). An id that is not
    /// live is [`StorageError::UnknownId`] and nothing is deleted. A deleted row that counts in
    /// a class leaves it in the same commit (its stored vector is subtracted from its class's
    /// sum: [`ClassStats::Update`]; [`Index::delete_with`] can keep the classes as they are).
    pub fn delete(&self, ids: &[u64]) -> Result<()> {
        self.delete_with(ids, ClassStats::Update)
    }

    /// [`Index::delete`], with what happens to the class statistics of deleted labelled rows
    /// (see [`ClassStats`]): with `Update`, each one's stored vector is subtracted from its
    /// class's sum and the class's count drops by one, and an index without stored vectors
    /// refuses ([`StorageError::ClassStatsNeedVectors`]); with `Keep` the classes stay as they
    /// are. Everything is checked before anything is staged.
    pub fn delete_with(&self, ids: &[u64], stats: ClassStats) -> Result<()> {
        self.delete_rows(ids, stats, false).map(|_| ())
    }

    /// [`Index::delete_with`] that skips the ids that are not live (as the index will see
    /// them at the next commit, staged writes included) instead of refusing the batch:
    /// `codedb delete --ignore-missing`, Python's `delete(ignore_missing=True)`. Returns the
    /// skipped ids, in `ids`' order; the others are staged for deletion. Nothing is staged when
    /// every id is missing.
    pub fn delete_live(&self, ids: &[u64], stats: ClassStats) -> Result<Vec<u64>> {
        self.delete_rows(ids, stats, true)
    }

    /// The delete of [`Index::delete_with`] and [`Index::delete_live`]; returns the ids skipped
    /// (only with `skip_missing`).
    fn delete_rows(&self, ids: &[u64], stats: ClassStats, skip_missing: bool) -> Result<Vec<u64>> {
        if ids.is_empty() {
            return Err(self.invalid("ids", "no ids given"));
        }
        let mut seen = HashSet::with_capacity(ids.len());
        if let Some(&dup) = ids.iter().find(|&&x| !seen.insert(x)) {
            return Err(self.invalid("ids", format!("id {dup} appears twice")));
        }
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let mut locs = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for &id in ids {
            match w.find(id)? {
                Some(loc) => locs.push((id, loc)),
                None if skip_missing => missing.push(id),
                None => {
                    return Err(StorageError::UnknownId {
                        dir: self.shared.dir.clone(),
                        id,
                    });
                }
            }
        }
        let records = self.removal_records(&w, &locs, stats)?;
        let staged_classes = if records.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, &records)?)
        };
        Self::stage_deletes(&mut w, &locs);
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(missing)
    }
}
