//! The mini-batch gradient shared by NCMML (Mensink et al. TPAMI 2013, eq. 5-7) and NCMC
//! (eq. 16-20): a soft-min over the squared distances `d_W(x, m) = ‖W x − W m‖²` to K
//! prototypes (class means, or k centroids per class), and its dot-product + bias variant
//! (eq. 21).
//!
//! With P = M Wᵀ (K × d, projected prototypes), Q = X Wᵀ (m × d, projected batch) and the
//! coefficients α (m × K) of eq. 7 / eq. 20, the gradient
//! `Σ_i Σ_K α_iK W z_iK z_iKᵀ` with `z_iK = m_K − x_i` expands (since every row of α sums to
//! 0, for eq. 7 and eq. 20 alike) into
//! `Pᵀ (diag(1ᵀα) M − αᵀ X) − (Qᵀ α) M`,
//! five faer products of size O(dD(m + K) + mKD) instead of m·K outer products: the
//! "distances in d dimensions" row of the paper's Table 1.

use super::super::linalg::{a_bt_f32, at_b_f32, matmul_f32, par};

/// One batch: the summed loss (−ln p(y|x), eq. 6 negated) and the mean gradient of the
/// log-likelihood with respect to W (d × D), to be *added* (times η).
pub(crate) struct Step {
    pub loss: f64,
    pub grad: Vec<f32>,
    /// Gradient of the log-likelihood with respect to the biases (eq. 21 only).
    pub grad_bias: Vec<f64>,
}

/// Row-wise scores `q·p_K − ½‖p_K‖²` (the eq. 10-11 form of −½ d_W up to a per-row constant),
/// or `q·p_K + s_K` when `bias` is given (eq. 21).
pub(crate) fn prototype_logits(
    q: &[f32],
    p: &[f32],
    n: usize,
    k: usize,
    d: usize,
    bias: Option<&[f64]>,
) -> Vec<f64> {
    let dots = a_bt_f32(q, p, n, d, k, par());
    let b: Vec<f64> = match bias {
        Some(s) => s.to_vec(),
        None => p
            .chunks_exact(d)
            .map(|r| -0.5 * r.iter().map(|v| (*v as f64) * (*v as f64)).sum::<f64>())
            .collect(),
    };
    dots.chunks_exact(k)
        .flat_map(|row| row.iter().zip(&b).map(|(v, bb)| *v as f64 + bb))
        .collect()
}

/// Class scores from prototype logits: the logit itself (one prototype per class), or
/// `log Σ_j exp(logit_cj)` over a class's `group` centroids (eq. 16).
pub(crate) fn class_scores(logits: &[f64], k: usize, group: usize) -> Vec<f64> {
    if group == 1 {
        return logits.to_vec();
    }
    logits
        .chunks_exact(k)
        .flat_map(|row| {
            row.chunks_exact(group).map(|g| {
                let mx = g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                mx + g.iter().map(|v| (v - mx).exp()).sum::<f64>().ln()
            })
        })
        .collect()
}

/// Softmax over each row, then α and the loss. `group` prototypes per class (1 = NCMML,
/// α = p − [y = c], eq. 7; k = NCMC, α_icj = p_cj − [c = y] p_cj / Σ_j' p_cj', eq. 20).
fn alphas(logits: &[f64], k: usize, group: usize, y: &[u32]) -> (Vec<f32>, f64) {
    let mut a = vec![0f32; logits.len()];
    let mut loss = 0f64;
    for ((row, arow), &yi) in logits.chunks_exact(k).zip(a.chunks_exact_mut(k)).zip(y) {
        let mx = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v - mx).exp()).collect();
        let z: f64 = e.iter().sum();
        let lo = yi as usize * group;
        let zy: f64 = e[lo..lo + group].iter().sum();
        loss -= (zy / z).ln();
        for (j, (av, ev)) in arow.iter_mut().zip(&e).enumerate() {
            let p = ev / z;
            let own = if (lo..lo + group).contains(&j) {
                ev / zy
            } else {
                0.0
            };
            *av = (p - own) as f32;
        }
    }
    (a, loss)
}

