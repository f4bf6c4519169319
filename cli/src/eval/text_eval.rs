//! Text → image retrieval evaluation (PAMIR, Grangier, Monay & Bengio 2006, §5): images split
//! into training and test rows; each query ranks the test rows; a test row is relevant when its
//! tags hold the query; AvgP, BEP (R-precision) and P10 ([`RankingMetrics`]) averaged over the
//! queries with at least one relevant test row.
//!
//! Rankers ([`TextRanker`]):
//! - **PAMIR** on a model SPEC: the model and its text head are trained on the training rows
//!   (C and the iteration count chosen on a seeded validation part of them, §5), the test rows
//!   are built into an index and each query is answered by [`codedb::Snapshot`]'s text search
//!   over the stored codes (the shared scan kernels), k = all test rows.
//! - **random**: a seeded permutation per query (the chance level).
//! - **oracle**: the tf-idf-norm text score (eq. 2, 7) of each test row's own tags: tag
//!   matching that sees the test captions, an upper reference.
//! - **cca** / **cca:R**: CCA (Hotelling 1936; Gordo et al. CVPR 2012 eq. 6-8;
//!   `codedb::model::fit_cca_pair`) between the images and a text embedding of their captions
//!   (e.g. MiniLM); a query's embedding and the test images meet in the R shared directions,
//!   direction k scaled by `λ_k^power` (the ITQ paper scales CCA directions by their
//!   eigenvalues, Gong et al. TPAMI 2013 eq. 4), ranked by cosine. As a careful user would
//!   tune it: ρ (from `cca_rho`), the power (from `cca_powers`) and R (`cca`: from
//!   [`CCA_TEXT_R_GRID`] up to the views' dimensions; `cca:R`: fixed) are chosen by the mean
//!   AvgP of the queries ranked over a seeded validation part of the training rows (the test
//!   rows play no part), then CCA is refitted on all training rows.

use std::time::Instant;

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::error::Error;
use codedb::model::{
    CcaFit, CcaRho, MarginPolicy, PamirOptions, PamirStop, PipelineSpec, RankingMetrics,
    TextVector, TrainOptions, Vocabulary, fit_cca_pair, tokenize, train,
};
use codedb::{BuildOptions, Index, SearchMode, SearchParams};

/// One text query and the rows (of all data) it is relevant to.
#[derive(Debug, Clone, PartialEq)]
pub struct TextEvalQuery {
    /// The query text.
    pub text: String,
    /// Rows whose tags hold the query (any order; rows outside the test split are ignored).
    pub relevant: Vec<usize>,
}

/// The data of a text evaluation.
pub struct TextEvalData<'a> {
    /// Image descriptors, one row per image.
    pub vectors: ArrayView2<'a, f32>,
    /// The words of each row's caption/tags ([`tokenize`]d).
    pub captions: &'a [Vec<String>],
    /// `true` for a test row.
    pub test: &'a [bool],
    /// The queries.
    pub queries: &'a [TextEvalQuery],
    /// A text embedding of each row's caption (for `cca:R`).
    pub caption_embeddings: Option<ArrayView2<'a, f32>>,
    /// The same embedding of each query (for `cca:R`).
    pub query_embeddings: Option<ArrayView2<'a, f32>>,
    /// One group id per row (e.g. near-duplicates of one item): the validation parts of the
    /// training rows (PAMIR's and CCA's) keep every group on one side.
    pub validation_groups: Option<&'a [i64]>,
}

/// What ranks the test rows.
#[derive(Debug, Clone, PartialEq)]
pub enum TextRanker {
    /// PAMIR over the codes of a model SPEC, with a margin policy.
    Pamir(PipelineSpec, MarginPolicy),
    /// A seeded random permutation.
    Random,
    /// The tf-idf text score of the test rows' own tags.
    Oracle,
    /// CCA between images and caption embeddings, with R directions or R chosen on validation.
    Cca(Option<usize>),
}

