//! Training a [`Model`] from a [`PipelineSpec`] and data.
//!
//! Steps run in SPEC order on a seeded sample of the rows. Each step fits on the output of
//! the steps before it; PCA streams its input in row chunks through the not-yet-applied
//! stages (so `rff:3000,pca:C` never holds the N × 3,000 feature matrix), every other step
//! works on the materialised output. Step i draws its random numbers from
//! `derive_seed(seed, i + 1)`, so changing one step leaves the others' draws unchanged.
//!
//! Per method, the code length must be reachable from the data (errors otherwise):
//! - `pca:C` (pca-direct, pca-rr, pca-itq): C ≤ input dimension and C ≤ training rows;
//! - `kpca-itq:C`: C ≤ number of random features (3,000) and ≤ training rows;
//! - `lsh:C` (`proj:C`) and `sklsh:C`: any C (random directions), up to 1,024 bits;
//! - `bits` without a dimension-setting step: the input dimension itself is the bit count;
//! - binary codes: a multiple of 8 bits, 8 to 1,024;
//! - `pq:MxB` / `opq:MxB`: M divides the dimension, at least K = 2^B training rows.

use std::borrow::Cow;
use std::time::Instant;

use ndarray::ArrayView2;

use super::binarize::Binarize;
use super::center::{Center, column_means_f64};
use super::error::{ModelError, Result};
use super::float::FloatStage;
use super::hom::{DEFAULT_HOM_ORDER, Hom};
use super::input::checked_rows;
use super::itq::train_itq_with;
use super::ivf::CoarseQuantizer;
use super::kmeans::KMeansOptions;
use super::linear::Linear;
use super::neighbour_radius::{
    DEFAULT_NEIGHBOUR_RANK, DEFAULT_RADIUS_QUERIES, mean_kth_neighbour_distance,
};
use super::opq::{OpqOptions, reconstruct, train_opq_rows};
use super::origin::Origin;
use super::pca::{CovarianceAccumulator, Pca};
use super::pipeline::Model;
use super::pq::ProductQuantizer;
use super::random::{derive_seed, gather_rows, rng, sample_indices};
use super::rff::Rff;
use super::rotation::Rotation;
use super::sklsh::Sklsh;
use super::spec::{MAX_BINARY_BITS, PipelineSpec, QuantizerSpec, StepSpec};
use super::stage::Stage;
use super::supervised::{
    CcaRho, CcaView, RhoValidation, SgdChoice, SgdFit, choose_cca_rho, choose_cca_rho_by_groups,
    fit_attributes, fit_cca, fit_classemes, fit_jscl, fit_metric, fit_picodes,
};
use super::supervised::{PicodesFit, PicodesStop};
use super::train_options::{DEFAULT_TRAIN_SAMPLE_CAP, TrainEvent, TrainOptions};
use super::train_report::{PcaReport, PqReport, StepTiming, TrainReport};

/// Rows per chunk of streamed passes (PCA).
const STREAM_ROWS: usize = 4096;

/// The note of a PiCoDes descent that stopped without improving: no basis classifier updated
/// in any round (the codes are the seeded LSH initialisation), or a round that updated none
/// (the next classifier step would see the same bits: a fixed point, reached before the
/// round cap and before the objective converged).
fn picodes_note(name: &str, fit: &PicodesFit) -> Option<String> {
    let rounds = fit.updated.len();
    let e = |i: usize| fit.objective.get(i).copied().unwrap_or(f64::NAN);
    if fit.updated.iter().all(|&u| u == 0) {
        return Some(format!(
            "{name}: no basis classifier was updated in {rounds} round(s): the codes are the \
             seeded LSH initialisation (objective {:.6})",
            e(0)
        ));
    }
    (fit.stop == PicodesStop::Stalled).then(|| {
        format!(
            "{name}: stopped at round {rounds}: no basis classifier lowers eq. 5 against that \
             round's SVMs (objective {:.6} -> {:.6})",
            e(0),
            e(rounds - 1)
        )
    })
}

