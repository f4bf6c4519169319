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
//! ARCHITECTURE.md walks the rooms below; README.md is the user's guide (its examples run as
//! doctests of this crate).
//!
//! - [`format`]: bytes ⇄ structures — the versioned, checksummed file format (FORMAT.md).
//! - [`scan`]: kernels — Hamming, LUT, dense, top-k, with runtime CPU dispatch.
//! - [`model`]: the math — PCA, ITQ, LSH, SKLSH, RFF, PQ/OPQ stages, pipelines, training.
//! - [`classes`]: class-mean math — projected means, priors, zero-shot means.
//! - [`storage`]: files and versions — the index directory, the writer, snapshots, compaction,
//!   garbage collection, inspection, verification.
//! - [`search`]: queries over a snapshot — k-NN, radius, re-ranking, NCM classification.

/// README.md's examples, compiled and run by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod classes;
pub mod error;
pub mod format;
pub mod model;
pub mod scan;
pub mod search;
pub mod storage;

// The front door: what an embedder needs, at the crate root.
pub use classes::{
    ClassError, ClassRef, ClassScore, ClassSource, ListAssignment, NewClass, PriorScope,
};
pub use error::Error;
pub use format::FormatError;
pub use model::{Model, ModelError, PipelineSpec, TrainEvent, TrainOptions, TrainReport};
pub use scan::ScanError;
pub use search::{Hit, ListCoverage, SearchError, SearchMode, SearchParams};
pub use storage::{
    AddOptions, BuildOptions, ClassStats, CompactionPolicy, Config, CreateOptions, EncodedOptions,
    Index, ReadOptions, Retention, RowBatch, Snapshot, StorageError,
};
