//! PAMIR training (Grangier, Monay & Bengio 2006, §2.3-2.4 and §5): the matrix `W` of
//! `F(q, p) = qᵀ W p` learned by passive-aggressive updates (Crammer et al. 2003) on triplets
//! `(q, p⁺, p⁻)`: with `l = max(0, ε − F(q, p⁺) + F(q, p⁻))` (eq. 4-5),
//! `W ← W + τ q (p⁺ − p⁻)ᵀ`, `τ = min(C, l / (‖q‖² ‖p⁺ − p⁻‖²))` (eq. 6), from `W⁰ = 0`.
//!
//! **Triplets** (seeded): a training row with a caption is drawn, a query is drawn from its
//! words (1 to `max_query_words` distinct words), so the row is relevant ("a picture is
//! relevant to a query iff its caption contains all the words of the query", §5); `p⁻` is a
//! row whose caption does not contain them all.
//!
//! **Margins**: constant-ε (`ε_k = ε`, default 1) or caption-ε (`ε_k = max(ε, F_text(q, c⁺) −
//! F_text(q, c⁻))`, the tf-idf-norm text score of the two captions, eq. 2).
//!
//! **Hyperparameters** (§5 "Hyperparameter Selection": C and the number of iterations are
//! chosen on validation data): the rows are split (seeded; whole groups when
//! [`PamirOptions::validation_groups`] is given, so near-duplicates of one item never sit on
//! both sides and inflate the validation AvgP) into training and validation; for every C of
//! the grid, W is trained on the training split and the validation mean AvgP of the
//! single-word queries is measured at geometrically spaced checkpoints (`first_checkpoint`,
//! then × `checkpoint_growth`), so a run of m iterations costs O(log m) evaluations. A run
//! stops when `patience` checkpoints in a row did not raise the best AvgP by a relative
//! `min_improvement` (the AvgP has converged), or at the cap `iterations`; both are
//! reported. The (C, iteration count) with the best AvgP is kept and W is retrained on all
//! rows with them, the count scaled by the ratio of captioned rows so that each row is
//! visited as often as on the training split.
//!
//! A validation checkpoint is one matrix product: a single-word query `q = e_w` (tf-idf-norm of
//! one word) scores `F(q, p) = W_w · p`, so the scores of every query on every validation row
//! are `W_Q Pᵀ` for the query words' rows `W_Q` of W.

use ndarray::ArrayView2;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::super::error::{ModelError, Result};
use super::super::input::checked_rows;
use super::super::linalg::{a_bt_f32, par};
use super::super::random::{derive_seed, rng};
use super::super::train_options::{ProgressFn, TrainEvent};
use super::ranking_metrics::RankingMetrics;
use super::text_head::{TextHead, check_size, dot};
use super::tfidf::TextVector;
use super::vocabulary::{MAX_VOCABULARY, Vocabulary};

/// How the margin `ε_k` of a triplet is chosen (§2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarginPolicy {
    /// `ε_k = ε`.
    Constant,
    /// `ε_k = max(ε, F_text(q, c⁺) − F_text(q, c⁻))`.
    Caption,
}

/// The margin policies by name: the CLI's `--margin` and `eval --margins`, Python's
/// `margin=`.
pub const MARGIN_NAMES: [(&str, MarginPolicy); 2] = [
    ("constant", MarginPolicy::Constant),
    ("caption", MarginPolicy::Caption),
];

/// A margin name [`MARGIN_NAMES`] does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected \"constant\" or \"caption\"")]
pub struct UnknownMargin(pub String);

impl MarginPolicy {
    /// The policy's name in [`MARGIN_NAMES`].
    pub fn name(self) -> &'static str {
        match self {
            MarginPolicy::Constant => "constant",
            MarginPolicy::Caption => "caption",
        }
    }

    /// ε when none is given: 1 for constant-ε (Grangier et al. §2.3, the hinge of eq. 4);
    /// 0.1, a floor, for caption-ε, whose tf-idf-norm text score differences are at most 1
    /// (eq. 2), so a floor of 1 would make every margin constant.
    pub fn default_epsilon(self) -> f32 {
        match self {
            MarginPolicy::Constant => 1.0,
            MarginPolicy::Caption => 0.1,
        }
    }
}

impl std::str::FromStr for MarginPolicy {
    type Err = UnknownMargin;

