//! One-vs-rest linear SVMs: one binary SVM per class (`linear_svm.rs`, LIBLINEAR's dual
//! coordinate descent), class k against every other row — LIBLINEAR's and scikit-learn
//! `LinearSVC`'s multi-class scheme. [`train_one_vs_rest`] is the driver every one-vs-rest
//! trainer of the crate shares (PiCoDes eq. 4, classemes, attributes); [`SvmOvr`] is the
//! classifier (`svm` in the classifier SPEC), the "one-versus-all SVMs" of PiCoDes' Fig. 3.
//! Score of class k: `w_kᵀz + b_k`, the largest wins.

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::super::error::{ClassifyError, ClassifyResult as Result, ModelError};
use super::super::input::checked_rows;
use super::super::random::derive_seed;
use super::labels::{ClassIndex, top_k_ids, top_k_labels};
use super::linear_svm::{LinearSvm, LinearSvmOptions, SvmLoss, train_linear_svm};
use super::ncm::{chain_in_dim, check_chain, project_chain};
use super::projection::Projection;
use super::sgd::{stratified_split, top1_top5};

/// Grid of costs C tried when the `svm` classifier validates C (PiCoDes §3 selects its
/// SVMs' parameters by cross-validation; we use one held-out split).
pub const SVM_C_GRID: [f64; 4] = [0.01, 0.1, 1.0, 10.0];

/// Trains `k` SVMs on the rows of `x` (n × d, finite): SVM `kk` separates the rows with
/// `ids[i] == kk` from the others, with `opts` and seed `seed_of(kk)`. Independent problems,
/// trained in parallel; each is deterministic, so the result does not depend on threads.
pub fn train_one_vs_rest(
    x: ArrayView2<f32>,
    ids: &[u32],
    k: usize,
    opts: &LinearSvmOptions,
    seed_of: &(dyn Fn(usize) -> u64 + Sync),
) -> Result<Vec<LinearSvm>> {
    if ids.len() != x.nrows() {
        return Err(ClassifyError::LengthMismatch {
            what: "svm one-vs-rest: class ids".into(),
            expected: x.nrows(),
            got: ids.len(),
        });
    }
    if let Some(&bad) = ids.iter().find(|&&id| id as usize >= k) {
        return Err(ClassifyError::invalid(
            "svm one-vs-rest: class ids",
            format!("id {bad} is not below the class count {k}"),
        ));
    }
    (0..k)
        .into_par_iter()
        .map(|kk| {
            let positive: Vec<bool> = ids.iter().map(|&id| id as usize == kk).collect();
            let o = LinearSvmOptions {
                seed: seed_of(kk),
                ..opts.clone()
            };
            train_linear_svm(x, &positive, None, &o)
        })
        .collect()
}

/// A fitted one-vs-rest linear SVM classifier.
#[derive(Debug, Clone, PartialEq)]
pub struct SvmOvr {
    chain: Vec<Projection>,
    in_dim: usize,
    dim: usize,
    labels: Vec<i64>,
    /// K × d, row k = w_k.
    weight: Vec<f64>,
    bias: Vec<f64>,
    /// The cost C the SVMs were trained with (chosen on the validation split unless given).
    pub c: f64,
}

/// The SVM settings of [`fit_svm_ovr`] for cost `c`: hinge loss (PiCoDes' SVMs), bias as a
/// feature of value 1, LIBLINEAR's default tolerance 0.1 for the dual solvers.
pub fn svm_ovr_options(c: f64, seed: u64) -> LinearSvmOptions {
    LinearSvmOptions {
        c,
        loss: SvmLoss::Hinge,
        bias_scale: 1.0,
        tol: 0.1,
        max_iter: 1000,
        seed,
    }
}

