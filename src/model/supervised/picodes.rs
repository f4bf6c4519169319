//! PiCoDes (Bergamo, Torresani, Fitzgibbon, *PiCoDes: learning a compact code for
//! novel-category recognition*, NIPS 2011, §2): C basis classifiers `h_c(x) = 1[a_cᵀx + β_c > 0]`
//! (eq. 1-2; the paper's constant entry of x is our bias β_c) learned so that one-vs-rest
//! linear SVMs on the bits classify the K training classes well (eq. 4):
//!
//! `E(A, w, b) = Σ_k ½‖w_k‖² + C Σ_i ℓ(y_ik (b_k + w_kᵀ h(x_i; A)))`, ℓ the hinge (we add
//! ½b_k², as LIBLINEAR regularises the bias like a weight).
//!
//! Block coordinate descent (§2.2), one round =
//! 1. **classifiers**: with A fixed, the K one-vs-rest SVMs on the current bits (the crate's
//!    dual coordinate descent through the shared one-vs-rest driver
//!    `classify::train_one_vs_rest`, hinge, cost C);
//! 2. **projectors**: with the SVMs fixed, each a_c in turn. Flipping bit c of row i from 0 to
//!    1 changes the loss by `d_i = Σ_k ℓ(α_ik + β_ik) − ℓ(β_ik)` (Appendix A: `α = y_ik w_kc`,
//!    `β = y_ik (b_k + Σ_{c'≠c} w_kc' h_ic')`), so the objective in a_c is the weighted
//!    misclassification of eq. 5 with `v_i = |d_i|` and target bit `1[d_i < 0]`. We minimise
//!    its convex upper bound, the v-weighted hinge of eq. 6 (the paper writes it with
//!    `z_i = sign(d_i)`; the bit the loss wants is `−z_i`), as a weighted linear SVM (weights
//!    normalised to mean 1, cost C), and keep the new a_c only if eq. 5 itself decreases —
//!    so every projector step lowers E exactly, and a round never raises it beyond the SVM
//!    solver's tolerance.
//!
//! Stops after `picodes_rounds` rounds or when a round lowers E by less than 10⁻³ of its
//! value. The objective after each classifier step is reported per round.
//!
//! **Initialisation.** The paper does not state one. We start from LSH: C Gaussian directions
//! (seeded) through the training mean (`β_c = −a_cᵀ x̄`), so each bit splits the data, the
//! code the PiCoDes paper compares against (Fig. 3).
//!
//! Stored as LINEAR (A, with bias β) + BINARIZE (thresholds 0): `h = 1[A x + β > 0]` is what
//! those stages compute, so nothing new is needed on disk and every scan kernel applies.

use ndarray::{Array2, ArrayView2};

use super::super::binarize::Binarize;
use super::super::center::column_means_f64;
use super::super::classify::{
    ClassIndex, LinearSvmOptions, SvmLoss, train_linear_svm, train_one_vs_rest,
};
use super::super::error::{ModelError, Result};
use super::super::linear::Linear;
use super::super::random::{derive_seed, gaussian, rng};
use super::super::stage::Stage;
use super::options::SupervisedOptions;
use super::triplet_sgd::class_ids;

/// Relative decrease of E below which training stops.
const STOP_RELATIVE: f64 = 1e-3;

/// How much weaker than SVMlight's default (`1 / mean ‖x‖²`) the projector SVMs' regulariser
/// is (see [`projector_cost`]).
const PROJECTOR_COST: f64 = 10.0;

/// Why PiCoDes training stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PicodesStop {
    /// `picodes_rounds` rounds ran.
    Rounds,
    /// A round lowered E by less than 10⁻³ of its value.
    Converged,
    /// No basis classifier's step lowered eq. 5 in a round: the SVMs would be retrained on
    /// the same bits, so the descent is at a fixed point.
    Stalled,
}

/// What PiCoDes training found.
#[derive(Debug, Clone, PartialEq)]
pub struct PicodesFit {
    /// A, C × d (row c = a_c).
    pub weight: Array2<f32>,
    /// β, one bias per bit.
    pub bias: Vec<f32>,
    /// E (eq. 4) after the classifier step of each round.
    pub objective: Vec<f64>,
    /// Basis classifiers replaced in each round's projector step.
    pub updated: Vec<usize>,
    /// Why training stopped.
    pub stop: PicodesStop,
}