impl TextRanker {
    /// Parses a `;`-separated list: `random`, `oracle`, `cca`, `cca:R`, or a model SPEC (PAMIR,
    /// once per margin of `margins`).
    pub fn parse_list(s: &str, margins: &[MarginPolicy]) -> Result<Vec<TextRanker>, Error> {
        let mut out = Vec::new();
        for tok in s.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            match tok {
                "random" => out.push(TextRanker::Random),
                "oracle" => out.push(TextRanker::Oracle),
                "cca" => out.push(TextRanker::Cca(None)),
                t if t.starts_with("cca:") && !t.contains(',') => {
                    let r = t[4..].parse::<usize>().ok().filter(|r| *r > 0);
                    let Some(r) = r else {
                        return Err(invalid(
                            "pipelines",
                            format!("{t}: cca:R takes a number of directions R >= 1"),
                        ));
                    };
                    out.push(TextRanker::Cca(Some(r)));
                }
                t => {
                    let spec = PipelineSpec::parse(t).map_err(|e| invalid("pipelines", e))?;
                    for &m in margins {
                        out.push(TextRanker::Pamir(spec.clone(), m));
                    }
                }
            }
        }
        if out.is_empty() {
            return Err(invalid("pipelines", "no pipeline given"));
        }
        Ok(out)
    }

    /// The table and JSON name, plain ASCII: the SPEC with its margin
    /// (`pca:256,pq:32x8 caption-eps`), or the baseline.
    pub fn name(&self) -> String {
        match self {
            TextRanker::Pamir(s, m) => format!("{s} {}-eps", m.name()),
            TextRanker::Random => "random".into(),
            TextRanker::Oracle => "oracle (tags)".into(),
            TextRanker::Cca(None) => "cca (embeddings)".into(),
            TextRanker::Cca(Some(r)) => format!("cca:{r} (embeddings)"),
        }
    }
}

/// The R values `cca` tries (those up to the smaller view's dimension, and that dimension).
pub const CCA_TEXT_R_GRID: [usize; 6] = [16, 32, 64, 128, 256, 512];

/// The powers of the correlation `cca` tries for scaling its directions (0: unscaled, 1: by
/// the correlation, 2: by the eigenvalue of eq. 8 as in the ITQ paper).
pub const CCA_POWER_GRID: [f64; 5] = [0.0, 0.5, 1.0, 2.0, 4.0];

/// Settings of [`text_eval`].
#[derive(Debug, Clone)]
pub struct TextEvalOptions {
    /// PAMIR settings; `margin` (and `epsilon`, when `default_epsilon`) are set per ranker.
    pub pamir: PamirOptions,
    /// Use ε = 1 for constant-ε and 0.1 for caption-ε (`codedb train`'s defaults).
    pub default_epsilon: bool,
    /// CCA regularisation ρ (relative to each view's mean variance): one value, or several to
    /// choose from on validation.
    pub cca_rho: Vec<f64>,
    /// Powers p of the correlation scaling CCA's directions (`λ_k^p`): one, or several to
    /// choose from on validation.
    pub cca_powers: Vec<f64>,
    /// Seed of the model training, the random ranker and PAMIR.
    pub seed: u64,
}

impl Default for TextEvalOptions {
    fn default() -> Self {
        TextEvalOptions {
            pamir: PamirOptions::default(),
            default_epsilon: true,
            cca_rho: CcaRho::auto().values().to_vec(),
            cca_powers: CCA_POWER_GRID.to_vec(),
            seed: 1234,
        }
    }
}