/// Fits K one-vs-rest SVMs on `chain(x)` with `opts`; when `c_grid` is not empty, C is the
/// grid value with the lowest top-1 (then top-5) error on a stratified held-out split
/// (`validation_fraction` of each class), and the SVMs are refitted on every row. Classes too
/// small to give a held-out row leave the split empty: then C is `opts.c` ([`SvmOvr::c`] says
/// which C was used).
pub fn fit_svm_ovr(
    x: ArrayView2<f32>,
    labels: &[i64],
    chain: Vec<Projection>,
    opts: &LinearSvmOptions,
    c_grid: &[f64],
    validation_fraction: f64,
) -> Result<SvmOvr> {
    check_chain(&chain)?;
    let rows = checked_rows("svm: training data", x, chain_in_dim(&chain))?;
    let (n, in_dim) = (rows.n(), rows.dim());
    let (idx, ids) = ClassIndex::from_labels("svm: labels", labels, n)?;
    let k = idx.len();
    if k < 2 {
        return Err(ClassifyError::TooFewClasses {
            what: "svm: labels".into(),
            needed: 2,
            got: k,
        });
    }
    let z = project_chain(&chain, rows.as_slice());
    let d = z.len() / n;
    let seed = opts.seed;
    let seed_of = move |kk: usize| derive_seed(seed, kk as u64 + 1);
    let mut c = opts.c;
    if !c_grid.is_empty() {
        if !(validation_fraction > 0.0 && validation_fraction < 1.0) {
            return Err(ClassifyError::invalid(
                "svm: validation_fraction",
                format!("must be in (0, 1) to choose C, got {validation_fraction}"),
            ));
        }
        let (train, val) =
            stratified_split("svm", &ids, &idx, validation_fraction, 20_000, 1, seed)?;
        if val.is_empty() {
            return fit_with_c(chain, in_dim, &z, d, idx, &ids, opts, &seed_of);
        }
        let gather = |r: &[usize]| -> Vec<f32> {
            r.iter()
                .flat_map(|&i| z[i * d..(i + 1) * d].iter().copied())
                .collect()
        };
        let (zt, zv) = (gather(&train), gather(&val));
        let zt = ArrayView2::from_shape((train.len(), d), &zt[..])
            .map_err(|e| ModelError::shape("svm: training split", e))?;
        let tids: Vec<u32> = train.iter().map(|&i| ids[i]).collect();
        let truth: Vec<u32> = val.iter().map(|&i| ids[i]).collect();
        let mut best: Option<((f64, f64), f64)> = None;
        for &g in c_grid {
            let svms = train_one_vs_rest(
                zt,
                &tids,
                k,
                &LinearSvmOptions {
                    c: g,
                    ..opts.clone()
                },
                &seed_of,
            )?;
            let (w, b) = stack(&svms, d);
            let ranked: Vec<Vec<usize>> = score_rows(&zv, d, &w, &b)
                .chunks_exact(k)
                .map(|r| top_k_ids(r, 5))
                .collect();
            let (e1, e5) = top1_top5(&ranked, &truth);
            if best.is_none_or(|((b1, b5), _)| e1 < b1 || (e1 == b1 && e5 < b5)) {
                best = Some(((e1, e5), g));
            }
        }
        c = best.map_or(opts.c, |b| b.1);
    }
    let o = LinearSvmOptions { c, ..opts.clone() };
    fit_with_c(chain, in_dim, &z, d, idx, &ids, &o, &seed_of)
}

/// The SVMs of every class on all rows `z` (n × d) with `opts.c`.
#[allow(clippy::too_many_arguments)]
fn fit_with_c(
    chain: Vec<Projection>,
    in_dim: usize,
    z: &[f32],
    d: usize,
    idx: ClassIndex,
    ids: &[u32],
    opts: &LinearSvmOptions,
    seed_of: &(dyn Fn(usize) -> u64 + Sync),
) -> Result<SvmOvr> {
    let zv = ArrayView2::from_shape((ids.len(), d), z)
        .map_err(|e| ModelError::shape("svm: projected rows", e))?;
    let svms = train_one_vs_rest(zv, ids, idx.len(), opts, seed_of)?;
    let (weight, bias) = stack(&svms, d);
    Ok(SvmOvr {
        chain,
        in_dim,
        dim: d,
        labels: idx.labels().to_vec(),
        weight,
        bias,
        c: opts.c,
    })
}

/// (W, K × d row-major; b) of trained SVMs.
fn stack(svms: &[LinearSvm], d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut w = Vec::with_capacity(svms.len() * d);
    for s in svms {
        w.extend_from_slice(&s.weights);
    }
    (w, svms.iter().map(|s| s.bias).collect())
}

