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
//! - **cca:R**: CCA (Hotelling 1936; `codedb::model::fit_cca`) between the images and a text
//!   embedding of their captions (e.g. MiniLM), fitted both ways on the training rows; a query's
//!   embedding and the test images meet in the R shared directions, each scaled by its
//!   correlation, ranked by cosine.

use std::time::Instant;

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::error::Error;
use codedb::model::{
    CcaFit, CcaView, MarginPolicy, Model, PamirOptions, PipelineSpec, RankingMetrics, TextVector,
    TrainOptions, Vocabulary, fit_cca, tokenize, train, train_pamir,
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
    /// CCA with R directions between images and caption embeddings.
    Cca(usize),
}

impl TextRanker {
    /// Parses a `;`-separated list: `random`, `oracle`, `cca:R`, or a model SPEC (PAMIR, once
    /// per margin of `margins`).
    pub fn parse_list(s: &str, margins: &[MarginPolicy]) -> Result<Vec<TextRanker>, Error> {
        let mut out = Vec::new();
        for tok in s.split(';').map(str::trim).filter(|t| !t.is_empty()) {
            match tok {
                "random" => out.push(TextRanker::Random),
                "oracle" => out.push(TextRanker::Oracle),
                t if t.starts_with("cca:") => {
                    let r = t[4..].parse::<usize>().ok().filter(|r| *r > 0);
                    let Some(r) = r else {
                        return Err(invalid(
                            "pipelines",
                            format!("{t}: cca:R takes a number of directions R >= 1"),
                        ));
                    };
                    out.push(TextRanker::Cca(r));
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

    /// The table name: the SPEC with its margin (`pca:256,pq:32x8 caption-ε`), or the baseline.
    pub fn name(&self) -> String {
        match self {
            TextRanker::Pamir(s, m) => format!("{s} {}", margin_name(*m)),
            TextRanker::Random => "random".into(),
            TextRanker::Oracle => "oracle (tags)".into(),
            TextRanker::Cca(r) => format!("cca:{r} (embeddings)"),
        }
    }
}

fn margin_name(m: MarginPolicy) -> &'static str {
    match m {
        MarginPolicy::Constant => "constant-ε",
        MarginPolicy::Caption => "caption-ε",
    }
}

/// Settings of [`text_eval`].
#[derive(Debug, Clone)]
pub struct TextEvalOptions {
    /// PAMIR settings; `margin` (and `epsilon`, when `default_epsilon`) are set per ranker.
    pub pamir: PamirOptions,
    /// Use ε = 1 for constant-ε and 0.1 for caption-ε (`codedb train`'s defaults).
    pub default_epsilon: bool,
    /// CCA regularisation ρ (relative to each view's mean variance).
    pub cca_rho: f64,
    /// Seed of the model training, the random ranker and PAMIR.
    pub seed: u64,
}

impl Default for TextEvalOptions {
    fn default() -> Self {
        TextEvalOptions {
            pamir: PamirOptions::default(),
            default_epsilon: true,
            cca_rho: 1e-4,
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
    /// PAMIR: the chosen iteration count.
    pub iterations: Option<usize>,
    /// PAMIR: words in the vocabulary.
    pub vocabulary: Option<usize>,
    /// Seconds to train (model and text head, or CCA).
    pub train_s: f64,
    /// Milliseconds per query to rank all test rows.
    pub query_ms: f64,
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
    let mut pos = vec![usize::MAX; n];
    for (i, &r) in test_rows.iter().enumerate() {
        pos[r] = i;
    }
    // Relevance over test positions, for the queries that have any.
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
    let texts: Vec<&str> = kept
        .iter()
        .map(|&q| data.queries[q].text.as_str())
        .collect();
    if rankers.iter().any(|r| matches!(r, TextRanker::Cca(_))) {
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
            }
            (Some(c), Some(q)) => {
                return Err(invalid(
                    "embeddings",
                    format!(
                        "{} caption embeddings for {n} rows and {} query embeddings for {} \
                         queries",
                        c.nrows(),
                        q.nrows(),
                        data.queries.len()
                    ),
                ));
            }
            _ => {
                return Err(invalid(
                    "pipelines",
                    "cca:R needs caption embeddings and query embeddings",
                ));
            }
        }
    }
    let mut out = Vec::with_capacity(rankers.len());
    for ranker in rankers {
        progress(&ranker.name());
        let mut row = TextScores {
            pipeline: ranker.name(),
            margin: None,
            bits: 0,
            avgp: 0.0,
            bep: 0.0,
            p10: 0.0,
            queries: kept.len(),
            unknown_queries: 0,
            c: None,
            iterations: None,
            vocabulary: None,
            train_s: 0.0,
            query_ms: 0.0,
        };
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
                let qe = rows_of(qe, &kept);
                cca_rankings(
                    data.vectors,
                    ce,
                    qe.view(),
                    &train_rows,
                    &test_rows,
                    *r,
                    opts.cca_rho,
                    &mut row,
                )?
            }
            TextRanker::Pamir(spec, margin) => {
                row.margin = Some(match margin {
                    MarginPolicy::Constant => "constant",
                    MarginPolicy::Caption => "caption",
                });
                pamir_rankings(
                    data,
                    spec,
                    *margin,
                    &train_rows,
                    &test_rows,
                    &texts,
                    opts,
                    &mut row,
                )?
            }
        };
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

/// `fit`'s projection of the rows of `x`: `W (x − mean)`, n × R.
fn cca_project(fit: &CcaFit, x: ArrayView2<f32>) -> Array2<f32> {
    let mean = ndarray::ArrayView1::from(&fit.mean[..]);
    let centred = &x - &mean;
    centred.dot(&fit.weight.t())
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

#[allow(clippy::too_many_arguments)]
fn cca_rankings(
    x: ArrayView2<f32>,
    caption_emb: ArrayView2<f32>,
    query_emb: ArrayView2<f32>,
    train_rows: &[usize],
    test_rows: &[usize],
    r: usize,
    rho: f64,
    row: &mut TextScores,
) -> Result<Vec<Vec<usize>>, Error> {
    let t = Instant::now();
    let xi = rows_of(x, train_rows);
    let xt = rows_of(caption_emb, train_rows);
    let (d, e) = (xi.ncols(), xt.ncols());
    let flat = |a: &Array2<f32>| a.iter().copied().collect::<Vec<f32>>();
    let (fi, ft) = (flat(&xi), flat(&xt));
    let img = fit_cca(
        &fi,
        d,
        CcaView::Matrix {
            values: &ft,
            cols: e,
        },
        r,
        rho,
        true,
    )?;
    let mut txt = fit_cca(
        &ft,
        e,
        CcaView::Matrix {
            values: &fi,
            cols: d,
        },
        r,
        rho,
        true,
    )?;
    // Each direction's sign is arbitrary per view: align the text side with the image side.
    let (zi, zt) = (cca_project(&img, xi.view()), cca_project(&txt, xt.view()));
    for k in 0..r {
        if zi.column(k).dot(&zt.column(k)) < 0.0 {
            txt.weight.row_mut(k).mapv_inplace(|v| -v);
        }
    }
    row.train_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let images = unit_rows(cca_project(&img, rows_of(x, test_rows).view()));
    let queries = unit_rows(cca_project(&txt, query_emb));
    let scores = queries.dot(&images.t());
    let out = scores
        .rows()
        .into_iter()
        .map(|s| by_score(s.as_slice().unwrap_or(&s.to_vec())))
        .collect();
    row.query_ms = ms_per(t, query_emb.nrows());
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
    row: &mut TextScores,
) -> Result<Vec<Vec<usize>>, Error> {
    let t = Instant::now();
    let xtr = rows_of(data.vectors, train_rows);
    let topts = TrainOptions {
        seed: opts.seed,
        ..TrainOptions::default()
    };
    let (model, _) = train(spec, xtr.view(), &topts)?;
    let p = model.project(xtr.view())?;
    let caps: Vec<Vec<String>> = train_rows
        .iter()
        .map(|&r| data.captions[r].clone())
        .collect();
    let mut popts = opts.pamir.clone();
    popts.margin = margin;
    popts.seed = opts.seed;
    if opts.default_epsilon {
        popts.epsilon = match margin {
            MarginPolicy::Constant => 1.0,
            MarginPolicy::Caption => 0.1,
        };
    }
    let (head, report) = train_pamir(p.view(), &caps, &popts)?;
    row.c = Some(report.c);
    row.iterations = Some(report.iterations);
    row.vocabulary = Some(report.vocabulary);
    let model: Model = model.with_text_head(head)?;
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
        let mode = SearchMode::default_for(model.code_kind()).ok_or_else(|| {
            invalid(
                "pipelines",
                format!("{spec}: its codes have no search mode"),
            )
        })?;
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