/// The distance objective (eq. 5-7, or eq. 16-20 with `group` > 1) on one batch.
/// `w`: d × D; `x`: nb × D; `protos`: K × D (class-major, `group` per class); `y`: class ids.
#[allow(clippy::too_many_arguments)]
pub(crate) fn distance_step(
    w: &[f32],
    d: usize,
    dd: usize,
    x: &[f32],
    protos: &[f32],
    k: usize,
    group: usize,
    y: &[u32],
) -> Step {
    let nb = y.len();
    let p = a_bt_f32(protos, w, k, dd, d, par());
    let q = a_bt_f32(x, w, nb, dd, d, par());
    let logits = prototype_logits(&q, &p, nb, k, d, None);
    let (a, loss) = alphas(&logits, k, group, y);
    // R = diag(colsum α) M − αᵀ X   (K × D)
    let mut s = vec![0f32; k];
    for row in a.chunks_exact(k) {
        for (sv, v) in s.iter_mut().zip(row) {
            *sv += v;
        }
    }
    let mut r = at_b_f32(&a, x, nb, k, dd, par());
    for ((rr, m), sv) in r.chunks_exact_mut(dd).zip(protos.chunks_exact(dd)).zip(&s) {
        for (a, b) in rr.iter_mut().zip(m) {
            *a = sv * b - *a;
        }
    }
    let g1 = at_b_f32(&p, &r, k, d, dd, par());
    let qta = at_b_f32(&q, &a, nb, d, k, par());
    let g2 = matmul_f32(&qta, protos, d, k, dd, par());
    let inv = 1.0 / nb as f32;
    let grad = g1.iter().zip(&g2).map(|(a, b)| (a - b) * inv).collect();
    Step {
        loss,
        grad,
        grad_bias: Vec::new(),
    }
}

