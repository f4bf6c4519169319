//! Optimized product quantisation, non-parametric version (Ge, He, Ke & Sun, "Optimized
//! Product Quantization", TPAMI 2014, §3.1), with FAISS's `OPQMatrix` schedule: learn an
//! orthogonal `R` so that PQ of `x R` loses less, alternating
//!
//! 1. train PQ on the rotated, centred sample `X R` (40 k-means iterations the first time,
//!    then 4 iterations hot-started from the previous codebooks; ≤ 1,000 points/centroid);
//! 2. encode and reconstruct `Y ≈ X R`;
//! 3. Procrustes: `R = argmin ‖X R − Y‖_F` over orthogonal R, i.e. with `Xᵀ Y = U Σ Wᵀ`,
//!    `R = U Wᵀ`;
//!
//! for 50 outer iterations on at most 65,536 training rows (`OPQMatrix::niter`,
//! `niter_pq_0`, `niter_pq`, `max_train_points`), from a random rotation as FAISS does.
//!
//! The rotation is learnt on centred data (as `OPQMatrix::train`); the stored pipeline is
//! `ROTATION → PQ` on the raw vectors, so inner products are preserved (`⟨xR, yR⟩ = ⟨x, y⟩`).
//! The final PQ starts from the last codebooks shifted by `μR` (which makes them exactly as good
//! on the uncentred rotated data) and runs the usual k-means iterations with the final `R`.

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::cancel::Cancel;
use super::center::column_means_f64;
use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::kmeans::{
    DEFAULT_KMEANS_ITERATIONS, DEFAULT_MAX_POINTS_PER_CENTROID, KMeansInit, KMeansOptions,
    assign_nearest,
};
use super::linalg::{at_b_f32, matmul_f32, par, procrustes};
use super::pq::ProductQuantizer;
use super::random::{derive_seed, gather_rows, rng, sample_indices};
use super::rotation::Rotation;

/// OPQ parameters; the defaults are FAISS's `OPQMatrix` defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct OpqOptions {
    /// Outer (rotation) iterations: `OPQMatrix::niter` = 50.
    pub iterations: usize,
    /// k-means iterations of the first PQ training: `niter_pq_0` = 40.
    pub pq_iterations_first: usize,
    /// k-means iterations of later (hot-started) PQ trainings: `niter_pq` = 4.
    pub pq_iterations: usize,
    /// Training rows cap: `max_train_points` = 256 × 256.
    pub max_train_points: usize,
    /// Points per centroid inside the loop (`OPQMatrix` sets 1,000).
    pub max_points_per_centroid: usize,
    /// k-means iterations of the final PQ (FAISS's PQ default, 25).
    pub final_kmeans_iterations: usize,
    /// k-means initialisation of every PQ training.
    pub init: KMeansInit,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for OpqOptions {
    fn default() -> Self {
        OpqOptions {
            iterations: 50,
            pq_iterations_first: 40,
            pq_iterations: 4,
            max_train_points: 256 * 256,
            max_points_per_centroid: 1000,
            final_kmeans_iterations: DEFAULT_KMEANS_ITERATIONS,
            init: KMeansInit::Random,
            seed: 1234,
        }
    }
}

/// A trained OPQ: the rotation and the PQ of the rotated vectors.
#[derive(Debug, Clone)]
pub struct OpqTraining {
    /// The learned rotation, applied before PQ.
    pub rotation: Rotation,
    /// The PQ of the rotated vectors.
    pub pq: ProductQuantizer,
    /// Mean squared reconstruction error per training vector at each outer iteration (before
    /// that iteration's rotation update).
    pub losses: Vec<f64>,
    /// Mean squared error of the final model on the training sample.
    pub final_mse: f64,
}

/// Nearest-centroid reconstruction of row-major `x` (n × d) by `pq` (training path, faer
/// products) and the mean squared error per row.
pub(crate) fn reconstruct(pq: &ProductQuantizer, x: &[f32], d: usize) -> (Vec<f32>, f64) {
    let n = x.len() / d;
    let (m, ks, ds) = (pq.m(), pq.ksub(), pq.dsub());
    let cents = pq.centroids();
    let mut recon = vec![0f32; n * d];
    let mut sub = vec![0f32; n * ds];
    for s in 0..m {
        for (o, r) in sub.chunks_exact_mut(ds).zip(x.chunks_exact(d)) {
            o.copy_from_slice(&r[s * ds..(s + 1) * ds]);
        }
        let cs: Vec<f32> = cents
            .index_axis(ndarray::Axis(0), s)
            .iter()
            .copied()
            .collect();
        let (idx, _) = assign_nearest(&sub, ds, &cs, ks);
        recon
            .par_chunks_mut(d)
            .zip(idx.par_iter())
            .for_each(|(o, &k)| {
                let k = k as usize;
                o[s * ds..(s + 1) * ds].copy_from_slice(&cs[k * ds..(k + 1) * ds]);
            });
    }
    let err: f64 = recon
        .par_chunks(d)
        .zip(x.par_chunks(d))
        .map(|(a, b)| {
            a.iter()
                .zip(b)
                .map(|(u, v)| ((u - v) as f64).powi(2))
                .sum::<f64>()
        })
        .collect::<Vec<f64>>()
        .iter()
        .sum();
    (recon, err / n.max(1) as f64)
}