/// The training state: the sample, the stages fitted so far, and how many of them have been
/// applied to `data`.
struct State<'a> {
    data: Cow<'a, [f32]>,
    /// Labels of the sampled rows (supervised steps).
    labels: Option<Vec<i64>>,
    /// The second view of the sampled rows (row-major) and its width (`cca:R`).
    view: Option<(Vec<f32>, usize)>,
    /// Instance groups of the sampled rows (`cca:R`'s ρ validation).
    groups: Option<Vec<i64>>,
    dim: usize,
    stages: Vec<Stage>,
    applied: usize,
}

impl State<'_> {
    fn rows(&self) -> usize {
        self.data.len() / self.dim
    }

    /// Output dimension of all fitted stages.
    fn out_dim(&self) -> usize {
        self.stages.last().map_or(self.dim, Stage::out_dim)
    }

    /// Runs the pending stages on row-major `chunk`.
    fn pending(&self, chunk: &[f32]) -> Vec<f32> {
        let mut cur: Cow<[f32]> = Cow::Borrowed(chunk);
        for s in &self.stages[self.applied..] {
            cur = Cow::Owned(s.apply_batch(&cur));
        }
        cur.into_owned()
    }

    /// Applies pending stages to the whole sample.
    fn materialize(&mut self) -> &[f32] {
        if self.applied < self.stages.len() {
            let d = self.dim;
            let mut out = Vec::with_capacity(self.rows() * self.out_dim());
            for chunk in self.data.chunks(STREAM_ROWS * d) {
                out.extend(self.pending(chunk));
            }
            self.dim = self.out_dim();
            self.data = Cow::Owned(out);
            self.applied = self.stages.len();
        }
        &self.data
    }
}

struct Ctx<'o> {
    opts: &'o TrainOptions,
    report: TrainReport,
}

impl Ctx<'_> {
    fn emit(&self, e: TrainEvent) {
        if let Some(p) = &self.opts.progress
            && (self.opts.verbose || !matches!(e, TrainEvent::Message(_)))
        {
            p(&e);
        }
    }
    fn progress(&self, step: &str, unit: &'static str, done: u64, total: u64) {
        self.emit(TrainEvent::Progress {
            step: step.to_string(),
            unit,
            done,
            total,
        });
    }
    /// `Err(Cancelled)` once the caller cancelled.
    fn check(&self) -> Result<()> {
        self.opts.cancel.check()
    }
    fn message(&self, m: String) {
        if self.opts.verbose {
            self.emit(TrainEvent::Message(m));
        }
    }
}

fn view(data: &[f32], dim: usize) -> Result<ArrayView2<'_, f32>> {
    ArrayView2::from_shape((data.len() / dim, dim), data)
        .map_err(|e| ModelError::shape("training data", e))
}

fn bandwidth(state: &mut State, seed: u64, ctx: &mut Ctx) -> Result<f64> {
    let dim = state.out_dim();
    let x = state.materialize();
    let sigma = mean_kth_neighbour_distance(
        view(x, dim)?,
        DEFAULT_NEIGHBOUR_RANK,
        DEFAULT_RADIUS_QUERIES,
        seed,
    )?;
    if !(sigma.is_finite() && sigma > 0.0) {
        return Err(ModelError::unsupported(
            "kernel bandwidth",
            format!(
                "the mean distance to the {DEFAULT_NEIGHBOUR_RANK}th nearest neighbour is {sigma}: \
                 the training rows are (nearly) identical"
            ),
        ));
    }
    ctx.report.bandwidth = Some(sigma);
    ctx.message(format!(
        "kernel bandwidth σ (mean {DEFAULT_NEIGHBOUR_RANK}-NN distance) = {sigma:.6}"
    ));
    Ok(sigma)
}

