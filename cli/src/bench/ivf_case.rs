//! `codedb bench ivf`: IVFADC (Jégou et al., TPAMI 2011, §IV) against the flat scan of the same
//! codes on a generated clustered set too large to hold in memory.
//!
//! Rows are Gaussian clusters: `clusters` centres with N(0, 1) coordinates, and a row is a
//! random centre plus noise with a decaying per-dimension scale (σ_j = σ/√(1+j), like
//! descriptors whose variance sits in a few directions). Row `r` is a pure function of the seed
//! and `r` (its own SplitMix64 stream), so rows are generated in parallel, streamed in batches
//! and never all held: 10⁸ × 96 floats would be 38 GB. Queries are rows `rows..rows + queries`
//! of the same stream (same distribution, not in the index).
//!
//! The pipeline `ivf:K,pq:Mx8` is trained through the engine's `train` on a seeded sample of
//! the rows; the rows go through `Index::add` in batches (encoding included) and commits, then
//! the log is sealed. The exact nearest neighbours of the queries are found while the rows
//! stream by (one pass, no second generation). Searches: the flat scan (`nprobe = K`, every
//! code scored) and each `nprobe`, all queries in one call, optionally re-ranking the best `R`
//! with stored f16 vectors (the same `R` for every case); recall@10 in Jégou et al.'s sense
//! (the fraction of queries whose true nearest neighbour is among the first 10 results),
//! 10-recall@10 against the exact 10 nearest and against the flat scan's results. The cases
//! are timed in interleaved rounds (flat, each nprobe, flat, …) and each reports its median, so
//! the ratios compare searches run under the same load.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use serde::Serialize;

use crate::error::Error;
use codedb::format::{VectorDType, VectorSpec};
use codedb::kernels::l2sq_f32;
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{AddOptions, Config, CreateOptions, Index, Retention, SearchMode, SearchParams};

use super::generated_segment::SplitMix;

/// What to generate, build and search.
#[derive(Debug, Clone)]
pub struct IvfBench {
    pub rows: u64,
    pub dim: usize,
    pub clusters: usize,
    /// Noise scale σ of the first dimension (σ_j = σ/√(1+j)).
    pub sigma: f32,
    /// Coarse lists K.
    pub lists: usize,
    /// PQ sub-quantisers M (8 bits each).
    pub m: usize,
    pub nprobe: Vec<usize>,
    pub queries: usize,
    pub k: usize,
    /// Rows sampled (seeded) to train the pipeline.
    pub train_rows: usize,
    /// Rows per `Index::add` call.
    pub batch: usize,
    /// Search threads.
    pub threads: usize,
    /// Re-rank the best `R` with stored f16 vectors in every case; `None`: no vectors stored.
    pub rerank: Option<usize>,
    /// Timed rounds over all cases (each case reports its median).
    pub repeat: usize,
    pub seed: u64,
}

/// One search's figures.
#[derive(Debug, Clone, Serialize)]
pub struct IvfCase {
    /// Lists probed (K for the flat scan).
    pub nprobe: usize,
    pub flat: bool,
    /// Median over the rounds of the search call's seconds.
    pub seconds: f64,
    /// Every round's seconds, in order.
    pub seconds_per_round: Vec<f64>,
    pub queries_per_s: f64,
    /// Fraction of queries whose exact nearest neighbour is in the first 10 results.
    pub recall_at_10: f64,
    /// Mean |first 10 ∩ the exact 10 nearest| / 10.
    pub recall_10_at_10: f64,
    /// Mean |first 10 ∩ the flat scan's first 10| / 10.
    pub recall_10_vs_flat: f64,
    /// queries/s over the flat scan's.
    pub speedup_vs_flat: f64,
}

