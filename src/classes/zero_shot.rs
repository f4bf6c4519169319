//! Zero-shot class means from the hierarchy and their MAP combination with a few images
//! (Mensink et al., TPAMI 2013, §5 "Accuracy as function of sample size of novel classes",
//! eq. 29-30).
//!
//! Eq. 29: the prior mean of a new class z is μ_z = (1/|A_z|) Σ_{a ∈ A_z} μ_a over its
//! ancestors A_z, where the mean of an internal node a is the average of the means of all its
//! descendant classes that have images. [`PriorScope::Parent`] (codedb's default) takes A_z =
//! {parent}: the prior is the average of the class means under the parent — with a one-level
//! hierarchy, the mean of the siblings' means. [`PriorScope::Ancestors`] takes every ancestor,
//! as in the paper's ImageNet experiment.
//!
//! The paper's μ_a averages the *training* classes under a (its 800 classes, never the held-out
//! ones). Here that is every class of the table with a mean (count > 0), unweighted by count —
//! the parent's own mean, if it has one, is not among them. New classes of one
//! [`plan_new_classes`](super::add_class::plan_new_classes) call whose means come from the prior do not
//! feed each other's priors (so a call's result does not depend on its order); a class
//! committed earlier counts whatever made its mean, since the table does not record it.
//!
//! Eq. 30: with n images of sample mean μ_s, the MAP mean is μ_p = (n μ_s + m μ_z)/(n + m).
//! codedb stores it in the class table's own terms — count n + m and sum n μ_s + m μ_z — i.e.
//! the prior counts as m pseudo-images. Because of that, images added to the class later (a
//! labelled add) keep the stored mean equal to eq. 30 with the grown n, with no extra state.
//! The count shown for such a class includes the m pseudo-images.

use std::collections::{HashMap, HashSet};

use crate::format::{ClassRecord, ClassTable};

use super::error::{ClassError, Result};

/// Which ancestors feed the zero-shot prior (eq. 29).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriorScope {
    /// A_z = {parent}: the average of the class means under the parent.
    #[default]
    Parent,
    /// A_z = every ancestor (parent, grandparent, … root), each the average of the class
    /// means under it; ancestors with no class with images under them are skipped.
    Ancestors,
}

impl PriorScope {
    /// Parses `parent` or `ancestors`; `None` for any other name.
    pub fn parse(s: &str) -> Option<PriorScope> {
        match s {
            "parent" => Some(PriorScope::Parent),
            "ancestors" => Some(PriorScope::Ancestors),
            _ => None,
        }
    }
}

/// The mean sum / count of a record, in f64.
pub fn record_mean(c: &ClassRecord) -> Option<Vec<f64>> {
    (c.count > 0).then(|| c.sum.iter().map(|s| s / c.count as f64).collect())
}

/// Mean of the means of the classes strictly under `node` that have images, leaving out
/// `exclude` (a class being re-estimated). `None` when there is none.
fn subtree_mean(
    table: &ClassTable,
    children: &HashMap<u32, Vec<usize>>,
    node: u32,
    exclude: Option<u32>,
) -> Option<Vec<f64>> {
    let mut acc = vec![0f64; table.dim as usize];
    let mut k = 0usize;
    let mut stack = vec![node];
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue; // a malformed table with a loop cannot hang this walk
        }
        for &i in children.get(&n).map_or(&[][..], |v| &v[..]) {
            let Some(c) = table.classes.get(i) else {
                continue;
            };
            stack.push(c.id);
            if Some(c.id) == exclude {
                continue;
            }
            if let Some(m) = record_mean(c) {
                for (a, v) in acc.iter_mut().zip(&m) {
                    *a += v;
                }
                k += 1;
            }
        }
    }
    (k > 0).then(|| acc.iter().map(|a| a / k as f64).collect())
}

/// The zero-shot prior mean μ_z (eq. 29) of a new class under `parent`, over the classes of
/// `table`, leaving out class `exclude` (for validation). Errors with `EmptyPrior` (naming
/// `name`) when no class under the parent — or, for [`PriorScope::Ancestors`], under any
/// ancestor — has images.
pub fn zero_shot_prior(
    table: &ClassTable,
    parent: u32,
    scope: PriorScope,
    exclude: Option<u32>,
    name: &str,
) -> Result<Vec<f64>> {
    let mut children: HashMap<u32, Vec<usize>> = HashMap::new();
    let mut parent_of: HashMap<u32, Option<u32>> = HashMap::new();
    for (i, c) in table.classes.iter().enumerate() {
        parent_of.insert(c.id, c.parent);
        if let Some(p) = c.parent {
            children.entry(p).or_default().push(i);
        }
    }
    let parent_name = table
        .classes
        .iter()
        .find(|c| c.id == parent)
        .map_or_else(|| parent.to_string(), |c| c.name.clone());
    let empty = || ClassError::EmptyPrior {
        name: name.to_string(),
        parent: parent_name.clone(),
    };
    let ancestors: Vec<u32> = match scope {
        PriorScope::Parent => vec![parent],
        PriorScope::Ancestors => {
            let mut chain = Vec::new();
            let mut cur = Some(parent);
            let mut seen = HashSet::new();
            while let Some(a) = cur {
                if !seen.insert(a) {
                    break;
                }
                chain.push(a);
                cur = parent_of.get(&a).copied().flatten();
            }
            chain
        }
    };
    let mut acc = vec![0f64; table.dim as usize];
    let mut k = 0usize;
    for a in ancestors {
        if let Some(m) = subtree_mean(table, &children, a, exclude) {
            for (s, v) in acc.iter_mut().zip(&m) {
                *s += v;
            }
            k += 1;
        } else if scope == PriorScope::Parent {
            return Err(empty());
        }
    }
    if k == 0 {
        return Err(empty());
    }
    Ok(acc.iter().map(|s| s / k as f64).collect())
}

/// Eq. 30 in class-table terms: from the sum of n images and the prior μ_z with weight m,
/// the record's (count, sum) = (n + m, sum + m μ_z), whose mean is (n μ_s + m μ_z)/(n + m).
pub fn map_record(sample_sum: &[f64], n: u64, prior: &[f64], m: u64) -> Result<(u64, Vec<f64>)> {
    if sample_sum.len() != prior.len() {
        return Err(ClassError::Dimension {
            argument: "prior".into(),
            expected: sample_sum.len(),
            got: prior.len(),
        });
    }
    let count = n
        .checked_add(m)
        .ok_or_else(|| ClassError::invalid("prior weight", "count overflows"))?;
    let sum = sample_sum
        .iter()
        .zip(prior)
        .map(|(s, p)| s + m as f64 * p)
        .collect();
    Ok((count, sum))
}

/// Eq. 30 as written: μ_p = (n μ_s + m μ_z)/(n + m).
pub fn map_mean(sample_mean: &[f64], n: u64, prior: &[f64], m: u64) -> Result<Vec<f64>> {
    if n.checked_add(m).is_none_or(|t| t == 0) {
        return Err(ClassError::invalid(
            "prior weight",
            "n + m must be in 1..2^64: no mean otherwise",
        ));
    }
    if sample_mean.len() != prior.len() {
        return Err(ClassError::Dimension {
            argument: "prior".into(),
            expected: sample_mean.len(),
            got: prior.len(),
        });
    }
    let (n, m) = (n as f64, m as f64);
    Ok(sample_mean
        .iter()
        .zip(prior)
        .map(|(s, p)| (n * s + m * p) / (n + m))
        .collect())
}