impl PicodesFit {
    /// LINEAR (A, β) + BINARIZE (zeros): `h = 1[A x + β > 0]`.
    pub fn to_stages(&self) -> Result<Vec<Stage>> {
        Ok(vec![
            Stage::Linear(Linear::new(self.weight.clone(), Some(self.bias.clone()))?),
            Stage::Binarize(Binarize::zeros(self.bias.len())?),
        ])
    }
}

fn hinge(t: f64) -> f64 {
    (1.0 - t).max(0.0)
}

/// The inputs PiCoDes and classemes both check: the class ids of `labels` (at least two
/// classes), at least one bit, a finite positive SVM cost.
pub(super) fn check_code_fit(
    name: &str,
    labels: &[i64],
    n: usize,
    bits: usize,
    opts: &SupervisedOptions,
) -> Result<(ClassIndex, Vec<u32>)> {
    let classes = class_ids(name, labels, n)?;
    if bits == 0 {
        return Err(ModelError::invalid(name, "needs at least 1 bit"));
    }
    if !(opts.picodes_c.is_finite() && opts.picodes_c > 0.0) {
        return Err(ModelError::invalid(
            "picodes_c",
            format!(
                "the SVM cost must be finite and > 0, got {}",
                opts.picodes_c
            ),
        ));
    }
    Ok(classes)
}

/// SVM settings for `rows` training rows: cost λ/rows (eq. 4); `tol` 0.1 is LIBLINEAR's
/// default for the dual solvers (the projector SVMs, many and only a bound); the K classifier
/// SVMs, whose optimum E is, get 0.01.
pub(super) fn svm_options(
    opts: &SupervisedOptions,
    tol: f64,
    seed: u64,
    rows: usize,
) -> LinearSvmOptions {
    LinearSvmOptions {
        c: opts.picodes_c / rows.max(1) as f64,
        loss: SvmLoss::Hinge,
        bias_scale: 1.0,
        tol,
        max_iter: 1000,
        seed,
    }
}

/// Scores `s[i * k + kk] = b_k + w_kᵀ h_i` and E = Σ_k ½(‖w_k‖² + b_k²) + C Σ hinge (the
/// solver regularises the bias as a weight, LIBLINEAR's convention).
fn scores_and_objective(
    h: &[bool],
    ids: &[u32],
    w: &[f64],
    b: &[f64],
    bits: usize,
    c_cost: f64,
) -> (Vec<f64>, f64) {
    let (n, k) = (ids.len(), b.len());
    let mut s = vec![0f64; n * k];
    let mut loss = 0.0;
    for i in 0..n {
        let hi = &h[i * bits..(i + 1) * bits];
        for kk in 0..k {
            let wk = &w[kk * bits..(kk + 1) * bits];
            let v = b[kk]
                + hi.iter()
                    .zip(wk)
                    .filter(|(on, _)| **on)
                    .map(|(_, v)| v)
                    .sum::<f64>();
            s[i * k + kk] = v;
            let y = if ids[i] as usize == kk { 1.0 } else { -1.0 };
            loss += hinge(y * v);
        }
    }
    let reg = 0.5 * w.iter().chain(b).map(|v| v * v).sum::<f64>();
    (s, reg + c_cost * loss)
}

