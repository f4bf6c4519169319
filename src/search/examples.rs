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

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::format::CodeKind;
use crate::model::Model;
use crate::model::classify::{LinearSvm, LinearSvmOptions, train_linear_svm};
use crate::storage::Snapshot;

use super::error::{SearchError, invalid};
use super::vectors::{RowRef, SnapshotVectors, VectorSource};
use super::{Hit, Queries, SearchParams, check_params, search_rows};

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

    fn from_svm(svm: &LinearSvm) -> CodeClassifier {
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

impl Snapshot {
    /// The `params.search.k` live rows the SVM trained on `positives` against `negatives`
    /// scores highest (see the module doc), best first, ties by smaller id; scores are
    /// `b + wᵀ decode(h)`. Errors name the argument: `examples` / `negatives` of the wrong
    /// width, non-finite or empty, more sampled negatives than live rows, a mode that is
    /// exact or does not apply to the codes, then the search's errors.
    pub fn search_examples(
        &self,
        positives: ArrayView2<f32>,
        negatives: Negatives<'_>,
        params: &ExampleParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let c = self.train_examples(positives, negatives, params)?;
        self.search_trained(&c, &params.search)
    }

    /// Several queries by examples in one call, for evaluation and serving: result `i` is
    /// what [`Snapshot::search_examples`] returns for `sets[i]` with the same `params` (the
    /// same seed for every set, as separate calls with that seed). The SVMs train in
    /// parallel, then each set is scanned. Every set is checked and trained before any scan;
    /// an error names the set (`example set i: …`).
    pub fn search_examples_batch(
        &self,
        sets: &[ExampleSet<'_>],
        params: &ExampleParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        use rayon::prelude::*;
        let trained: Vec<ExampleClassifier> = sets
            .par_iter()
            .enumerate()
            .map(|(i, set)| {
                self.train_examples(set.positives, set.negatives, params)
                    .map_err(|e| in_set(i, e))
            })
            .collect::<Result<_, _>>()?;
        trained
            .iter()
            .enumerate()
            .map(|(i, c)| {
                self.search_trained(c, &params.search)
                    .map_err(|e| in_set(i, e))
            })
            .collect()
    }

    /// The search of [`Snapshot::search_examples`] with classifiers already trained by
    /// [`Snapshot::train_examples`] (with the same `rerank` setting).
    pub fn search_trained(
        &self,
        c: &ExampleClassifier,
        params: &SearchParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let binary = self.model()?.code_kind() == CodeKind::Binary;
        if params.rerank.is_some() && binary && c.projected.is_none() {
            return Err(invalid(
                "rerank",
                "these classifiers were trained without re-ranking (train with rerank set)",
            ));
        }
        let rerank = c.projected.as_ref().unwrap_or(&c.codes);
        self.scan_linear(&c.codes, Some(rerank), params)
    }

    /// The classifiers [`Snapshot::search_examples`] trains, without searching.
    pub fn train_examples(
        &self,
        positives: ArrayView2<f32>,
        negatives: Negatives<'_>,
        params: &ExampleParams,
    ) -> Result<ExampleClassifier, SearchError> {
        let model = self.model()?;
        check_examples(model, "examples", positives)?;
        let rerank_bits = params.search.rerank.is_some() && model.code_kind() == CodeKind::Binary;
        let (neg_codes, neg_vectors) = match negatives {
            Negatives::Given(n) => {
                check_examples(model, "negatives", n)?;
                (model.encode(n)?, rerank_bits.then(|| n.to_owned()))
            }
            Negatives::Sampled { count, seed } => self.sample_rows(count, seed, rerank_bits)?,
        };
        let pos = model.decode(&model.encode(positives)?)?;
        let neg = model.decode(&neg_codes)?;
        let svm = train_balanced(pos.view(), neg.view(), &params.svm)?;
        let projected = match neg_vectors {
            Some(v) if rerank_bits => {
                let (p, n) = (model.project(positives)?, model.project(v.view())?);
                Some(CodeClassifier::from_svm(&train_balanced(
                    p.view(),
                    n.view(),
                    &params.svm,
                )?))
            }
            _ => None,
        };
        Ok(ExampleClassifier {
            codes: CodeClassifier::from_svm(&svm),
            projected,
            positives: pos.nrows(),
            negatives: neg.nrows(),
            iterations: svm.iterations,
            converged: svm.converged,
        })
    }

    /// The `params.k` live rows `classifier` scores highest, best first, ties by smaller id.
    /// Re-ranking applies the same classifier to the stored vectors' projections, so it is
    /// refused on binary codes (the weights are over bits). Errors: `classifier` of the wrong
    /// length ([`Model::project_dim`] weights) or non-finite; then as
    /// [`Snapshot::search_examples`].
    pub fn search_classifier(
        &self,
        classifier: &CodeClassifier,
        params: &SearchParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let model = self.model()?;
        if params.rerank.is_some() && model.code_kind() == CodeKind::Binary {
            return Err(invalid(
                "rerank",
                "a classifier over the bits of binary codes does not apply to the stored \
                 vectors; re-ranking needs a query by examples (a second SVM is trained on \
                 their projections)",
            ));
        }
        self.scan_linear(classifier, Some(classifier), params)
    }

    /// Scans with `codes` (and re-ranks with `rerank` when asked), adding the bias.
    fn scan_linear(
        &self,
        codes: &CodeClassifier,
        rerank: Option<&CodeClassifier>,
        params: &SearchParams,
    ) -> Result<Vec<Hit>, SearchError> {
        let model = self.model()?;
        let d = model.project_dim();
        for (c, what) in [
            (Some(codes), "classifier"),
            (rerank, "classifier (re-ranking)"),
        ] {
            let Some(c) = c else { continue };
            if c.weights.len() != d {
                return Err(invalid(
                    "classifier",
                    format!(
                        "{what}: {} values, the index's codes need {} (D = {d} weights, then \
                         the bias)",
                        c.weights.len() + 1,
                        d + 1
                    ),
                ));
            }
            if c.weights.iter().chain([&c.bias]).any(|v| !v.is_finite()) {
                return Err(invalid("classifier", format!("{what}: non-finite value")));
            }
        }
        let row = |c: &CodeClassifier| Array2::from_shape_vec((1, d), c.weights.clone());
        let shape = |e| crate::model::ModelError::shape("classifier", e);
        let u = row(codes).map_err(shape)?;
        let r = rerank.map(row).transpose().map_err(shape)?;
        let q = Queries::Linear(u.view(), r.as_ref().map(Array2::view));
        let hits = search_rows(self, q, params, None)?;
        let bias = match (params.rerank, rerank) {
            (Some(_), Some(r)) => r.bias,
            _ => codes.bias,
        };
        Ok(hits
            .into_iter()
            .next()
            .unwrap_or_default()
            .into_iter()
            .map(|h| Hit {
                id: h.id,
                score: h.score + bias,
            })
            .collect())
    }

    /// The codes of `count` live rows drawn with `seed` (positions sorted by block and row),
    /// and their stored vectors when `vectors`.
    fn sample_rows(
        &self,
        count: usize,
        seed: u64,
        vectors: bool,
    ) -> Result<(Vec<u8>, Option<Array2<f32>>), SearchError> {
        let live = self.live_rows() as usize;
        if count == 0 {
            return Err(invalid(
                "negatives",
                "0 random negatives: ask for at least 1",
            ));
        }
        if count > live {
            return Err(invalid(
                "negatives",
                format!(
                    "{count} random negatives asked for, the index has {live} live rows; give \
                     negatives, or ask for fewer"
                ),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut picks = rand::seq::index::sample(&mut rng, live, count).into_vec();
        picks.sort_unstable();
        let source = if vectors {
            Some(SnapshotVectors::new(self)?)
        } else {
            None
        };
        let dim = source.as_ref().map_or(0, |s| s.dim());
        let mut codes = Vec::with_capacity(count * self.code_bytes());
        let mut out = Vec::with_capacity(count * dim);
        let mut buf = vec![0f32; dim];
        let (mut seen, mut next) = (0usize, picks.iter().peekable());
        for (b, block) in self.blocks().enumerate() {
            for i in 0..block.rows() {
                if block.is_deleted(i) {
                    continue;
                }
                if next.peek() == Some(&&seen) {
                    next.next();
                    codes.extend_from_slice(block.code(i)?);
                    if let Some(s) = &source {
                        let id = block.ids()?.get(i).copied().unwrap_or(u64::MAX);
                        if !s.vector(
                            RowRef {
                                block: b,
                                row: i,
                                id,
                            },
                            &mut buf,
                        )? {
                            return Err(SearchError::NoVectors {
                                detail: format!("sampled negative row {id} has no stored vector"),
                            });
                        }
                        out.extend_from_slice(&buf);
                    }
                }
                seen += 1;
            }
        }
        if codes.len() != count * self.code_bytes() {
            return Err(invalid(
                "negatives",
                format!(
                    "found {} of the {count} sampled live rows",
                    codes.len() / self.code_bytes().max(1)
                ),
            ));
        }
        let v =
            if vectors {
                Some(Array2::from_shape_vec((count, dim), out).map_err(|e| {
                    crate::model::ModelError::shape("sampled negatives' vectors", e)
                })?)
            } else {
                None
            };
        Ok((codes, v))
    }
}

/// `e` with the example set named in an argument error's detail.
fn in_set(i: usize, e: SearchError) -> SearchError {
    match e {
        SearchError::InvalidArgument { argument, detail } => SearchError::InvalidArgument {
            argument,
            detail: format!("example set {i}: {detail}"),
        },
        other => other,
    }
}

/// An SVM of `pos` against `neg`, each class's rows weighing `n / (2 n_class)`.
fn train_balanced<'a>(
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
fn check_examples(model: &Model, what: &str, x: ArrayView2<f32>) -> Result<(), SearchError> {
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