    /// A name of [`MARGIN_NAMES`]: the one place a margin is chosen by name.
    fn from_str(s: &str) -> std::result::Result<MarginPolicy, UnknownMargin> {
        MARGIN_NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, m)| *m)
            .ok_or_else(|| UnknownMargin(s.to_string()))
    }
}

/// PAMIR training parameters.
#[derive(Clone)]
pub struct PamirOptions {
    /// Margin policy.
    pub margin: MarginPolicy,
    /// ε: the margin (constant-ε) or its floor (caption-ε). Default 1 for constant-ε; text
    /// scores of tf-idf-norm captions are at most 1, so caption-ε needs a smaller floor (0.1).
    pub epsilon: f32,
    /// Aggressiveness values tried (§5); one value and `validation = 0` skips the selection.
    pub c_grid: Vec<f32>,
    /// Most passive-aggressive iterations per run (m): the cap of the patience rule, and the
    /// count of a run without selection. Default 10,000,000: on openclipart the validation
    /// AvgP of the float head still rises from 10⁵ to 10⁶ iterations.
    pub iterations: usize,
    /// Iterations at the first validation checkpoint.
    pub first_checkpoint: usize,
    /// Ratio between successive checkpoints (> 1): geometric spacing, since the AvgP moves
    /// with the logarithm of the iteration count.
    pub checkpoint_growth: f64,
    /// Checkpoints in a row without a relative gain of `min_improvement` after which a run
    /// stops (≥ 1).
    pub patience: usize,
    /// The relative AvgP gain that counts as an improvement for `patience` (≥ 0).
    pub min_improvement: f64,
    /// Fraction of the rows held out for validation (0 ≤ v < 1).
    pub validation: f64,
    /// One group id per row (e.g. the item a near-duplicate rendering belongs to): the
    /// validation split keeps each group on one side. `None`: rows are split one by one.
    pub validation_groups: Option<Vec<i64>>,
    /// Most words in a training query.
    pub max_query_words: usize,
    /// A word enters the vocabulary if at least this many captions contain it.
    pub min_count: usize,
    /// Most words in the vocabulary (the most frequent are kept).
    pub max_words: usize,
    /// Most single-word validation queries (the most frequent words of the validation split).
    pub max_validation_queries: usize,
    /// Seed of the split and of the triplets.
    pub seed: u64,
    /// Receiver of progress events.
    pub progress: Option<ProgressFn>,
    /// Send a [`TrainEvent::Message`] per validation checkpoint.
    pub verbose: bool,
}

/// [`PamirOptions::iterations`]' default.
pub const PAMIR_DEFAULT_ITERATIONS: usize = 10_000_000;

impl PamirOptions {
    /// These options with `margin` and its ε: `epsilon`, or the policy's
    /// [`MarginPolicy::default_epsilon`].
    pub fn with_margin(self, margin: MarginPolicy, epsilon: Option<f32>) -> PamirOptions {
        PamirOptions {
            margin,
            epsilon: epsilon.unwrap_or(margin.default_epsilon()),
            ..self
        }
    }
}

impl Default for PamirOptions {
    fn default() -> Self {
        PamirOptions {
            margin: MarginPolicy::Constant,
            epsilon: 1.0,
            c_grid: vec![0.01, 0.1, 1.0, 10.0],
            iterations: PAMIR_DEFAULT_ITERATIONS,
            first_checkpoint: 1000,
            checkpoint_growth: 1.5,
            patience: 3,
            min_improvement: 0.005,
            validation: 0.2,
            validation_groups: None,
            max_query_words: 3,
            min_count: 1,
            max_words: 100_000,
            max_validation_queries: 300,
            seed: 1234,
            progress: None,
            verbose: false,
        }
    }
}

impl std::fmt::Debug for PamirOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PamirOptions")
            .field("margin", &self.margin)
            .field("epsilon", &self.epsilon)
            .field("c_grid", &self.c_grid)
            .field("iterations", &self.iterations)
            .field("patience", &self.patience)
            .field("validation", &self.validation)
            .field("grouped", &self.validation_groups.is_some())
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// Why a validation run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PamirStop {
    /// `patience` checkpoints in a row without improvement: the validation AvgP converged.
    Patience,
    /// The cap `iterations` was reached while the AvgP was still improving (or just after).
    Cap,
}

impl PamirStop {
    /// `"patience"` or `"cap"`.
    pub fn name(self) -> &'static str {
        match self {
            PamirStop::Patience => "patience",
            PamirStop::Cap => "cap",
        }
    }
}

