//! Attributes (Gordo et al. CVPR 2012, §4, eq. 5, after Douze et al. 2011): one linear
//! classifier per training class, one-vs-rest, and the image described by its vector of K
//! class scores `[s(q, a_1), …, s(q, a_K)]`, reduced to R dimensions by PCA (the better of
//! Douze et al.'s two reductions). The classifiers are the paper's linear SVMs (hinge; the
//! crate's LIBLINEAR solver, `classify::fit_svm_ovr`, C validated on a held-out split) where
//! the paper trains them by SGD; `AttributeClassifier::Ridge` (`--attributes-classifier
//! ridge`) keeps the one-vs-rest ridge regression used before. Scores are affine in x and PCA
//! is affine in the scores, so the whole step is one `P W (x − m) + P (b − s̄)`, stored as
//! CENTER + LINEAR (with a bias). The paper's ℓ2-normalisation of the score vector is not
//! linear and is left out. R ≤ K.

use ndarray::{Array2, ArrayView2};

use super::super::center::{Center, column_means_f64};
use super::super::classify::{SVM_C_GRID, fit_ridge_ovr, fit_svm_ovr, svm_ovr_options};
use super::super::error::{ModelError, Result};
use super::super::linear::Linear;
use super::super::pca::Pca;
use super::super::stage::Stage;
use super::options::{AttributeClassifier, SupervisedOptions};
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
    let cls = |e| ModelError::from_classifier("attributes", e);
    // (scores, W K × d, b, m) with scores = W (x − m) + b.
    let (scores, w, b, zmean) = match opts.attribute_classifier {
        AttributeClassifier::Ridge => {
            let ridge = fit_ridge_ovr(v, labels, Vec::new(), None, opts.validation_fraction, seed)
                .map_err(cls)?;
            let (w, b, m) = ridge.affine();
            (
                ridge.scores(v).map_err(cls)?,
                w.to_vec(),
                b.to_vec(),
                m.to_vec(),
            )
        }
        AttributeClassifier::Svm => {
            let o = svm_ovr_options(1.0, seed);
            let svm = fit_svm_ovr(
                v,
                labels,
                Vec::new(),
                &o,
                &SVM_C_GRID,
                opts.validation_fraction,
            )
            .map_err(cls)?;
            let (w, b) = svm.weights();
            // W x + b = W (x − m) + (b + W m): centred like the ridge form.
            let m = column_means_f64(x, dim);
            let bc: Vec<f64> = w
                .chunks_exact(dim)
                .zip(b)
                .map(|(wk, bk)| bk + wk.iter().zip(&m).map(|(a, c)| a * c).sum::<f64>())
                .collect();
            (svm.scores(v).map_err(cls)?, w.to_vec(), bc, m)
        }
    };
    let s32: Vec<f32> = scores.iter().map(|&s| s as f32).collect();
    let sv = ArrayView2::from_shape((n, k), &s32[..])
        .map_err(|e| ModelError::shape("attribute scores", e))?;
    let pca = Pca::fit(sv, r)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Four noisy classes in 6-D with a far outlier cluster that the hinge ignores and the
    /// squared loss of ridge does not.
    fn data() -> (Vec<f32>, Vec<i64>) {
        let (n, d) = (160, 6);
        let mut x = vec![0f32; n * d];
        let mut y = vec![0i64; n];
        for i in 0..n {
            let c = i % 4;
            y[i] = c as i64;
            for j in 0..d {
                let noise = ((i * 31 + j * 17) % 23) as f32 / 23.0 - 0.5;
                x[i * d + j] = noise + if j == c { 2.0 } else { 0.0 };
            }
            if i % 20 == 0 {
                x[i * d + 5] += 30.0;
            }
        }
        (x, y)
    }

    /// WᵀW of the LINEAR stage (R × d): with R = K, P is orthogonal and WᵀPᵀPW = WᵀW of the
    /// classifiers, whatever PCA's rotation.
    fn gram(w: &[f64], rows: usize, d: usize) -> Vec<f64> {
        let mut g = vec![0f64; d * d];
        for r in 0..rows {
            for a in 0..d {
                for b in 0..d {
                    g[a * d + b] += w[r * d + a] * w[r * d + b];
                }
            }
        }
        g
    }

    fn stage_gram(stages: &[Stage], d: usize) -> Vec<f64> {
        let Stage::Linear(l) = &stages[1] else {
            panic!("expected LINEAR, got {stages:?}");
        };
        let w: Vec<f64> = l.weight().iter().map(|&v| f64::from(v)).collect();
        gram(&w, w.len() / d, d)
    }

    fn close(a: &[f64], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn attributes_are_svm_scores_by_default_and_ridge_on_request() {
        let (x, y) = data();
        let (d, k) = (6, 4);
        let opts = SupervisedOptions::default();
        assert_eq!(opts.attribute_classifier, AttributeClassifier::Svm);
        let v = ArrayView2::from_shape((y.len(), d), &x[..]).unwrap();
        let svm = fit_svm_ovr(
            v,
            &y,
            Vec::new(),
            &svm_ovr_options(1.0, 5),
            &SVM_C_GRID,
            opts.validation_fraction,
        )
        .unwrap();
        let ridge = fit_ridge_ovr(v, &y, Vec::new(), None, opts.validation_fraction, 5).unwrap();
        let g_svm = gram(svm.weights().0, k, d);
        let g_ridge = gram(ridge.affine().0, k, d);
        let scale = g_svm.iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(
            close(&g_svm, &g_ridge) > 0.1 * scale,
            "SVM and ridge agree: the test cannot tell them apart"
        );
        let by_default = stage_gram(&fit_attributes(&x, d, &y, k, &opts, 5).unwrap(), d);
        assert!(
            close(&by_default, &g_svm) < 1e-4 * scale,
            "{by_default:?} vs SVM {g_svm:?}"
        );
        let o = SupervisedOptions {
            attribute_classifier: AttributeClassifier::Ridge,
            ..opts
        };
        let with_ridge = stage_gram(&fit_attributes(&x, d, &y, k, &o, 5).unwrap(), d);
        let rs = g_ridge.iter().fold(0f64, |m, v| m.max(v.abs()));
        assert!(
            close(&with_ridge, &g_ridge) < 1e-4 * rs,
            "{with_ridge:?} vs ridge {g_ridge:?}"
        );
    }
}