/// The dot-product + bias objective (eq. 21) on one batch: logits `xᵀWᵀWμ_c + s_c`.
/// Gradient of the log-likelihood: `−(Qᵀ α M + Pᵀ αᵀ X) / m` for W, `−1ᵀα / m` for s.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dot_step(
    w: &[f32],
    d: usize,
    dd: usize,
    x: &[f32],
    means: &[f32],
    c: usize,
    bias: &[f64],
    y: &[u32],
) -> Step {
    let nb = y.len();
    let p = a_bt_f32(means, w, c, dd, d, par());
    let q = a_bt_f32(x, w, nb, dd, d, par());
    let logits = prototype_logits(&q, &p, nb, c, d, Some(bias));
    let (a, loss) = alphas(&logits, c, 1, y);
    let qta = at_b_f32(&q, &a, nb, d, c, par());
    let g1 = matmul_f32(&qta, means, d, c, dd, par());
    let atx = at_b_f32(&a, x, nb, c, dd, par());
    let g2 = at_b_f32(&p, &atx, c, d, dd, par());
    let inv = 1.0 / nb as f32;
    let grad = g1.iter().zip(&g2).map(|(a, b)| -(a + b) * inv).collect();
    let mut grad_bias = vec![0f64; c];
    for row in a.chunks_exact(c) {
        for (g, v) in grad_bias.iter_mut().zip(row) {
            *g -= *v as f64 / nb as f64;
        }
    }
    Step {
        loss,
        grad,
        grad_bias,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::random::{gaussian, rng};

    fn rand_f32(seed: u64, n: usize, s: f64) -> Vec<f32> {
        gaussian(&mut rng(seed), n)
            .into_iter()
            .map(|v| (v * s) as f32)
            .collect()
    }

    /// Mean log-likelihood by direct evaluation of eq. 5-6 (or 16-17), f64.
    fn loglik(
        w: &[f32],
        _d: usize,
        dd: usize,
        x: &[f32],
        protos: &[f32],
        group: usize,
        y: &[u32],
    ) -> f64 {
        let k = protos.len() / dd;
        let mut total = 0.0;
        for (xi, &yi) in x.chunks_exact(dd).zip(y) {
            let dist: Vec<f64> = protos
                .chunks_exact(dd)
                .map(|m| {
                    w.chunks_exact(dd)
                        .map(|wr| {
                            let p: f64 = wr
                                .iter()
                                .zip(xi.iter().zip(m))
                                .map(|(a, (b, c))| *a as f64 * (*b - *c) as f64)
                                .sum();
                            p * p
                        })
                        .sum::<f64>()
                })
                .collect();
            let z: f64 = dist.iter().map(|v| (-0.5 * v).exp()).sum();
            let lo = yi as usize * group;
            let zy: f64 = dist[lo..lo + group].iter().map(|v| (-0.5 * v).exp()).sum();
            total += (zy / z).ln();
            let _ = k;
        }
        total / y.len() as f64
    }

    #[test]
    fn distance_gradient_matches_finite_differences() {
        let (d, dd, nb) = (3, 5, 7);
        for group in [1usize, 2] {
            let c = 3;
            let k = c * group;
            let w = rand_f32(1, d * dd, 0.5);
            let x = rand_f32(2, nb * dd, 1.0);
            let protos = rand_f32(3, k * dd, 1.0);
            let y: Vec<u32> = (0..nb as u32).map(|i| i % c as u32).collect();
            let step = distance_step(&w, d, dd, &x, &protos, k, group, &y);
            let l0 = loglik(&w, d, dd, &x, &protos, group, &y);
            assert!(
                (step.loss / nb as f64 + l0).abs() < 1e-4,
                "loss {} vs {}",
                step.loss,
                l0
            );
            let h = 1e-3f32;
            for idx in 0..d * dd {
                let mut wp = w.clone();
                wp[idx] += h;
                let mut wm = w.clone();
                wm[idx] -= h;
                let num = (loglik(&wp, d, dd, &x, &protos, group, &y)
                    - loglik(&wm, d, dd, &x, &protos, group, &y))
                    / (2.0 * h as f64);
                assert!(
                    (num - step.grad[idx] as f64).abs() < 2e-3 * (1.0 + num.abs()),
                    "group {group} entry {idx}: numeric {num} vs analytic {}",
                    step.grad[idx]
                );
            }
        }
    }

    #[test]
    fn dot_gradient_matches_finite_differences() {
        let (d, dd, nb, c) = (2, 4, 6, 3);
        let w = rand_f32(4, d * dd, 0.5);
        let x = rand_f32(5, nb * dd, 1.0);
        let means = rand_f32(6, c * dd, 1.0);
        let bias = vec![0.1, -0.2, 0.3];
        let y: Vec<u32> = (0..nb as u32).map(|i| i % c as u32).collect();
        let ll = |w: &[f32], b: &[f64]| -> f64 {
            let s = dot_step(w, d, dd, &x, &means, c, b, &y);
            -s.loss / nb as f64
        };
        let step = dot_step(&w, d, dd, &x, &means, c, &bias, &y);
        let h = 1e-3f32;
        for idx in 0..d * dd {
            let mut wp = w.clone();
            wp[idx] += h;
            let mut wm = w.clone();
            wm[idx] -= h;
            let num = (ll(&wp, &bias) - ll(&wm, &bias)) / (2.0 * h as f64);
            assert!(
                (num - step.grad[idx] as f64).abs() < 2e-3 * (1.0 + num.abs()),
                "entry {idx}: numeric {num} vs analytic {}",
                step.grad[idx]
            );
        }
        for j in 0..c {
            let mut bp = bias.clone();
            bp[j] += 1e-4;
            let mut bm = bias.clone();
            bm[j] -= 1e-4;
            let num = (ll(&w, &bp) - ll(&w, &bm)) / 2e-4;
            assert!(
                (num - step.grad_bias[j]).abs() < 1e-3,
                "bias {j}: {num} vs {}",
                step.grad_bias[j]
            );
        }
    }
}