fn fit_pca(state: &mut State, c: usize, ctx: &mut Ctx) -> Result<()> {
    let dim = state.out_dim();
    let n = state.rows();
    let name = format!("pca:{c}");
    let pca = if dim > n {
        // SVD path: needs the rows.
        let x = state.materialize();
        ctx.progress(&name, "steps", 0, 1);
        let p = Pca::fit(view(x, dim)?, c)?;
        ctx.progress(&name, "steps", 1, 1);
        p
    } else {
        let mut acc = CovarianceAccumulator::new(dim)?;
        let d0 = state.dim;
        let mut done = 0u64;
        for chunk in state.data.chunks(STREAM_ROWS * d0) {
            ctx.check()?;
            let y = state.pending(chunk);
            acc.add_rows(&y);
            done += (chunk.len() / d0) as u64;
            ctx.progress(&name, "rows", done, n as u64);
        }
        Pca::from_covariance(&acc.finish()?, c)?
    };
    let ratio: f64 = pca.explained_variance_ratio().iter().sum();
    ctx.message(format!(
        "{name}: keeps {:.2}% of the variance; top eigenvalues {:?}",
        100.0 * ratio,
        &pca.eigenvalues()[..pca.eigenvalues().len().min(5)]
    ));
    ctx.report.pca = Some(PcaReport {
        eigenvalues: pca.eigenvalues().to_vec(),
        total_variance: pca.total_variance(),
        explained_variance_ratio: ratio,
    });
    let (center, linear) = pca.into_stages();
    state.stages.push(Stage::Center(center));
    state.stages.push(Stage::Linear(linear));
    Ok(())
}

/// NCMML (Mensink et al. TPAMI 2013, eq. 3-7) on the materialised sample with its labels;
/// the learned `W (x − m)` becomes CENTER + LINEAR stages.
fn fit_ncmml(state: &mut State, c: usize, seed: u64, ctx: &mut Ctx) -> Result<()> {
    use super::classify::{NcmmlOptions, train_ncmml};
    let name = format!("ncmml:{c}");
    let Some(labels) = state.labels.clone() else {
        return Err(ModelError::invalid(
            "labels",
            format!("{name} learns from class labels: pass TrainOptions::labels (--labels)"),
        ));
    };
    let dim = state.out_dim();
    let x = state.materialize();
    let v = view(x, dim)?;
    let mut opts = NcmmlOptions::new(c);
    opts.sgd.seed = seed;
    let max = opts.sgd.max_epochs as u64;
    let mut cb = |e: &super::classify::EpochReport| {
        ctx.progress(&name, "epochs", e.epoch as u64, max);
        ctx.message(format!(
            "{name} epoch {:>3}: loss {:.6}, validation top-1 {:.4} top-5 {:.4}",
            e.epoch, e.train_loss, e.val_top1, e.val_top5
        ));
    };
    let tr = train_ncmml(v, &labels, &opts, Some(&mut cb))
        .map_err(|e| ModelError::from_classifier(&name, e))?;
    let stages = tr
        .projection
        .to_stages()
        .map_err(|e| ModelError::from_classifier(&name, e))?;
    state.stages.extend(stages);
    Ok(())
}

/// The sample's labels, or an error naming `labels` for `step`.
fn need_labels(state: &State, step: &str) -> Result<Vec<i64>> {
    state.labels.clone().ok_or_else(|| {
        ModelError::invalid(
            "labels",
            format!("{step} learns from class labels: pass TrainOptions::labels (--labels)"),
        )
    })
}

