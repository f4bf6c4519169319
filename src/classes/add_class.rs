//! New classes at near-zero cost (Mensink et al., TPAMI 2013, §5): a class is one mean — from
//! its images (sum and count), from a given mean, or zero-shot from the hierarchy (eq. 29),
//! combined with a few images by the MAP estimate (eq. 30). No retraining: the class is
//! classifiable as soon as the commit that adds it is published.
//!
//! Everything is checked before anything is staged, so an error leaves the index as it was:
//! empty or duplicate names, ids taken by a class or by row labels, unknown parents, parent
//! cycles among the new classes, dimension mismatches, NaN/Inf, and a class with no images,
//! no mean and no parent.

use std::collections::{HashMap, HashSet};

use ndarray::ArrayView2;

use crate::format::class_table::{NO_PARENT, class_name_problem};
use crate::format::{ClassRecord, ClassTable};

use super::class_ref::{ClassLookup, ClassRef};
use super::error::{ClassError, Result};
use super::zero_shot::{PriorScope, map_record, zero_shot_prior};

/// Where a new class's mean comes from.
#[derive(Debug, Clone, Copy)]
pub enum ClassSource<'a> {
    /// Images (raw descriptors, one per row): count = rows, sum = their sum.
    Images(ArrayView2<'a, f32>),
    /// A given mean: stored as count 1, sum = the mean (so later labelled images weigh it as
    /// one image).
    Mean(&'a [f32]),
    /// No data: zero-shot from the parent (eq. 29); needs a parent.
    None,
}

/// A class to add.
#[derive(Debug, Clone)]
pub struct NewClass<'a> {
    /// The class's name, unique in the class table.
    pub name: String,
    /// The class id; `None` = one past every class id and row label in use.
    pub id: Option<u32>,
    /// The parent: an existing class or another class of the same call.
    pub parent: Option<ClassRef>,
    /// Where its mean comes from.
    pub source: ClassSource<'a>,
    /// m of eq. 30: the weight, in pseudo-images, of the zero-shot prior when the class has a
    /// parent. With images, 0 means the plain sample mean; a zero-shot class needs m ≥ 1 (it
    /// is stored as m pseudo-images of the prior).
    pub prior_weight: u64,
    /// Which ancestors feed the zero-shot prior.
    pub prior_scope: PriorScope,
}

impl<'a> NewClass<'a> {
    /// A class named `name` from `source`, no parent, prior weight [`DEFAULT_PRIOR_WEIGHT`].
    pub fn new(name: &str, source: ClassSource<'a>) -> Self {
        NewClass {
            name: name.to_string(),
            id: None,
            parent: None,
            source,
            prior_weight: DEFAULT_PRIOR_WEIGHT,
            prior_scope: PriorScope::Parent,
        }
    }

    /// The same class under `parent` (a class id, a name, or another class of the same call).
    pub fn with_parent(mut self, parent: impl Into<ClassRef>) -> Self {
        self.parent = Some(parent.into());
        self
    }

    /// The same class with the id `id`.
    pub fn with_id(mut self, id: u32) -> Self {
        self.id = Some(id);
        self
    }

    /// The same class with prior weight `m` (eq. 30).
    pub fn with_prior_weight(mut self, m: u64) -> Self {
        self.prior_weight = m;
        self
    }
}

/// m of eq. 30 when none is given and no validation data chooses one (see docs/classes.md).
pub const DEFAULT_PRIOR_WEIGHT: u64 = 5;

/// How a planned class got its mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeanSource {
    /// Sample mean of n images (no parent, or prior weight 0).
    Images {
        /// The number of images.
        n: u64,
    },
    /// A given mean (count 1).
    GivenMean,
    /// Zero-shot prior (eq. 29) stored as m pseudo-images.
    ZeroShot {
        /// The prior's weight, in pseudo-images.
        m: u64,
    },
    /// MAP mean (eq. 30) of n images and the prior with weight m.
    Map {
        /// The number of images.
        n: u64,
        /// The prior's weight, in pseudo-images.
        m: u64,
    },
    /// n images under a parent that has no class with images yet: the sample mean (eq. 30
    /// with no prior to weigh).
    ImagesNoPrior {
        /// The number of images.
        n: u64,
    },
}

/// A new class as it will be staged.
#[derive(Debug, Clone)]
pub struct PlannedClass {
    /// The class-table record that will be staged.
    pub record: ClassRecord,
    /// How its mean was computed.
    pub source: MeanSource,
}