/// Trains OPQ with M sub-quantisers of `nbits` bits on the rows of `x`.
pub fn train_opq(
    x: ArrayView2<f32>,
    m: usize,
    nbits: u32,
    opts: &OpqOptions,
) -> Result<OpqTraining> {
    let rows = checked_rows("opq: training data", x, None)?;
    train_opq_rows(
        rows.as_slice(),
        rows.dim(),
        m,
        nbits,
        opts,
        &Cancel::new(),
        |_, _| {},
    )
}

/// OPQ on validated row-major data; `on_iteration(t, mse)` after each outer iteration.
/// `cancel` is checked between the steps of an iteration (rotation, PQ, Procrustes) and inside
/// each k-means.
#[allow(clippy::too_many_arguments)] // the data, its shape, the method's three settings, hooks
pub(crate) fn train_opq_rows(
    x: &[f32],
    d: usize,
    m: usize,
    nbits: u32,
    opts: &OpqOptions,
    cancel: &Cancel,
    mut on_iteration: impl FnMut(usize, f64),
) -> Result<OpqTraining> {
    if m == 0 || !d.is_multiple_of(m) {
        return Err(ModelError::unsupported(
            "opq",
            format!("{m} sub-quantisers cannot split {d} dimensions (M must divide the dimension)"),
        ));
    }
    let n_all = x.len() / d;
    let sampled;
    let x: &[f32] = if opts.max_train_points > 0 && n_all > opts.max_train_points {
        let idx = sample_indices(
            &mut rng(derive_seed(opts.seed, 0x4f50)),
            n_all,
            opts.max_train_points,
        );
        sampled = gather_rows(x, d, &idx);
        &sampled
    } else {
        x
    };
    let n = x.len() / d;
    let mean = column_means_f64(x, d);
    let mut xc = vec![0f32; n * d];
    xc.par_chunks_mut(d)
        .zip(x.par_chunks(d))
        .for_each(|(o, r)| {
            for ((o, &v), &mu) in o.iter_mut().zip(r).zip(&mean) {
                *o = (v as f64 - mu) as f32;
            }
        });
    let mut rotation = Rotation::random(d, derive_seed(opts.seed, 1))?;
    let mut pq: Option<ProductQuantizer> = None;
    let mut losses = Vec::with_capacity(opts.iterations);
    for it in 0..opts.iterations {
        cancel.check()?;
        let xproj = matmul_f32(&xc, rotation.as_slice(), n, d, d, par());
        let kopts = KMeansOptions {
            iterations: if it == 0 {
                opts.pq_iterations_first
            } else {
                opts.pq_iterations
            },
            seed: derive_seed(opts.seed, 100 + it as u64),
            init: opts.init,
            max_points_per_centroid: opts.max_points_per_centroid,
        };
        let trained = ProductQuantizer::train_rows(
            &xproj,
            d,
            m,
            nbits,
            &kopts,
            pq.as_ref(),
            cancel,
            &mut |_| {},
        )?
        .pq;
        cancel.check()?;
        let (recon, mse) = reconstruct(&trained, &xproj, d);
        losses.push(mse);
        on_iteration(it, mse);
        cancel.check()?;
        let cross: Vec<f64> = at_b_f32(&xc, &recon, n, d, d, par())
            .into_iter()
            .map(f64::from)
            .collect();
        rotation = Rotation::from_f64(&procrustes(&cross, d)?, d)?;
        pq = Some(trained);
    }
    // Final PQ on the raw rotated vectors: shift the codebooks by μR, then hot-start k-means.
    let xr = matmul_f32(x, rotation.as_slice(), n, d, d, par());
    let mu: Vec<f32> = mean.iter().map(|&v| v as f32).collect();
    let shift = matmul_f32(&mu, rotation.as_slice(), 1, d, d, par());
    let kopts = KMeansOptions {
        iterations: opts.final_kmeans_iterations,
        seed: derive_seed(opts.seed, 2),
        init: opts.init,
        max_points_per_centroid: DEFAULT_MAX_POINTS_PER_CENTROID,
    };
    let hot = match pq {
        Some(p) => {
            let mut c = p.centroids().to_owned();
            let ds = p.dsub();
            for ((s, _, j), v) in c.indexed_iter_mut() {
                *v += shift[s * ds + j];
            }
            Some(ProductQuantizer::new(c)?)
        }
        None => None,
    };
    cancel.check()?;
    let final_pq =
        ProductQuantizer::train_rows(&xr, d, m, nbits, &kopts, hot.as_ref(), cancel, &mut |_| {})?
            .pq;
    let (_, final_mse) = reconstruct(&final_pq, &xr, d);
    Ok(OpqTraining {
        rotation,
        pq: final_pq,
        losses,
        final_mse,
    })
}
