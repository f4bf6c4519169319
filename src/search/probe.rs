//! IVF with class means as the coarse quantiser (`--nprobe n`).
//!
//! An inverted-file index (Jégou et al., TPAMI 2011, §III-A) scans, per query, only the lists
//! of the `n` coarse centroids nearest the query. codedb's lists are classes, so its coarse
//! centroids are the projected class means Wμ_c of the class table, and "nearest" is the NCM
//! rule of Mensink et al. (TPAMI 2013, eq. 1, scored as the bias form of eq. 9-11 by
//! [`ClassMeans::classify_projected`]): the query is projected with the index's model and the
//! `n` classes with the best scores are probed, ties by smaller class id.
//!
//! Queries with the same probe set are scanned together (one batched kernel call per block and
//! list); the result of each query is exactly the exhaustive search restricted to its probed
//! lists (plus the rows with no list, see [`super::list_scope`]). With `n` at least the number
//! of classes with a mean, nothing is restricted and the result is the full search (rows whose
//! list id is not a class with a mean are then reached too).
//!
//! An index whose model has a coarse quantiser (`ivf:K`) probes that quantiser's k-means
//! centroids instead (see [`super::ivf_scan`]); its class table, if any, still serves NCM
//! classification but not list probing.

use std::collections::BTreeMap;

use ndarray::ArrayView2;

use crate::storage::Snapshot;

use super::error::{SearchError, invalid};

/// Which queries scan which lists: `(lists, query rows)`, `lists = None` meaning every row.
pub(crate) type ProbeGroups = Vec<(Option<Vec<u32>>, Vec<usize>)>;

/// The probe groups of `queries` for `nprobe` lists each, from the class means of `snapshot`'s
/// class table.
pub(crate) fn probe_groups(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    nprobe: usize,
) -> Result<ProbeGroups, SearchError> {
    let all: Vec<usize> = (0..queries.nrows()).collect();
    if snapshot.model()?.ivf().is_some() {
        // The model's k-means cells (exact modes over an IVF index).
        let probes = super::ivf_scan::ivf_probe_lists(snapshot.model()?, queries, nprobe)?;
        let mut groups: BTreeMap<Vec<u32>, Vec<usize>> = BTreeMap::new();
        for (q, lists) in probes.into_iter().enumerate() {
            groups.entry(lists).or_default().push(q);
        }
        return Ok(groups.into_iter().map(|(l, q)| (Some(l), q)).collect());
    }
    let means = coarse_quantizer(snapshot, nprobe)?;
    if nprobe >= means.len() {
        return Ok(vec![(None, all)]);
    }
    let probes = probe_lists(snapshot, queries, nprobe)?;
    let mut groups: BTreeMap<Vec<u32>, Vec<usize>> = BTreeMap::new();
    for (q, lists) in probes.into_iter().enumerate() {
        groups.entry(lists).or_default().push(q);
    }
    Ok(groups.into_iter().map(|(l, q)| (Some(l), q)).collect())
}

/// The probe groups of text queries (`u = Wᵀq` rows, see [`super::text`]): per query, the
/// `nprobe` classes whose projected mean scores best by the text score `uᵀWμ_c` (the class's
/// mean image as the coarse centroid; an inner product, so larger is better), ties by smaller
/// class id.
pub(crate) fn probe_groups_ip(
    snapshot: &Snapshot,
    u: ArrayView2<f32>,
    nprobe: usize,
) -> Result<ProbeGroups, SearchError> {
    let means = coarse_quantizer(snapshot, nprobe)?;
    if nprobe >= means.len() {
        return Ok(vec![(None, (0..u.nrows()).collect())]);
    }
    let mut groups: BTreeMap<Vec<u32>, Vec<usize>> = BTreeMap::new();
    for (q, row) in u.rows().into_iter().enumerate() {
        let mut scored: Vec<(f32, u32)> = means
            .ids()
            .iter()
            .filter_map(|&id| {
                let m = means.projected_mean(id)?;
                Some((row.iter().zip(m).map(|(a, b)| a * b).sum::<f32>(), id))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut ids: Vec<u32> = scored.into_iter().take(nprobe).map(|(_, id)| id).collect();
        ids.sort_unstable();
        groups.entry(ids).or_default().push(q);
    }
    Ok(groups.into_iter().map(|(l, q)| (Some(l), q)).collect())
}

/// The snapshot's class means, after checking `nprobe`.
fn coarse_quantizer(
    snapshot: &Snapshot,
    nprobe: usize,
) -> Result<&crate::classes::ClassMeans, SearchError> {
    if nprobe == 0 {
        return Err(invalid("nprobe", "must be at least 1"));
    }
    snapshot
        .class_means()
        .map_err(|source| SearchError::NoClassMeans { source })
}

/// The ids of the `nprobe` classes nearest each query (NCM in the model's projected space),
/// sorted ascending per query ([`Snapshot::probe_lists`]).
pub(crate) fn probe_lists(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    nprobe: usize,
) -> Result<Vec<Vec<u32>>, SearchError> {
    if snapshot.model()?.ivf().is_some() {
        return super::ivf_scan::ivf_probe_lists(snapshot.model()?, queries, nprobe);
    }
    let means = coarse_quantizer(snapshot, nprobe)?;
    let z = snapshot.model()?.project(queries)?;
    let ranked = means
        .classify_projected(z.view(), nprobe)
        .map_err(|source| SearchError::Probe { source })?;
    Ok(ranked
        .into_iter()
        .map(|l| {
            let mut ids: Vec<u32> = l.into_iter().map(|c| c.id).collect();
            ids.sort_unstable();
            ids
        })
        .collect())
}