fn finite_rows(argument: &str, x: ArrayView2<f32>, dim: usize) -> Result<(u64, Vec<f64>)> {
    if x.ncols() != dim {
        return Err(ClassError::Dimension {
            argument: argument.into(),
            expected: dim,
            got: x.ncols(),
        });
    }
    if x.nrows() == 0 {
        return Err(ClassError::invalid(argument, "no rows"));
    }
    let mut sum = vec![0f64; dim];
    for (i, row) in x.rows().into_iter().enumerate() {
        for (j, (s, v)) in sum.iter_mut().zip(row.iter()).enumerate() {
            if !v.is_finite() {
                return Err(ClassError::NonFinite {
                    argument: argument.into(),
                    row: i,
                    col: j,
                    value: *v as f64,
                });
            }
            *s += *v as f64;
        }
    }
    Ok((x.nrows() as u64, sum))
}

/// Plans `new` classes against `table` (the class table as the next commit will have it;
/// `None` when the index has none) for descriptors of `dim` dimensions. `max_label` is the
/// largest row label in use (automatic ids go past it so that existing labelled rows never
/// silently join a new class). Checks everything; returns the records to stage, in call
/// order.
pub fn plan_new_classes(
    table: Option<&ClassTable>,
    dim: usize,
    new: &[NewClass<'_>],
    max_label: Option<u32>,
) -> Result<Vec<PlannedClass>> {
    if new.is_empty() {
        return Err(ClassError::invalid("classes", "no classes given"));
    }
    if let Some(t) = table
        && t.dim as usize != dim
    {
        return Err(ClassError::Dimension {
            argument: "class table".into(),
            expected: dim,
            got: t.dim as usize,
        });
    }
    let lookup = ClassLookup::new(table);
    let batch_names = check_names(new, &lookup)?;
    let ids = assign_ids(table, new, &lookup, max_label)?;
    let parents = resolve_parents(new, &batch_names, &ids, &lookup)?;
    check_no_parent_cycle(new, &parents)?;
    let samples = check_sources(new, &parents, dim)?;
    // Means: each class sees the classes planned before it (so a zero-shot class can sit
    // under a new class); the priors average only classes whose means come from data (see
    // `hierarchy_node`).
    let mut work = table.cloned().unwrap_or_else(|| ClassTable {
        file_id: crate::format::FileId::ZERO,
        dim: dim as u32,
        delta_of: None,
        classes: Vec::new(),
    });
    let mut planned: Vec<Option<PlannedClass>> = vec![None; new.len()];
    for i in planning_order(new, &parents)? {
        let c = &new[i];
        let parent = match parents[i] {
            Parent::None => None,
            Parent::Table(id) => Some(id),
            Parent::Batch(j) => ids.get(j).copied(),
        };
        let (count, sum, source) = plan_mean(
            &work,
            c,
            samples[i].as_ref(),
            needs_prior(new, &parents, i),
            parent,
            dim,
        )?;
        if let Some(j) = sum.iter().position(|v| !v.is_finite()) {
            return Err(ClassError::NonFinite {
                argument: format!("sum of class {:?}", c.name),
                row: 0,
                col: j,
                value: sum[j],
            });
        }
        let record = ClassRecord {
            id: ids[i],
            name: c.name.clone(),
            parent,
            count,
            sum,
            centroids: Vec::new(),
            removed: 0,
        };
        work.classes.push(hierarchy_node(&record, source, dim));
        planned[i] = Some(PlannedClass { record, source });
    }
    planned
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            p.ok_or_else(|| {
                ClassError::invalid("classes", format!("internal: class {i} not planned"))
            })
        })
        .collect()
}

/// Checks the names of a batch: valid, not taken by the table, not repeated in the batch.
/// Returns each name's position in the batch, which is how a parent names a class of the same
/// call.
fn check_names<'n>(
    new: &'n [NewClass<'_>],
    lookup: &ClassLookup<'_>,
) -> Result<HashMap<&'n str, usize>> {
    let mut batch_names: HashMap<&str, usize> = HashMap::new();
    for (i, c) in new.iter().enumerate() {
        if let Some(problem) = class_name_problem(&c.name) {
            return Err(ClassError::invalid("name", problem));
        }
        if let Some(e) = lookup.by_name(&c.name) {
            return Err(ClassError::DuplicateName {
                name: c.name.clone(),
                id: e.id,
            });
        }
        if batch_names.insert(&c.name, i).is_some() {
            return Err(ClassError::invalid(
                "name",
                format!("{:?} is given twice", c.name),
            ));
        }
    }
    Ok(batch_names)
}

