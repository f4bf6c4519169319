//! Queries over a [`Snapshot`]: k-NN search ([`Snapshot::search`]), radius lookup
//! ([`Snapshot::search_radius`]), NCM classification ([`Snapshot::classify`]) and training
//! from an index's codes ([`train_from_index`]). Each uses the snapshot's own model, so no
//! search can run with a model other than the one that encoded the index.
//!
//! Scan plans: a query batch over a snapshot compiles to one kernel per block and the per-block
//! top-k lists merge into one list per query, best first, ties by smaller id.
//!
//! | mode | codes | query becomes | kernel | score |
//! |---|---|---|---|---|
//! | `hamming` | binary | its code ([`Model::encode`]) | Hamming | bits that differ (smaller better) |
//! | `asym` | binary | projected, not binarised ([`Model::project`]) | LUT-8 | Σ of the margins of disagreeing bits, see [`asym`] (smaller better) |
//! | `adc` / `adc-ip` | PQ8 / PQ4 | M tables of 256 / 16 ([`Model::adc_tables`]) | LUT-8 / LUT-4, or fast-scan for PQ4 segments of format 1.2 (in place, exact re-scoring) | squared L2 (smaller) / inner product (larger) |
//! | `float` / `float-ip` | float32 / float16 | projected ([`Model::project`]) | dense | squared L2 / inner product |
//! | `exact` / `exact-ip` | any, with stored vectors | the raw query | dense | squared L2 / inner product |
//!
//! Re-ranking ([`SearchParams::rerank`]) takes the R best by the mode's score and re-scores
//! them against stored vectors (see [`candidates`]); radius lookups of short binary codes use a
//! hash table ([`HammingTable`]). Deleted rows never appear. With `k` larger than the number
//! of live rows, every live row is returned.
//!
//! **Inverted class lists.** [`SearchParams::lists`] restricts every mode (re-ranking and exact
//! included) to the rows of the given lists — contiguous runs of each block, found through its
//! list index ([`list_scope`]) — and [`SearchParams::nprobe`] picks, per query, the lists of
//! the nearest class means (IVF with the class means as coarse quantiser, [`probe`]). Rows
//! without a list id are scanned by every list-restricted search (see [`list_scope`];
//! [`list_coverage`] counts them); on an index where no row has one, such a search is refused
//! ([`SearchError::NoLists`]).
//!
//! **IVF models** (`ivf:K,pq:Mx8`, see [`ivf_scan`]): the lists are the model's k-means cells
//! and the codes encode residuals. `adc` scores them per probed list (`nprobe`, default all K
//! lists: the flat residual search); the exact modes restrict to the probed cells; `lists`
//! (class ids) and text or classifier queries are refused.
//!
//! **Layout.** One file per query kind, each checking, preparing and re-ranking its own
//! queries: image k-NN (the plan in [`execute`], the scan of the rows in scope in [`block_scan`]), text
//! ([`text`]), by examples ([`examples`]), radius ([`radius`]), IVF lists ([`ivf_scan`],
//! [`probe`]); the words they share in [`query`]; every `impl Snapshot` of the room, the
//! entry points, in [`api`].

mod api;
pub mod asym;
mod block_scan;
mod candidates;
mod error;
mod examples;
mod execute;
pub(crate) mod filter;
mod float_codes;
mod ivf_filter;
mod ivf_scan;
pub(crate) mod list_scope;
mod mih;
pub mod mode;
mod pq4_fastscan;
mod probe;
mod query;
pub mod radius;
mod text;
mod train_from_index;
pub mod vectors;

pub use asym::{asym_bit_terms, asym_tables};
pub use error::SearchError;
pub use examples::{
    CodeClassifier, DEFAULT_RANDOM_NEGATIVES, ExampleClassifier, ExampleParams, ExampleSet,
    Negatives, example_groups,
};
pub use ivf_filter::{
    ListCounts, ProbeDecision, QueryPlan, ivf_filter_scans_passing, ivf_probe_decision,
};
pub use list_scope::{ListCoverage, list_coverage};
pub use mih::{AUTO_MIN_ROWS, AUTO_WORK_DIVISOR, MihChoice, mih_search};
pub use mode::{MODE_NAMES, SearchMode, UnknownMode};
pub use query::{Hit, SearchParams};
pub use radius::{HammingTable, MAX_RADIUS, MAX_TABLE_CODE_BYTES};
pub use text::text_tables;
pub use train_from_index::{fit_classifier_from_index, train_from_index};
pub use vectors::{MemoryVectors, RowRef, SnapshotVectors, VectorSource};