/// One validation checkpoint of a run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PamirCheckpoint {
    /// Iterations done.
    pub iterations: usize,
    /// Mean validation AvgP of the single-word queries.
    pub avgp: f64,
}

/// One C of the grid: its best validation AvgP and the iteration count that reached it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PamirTrial {
    /// The C tried.
    pub c: f32,
    /// The iteration count that reached the best validation AvgP (the best checkpoint).
    pub iterations: usize,
    /// The validation metrics at that count.
    pub validation: RankingMetrics,
    /// Iterations the run did before it stopped.
    pub iterations_run: usize,
    /// Why it stopped.
    pub stopped: PamirStop,
    /// Every checkpoint, in order.
    pub checkpoints: Vec<PamirCheckpoint>,
}

/// What PAMIR training did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PamirReport {
    /// Words in the final vocabulary.
    pub vocabulary: usize,
    /// Rows with at least one known word (the only rows a triplet's `p⁺` can be).
    pub captioned_rows: usize,
    /// Rows held out for validation during the selection (0 without selection).
    pub validation_rows: usize,
    /// Groups of the grouped validation split (on both sides), `None` when rows were split
    /// one by one.
    pub validation_groups: Option<usize>,
    /// Single-word validation queries.
    pub validation_queries: usize,
    /// Each C tried (empty without selection).
    pub trials: Vec<PamirTrial>,
    /// The C of the final run.
    pub c: f32,
    /// The chosen trial's best checkpoint (the cap without selection).
    pub selected_iterations: usize,
    /// The final run's iteration count: `selected_iterations` × captioned rows of all rows /
    /// of the training split, at most the cap.
    pub iterations: usize,
    /// Why the chosen trial stopped (`None` without selection). [`PamirStop::Cap`] means the
    /// AvgP may still rise with more iterations.
    pub stopped: Option<PamirStop>,
    /// Mean triplet loss (eq. 5 / n) of 1000 seeded triplets of all rows, at `W = 0` and after.
    pub loss_before: f64,
    /// The same after training.
    pub loss_after: f64,
}

impl PamirReport {
    /// A note for the user when the chosen run stopped at the cap (its AvgP was still rising,
    /// so a larger cap may give a better head), else `None`.
    pub fn cap_note(&self) -> Option<String> {
        let t = self.trials.iter().find(|t| t.c == self.c)?;
        (t.stopped == PamirStop::Cap && t.iterations * 2 > t.iterations_run).then(|| {
            format!(
                "the text head's validation AvgP was still rising at the cap of {} iterations \
                 (C = {}, best at {}): a larger --pamir-iterations may give a better head",
                t.iterations_run, t.c, t.iterations
            )
        })
    }
}

/// The checkpoint iteration counts: `first`, then × `growth` (rounded up, strictly
/// increasing), below `cap`, and `cap` itself.
fn checkpoint_schedule(first: usize, growth: f64, cap: usize) -> Vec<usize> {
    let mut at = Vec::new();
    let mut k = first.max(1);
    while k < cap {
        at.push(k);
        let next = (k as f64 * growth).ceil();
        k = if next.is_finite() && next < cap as f64 {
            (next as usize).max(k + 1)
        } else {
            cap
        };
    }
    at.push(cap);
    at
}

/// Captions as vocabulary indices and tf-idf-norm vectors, with the sampling structures.
struct Corpus<'a> {
    p: &'a [f32],
    dim: usize,
    /// Per row: its distinct known word indices, ascending.
    words: Vec<Vec<usize>>,
    /// Per row: its caption's tf-idf-norm vector.
    vectors: Vec<TextVector>,
    /// Rows with at least one known word.
    captioned: Vec<usize>,
    /// Rows the corpus covers.
    rows: Vec<usize>,
}

impl<'a> Corpus<'a> {
    fn new(
        p: &'a [f32],
        dim: usize,
        vocab: &Vocabulary,
        captions: &[Vec<String>],
        rows: Vec<usize>,
    ) -> Self {
        let n = captions.len();
        let mut words = vec![Vec::new(); n];
        let mut vectors = vec![
            TextVector {
                terms: vec![],
                unknown: vec![]
            };
            n
        ];
        let mut captioned = Vec::new();
        for &r in &rows {
            let v = TextVector::new(vocab, &captions[r]);
            let mut w: Vec<usize> = captions[r].iter().filter_map(|t| vocab.index(t)).collect();
            w.sort_unstable();
            w.dedup();
            if !w.is_empty() {
                captioned.push(r);
            }
            words[r] = w;
            vectors[r] = v;
        }
        Corpus {
            p,
            dim,
            words,
            vectors,
            captioned,
            rows,
        }
    }

