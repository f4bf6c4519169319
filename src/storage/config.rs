//! Settings of an open index: when the active log is sealed, which versions garbage collection
//! keeps, how segments are opened, and the compaction policy.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::format::{LoadMode, VectorSpec};

use super::error::{Result, StorageError};
use super::fs::{FileSystem, StdFs};

/// How a version's files are opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Map segments (default) or copy them into memory (for deployments where another program
    /// might truncate a mapped file: FORMAT.md §1.1).
    pub load: LoadMode,
    /// Segment files smaller than this have every column checksummed when opened
    /// (`ChecksumPolicy::All`). Larger ones are opened with `ChecksumPolicy::SkipColumns`, which
    /// checks the header, section table and metadata but not the row columns, so opening a
    /// multi-gigabyte segment stays O(1); their rows are checked on first touch instead, block by
    /// block, and remembered (FORMAT.md §3.5, [`Block`](super::block::Block)); every column is checksummed
    /// before compaction copies it, and `codedb verify` checks everything. Default 16 MiB.
    pub full_check_below: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            load: LoadMode::Mmap,
            full_check_below: 16 << 20,
        }
    }
}

/// Which versions garbage collection keeps (FORMAT.md §11.5).
///
/// A version is kept when it is one of the newest `keep_versions`, or its manifest is younger
/// than `keep_for`, or a snapshot in this process still pins it. Readers in *other* processes
/// are protected by the first two rules only: a reader opens every file of its version right
/// after reading the manifest (and retries with the newest version if a file vanished), so it
/// needs its version to survive only for that short window; once opened, its mappings stay valid
/// even after GC unlinks the files (POSIX).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Keep at least this many newest versions (≥ 1; default 3, so a damaged newest manifest
    /// still has older versions to fall back to).
    pub keep_versions: usize,
    /// Keep every version younger than this (default 60 s).
    pub keep_for: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_versions: 3,
            keep_for: Duration::from_secs(60),
        }
    }
}

/// Settings of an index handle.
#[derive(Debug, Clone)]
pub struct Config {
    /// When the active log holds at least this many bytes at a commit, that commit seals it
    /// into an immutable segment (default 64 MiB). The log's rows are also held in memory, so
    /// this bounds the writer's memory for committed rows.
    pub seal_bytes: u64,
    /// Which old versions survive garbage collection.
    pub retention: Retention,
    /// How each version's files are opened.
    pub read: ReadOptions,
    /// Run garbage collection at the end of every compaction (default true).
    pub auto_gc: bool,
    /// How long opening a writer retries while the lock is held before it reports
    /// [`StorageError::Locked`] (default 200 ms). It absorbs the moment in which a child process
    /// being spawned by this process still holds a copy of a just-released lock (see
    /// `lock.rs`); it is not a queue for writers.
    pub lock_wait: Duration,
    /// The file-system seam every change goes through (tests inject failures here).
    pub fs: Arc<dyn FileSystem>,
    /// Write multi-index hashing tables into every segment of binary codes of 32-256 bits that
    /// sealing or compaction writes (format 1.6, FORMAT.md §3.6; default true). They cost
    /// `4 m` bytes per row and make exact Hamming k-NN sub-linear (`SearchParams::mih`);
    /// building them holds at most 1 GiB besides their offsets (`mih_build::BUILD_BYTES`).
    pub mih_tables: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seal_bytes: 64 << 20,
            retention: Retention::default(),
            read: ReadOptions::default(),
            auto_gc: true,
            lock_wait: Duration::from_millis(200),
            fs: Arc::new(StdFs),
            mih_tables: true,
        }
    }
}

impl Config {
    pub(crate) fn validate(&self, dir: &Path) -> Result<()> {
        if self.seal_bytes == 0 {
            return Err(StorageError::invalid(
                dir,
                "config.seal_bytes",
                "must be at least 1",
            ));
        }
        if self.retention.keep_versions == 0 {
            return Err(StorageError::invalid(
                dir,
                "config.retention.keep_versions",
                "must be at least 1 (the newest version is always kept)",
            ));
        }
        Ok(())
    }
}

/// Settings fixed when an index is created ([`super::Index::create_with`]) and kept in every
/// manifest (FORMAT.md §7.3): opening an index reads them back, they never change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CreateOptions {
    /// Store a vector beside every row's code (for re-ranking), of this type and dimension.
    /// Every added row must then carry one
    /// ([`RowBatch::vectors`](super::row_batch::RowBatch::vectors)); `None` (default): no row
    /// may.
    pub store_vectors: Option<VectorSpec>,
    /// The index's attribute columns — names, types, defaults — that writes may give
    /// (`AddOptions::attributes`) and filters test (docs/filtering.md). Default: none.
    /// Columns can be added later with [`super::Index::add_column`] (older rows take the
    /// default); never removed or retyped.
    pub attributes: crate::format::Schema,
}

