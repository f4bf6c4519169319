//! Class-mean tables and the nearest-class-mean classifier on an index (Mensink, Verbeek,
//! Perronnin, Csurka, *Distance-based image classification: generalizing to new classes at
//! near-zero cost*, TPAMI 2013).
//!
//! The class table (FORMAT.md §5) stores per class an id, a name, a parent, the image count
//! and the f64 sum of the raw descriptors. This module gives it its meaning:
//!
//! - [`class_means`]: projected means Wμ_c and biases b_c = −½‖Wμ_c‖² (eq. 9-11) under the
//!   index's model (a snapshot keeps them: `Snapshot::class_means`);
//! - [`ncm_classify`]: NCM (eq. 1) as a dense dot-product scan over the class means (over a
//!   snapshot: `Snapshot::classify`);
//! - [`add_class`]: new classes from images, a given mean, or zero-shot from the hierarchy;
//! - [`zero_shot`]: the zero-shot prior (eq. 29) and the MAP mean (eq. 30);
//! - [`prior_weight`]: choosing eq. 30's m on held-out data;
//! - [`label_sums`]: per-label counts and sums — the class table of a labelled data set and the
//!   deltas of a labelled add (the `Index` methods that stage them live in `storage::index`);
//! - [`list_assign`]: inverted-list ids at insert (the row's label, or its nearest class mean).

pub mod add_class;
pub mod class_means;
pub mod class_ref;
pub mod error;
pub mod label_sums;
pub mod list_assign;
pub mod ncm_classify;
pub mod prior_weight;
pub mod zero_shot;

pub use add_class::{
    ClassSource, DEFAULT_PRIOR_WEIGHT, MeanSource, NewClass, PlannedClass, plan_new_classes,
};
pub use class_means::ClassMeans;
pub use class_ref::ClassRef;
pub use error::ClassError;
pub use list_assign::{ListAssignment, assign_lists};
pub use ncm_classify::ClassScore;
pub use prior_weight::{DEFAULT_PRIOR_CANDIDATES, PriorWeightChoice, choose_prior_weight};
pub use zero_shot::{PriorScope, map_mean, zero_shot_prior};