/// The run's figures (the `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct IvfResult {
    pub rows: u64,
    pub dim: usize,
    pub clusters: usize,
    pub sigma: f32,
    pub pipeline: String,
    pub queries: usize,
    pub k: usize,
    pub threads: usize,
    /// Candidates re-ranked with the stored f16 vectors (`None`: no re-ranking).
    pub rerank: Option<usize>,
    /// Timed rounds (cases interleaved; medians reported).
    pub repeat: usize,
    /// 1-minute load average (/proc/loadavg) before and after the searches, when the OS has it.
    pub load_before_search: Option<f64>,
    pub load_after_search: Option<f64>,
    pub seed: u64,
    pub train_rows: usize,
    /// Training the pipeline on the sample (generation excluded).
    pub train_s: f64,
    /// Generating the rows, encoding and adding them with commits (seals along the way), and
    /// the exact scan for the truth, which shares the generation pass.
    pub add_s: f64,
    /// Of `add_s`: generating rows and the exact scan.
    pub generate_and_truth_s: f64,
    /// Of `add_s`: `Index::add` (encoding) and the commits, i.e. `add_s − generate_and_truth_s`.
    pub encode_add_s: f64,
    /// The last commit that seals the active log.
    pub seal_s: f64,
    /// Bytes of the index directory.
    pub index_bytes: u64,
    /// Peak resident memory of the process (VmHWM), when the OS reports it.
    pub peak_rss_bytes: Option<u64>,
    pub cases: Vec<IvfCase>,
}

fn invalid(argument: &str, detail: impl Into<String>) -> Error {
    Error::InvalidArgument {
        argument: argument.into(),
        detail: detail.into(),
    }
}

/// The seeded clustered rows (see the module doc).
struct Rows {
    dim: usize,
    seed: u64,
    centres: Vec<f32>,
    scale: Vec<f32>,
}

impl Rows {
    fn new(b: &IvfBench) -> Rows {
        let mut rng = SplitMix(b.seed ^ 0x6976_6663_656e_7472);
        let mut centres = vec![0f32; b.clusters * b.dim];
        for v in &mut centres {
            *v = normal(&mut rng);
        }
        let scale = (0..b.dim)
            .map(|j| b.sigma / ((1 + j) as f32).sqrt())
            .collect();
        Rows {
            dim: b.dim,
            seed: b.seed,
            centres,
            scale,
        }
    }