/// Which segments a compaction merges (size-tiered, FORMAT.md §11.4).
///
/// Each mergeable segment is put in a size tier by its stored bytes: tier 0 below
/// `tier_floor_bytes`, then tier *t* for `[floor · factor^(t-1), floor · factor^t)`. A tier
/// holding at least `min_merge` segments has its smallest `max_merge` merged into one segment,
/// so every row is rewritten O(log_factor(N)) times over the life of an index. A segment with
/// deleted rows making up at least `max_deleted_fraction` of it is rewritten even alone, to drop
/// them. `full` merges every mergeable segment into one. The choice is `merge_policy::plan`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPolicy {
    /// Fewest segments of one tier that are merged (default 4).
    pub min_merge: usize,
    /// Most segments merged into one at a time (default 16).
    pub max_merge: usize,
    /// Ratio between the byte sizes of consecutive tiers.
    pub tier_factor: u64,
    /// Stored bytes below which a segment is in tier 0.
    pub tier_floor_bytes: u64,
    /// Rewrite a segment on its own once at least this share of its rows is deleted (default
    /// 0.2, i.e. 20 %; 0 = any deleted row; 1 = only fully deleted segments).
    pub max_deleted_fraction: f64,
    /// Fold class-table deltas into a new base table.
    pub fold_classes: bool,
    /// Rows per streaming buffer: the merge holds O(buffer_rows × row width + segments) bytes,
    /// whatever the size of the index.
    pub buffer_rows: usize,
    /// Memory the merge may spend on its row order (4 bytes per run of consecutive rows of one
    /// source; one run per row when ids interleave row by row). Within it, the order is
    /// computed once and replayed for every column; past it, the merge recomputes the order
    /// per column instead, so memory stays bounded whatever the index size. Default 64 MiB.
    pub order_budget_bytes: usize,
    /// Merge every mergeable segment into one, whatever the tiers.
    pub full: bool,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            min_merge: 4,
            max_merge: 16,
            tier_factor: 8,
            tier_floor_bytes: 4 << 20,
            max_deleted_fraction: 0.2,
            fold_classes: true,
            buffer_rows: 64 * 1024,
            order_budget_bytes: 64 << 20,
            full: false,
        }
    }
}

impl CompactionPolicy {
    /// Merge every mergeable segment into one, drop all deleted rows, fold class deltas.
    pub fn full() -> CompactionPolicy {
        CompactionPolicy {
            full: true,
            ..CompactionPolicy::default()
        }
    }

    pub(crate) fn validate(&self, dir: &Path) -> Result<()> {
        let bad = |arg: &str, detail: &str| Err(StorageError::invalid(dir, arg, detail));
        if self.min_merge < 2 {
            return bad("policy.min_merge", "must be at least 2");
        }
        if self.max_merge < self.min_merge {
            return bad("policy.max_merge", "must be at least min_merge");
        }
        if self.tier_factor < 2 {
            return bad("policy.tier_factor", "must be at least 2");
        }
        if self.tier_floor_bytes == 0 {
            return bad("policy.tier_floor_bytes", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.max_deleted_fraction) {
            return bad(
                "policy.max_deleted_fraction",
                "must be a finite value in [0, 1]",
            );
        }
        if self.buffer_rows == 0 {
            return bad("policy.buffer_rows", "must be at least 1");
        }
        Ok(())
    }

    /// The size tier of a segment of `bytes` stored bytes.
    pub(crate) fn tier(&self, bytes: u64) -> u32 {
        let mut t = 0;
        let mut bound = self.tier_floor_bytes;
        while bytes >= bound {
            t += 1;
            bound = bound.saturating_mul(self.tier_factor);
            if bound == u64::MAX {
                break;
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_grow_by_the_factor() {
        let p = CompactionPolicy {
            tier_floor_bytes: 100,
            tier_factor: 10,
            ..CompactionPolicy::default()
        };
        assert_eq!(p.tier(0), 0);
        assert_eq!(p.tier(99), 0);
        assert_eq!(p.tier(100), 1);
        assert_eq!(p.tier(999), 1);
        assert_eq!(p.tier(1000), 2);
        assert!(p.tier(u64::MAX) > 10);
    }

    #[test]
    fn invalid_settings_are_refused_by_name() {
        let d = Path::new("idx");
        for (p, name) in [
            (
                CompactionPolicy {
                    min_merge: 1,
                    ..CompactionPolicy::default()
                },
                "min_merge",
            ),
            (
                CompactionPolicy {
                    max_merge: 3,
                    ..CompactionPolicy::default()
                },
                "max_merge",
            ),
            (
                CompactionPolicy {
                    max_deleted_fraction: f64::NAN,
                    ..CompactionPolicy::default()
                },
                "max_deleted_fraction",
            ),
            (
                CompactionPolicy {
                    buffer_rows: 0,
                    ..CompactionPolicy::default()
                },
                "buffer_rows",
            ),
        ] {
            let e = p.validate(d).unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
        let c = Config {
            seal_bytes: 0,
            ..Config::default()
        };
        assert!(
            c.validate(d)
                .unwrap_err()
                .to_string()
                .contains("seal_bytes")
        );
    }
}
