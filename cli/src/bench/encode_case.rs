//! One `codedb bench encode` case: train a pipeline on generated descriptors, then time how
//! fast the trained model turns descriptors into codes (rows/s) on a given number of threads.
//!
//! The descriptors are Gaussian with a decaying per-dimension scale (σ_j = 1/√(1+j)), so PCA has
//! a spectrum to find; encoding speed does not depend on the values. A pool of at most
//! [`POOL_ROWS`] rows is generated once and encoded repeatedly until `rows` rows are done, so a
//! 10⁸-row case needs no 10⁸-row buffer (the pool is still far larger than the caches).

use std::time::Instant;

use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;

use crate::error::Error;
use codedb::model::{PipelineSpec, TrainOptions, train};

/// Rows generated once and encoded repeatedly (at 784-D: 200 MB of f32).
pub const POOL_ROWS: usize = 65_536;

/// What to measure.
#[derive(Debug, Clone)]
pub struct EncodeBench {
    /// Pipeline in the `train --pipeline` grammar, e.g. `pca-itq:64`, `pq:16x8`.
    pub pipeline: String,
    /// Descriptor dimension.
    pub dim: usize,
    /// Rows encoded in the timed part.
    pub rows: usize,
    /// Rows the model is trained on (generated separately from the encoded ones).
    pub train_rows: usize,
    pub threads: usize,
    pub seed: u64,
}

/// One case's figures (the `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct EncodeResult {
    pub pipeline: String,
    pub dim: usize,
    pub rows: usize,
    pub train_rows: usize,
    pub threads: usize,
    pub code_bytes: usize,
    pub train_s: f64,
    pub encode_s: f64,
    pub rows_per_s: f64,
}

/// Gaussian rows with σ_j = 1/√(1+j), seeded.
pub fn generated_descriptors(rows: usize, dim: usize, seed: u64) -> Array2<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let scale: Vec<f32> = (0..dim).map(|j| 1.0 / ((1 + j) as f32).sqrt()).collect();
    let mut x = Array2::<f32>::zeros((rows, dim));
    for mut row in x.rows_mut() {
        for (v, s) in row.iter_mut().zip(&scale) {
            let g: f32 = StandardNormal.sample(&mut rng);
            *v = g * s;
        }
    }
    x
}

fn invalid(argument: &str, detail: impl Into<String>) -> Error {
    Error::InvalidArgument {
        argument: argument.into(),
        detail: detail.into(),
    }
}

/// Trains `b.pipeline` on `b.train_rows` generated rows, then encodes `b.rows` rows on a rayon
/// pool of `b.threads` threads and reports rows/s.
pub fn run_encode_bench(b: &EncodeBench) -> Result<EncodeResult, Error> {
    if b.dim == 0 {
        return Err(invalid("dim", "must be at least 1"));
    }
    if b.rows == 0 {
        return Err(invalid("rows", "must be at least 1"));
    }
    if b.train_rows == 0 {
        return Err(invalid("train-rows", "must be at least 1"));
    }
    if b.threads == 0 {
        return Err(invalid("threads", "must be at least 1"));
    }
    // Encoders resolve `Auto` without an error path; an invalid CODEDB_SCAN_ISA fails here.
    codedb::kernels::Dispatch::Auto.resolve()?;
    let spec = PipelineSpec::parse(&b.pipeline)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(b.threads)
        .build()
        .map_err(|e| invalid("threads", e.to_string()))?;
    let train_x = generated_descriptors(b.train_rows, b.dim, b.seed);
    let opts = TrainOptions {
        seed: b.seed,
        ..TrainOptions::default()
    };
    let t = Instant::now();
    let (model, _) = pool.install(|| train(&spec, train_x.view(), &opts))?;
    let train_s = t.elapsed().as_secs_f64();
    drop(train_x);
    let pool_x = generated_descriptors(b.rows.min(POOL_ROWS), b.dim, b.seed ^ 0x5eed);
    let mut done = 0usize;
    let t = Instant::now();
    pool.install(|| -> Result<(), Error> {
        while done < b.rows {
            let n = (b.rows - done).min(pool_x.nrows());
            let codes = model.encode(pool_x.slice(ndarray::s![..n, ..]))?;
            std::hint::black_box(&codes);
            done += n;
        }
        Ok(())
    })?;
    let encode_s = t.elapsed().as_secs_f64();
    Ok(EncodeResult {
        pipeline: b.pipeline.clone(),
        dim: b.dim,
        rows: b.rows,
        train_rows: b.train_rows,
        threads: b.threads,
        code_bytes: model.code_bytes(),
        train_s,
        encode_s,
        rows_per_s: b.rows as f64 / encode_s.max(1e-12),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_case_runs_and_counts_rows() {
        let b = EncodeBench {
            pipeline: "pca-itq:16".into(),
            dim: 32,
            rows: 3000,
            train_rows: 500,
            threads: 1,
            seed: 7,
        };
        let r = run_encode_bench(&b).unwrap();
        assert_eq!(r.rows, 3000);
        assert_eq!(r.code_bytes, 2);
        assert!(r.rows_per_s > 0.0 && r.encode_s > 0.0);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let mut b = EncodeBench {
            pipeline: "pca-itq:16".into(),
            dim: 32,
            rows: 0,
            train_rows: 500,
            threads: 1,
            seed: 7,
        };
        assert!(matches!(
            run_encode_bench(&b),
            Err(Error::InvalidArgument { argument, .. }) if argument == "rows"
        ));
        b.rows = 10;
        b.pipeline = "pca-itq:banana".into();
        assert!(run_encode_bench(&b).is_err());
    }

    #[test]
    fn generated_descriptors_are_seeded() {
        let a = generated_descriptors(4, 8, 1);
        assert_eq!(a, generated_descriptors(4, 8, 1));
        assert_ne!(a, generated_descriptors(4, 8, 2));
    }
}
