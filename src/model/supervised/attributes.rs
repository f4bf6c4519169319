//! Attributes (Gordo et al. CVPR 2012, §4, eq. 5, after Douze et al. 2011): one linear
//! classifier per training class, one-vs-rest, and the image described by its vector of K
//! class scores `[s(q, a_1), …, s(q, a_K)]`, reduced to R dimensions by PCA (the better of
//! Douze et al.'s two reductions). The classifiers are the crate's one-vs-rest ridge
//! regression (`classify::fit_ridge_ovr`, λ validated on a held-out split) where the paper
//! trains linear SVMs by SGD; both are linear scorers. Scores are affine in x and PCA is
//! affine in the scores, so the whole step is one `P W (x − m) + P (b − s̄)`, stored as
//! CENTER + LINEAR (with a bias). The paper's ℓ2-normalisation of the score vector is not
//! linear and is left out. R ≤ K.

use ndarray::{Array2, ArrayView2};

use super::super::center::Center;
use super::super::classify::fit_ridge_ovr;
use super::super::error::{ModelError, Result};
use super::super::linear::Linear;
use super::super::pca::Pca;
use super::super::stage::Stage;
use super::SupervisedOptions;
use super::triplet_sgd::class_ids;

/// Fits the attribute projection to R dimensions on the rows of `x` (row-major, `dim`
/// columns, validated) with one label per row. Returns CENTER + LINEAR stages.
pub fn fit_attributes(
    x: &[f32],
    dim: usize,
    labels: &[i64],
    r: usize,
    opts: &SupervisedOptions,
    seed: u64,
) -> Result<Vec<Stage>> {
    let n = x.len() / dim.max(1);
    let (classes, _) = class_ids("attributes", labels, n)?;
    let k = classes.len();
    if r == 0 || r > k {
        return Err(ModelError::unsupported(
            "attributes",
            format!(
                "R = {r}: the attribute vector has one score per class, {k} classes, so R must \
                 be between 1 and {k}"
            ),
        ));
    }
    let v = ArrayView2::from_shape((n, dim), x).map_err(|e| ModelError::shape("attributes", e))?;
    let ridge = fit_ridge_ovr(v, labels, Vec::new(), None, opts.validation_fraction, seed)
        .map_err(|e| ModelError::from_classifier("attributes", e))?;
    let scores = ridge
        .scores(v)
        .map_err(|e| ModelError::from_classifier("attributes", e))?;
    let s32: Vec<f32> = scores.iter().map(|&s| s as f32).collect();
    let sv = ArrayView2::from_shape((n, k), &s32[..])
        .map_err(|e| ModelError::shape("attribute scores", e))?;
    let pca = Pca::fit(sv, r)?;
    let (w, b, zmean) = ridge.affine();
    let p = pca.linear().weight();
    let smean = pca.center().mean();
    let mut weight = Array2::<f32>::zeros((r, dim));
    let mut bias = vec![0f32; r];
    for o in 0..r {
        for c in 0..k {
            let pc = p[(o, c)] as f64;
            for (j, wv) in w[c * dim..(c + 1) * dim].iter().enumerate() {
                weight[(o, j)] += (pc * wv) as f32;
            }
            bias[o] += (pc * (b[c] - smean[c] as f64)) as f32;
        }
    }
    Ok(vec![
        Stage::Center(Center::new(zmean.iter().map(|&v| v as f32).collect())?),
        Stage::Linear(Linear::new(weight, Some(bias))?),
    ])
}