/// Learns `bits` PiCoDes basis classifiers on the rows of `x` (row-major, `dim` columns,
/// validated) with one class label per row. `on_round(round, objective, updated)` is called
/// after each round.
pub fn fit_picodes(
    x: &[f32],
    dim: usize,
    labels: &[i64],
    bits: usize,
    opts: &SupervisedOptions,
    seed: u64,
    on_round: &mut dyn FnMut(usize, f64, usize),
) -> Result<PicodesFit> {
    let name = format!("picodes:{bits}");
    let n = x.len() / dim.max(1);
    let (classes, ids) = check_code_fit(&name, labels, n, bits, opts)?;
    let k = classes.len();
    if opts.picodes_rounds == 0 {
        return Err(ModelError::invalid("picodes_rounds", "must be at least 1"));
    }
    let xv = ArrayView2::from_shape((n, dim), x).map_err(|e| ModelError::shape(&name, e))?;
    // Eq. 4's cost per row: λ/N.
    let c_cost = opts.picodes_c / n as f64;
    let proj_cost = projector_cost(x, dim);
    // Initialisation: LSH through the mean.
    let mean = column_means_f64(x, dim);
    let g = gaussian(&mut rng(seed), bits * dim);
    let mut a: Vec<Vec<f64>> = g.chunks_exact(dim).map(<[f64]>::to_vec).collect();
    let mut beta: Vec<f64> = a
        .iter()
        .map(|ac| -ac.iter().zip(&mean).map(|(w, m)| w * m).sum::<f64>())
        .collect();
    // h[i * bits + c]
    let mut h = vec![false; n * bits];
    for c in 0..bits {
        for (i, on) in scores(x, dim, &a[c], beta[c]).iter().enumerate() {
            h[i * bits + c] = *on > 0.0;
        }
    }
    let mut objective = Vec::new();
    let mut updated_per_round = Vec::new();
    let mut stop = PicodesStop::Rounds;
    let mut last: Option<f64> = None;
    let mut previous: Option<(Vec<f64>, Vec<f64>)> = None;
    for round in 0..opts.picodes_rounds {
        // 1. classifiers on the current bits.
        let (mut w, mut b) = fit_classifiers(&h, &ids, n, k, bits, opts, seed, round, &name)?;
        let (mut s, mut e) = scores_and_objective(&h, &ids, &w, &b, bits, c_cost);
        // The solver stops at a tolerance: never take classifiers worse than the last ones.
        if let (Some((pw, pb)), Some(prev)) = (&previous, last)
            && prev < e
        {
            (w, b) = (pw.clone(), pb.clone());
            (s, e) = scores_and_objective(&h, &ids, &w, &b, bits, c_cost);
        }
        objective.push(e);
        if let Some(prev) = last
            && prev - e < STOP_RELATIVE * prev.abs()
        {
            stop = PicodesStop::Converged;
            updated_per_round.push(0);
            on_round(round + 1, e, 0);
            break;
        }
        // 2. projectors, one at a time.
        let mut updated = 0;
        let mut e_now = e;
        let step = ProjectorStep {
            x,
            xv,
            dim,
            ids: &ids,
            bits,
            k,
            proj_cost,
            opts,
            name: &name,
        };
        for c in 0..bits {
            let seed_c = derive_seed(seed, (round * (k + bits) + k + c) as u64 + 1);
            let mut bit = Projector {
                a: &mut a[c],
                beta: &mut beta[c],
                c,
            };
            if let Some(gain) = step.improve(&mut bit, &mut h, &mut s, &w, seed_c)? {
                e_now += c_cost * gain;
                updated += 1;
            }
        }
        updated_per_round.push(updated);
        on_round(round + 1, e, updated);
        if updated == 0 {
            stop = PicodesStop::Stalled;
            break;
        }
        last = Some(e_now);
        previous = Some((w, b));
    }
    let weight =
        Array2::from_shape_vec((bits, dim), a.iter().flatten().map(|&v| v as f32).collect())
            .map_err(|e| ModelError::shape(&name, e))?;
    Ok(PicodesFit {
        weight,
        bias: beta.iter().map(|&v| v as f32).collect(),
        objective,
        updated: updated_per_round,
        stop,
    })
}

