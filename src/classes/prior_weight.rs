//! Choosing m, the prior weight of the MAP mean (Mensink et al., TPAMI 2013, eq. 30), on
//! held-out data, as the paper does ("the prior mean obtains a weight m determined on the
//! validation set").
//!
//! Each class of the table that has a parent and enough held-out images plays a new class in
//! turn: `shots` of its held-out images (drawn with the seed) give μ_s, its zero-shot prior μ_z
//! is computed from the other classes (eq. 29, the class itself left out), and for every
//! candidate m its mean is replaced by μ_p; its remaining held-out images are then classified
//! by NCM among all classes. The m with the lowest top-1 error over all these episodes wins;
//! ties go to the smaller m.

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use crate::format::ClassTable;
use crate::model::Model;

use super::class_means::ClassMeans;
use super::error::{ClassError, Result};
use super::zero_shot::{PriorScope, map_record, zero_shot_prior};

/// Candidate values of m tried when none are given.
pub const DEFAULT_PRIOR_CANDIDATES: &[u64] = &[0, 1, 2, 5, 10, 20, 50, 100];

/// The outcome of [`choose_prior_weight`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PriorWeightChoice {
    /// The chosen m.
    pub weight: u64,
    /// (m, top-1 error over every episode's test images), per candidate, ascending m.
    pub top1_error: Vec<(u64, f64)>,
    /// Classes that played a new class.
    pub episodes: usize,
    /// Held-out images classified per candidate.
    pub test_images: usize,
}

/// Chooses m of eq. 30 for new classes with `shots` images each, on held-out images `x`
/// (raw descriptors) labelled with class ids of `table` (`labels`), under `model`.
#[allow(clippy::too_many_arguments)]
pub fn choose_prior_weight(
    model: &Model,
    table: &ClassTable,
    x: ArrayView2<f32>,
    labels: &[u32],
    shots: usize,
    candidates: &[u64],
    scope: PriorScope,
    seed: u64,
) -> Result<PriorWeightChoice> {
    if shots == 0 {
        return Err(ClassError::invalid(
            "shots",
            "must be at least 1 (with no images m does not change a zero-shot mean)",
        ));
    }
    if labels.len() != x.nrows() {
        return Err(ClassError::invalid(
            "labels",
            format!("{} labels for {} rows", labels.len(), x.nrows()),
        ));
    }
    if x.ncols() != table.dim as usize {
        return Err(ClassError::Dimension {
            argument: "validation data".into(),
            expected: table.dim as usize,
            got: x.ncols(),
        });
    }
    let mut cands: Vec<u64> = candidates.to_vec();
    cands.sort_unstable();
    cands.dedup();
    if cands.is_empty() {
        return Err(ClassError::invalid("candidates", "no candidate weights"));
    }
    let d = table.dim as usize;
    let mut errors = vec![0usize; cands.len()];
    let mut episodes = 0usize;
    let mut tested = 0usize;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for (ci, c) in table.classes.iter().enumerate() {
        let Some(parent) = c.parent else { continue };
        let mut rows: Vec<usize> = labels
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l == c.id)
            .map(|(i, _)| i)
            .collect();
        if rows.len() <= shots {
            continue;
        }
        let prior = match zero_shot_prior(table, parent, scope, Some(c.id), &c.name) {
            Ok(p) => p,
            Err(ClassError::EmptyPrior { .. }) => continue,
            Err(e) => return Err(e),
        };
        rows.shuffle(&mut rng);
        let (few, test) = rows.split_at(shots);
        let mut sample = vec![0f64; d];
        for &r in few {
            for (s, v) in sample.iter_mut().zip(x.row(r).iter()) {
                if !v.is_finite() {
                    return Err(ClassError::NonFinite {
                        argument: "validation data".into(),
                        row: r,
                        col: 0,
                        value: *v as f64,
                    });
                }
                *s += *v as f64;
            }
        }
        let mut tx = Array2::<f32>::zeros((test.len(), d));
        for (mut o, &r) in tx.rows_mut().into_iter().zip(test) {
            o.assign(&x.row(r));
        }
        let z = model.project(tx.view())?;
        for (k, &m) in cands.iter().enumerate() {
            let (count, sum) = map_record(&sample, shots as u64, &prior, m)?;
            let mut t = table.clone();
            if let Some(rec) = t.classes.get_mut(ci) {
                rec.count = count;
                rec.sum = sum;
            }
            let means = ClassMeans::build(&t, model)?;
            let res = means.classify_projected(z.view(), 1)?;
            errors[k] += res
                .iter()
                .filter(|r| r.first().map(|s| s.id) != Some(c.id))
                .count();
        }
        episodes += 1;
        tested += test.len();
    }
    if episodes == 0 {
        return Err(ClassError::invalid(
            "validation data",
            format!(
                "no class with a parent, a prior from other classes and more than {shots} held-out images: nothing to choose m on"
            ),
        ));
    }
    let top1_error: Vec<(u64, f64)> = cands
        .iter()
        .zip(&errors)
        .map(|(&m, &e)| (m, e as f64 / tested as f64))
        .collect();
    // Smallest error; the first (smallest m) among ties.
    let best = errors
        .iter()
        .enumerate()
        .min_by_key(|&(k, &e)| (e, k))
        .map_or(0, |(k, _)| k);
    Ok(PriorWeightChoice {
        weight: cands[best],
        top1_error,
        episodes,
        test_images: tested,
    })
}