/// `metric:R` / `jscl:R` (Gordo et al. CVPR 2012 §3, §6) on the materialised sample.
fn fit_triplet_step(state: &mut State, step: StepSpec, seed: u64, ctx: &mut Ctx) -> Result<()> {
    let name = step.token();
    let labels = need_labels(state, &name)?;
    let dim = state.out_dim();
    let sup = ctx.opts.supervised.clone();
    let total = (sup.learning_rates.len() * sup.max_epochs) as u64;
    let groups_owned = state.groups.clone();
    let groups = groups_owned.as_deref();
    let score = if groups.is_some() {
        "held-out instance mAP"
    } else {
        "validation precision"
    };
    let x = state.materialize();
    let mut done = 0u64;
    let mut on_epoch = |eta: f64, epoch: usize, loss: f64, p: f64| {
        done += 1;
        ctx.progress(&name, "epochs", done.min(total), total);
        ctx.message(format!(
            "{name} η {eta}: epoch {epoch:>3}: hinge loss {loss:.6}, {score} {p:.4}"
        ));
    };
    let fit: SgdFit = match step {
        StepSpec::Metric(r) => fit_metric(x, dim, &labels, groups, r, &sup, seed, &mut on_epoch)?,
        _ => {
            let r = match step {
                StepSpec::Jscl(r) => r,
                _ => 0,
            };
            fit_jscl(x, dim, &labels, groups, r, &sup, seed, &mut on_epoch)?
        }
    };
    ctx.progress(&name, "epochs", total, total);
    ctx.message(format!(
        "{name}: kept η {} epoch {} ({score} {:.4})",
        fit.learning_rate, fit.best_epoch, fit.validation_score
    ));
    ctx.report.sgd_choice = Some(SgdChoice {
        step: name,
        learning_rate: fit.learning_rate,
        best_epoch: fit.best_epoch,
        validation: fit.validation,
        validation_score: fit.validation_score,
        train_rows: fit.train_rows,
        validation_rows: fit.validation_rows,
        validation_groups: fit.validation_groups,
    });
    let stages = fit.to_stages()?;
    state.stages.extend(stages);
    Ok(())
}

/// `cca:R` (Gordo et al. eq. 6-8; CCA-ITQ when `scaled`) with the view or the one-hot labels;
/// ρ fixed, or chosen from a grid on held-out instance groups (`TrainOptions::groups`) or,
/// without groups, held-out labelled rows (`cca_rho.rs`). Unset, ρ is chosen on the groups
/// when there are some and is `DEFAULT_CCA_RHO` otherwise ([`CcaRho::default_for`]).
fn fit_cca_step(state: &mut State, r: usize, scaled: bool, seed: u64, ctx: &mut Ctx) -> Result<()> {
    let name = format!("cca:{r}");
    let dim = state.out_dim();
    let sup = ctx.opts.supervised.clone();
    let groups = state.groups.clone();
    let rho_word = sup
        .cca_rho
        .clone()
        .unwrap_or_else(|| CcaRho::default_for(groups.is_some()));
    let grid: &[f64] = match &rho_word {
        CcaRho::Fixed(_) => &[],
        CcaRho::Grid(g) => g,
    };
    // Labels: the one-hot view, or the category validation of ρ.
    let labels = match (&state.view, grid.is_empty() || groups.is_some()) {
        (Some(_), true) => None,
        _ => Some(need_labels(state, &name)?),
    };
    let view = state.view.take();
    ctx.progress(&name, "steps", 0, 1);
    let result = (|| {
        let x = state.materialize();
        let v = match (&view, &labels) {
            (Some((values, cols)), _) => CcaView::Matrix {
                values,
                cols: *cols,
            },
            (None, Some(l)) => CcaView::OneHot(l),
            (None, None) => unreachable!("labels were required above"),
        };
        let mut rho = rho_word.values()[0];
        let mut choice = None;
        if !grid.is_empty() {
            let c = match (&groups, &labels) {
                (Some(g), _) => {
                    choose_cca_rho_by_groups(x, dim, v, g, r, scaled, grid, &sup, seed)?
                }
                (None, Some(l)) => choose_cca_rho(x, dim, v, l, r, scaled, grid, &sup, seed)?,
                (None, None) => unreachable!("labels were required above"),
            };
            rho = c.rho;
            choice = Some(c);
        }
        Ok::<_, ModelError>((fit_cca(x, dim, v, r, rho, scaled)?, choice))
    })();
    state.view = view;
    let (fit, choice) = result?;
    ctx.progress(&name, "steps", 1, 1);
    if let Some(c) = &choice {
        for t in &c.trials {
            match (t.validation_precision, t.instance_map, &t.error) {
                (Some(p), _, _) => ctx.message(format!(
                    "{name}: rho {:e}: held-out precision@{} {p:.4}",
                    t.rho, sup.validation_k
                )),
                (_, Some(m), _) => ctx.message(format!(
                    "{name}: rho {:e}: held-out instance mAP {m:.4}, same-group rows in the \
                     first 4 {:.3}",
                    t.rho,
                    t.instance_top4.unwrap_or(f64::NAN)
                )),
                (None, None, e) => ctx.message(format!(
                    "{name}: rho {:e}: not fitted ({})",
                    t.rho,
                    e.as_deref().unwrap_or("?")
                )),
            }
        }
        ctx.message(format!("{name}: rho {:e} chosen", c.rho));
    }
    ctx.message(format!(
        "{name}: canonical correlations {:?}",
        &fit.correlations[..fit.correlations.len().min(r)]
    ));
    ctx.report.cca_correlations = fit.correlations.clone();
    ctx.report.cca_rho_choice = choice;
    state.stages.extend(fit.to_stages()?);
    Ok(())
}