/// Step 1 of a round (§2.2): with the projectors fixed, the K one-vs-rest linear SVMs on the
/// current bits `h` (n × bits), seeded per round and class. Returns the weights (K × bits) and
/// biases.
#[allow(clippy::too_many_arguments)] // the round's inputs, each a different thing
fn fit_classifiers(
    h: &[bool],
    ids: &[u32],
    n: usize,
    k: usize,
    bits: usize,
    opts: &SupervisedOptions,
    seed: u64,
    round: usize,
    name: &str,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let hf: Vec<f32> = h.iter().map(|&b| f32::from(u8::from(b))).collect();
    let hv = ArrayView2::from_shape((n, bits), &hf[..]).map_err(|e| ModelError::shape(name, e))?;
    let mut w = vec![0f64; k * bits];
    let mut b = vec![0f64; k];
    let seed_k = |kk: usize| derive_seed(seed, (round * (k + bits) + kk) as u64 + 1);
    let copts = svm_options(opts, 0.01, 0, n);
    let svms = train_one_vs_rest(hv, ids, k, &copts, &seed_k)
        .map_err(|e| ModelError::from_classifier(name, e))?;
    for (kk, svm) in svms.iter().enumerate() {
        w[kk * bits..(kk + 1) * bits].copy_from_slice(&svm.weights);
        b[kk] = svm.bias;
    }
    Ok((w, b))
}

/// What step 2 of a round reads and never changes: the rows, their class ids, and the
/// projector SVMs' settings.
struct ProjectorStep<'a> {
    x: &'a [f32],
    xv: ArrayView2<'a, f32>,
    dim: usize,
    ids: &'a [u32],
    bits: usize,
    /// K, the number of classes.
    k: usize,
    proj_cost: f64,
    opts: &'a SupervisedOptions,
    name: &'a str,
}

/// Basis classifier `c`: its direction a_c and bias β_c, updated in place.
struct Projector<'a> {
    a: &'a mut Vec<f64>,
    beta: &'a mut f64,
    c: usize,
}

impl ProjectorStep<'_> {
    /// Step 2 of a round for one bit (§2.2, Appendix A): each row's loss change `d_i` when its
    /// bit flips, the v-weighted hinge of eq. 6 solved as a weighted linear SVM, a line search
    /// on eq. 5 from the current projector to the SVM's, and the move kept only if eq. 5
    /// decreases; then the bits `h` and the class scores `s` (n × K) follow. Returns eq. 5's
    /// change (negative) when the projector moved, `None` when it stayed.
    fn improve(
        &self,
        p: &mut Projector<'_>,
        h: &mut [bool],
        s: &mut [f64],
        w: &[f64],
        seed_c: u64,
    ) -> Result<Option<f64>> {
        let (x, dim, bits, k, c) = (self.x, self.dim, self.bits, self.k, p.c);
        let n = self.xv.nrows();
        let y = |i: usize, kk: usize| {
            if self.ids[i] as usize == kk {
                1.0
            } else {
                -1.0
            }
        };
        let mut d = vec![0f64; n];
        for (i, di) in d.iter_mut().enumerate() {
            let on = h[i * bits + c];
            for kk in 0..k {
                let wkc = w[kk * bits + c];
                let without = s[i * k + kk] - if on { wkc } else { 0.0 };
                let yi = y(i, kk);
                *di += hinge(yi * (without + wkc)) - hinge(yi * without);
            }
        }
        let want: Vec<bool> = d.iter().map(|&v| v < 0.0).collect();
        let has = |t: bool| (0..n).any(|i| want[i] == t && d[i] != 0.0);
        if !has(true) || !has(false) {
            return Ok(None);
        }
        // Eq. 6's weights v_i = |d_i|, mean 1 over the rows that count.
        let active = d.iter().filter(|v| **v != 0.0).count();
        let total: f64 = d.iter().map(|v| v.abs()).sum();
        let scale = active as f64 / total;
        let v: Vec<f64> = d.iter().map(|x| x.abs() * scale).collect();
        let sopts = LinearSvmOptions {
            c: self.proj_cost,
            ..svm_options(self.opts, 0.1, seed_c, n)
        };
        let svm = train_linear_svm(self.xv, &want, Some(&v), &sopts)
            .map_err(|e| ModelError::from_classifier(self.name, e))?;
        let old = scores(x, dim, p.a, *p.beta);
        let cand = scores(x, dim, &svm.weights, svm.bias);
        let Some((ta, tb)) = line_search(&old, &cand, &d) else {
            return Ok(None);
        };
        let (na, nb): (Vec<f64>, f64) = (
            p.a.iter()
                .zip(&svm.weights)
                .map(|(o, nw)| ta * o + tb * nw)
                .collect(),
            ta * *p.beta + tb * svm.bias,
        );
        let new = scores(x, dim, &na, nb);
        // Exact change of eq. 5: Σ_i d_i (h'_i − h_i).
        let gain: f64 = (0..n)
            .map(|i| match (new[i] > 0.0, h[i * bits + c]) {
                (true, false) => d[i],
                (false, true) => -d[i],
                _ => 0.0,
            })
            .sum();
        if gain < 0.0 {
            for i in 0..n {
                let (old, nw) = (h[i * bits + c], new[i] > 0.0);
                if old != nw {
                    for kk in 0..k {
                        let wkc = w[kk * bits + c];
                        s[i * k + kk] += if nw { wkc } else { -wkc };
                    }
                    h[i * bits + c] = nw;
                }
            }
            *p.a = na;
            *p.beta = nb;
            return Ok(Some(gain));
        }
        Ok(None)
    }
}