fn score_rows(z: &[f32], d: usize, w: &[f64], bias: &[f64]) -> Vec<f64> {
    let k = bias.len();
    let mut out = vec![0f64; (z.len() / d.max(1)) * k];
    out.par_chunks_mut(k)
        .zip(z.par_chunks(d.max(1)))
        .for_each(|(o, zr)| {
            for ((s, wr), b) in o.iter_mut().zip(w.chunks_exact(d.max(1))).zip(bias) {
                *s = b + wr
                    .iter()
                    .zip(zr)
                    .map(|(a, &v)| a * f64::from(v))
                    .sum::<f64>();
            }
        });
    out
}

impl SvmOvr {
    /// Puts `p` in front of the projection chain (a `pca:C` prefix fitted separately).
    pub(crate) fn prepend(&mut self, p: Projection) {
        self.in_dim = p.in_dim();
        self.chain.insert(0, p);
    }

    /// Dimension of the input rows.
    pub fn input_dim(&self) -> usize {
        self.in_dim
    }

    /// Class labels, in score-column order.
    pub fn classes(&self) -> &[i64] {
        &self.labels
    }

    /// The SVMs on the projected rows: (W, K × d row-major, row k = w_k; b).
    pub fn weights(&self) -> (&[f64], &[f64]) {
        (&self.weight, &self.bias)
    }

    /// Scores `w_kᵀz + b_k`, one column per class.
    pub fn scores(&self, x: ArrayView2<f32>) -> Result<Vec<f64>> {
        let rows = checked_rows("svm: input", x, Some(self.in_dim))?;
        let z = project_chain(&self.chain, rows.as_slice());
        Ok(score_rows(&z, self.dim, &self.weight, &self.bias))
    }

    /// The `k` best labels of each row, best first.
    pub fn top_k(&self, x: ArrayView2<f32>, k: usize) -> Result<Vec<Vec<i64>>> {
        top_k_labels(&self.scores(x)?, &self.labels, k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// Three blobs in 2-D, one per class.
    fn blobs() -> (Array2<f32>, Vec<i64>) {
        let centres = [(4.0, 0.0), (-4.0, 0.0), (0.0, 4.0)];
        let x = Array2::from_shape_fn((90, 2), |(i, j)| {
            let (cx, cy) = centres[i % 3];
            let jitter = ((i * 37 + j * 11) % 17) as f32 / 17.0 - 0.5;
            if j == 0 { cx + jitter } else { cy + jitter }
        });
        let y = (0..90).map(|i| [10, 20, 30][i % 3]).collect();
        (x, y)
    }

    #[test]
    fn one_vs_rest_is_k_binary_svms() {
        let (x, y) = blobs();
        let ids: Vec<u32> = y.iter().map(|&v| (v / 10 - 1) as u32).collect();
        let opts = svm_ovr_options(1.0, 3);
        let svms = train_one_vs_rest(x.view(), &ids, 3, &opts, &|kk: usize| kk as u64).unwrap();
        for (kk, s) in svms.iter().enumerate() {
            let pos: Vec<bool> = ids.iter().map(|&i| i as usize == kk).collect();
            let alone = train_linear_svm(
                x.view(),
                &pos,
                None,
                &LinearSvmOptions {
                    seed: kk as u64,
                    ..opts.clone()
                },
            )
            .unwrap();
            assert_eq!(*s, alone);
        }
        let e = train_one_vs_rest(x.view(), &ids, 2, &opts, &|_: usize| 0).unwrap_err();
        assert!(e.to_string().contains("class ids"), "{e}");
    }

    #[test]
    fn classifies_blobs_and_validates_c() {
        let (x, y) = blobs();
        let m = fit_svm_ovr(
            x.view(),
            &y,
            Vec::new(),
            &svm_ovr_options(1.0, 1),
            &SVM_C_GRID,
            0.3,
        )
        .unwrap();
        assert!(SVM_C_GRID.contains(&m.c));
        let top = m.top_k(x.view(), 1).unwrap();
        assert!(top.iter().zip(&y).all(|(t, &l)| t[0] == l));
        assert_eq!(m.classes(), &[10, 20, 30]);
        let e = fit_svm_ovr(
            x.view(),
            &[1; 90],
            Vec::new(),
            &svm_ovr_options(1.0, 1),
            &[],
            0.1,
        )
        .unwrap_err();
        assert!(e.to_string().contains("svm: labels"), "{e}");
    }
}
