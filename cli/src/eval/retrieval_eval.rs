//! The retrieval evaluation of ITQ (Gong et al., TPAMI 2013, §4.2) for any list of pipelines on
//! one data set, as `codedb eval` runs it.
//!
//! Per run (the paper averages five): a seeded partition into queries (1,000 by default) and
//! database — random rows, or, when a split marks test rows, random test rows against every
//! training row; each pipeline is trained on the database (or a seeded sample of it), the
//! database is encoded, and the queries are ranked with the crate's scan kernels
//! ([`super::code_ranking`]). Scores:
//!
//! - **map_euclid**: mAP over the full ranking with the Euclidean ground truth of §4.2
//!   (relevant = within the mean distance to the 50th nearest neighbour, exact distances);
//! - **map_class**, **precision_at_k**: mAP and precision of the top k (500, as §4.2) with
//!   same-label ground truth;
//! - **recall_at_r**: share of queries whose exact nearest neighbour is in the top R (the
//!   PQ / FAISS measure);
//! - **lookup** (binary codes): precision and recall of the Hamming ball of radius 2 (§4.5,
//!   Figs. 9-10), for both ground truths, with an empty ball counted as precision 0;
//! - **train_s**, **encode_s** (database), **query_ms** (per query: encode it, then the top-k
//!   scan that precision@k and recall@R use, queries batched as a search would).
//!
//! Supervised pipelines (`ncmml:d,itq,bits`: the NCM metric as the projection stage, Mensink
//! et al. TPAMI 2013 §6 / Table 8) are trained with the labels of the database rows, so their
//! class-level mAP can be set against `pca-itq:d` at the same dimension.
//!
//! Every random choice derives from `seed`: run r uses `derive_seed(seed, r + 1)` for its
//! partition, and sub-streams of it for the ground-truth sample and training.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use ndarray::{ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::error::Error;
use codedb::model::{Model, PipelineSpec, TrainOptions, derive_seed, train};

use super::code_ranking::{CodeScan, EncodedDatabase};
use super::euclidean_truth::{ITQ_NEIGHBOUR_RANK, euclidean_ground_truth};
use super::ground_truth::GroundTruth;
use super::hash_lookup::LookupScores;
use super::knn::{checked_matrix, knn_l2};
use super::precision_recall::{PrCurve, PrSums, log_spaced_cutoffs, mean_curve};
use super::ranked_metrics::recall_at_r;
use crate::error::EvalError;

/// Queries whose full rankings are held at once while computing mAP.
const FULL_RANKING_CHUNK: usize = 64;

/// List lengths of the precision–recall curves (log-spaced from 1 to the database size).
const PR_CURVE_POINTS: usize = 40;

/// Parameters of [`retrieval_eval`]; [`Default`] gives the paper's protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalOptions {
    /// Queries per run (ITQ §4.2: 1,000). With a split, at most the number of test rows.
    pub queries: usize,
    /// Random partitions averaged (ITQ §4.2: five).
    pub runs: usize,
    pub seed: u64,
    /// k of class-label precision@k (ITQ §4.2: 500).
    pub precision_k: usize,
    /// The R of recall@R.
    pub recall_r: Vec<usize>,
    /// Hamming radius of the hash-lookup scores (ITQ §4.5: up to 2).
    pub lookup_radius: u32,
    /// Training rows sampled from the database (`None`: all, up to the training cap).
    pub train_sample: Option<usize>,
    /// Database rows whose 50th-NN distance is averaged for the Euclidean threshold.
    pub truth_sample: usize,
    /// The neighbour rank of the threshold (ITQ: 50).
    pub neighbour_rank: usize,
    /// Settings of supervised steps (`cca:R`'s ρ or ρ grid, the SGD learners' validation).
    pub supervised: codedb::model::SupervisedOptions,
}

impl Default for RetrievalOptions {
    fn default() -> Self {
        RetrievalOptions {
            queries: 1000,
            runs: 1,
            seed: 1234,
            precision_k: 500,
            recall_r: vec![1, 10, 100],
            lookup_radius: 2,
            train_sample: None,
            truth_sample: 1000,
            supervised: codedb::model::SupervisedOptions::default(),
            neighbour_rank: ITQ_NEIGHBOUR_RANK,
        }
    }
}