    fn row(&self, r: usize) -> &[f32] {
        &self.p[r * self.dim..(r + 1) * self.dim]
    }

    fn contains_all(&self, r: usize, q: &[usize]) -> bool {
        q.iter().all(|w| self.words[r].binary_search(w).is_ok())
    }

    /// A triplet `(query words, p⁺ row, p⁻ row)`, or `None` when the draw found no negative.
    fn triplet(
        &self,
        rng: &mut ChaCha8Rng,
        max_words: usize,
    ) -> Option<(Vec<usize>, usize, usize)> {
        let pos = self.captioned[rng.random_range(0..self.captioned.len())];
        let ws = &self.words[pos];
        let k = rng.random_range(1..=ws.len().min(max_words.max(1)));
        let mut q: Vec<usize> = rand::seq::index::sample(rng, ws.len(), k)
            .into_iter()
            .map(|i| ws[i])
            .collect();
        q.sort_unstable();
        for _ in 0..64 {
            let neg = self.rows[rng.random_range(0..self.rows.len())];
            if !self.contains_all(neg, &q) {
                return Some((q, pos, neg));
            }
        }
        None
    }
}

/// The tf-idf-norm vector of a set of distinct word indices (tf = 1 each).
fn query_vector(vocab: &Vocabulary, q: &[usize]) -> TextVector {
    let words: Vec<String> = q.iter().map(|&i| vocab.words()[i].clone()).collect();
    TextVector::new(vocab, &words)
}

/// `F(q, p)` with `W` row-major `T × D`.
fn score(w: &[f32], dim: usize, q: &TextVector, p: &[f32]) -> f32 {
    q.terms
        .iter()
        .map(|&(i, x)| x * dot(&w[i * dim..(i + 1) * dim], p))
        .sum()
}

struct Run<'a> {
    corpus: &'a Corpus<'a>,
    vocab: &'a Vocabulary,
    opts: &'a PamirOptions,
}

