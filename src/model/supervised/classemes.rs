//! Classemes at C bits: the baseline PiCoDes is compared with (Bergamo, Torresani, Fitzgibbon,
//! NIPS 2011, §2 eq. 1-2 and §3 Fig. 3, after Torresani et al. ECCV 2010): one linear
//! classifier per training class, thresholded, `h_c(x) = 1[a_cᵀx + β_c > 0]`, then feature
//! selection down to C bits by multi-class recursive feature elimination with SVMs (Chapelle &
//! Keerthi 2008, the paper's ref. [5]): train the one-vs-rest SVMs of the training classes on
//! the active bits, remove the m least-used bits, repeat until C are left.
//!
//! **Candidates beyond K.** Classemes give one bit per training class, K bits; the paper has
//! K = 2,659 classes and selects 64-2,048 of them. With few training classes (K < 2C) the pool
//! is completed to 2C candidates by classifiers of **seeded random dichotomies** of the
//! training classes (each class on the positive side with probability ½, never all or none),
//! each trained on its own seeded half of the training rows — a classeme is still "a
//! classifier of training categories", here of a random union of them, and the separate halves
//! stand for Torresani et al.'s separate image sets per classifier (with K = 5 there are only
//! 15 distinct dichotomies, so repeats differ only by their rows; a half that misses one side
//! of its dichotomy is replaced by every row). Pool = the K one-vs-rest
//! classifiers, then the dichotomies; RFE then chooses among all of them on the K-class task.
//!
//! Every SVM is the crate's (hinge, cost λ/N per row as PiCoDes' classifier SVMs, λ =
//! `picodes_c` and N the SVM's rows; LIBLINEAR's
//! tolerance 0.1, bias as a feature). A bit's usage is `Σ_k w_kj²` over the K SVMs; each RFE
//! step removes the ⌈10 %⌉ least-used active bits (at most down to C; ties by pool order).
//! Stored as LINEAR (A, β) + BINARIZE, like `picodes:C`.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::super::classify::{LinearSvm, LinearSvmOptions, train_linear_svm, train_one_vs_rest};
use super::super::error::{ModelError, Result};
use super::super::random::{derive_seed, rng};
use super::super::stage::Stage;
use super::options::SupervisedOptions;
use super::picodes::{self, PicodesFit, check_code_fit};
use rand::Rng;

/// What classeme training found.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassemesFit {
    /// The kept classifiers, C × d, and their biases: `h = 1[A x + β > 0]`.
    pub weight: Array2<f32>,
    /// β, one bias per bit.
    pub bias: Vec<f32>,
    /// Candidates before selection (K one-vs-rest + dichotomies).
    pub pool: usize,
    /// Pool positions of the kept bits, in code order.
    pub kept: Vec<usize>,
    /// RFE steps run.
    pub rfe_steps: usize,
}

impl ClassemesFit {
    /// LINEAR (A, β) + BINARIZE (zeros).
    pub fn to_stages(&self) -> Result<Vec<Stage>> {
        PicodesFit {
            weight: self.weight.clone(),
            bias: self.bias.clone(),
            objective: Vec::new(),
            updated: Vec::new(),
            stop: picodes::PicodesStop::Rounds,
        }
        .to_stages()
    }
}

/// PiCoDes's SVM settings (cost λ/rows) at LIBLINEAR's default tolerance.
fn svm_options(opts: &SupervisedOptions, seed: u64, rows: usize) -> LinearSvmOptions {
    picodes::svm_options(opts, 0.1, seed, rows)
}

/// A random dichotomy of `k` classes: each on the positive side with probability ½, never
/// all or none.
fn dichotomy(k: usize, seed: u64) -> Vec<bool> {
    let mut r = rng(seed);
    loop {
        let side: Vec<bool> = (0..k).map(|_| r.random_bool(0.5)).collect();
        let pos = side.iter().filter(|&&s| s).count();
        if pos > 0 && pos < k {
            return side;
        }
    }
}

