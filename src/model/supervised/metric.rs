//! Low-rank metric learning (Gordo et al. CVPR 2012, §3, after Bai et al.'s supervised
//! semantic indexing): the similarity `s(q, d) = qᵀ Uᵀ U d = (Uq)ᵀ(Ud)` (eq. 1-2) with
//! U ∈ R^{R×D}, learned by SGD on the triplet hinge loss `max{0, 1 − s(q, d⁺) + s(q, d⁻)}`
//! (eq. 3): for a violated triplet, `U ← U + η U (q Δᵀ + Δ qᵀ)` with `Δ = d⁺ − d⁻` (eq. 4).
//! Triplets come from category labels: d⁺ a uniform other row of q's class, d⁻ a row of a
//! uniform other class. U starts from a seeded zero-mean Normal, no explicit regulariser, η and
//! the number of epochs validated (`triplet_sgd.rs`: on held-out instance groups when given,
//! §7.4). The projection is `U (x − m)`: centred,
//! so ITQ or PQ can follow.

use rand_chacha::ChaCha8Rng;

use super::super::error::Result;
use super::options::SupervisedOptions;
use super::triplet_sgd::{
    EpochInfo, Labelled, SgdFit, TripletLearner, check_rank, fit, negative, normal_start, positive,
};

#[derive(Clone)]
struct Metric {
    u: Vec<f32>,
    r: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    delta: Vec<f32>,
}

impl TripletLearner for Metric {
    fn u(&self) -> &[f32] {
        &self.u
    }

    fn step(&mut self, data: &Labelled, q: usize, rng: &mut ChaCha8Rng, eta: f32) -> f64 {
        let (p, n) = (positive(data, q, rng), negative(data, q, rng));
        let xq = data.row(q);
        for ((dl, a), b) in self.delta.iter_mut().zip(data.row(p)).zip(data.row(n)) {
            *dl = a - b;
        }
        let d = data.dim;
        // a = U q, b = U Δ: s(q, d⁺) − s(q, d⁻) = aᵀ b.
        for (k, row) in self.u.chunks_exact(d).enumerate() {
            self.a[k] = dot(row, xq);
            self.b[k] = dot(row, &self.delta);
        }
        let margin: f64 = (0..self.r)
            .map(|k| self.a[k] as f64 * self.b[k] as f64)
            .sum();
        let loss = 1.0 - margin;
        if loss > 0.0 {
            // Eq. 4: U ← U + η (U q) Δᵀ + η (U Δ) qᵀ.
            for (k, row) in self.u.chunks_exact_mut(d).enumerate() {
                let (ea, eb) = (eta * self.a[k], eta * self.b[k]);
                for ((w, dl), x) in row.iter_mut().zip(&self.delta).zip(xq) {
                    *w += ea * dl + eb * x;
                }
            }
            loss
        } else {
            0.0
        }
    }
}

pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Learns a rank-`r` metric from the rows of `x` (row-major, `dim` columns, validated) and one
/// label per row; η and the epoch validated on held-out instance `groups` (one id per row,
/// negative = none) when given, else on held-out class precision (`triplet_sgd.rs`);
/// `on_epoch(η, epoch, loss, validation score)` after each epoch.
#[allow(clippy::too_many_arguments)]
pub fn fit_metric(
    x: &[f32],
    dim: usize,
    labels: &[i64],
    groups: Option<&[i64]>,
    r: usize,
    opts: &SupervisedOptions,
    seed: u64,
    mut on_epoch: impl FnMut(f64, usize, f64, f64),
) -> Result<SgdFit> {
    check_rank("metric", r, dim)?;
    // Two training rows per class: a query and its positive.
    let data = Labelled::new("metric", x, dim, labels, groups, opts, 2, seed)?;
    let u0 = normal_start(r, dim, seed);
    fit(
        "metric",
        &data,
        r,
        opts,
        seed,
        || Metric {
            u: u0.clone(),
            r,
            a: vec![0.0; r],
            b: vec![0.0; r],
            delta: vec![0.0; dim],
        },
        |e: &EpochInfo| on_epoch(e.eta, e.epoch, e.loss, e.precision),
    )
}