impl Run<'_> {
    fn margin(&self, q: &TextVector, pos: usize, neg: usize) -> f32 {
        match self.opts.margin {
            MarginPolicy::Constant => self.opts.epsilon,
            MarginPolicy::Caption => {
                let c = &self.corpus.vectors;
                self.opts.epsilon.max(q.dot(&c[pos]) - q.dot(&c[neg]))
            }
        }
    }

    /// The loss of one triplet under `w`.
    fn loss(&self, w: &[f32], t: &(Vec<usize>, usize, usize)) -> f32 {
        let (qw, pos, neg) = t;
        let q = query_vector(self.vocab, qw);
        let d = self.corpus.dim;
        let f = score(w, d, &q, self.corpus.row(*pos)) - score(w, d, &q, self.corpus.row(*neg));
        (self.margin(&q, *pos, *neg) - f).max(0.0)
    }

    /// Runs up to `iterations` PA steps from `W = 0`, calling `check(i, &w)` after the steps
    /// given in `at` (ascending); a `check` returning `false` stops the run. Returns `W` and
    /// the steps done.
    fn train(
        &self,
        c: f32,
        iterations: usize,
        seed: u64,
        at: &[usize],
        step: &str,
        mut check: impl FnMut(usize, &[f32]) -> bool,
    ) -> (Vec<f32>, usize) {
        let d = self.corpus.dim;
        let mut w = vec![0.0f32; self.vocab.len() * d];
        let mut rng = rng(seed);
        let mut v = vec![0.0f32; d];
        let mut next = at.iter().peekable();
        let report = (iterations / 100).max(1);
        let progress = |done: usize| {
            if let Some(p) = &self.opts.progress {
                p(&TrainEvent::Progress {
                    step: step.to_string(),
                    unit: "iterations",
                    done: done as u64,
                    total: iterations as u64,
                });
            }
        };
        let mut done = iterations;
        'steps: for i in 0..=iterations {
            while next.peek().is_some_and(|&&a| a == i) {
                if !check(i, &w) {
                    done = i;
                    break 'steps;
                }
                next.next();
            }
            if i == iterations {
                break;
            }
            if i % report == 0 {
                progress(i);
            }
            let Some((qw, pos, neg)) = self.corpus.triplet(&mut rng, self.opts.max_query_words)
            else {
                continue;
            };
            let q = query_vector(self.vocab, &qw);
            if q.terms.is_empty() {
                continue;
            }
            let (pp, pn) = (self.corpus.row(pos), self.corpus.row(neg));
            let l = self.margin(&q, pos, neg) - score(&w, d, &q, pp) + score(&w, d, &q, pn);
            if l <= 0.0 {
                continue;
            }
            let mut vv = 0.0f32;
            for ((o, a), b) in v.iter_mut().zip(pp).zip(pn) {
                *o = a - b;
                vv += *o * *o;
            }
            let denom = q.norm_sq() * vv;
            if denom <= 0.0 || !denom.is_finite() {
                continue;
            }
            let tau = c.min(l / denom);
            for &(t, x) in &q.terms {
                for (o, &g) in w[t * d..(t + 1) * d].iter_mut().zip(&v) {
                    *o += tau * x * g;
                }
            }
        }
        if let Some(p) = &self.opts.progress {
            p(&TrainEvent::Progress {
                step: step.to_string(),
                unit: "iterations",
                done: done as u64,
                total: done as u64,
            });
        }
        (w, done)
    }
}
/// Single-word validation queries: `(word index, relevant rows)` for the words of the training
/// vocabulary that some validation caption contains, the most frequent first.
fn validation_queries(corpus: &Corpus<'_>, max: usize) -> Vec<(usize, Vec<usize>)> {
    let mut by_word: std::collections::BTreeMap<usize, Vec<usize>> = Default::default();
    for &r in &corpus.rows {
        for &w in &corpus.words[r] {
            by_word.entry(w).or_default().push(r);
        }
    }
    let mut q: Vec<(usize, Vec<usize>)> = by_word
        .into_iter()
        .filter(|(_, rel)| rel.len() < corpus.rows.len())
        .collect();
    q.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    q.truncate(max);
    q
}

/// The single-word validation queries with what a checkpoint needs precomputed: each
/// query's word and tf-idf-norm weight, its relevance over the validation rows, and the
/// validation rows as one matrix.
struct Validation {
    /// `(word index, weight of the word in its tf-idf-norm vector)` per query.
    words: Vec<(usize, f32)>,
    /// Per query: relevance of each validation row (by position), and how many are relevant.
    relevant: Vec<(Vec<bool>, usize)>,
    /// Validation rows, row-major (`rows × dim`), ascending row order.
    p: Vec<f32>,
    rows: usize,
    dim: usize,
}

impl Validation {
    fn new(vocab: &Vocabulary, val: &Corpus<'_>, queries: &[(usize, Vec<usize>)]) -> Self {
        let words = queries
            .iter()
            .map(|(w, _)| {
                let q = query_vector(vocab, &[*w]);
                (*w, q.terms.first().map_or(0.0, |t| t.1))
            })
            .collect();
        let relevant = queries
            .iter()
            .map(|(_, rel)| {
                let flags: Vec<bool> = val
                    .rows
                    .iter()
                    .map(|r| rel.binary_search(r).is_ok())
                    .collect();
                (flags, rel.len())
            })
            .collect();
        let p = val.rows.iter().flat_map(|&r| val.row(r)).copied().collect();
        Validation {
            words,
            relevant,
            p,
            rows: val.rows.len(),
            dim: val.dim,
        }
    }

    /// Mean measures of `w` (row-major `T × D`): each query ranks the validation rows by `F`,
    /// ties by row. One product `W_Q Pᵀ` scores every query on every row.
    fn measure(&self, w: &[f32]) -> RankingMetrics {
        let d = self.dim;
        let wq: Vec<f32> = self
            .words
            .iter()
            .flat_map(|&(t, x)| w[t * d..(t + 1) * d].iter().map(move |v| v * x))
            .collect();
        let s = a_bt_f32(&wq, &self.p, self.words.len(), d, self.rows, par());
        let mut order: Vec<usize> = Vec::with_capacity(self.rows);
        let all: Vec<RankingMetrics> = s
            .chunks_exact(self.rows.max(1))
            .zip(&self.relevant)
            .map(|(sc, (rel, n_rel))| {
                order.clear();
                order.extend(0..self.rows);
                order.sort_by(|&a, &b| sc[b].total_cmp(&sc[a]).then(a.cmp(&b)));
                RankingMetrics::of(&order, |&i| rel[i], *n_rel)
            })
            .collect();
        RankingMetrics::mean(&all)
    }
}