/// The scores of one ranker.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TextScores {
    /// The ranker's name ([`TextRanker::name`]).
    pub pipeline: String,
    /// `constant` / `caption` for PAMIR, else absent.
    pub margin: Option<&'static str>,
    /// Bits per stored code (PAMIR; 0 for baselines).
    pub bits: usize,
    /// Mean AvgP over the queries.
    pub avgp: f64,
    /// Mean BEP (R-precision).
    pub bep: f64,
    /// Mean precision at 10.
    pub p10: f64,
    /// Queries evaluated (those with a relevant test row).
    pub queries: usize,
    /// Of them, queries without a word in the text head's vocabulary (PAMIR): ranked in row
    /// order, as `W = 0` would.
    pub unknown_queries: usize,
    /// PAMIR: the chosen C.
    pub c: Option<f32>,
    /// PAMIR: the final run's iteration count (on all training rows).
    pub iterations: Option<usize>,
    /// PAMIR: the best validation checkpoint of the chosen C.
    pub selected_iterations: Option<usize>,
    /// PAMIR: why the chosen C's validation run stopped (`patience` or `cap`).
    pub stopped: Option<&'static str>,
    /// CCA: what validation chose.
    pub cca: Option<CcaChoice>,
    /// PAMIR: words in the vocabulary.
    pub vocabulary: Option<usize>,
    /// Seconds to train (model and text head, or CCA).
    pub train_s: f64,
    /// Milliseconds per query to rank all test rows.
    pub query_ms: f64,
}

/// What the validation of a CCA baseline chose.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CcaChoice {
    /// Regularisation ρ.
    pub rho: f64,
    /// Directions kept.
    pub r: usize,
    /// Power of the correlation scaling each direction.
    pub power: f64,
    /// Mean validation AvgP of the choice (`None` when nothing was to choose).
    pub validation_avgp: Option<f64>,
    /// Validation rows (of the training rows) and queries with a relevant one.
    pub validation_rows: usize,
    /// Queries scored on validation.
    pub validation_queries: usize,
}

/// The result of [`text_eval`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TextReport {
    /// Training rows.
    pub train_rows: usize,
    /// Test rows (ranked by every query).
    pub test_rows: usize,
    /// Queries given.
    pub queries_given: usize,
    /// Queries evaluated (with at least one relevant test row).
    pub queries: usize,
    /// One entry per ranker, in order.
    pub rankers: Vec<TextScores>,
}

fn invalid(argument: &str, detail: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        argument: argument.to_string(),
        detail: detail.to_string(),
    }
}

/// The mean metrics of `rankings` (test-row positions, best first) against `relevant`.
fn score(rankings: &[Vec<usize>], relevant: &[Vec<bool>]) -> RankingMetrics {
    let all: Vec<RankingMetrics> = rankings
        .iter()
        .zip(relevant)
        .map(|(r, rel)| {
            let n = rel.iter().filter(|&&b| b).count();
            RankingMetrics::of(r, |&i| rel[i], n)
        })
        .collect();
    RankingMetrics::mean(&all)
}

/// Test-row positions by decreasing score, ties by smaller position.
fn by_score(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order
}

fn rows_of(x: ArrayView2<f32>, rows: &[usize]) -> Array2<f32> {
    x.select(ndarray::Axis(0), rows)
}