/// Learns C classeme bits on the rows of `x` (row-major, `dim` columns, validated) with one
/// class label per row. `on_step(step, active)` is called after each RFE step.
pub fn fit_classemes(
    x: &[f32],
    dim: usize,
    labels: &[i64],
    bits: usize,
    opts: &SupervisedOptions,
    seed: u64,
    on_step: &mut dyn FnMut(usize, usize),
) -> Result<ClassemesFit> {
    let name = format!("classemes:{bits}");
    let n = x.len() / dim.max(1);
    let (classes, ids) = check_code_fit(&name, labels, n, bits, opts)?;
    let k = classes.len();
    let cls = |e| ModelError::from_classifier(&name, e);
    let xv = ArrayView2::from_shape((n, dim), x).map_err(|e| ModelError::shape(&name, e))?;
    // 1. The pool: K one-vs-rest classifiers, then dichotomies up to 2C.
    let mut pool: Vec<LinearSvm> =
        train_one_vs_rest(xv, &ids, k, &svm_options(opts, 0, n), &|kk: usize| {
            derive_seed(seed, kk as u64 + 1)
        })
        .map_err(cls)?;
    let extra = (2 * bits).saturating_sub(k);
    let half = n.div_ceil(2);
    let more: Vec<LinearSvm> = (0..extra)
        .into_par_iter()
        .map(|j| {
            let s = derive_seed(seed, (k + j) as u64 + 1);
            let side = dichotomy(k, derive_seed(s, 1));
            let mut r = rng(derive_seed(s, 2));
            let mut rows: Vec<usize> = (0..n).collect();
            for t in 0..half {
                let u = t + r.random_range(0..n - t);
                rows.swap(t, u);
            }
            rows.truncate(half);
            rows.sort_unstable();
            // A half without one side (tiny classes): the dichotomy learns from every row.
            let has = |rs: &[usize], v: bool| rs.iter().any(|&i| side[ids[i] as usize] == v);
            if !(has(&rows, true) && has(&rows, false)) {
                rows = (0..n).collect();
            }
            let sub: Vec<f32> = rows
                .iter()
                .flat_map(|&i| x[i * dim..(i + 1) * dim].iter().copied())
                .collect();
            let sv = ArrayView2::from_shape((rows.len(), dim), &sub[..])
                .map_err(|e| ModelError::shape(&name, e))?;
            let positive: Vec<bool> = rows.iter().map(|&i| side[ids[i] as usize]).collect();
            train_linear_svm(
                sv,
                &positive,
                None,
                &svm_options(opts, derive_seed(s, 3), rows.len()),
            )
            .map_err(cls)
        })
        .collect::<Result<_>>()?;
    pool.extend(more);
    let m = pool.len();
    // 2. Thresholded outputs on the training rows, h[i * m + j].
    let h: Vec<f32> = x
        .par_chunks_exact(dim)
        .flat_map_iter(|r| {
            pool.iter().map(move |s| {
                let v: f64 = s.bias
                    + s.weights
                        .iter()
                        .zip(r)
                        .map(|(w, &v)| w * f64::from(v))
                        .sum::<f64>();
                if v > 0.0 { 1.0 } else { 0.0 }
            })
        })
        .collect();
    // 3. Multi-class RFE down to C.
    let mut active: Vec<usize> = (0..m).collect();
    let mut steps = 0;
    while active.len() > bits {
        let a = active.len();
        let sub: Vec<f32> = h
            .chunks_exact(m)
            .flat_map(|r| active.iter().map(move |&j| r[j]))
            .collect();
        let sv =
            ArrayView2::from_shape((n, a), &sub[..]).map_err(|e| ModelError::shape(&name, e))?;
        let svms = train_one_vs_rest(sv, &ids, k, &svm_options(opts, 0, n), &|kk: usize| {
            derive_seed(seed, ((steps + 1) * (k + 2 * bits) + kk) as u64 + 1)
        })
        .map_err(cls)?;
        let usage: Vec<f64> = (0..a)
            .map(|t| svms.iter().map(|s| s.weights[t] * s.weights[t]).sum())
            .collect();
        let drop = a.div_ceil(10).clamp(1, a - bits);
        let mut order: Vec<usize> = (0..a).collect();
        order.sort_by(|&p, &q| usage[p].total_cmp(&usage[q]).then(p.cmp(&q)));
        let mut gone = vec![false; a];
        for &t in &order[..drop] {
            gone[t] = true;
        }
        active = active
            .iter()
            .zip(&gone)
            .filter(|(_, g)| !**g)
            .map(|(&j, _)| j)
            .collect();
        steps += 1;
        on_step(steps, active.len());
    }
    let weight = Array2::from_shape_vec(
        (bits, dim),
        active
            .iter()
            .flat_map(|&j| pool[j].weights.iter().map(|&v| v as f32))
            .collect(),
    )
    .map_err(|e| ModelError::shape(&name, e))?;
    Ok(ClassemesFit {
        weight,
        bias: active.iter().map(|&j| pool[j].bias as f32).collect(),
        pool: m,
        kept: active,
        rfe_steps: steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Four classes in 8-D, means on the axes.
    fn data() -> (Vec<f32>, Vec<i64>) {
        let (n, d) = (200, 8);
        let mut x = vec![0f32; n * d];
        let y: Vec<i64> = (0..n).map(|i| (i % 4) as i64).collect();
        for i in 0..n {
            for j in 0..d {
                let noise = ((i * 131 + j * 71) % 97) as f32 / 97.0 - 0.5;
                x[i * d + j] = noise + if j == i % 4 { 1.5 } else { 0.0 };
            }
        }
        (x, y)
    }

    #[test]
    fn pool_of_2c_is_selected_down_to_c() {
        let (x, y) = data();
        let opts = SupervisedOptions::default();
        let mut seen = Vec::new();
        let f = fit_classemes(&x, 8, &y, 16, &opts, 3, &mut |s, a| seen.push((s, a))).unwrap();
        assert_eq!(f.pool, 32);
        assert_eq!(f.weight.dim(), (16, 8));
        assert_eq!(f.kept.len(), 16);
        assert!(f.kept.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(seen.last(), Some(&(f.rfe_steps, 16)));
        assert!(seen.windows(2).all(|w| w[1].1 < w[0].1), "{seen:?}");
        // Deterministic per seed.
        assert_eq!(
            f,
            fit_classemes(&x, 8, &y, 16, &opts, 3, &mut |_, _| {}).unwrap()
        );
        // K ≥ 2C: the pool is the one-vs-rest classifiers alone (the paper's setting).
        let f = fit_classemes(&x, 8, &y, 2, &opts, 3, &mut |_, _| {}).unwrap();
        assert_eq!((f.pool, f.kept.len()), (4, 2));
    }

    #[test]
    fn the_one_vs_rest_bits_are_the_class_svms() {
        let (x, y) = data();
        let opts = SupervisedOptions::default();
        // 4 classes, C = 2: no dichotomies, the kept bits are 2 of the 4 class SVMs.
        let f = fit_classemes(&x, 8, &y, 2, &opts, 3, &mut |_, _| {}).unwrap();
        let xv = ArrayView2::from_shape((200, 8), &x[..]).unwrap();
        let ids: Vec<u32> = y.iter().map(|&v| v as u32).collect();
        let svms = train_one_vs_rest(xv, &ids, 4, &svm_options(&opts, 0, 200), &|kk: usize| {
            derive_seed(3, kk as u64 + 1)
        })
        .unwrap();
        for (row, &j) in f.kept.iter().enumerate() {
            let want: Vec<f32> = svms[j].weights.iter().map(|&v| v as f32).collect();
            assert_eq!(f.weight.row(row).to_vec(), want);
        }
    }
}