fn run_step(state: &mut State, step: StepSpec, seed: u64, ctx: &mut Ctx) -> Result<()> {
    let dim = state.out_dim();
    match step {
        StepSpec::Center => {
            let x = state.materialize();
            let mean = column_means_f64(x, dim);
            state.stages.push(Stage::Center(Center::new(
                mean.into_iter().map(|v| v as f32).collect(),
            )?));
        }
        StepSpec::Pca(c) => fit_pca(state, c, ctx)?,
        StepSpec::Projection(c) => {
            state
                .stages
                .push(Stage::Linear(Linear::random_projection(c, dim, seed)?));
        }
        StepSpec::Rff(features) => {
            let sigma = bandwidth(state, derive_seed(seed, 1), ctx)?;
            state
                .stages
                .push(Stage::Rff(Rff::random(dim, features, sigma, seed)?));
        }
        StepSpec::Hom(kernel) => {
            state.stages.push(Stage::Hom(Hom::new(
                dim,
                kernel,
                DEFAULT_HOM_ORDER,
                kernel.default_period(),
            )?));
        }
        StepSpec::RandomRotation => {
            state
                .stages
                .push(Stage::Rotation(Rotation::random(dim, seed)?));
        }
        StepSpec::Ncmml(c) => fit_ncmml(state, c, seed, ctx)?,
        StepSpec::Metric(_) | StepSpec::Jscl(_) => fit_triplet_step(state, step, seed, ctx)?,
        StepSpec::Cca { dim: r, scaled } => fit_cca_step(state, r, scaled, seed, ctx)?,
        StepSpec::Attributes(r) => {
            let name = step.token();
            let labels = need_labels(state, &name)?;
            ctx.progress(&name, "steps", 0, 1);
            let sup = ctx.opts.supervised.clone();
            let x = state.materialize();
            let stages = fit_attributes(x, dim, &labels, r, &sup, seed)?;
            ctx.progress(&name, "steps", 1, 1);
            state.stages.extend(stages);
        }
        StepSpec::Ivf(k) => {
            let name = step.token();
            let kopts = KMeansOptions {
                iterations: ctx.opts.kmeans_iterations,
                seed,
                init: ctx.opts.kmeans_init,
                ..KMeansOptions::default()
            };
            ctx.progress(&name, "steps", 0, 1);
            let x = state.materialize();
            let coarse = CoarseQuantizer::train_rows(x, dim, k, &kopts, &ctx.opts.cancel)?;
            ctx.progress(&name, "steps", 1, 1);
            state.stages.push(Stage::Ivf(coarse));
        }
        StepSpec::Itq => {
            let iters = ctx.opts.itq_iterations;
            let x = state.materialize();
            let v = view(x, dim)?;
            let itq = train_itq_with(v, iters, seed, &ctx.opts.cancel, |t, loss| {
                ctx.progress("itq", "iterations", t as u64, iters as u64);
                ctx.message(format!("itq iteration {t:>3}: quantisation loss {loss:.6}"));
            })?;
            ctx.report.itq_loss = itq.losses;
            state.stages.push(Stage::Rotation(itq.rotation));
        }
    }
    Ok(())
}