    /// Row `r` into `out` (`dim` values).
    fn row(&self, r: u64, out: &mut [f32]) {
        let mut rng = SplitMix(
            self.seed
                .wrapping_add(r.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        );
        rng.next();
        let n = (self.centres.len() / self.dim.max(1)) as u64;
        let c = (rng.next() % n.max(1)) as usize;
        let centre = &self.centres[c * self.dim..(c + 1) * self.dim];
        for ((o, &cv), &s) in out.iter_mut().zip(centre).zip(&self.scale) {
            *o = cv + s * normal(&mut rng);
        }
    }

    /// Rows `start..start + n` (row-major), generated in parallel.
    fn block(&self, start: u64, n: usize) -> Vec<f32> {
        let mut x = vec![0f32; n * self.dim];
        x.par_chunks_mut(self.dim)
            .enumerate()
            .for_each(|(i, o)| self.row(start + i as u64, o));
        x
    }
}

/// An approximately standard normal value from one 64-bit draw: the sum of four 16-bit
/// uniforms, centred and scaled to unit variance (Irwin-Hall, n = 4). Cheap (10⁸ × 96 draws)
/// and deterministic; its tails are bounded at ±2√3, which clusters do not mind.
fn normal(rng: &mut SplitMix) -> f32 {
    let w = rng.next();
    let s: u64 = (0..4).map(|i| (w >> (16 * i)) & 0xffff).sum();
    let u = s as f32 / 65_536.0; // sum of 4 uniforms on [0, 1)
    (u - 2.0) * 3f32.sqrt()
}

/// The exact [`TRUTH_K`] nearest rows (squared L2, ties by smaller id; nearest first) of each
/// query so far.
struct Truth {
    best: Vec<Vec<(f32, u64)>>,
}

/// Keeps `(s, id)` if it is among the `TRUTH_K` smallest of `best` (sorted ascending).
fn keep(best: &mut Vec<(f32, u64)>, e: (f32, u64)) {
    if best.len() == TRUTH_K && e >= best[TRUTH_K - 1] {
        return;
    }
    let at = best.partition_point(|b| *b < e);
    best.insert(at, e);
    best.truncate(TRUTH_K);
}

impl Truth {
    /// Folds rows `start..` (row-major block `x`) into each query's best: rows in parallel
    /// blocks of [`TRUTH_ROWS`] (cache-resident while every query is scored against them).
    fn fold(&mut self, q: &[f32], d: usize, x: &[f32], start: u64) -> Result<(), Error> {
        let nq = q.len() / d;
        let parts: Vec<Vec<Vec<(f32, u64)>>> = x
            .par_chunks(TRUTH_ROWS * d)
            .enumerate()
            .map(|(c, xc)| -> Result<Vec<Vec<(f32, u64)>>, Error> {
                let mut best = vec![Vec::with_capacity(TRUTH_K + 1); nq];
                for (i, xr) in xc.chunks_exact(d).enumerate() {
                    let id = start + (c * TRUTH_ROWS + i) as u64;
                    for (b, qr) in best.iter_mut().zip(q.chunks_exact(d)) {
                        keep(b, (l2sq_f32(qr, xr)?, id));
                    }
                }
                Ok(best)
            })
            .collect::<Result<_, Error>>()?;
        for p in parts {
            for (b, l) in self.best.iter_mut().zip(p) {
                for e in l {
                    keep(b, e);
                }
            }
        }
        Ok(())
    }
}

/// Rows per block of the exact scan.
const TRUTH_ROWS: usize = 2048;

/// Exact neighbours kept per query (recall@10 and 10-recall@10).
const TRUTH_K: usize = 10;

/// The 1-minute load average, when /proc/loadavg has one.
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The median of `v` (mean of the middle two for an even count); `v` is not empty.
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Peak resident memory (VmHWM of /proc/self/status), when there is one.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Generates, trains, builds the index in `dir/ivf-bench` (removed afterwards unless `keep`),
/// and measures the searches. `progress(done, total, what)` reports rows added.
pub fn run_ivf_bench(
    dir: &Path,
    b: &IvfBench,
    keep: bool,
    progress: &mut dyn FnMut(u64, &str),
) -> Result<IvfResult, Error> {
    check_bench(b)?;
    let pipeline = format!("ivf:{},pq:{}x8", b.lists, b.m);
    let spec = PipelineSpec::parse(&pipeline).map_err(|e| invalid("lists", e.to_string()))?;
    let generator = Rows::new(b);
    let (model, train_s) = train_on_sample(b, &spec, &generator, progress)?;
    let qx = Array2::from_shape_vec((b.queries, b.dim), generator.block(b.rows, b.queries))
        .map_err(|e| invalid("queries", e.to_string()))?;
    let path: PathBuf = dir.join("ivf-bench");
    if path.exists() {
        std::fs::remove_dir_all(&path)
            .map_err(|e| invalid("dir", format!("{}: {e}", path.display())))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| invalid("dir", format!("{}: {e}", dir.display())))?;
    let result = (|| -> Result<IvfResult, Error> {
        let (index, truth, add_s, gen_s) =
            build_index(&path, b, &model, &generator, &qx, progress)?;
        let t = Instant::now();
        index.commit_sealed()?;
        index.gc()?;
        let seal_s = t.elapsed().as_secs_f64();
        progress(b.rows, "searching");
        let timed = time_cases(&index, b, &qx)?;
        Ok(IvfResult {
            rows: b.rows,
            dim: b.dim,
            clusters: b.clusters,
            sigma: b.sigma,
            pipeline: pipeline.clone(),
            queries: b.queries,
            k: b.k,
            threads: b.threads,
            rerank: b.rerank,
            repeat: b.repeat,
            load_before_search: timed.load_before,
            load_after_search: timed.load_after,
            seed: b.seed,
            train_rows: b.train_rows,
            train_s,
            add_s,
            generate_and_truth_s: gen_s,
            encode_add_s: add_s - gen_s,
            seal_s,
            index_bytes: dir_bytes(&path),
            peak_rss_bytes: peak_rss(),
            cases: score_cases(b, &truth, &timed),
        })
    })();
    if !keep
        && let Err(e) = std::fs::remove_dir_all(&path)
        && result.is_ok()
    {
        return Err(invalid(
            "dir",
            format!("could not remove {}: {e}", path.display()),
        ));
    }
    result
}

/// Refuses a benchmark that cannot run or whose figures would mean nothing, before anything
/// is generated: empty sizes, re-ranking fewer than k, M not dividing the dimension (PQ splits
/// it into M sub-vectors, Jégou et al. §II), an nprobe outside 1..=K, a bad σ.
fn check_bench(b: &IvfBench) -> Result<(), Error> {
    if b.dim == 0
        || b.clusters == 0
        || b.rows == 0
        || b.queries == 0
        || b.batch == 0
        || b.repeat == 0
    {
        return Err(invalid(
            "rows",
            "rows, dim, clusters, queries, batch and repeat must be at least 1",
        ));
    }
    if let Some(r) = b.rerank
        && r < b.k
    {
        return Err(invalid(
            "rerank",
            format!("{r}: must be at least k ({})", b.k),
        ));
    }
    if !b.dim.is_multiple_of(b.m) {
        return Err(invalid(
            "m",
            format!("{} sub-quantisers do not divide dim {}", b.m, b.dim),
        ));
    }
    if let Some(&n) = b.nprobe.iter().find(|&&n| n == 0 || n > b.lists) {
        return Err(invalid(
            "nprobe",
            format!("{n}: 1 ≤ nprobe ≤ lists ({})", b.lists),
        ));
    }
    if !(b.sigma.is_finite() && b.sigma >= 0.0) {
        return Err(invalid(
            "sigma",
            format!("{}: must be finite and ≥ 0", b.sigma),
        ));
    }
    Ok(())
}

/// Trains the pipeline through the engine's `train` on a seeded sample of the indexed rows
/// (the rows are never all held). Returns the model and the training seconds (generating the
/// sample excluded).
fn train_on_sample(
    b: &IvfBench,
    spec: &PipelineSpec,
    generator: &Rows,
    progress: &mut dyn FnMut(u64, &str),
) -> Result<(Model, f64), Error> {
    // Training sample: rows drawn by a seeded generator from the indexed rows.
    let mut pick = SplitMix(b.seed ^ 0x7472_6169_6e00_0000);
    let sample_ids: Vec<u64> = (0..b.train_rows.max(1))
        .map(|_| pick.next() % b.rows)
        .collect();
    let mut sample = Array2::<f32>::zeros((sample_ids.len(), b.dim));
    sample
        .as_slice_mut()
        .unwrap_or(&mut [])
        .par_chunks_mut(b.dim)
        .zip(&sample_ids)
        .for_each(|(o, &r)| generator.row(r, o));
    progress(0, "training");
    let t = Instant::now();
    let opts = TrainOptions {
        seed: b.seed,
        sample: Some(sample_ids.len()),
        ..TrainOptions::default()
    };
    let (model, _) = train(spec, sample.view(), &opts)?;
    Ok((model, t.elapsed().as_secs_f64()))
}

/// Creates the index at `path` and streams the rows into it in batches (`Index::add`, commit,
/// gc), folding each batch into the queries' exact neighbours on the way, so the rows are
/// generated once. Returns the index, the truth, and the seconds of the whole pass and of its
/// generation-and-truth part.
fn build_index(
    path: &Path,
    b: &IvfBench,
    model: &Model,
    generator: &Rows,
    qx: &Array2<f32>,
    progress: &mut dyn FnMut(u64, &str),
) -> Result<(Index, Truth, f64, f64), Error> {
    // Old versions' files (committed log batches, replaced segments) are collected after
    // every commit: the disk holds about one copy of the rows.
    let config = Config {
        retention: Retention {
            keep_versions: 1,
            keep_for: Duration::ZERO,
        },
        ..Config::default()
    };
    let create = CreateOptions {
        store_vectors: b
            .rerank
            .map(|_| VectorSpec::new(VectorDType::F16, b.dim as u32)),
        ..CreateOptions::default()
    };
    let index = Index::create_with(path, &model.to_model_file(), &create, config)?;
    let qflat: Vec<f32> = qx.iter().copied().collect();
    let mut truth = Truth {
        best: vec![Vec::with_capacity(TRUTH_K + 1); b.queries],
    };
    let t = Instant::now();
    let mut gen_s = 0.0;
    let mut start = 0u64;
    while start < b.rows {
        let n = (b.batch as u64).min(b.rows - start) as usize;
        let tg = Instant::now();
        let x = generator.block(start, n);
        truth.fold(&qflat, b.dim, &x, start)?;
        gen_s += tg.elapsed().as_secs_f64();
        let ids: Vec<u64> = (start..start + n as u64).collect();
        let view =
            ArrayView2::from_shape((n, b.dim), &x).map_err(|e| invalid("batch", e.to_string()))?;
        index.add(
            view,
            &AddOptions {
                ids: Some(&ids),
                ..AddOptions::default()
            },
        )?;
        index.commit()?;
        index.gc()?;
        start += n as u64;
        progress(start, "encoding and adding");
    }
    Ok((index, truth, t.elapsed().as_secs_f64(), gen_s))
}

/// The timed searches: case 0 is the flat scan (`nprobe = K`), then each nprobe; every round's
/// seconds per case, round 0's results, and the load average around the searches.
struct TimedCases {
    probes: Vec<usize>,
    seconds: Vec<Vec<f64>>,
    found: Vec<Vec<Vec<u64>>>,
    load_before: Option<f64>,
    load_after: Option<f64>,
}

/// Runs every case `repeat` times in interleaved rounds (flat, each nprobe, flat, …) so each
/// sees the same load, all queries in one call; a round that returns other results than round
/// 0 is an error (the search is deterministic).
fn time_cases(index: &Index, b: &IvfBench, qx: &Array2<f32>) -> Result<TimedCases, Error> {
    let snap = index.snapshot();
    let search = |nprobe: usize| -> Result<(f64, Vec<Vec<u64>>), Error> {
        let mut p = SearchParams::new(b.k, SearchMode::AdcL2)
            .nprobe(nprobe)
            .threads(b.threads);
        if let Some(r) = b.rerank {
            p = p.rerank(r);
        }
        let t = Instant::now();
        let hits = snap.search(qx.view(), &p)?;
        let s = t.elapsed().as_secs_f64();
        Ok((
            s,
            hits.into_iter()
                .map(|h| h.into_iter().map(|h| h.id).collect())
                .collect(),
        ))
    };
    // Case 0 is the flat scan; rounds interleave the cases so each sees the same load.
    let probes: Vec<usize> = std::iter::once(b.lists)
        .chain(b.nprobe.iter().copied())
        .collect();
    let load_before = load_average();
    let mut seconds = vec![Vec::with_capacity(b.repeat); probes.len()];
    let mut found: Vec<Vec<Vec<u64>>> = Vec::with_capacity(probes.len());
    for round in 0..b.repeat {
        for (c, &n) in probes.iter().enumerate() {
            let (s, ids) = search(n)?;
            seconds[c].push(s);
            if round == 0 {
                found.push(ids);
            } else if ids != found[c] {
                return Err(invalid(
                    "repeat",
                    format!("nprobe {n}: round {round} returned other results than round 0"),
                ));
            }
        }
    }
    Ok(TimedCases {
        probes,
        seconds,
        found,
        load_before,
        load_after: load_average(),
    })
}

/// Each case's figures: its median time and speed-up over the flat scan, recall@10 in Jégou et
/// al.'s sense (§V: the true nearest neighbour among the first 10), and 10-recall@10 against
/// the exact 10 nearest and against the flat scan's first 10.
fn score_cases(b: &IvfBench, truth: &Truth, timed: &TimedCases) -> Vec<IvfCase> {
    let recall = |found: &[Vec<u64>]| -> f64 {
        let hit = found
            .iter()
            .zip(&truth.best)
            .filter(|(f, t)| {
                t.first()
                    .is_some_and(|t| f.iter().take(10).any(|&id| id == t.1))
            })
            .count();
        hit as f64 / b.queries as f64
    };
    let overlap = |found: &[Vec<u64>], with: &mut dyn Iterator<Item = Vec<u64>>| -> f64 {
        let s: f64 = found
            .iter()
            .zip(with)
            .map(|(f, g10)| {
                f.iter().take(10).filter(|id| g10.contains(id)).count() as f64
                    / g10.len().max(1) as f64
            })
            .sum();
        s / b.queries as f64
    };
    let flat = &timed.found[0];
    let exact10 = || {
        truth
            .best
            .iter()
            .map(|t| t.iter().map(|e| e.1).collect::<Vec<u64>>())
    };
    let flat10 = || {
        flat.iter()
            .map(|g| g.iter().take(10).copied().collect::<Vec<u64>>())
    };
    let flat_qps = b.queries as f64 / median(&timed.seconds[0]);
    timed
        .probes
        .iter()
        .zip(&timed.found)
        .zip(&timed.seconds)
        .enumerate()
        .map(|(c, ((&n, f), secs))| {
            let s = median(secs);
            let qps = b.queries as f64 / s;
            IvfCase {
                nprobe: n,
                flat: c == 0,
                seconds: s,
                seconds_per_round: secs.clone(),
                queries_per_s: qps,
                recall_at_10: recall(f),
                recall_10_at_10: overlap(f, &mut exact10()),
                recall_10_vs_flat: overlap(f, &mut flat10()),
                speedup_vs_flat: qps / flat_qps,
            }
        })
        .collect()
}
