//! The index handle: the single writer of an index directory (FORMAT.md §11).
//!
//! Writes (`add`, `upsert`, `delete`, `add_new_classes`) are staged: rows go to the
//! active log at once (unsynced), deletes and class records wait in memory. `commit` makes them
//! durable and visible together, as one new manifest version; until then no snapshot and no
//! other process sees them, and a crash loses exactly the uncommitted ones.
//!
//! Concurrency inside the process: every method takes `&self`. Writes serialise on one mutex;
//! [`Index::snapshot`] only clones an `Arc` under a read lock held for that clone, so readers
//! never wait for a commit, a compaction or a garbage collection. Compaction merges outside the
//! writer mutex and takes it only to publish (see `compact.rs`).
//!
//! Failure model: an I/O error part-way through an add, `commit` or a compaction's publish
//! step *poisons* the handle: later writes return [`StorageError::Poisoned`]. The reason is
//! that after a failed write or fsync the state of the page cache is unknown (a retried fsync
//! can report success for data the kernel already dropped), so the only safe continuation is to
//! reopen, which recovers the last committed version from disk. Argument errors (a duplicate id,
//! a wrong shape) are checked before anything is written and never poison.
//!
//! One file per concern: `open` (create, open), `add_rows` (rows in: the front door,
//! descriptors encoded, filed under lists, counted in classes, and the low-level path of rows
//! already encoded, appended to the active log), `delete_rows` (deletes by id), `columns` (attribute columns added later),
//! `classes` (class records and the class statistics of rows), `commit`, `seal` (log →
//! segment), `compact` (apply the merge policy, publish), `gc`, `accept_loss` (accept the loss
//! of damaged manifests), `build` (a whole index from raw descriptors). The handle itself,
//! [`Index`] and the state behind its `Arc`, is in `handle`; the writer's state in
//! `writer_state`. This file only declares and re-exports.

mod accept_loss;
mod add_rows;
mod build;
mod classes;
mod columns;
mod commit;
mod compact;
mod delete_rows;
mod gc;
mod handle;
mod open;
mod seal;
mod writer_state;

pub use add_rows::{AddOptions, EncodedOptions};
pub use build::BuildOptions;
pub use classes::ClassStats;
pub use compact::{
    CompactProgress, CompactProgressFn, CompactionReport, MergeReport, SealedCompaction,
};
pub use gc::GcReport;
pub use handle::Index;