/// The data of an evaluation: vectors (rows), optional class labels, optional split.
#[derive(Debug, Clone, Copy)]
pub struct RetrievalData<'a> {
    pub vectors: ArrayView2<'a, f32>,
    /// One label per row; without labels the class scores are absent.
    pub labels: Option<&'a [i64]>,
    /// One flag per row: true = test row (queries are drawn from these), false = database.
    pub split: Option<&'a [bool]>,
}

/// Hash-lookup scores at one radius (ITQ §4.5), averaged over runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LookupResult {
    pub radius: u32,
    /// Mean precision with the Euclidean ground truth (empty balls count as 0).
    pub precision: f64,
    /// Mean recall with the Euclidean ground truth.
    pub recall: f64,
    pub class_precision: Option<f64>,
    pub class_recall: Option<f64>,
    /// Mean number of database rows in a query's ball.
    pub mean_retrieved: f64,
    /// Share of queries whose ball is empty.
    pub empty_fraction: f64,
}

/// The scores of one pipeline, averaged over the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineScores {
    /// The SPEC as given (e.g. `pca-itq:64`).
    pub pipeline: String,
    /// Its explicit stage list.
    pub canonical: String,
    /// How codes were compared: `hamming`, `adc` or `l2`.
    pub scan: &'static str,
    pub bits: usize,
    pub bytes: usize,
    pub map_euclid: f64,
    /// map_euclid of each run.
    pub map_euclid_runs: Vec<f64>,
    pub map_class: Option<f64>,
    pub precision_at_k: Option<f64>,
    pub k: usize,
    /// Keyed by R as a decimal string.
    pub recall_at_r: BTreeMap<String, f64>,
    /// recall_at_r of each run (same keys): with a fixed `--split` the runs differ only in the
    /// training seed, so this is the spread a peer comparison must allow for.
    pub recall_at_r_runs: BTreeMap<String, Vec<f64>>,
    /// Binary codes only.
    pub lookup: Option<LookupResult>,
    /// ITQ quantisation loss before the first iteration and after each one (first run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub itq_loss: Vec<f64>,
    pub train_s: f64,
    pub encode_s: f64,
    pub query_ms: f64,
    pub training_rows: usize,
    pub database_rows: usize,
    pub queries: usize,
    pub runs: usize,
    /// The Euclidean threshold (mean 50th-NN distance), averaged over runs.
    pub euclid_radius: f64,
    /// Precision–recall of the first n ranked items, Euclidean ground truth, mean of the runs
    /// ([`super::precision_recall`]).
    pub pr_curve: PrCurve,
    /// The same with class labels as ground truth (when labels were given).
    pub pr_curve_class: Option<PrCurve>,
}

/// Everything [`retrieval_eval`] measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrievalReport {
    pub pipelines: Vec<PipelineScores>,
    /// The Euclidean threshold of each run (mean 50-NN distance).
    pub euclid_radius: Vec<f64>,
    /// Mean number of Euclidean neighbours per query.
    pub mean_euclid_neighbours: f64,
    pub database_rows: usize,
    pub queries: usize,
}

/// A progress report: `done` of `total` steps (a ground truth or a pipeline per run).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalProgress {
    pub done: usize,
    pub total: usize,
    pub step: String,
}

fn invalid(argument: &'static str, detail: String) -> Error {
    EvalError::InvalidArgument { argument, detail }.into()
}

/// Rows of one run: queries and database, each in increasing order.
struct Partition {
    queries: Vec<usize>,
    database: Vec<usize>,
}

/// The seeded partition of run `seed` (see the module docs).
fn partition(n: usize, split: Option<&[bool]>, queries: usize, seed: u64) -> Partition {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match split {
        Some(s) => {
            let test: Vec<usize> = (0..n).filter(|&i| s[i]).collect();
            let database: Vec<usize> = (0..n).filter(|&i| !s[i]).collect();
            let mut chosen: Vec<usize> = if queries >= test.len() {
                test
            } else {
                rand::seq::index::sample(&mut rng, test.len(), queries)
                    .into_iter()
                    .map(|j| test[j])
                    .collect()
            };
            chosen.sort_unstable();
            Partition {
                queries: chosen,
                database,
            }
        }
        None => {
            let mut is_query = vec![false; n];
            for i in rand::seq::index::sample(&mut rng, n, queries) {
                is_query[i] = true;
            }
            Partition {
                queries: (0..n).filter(|&i| is_query[i]).collect(),
                database: (0..n).filter(|&i| !is_query[i]).collect(),
            }
        }
    }
}

