//! The held-out instance protocol every supervised projection validates on when the user has
//! instance groups (`TrainOptions::groups`): CCA's ρ (`cca_rho.rs`), and the step size η and
//! the epoch of metric learning and JSCL (`triplet_sgd.rs`).
//!
//! Gordo et al. (CVPR 2012) learn the projection from category labels but use it to find the
//! *same item* again, and tune its free parameters for that task on another instance set
//! (§7.4: UKB's parameters are validated on Holidays and vice versa). The setting that
//! separates categories best is not the one that keeps instances apart (on openclipart,
//! class precision picks CCA's ρ = 0.1 where instance mAP picks 1e3;
//! docs/method-supervised.md), so with groups the score is instance retrieval:
//!
//! - rows sharing a group id (≥ 0) are views of one item (renderings, crops,
//!   near-duplicates); a negative id means no group;
//! - held out: every grouped row when some rows have no group (the groups are then a separate
//!   validation set, as Holidays is for UKB); otherwise a seeded `validation_fraction` of the
//!   groups, whole. Either way at most `max_validation_rows` rows (whole groups, seeded; at
//!   least 2 groups). The setting is learned on the other rows;
//! - score: the held-out rows, projected, each query the others (Euclidean, leave-one-out);
//!   mean average precision with the query's other group members relevant, and the mean
//!   number of them among its 4 nearest, itself included (UKB's 4×recall@4 with 4 views).

use super::super::error::{ModelError, Result};
use super::super::linalg::a_bt_f32;
use super::super::random::{permuted_indices, rng};
use super::options::SupervisedOptions;

/// The held-out rows of instance validation and their groups.
#[derive(Debug, Clone)]
pub(crate) struct HeldOutGroups {
    /// Held-out row numbers, sorted.
    pub rows: Vec<usize>,
    /// The group id of each held-out row.
    pub groups: Vec<i64>,
    /// Distinct held-out groups.
    pub count: usize,
    /// Rows the setting is learned on (every row not held out), sorted.
    pub fit_rows: Vec<usize>,
}

/// What a supervised step's free parameters were validated on: ρ of `cca:R`
/// ([`RhoChoice`](super::cca_rho::RhoChoice)), η and the epoch of `metric:R` / `jscl:R`
/// ([`SgdChoice`](super::triplet_sgd::SgdChoice)). Here, beside the held-out groups, so that the steps
/// that validate share it without importing one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RhoValidation {
    /// Held-out labelled rows, by class precision@k.
    Classes,
    /// Held-out instance groups, by mean average precision.
    Instances,
}

impl HeldOutGroups {
    /// Splits `groups` (one id per row, negative = none) as the module doc says; the same
    /// seed holds out the same groups for every step.
    pub(crate) fn new(groups: &[i64], opts: &SupervisedOptions, seed: u64) -> Result<Self> {
        let mut by_group: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
        for (i, &g) in groups.iter().enumerate().filter(|(_, g)| **g >= 0) {
            by_group.entry(g).or_default().push(i);
        }
        let ids: Vec<&Vec<usize>> = by_group.values().collect();
        if !ids.iter().any(|rows| rows.len() >= 2) {
            return Err(ModelError::invalid(
                "groups",
                "no instance group has 2 rows: validating on instances needs rows that share a \
                 group id (negative ids mean no group)",
            ));
        }
        let ungrouped = groups.iter().any(|&g| g < 0);
        let g = ids.len();
        let want = if ungrouped {
            g
        } else {
            if g < 3 {
                return Err(ModelError::invalid(
                    "groups",
                    format!(
                        "every row has a group and there are {g}: holding some out for \
                         validation needs at least 3 (or rows with no group, id -1, to fit on)"
                    ),
                ));
            }
            ((opts.validation_fraction * g as f64).ceil() as usize).clamp(2, g - 1)
        };
        let mut held = Vec::new();
        let mut taken = 0;
        for k in permuted_indices(&mut rng(seed), g, g) {
            if taken == want {
                break;
            }
            if taken >= 2 && held.len() + ids[k].len() > opts.max_validation_rows {
                continue;
            }
            held.extend_from_slice(ids[k]);
            taken += 1;
        }
        held.sort_unstable();
        let mut is_held = vec![false; groups.len()];
        for &i in &held {
            is_held[i] = true;
        }
        Ok(HeldOutGroups {
            groups: held.iter().map(|&i| groups[i]).collect(),
            rows: held,
            count: taken,
            fit_rows: (0..groups.len()).filter(|&i| !is_held[i]).collect(),
        })
    }

    /// (mAP, mean same-group rows among the 4 nearest) of the held-out rows projected to
    /// `p` (`rows.len() × r`, row-major, in the order of `rows`).
    pub(crate) fn scores(&self, p: &[f32], r: usize) -> (f64, f64) {
        instance_scores(p, r, &self.groups)
    }
}

/// Mean average precision and mean same-group count among the 4 nearest (itself included)
/// of the projected rows `p` (`n × r`, row-major) querying each other, leave-one-out,
/// Euclidean; only rows with another row of their group are queries.
fn instance_scores(p: &[f32], r: usize, groups: &[i64]) -> (f64, f64) {
    let n = groups.len();
    let norms: Vec<f64> = p
        .chunks_exact(r)
        .map(|v| v.iter().map(|a| (*a as f64).powi(2)).sum())
        .collect();
    let g = a_bt_f32(p, p, n, r, n, faer::Par::Seq);
    let (mut ap_sum, mut top4_sum, mut queries) = (0f64, 0f64, 0usize);
    let mut dist: Vec<(f64, usize)> = Vec::with_capacity(n);
    for i in 0..n {
        let relevant = (0..n).filter(|&j| j != i && groups[j] == groups[i]).count();
        if relevant == 0 {
            continue;
        }
        dist.clear();
        dist.extend(
            (0..n)
                .filter(|&j| j != i)
                .map(|j| (norms[j] - 2.0 * g[i * n + j] as f64, j)),
        );
        dist.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let (mut found, mut ap) = (0usize, 0f64);
        for (rank, (_, j)) in dist.iter().enumerate() {
            if groups[*j] == groups[i] {
                found += 1;
                ap += found as f64 / (rank + 1) as f64;
                if found == relevant {
                    break;
                }
            }
        }
        ap_sum += ap / relevant as f64;
        top4_sum += 1.0
            + dist[..3.min(dist.len())]
                .iter()
                .filter(|(_, j)| groups[*j] == groups[i])
                .count() as f64;
        queries += 1;
    }
    let q = queries.max(1) as f64;
    (ap_sum / q, top4_sum / q)
}
