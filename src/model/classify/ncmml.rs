//! Nearest class mean metric learning, NCMML (Mensink et al. TPAMI 2013, §3.1, eq. 3-7):
//! a low-rank W (d × D) maximising the log-likelihood (eq. 6) of the soft-min class
//! posteriors `p(c|x) ∝ exp(−½ ‖W x − W μ_c‖²)` (eq. 5), by mini-batch SGD with the gradient
//! of eq. 7, a fixed learning rate and early stopping on held-out top-5 error (§5.1; see
//! `sgd.rs`). Also the dot-product + bias variant (§3.4, eq. 21), `p(c|x) ∝
//! exp(xᵀWᵀWμ_c + s_c)`, whose W is used at test time either with the learned `s_c` or with
//! `b_c = −½ ‖W μ_c‖²` (eq. 10), the choice that lets new classes in at the cost of a mean.
//!
//! The class means μ_c used during learning are those of the training split and stay fixed;
//! the returned [`Ncm`] uses the means of all labelled rows given.

use ndarray::ArrayView2;

use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::input::checked_rows;
use super::super::linalg::{a_bt_f32, par};
use super::labels::top_k_ids;
use super::ncm::Ncm;
use super::projection::Projection;
use super::sgd::{
    EarlyStopping, EpochCallback, EpochReport, Prepared, SgdOptions, SgdReport, finish_epoch,
    top1_top5,
};
use super::softmax_metric::{class_scores, distance_step, dot_step, prototype_logits};
use super::train_rows::RowSource;

/// Which bias the dot-product variant uses at test time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestBias {
    /// `b_c = −½ ‖W μ_c‖²` (eq. 10): works for classes added later (the paper's choice).
    Norm,
    /// The learned `s_c` of eq. 21.
    Learned,
}

/// The objective NCMML maximises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcmmlObjective {
    /// Squared distances, eq. 5.
    Distance,
    /// Dot product + class bias, eq. 21.
    DotBias(TestBias),
}

/// NCMML settings.
#[derive(Debug, Clone, PartialEq)]
pub struct NcmmlOptions {
    /// SGD and early-stopping settings.
    pub sgd: SgdOptions,
    /// The loss W is learned with (eq. 6 or eq. 21).
    pub objective: NcmmlObjective,
}

impl NcmmlOptions {
    /// Defaults for a rank-`dim` metric with the distance objective.
    pub fn new(dim: usize) -> NcmmlOptions {
        NcmmlOptions {
            sgd: SgdOptions::ncm(dim),
            objective: NcmmlObjective::Distance,
        }
    }
}

/// A learned metric and its NCM classifier.
#[derive(Debug, Clone)]
pub struct NcmmlTraining {
    /// `W (x − m)` on the raw data; [`Projection::to_stages`] gives the model stages.
    pub projection: Projection,
    /// NCM with the means of all labelled rows in the learned space.
    pub ncm: Ncm,
    /// The learned `s_c` of eq. 21 (dot-product objective only), in class order.
    pub learned_bias: Option<Vec<f64>>,
    /// The SGD loss curve and early-stopping decision.
    pub report: SgdReport,
}

/// Ranks validation rows under W' with the given prototypes (K × D, `group` per class).
pub(crate) fn validate(
    prep: &Prepared,
    w: &[f32],
    d: usize,
    protos: &[f32],
    group: usize,
    bias: Option<&[f64]>,
) -> (f64, f64) {
    if prep.val.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let dd = prep.dim;
    let k = protos.len() / dd;
    let nv = prep.val.len();
    let q = prep.project(&prep.val, w, d);
    let p = a_bt_f32(protos, w, k, dd, d, par());
    let logits = prototype_logits(&q, &p, nv, k, d, bias);
    let c = k / group;
    let scores = class_scores(&logits, k, group);
    let ranked: Vec<Vec<usize>> = scores.chunks_exact(c).map(|r| top_k_ids(r, 5)).collect();
    let truth: Vec<u32> = prep.val.iter().map(|&i| prep.ids[i]).collect();
    top1_top5(&ranked, &truth)
}

fn check_finite(method: &str, epoch: usize, w: &[f32], loss: f64) -> Result<()> {
    if !loss.is_finite() || w.iter().any(|v| !v.is_finite()) {
        return Err(ClassifyError::Diverged {
            method: method.to_string(),
            epoch,
            detail: format!("loss {loss}"),
        });
    }
    Ok(())
}