/// Checks the data and options; returns (queries per run, database rows).
fn check_inputs(
    data: &RetrievalData,
    pipelines: &[PipelineSpec],
    opts: &RetrievalOptions,
) -> Result<(usize, usize), Error> {
    checked_matrix(data.vectors, "data")?;
    let n = data.vectors.nrows();
    if pipelines.is_empty() {
        return Err(EvalError::Empty { what: "pipelines" }.into());
    }
    if let Some(l) = data.labels
        && l.len() != n
    {
        return Err(EvalError::LengthMismatch {
            what: "labels",
            expected: n,
            found: l.len(),
        }
        .into());
    }
    if data.labels.is_none()
        && let Some(p) = pipelines.iter().find(|p| p.is_supervised())
    {
        return Err(invalid(
            "labels",
            format!(
                "pipeline {:?} learns from class labels (ncmml): pass --labels",
                p.text
            ),
        ));
    }
    if opts.queries == 0 {
        return Err(invalid("queries", "at least one query is needed".into()));
    }
    if opts.runs == 0 {
        return Err(invalid("runs", "at least one run is needed".into()));
    }
    if opts.precision_k == 0 {
        return Err(invalid("k", "k must be at least 1".into()));
    }
    if opts.recall_r.is_empty() || opts.recall_r.contains(&0) {
        return Err(invalid(
            "recall_r",
            format!("{:?}: need at least one R, each at least 1", opts.recall_r),
        ));
    }
    let (nq, ndb) = match data.split {
        Some(s) => {
            if s.len() != n {
                return Err(EvalError::LengthMismatch {
                    what: "split",
                    expected: n,
                    found: s.len(),
                }
                .into());
            }
            let test = s.iter().filter(|&&t| t).count();
            if test == 0 {
                return Err(invalid("split", "no row is marked as a query".into()));
            }
            (opts.queries.min(test), n - test)
        }
        None => {
            if opts.queries >= n {
                return Err(invalid(
                    "queries",
                    format!("{} queries leave no database out of {n} rows", opts.queries),
                ));
            }
            (opts.queries, n - opts.queries)
        }
    };
    if ndb <= opts.neighbour_rank {
        return Err(invalid(
            "database",
            format!(
                "{ndb} database rows; the Euclidean ground truth needs more than {} (the \
                 neighbour rank)",
                opts.neighbour_rank
            ),
        ));
    }
    if data.labels.is_some() && opts.precision_k > ndb {
        return Err(invalid(
            "k",
            format!(
                "precision@k with k = {} exceeds the database size {ndb}",
                opts.precision_k
            ),
        ));
    }
    if let Some(&r) = opts.recall_r.iter().find(|&&r| r > ndb) {
        return Err(invalid(
            "recall_r",
            format!("R = {r} exceeds the database size {ndb}"),
        ));
    }
    Ok((nq, ndb))
}

/// One pipeline's scores in one run.
struct RunScores {
    map_euclid: f64,
    map_class: Option<f64>,
    precision_at_k: Option<f64>,
    recall: Vec<f64>,
    lookup: Option<(LookupScores, Option<LookupScores>)>,
    itq_loss: Vec<f64>,
    train_s: f64,
    encode_s: f64,
    query_ms: f64,
    training_rows: usize,
    bits: usize,
    bytes: usize,
    canonical: String,
    scan: CodeScan,
    pr_curve: PrCurve,
    pr_curve_class: Option<PrCurve>,
}

/// The ground truths of one run.
struct Truths {
    euclid: GroundTruth,
    class: Option<GroundTruth>,
    nearest: Vec<u32>,
}

/// Mean of the defined values; `NoRelevant` when there is none.
fn mean_defined(values: &[Option<f64>], what: &'static str) -> Result<f64, Error> {
    let defined: Vec<f64> = values.iter().flatten().copied().collect();
    if defined.is_empty() {
        return Err(EvalError::NoRelevant { what }.into());
    }
    Ok(defined.iter().sum::<f64>() / defined.len() as f64)
}

