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
//! **Hyperparameters** (§5 "Hyperparameter Selection"): the rows are split (seeded) into
//! training and validation; for every C of the grid, W is trained on the training split and
//! the validation mean AvgP of the single-word queries is measured at checkpoints; the (C,
//! iteration count) with the best AvgP is kept and W is retrained with them on all rows.

use ndarray::ArrayView2;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::super::error::{ModelError, Result};
use super::super::input::checked_rows;
use super::super::random::{derive_seed, rng};
use super::super::train::{ProgressFn, TrainEvent};
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
    /// Most passive-aggressive iterations per run (m).
    pub iterations: usize,
    /// Validation evaluations per run (the iteration count is chosen among them).
    pub checkpoints: usize,
    /// Fraction of the rows held out for validation (0 ≤ v < 1).
    pub validation: f64,
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

impl Default for PamirOptions {
    fn default() -> Self {
        PamirOptions {
            margin: MarginPolicy::Constant,
            epsilon: 1.0,
            c_grid: vec![0.01, 0.1, 1.0, 10.0],
            iterations: 100_000,
            checkpoints: 20,
            validation: 0.2,
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
            .field("validation", &self.validation)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// One C of the grid: its best validation AvgP and the iteration count that reached it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PamirTrial {
    /// The C tried.
    pub c: f32,
    /// The iteration count that reached the best validation AvgP.
    pub iterations: usize,
    /// The validation metrics at that count.
    pub validation: RankingMetrics,
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
    /// Single-word validation queries.
    pub validation_queries: usize,
    /// Each C tried (empty without selection).
    pub trials: Vec<PamirTrial>,
    /// The C and iteration count of the final run.
    pub c: f32,
    /// The final run's iteration count.
    pub iterations: usize,
    /// Mean triplet loss (eq. 5 / n) of 1000 seeded triplets of all rows, at `W = 0` and after.
    pub loss_before: f64,
    /// The same after training.
    pub loss_after: f64,
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

    /// Runs `iterations` PA steps from `W = 0`, calling `check(i, &w)` after the steps given
    /// in `at` (ascending); returns `W`.
    fn train(
        &self,
        c: f32,
        iterations: usize,
        seed: u64,
        at: &[usize],
        step: &str,
        mut check: impl FnMut(usize, &[f32]),
    ) -> Vec<f32> {
        let d = self.corpus.dim;
        let mut w = vec![0.0f32; self.vocab.len() * d];
        let mut rng = rng(seed);
        let mut v = vec![0.0f32; d];
        let mut next = at.iter().peekable();
        let report = (iterations / 100).max(1);
        for i in 0..=iterations {
            while next.peek().is_some_and(|&&a| a == i) {
                check(i, &w);
                next.next();
            }
            if i == iterations {
                break;
            }
            if i % report == 0
                && let Some(p) = &self.opts.progress
            {
                p(&TrainEvent::Progress {
                    step: step.to_string(),
                    unit: "iterations",
                    done: i as u64,
                    total: iterations as u64,
                });
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
                done: iterations as u64,
                total: iterations as u64,
            });
        }
        w
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

/// Mean validation measures of `w` (row-major `T × D`) over single-word queries, ranking the
/// validation rows by `F`, ties by row.
fn validate(
    w: &[f32],
    dim: usize,
    vocab: &Vocabulary,
    val: &Corpus<'_>,
    queries: &[(usize, Vec<usize>)],
) -> RankingMetrics {
    let all: Vec<RankingMetrics> = queries
        .iter()
        .map(|(word, rel)| {
            let q = query_vector(vocab, &[*word]);
            let mut s: Vec<(f32, usize)> = val
                .rows
                .iter()
                .map(|&r| (score(w, dim, &q, val.row(r)), r))
                .collect();
            s.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            RankingMetrics::of(&s, |(_, r)| rel.binary_search(r).is_ok(), rel.len())
        })
        .collect();
    RankingMetrics::mean(&all)
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
    let bad = |a: &str, d: String| ModelError::invalid(a, d);
    if captions.len() != n {
        return Err(bad(
            "captions",
            format!("{} captions for {n} rows", captions.len()),
        ));
    }
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
    if opts.iterations == 0 || opts.checkpoints == 0 {
        return Err(bad(
            "iterations",
            "iterations and checkpoints must be at least 1".into(),
        ));
    }
    let all_rows: Vec<usize> = (0..n).collect();
    let max_words = opts.max_words.min(MAX_VOCABULARY);
    let select = opts.c_grid.len() > 1 || opts.validation > 0.0;
    let mut trials = Vec::new();
    let (mut c, mut iterations) = (opts.c_grid[0], opts.iterations);
    let (mut validation_rows, mut validation_queries_n) = (0, 0);
    if select {
        let mut order = all_rows.clone();
        rand::seq::SliceRandom::shuffle(&mut order[..], &mut rng(derive_seed(opts.seed, 1)));
        let nv = ((n as f64) * opts.validation).round() as usize;
        let (val_rows, train_rows) = order.split_at(nv.min(n));
        let (mut val_rows, mut train_rows) = (val_rows.to_vec(), train_rows.to_vec());
        val_rows.sort_unstable();
        train_rows.sort_unstable();
        let train_caps: Vec<Vec<String>> =
            train_rows.iter().map(|&r| captions[r].clone()).collect();
        let vocab = Vocabulary::from_captions(&train_caps, opts.min_count, max_words)?;
        check_size(vocab.len(), dim)?;
        let train = Corpus::new(data, dim, &vocab, captions, train_rows);
        let val = Corpus::new(data, dim, &vocab, captions, val_rows);
        let queries = validation_queries(&val, opts.max_validation_queries);
        if train.captioned.is_empty() || queries.is_empty() {
            return Err(bad(
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
        validation_rows = val.rows.len();
        validation_queries_n = queries.len();
        let at: Vec<usize> = (0..=opts.checkpoints)
            .map(|k| k * opts.iterations / opts.checkpoints)
            .collect();
        let run = Run {
            corpus: &train,
            vocab: &vocab,
            opts,
        };
        for (ci, &cc) in opts.c_grid.iter().enumerate() {
            let mut best = (f64::NEG_INFINITY, 0usize, RankingMetrics::default());
            let step = format!("pamir C={cc}");
            run.train(
                cc,
                opts.iterations,
                derive_seed(opts.seed, 2),
                &at,
                &step,
                |i, w| {
                    let m = validate(w, dim, &vocab, &val, &queries);
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
                },
            );
            let _ = ci;
            trials.push(PamirTrial {
                c: cc,
                iterations: best.1,
                validation: best.2,
            });
        }
        let pick = trials
            .iter()
            .max_by(|a, b| {
                a.validation
                    .avgp
                    .total_cmp(&b.validation.avgp)
                    .then(b.c.total_cmp(&a.c))
            })
            .map(|t| (t.c, t.iterations));
        if let Some((bc, bi)) = pick {
            (c, iterations) = (bc, bi);
        }
    }
    let captions_all: Vec<Vec<String>> = captions.to_vec();
    let vocab = Vocabulary::from_captions(&captions_all, opts.min_count, max_words)?;
    check_size(vocab.len(), dim)?;
    let corpus = Corpus::new(data, dim, &vocab, captions, all_rows);
    if corpus.captioned.is_empty() {
        return Err(bad(
            "captions",
            "no row has a caption word in the vocabulary".into(),
        ));
    }
    let run = Run {
        corpus: &corpus,
        vocab: &vocab,
        opts,
    };
    let w = run.train(
        c,
        iterations,
        derive_seed(opts.seed, 3),
        &[],
        &format!("pamir C={c} (all rows)"),
        |_, _| {},
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
        validation_rows,
        validation_queries: validation_queries_n,
        trials,
        c,
        iterations,
        loss_before: mean_loss(&zero),
        loss_after: mean_loss(&w),
    };
    Ok((TextHead::new(vocab, dim, w)?, report))
}
