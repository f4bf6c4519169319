//! Query by examples (Bergamo, Torresani, Fitzgibbon, *PiCoDes*, NIPS 2011, §1 and §3.2): a
//! few example vectors of a category nobody indexed for; a linear SVM learned at query time on
//! their codes ranks every live row, at scan speed.
//!
//! **Features.** A code `h` stands for `decode(h)` ([`Model::decode`]): the ±1 vector of its
//! bits (bit 1 → +1, bit 0 → −1), the PQ reconstruction, or the stored floats. The examples
//! are encoded with the index's model and decoded; the SVM ([`train_linear_svm`]) learns
//! `score(h) = b + wᵀ decode(h)` (larger is better).
//!
//! **Scan.** `w` is a query in the model's projected space, scored by the kernels text queries
//! use ([`super::text`]): binary codes by LUT-8 tables of the per-bit terms (bit 1 adds `+w_j`,
//! bit 0 adds `−w_j`: per code byte a table of 256 partial sums), PQ codes by inner-product
//! ADC, float codes by the dense dot product; `b` is added to every hit's score.
//!
//! **Negatives** are given, or drawn from the index itself (seeded, without replacement, among
//! the live rows; they may include positives of the category, which is the usual price of
//! unlabelled negatives). **Class balance:** each class's rows weigh `n / (2 n_class)` in the
//! SVM cost, so one positive against a thousand negatives still pulls as hard as they do; one
//! positive is allowed.
//!
//! **Re-ranking** re-scores the candidates with a classifier of the stored vectors'
//! projections `project(v)`: on PQ and float codes the same `w` (their decoded space is the
//! projected space); on binary codes a second SVM trained on the examples' projections (the
//! sampled negatives' stored vectors are read for it). A given classifier on binary codes
//! cannot re-rank (its weights are over bits).

use ndarray::ArrayView2;

use crate::format::CodeKind;
use crate::model::Model;
use crate::model::classify::{LinearSvm, LinearSvmOptions, train_linear_svm};
#[cfg(doc)]
use crate::storage::Snapshot;

use super::error::{SearchError, invalid};
use super::query::{SearchParams, check_params};

/// Random negatives a query by examples draws when none are given (`codedb search --examples`
/// without `--negatives`, Python's `search_examples` without `negatives=`): this many live
/// rows, or every live row when there are fewer.
pub const DEFAULT_RANDOM_NEGATIVES: usize = 1000;

/// The negatives of a query by examples.
#[derive(Debug, Clone, Copy)]
pub enum Negatives<'a> {
    /// Given negative examples (raw input vectors, like the positives).
    Given(ArrayView2<'a, f32>),
    /// `count` live rows of the index, drawn without replacement with `seed`.
    Sampled {
        /// How many rows.
        count: usize,
        /// The seed of the draw.
        seed: u64,
    },
}

/// One example set of a batch query by examples ([`Snapshot::search_examples_batch`]): the
/// positives of one category and its negatives.
#[derive(Debug, Clone, Copy)]
pub struct ExampleSet<'a> {
    /// Positive examples (raw input vectors).
    pub positives: ArrayView2<'a, f32>,
    /// Its negatives.
    pub negatives: Negatives<'a>,
}

/// The example sets of rows labelled by `groups` (one id per row, as a group column): the
/// distinct ids in increasing order, each with the positions of its rows in row order. The
/// layout of `codedb search --examples F --example-groups G`.
pub fn example_groups(groups: &[i64]) -> Vec<(i64, Vec<usize>)> {
    let mut ids: Vec<i64> = groups.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut out: Vec<(i64, Vec<usize>)> = ids.into_iter().map(|g| (g, Vec::new())).collect();
    for (i, g) in groups.iter().enumerate() {
        if let Ok(j) = out.binary_search_by_key(g, |(id, _)| *id) {
            out[j].1.push(i);
        }
    }
    out
}

/// A linear classifier of codes: `score(h) = bias + weights · decode(h)` (see the module doc
/// for `decode`); `weights` has [`Model::project_dim`] values.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeClassifier {
    /// One weight per projected dimension (per bit for binary codes).
    pub weights: Vec<f32>,
    /// The intercept.
    pub bias: f32,
}

impl CodeClassifier {
    /// From `D + 1` values, the last the bias (the layout of `--classifier w.npy`).
    pub fn from_values(values: &[f32]) -> CodeClassifier {
        let (w, b) = values.split_at(values.len().saturating_sub(1));
        CodeClassifier {
            weights: w.to_vec(),
            bias: b.first().copied().unwrap_or(0.0),
        }
    }

    pub(super) fn from_svm(svm: &LinearSvm) -> CodeClassifier {
        CodeClassifier {
            weights: svm.weights.iter().map(|&v| v as f32).collect(),
            bias: svm.bias as f32,
        }
    }
}