fn run_quantizer(state: &mut State, q: QuantizerSpec, seed: u64, ctx: &mut Ctx) -> Result<()> {
    let dim = state.out_dim();
    let kopts = KMeansOptions {
        iterations: ctx.opts.kmeans_iterations,
        seed,
        init: ctx.opts.kmeans_init,
        ..KMeansOptions::default()
    };
    match q {
        QuantizerSpec::Bits => {
            if !dim.is_multiple_of(8) || dim > MAX_BINARY_BITS {
                return Err(ModelError::unsupported(
                    "bits",
                    format!(
                        "binary codes need a multiple of 8 bits between 8 and {MAX_BINARY_BITS}; \
                         the pipeline gives {dim} dimensions (add pca:C or proj:C first)"
                    ),
                ));
            }
            state.stages.push(Stage::Binarize(Binarize::zeros(dim)?));
        }
        QuantizerSpec::Picodes(c) => {
            let name = format!("picodes:{c}");
            let labels = need_labels(state, &name)?;
            let sup = ctx.opts.supervised.clone();
            let rounds = sup.picodes_rounds as u64;
            let x = state.materialize().to_vec();
            ctx.progress(&name, "rounds", 0, rounds);
            let fit = fit_picodes(&x, dim, &labels, c, &sup, seed, &mut |r, e, updated| {
                ctx.progress(&name, "rounds", r as u64, rounds);
                ctx.message(format!(
                    "{name} round {r:>3}: objective {e:.6}, {updated} basis classifiers updated"
                ));
            })?;
            ctx.progress(&name, "rounds", rounds, rounds);
            if let Some(note) = picodes_note(&name, &fit) {
                ctx.report.notes.push(note);
            }
            ctx.report.picodes_objective = fit.objective.clone();
            ctx.report.picodes_updated = fit.updated.clone();
            ctx.report.picodes_stop = Some(fit.stop);
            state.stages.extend(fit.to_stages()?);
        }
        QuantizerSpec::Classemes(c) => {
            let name = format!("classemes:{c}");
            let labels = need_labels(state, &name)?;
            let sup = ctx.opts.supervised.clone();
            let x = state.materialize().to_vec();
            ctx.progress(&name, "steps", 0, 1);
            let fit = fit_classemes(&x, dim, &labels, c, &sup, seed, &mut |step, active| {
                ctx.message(format!(
                    "{name} RFE step {step:>3}: {active} candidate bits left"
                ));
            })?;
            ctx.message(format!(
                "{name}: {} candidates (one-vs-rest + dichotomies), {} RFE steps",
                fit.pool, fit.rfe_steps
            ));
            ctx.progress(&name, "steps", 1, 1);
            state.stages.extend(fit.to_stages()?);
        }
        QuantizerSpec::Sklsh(c) => {
            let sigma = bandwidth(state, derive_seed(seed, 1), ctx)?;
            state
                .stages
                .push(Stage::Sklsh(Sklsh::random(dim, c, sigma, seed)?));
        }
        QuantizerSpec::Pq { m, nbits } => {
            let name = format!("pq:{m}x{nbits}");
            let x = state.materialize().to_vec();
            ctx.progress(&name, "sub-quantisers", 0, m as u64);
            let cancel = &ctx.opts.cancel;
            let t =
                ProductQuantizer::train_rows(&x, dim, m, nbits, &kopts, None, cancel, &mut |s| {
                    ctx.progress(&name, "sub-quantisers", s as u64 + 1, m as u64);
                })?;
            let (_, mse) = reconstruct(&t.pq, &x, dim);
            ctx.message(format!(
                "{name}: reconstruction MSE {mse:.6}, {} empty clusters repaired, {} training points",
                t.splits, t.training_points
            ));
            ctx.report.pq = Some(PqReport {
                mse,
                splits: t.splits,
                training_points: t.training_points,
                final_objective: t
                    .objective
                    .iter()
                    .map(|o| o.last().copied().unwrap_or(0.0))
                    .collect(),
            });
            state.stages.push(Stage::Pq(t.pq));
        }
        QuantizerSpec::Opq { m, nbits } => {
            let name = format!("opq:{m}x{nbits}");
            let oopts = OpqOptions {
                iterations: ctx.opts.opq_iterations,
                final_kmeans_iterations: ctx.opts.kmeans_iterations,
                init: ctx.opts.kmeans_init,
                seed,
                ..OpqOptions::default()
            };
            let x = state.materialize().to_vec();
            let iters = oopts.iterations as u64;
            ctx.progress(&name, "iterations", 0, iters);
            let t = train_opq_rows(&x, dim, m, nbits, &oopts, &ctx.opts.cancel, |it, mse| {
                ctx.progress(&name, "iterations", it as u64 + 1, iters);
                ctx.message(format!("{name} iteration {it:>3}: MSE {mse:.6}"));
            })?;
            ctx.message(format!("{name}: final MSE {:.6}", t.final_mse));
            ctx.report.opq_loss = t.losses;
            ctx.report.pq = Some(PqReport {
                mse: t.final_mse,
                splits: 0,
                training_points: x.len() / dim,
                final_objective: Vec::new(),
            });
            state.stages.push(Stage::Rotation(t.rotation));
            state.stages.push(Stage::Pq(t.pq));
        }
        QuantizerSpec::Float { half } => {
            state.stages.push(Stage::Float(FloatStage::new(dim, half)?));
        }
    }
    Ok(())
}

