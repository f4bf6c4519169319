//! Which segments a compaction rewrites: the merge policy (FORMAT.md §11.4). It only chooses;
//! `merger.rs` does the k-way merge of what it chose and `index/compact.rs` publishes it.
//!
//! Size-tiered, as Lucene's and tantivy's log merge policies are: segments of similar size are
//! merged once a tier holds enough of them, so every row is rewritten O(log N) times. Deleted
//! rows are reclaimed by a delete-ratio rule like Lance's `materialize_deletions_threshold` and
//! tantivy's `del_docs_ratio_before_merge`: a segment whose deleted share reaches
//! `max_deleted_fraction` is rewritten on its own even when its tier is not due.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::config::CompactionPolicy;
use super::loaded_version::VersionState;

/// Why the policy chose a group of segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeReason {
    /// At least `min_merge` segments of one size tier.
    Tier,
    /// One segment whose deleted share reached `max_deleted_fraction`, rewritten to drop them.
    Deletes,
    /// `full`: every segment of one shape.
    Full,
}

/// One merge the policy chose: indices into the version's segments, ascending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlannedMerge {
    pub segments: Vec<usize>,
    pub reason: MergeReason,
}

/// Whether a segment with `rows` rows of which `deleted` are deleted is due for a rewrite on its
/// own: at least one row deleted, and a deleted share of at least `threshold` (so 0 reclaims any
/// deleted row). An empty segment is always due.
pub(crate) fn deletes_due(rows: u64, deleted: u64, threshold: f64) -> bool {
    rows == 0 || (deleted > 0 && deleted as f64 >= threshold * rows as f64)
}

/// Chooses the merges of a compaction of `v`.
///
/// Only segments with the same columns shape are merged together: with or without list ids,
/// and with the same stored vectors (type and dimension, or none). Segments whose vectors are
/// zstd-compressed (never written by the engine) are left alone: reading them needs the whole
/// column decoded, which would break the merge's bounded memory.
pub(crate) fn plan(v: &VersionState, policy: &CompactionPolicy) -> Vec<PlannedMerge> {
    let mut shapes: BTreeMap<(bool, u8, u32), Vec<usize>> = BTreeMap::new();
    for (i, s) in v.segments.iter().enumerate() {
        let r = s.seg.reader();
        if r.vectors_compressed() {
            continue;
        }
        let (t, d) = r.meta().vectors.map_or((0, 0), |(t, d)| (t as u8, d));
        shapes
            .entry((r.lists().is_some(), t, d))
            .or_default()
            .push(i);
    }
    let mut merges = Vec::new();
    for cands in shapes.into_values() {
        let due = |i: usize| {
            let e = &v.segments[i].entry;
            deletes_due(e.rows, e.deleted, policy.max_deleted_fraction)
        };
        if policy.full {
            let dirty = cands.iter().any(|&i| v.segments[i].entry.deleted > 0);
            if cands.len() >= 2 || (cands.len() == 1 && dirty) {
                merges.push(PlannedMerge {
                    segments: cands,
                    reason: MergeReason::Full,
                });
            }
            continue;
        }
        let mut tiers: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &i in &cands {
            tiers
                .entry(policy.tier(v.segments[i].seg.file_len()))
                .or_default()
                .push(i);
        }
        let mut used = HashSet::new();
        for (_, mut t) in tiers {
            t.sort_by_key(|&i| (v.segments[i].seg.file_len(), i));
            while t.len() >= policy.min_merge {
                let n = t.len().min(policy.max_merge);
                let g: Vec<usize> = t.drain(..n).collect();
                used.extend(g.iter().copied());
                merges.push(PlannedMerge {
                    segments: g,
                    reason: MergeReason::Tier,
                });
            }
        }
        for &i in &cands {
            if !used.contains(&i) && due(i) {
                merges.push(PlannedMerge {
                    segments: vec![i],
                    reason: MergeReason::Deletes,
                });
            }
        }
    }
    for m in &mut merges {
        m.segments.sort_unstable();
    }
    merges.sort_unstable_by(|a, b| a.segments.cmp(&b.segments));
    merges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletes_are_due_from_the_threshold_on_and_never_without_a_deleted_row() {
        assert!(!deletes_due(100, 19, 0.2));
        assert!(deletes_due(100, 20, 0.2));
        assert!(deletes_due(100, 1, 0.0));
        assert!(!deletes_due(100, 0, 0.0));
        assert!(deletes_due(100, 100, 1.0));
        assert!(!deletes_due(100, 99, 1.0));
        assert!(deletes_due(0, 0, 0.5));
    }
}