/// The id of every class of the batch, in call order: given ones must be free, automatic ones
/// go past every class id and row label in use, so existing labelled rows never silently join
/// a new class.
fn assign_ids(
    table: Option<&ClassTable>,
    new: &[NewClass<'_>],
    lookup: &ClassLookup<'_>,
    max_label: Option<u32>,
) -> Result<Vec<u32>> {
    let mut used: HashSet<u32> =
        table.map_or_else(HashSet::new, |t| t.classes.iter().map(|c| c.id).collect());
    let mut next = used
        .iter()
        .copied()
        .chain(max_label)
        .chain(new.iter().filter_map(|c| c.id))
        .max()
        .map_or(Some(0), |m| m.checked_add(1));
    for c in new {
        if let Some(id) = c.id {
            if id == NO_PARENT {
                return Err(ClassError::invalid(
                    "id",
                    format!("{NO_PARENT} is reserved (it means \"no parent\")"),
                ));
            }
            if !used.insert(id) {
                let detail = match lookup.by_id(id) {
                    Some(e) => format!("class {:?}", e.name),
                    None => "another class of this call".into(),
                };
                return Err(ClassError::DuplicateId { id, detail });
            }
        }
    }
    let mut ids = Vec::with_capacity(new.len());
    for c in new {
        let id = match c.id {
            Some(id) => id,
            None => {
                let id = next
                    .filter(|&n| n != NO_PARENT)
                    .ok_or_else(|| ClassError::invalid("id", "the class id space is exhausted"))?;
                next = id.checked_add(1);
                used.insert(id);
                id
            }
        };
        ids.push(id);
    }
    Ok(ids)
}

/// A new class's parent: none, an existing class, or another class of the same call (its
/// index in the batch).
#[derive(Clone, Copy)]
enum Parent {
    None,
    Table(u32),
    Batch(usize),
}

/// Resolves every class's parent, preferring a class of the same call (by name or by its
/// id) over the table; a class naming itself is the shortest cycle.
fn resolve_parents(
    new: &[NewClass<'_>],
    batch_names: &HashMap<&str, usize>,
    ids: &[u32],
    lookup: &ClassLookup<'_>,
) -> Result<Vec<Parent>> {
    let mut parents = Vec::with_capacity(new.len());
    for (i, c) in new.iter().enumerate() {
        let p = match &c.parent {
            None => Parent::None,
            Some(r) => {
                let in_batch = match r {
                    ClassRef::Name(n) => batch_names.get(n.as_str()).copied(),
                    ClassRef::Id(id) => ids.iter().position(|x| x == id),
                };
                match in_batch {
                    Some(j) if j == i => {
                        return Err(ClassError::ParentCycle {
                            chain: format!("{:?} -> {:?}", c.name, c.name),
                        });
                    }
                    Some(j) => Parent::Batch(j),
                    None => Parent::Table(lookup.resolve(r, "parent")?.id),
                }
            }
        };
        parents.push(p);
    }
    Ok(parents)
}

/// Refuses a parent cycle, naming its classes. Cycles can only run through classes of this
/// call (the table has none), so following `Parent::Batch` links suffices.
fn check_no_parent_cycle(new: &[NewClass<'_>], parents: &[Parent]) -> Result<()> {
    for i in 0..new.len() {
        let mut chain = vec![i];
        let mut cur = i;
        while let Parent::Batch(j) = parents[cur] {
            if chain.contains(&j) {
                chain.push(j);
                let names: Vec<String> = chain
                    .iter()
                    .map(|&k| format!("{:?}", new[k].name))
                    .collect();
                return Err(ClassError::ParentCycle {
                    chain: names.join(" -> "),
                });
            }
            chain.push(j);
            cur = j;
        }
    }
    Ok(())
}

/// A class's sample: its image count and the sum of its images (a given mean is one image).
type Sample = (u64, Vec<f64>);

/// Checks every class's source before any mean is computed, so a bad source anywhere refuses
/// the batch whole. Returns each class's sample (count and sum; a given mean counts as one
/// image), or `None` for a zero-shot class (eq. 29), which needs a parent and m ≥ 1.
fn check_sources(
    new: &[NewClass<'_>],
    parents: &[Parent],
    dim: usize,
) -> Result<Vec<Option<Sample>>> {
    let mut samples: Vec<Option<Sample>> = Vec::with_capacity(new.len());
    for (i, c) in new.iter().enumerate() {
        samples.push(match c.source {
            ClassSource::Images(x) => Some(finite_rows(&format!("images of class {:?}", c.name), x, dim)?),
            ClassSource::Mean(m) => {
                if m.len() != dim {
                    return Err(ClassError::Dimension {
                        argument: format!("mean of class {:?}", c.name),
                        expected: dim,
                        got: m.len(),
                    });
                }
                if let Some(j) = m.iter().position(|v| !v.is_finite()) {
                    return Err(ClassError::NonFinite {
                        argument: format!("mean of class {:?}", c.name),
                        row: 0,
                        col: j,
                        value: m[j] as f64,
                    });
                }
                Some((1, m.iter().map(|&v| v as f64).collect()))
            }
            ClassSource::None => {
                if matches!(parents[i], Parent::None) {
                    return Err(ClassError::NoSource {
                        name: c.name.clone(),
                    });
                }
                if c.prior_weight == 0 {
                    return Err(ClassError::invalid(
                        "prior weight",
                        format!(
                            "class {:?} has no images, so its zero-shot mean needs a prior weight of at least 1",
                            c.name
                        ),
                    ));
                }
                None
            }
        });
    }
    Ok(samples)
}

/// Whether class `i`'s mean involves the zero-shot prior of eq. 29 (zero-shot, or the MAP
/// mean of eq. 30): it has a parent, no given mean, and a prior weight m > 0.
fn needs_prior(new: &[NewClass<'_>], parents: &[Parent], i: usize) -> bool {
    !matches!(parents[i], Parent::None)
        && !matches!(new[i].source, ClassSource::Mean(_))
        && new[i].prior_weight > 0
}

/// The order the means are computed in: classes that need no prior first, then the others
/// parents-first, so a prior (eq. 29) can draw on a parent of the same call.
fn planning_order(new: &[NewClass<'_>], parents: &[Parent]) -> Result<Vec<usize>> {
    let mut order: Vec<usize> = (0..new.len())
        .filter(|&i| !needs_prior(new, parents, i))
        .collect();
    let mut rest: Vec<usize> = (0..new.len())
        .filter(|&i| needs_prior(new, parents, i))
        .collect();
    while !rest.is_empty() {
        let before = rest.len();
        rest.retain(|&i| {
            let ready = match parents[i] {
                Parent::Batch(j) => order.contains(&j),
                _ => true,
            };
            if ready {
                order.push(i);
            }
            !ready
        });
        if rest.len() == before {
            // Unreachable after the cycle check; refuse rather than loop.
            return Err(ClassError::ParentCycle {
                chain: format!("{:?}", new[rest[0]].name),
            });
        }
    }
    Ok(order)
}

/// One class's stored count and sum and how they were made: the sample itself, or with a
/// prior from the working table `work` the MAP mean (eq. 30), the zero-shot mean (eq. 29, m
/// pseudo-images of the prior), or the sample alone when the parent has no class with images
/// to average yet.
fn plan_mean(
    work: &ClassTable,
    c: &NewClass<'_>,
    sample: Option<&Sample>,
    with_prior: bool,
    parent: Option<u32>,
    dim: usize,
) -> Result<(u64, Vec<f64>, MeanSource)> {
    Ok(match (sample, with_prior) {
        (Some((n, s)), false) => (
            *n,
            s.clone(),
            match c.source {
                ClassSource::Mean(_) => MeanSource::GivenMean,
                _ => MeanSource::Images { n: *n },
            },
        ),
        (sample, true) => {
            let p = parent.unwrap_or(NO_PARENT);
            let prior = zero_shot_prior(work, p, c.prior_scope, None, &c.name);
            match (sample, prior) {
                (Some((n, s)), Ok(prior)) => {
                    let (count, sum) = map_record(s, *n, &prior, c.prior_weight)?;
                    (
                        count,
                        sum,
                        MeanSource::Map {
                            n: *n,
                            m: c.prior_weight,
                        },
                    )
                }
                (Some((n, s)), Err(ClassError::EmptyPrior { .. })) => {
                    (*n, s.clone(), MeanSource::ImagesNoPrior { n: *n })
                }
                (None, Ok(prior)) => {
                    let zero = vec![0f64; dim];
                    let (count, sum) = map_record(&zero, 0, &prior, c.prior_weight)?;
                    (count, sum, MeanSource::ZeroShot { m: c.prior_weight })
                }
                (_, Err(e)) => return Err(e),
            }
        }
        (None, false) => {
            return Err(ClassError::NoSource {
                name: c.name.clone(),
            });
        }
    })
}

/// The record a planned class adds to the working table. Eq. 29 averages the means of
/// *training* classes. A class of this call whose mean is made from the prior (zero-shot or
/// MAP) is not one: it joins the working table as a hierarchy node only (count 0, so no
/// mean), or the prior of a later sibling would include it — and depend on the order of the
/// call and the siblings' few images.
fn hierarchy_node(record: &ClassRecord, source: MeanSource, dim: usize) -> ClassRecord {
    match source {
        MeanSource::ZeroShot { .. } | MeanSource::Map { .. } => ClassRecord {
            count: 0,
            sum: vec![0f64; dim],
            ..record.clone()
        },
        _ => record.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FileId;
    use ndarray::Array2;

    /// Parent "p" (no mean) over "a" with mean (1, 0) and "b" with mean (0, 4).
    fn table() -> ClassTable {
        let rec = |id, name: &str, parent, count, sum: Vec<f64>| ClassRecord {
            id,
            name: name.into(),
            parent,
            count,
            sum,
            centroids: Vec::new(),
            removed: 0,
        };
        ClassTable {
            file_id: FileId::ZERO,
            dim: 2,
            delta_of: None,
            classes: vec![
                rec(0, "p", None, 0, vec![0.0, 0.0]),
                rec(1, "a", Some(0), 2, vec![2.0, 0.0]),
                rec(2, "b", Some(0), 1, vec![0.0, 4.0]),
            ],
        }
    }

    fn mean(p: &PlannedClass) -> Vec<f64> {
        p.record
            .sum
            .iter()
            .map(|s| s / p.record.count as f64)
            .collect()
    }

    /// Eq. 29 over training classes only: a MAP sibling planned earlier in the same call must
    /// not enter the zero-shot prior, and the call's order must not matter.
    #[test]
    fn priors_of_one_call_average_training_classes_only_in_any_order() {
        let t = table();
        let few = Array2::from_shape_vec((1, 2), vec![8.0f32, 8.0]).unwrap();
        let map = || {
            NewClass::new("c", ClassSource::Images(few.view()))
                .with_parent("p")
                .with_prior_weight(2)
        };
        let zs = || {
            NewClass::new("z", ClassSource::None)
                .with_parent("p")
                .with_prior_weight(1)
        };
        let prior = [0.5, 2.0]; // ((1, 0) + (0, 4)) / 2
        let forward = plan_new_classes(Some(&t), 2, &[map(), zs()], None).unwrap();
        let backward = plan_new_classes(Some(&t), 2, &[zs(), map()], None).unwrap();
        assert_eq!(forward[1].source, MeanSource::ZeroShot { m: 1 });
        assert_eq!(mean(&forward[1]), prior.to_vec());
        // MAP (eq. 30): (1·(8, 8) + 2·(0.5, 2)) / 3.
        assert_eq!(forward[0].source, MeanSource::Map { n: 1, m: 2 });
        assert_eq!(mean(&forward[0]), vec![3.0, 4.0]);
        assert_eq!(forward[0].record.sum, backward[1].record.sum);
        assert_eq!(forward[1].record.sum, backward[0].record.sum);
    }

    /// A prior-made class still serves as a hierarchy node: a zero-shot class under a
    /// zero-shot class reaches the grandparent with the ancestors scope.
    #[test]
    fn a_prior_made_class_of_the_call_still_links_the_hierarchy() {
        let t = table();
        let mut child = NewClass::new("z2", ClassSource::None)
            .with_parent("z1")
            .with_prior_weight(1);
        child.prior_scope = PriorScope::Ancestors;
        let z1 = NewClass::new("z1", ClassSource::None)
            .with_parent("p")
            .with_prior_weight(3);
        let planned = plan_new_classes(Some(&t), 2, &[child, z1], None).unwrap();
        assert_eq!(planned[1].record.count, 3);
        assert_eq!(mean(&planned[0]), vec![0.5, 2.0]);
        assert_eq!(planned[0].record.parent, Some(planned[1].record.id));
        // With the parent scope there is no class with a mean under "z1": an error.
        let lone = NewClass::new("z2", ClassSource::None)
            .with_parent("z1")
            .with_prior_weight(1);
        let z1 = NewClass::new("z1", ClassSource::None)
            .with_parent("p")
            .with_prior_weight(3);
        assert!(matches!(
            plan_new_classes(Some(&t), 2, &[lone, z1], None),
            Err(ClassError::EmptyPrior { .. })
        ));
    }
}