/// Learns W by NCMML on the rows of `x` labelled `labels`; `callback` receives one report per
/// epoch (the loss curve).
pub fn train_ncmml(
    x: ArrayView2<f32>,
    labels: &[i64],
    opts: &NcmmlOptions,
    callback: Option<EpochCallback>,
) -> Result<NcmmlTraining> {
    let rows = checked_rows(&format!("{}: training data", method_name(opts)), x, None)?;
    let src = RowSource::Dense {
        x: rows.as_slice(),
        dim: rows.dim(),
    };
    train_ncmml_rows(src, labels, opts, callback)
}

fn method_name(opts: &NcmmlOptions) -> &'static str {
    match opts.objective {
        NcmmlObjective::Distance => "ncmml",
        NcmmlObjective::DotBias(_) => "ncmml-dot",
    }
}

/// [`train_ncmml`] on any row source (dense or PQ codes decoded per mini-batch): the SGD
/// batches, the class means, the PCA start and the validation are all read block by block.
pub(crate) fn train_ncmml_rows(
    src: RowSource,
    labels: &[i64],
    opts: &NcmmlOptions,
    mut callback: Option<EpochCallback>,
) -> Result<NcmmlTraining> {
    let method = method_name(opts);
    let s = &opts.sgd;
    let prep = Prepared::new(method, src, labels, s, 1)?;
    let (d, dd, c) = (s.dim, prep.dim, prep.classes.len());
    let means = prep.train_means();
    let mut w = prep.init_w(method, s)?;
    // s_c starts at b_c (uniform prior, §3.4).
    let mut bias: Vec<f64> = {
        let p = a_bt_f32(&means, &w, c, dd, d, par());
        p.chunks_exact(d)
            .map(|r| -0.5 * r.iter().map(|v| (*v as f64).powi(2)).sum::<f64>())
            .collect()
    };
    let val_bias = |w: &[f32], b: &[f64]| -> Option<Vec<f64>> {
        match opts.objective {
            NcmmlObjective::DotBias(TestBias::Learned) => {
                let _ = w;
                Some(b.to_vec())
            }
            _ => None,
        }
    };
    let mut stop = EarlyStopping::new(w.clone(), bias.clone(), s, c);
    let mut report = SgdReport {
        scale: prep.scale,
        ..SgdReport::default()
    };
    if !prep.val.is_empty() {
        let (t1, t5) = validate(&prep, &w, d, &means, 1, val_bias(&w, &bias).as_deref());
        stop.offer(0, t1, t5, &w, &bias);
    }
    let lr = s.learning_rate as f32;
    let mut iterations = 0;
    let mut xb = Vec::new();
    for epoch in 1..=s.max_epochs {
        let order = prep.epoch_order(s.seed, epoch);
        let mut loss = 0f64;
        for batch in order.chunks(s.batch_size) {
            prep.gather_into(batch, &mut xb);
            let y: Vec<u32> = batch.iter().map(|&i| prep.ids[i]).collect();
            let step = match opts.objective {
                NcmmlObjective::Distance => distance_step(&w, d, dd, &xb, &means, c, 1, &y),
                NcmmlObjective::DotBias(_) => dot_step(&w, d, dd, &xb, &means, c, &bias, &y),
            };
            for (a, g) in w.iter_mut().zip(&step.grad) {
                *a += lr * g;
            }
            for (b, g) in bias.iter_mut().zip(&step.grad_bias) {
                *b += s.learning_rate * g;
            }
            loss += step.loss;
            iterations += 1;
        }
        let loss = loss / order.len() as f64;
        check_finite(method, epoch, &w, loss)?;
        let (t1, t5) = validate(&prep, &w, d, &means, 1, val_bias(&w, &bias).as_deref());
        let best = stop.record(!prep.val.is_empty(), epoch, (t1, t5), &w, &bias);
        let e = EpochReport {
            method,
            epoch,
            iterations,
            train_loss: loss,
            val_top1: t1,
            val_top5: t5,
            best,
        };
        if finish_epoch(&mut report, &mut callback, &stop, e, s.max_epochs) {
            break;
        }
    }
    report.best_epoch = stop.best_epoch;
    let projection = prep.to_projection(&stop.best_w, d)?;
    // The NCM uses the means of all labelled rows (eq. 2), streamed in the raw space.
    let all: Vec<usize> = (0..prep.ids.len()).collect();
    let (raw_means, _) = prep.class_means(&all, false);
    let mut ncm = Ncm::from_means_f64(
        vec![projection.clone()],
        prep.classes.labels().to_vec(),
        &raw_means,
        prep.dim,
    )?;
    let learned_bias = match opts.objective {
        NcmmlObjective::Distance => None,
        NcmmlObjective::DotBias(tb) => {
            if tb == TestBias::Learned {
                ncm.set_biases(stop.best_extra.clone());
            }
            Some(stop.best_extra.clone())
        }
    };
    Ok(NcmmlTraining {
        projection,
        ncm,
        learned_bias,
        report,
    })
}