fn evaluate_pipeline(
    spec: &PipelineSpec,
    db: ArrayView2<f32>,
    db_labels: Option<&[i64]>,
    qs: ArrayView2<f32>,
    truths: &Truths,
    opts: &RetrievalOptions,
    seed: u64,
) -> Result<RunScores, Error> {
    let t = Instant::now();
    let (model, report) = train(
        spec,
        db,
        &TrainOptions {
            seed,
            sample: opts.train_sample,
            // Supervised steps (`ncmml:d`, Mensink et al. Table 8) learn from the database
            // rows' labels; unsupervised ones ignore them.
            labels: db_labels.map(Arc::from),
            supervised: opts.supervised.clone(),
            ..TrainOptions::default()
        },
    )?;
    let train_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let enc = EncodedDatabase::new(&model, db)?;
    let encode_s = t.elapsed().as_secs_f64();
    let ndb = db.nrows();
    let nq = qs.nrows();
    let max_r = opts.recall_r.iter().copied().max().unwrap_or(1);
    let top = if truths.class.is_some() {
        max_r.max(opts.precision_k)
    } else {
        max_r
    };
    let t = Instant::now();
    let lists = enc.rank(qs, top)?;
    let query_ms = t.elapsed().as_secs_f64() * 1e3 / nq as f64;
    let top_rows: Vec<Vec<u32>> = lists
        .iter()
        .map(|l| l.iter().map(|&(_, i)| i).collect())
        .collect();
    let recall = opts
        .recall_r
        .iter()
        .map(|&r| recall_at_r(&top_rows, &truths.nearest, r))
        .collect::<Result<Vec<f64>, EvalError>>()?;
    let precision_at_k = match &truths.class {
        Some(c) => {
            let mut sum = 0f64;
            for (q, r) in top_rows.iter().enumerate() {
                sum += c.precision_at_k(q, r, opts.precision_k)?;
            }
            Some(sum / nq as f64)
        }
        None => None,
    };
    drop(top_rows);
    // Full rankings, a chunk of queries at a time: mAP under both ground truths, and the
    // Hamming balls (the prefix of the ranking within the radius).
    let binary = enc.scan() == CodeScan::Hamming;
    let mut ap_euclid = Vec::with_capacity(nq);
    let mut ap_class = Vec::with_capacity(nq);
    let mut balls: Vec<Vec<u32>> = Vec::new();
    let cutoffs = log_spaced_cutoffs(ndb, PR_CURVE_POINTS);
    let mut pr_euclid = PrSums::new(cutoffs.clone());
    let mut pr_class = PrSums::new(cutoffs);
    for start in (0..nq).step_by(FULL_RANKING_CHUNK) {
        let end = (start + FULL_RANKING_CHUNK).min(nq);
        let full = enc.rank(qs.slice(ndarray::s![start..end, ..]), ndb)?;
        for (j, list) in full.iter().enumerate() {
            let q = start + j;
            let ranking: Vec<u32> = list.iter().map(|&(_, i)| i).collect();
            ap_euclid.push(truths.euclid.average_precision(q, &ranking)?);
            pr_euclid.add(&truths.euclid, q, &ranking)?;
            if let Some(c) = &truths.class {
                ap_class.push(c.average_precision(q, &ranking)?);
                pr_class.add(c, q, &ranking)?;
            }
            if binary {
                let radius = opts.lookup_radius as f32;
                balls.push(
                    list.iter()
                        .take_while(|&&(d, _)| d <= radius)
                        .map(|&(_, i)| i)
                        .collect(),
                );
            }
        }
    }
    let map_euclid = mean_defined(&ap_euclid, "Euclidean mAP")?;
    let map_class = match truths.class {
        Some(_) => Some(mean_defined(&ap_class, "class-label mAP")?),
        None => None,
    };
    let pr_curve = pr_euclid.mean("Euclidean precision-recall curve")?;
    let pr_curve_class = match truths.class {
        Some(_) => Some(pr_class.mean("class-label precision-recall curve")?),
        None => None,
    };
    let lookup = if binary {
        let e = truths.euclid.lookup_scores(&balls)?;
        let c = truths
            .class
            .as_ref()
            .map(|c| c.lookup_scores(&balls))
            .transpose()?;
        Some((e, c))
    } else {
        None
    };
    Ok(RunScores {
        map_euclid,
        map_class,
        precision_at_k,
        recall,
        lookup,
        itq_loss: report.itq_loss,
        train_s,
        encode_s,
        query_ms,
        training_rows: report.training_rows,
        bits: model.code_bits(),
        bytes: model.code_bytes(),
        canonical: report.canonical,
        scan: enc.scan(),
        pr_curve,
        pr_curve_class,
    })
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, c) = v.fold((0f64, 0usize), |(s, c), x| (s + x, c + 1));
    if c == 0 { 0.0 } else { s / c as f64 }
}

