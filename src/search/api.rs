//! The search entry points, as methods of [`Snapshot`]: k-NN search (with the snapshot's
//! stored vectors, or vectors kept elsewhere, for re-ranking), radius lookup, the IVF probe
//! sets and list coverage. Each uses the snapshot's own model ([`Snapshot::model`]). To
//! search an [`crate::storage::Index`], search its newest committed version:
//! `index.snapshot().search(…)`.

use ndarray::ArrayView2;

use crate::classes::ClassRef;
use crate::storage::Snapshot;

use super::error::invalid;
use super::filter::RowFilter;
use super::{
    Hit, ListCoverage, SearchError, SearchParams, VectorSource, list_coverage, probe,
    radius_snapshot, search_snapshot,
};

/// The list id no row is filed under (`u32::MAX`: a row without a list), never a class.
const NO_LIST: u32 = u32::MAX;

impl Snapshot {
    /// The `params.k` best live rows of this snapshot for each query row (raw descriptors of
    /// the model's input dimension), best first, ties by smaller id. Re-ranking and the exact
    /// modes read the vectors stored in the index and fail with [`SearchError::NoVectors`]
    /// when some rows have none.
    pub fn search(
        &self,
        queries: ArrayView2<f32>,
        params: &SearchParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_snapshot(self, queries, params, None)
    }

    /// [`Snapshot::search`] reading the full vectors for re-ranking and the exact modes from
    /// `vectors` (kept outside the index, e.g. [`super::MemoryVectors`]) instead of the index.
    pub fn search_with_vectors(
        &self,
        queries: ArrayView2<f32>,
        params: &SearchParams,
        vectors: &dyn VectorSource,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_snapshot(self, queries, params, Some(vectors))
    }

    /// Every live row within Hamming `radius` (≤ 2) of each query's code, sorted by distance
    /// then id: a hash-table lookup for binary codes of at most 32 bits (ITQ §4.5). Builds the
    /// table on each call; keep a [`super::HammingTable`] to look up many batches.
    pub fn search_radius(
        &self,
        queries: ArrayView2<f32>,
        radius: u32,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        radius_snapshot(self, queries, radius, None)
    }

    /// [`Snapshot::search_radius`] over the rows `filter` passes only (the table holds only
    /// them, so the result is the unfiltered one without the rows the filter rejects).
    pub fn search_radius_filtered(
        &self,
        queries: ArrayView2<f32>,
        radius: u32,
        filter: &RowFilter,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        radius_snapshot(self, queries, radius, Some(filter))
    }

    /// The ids of the `nprobe` inverted lists a search with [`SearchParams::nprobe`] scans for
    /// each query (the classes of the nearest projected class means), ascending per query.
    pub fn probe_lists(
        &self,
        queries: ArrayView2<f32>,
        nprobe: usize,
    ) -> Result<Vec<Vec<u32>>, SearchError> {
        probe::probe_lists(self, queries, nprobe)
    }

    /// The list ids of `classes` for a list-restricted search ([`SearchParams::lists`]): the
    /// one place a front end's class names become list ids (the CLI's `--classes`, Python's
    /// `classes=`). A [`ClassRef::Name`] is a class name of this version's class table, or
    /// else a decimal class id; a [`ClassRef::Id`] an id. With a class table an id must be one
    /// of its classes; without one (rows filed under lists by label alone) classes are given
    /// by id, unchecked. A class that cannot be resolved is [`SearchError::InvalidArgument`]
    /// for `classes`, its detail starting with the class as given.
    pub fn class_ids(&self, classes: &[ClassRef]) -> Result<Vec<u32>, SearchError> {
        let table = self.classes();
        let known = |id: u32| table.is_none_or(|t| t.classes.iter().any(|c| c.id == id));
        classes
            .iter()
            .map(|class| {
                let (item, id) = match class {
                    ClassRef::Name(name) => {
                        if let Some(c) =
                            table.and_then(|t| t.classes.iter().find(|c| c.name == *name))
                        {
                            return Ok(c.id);
                        }
                        match name.parse::<u32>() {
                            Ok(id) if id != NO_LIST => (name.clone(), id),
                            _ => {
                                return Err(invalid(
                                    "classes",
                                    format!(
                                        "{name}: {}",
                                        if table.is_some() {
                                            "no class has this name (and it is not a class id)"
                                        } else {
                                            "the index has no class table, so classes are \
                                             given by id"
                                        }
                                    ),
                                ));
                            }
                        }
                    }
                    ClassRef::Id(id) => (id.to_string(), *id),
                };
                if id == NO_LIST || !known(id) {
                    return Err(invalid(
                        "classes",
                        format!("{item}: no class has this name or id"),
                    ));
                }
                Ok(id)
            })
            .collect()
    }

    /// How many live rows have a list id and how many have none (a list-restricted search
    /// scans the latter whatever lists it names; see [`super::list_coverage`]).
    pub fn list_coverage(&self) -> Result<ListCoverage, SearchError> {
        Ok(list_coverage(self)?)
    }
}
