//! Iterative quantization (Gong et al. TPAMI 2013, §3.2, eq. 2-3): find the rotation `R` of
//! zero-centred projected data `V` (n×c, rows = points) minimising the quantisation loss
//!
//! `Q(B, R) = ‖B − V R‖²_F`, `B ∈ {−1, 1}^{n×c}`   (eq. 2)
//!
//! by alternating, from a random orthogonal `R` (the PCA-RR baseline):
//! - fix R, update B: `B = sgn(V R)` (maximises `tr(B Rᵀ Vᵀ)`, eq. 3);
//! - fix B, update R: orthogonal Procrustes. The paper takes the SVD `Bᵀ V = S Ω Ŝᵀ` and sets
//!   `R = Ŝ Sᵀ`. We compute the SVD of the transpose, `Vᵀ B = U Σ Wᵀ` (so `U = Ŝ`, `W = S`) and
//!   set `R = U Wᵀ` — the same matrix. Our rows are points exactly as the paper's, and the
//!   stored rotation is applied as `ṽ = v R`, so no transpose is hidden anywhere.
//!
//! Each step solves its sub-problem exactly, so the loss never increases; [`train_itq`]
//! returns it before the first update and after every iteration (`iterations + 1` values).
//! 50 iterations by default, as in the paper.

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::cancel::Cancel;
use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::linalg::{at_b_f32, matmul_f32, par, procrustes};
use super::rotation::Rotation;

/// Iterations used in all of the paper's experiments (§3.2).
pub const DEFAULT_ITQ_ITERATIONS: usize = 50;

/// Rows per block of the loss's f64 partial sums (fixed for reproducibility).
const LOSS_BLOCK: usize = 4096;

/// A trained ITQ rotation and its loss history.
#[derive(Debug, Clone)]
pub struct ItqTraining {
    /// The learned rotation R (Gong et al., eq. 2-3).
    pub rotation: Rotation,
    /// `‖sgn(VR) − VR‖²_F` for the initial random rotation (index 0, the PCA-RR loss) and
    /// after each iteration; non-increasing.
    pub losses: Vec<f64>,
}

/// `sgn(V R)` in place (the paper's sgn: 0 ↦ +1) and the loss `‖B − VR‖²_F` (f64).
fn sign_and_loss(vr: &mut [f32]) -> f64 {
    let partial: Vec<f64> = vr
        .par_chunks_mut(LOSS_BLOCK)
        .map(|blk| {
            let mut s = 0f64;
            for v in blk.iter_mut() {
                let b = if *v >= 0.0 { 1.0f32 } else { -1.0 };
                let e = (b - *v) as f64;
                s += e * e;
                *v = b;
            }
            s
        })
        .collect();
    partial.iter().sum()
}

/// The quantisation loss `‖sgn(V R) − V R‖²_F` of projected data `v` under `rotation`
/// (eq. 2 with B at its optimum for R).
pub fn quantization_loss(v: ArrayView2<f32>, rotation: &Rotation) -> Result<f64> {
    let rows = checked_rows("itq: data", v, Some(rotation.dim()))?;
    let c = rotation.dim();
    let mut vr = matmul_f32(rows.as_slice(), rotation.as_slice(), rows.n(), c, c, par());
    Ok(sign_and_loss(&mut vr))
}

/// Learns the ITQ rotation of the rows of `v` (zero-centred, typically PCA-projected),
/// starting from a random rotation drawn with `seed`. `on_iteration(t, loss)` is called with
/// the loss before the first update (t = 0) and after each iteration t = 1..=iterations.
pub fn train_itq(
    v: ArrayView2<f32>,
    iterations: usize,
    seed: u64,
    on_iteration: impl FnMut(usize, f64),
) -> Result<ItqTraining> {
    train_itq_with(v, iterations, seed, &Cancel::new(), on_iteration)
}

/// [`train_itq`] that checks `cancel` before each iteration.
pub(crate) fn train_itq_with(
    v: ArrayView2<f32>,
    iterations: usize,
    seed: u64,
    cancel: &Cancel,
    mut on_iteration: impl FnMut(usize, f64),
) -> Result<ItqTraining> {
    let rows = checked_rows("itq: training data", v, None)?;
    let (n, c) = (rows.n(), rows.dim());
    if n < 2 {
        return Err(ModelError::TooFewRows {
            method: "itq".into(),
            needed: 2,
            got: n,
        });
    }
    let data = rows.as_slice();
    let mut rotation = Rotation::random(c, seed)?;
    let mut losses = Vec::with_capacity(iterations + 1);
    for t in 0..=iterations {
        cancel.check()?;
        let mut b = matmul_f32(data, rotation.as_slice(), n, c, c, par());
        let loss = sign_and_loss(&mut b);
        losses.push(loss);
        on_iteration(t, loss);
        if t == iterations {
            break;
        }
        // Procrustes: R = argmax tr(Rᵀ Vᵀ B).
        let m: Vec<f64> = at_b_f32(data, &b, n, c, c, par())
            .into_iter()
            .map(f64::from)
            .collect();
        rotation = Rotation::from_f64(&procrustes(&m, c)?, c)?;
    }
    Ok(ItqTraining { rotation, losses })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::random::{gaussian, rng};
    use ndarray::Array2;

    #[test]
    fn loss_is_non_increasing_and_finds_a_hidden_hypercube() {
        // Points near the vertices of a randomly rotated hypercube: ITQ should find a rotation
        // that brings them back near the vertices (loss ≈ n·c·noise²), far below the loss of
        // its random start.
        let (n, c) = (2000, 8);
        let g = gaussian(&mut rng(4), n * c);
        let signs = gaussian(&mut rng(5), n * c);
        let q = Rotation::random(c, 6).unwrap();
        let clean = Array2::from_shape_fn((n, c), |(i, j)| {
            (if signs[i * c + j] >= 0.0 { 1.0 } else { -1.0 }) + 0.1 * g[i * c + j] as f32
        });
        let v = q.apply(clean.view()).unwrap();
        let mut seen = Vec::new();
        let itq = train_itq(v.view(), 50, 3, |t, l| seen.push((t, l))).unwrap();
        assert_eq!(itq.losses.len(), 51);
        assert_eq!(seen.len(), 51);
        for w in itq.losses.windows(2) {
            assert!(
                w[1] <= w[0] * (1.0 + 1e-6),
                "loss went up: {} -> {}",
                w[0],
                w[1]
            );
        }
        let floor = (n * c) as f64 * 0.01;
        assert!(itq.losses[50] < 2.0 * floor, "{:?}", itq.losses);
        assert!(itq.losses[0] > 5.0 * itq.losses[50], "{:?}", itq.losses);
        let final_loss = quantization_loss(v.view(), &itq.rotation).unwrap();
        assert!((final_loss - itq.losses[50]).abs() <= 1e-6 * final_loss);
    }
}