fn mean_opt(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let all: Option<Vec<f64>> = v.collect();
    all.map(|a| mean(a.into_iter()))
}

fn aggregate(
    spec: &PipelineSpec,
    runs: &[RunScores],
    opts: &RetrievalOptions,
    ndb: usize,
    nq: usize,
    euclid_radius: f64,
) -> PipelineScores {
    let first = &runs[0];
    let recall_at_r = opts
        .recall_r
        .iter()
        .enumerate()
        .map(|(i, r)| (r.to_string(), mean(runs.iter().map(|s| s.recall[i]))))
        .collect();
    let recall_at_r_runs = opts
        .recall_r
        .iter()
        .enumerate()
        .map(|(i, r)| (r.to_string(), runs.iter().map(|s| s.recall[i]).collect()))
        .collect();
    let lookup = first.lookup.map(|_| {
        let l: Vec<_> = runs.iter().filter_map(|r| r.lookup).collect();
        LookupResult {
            radius: opts.lookup_radius,
            precision: mean(l.iter().map(|x| x.0.precision)),
            recall: mean(l.iter().map(|x| x.0.recall)),
            class_precision: mean_opt(l.iter().map(|x| x.1.map(|c| c.precision))),
            class_recall: mean_opt(l.iter().map(|x| x.1.map(|c| c.recall))),
            mean_retrieved: mean(l.iter().map(|x| x.0.mean_retrieved)),
            empty_fraction: mean(l.iter().map(|x| x.0.empty_lookups as f64 / nq as f64)),
        }
    });
    PipelineScores {
        pipeline: spec.text.clone(),
        canonical: first.canonical.clone(),
        scan: first.scan.name(),
        bits: first.bits,
        bytes: first.bytes,
        map_euclid: mean(runs.iter().map(|r| r.map_euclid)),
        map_euclid_runs: runs.iter().map(|r| r.map_euclid).collect(),
        map_class: mean_opt(runs.iter().map(|r| r.map_class)),
        precision_at_k: mean_opt(runs.iter().map(|r| r.precision_at_k)),
        k: opts.precision_k,
        recall_at_r,
        recall_at_r_runs,
        lookup,
        itq_loss: first.itq_loss.clone(),
        train_s: mean(runs.iter().map(|r| r.train_s)),
        encode_s: mean(runs.iter().map(|r| r.encode_s)),
        query_ms: mean(runs.iter().map(|r| r.query_ms)),
        training_rows: first.training_rows,
        database_rows: ndb,
        queries: nq,
        runs: runs.len(),
        euclid_radius,
        pr_curve: mean_curve(&runs.iter().map(|r| &r.pr_curve).collect::<Vec<_>>())
            .unwrap_or_else(|| first.pr_curve.clone()),
        pr_curve_class: runs
            .iter()
            .map(|r| r.pr_curve_class.as_ref())
            .collect::<Option<Vec<_>>>()
            .and_then(|c| mean_curve(&c)),
    }
}