/// Trains the pipeline `spec` on the rows of `data` (rows = vectors).
pub fn train(
    spec: &PipelineSpec,
    data: ArrayView2<f32>,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport)> {
    let t_all = Instant::now();
    let (n, d) = data.dim();
    if n == 0 || d == 0 {
        return Err(ModelError::Empty {
            what: "train: data".into(),
            rows: n,
            cols: d,
        });
    }
    let cap = opts.sample.unwrap_or(DEFAULT_TRAIN_SAMPLE_CAP);
    if cap == 0 {
        return Err(ModelError::invalid("sample", "must be >= 1 row"));
    }
    let rows = checked_rows("train: data", data, None)?;
    if let Some(StepSpec::Hom(kernel)) = spec.steps.first() {
        let h = Hom::new(d, *kernel, DEFAULT_HOM_ORDER, kernel.default_period())?;
        h.check_non_negative("train: data", rows.as_slice())?;
    }
    if let Some(l) = &opts.labels
        && l.len() != n
    {
        return Err(ModelError::invalid(
            "labels",
            format!("{} labels for {n} training rows", l.len()),
        ));
    }
    if let Some(g) = &opts.groups
        && g.len() != n
    {
        return Err(ModelError::invalid(
            "groups",
            format!("{} group ids for {n} training rows", g.len()),
        ));
    }
    if let Some(v) = &opts.view {
        if v.nrows() != n {
            return Err(ModelError::invalid(
                "view",
                format!("{} rows for {n} training rows", v.nrows()),
            ));
        }
        checked_rows("train: view", v.view(), None)?;
    }
    let view_rows = |idx: Option<&[usize]>| -> Option<(Vec<f32>, usize)> {
        opts.view.as_ref().map(|v| {
            let cols = v.ncols();
            let all: Vec<f32> = v.iter().copied().collect();
            match idx {
                Some(idx) => (gather_rows(&all, cols, idx), cols),
                None => (all, cols),
            }
        })
    };
    let mut sampled: Option<Vec<usize>> = None;
    let (sample, labels): (Cow<[f32]>, Option<Vec<i64>>) = if cap < n {
        let idx = sample_indices(&mut rng(derive_seed(opts.seed, 0)), n, cap);
        let labels = opts
            .labels
            .as_ref()
            .map(|l| idx.iter().map(|&i| l[i]).collect());
        let rows = gather_rows(rows.as_slice(), d, &idx);
        sampled = Some(idx);
        (Cow::Owned(rows), labels)
    } else {
        (
            Cow::Borrowed(rows.as_slice()),
            opts.labels.as_ref().map(|l| l.to_vec()),
        )
    };
    let ctx = Ctx {
        opts,
        report: TrainReport {
            spec: spec.text.clone(),
            canonical: spec.canonical(),
            input_rows: n,
            training_rows: sample.len() / d,
            input_dim: d,
            ..TrainReport::default()
        },
    };
    let view = view_rows(sampled.as_deref());
    let groups = opts.groups.as_ref().map(|g| match sampled.as_deref() {
        Some(idx) => idx.iter().map(|&i| g[i]).collect(),
        None => g.to_vec(),
    });
    let state = State {
        data: sample,
        labels,
        view,
        groups,
        dim: d,
        stages: Vec::new(),
        applied: 0,
    };
    let (model, mut report) = finish_training(state, spec, 0, ctx, t_all)?;
    let used = report
        .cca_rho_choice
        .as_ref()
        .is_some_and(|c| c.validation == RhoValidation::Instances)
        || report
            .sgd_choice
            .as_ref()
            .is_some_and(|c| c.validation == RhoValidation::Instances);
    if opts.groups.is_some() && !used {
        report.notes.push(
            "the instance groups were not used: cca:R (unless its ρ is fixed), metric:R and \
             jscl:R validate on them; no other step does"
                .into(),
        );
    }
    Ok((model, report))
}