/// The validation split: `(validation rows, training rows)`, both ascending, and the number
/// of groups when `groups` is given. Rows (or whole groups, in a seeded order) are held out
/// until `fraction` of the rows are.
fn split_rows(
    n: usize,
    fraction: f64,
    groups: Option<&[i64]>,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>, Option<usize>)> {
    let target = ((n as f64) * fraction).round() as usize;
    let mut r = rng(derive_seed(seed, 1));
    let (mut val, mut train, count) = match groups {
        None => {
            let mut order: Vec<usize> = (0..n).collect();
            rand::seq::SliceRandom::shuffle(&mut order[..], &mut r);
            let (v, t) = order.split_at(target.min(n));
            (v.to_vec(), t.to_vec(), None)
        }
        Some(g) => {
            if g.len() != n {
                return Err(ModelError::invalid(
                    "validation_groups",
                    format!("{} group ids for {n} rows (one per row)", g.len()),
                ));
            }
            let mut members: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
            for (row, &id) in g.iter().enumerate() {
                members.entry(id).or_default().push(row);
            }
            let mut ids: Vec<i64> = members.keys().copied().collect();
            rand::seq::SliceRandom::shuffle(&mut ids[..], &mut r);
            let (mut v, mut t) = (Vec::new(), Vec::new());
            for id in &ids {
                let rows = &members[id];
                if v.len() < target {
                    v.extend_from_slice(rows);
                } else {
                    t.extend_from_slice(rows);
                }
            }
            if fraction > 0.0 && (v.is_empty() || t.is_empty()) {
                return Err(ModelError::invalid(
                    "validation_groups",
                    format!(
                        "{} groups cannot be split into a validation fraction {fraction} of {n} \
                         rows with rows on both sides (held out {}, kept {})",
                        ids.len(),
                        v.len(),
                        t.len()
                    ),
                ));
            }
            (v, t, Some(ids.len()))
        }
    };
    val.sort_unstable();
    train.sort_unstable();
    Ok((val, train, count))
}

/// Trains a text head on projected rows `p` (n × D: what the index's codes encode) and their
/// captions (`captions[r]`: the words of row `r`, see [`super::tokenize`]; empty for a row
/// without caption). See the module doc for the procedure.
pub fn train_pamir(
    p: ArrayView2<f32>,
    captions: &[Vec<String>],
    opts: &PamirOptions,
) -> Result<(TextHead, PamirReport)> {
    let rows = checked_rows("pamir: projected rows", p, None)?;
    let (n, dim) = (rows.n(), rows.dim());
    let data = rows.as_slice();
    if captions.len() != n {
        return Err(ModelError::invalid(
            "captions",
            format!("{} captions for {n} rows", captions.len()),
        ));
    }
    check_options(opts)?;
    let max_words = opts.max_words.min(MAX_VOCABULARY);
    let select = opts.c_grid.len() > 1 || opts.validation > 0.0;
    let chosen = if select {
        select_hyperparameters(data, dim, captions, opts, max_words)?
    } else {
        Selection::none(opts)
    };
    let captions_all: Vec<Vec<String>> = captions.to_vec();
    let vocab = Vocabulary::from_captions(&captions_all, opts.min_count, max_words)?;
    check_size(vocab.len(), dim)?;
    let corpus = Corpus::new(data, dim, &vocab, captions, (0..n).collect());
    if corpus.captioned.is_empty() {
        return Err(ModelError::invalid(
            "captions",
            "no row has a caption word in the vocabulary".to_string(),
        ));
    }
    let c = chosen.c;
    // The same visits per captioned row as the chosen run had on the training split.
    let iterations = if select {
        ((chosen.iterations as f64 * chosen.scale * corpus.captioned.len() as f64).round() as usize)
            .min(opts.iterations)
    } else {
        chosen.iterations
    };
    let run = Run {
        corpus: &corpus,
        vocab: &vocab,
        opts,
    };
    let (w, _) = run.train(
        c,
        iterations,
        derive_seed(opts.seed, 3),
        &[],
        &format!("pamir C={c} (all rows)"),
        |_, _| true,
    );
    let mut lrng = rng(derive_seed(opts.seed, 4));
    let probe: Vec<_> = (0..1000)
        .filter_map(|_| corpus.triplet(&mut lrng, opts.max_query_words))
        .collect();
    let zero = vec![0.0f32; w.len()];
    let mean_loss = |w: &[f32]| {
        probe.iter().map(|t| f64::from(run.loss(w, t))).sum::<f64>() / probe.len().max(1) as f64
    };
    let report = PamirReport {
        vocabulary: vocab.len(),
        captioned_rows: corpus.captioned.len(),
        validation_rows: chosen.validation_rows,
        validation_groups: chosen.groups,
        validation_queries: chosen.validation_queries,
        trials: chosen.trials,
        c,
        selected_iterations: chosen.iterations,
        iterations,
        stopped: chosen.stopped,
        loss_before: mean_loss(&zero),
        loss_after: mean_loss(&w),
    };
    Ok((TextHead::new(vocab, dim, w)?, report))
}