/// Runs the evaluation described in the module docs for every pipeline in `pipelines`, on the
/// same partitions and ground truths, and averages each score over `opts.runs`.
///
/// Errors (before any work): empty data or pipeline list, NaN/Inf in the data (naming row and
/// column), labels or split of the wrong length, a split without test rows, a database too
/// small for the 50th-NN threshold, k or an R larger than the database, a supervised pipeline
/// (`ncmml:d`) without labels; then any training
/// error of a pipeline (e.g. more bits than the data allows).
pub fn retrieval_eval(
    data: RetrievalData,
    pipelines: &[PipelineSpec],
    opts: &RetrievalOptions,
    progress: &mut dyn FnMut(&EvalProgress),
) -> Result<RetrievalReport, Error> {
    let (nq, ndb) = check_inputs(&data, pipelines, opts)?;
    let x = data.vectors;
    let total = opts.runs * (1 + pipelines.len());
    let mut done = 0usize;
    let mut per_pipeline: Vec<Vec<RunScores>> = pipelines.iter().map(|_| Vec::new()).collect();
    let mut radii = Vec::with_capacity(opts.runs);
    let mut neighbours = Vec::with_capacity(opts.runs);
    for run in 0..opts.runs {
        let run_seed = derive_seed(opts.seed, run as u64 + 1);
        let part = partition(x.nrows(), data.split, opts.queries, run_seed);
        debug_assert_eq!((part.queries.len(), part.database.len()), (nq, ndb));
        let db = x.select(Axis(0), &part.database);
        let qs = x.select(Axis(0), &part.queries);
        progress(&EvalProgress {
            done,
            total,
            step: format!("run {}: exact ground truth", run + 1),
        });
        let et = euclidean_ground_truth(
            db.view(),
            qs.view(),
            opts.neighbour_rank,
            opts.truth_sample,
            derive_seed(run_seed, 1),
        )?;
        radii.push(et.radius);
        neighbours.push(mean(
            (0..nq).map(|q| et.truth.relevant_count(q).unwrap_or(0) as f64),
        ));
        let nearest: Vec<u32> = knn_l2(db.view(), qs.view(), 1)?
            .into_iter()
            .map(|l| l.first().map_or(0, |nb| nb.index))
            .collect();
        let class = match data.labels {
            Some(l) => Some(GroundTruth::from_labels(
                part.database.iter().map(|&i| l[i]).collect(),
                part.queries.iter().map(|&i| l[i]).collect(),
            )?),
            None => None,
        };
        let db_labels: Option<Vec<i64>> = data
            .labels
            .map(|l| part.database.iter().map(|&i| l[i]).collect());
        let truths = Truths {
            euclid: et.truth,
            class,
            nearest,
        };
        done += 1;
        for (p, spec) in pipelines.iter().enumerate() {
            progress(&EvalProgress {
                done,
                total,
                step: format!("run {}: {}", run + 1, spec.text),
            });
            let scores = evaluate_pipeline(
                spec,
                db.view(),
                db_labels.as_deref(),
                qs.view(),
                &truths,
                opts,
                derive_seed(run_seed, 2),
            )?;
            per_pipeline[p].push(scores);
            done += 1;
        }
    }
    progress(&EvalProgress {
        done,
        total,
        step: "done".into(),
    });
    let mean_radius = mean(radii.iter().copied());
    Ok(RetrievalReport {
        pipelines: pipelines
            .iter()
            .zip(&per_pipeline)
            .map(|(s, r)| aggregate(s, r, opts, ndb, nq, mean_radius))
            .collect(),
        euclid_radius: radii,
        mean_euclid_neighbours: mean(neighbours.into_iter()),
        database_rows: ndb,
        queries: nq,
    })
}

/// A trained model's codes ranked for some queries: exposed for tests and tools that need the
/// rankings themselves (see [`EncodedDatabase`]).
pub fn rank_with_model(
    model: &Model,
    database: ArrayView2<f32>,
    queries: ArrayView2<f32>,
    k: usize,
) -> Result<Vec<Vec<(f32, u32)>>, Error> {
    EncodedDatabase::new(model, database)?.rank(queries, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_disjoint_seeded_and_cover_the_rows() {
        let a = partition(100, None, 10, 7);
        let b = partition(100, None, 10, 7);
        let c = partition(100, None, 10, 8);
        assert_eq!(a.queries, b.queries);
        assert_ne!(a.queries, c.queries);
        assert_eq!(a.queries.len(), 10);
        let mut all: Vec<usize> = a.queries.iter().chain(&a.database).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
        // With a split, queries come from the test rows only and the database is the rest.
        let split: Vec<bool> = (0..100).map(|i| i % 4 == 0).collect();
        let s = partition(100, Some(&split), 10, 7);
        assert_eq!(s.queries.len(), 10);
        assert!(s.queries.iter().all(|&i| split[i]));
        assert_eq!(s.database.len(), 75);
        assert!(s.database.iter().all(|&i| !split[i]));
        let all_test = partition(100, Some(&split), 1000, 7);
        assert_eq!(all_test.queries.len(), 25);
    }
}