/// Per-row cost of the projector SVMs (eq. 6 has no regulariser; the solver's ½‖a‖² is kept
/// small against the data term): `PROJECTOR_COST / mean ‖[x, 1]‖²`, the scale-free choice of
/// SVMlight's default cost (1 / mean ‖x‖²) made [`PROJECTOR_COST`] times weaker.
fn projector_cost(x: &[f32], dim: usize) -> f64 {
    let n = x.len() / dim.max(1);
    let sq: f64 = x.iter().map(|v| f64::from(*v).powi(2)).sum::<f64>() / n.max(1) as f64;
    PROJECTOR_COST / (sq + 1.0)
}

/// `a·x_i + β` for every row.
fn scores(x: &[f32], dim: usize, a: &[f64], beta: f64) -> Vec<f64> {
    x.chunks_exact(dim)
        .map(|r| r.iter().zip(a).map(|(v, w)| f64::from(*v) * w).sum::<f64>() + beta)
        .collect()
}

/// The best basis classifier on the path from the current one (scores `old`) to the
/// projector SVM's (scores `cand`), by the exact eq. 5: both are scaled to unit RMS score and
/// mixed as `(1 − t) old + t cand`, t ∈ [0, 1]; row i's bit changes once, where its mixed
/// score crosses 0, so sorting those crossings gives eq. 5 on the whole path exactly.
/// Returns the coefficients `(ta, tb)` of the old and new (a, β) at the best t, or `None` when
/// no point of the path lowers eq. 5.
fn line_search(old: &[f64], cand: &[f64], d: &[f64]) -> Option<(f64, f64)> {
    let rms = |v: &[f64]| (v.iter().map(|x| x * x).sum::<f64>() / v.len().max(1) as f64).sqrt();
    let (ro, rc) = (rms(old), rms(cand));
    if !(ro > 0.0 && rc > 0.0 && ro.is_finite() && rc.is_finite()) {
        return None;
    }
    // (t_i, change of eq. 5 when row i's bit leaves its current value).
    let mut cross: Vec<(f64, f64)> = old
        .iter()
        .zip(cand)
        .zip(d)
        .filter_map(|((&u, &v), &di)| {
            let (u, v) = (u / ro, v / rc);
            let (on, on_new) = (u > 0.0, v > 0.0);
            if on == on_new || di == 0.0 {
                return None;
            }
            let t = u / (u - v);
            Some((t.clamp(0.0, 1.0), if on { -di } else { di }))
        })
        .collect();
    cross.sort_by(|p, q| p.0.total_cmp(&q.0));
    let (mut run, mut best, mut best_at) = (0.0, 0.0, None);
    let mut j = 0;
    while j < cross.len() {
        let t = cross[j].0;
        while j < cross.len() && cross[j].0 == t {
            run += cross[j].1;
            j += 1;
        }
        if run < best {
            best = run;
            let next = cross.get(j).map_or(1.0, |p| p.0);
            best_at = Some(0.5 * (t + next));
        }
    }
    best_at.map(|t| ((1.0 - t) / ro, t / rc))
}