/// Continues [`train`] after its first `done` steps were fitted elsewhere on the same sample
/// (NCMML learned from PQ codes decoded per mini-batch, `classify::train_from_index`):
/// `stages` are those steps' stages, `data` the sample through them (row-major, their output
/// width), `labels` the sample's labels, `report` what was recorded so far. The later steps
/// draw the same seeds as in [`train`], so the model equals training on the decoded sample.
pub(crate) fn train_after(
    spec: &PipelineSpec,
    done: usize,
    stages: Vec<Stage>,
    data: Vec<f32>,
    labels: Option<Vec<i64>>,
    report: TrainReport,
    opts: &TrainOptions,
) -> Result<(Model, TrainReport)> {
    let dim = stages.last().map_or(0, Stage::out_dim);
    if dim == 0 || data.is_empty() || !data.len().is_multiple_of(dim) {
        return Err(ModelError::invalid(
            "training data",
            format!("{} values do not form rows of {dim}", data.len()),
        ));
    }
    let applied = stages.len();
    let state = State {
        data: Cow::Owned(data),
        labels,
        view: None,
        groups: None,
        dim,
        stages,
        applied,
    };
    let ctx = Ctx { opts, report };
    finish_training(state, spec, done, ctx, Instant::now())
}

/// Runs the steps of `spec` from `first` on, then its quantiser.
fn finish_training(
    mut state: State,
    spec: &PipelineSpec,
    first: usize,
    mut ctx: Ctx,
    t_all: Instant,
) -> Result<(Model, TrainReport)> {
    let opts = ctx.opts;
    // The step that produced each stage: stages fitted before `first` belong to step
    // `first - 1` (`train_after` fits them as one unit; in practice `first` is 1).
    let mut stage_steps = vec![first.saturating_sub(1); state.stages.len()];
    for (i, &step) in spec.steps.iter().enumerate().skip(first) {
        ctx.check()?;
        let t = Instant::now();
        run_step(
            &mut state,
            step,
            derive_seed(opts.seed, i as u64 + 1),
            &mut ctx,
        )?;
        ctx.report.steps.push(StepTiming {
            step: step.token(),
            seconds: t.elapsed().as_secs_f64(),
        });
        stage_steps.resize(state.stages.len(), i);
    }
    ctx.check()?;
    let t = Instant::now();
    let qseed = derive_seed(opts.seed, spec.steps.len() as u64 + 1);
    run_quantizer(&mut state, spec.quantizer, qseed, &mut ctx)?;
    ctx.report.steps.push(StepTiming {
        step: spec.quantizer.token(),
        seconds: t.elapsed().as_secs_f64(),
    });
    stage_steps.resize(state.stages.len(), spec.steps.len());
    let origin = Origin::new(spec.canonical(), stage_steps, opts.seed)?;
    let model = Model::new(state.stages)?.with_origin(origin)?;
    ctx.report.total_seconds += t_all.elapsed().as_secs_f64();
    Ok((model, ctx.report))
}

impl Model {
    /// Trains a model; see [`train`].
    pub fn train(
        spec: &PipelineSpec,
        data: ArrayView2<f32>,
        opts: &TrainOptions,
    ) -> Result<(Model, TrainReport)> {
        train(spec, data, opts)
    }
}
