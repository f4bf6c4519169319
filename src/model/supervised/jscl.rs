//! Joint subspace and classifier learning, JSCL (Gordo et al. CVPR 2012, §6): the score of
//! class y on image q is `s(q, y) = (Uq)ᵀ w_y` (eq. 9), U ∈ R^{R×D} shared by all classes and
//! one classifier w_y ∈ R^R per class, learned by SGD on the label-ranking hinge loss
//! `max{0, 1 − s(q, y⁺) + s(q, y⁻)}` (eq. 10) over triplets (q, y⁺ = q's class, y⁻ a uniform
//! other class): for a violated triplet `U ← U + η (w_{y⁺} − w_{y⁻}) qᵀ` (eq. 11),
//! `w_{y⁺} ← w_{y⁺} + η Uq` (eq. 12), `w_{y⁻} ← w_{y⁻} − η Uq` (eq. 13), all with the values
//! before the step. U starts from a seeded zero-mean Normal, the classifiers from zero (the
//! first updates move them along Uq); η and the number of epochs are validated
//! (`triplet_sgd.rs`) on retrieval, the use the projection is for: the instance mAP of
//! held-out groups when the user has them (§7.4), else class precision.
//!
//! As in the paper, the classifiers are discarded after learning and only U is kept (stored
//! as CENTER + LINEAR): `classify` works from class means, which an index keeps anyway.
//! The paper assumes R ≤ K; larger R is allowed (U's updates span at most the K classifier
//! directions, the rest keeps its random start).

use rand_chacha::ChaCha8Rng;

use super::super::error::Result;
use super::metric::dot;
use super::options::SupervisedOptions;
use super::triplet_sgd::{
    EpochInfo, Labelled, SgdFit, TripletLearner, check_rank, fit, normal_start, other_class,
};

#[derive(Clone)]
struct Jscl {
    u: Vec<f32>,
    /// K × R classifiers.
    w: Vec<f32>,
    r: usize,
    uq: Vec<f32>,
    dw: Vec<f32>,
}

impl TripletLearner for Jscl {
    fn u(&self) -> &[f32] {
        &self.u
    }

    fn step(&mut self, data: &Labelled, q: usize, rng: &mut ChaCha8Rng, eta: f32) -> f64 {
        let r = self.r;
        let yp = data.ids[q];
        let yn = other_class(data.classes, yp, rng);
        let (yp, yn) = (yp as usize, yn as usize);
        let xq = data.row(q);
        for (k, row) in self.u.chunks_exact(data.dim).enumerate() {
            self.uq[k] = dot(row, xq);
        }
        let mut margin = 0f64;
        for k in 0..r {
            self.dw[k] = self.w[yp * r + k] - self.w[yn * r + k];
            margin += self.uq[k] as f64 * self.dw[k] as f64;
        }
        let loss = 1.0 - margin;
        if loss <= 0.0 {
            return 0.0;
        }
        // Eq. 11.
        for (k, row) in self.u.chunks_exact_mut(data.dim).enumerate() {
            let e = eta * self.dw[k];
            for (a, x) in row.iter_mut().zip(xq) {
                *a += e * x;
            }
        }
        // Eq. 12-13.
        for k in 0..r {
            self.w[yp * r + k] += eta * self.uq[k];
            self.w[yn * r + k] -= eta * self.uq[k];
        }
        loss
    }
}

/// Learns a rank-`r` JSCL projection from the rows of `x` (row-major, `dim` columns,
/// validated) and one label per row; η and the epoch validated on held-out instance `groups`
/// (one id per row, negative = none) when given, else on held-out class precision
/// (`triplet_sgd.rs`); `on_epoch(η, epoch, loss, validation score)`.
#[allow(clippy::too_many_arguments)]
pub fn fit_jscl(
    x: &[f32],
    dim: usize,
    labels: &[i64],
    groups: Option<&[i64]>,
    r: usize,
    opts: &SupervisedOptions,
    seed: u64,
    mut on_epoch: impl FnMut(f64, usize, f64, f64),
) -> Result<SgdFit> {
    check_rank("jscl", r, dim)?;
    let data = Labelled::new("jscl", x, dim, labels, groups, opts, 1, seed)?;
    let u0 = normal_start(r, dim, seed);
    let k = data.classes;
    fit(
        "jscl",
        &data,
        r,
        opts,
        seed,
        || Jscl {
            u: u0.clone(),
            w: vec![0.0; k * r],
            r,
            uq: vec![0.0; r],
            dw: vec![0.0; r],
        },
        |e: &EpochInfo| on_epoch(e.eta, e.epoch, e.loss, e.precision),
    )
}