/// Refuses options the procedure cannot run with, naming the option: C (eq. 6's cap on τ)
/// and ε (eq. 4's margin) must be positive, the validation fraction in [0, 1), and the
/// checkpoint schedule and stop rule of §5's selection well formed.
fn check_options(opts: &PamirOptions) -> Result<()> {
    let bad = |a: &str, d: String| ModelError::invalid(a, d);
    if opts.c_grid.is_empty() || opts.c_grid.iter().any(|c| !(c.is_finite() && *c > 0.0)) {
        return Err(bad(
            "c",
            format!("{:?}: give one or more finite values > 0", opts.c_grid),
        ));
    }
    if !(opts.epsilon.is_finite() && opts.epsilon > 0.0) {
        return Err(bad(
            "epsilon",
            format!("{}: must be finite and > 0", opts.epsilon),
        ));
    }
    if !(0.0..1.0).contains(&opts.validation) {
        return Err(bad(
            "validation",
            format!("{}: must be in [0, 1)", opts.validation),
        ));
    }
    if opts.iterations == 0 || opts.first_checkpoint == 0 || opts.patience == 0 {
        return Err(bad(
            "iterations",
            format!(
                "iterations ({}), first checkpoint ({}) and patience ({}) must be at least 1",
                opts.iterations, opts.first_checkpoint, opts.patience
            ),
        ));
    }
    if !(opts.checkpoint_growth.is_finite() && opts.checkpoint_growth > 1.0) {
        return Err(bad(
            "checkpoint_growth",
            format!("{}: must be finite and > 1", opts.checkpoint_growth),
        ));
    }
    if !(opts.min_improvement.is_finite() && opts.min_improvement >= 0.0) {
        return Err(bad(
            "min_improvement",
            format!("{}: must be finite and >= 0", opts.min_improvement),
        ));
    }
    Ok(())
}

/// What the hyperparameter selection (§5) chose, and what the report says of it.
struct Selection {
    /// Each C tried (empty without selection).
    trials: Vec<PamirTrial>,
    /// The C of the final run.
    c: f32,
    /// The chosen trial's best checkpoint (the cap without selection).
    iterations: usize,
    /// Why the chosen trial stopped (`None` without selection).
    stopped: Option<PamirStop>,
    /// 1 / captioned training rows: scales the iteration count to all rows.
    scale: f64,
    validation_rows: usize,
    validation_queries: usize,
    groups: Option<usize>,
}

impl Selection {
    /// No selection: the only C and the cap.
    fn none(opts: &PamirOptions) -> Self {
        Selection {
            trials: Vec::new(),
            c: opts.c_grid[0],
            iterations: opts.iterations,
            stopped: None,
            scale: 1.0,
            validation_rows: 0,
            validation_queries: 0,
            groups: None,
        }
    }
}