/// The classifiers a query by examples trained, and what they were trained on.
#[derive(Debug, Clone, PartialEq)]
pub struct ExampleClassifier {
    /// Over the codes' decoded vectors: what the scan scores.
    pub codes: CodeClassifier,
    /// Over the projections of the stored vectors, for re-ranking binary codes (trained only
    /// when re-ranking is asked for on binary codes).
    pub projected: Option<CodeClassifier>,
    /// Positive examples used.
    pub positives: usize,
    /// Negative examples used.
    pub negatives: usize,
    /// SVM passes over the examples (of the codes' classifier).
    pub iterations: usize,
    /// Whether the SVM met its stopping tolerance.
    pub converged: bool,
}

/// What a query by examples does: the search (k, mode, re-ranking, lists, threads) and the SVM.
#[derive(Debug, Clone, PartialEq)]
pub struct ExampleParams {
    /// The search; `mode` must apply to the codes and not be exact.
    pub search: SearchParams,
    /// The SVM (default: squared hinge, C = 1, tolerance 0.1; see [`ExampleParams::new`]).
    pub svm: LinearSvmOptions,
}

impl ExampleParams {
    /// `search` with the default SVM, stopping at LIBLINEAR's default tolerance for its dual
    /// solvers (0.1) rather than scikit-learn's 1e-4: with class-balanced costs (a positive
    /// weighs hundreds of negatives) 1e-4 did not converge in 1,000 passes on the digits (5
    /// positives, 500 sampled negatives, 32 bits).
    pub fn new(search: SearchParams) -> ExampleParams {
        ExampleParams {
            search,
            svm: LinearSvmOptions {
                tol: 0.1,
                ..LinearSvmOptions::default()
            },
        }
    }
}

/// `e` with the example set named in an argument error's detail.
pub(super) fn in_set(i: usize, e: SearchError) -> SearchError {
    match e {
        SearchError::InvalidArgument { argument, detail } => SearchError::InvalidArgument {
            argument,
            detail: format!("example set {i}: {detail}"),
        },
        other => other,
    }
}

/// An SVM of `pos` against `neg`, each class's rows weighing `n / (2 n_class)`.
pub(super) fn train_balanced<'a>(
    pos: ArrayView2<'a, f32>,
    neg: ArrayView2<'a, f32>,
    opts: &LinearSvmOptions,
) -> Result<LinearSvm, SearchError> {
    let n = pos.nrows() + neg.nrows();
    let x = ndarray::concatenate(ndarray::Axis(0), &[pos, neg])
        .map_err(|e| crate::model::ModelError::shape("examples", e))?;
    let labels: Vec<bool> = (0..n).map(|i| i < pos.nrows()).collect();
    let weight = |m: usize| n as f64 / (2.0 * m as f64);
    let weights: Vec<f64> = labels
        .iter()
        .map(|&p| weight(if p { pos.nrows() } else { neg.nrows() }))
        .collect();
    Ok(train_linear_svm(x.view(), &labels, Some(&weights), opts)?)
}

/// `x` must be non-empty rows of the model's input dimension, all finite.
pub(super) fn check_examples(
    model: &Model,
    what: &str,
    x: ArrayView2<f32>,
) -> Result<(), SearchError> {
    if x.nrows() == 0 {
        return Err(invalid(what, "no rows"));
    }
    if x.ncols() != model.input_dim() {
        return Err(invalid(
            what,
            format!(
                "{} columns, the index's model takes {}-D vectors",
                x.ncols(),
                model.input_dim()
            ),
        ));
    }
    if let Some(((r, c), v)) = x.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(invalid(what, format!("row {r}, column {c} is {v}")));
    }
    Ok(())
}

/// Argument checks of a classifier scan (`u`: one row of [`Model::project_dim`] weights).
pub(crate) fn check_linear(
    model: &Model,
    u: ArrayView2<f32>,
    params: &SearchParams,
) -> Result<(), SearchError> {
    if params.mode.is_exact() {
        return Err(invalid(
            "mode",
            format!(
                "{}: a classifier scores the codes (re-rank with stored vectors instead)",
                params.mode.name()
            ),
        ));
    }
    if model.code_kind() == CodeKind::Binary && model.code_bits() != model.project_dim() {
        return Err(invalid(
            "model",
            format!(
                "{} code bits for {} projected dimensions",
                model.code_bits(),
                model.project_dim()
            ),
        ));
    }
    if u.nrows() == 0 || u.ncols() != model.project_dim() || u.iter().any(|v| !v.is_finite()) {
        return Err(invalid(
            "classifier",
            format!(
                "weights must be {} finite values (the model's projected dimension)",
                model.project_dim()
            ),
        ));
    }
    check_params(model, params)
}
