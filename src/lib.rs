//! codedb: an embedded, versioned, checksummed index database for compact image codes.
//!
//! Train a model that turns descriptors into codes, build an index, search it, add a class
//! from a few images and classify with the class means — the index owns its model, so a
//! snapshot is all a query needs:
//!
//! ```
//! use codedb::{BuildOptions, ClassSource, Index, Model, NewClass, PipelineSpec};
//! use codedb::{SearchMode, SearchParams, TrainOptions};
//! use ndarray::{Array2, s};
//!
//! // 600 descriptors of 16 dimensions in three classes (yours come from numpy or a CNN).
//! let x = Array2::from_shape_fn((600, 16), |(i, j)| (10 * (i % 3) + (i * 7 + j * 13) % 5) as f32);
//! let labels: Vec<u32> = (0..600).map(|i| (i % 3) as u32).collect();
//! let (model, _) = Model::train(&PipelineSpec::parse("pca-itq:8")?, x.view(), &TrainOptions::default())?;
//! let dir = tempfile::tempdir()?;
//! let opts = BuildOptions { labels: Some(&labels), ..BuildOptions::default() };
//! let index = Index::build(dir.path(), &model, x.view(), &opts, &mut |_| {})?;
//! let hits = index.snapshot().search(x.slice(s![0..1, ..]), &SearchParams::new(5, SearchMode::Asym))?;
//! assert_eq!(hits[0].len(), 5);
//! let new = x.slice(s![0..4, ..]).mapv(|v| v + 40.0); // a fourth class, from four images
//! index.add_new_classes(&[NewClass::new("new", ClassSource::Images(new.view()))])?;
//! index.commit()?;
//! assert_eq!(index.snapshot().classify(new.view(), 1)?[0][0].name, "new");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Everything an application needs is at the crate root: [`Index`] (the single writer of an
//! index directory: create, open, build, add, upsert, delete, commit, compact, gc),
//! [`Snapshot`] (one pinned version: search, search_radius, classify), [`Model`] and its
//! training, the options, the reports and the errors ([`Error`] gathers each room's). Five
//! modules serve other users, each a flat list:
//!
//! - [`format`](mod@format): the file format as a product — readers and writers of every codedb file
//!   (FORMAT.md), for tools that read or write them without the engine.
//! - [`model`]: stage-level training — PCA, ITQ, LSH, RFF, PQ/OPQ stages, k-means, and the
//!   classifiers and metric learning of Mensink et al. — for research on the models.
//! - [`research`]: the zero-shot class prior (Mensink et al. §6) and the choice of its weight,
//!   for research on classes.
//! - [`kernels`]: the scan kernels, for benchmarks and experiments.
//! - [`admin`]: inspection, verification, versions, recovery records and the file-system
//!   hooks of fault injection, for tools and operators.
//!
//! ARCHITECTURE.md walks the rooms behind them; README.md and the book in docs/ are the user's
//! guide (their Rust examples run as doctests of this crate).

// The engine's public API is documented in full. Here, not in Cargo.toml's workspace lints:
// the CLI's library (codedb_cli: the lab's readers, protocols, bench cases) would need ~200
// more doc lines for items no embedder sees.
#![deny(missing_docs)]

/// The user's guide's examples — README.md and every page of the book in docs/ — compiled and
/// run by `cargo test --doc` (docs/index.md, "About the examples", says which blocks run where).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The book's pages, one doctest item each (so a failure names its page).
#[cfg(doctest)]
macro_rules! book_pages {
    ($($name:ident = $file:literal;)*) => {
        $(
            #[doc = include_str!(concat!("../docs/", $file))]
            pub struct $name;
        )*
    };
}

#[cfg(doctest)]
book_pages! {
    BookGettingStarted = "getting-started.md";
    BookConcepts = "concepts.md";
    BookCli = "cli.md";
    BookSearching = "searching.md";
    BookTextQueries = "text-queries.md";
    BookQueryByExamples = "query-by-examples.md";
    BookClasses = "classes.md";
    BookClassification = "classification.md";
    BookRust = "rust.md";
    BookPython = "python.md";
    BookDistributed = "distributed.md";
    BookFaiss = "faiss.md";
    BookDurability = "durability.md";
    BookOperating = "operating.md";
    BookPerformance = "performance.md";
    BookEvaluation = "evaluation.md";
    BookFormat = "format.md";
    BookMethods = "methods.md";
    BookMethodItqClaims = "method-itq-claims.md";
    BookMethodSupervised = "method-supervised.md";
    BookMethodPicodes = "method-picodes.md";
    BookMethodPeers = "method-peers.md";
    BookIndex = "index.md";
}

// The rooms (ARCHITECTURE.md). Private: what a user needs is re-exported below or in a facade.
mod classes;
mod error;
mod scan;
mod search;
mod storage;

// The facades: each a flat, curated list for one kind of user (its module doc says whom).
pub mod admin;
pub mod format;
pub mod kernels;
pub mod model;
pub mod research;

// The search room's internals for the benchmarks and tests that measure them piece by piece:
// not an API, so not documented (ARCHITECTURE.md, "The front door").
#[doc(hidden)]
pub mod internals;

// The front door: what an embedder needs, at the crate root.
pub use classes::{
    ClassError, ClassMeans, ClassRef, ClassScore, ClassSource, DEFAULT_PRIOR_WEIGHT,
    ListAssignment, MeanSource, NewClass, PlannedClass, PriorScope,
};
pub use error::Error;
pub use format::FormatError;
pub use model::{
    DEFAULT_SEED, FaissTranslation, Model, ModelError, PipelineSpec, TrainEvent, TrainOptions,
    TrainReport,
};
pub use scan::ScanError;
pub use search::MihChoice;
pub use search::filter::{
    AttributeError, Attributes, AttributesBuilder, Column, ColumnBuilder, ColumnData, ColumnType,
    FilterError, ID_COLUMN, IdSelector, MAX_FILTER_BYTES, MAX_FILTER_DEPTH, Predicate, RowFilter,
    Schema, Value, parse_timestamp,
};
pub use search::{
    CodeClassifier, DEFAULT_RANDOM_NEGATIVES, ExampleClassifier, ExampleParams, ExampleSet,
    Negatives, example_groups,
};
pub use search::{
    Hit, ListCounts, ListCoverage, MODE_NAMES, ProbeDecision, QueryPlan, SearchError, SearchMode,
    SearchParams, UnknownMode, fit_classifier_from_index, ivf_filter_scans_passing,
    ivf_probe_decision, train_from_index,
};
pub use storage::{
    AddOptions, BuildOptions, ClassStats, CompactProgress, CompactProgressFn, CompactionPolicy,
    CompactionReport, Config, CreateOptions, EncodedOptions, GcReport, Index, MergeReason,
    MergeReport, ReadOptions, Retention, Row, RowBatch, SealedCompaction, Snapshot, StorageError,
};