/// Runs every ranker. Errors before any work: shapes that disagree, no test or no training
/// row, no query with a relevant test row, a relevant row out of range, `cca:R` without both
/// embeddings; then any training or search error.
pub fn text_eval(
    data: &TextEvalData,
    rankers: &[TextRanker],
    opts: &TextEvalOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<TextReport, Error> {
    let (train_rows, test_rows) = split_train_test(data)?;
    let (kept, relevant) = relevance(data, &test_rows)?;
    let texts: Vec<&str> = kept
        .iter()
        .map(|&q| data.queries[q].text.as_str())
        .collect();
    if rankers.iter().any(|r| matches!(r, TextRanker::Cca(_))) {
        check_embeddings(data)?;
    }
    let mut out = Vec::with_capacity(rankers.len());
    // The ρ the last CCA baseline chose on validation, for `cca:R` steps of later SPECs.
    let mut chosen_rho: Option<f64> = None;
    for ranker in rankers {
        progress(&ranker.name());
        let mut row = empty_scores(ranker.name(), kept.len());
        let rankings = match ranker {
            TextRanker::Random => {
                let t = Instant::now();
                let r = random_rankings(test_rows.len(), kept.len(), opts.seed);
                row.query_ms = ms_per(t, kept.len());
                r
            }
            TextRanker::Oracle => {
                let t = Instant::now();
                let r = oracle_rankings(data.captions, &test_rows, &texts)?;
                row.query_ms = ms_per(t, kept.len());
                r
            }
            TextRanker::Cca(r) => {
                // Checked above.
                let (Some(ce), Some(qe)) = (data.caption_embeddings, data.query_embeddings) else {
                    return Err(invalid("pipelines", "cca:R needs embeddings"));
                };
                cca_rankings(
                    data,
                    ce,
                    qe,
                    &kept,
                    &train_rows,
                    &test_rows,
                    *r,
                    opts,
                    &mut row,
                )?
            }
            TextRanker::Pamir(spec, margin) => {
                row.margin = Some(margin.name());
                pamir_rankings(
                    data,
                    spec,
                    *margin,
                    &train_rows,
                    &test_rows,
                    &texts,
                    opts,
                    chosen_rho,
                    &mut row,
                )?
            }
        };
        if let Some(c) = &row.cca {
            chosen_rho = Some(c.rho);
        }
        let m = score(&rankings, &relevant);
        (row.avgp, row.bep, row.p10) = (m.avgp, m.bep, m.p10);
        out.push(row);
    }
    Ok(TextReport {
        train_rows: train_rows.len(),
        test_rows: test_rows.len(),
        queries_given: data.queries.len(),
        queries: kept.len(),
        rankers: out,
    })
}

/// The training and test rows (ascending) of the protocol's split (PAMIR §5), after checking
/// that captions, split and validation groups have one entry per row and both sides have rows.
fn split_train_test(data: &TextEvalData) -> Result<(Vec<usize>, Vec<usize>), Error> {
    let n = data.vectors.nrows();
    if data.captions.len() != n || data.test.len() != n {
        return Err(invalid(
            "captions/split",
            format!(
                "{} captions and {} split entries for {n} rows",
                data.captions.len(),
                data.test.len()
            ),
        ));
    }
    if let Some(g) = data.validation_groups.filter(|g| g.len() != n) {
        return Err(invalid(
            "validation groups",
            format!("{} group ids for {n} rows", g.len()),
        ));
    }
    let test_rows: Vec<usize> = (0..n).filter(|&r| data.test[r]).collect();
    let train_rows: Vec<usize> = (0..n).filter(|&r| !data.test[r]).collect();
    if test_rows.is_empty() || train_rows.is_empty() {
        return Err(invalid(
            "split",
            format!(
                "{} training and {} test rows: both must be non-empty",
                train_rows.len(),
                test_rows.len()
            ),
        ));
    }
    Ok((train_rows, test_rows))
}

/// The queries kept (those with at least one relevant test row: AvgP is undefined without
/// one) and, for each, relevance over the test positions; a relevant row out of range is an
/// error naming the query.
fn relevance(
    data: &TextEvalData,
    test_rows: &[usize],
) -> Result<(Vec<usize>, Vec<Vec<bool>>), Error> {
    let n = data.vectors.nrows();
    let mut pos = vec![usize::MAX; n];
    for (i, &r) in test_rows.iter().enumerate() {
        pos[r] = i;
    }
    let mut kept: Vec<usize> = Vec::new();
    let mut relevant: Vec<Vec<bool>> = Vec::new();
    for (qi, q) in data.queries.iter().enumerate() {
        let mut rel = vec![false; test_rows.len()];
        for &r in &q.relevant {
            if r >= n {
                return Err(invalid(
                    "queries",
                    format!("query {qi} {:?}: relevant row {r} of {n} rows", q.text),
                ));
            }
            if pos[r] != usize::MAX {
                rel[pos[r]] = true;
            }
        }
        if rel.iter().any(|&b| b) {
            kept.push(qi);
            relevant.push(rel);
        }
    }
    if kept.is_empty() {
        return Err(invalid(
            "queries",
            format!(
                "none of the {} queries has a relevant test row",
                data.queries.len()
            ),
        ));
    }
    Ok((kept, relevant))
}

/// `cca:R` needs a caption embedding per row and a query embedding per query, of the same
/// width (the two views of CCA, Gordo et al. eq. 6-8).
fn check_embeddings(data: &TextEvalData) -> Result<(), Error> {
    let n = data.vectors.nrows();
    match (data.caption_embeddings, data.query_embeddings) {
        (Some(c), Some(q)) if c.nrows() == n && q.nrows() == data.queries.len() => {
            if c.ncols() != q.ncols() {
                return Err(invalid(
                    "query embeddings",
                    format!(
                        "{} columns, the caption embeddings {}",
                        q.ncols(),
                        c.ncols()
                    ),
                ));
            }
            Ok(())
        }
        (Some(c), Some(q)) => Err(invalid(
            "embeddings",
            format!(
                "{} caption embeddings for {n} rows and {} query embeddings for {} \
                 queries",
                c.nrows(),
                q.nrows(),
                data.queries.len()
            ),
        )),
        _ => Err(invalid(
            "pipelines",
            "cca:R needs caption embeddings and query embeddings",
        )),
    }
}

/// A ranker's row before it runs: its name and query count, every figure zero or unset.
fn empty_scores(pipeline: String, queries: usize) -> TextScores {
    TextScores {
        pipeline,
        margin: None,
        bits: 0,
        avgp: 0.0,
        bep: 0.0,
        p10: 0.0,
        queries,
        unknown_queries: 0,
        c: None,
        iterations: None,
        selected_iterations: None,
        stopped: None,
        cca: None,
        vocabulary: None,
        train_s: 0.0,
        query_ms: 0.0,
    }
}

fn ms_per(t: Instant, queries: usize) -> f64 {
    t.elapsed().as_secs_f64() * 1e3 / queries.max(1) as f64
}

fn random_rankings(n: usize, queries: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..queries)
        .map(|_| {
            let mut order: Vec<usize> = (0..n).collect();
            order.shuffle(&mut rng);
            order
        })
        .collect()
}

