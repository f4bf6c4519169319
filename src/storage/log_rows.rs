//! The active log's rows in memory: batches shared (`Arc`) between the writer and every
//! snapshot, each with the id range and order its lookups need.

use std::sync::Arc;

use crate::format::{ActiveLogEntry, DeletionBitmap, ListEntry, LogBatch, LogMeta};

/// One batch of the active log and where its rows sit in the log.
#[derive(Debug)]
pub(crate) struct LogBatchEntry {
    pub batch: LogBatch,
    /// Log row number of the batch's first row.
    pub first_row: u64,
    pub min_id: u64,
    pub max_id: u64,
    /// `None` when ids increase strictly (auto-assigned ids always do); otherwise the rows of
    /// the batch in increasing id order.
    order: Option<Vec<u32>>,
    /// Where each list's rows start, when the batch has list ids grouped by list (the writer
    /// always groups them; a log from elsewhere may not).
    pub list_index: Option<Vec<ListEntry>>,
}

impl LogBatchEntry {
    pub(crate) fn new(batch: LogBatch, first_row: u64) -> LogBatchEntry {
        let ids = &batch.ids;
        let min_id = ids.iter().copied().min().unwrap_or(0);
        let max_id = ids.iter().copied().max().unwrap_or(0);
        let order = if ids.windows(2).all(|w| w[0] < w[1]) {
            None
        } else {
            let mut o: Vec<u32> = (0..ids.len() as u32).collect();
            o.sort_unstable_by_key(|&r| ids[r as usize]);
            Some(o)
        };
        let list_index = batch.lists.as_ref().and_then(|l| {
            let mut index: Vec<ListEntry> = Vec::new();
            for (r, &list) in l.iter().enumerate() {
                match index.last() {
                    Some(e) if e.list == list => {}
                    Some(e) if e.list > list => return None,
                    _ => index.push(ListEntry {
                        list,
                        first_row: r as u64,
                    }),
                }
            }
            Some(index)
        });
        LogBatchEntry {
            batch,
            first_row,
            min_id,
            max_id,
            order,
            list_index,
        }
    }

    pub(crate) fn rows(&self) -> u64 {
        self.batch.ids.len() as u64
    }

    /// The row (in this batch) holding `id`; ids are unique within a batch.
    fn find(&self, id: u64) -> Option<u64> {
        if id < self.min_id || id > self.max_id {
            return None;
        }
        let ids = &self.batch.ids;
        match &self.order {
            None => ids.binary_search(&id).ok().map(|r| r as u64),
            Some(o) => o
                .binary_search_by_key(&id, |&r| ids[r as usize])
                .ok()
                .map(|k| o[k] as u64),
        }
    }
}

/// The live log row holding `id` among `batches`, given which log rows are deleted. An id may
/// appear in several batches (deleted, then added again); at most one of them is live.
pub(crate) fn find_live(
    batches: &[Arc<LogBatchEntry>],
    id: u64,
    deleted: impl Fn(u64) -> bool,
) -> Option<u64> {
    batches.iter().rev().find_map(|b| {
        b.find(id)
            .map(|r| b.first_row + r)
            .filter(|&row| !deleted(row))
    })
}

/// The committed part of the active log, as one version sees it.
#[derive(Debug, Clone)]
pub(crate) struct LogView {
    pub entry: ActiveLogEntry,
    pub meta: LogMeta,
    pub batches: Vec<Arc<LogBatchEntry>>,
    pub deletions: Option<Arc<DeletionBitmap>>,
}

impl LogView {
    pub(crate) fn is_deleted(&self, row: u64) -> bool {
        self.deletions.as_ref().is_some_and(|d| d.is_deleted(row))
    }

    pub(crate) fn find_live(&self, id: u64) -> Option<u64> {
        find_live(&self.batches, id, |r| self.is_deleted(r))
    }

    /// The position in `batches` of the batch holding log row `row`.
    pub(crate) fn batch_of(&self, row: u64) -> Option<usize> {
        let k = self
            .batches
            .partition_point(|b| b.first_row + b.rows() <= row);
        let b = self.batches.get(k)?;
        (row >= b.first_row).then_some(k)
    }
}