/// §5 "Hyperparameter Selection": splits the rows (seeded, by group when given), trains W on
/// the training split for every C of the grid with validation checkpoints, and keeps the
/// (C, iteration count) with the best validation AvgP (ties: the smaller C).
fn select_hyperparameters(
    data: &[f32],
    dim: usize,
    captions: &[Vec<String>],
    opts: &PamirOptions,
    max_words: usize,
) -> Result<Selection> {
    let (val_rows, train_rows, groups) = split_rows(
        captions.len(),
        opts.validation,
        opts.validation_groups.as_deref(),
        opts.seed,
    )?;
    let train_caps: Vec<Vec<String>> = train_rows.iter().map(|&r| captions[r].clone()).collect();
    let vocab = Vocabulary::from_captions(&train_caps, opts.min_count, max_words)?;
    check_size(vocab.len(), dim)?;
    let train = Corpus::new(data, dim, &vocab, captions, train_rows);
    let val = Corpus::new(data, dim, &vocab, captions, val_rows);
    let queries = validation_queries(&val, opts.max_validation_queries);
    if train.captioned.is_empty() || queries.is_empty() {
        return Err(ModelError::invalid(
            "validation",
            format!(
                "the split leaves {} captioned training rows and {} validation queries (a word \
                 in some but not all of the {} validation captions); give more rows or \
                 --pamir-validation 0 with a single C",
                train.captioned.len(),
                queries.len(),
                val.rows.len()
            ),
        ));
    }
    let measure = Validation::new(&vocab, &val, &queries);
    let at = checkpoint_schedule(
        opts.first_checkpoint,
        opts.checkpoint_growth,
        opts.iterations,
    );
    let run = Run {
        corpus: &train,
        vocab: &vocab,
        opts,
    };
    let trials: Vec<PamirTrial> = opts
        .c_grid
        .iter()
        .map(|&cc| trial(&run, &measure, &at, cc))
        .collect();
    let mut chosen = Selection::none(opts);
    let pick = trials.iter().max_by(|a, b| {
        a.validation
            .avgp
            .total_cmp(&b.validation.avgp)
            .then(b.c.total_cmp(&a.c))
    });
    if let Some(t) = pick {
        (chosen.c, chosen.iterations, chosen.stopped) = (t.c, t.iterations, Some(t.stopped));
    }
    chosen.trials = trials;
    chosen.scale = 1.0 / train.captioned.len() as f64;
    chosen.validation_rows = val.rows.len();
    chosen.validation_queries = queries.len();
    chosen.groups = groups;
    Ok(chosen)
}

/// One C of the grid (§5): trains on the training split, measuring the validation AvgP at the
/// checkpoints `at`, and stops when `patience` checkpoints in a row did not beat the last
/// significant level by a relative `min_improvement`, or at the cap.
fn trial(run: &Run<'_>, measure: &Validation, at: &[usize], cc: f32) -> PamirTrial {
    let opts = run.opts;
    let mut best = (f64::NEG_INFINITY, 0usize, RankingMetrics::default());
    let (mut level, mut idle) = (f64::NEG_INFINITY, 0usize);
    let mut curve = Vec::new();
    let mut why = PamirStop::Cap;
    let step = format!("pamir C={cc}");
    let (_, done) = run.train(
        cc,
        opts.iterations,
        derive_seed(opts.seed, 2),
        at,
        &step,
        |i, w| {
            let m = measure.measure(w);
            curve.push(PamirCheckpoint {
                iterations: i,
                avgp: m.avgp,
            });
            if opts.verbose
                && let Some(p) = &opts.progress
            {
                p(&TrainEvent::Message(format!(
                    "pamir C={cc} iteration {i}: validation AvgP {:.4} BEP {:.4} P10 {:.4}",
                    m.avgp, m.bep, m.p10
                )));
            }
            if m.avgp > best.0 {
                best = (m.avgp, i, m);
            }
            // Patience counts checkpoints that do not beat the last significant level.
            if m.avgp > level + opts.min_improvement * level.abs() || level.is_infinite() {
                (level, idle) = (m.avgp, 0);
            } else {
                idle += 1;
            }
            if idle >= opts.patience && i < opts.iterations {
                why = PamirStop::Patience;
                return false;
            }
            true
        },
    );
    if opts.verbose
        && let Some(p) = &opts.progress
    {
        p(&TrainEvent::Message(format!(
            "pamir C={cc}: stopped after {done} iterations ({}), best validation AvgP \
             {:.4} at iteration {}",
            match why {
                PamirStop::Patience => format!(
                    "{} checkpoints without a {} % gain",
                    opts.patience,
                    opts.min_improvement * 100.0
                ),
                PamirStop::Cap => "the cap".into(),
            },
            best.0,
            best.1
        )));
    }
    PamirTrial {
        c: cc,
        iterations: best.1,
        validation: best.2,
        iterations_run: done,
        stopped: why,
        checkpoints: curve,
    }
}