fn oracle_rankings(
    captions: &[Vec<String>],
    test_rows: &[usize],
    texts: &[&str],
) -> Result<Vec<Vec<usize>>, Error> {
    let vocab = Vocabulary::from_captions(captions, 1, usize::MAX)?;
    let docs: Vec<TextVector> = test_rows
        .iter()
        .map(|&r| TextVector::new(&vocab, &captions[r]))
        .collect();
    Ok(texts
        .iter()
        .map(|t| {
            let q = TextVector::new(&vocab, &tokenize(t));
            let s: Vec<f32> = docs.iter().map(|d| q.dot(d)).collect();
            by_score(&s)
        })
        .collect())
}

/// `fit`'s projection of the rows of `x` with weights `w`: `w (x − mean)`, n × R.
fn cca_project(fit: &CcaFit, w: ArrayView2<f32>, x: ArrayView2<f32>) -> Array2<f32> {
    let mean = ndarray::ArrayView1::from(&fit.mean[..]);
    let centred = &x - &mean;
    centred.dot(&w.t())
}

fn unit_rows(mut z: Array2<f32>) -> Array2<f32> {
    for mut r in z.rows_mut() {
        let n = r.dot(&r).sqrt();
        if n > 0.0 {
            r /= n;
        }
    }
    z
}

/// Cosine rankings of `images` (n × ≥ r) for `queries` (m × ≥ r) on their first `r` columns.
fn cosine_rankings(queries: ArrayView2<f32>, images: ArrayView2<f32>, r: usize) -> Vec<Vec<usize>> {
    let q = unit_rows(queries.slice(ndarray::s![.., ..r]).to_owned());
    let i = unit_rows(images.slice(ndarray::s![.., ..r]).to_owned());
    q.dot(&i.t())
        .rows()
        .into_iter()
        .map(|s| by_score(&s.to_vec()))
        .collect()
}

/// `rows` split into (kept, held out), seeded: a `fraction` of them (whole groups when `groups`
/// is given) held out, both sides in ascending order.
fn hold_out(
    rows: &[usize],
    fraction: f64,
    groups: Option<&[i64]>,
    seed: u64,
) -> (Vec<usize>, Vec<usize>) {
    let target = (rows.len() as f64 * fraction).round() as usize;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6363_615f_7661_6c00);
    let mut units: Vec<Vec<usize>> = match groups {
        None => rows.iter().map(|&r| vec![r]).collect(),
        Some(g) => {
            let mut by: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
            for &r in rows {
                by.entry(g[r]).or_default().push(r);
            }
            by.into_values().collect()
        }
    };
    units.shuffle(&mut rng);
    let (mut keep, mut out) = (Vec::new(), Vec::new());
    for u in units {
        if out.len() < target {
            out.extend(u);
        } else {
            keep.extend(u);
        }
    }
    keep.sort_unstable();
    out.sort_unstable();
    (keep, out)
}

fn flat(a: &Array2<f32>) -> Vec<f32> {
    a.iter().copied().collect()
}

/// The R values to try between views of `d` and `e` columns: `fixed`, or [`CCA_TEXT_R_GRID`]
/// up to `min(d, e)` and `min(d, e)` itself.
fn r_grid(fixed: Option<usize>, d: usize, e: usize) -> Vec<usize> {
    let top = d.min(e);
    match fixed {
        Some(r) => vec![r],
        None => {
            let mut g: Vec<usize> = CCA_TEXT_R_GRID
                .iter()
                .copied()
                .filter(|&r| r < top)
                .collect();
            g.push(top);
            g
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn cca_rankings(
    data: &TextEvalData,
    caption_emb: ArrayView2<f32>,
    query_emb: ArrayView2<f32>,
    kept: &[usize],
    train_rows: &[usize],
    test_rows: &[usize],
    fixed_r: Option<usize>,
    opts: &TextEvalOptions,
    row: &mut TextScores,
) -> Result<Vec<Vec<usize>>, Error> {
    let t = Instant::now();
    let x = data.vectors;
    let (d, e) = (x.ncols(), caption_emb.ncols());
    if let Some(r) = fixed_r.filter(|&r| r > d.min(e)) {
        return Err(invalid(
            "pipelines",
            format!("cca:{r}: at most min({d}, {e}) = {} directions", d.min(e)),
        ));
    }
    if opts.cca_rho.is_empty() || opts.cca_powers.is_empty() {
        return Err(invalid("cca", "give at least one ρ and one power"));
    }
    if let Some(p) = opts
        .cca_powers
        .iter()
        .find(|p| !(p.is_finite() && **p >= 0.0))
    {
        return Err(invalid(
            "cca power",
            format!("{p}: must be finite and >= 0"),
        ));
    }
    let rs = r_grid(fixed_r, d, e);
    let r_max = *rs.iter().max().unwrap_or(&1);
    let fit_on = |rows: &[usize], rho: f64| {
        let (xi, xt) = (rows_of(x, rows), rows_of(caption_emb, rows));
        fit_cca_pair(&flat(&xi), d, &flat(&xt), e, r_max, rho)
    };
    let single = opts.cca_rho.len() == 1 && opts.cca_powers.len() == 1 && rs.len() == 1;
    let mut choice = CcaChoice {
        rho: opts.cca_rho[0],
        r: rs[0],
        power: opts.cca_powers[0],
        validation_avgp: None,
        validation_rows: 0,
        validation_queries: 0,
    };
    if !single {
        let fraction = if opts.pamir.validation > 0.0 {
            opts.pamir.validation
        } else {
            0.2
        };
        let (fit_rows, val_rows) =
            hold_out(train_rows, fraction, data.validation_groups, opts.seed);
        let mut at = vec![usize::MAX; x.nrows()];
        for (i, &r) in val_rows.iter().enumerate() {
            at[r] = i;
        }
        // The queries with a relevant validation row, and that relevance.
        let (mut vq, mut vrel) = (Vec::new(), Vec::new());
        for (qi, q) in data.queries.iter().enumerate() {
            let mut rel = vec![false; val_rows.len()];
            for &r in &q.relevant {
                if r < at.len() && at[r] != usize::MAX {
                    rel[at[r]] = true;
                }
            }
            if rel.iter().any(|&b| b) {
                vq.push(qi);
                vrel.push(rel);
            }
        }
        if fit_rows.len() < 2 || vq.is_empty() {
            return Err(invalid(
                "cca",
                format!(
                    "choosing ρ, R and the power needs training rows and queries with a relevant                      validation row: {} rows to fit, {} validation rows, {} such queries (give one                      ρ, one power and cca:R to skip the choice)",
                    fit_rows.len(),
                    val_rows.len(),
                    vq.len()
                ),
            ));
        }
        let qv = rows_of(query_emb, &vq);
        let xv = rows_of(x, &val_rows);
        let mut best: Option<(f64, f64, usize, f64)> = None;
        for &rho in &opts.cca_rho {
            let pair = match fit_on(&fit_rows, rho) {
                Ok(p) => p,
                // A ρ too small for these views (a singular covariance) is a trial that fails.
                Err(codedb::model::ModelError::Unsupported { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            for &power in &opts.cca_powers {
                let (wi, wt) = pair.scaled(power);
                let zi = cca_project(&pair.x, wi.view(), xv.view());
                let zq = cca_project(&pair.y, wt.view(), qv.view());
                for &r in &rs {
                    let m = score(&cosine_rankings(zq.view(), zi.view(), r), &vrel).avgp;
                    if best.is_none_or(|b| m > b.0) {
                        best = Some((m, rho, r, power));
                    }
                }
            }
        }
        let Some((m, rho, r, power)) = best else {
            return Err(invalid(
                "cca",
                format!("no ρ of {:?} gives a non-singular CCA", opts.cca_rho),
            ));
        };
        choice = CcaChoice {
            rho,
            r,
            power,
            validation_avgp: Some(m),
            validation_rows: val_rows.len(),
            validation_queries: vq.len(),
        };
    }
    let pair = fit_on(train_rows, choice.rho)?;
    let (wi, wt) = pair.scaled(choice.power);
    row.train_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let images = cca_project(&pair.x, wi.view(), rows_of(x, test_rows).view());
    let queries = cca_project(&pair.y, wt.view(), rows_of(query_emb, kept).view());
    let out = cosine_rankings(queries.view(), images.view(), choice.r);
    row.query_ms = ms_per(t, kept.len());
    row.cca = Some(choice);
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn pamir_rankings(
    data: &TextEvalData,
    spec: &PipelineSpec,
    margin: MarginPolicy,
    train_rows: &[usize],
    test_rows: &[usize],
    texts: &[&str],
    opts: &TextEvalOptions,
    chosen_rho: Option<f64>,
    row: &mut TextScores,
) -> Result<Vec<Vec<usize>>, Error> {
    let t = Instant::now();
    let xtr = rows_of(data.vectors, train_rows);
    // A `cca:R` step in the SPEC learns with the caption embeddings as its second view, with
    // the ρ an earlier CCA baseline chose on validation (else a single --cca-rho, else the
    // default).
    let view = match data.caption_embeddings {
        Some(ce) if spec.needs_labels(false) && !spec.needs_labels(true) => {
            Some(std::sync::Arc::new(rows_of(ce, train_rows)))
        }
        _ => None,
    };
    let mut topts = TrainOptions {
        seed: opts.seed,
        view,
        ..TrainOptions::default()
    };
    if let Some(rho) = chosen_rho.or(match opts.cca_rho[..] {
        [rho] => Some(rho),
        _ => None,
    }) {
        topts.supervised.cca_rho = Some(codedb::model::CcaRho::Fixed(rho));
    }
    let (model, _) = train(spec, xtr.view(), &topts)?;
    let caps: Vec<Vec<String>> = train_rows
        .iter()
        .map(|&r| data.captions[r].clone())
        .collect();
    let mut popts = opts.pamir.clone();
    popts.margin = margin;
    popts.seed = opts.seed;
    popts.validation_groups = data
        .validation_groups
        .map(|g| train_rows.iter().map(|&r| g[r]).collect());
    if opts.default_epsilon {
        popts.epsilon = margin.default_epsilon();
    }
    let (model, report) = model.with_trained_text_head(xtr.view(), &caps, &popts)?;
    row.c = Some(report.c);
    row.iterations = Some(report.iterations);
    row.selected_iterations = Some(report.selected_iterations);
    row.stopped = report.stopped.map(PamirStop::name);
    row.vocabulary = Some(report.vocabulary);
    row.bits = model.code_bytes() * 8;
    row.train_s = t.elapsed().as_secs_f64();

    let dir = tempfile::tempdir().map_err(|e| invalid("temporary index directory", e))?;
    let xte = rows_of(data.vectors, test_rows);
    let index = Index::build(
        dir.path(),
        &model,
        xte.view(),
        &BuildOptions::default(),
        &mut |_| {},
    )?;
    let snap = index.snapshot();
    let head = model
        .text_head()
        .ok_or_else(|| invalid("pipelines", "the trained model lost its text head"))?;
    // Queries without a known word have no W row: they rank in row order (W = 0).
    let (mut known, mut known_at) = (Vec::new(), Vec::new());
    for (i, t) in texts.iter().enumerate() {
        if let Ok(q) = head.query(t) {
            known.push(q);
            known_at.push(i);
        }
    }
    row.unknown_queries = texts.len() - known.len();
    let t = Instant::now();
    let mut out: Vec<Vec<usize>> = vec![(0..test_rows.len()).collect(); texts.len()];
    if !known.is_empty() {
        let mode = SearchMode::default_for(model.code_kind());
        let params = SearchParams::new(test_rows.len(), mode);
        let hits = snap.search_text_prepared(&known, &params, None)?;
        for (i, h) in known_at.into_iter().zip(hits) {
            out[i] = h.iter().map(|h| h.id as usize).collect();
        }
    }
    row.query_ms = ms_per(t, texts.len());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_score_breaks_ties_by_position() {
        assert_eq!(by_score(&[0.5, 2.0, 0.5, 3.0]), vec![3, 1, 0, 2]);
    }

    /// The oracle on five test rows, figures computed by hand.
    #[test]
    fn oracle_metrics_equal_a_hand_computed_ranking() {
        let words = |t: &str| tokenize(t);
        // Rows 0-1 train, 2-6 test (positions 0-4).
        let captions: Vec<Vec<String>> = ["red", "blue", "red", "blue", "red blue", "green", "red"]
            .iter()
            .map(|t| words(t))
            .collect();
        let x = Array2::from_shape_fn((7, 2), |(r, c)| (r * 2 + c) as f32);
        let test = [false, false, true, true, true, true, true];
        // Relevant: positions 0 and 2 (rows 2 and 4); position 4 ("red") is not.
        let queries = [TextEvalQuery {
            text: "Red".into(),
            relevant: vec![2, 4],
        }];
        let data = TextEvalData {
            vectors: x.view(),
            captions: &captions,
            test: &test,
            queries: &queries,
            caption_embeddings: None,
            query_embeddings: None,
            validation_groups: None,
        };
        let r = text_eval(
            &data,
            &[TextRanker::Oracle],
            &TextEvalOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        // Scores: 1, 0, < 1, 0, 1 → ranking 0, 4, 2, 1, 3: hits at ranks 1 and 3 of |R| = 2.
        let m = &r.rankers[0];
        assert!((m.avgp - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12, "{m:?}");
        assert_eq!((m.bep, m.p10), (0.5, 0.2));
        assert_eq!((r.train_rows, r.test_rows, r.queries), (2, 5, 1));
    }
}
