//! The search entry points, as methods of [`Snapshot`]: k-NN search (with the snapshot's
//! stored vectors, or vectors kept elsewhere, for re-ranking), radius lookup, the IVF probe
//! sets and list coverage. Each uses the snapshot's own model ([`Snapshot::model`]). To
//! search an [`crate::storage::Index`], search its newest committed version:
//! `index.snapshot().search(…)`.

use ndarray::ArrayView2;

use crate::storage::Snapshot;

use super::filter::RowFilter;
use super::{
    Hit, ListCoverage, SearchError, SearchParams, VectorSource, list_coverage, probe,
    radius_snapshot, search_snapshot,
};

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

    /// How many live rows have a list id and how many have none (a list-restricted search
    /// scans the latter whatever lists it names; see [`super::list_coverage`]).
    pub fn list_coverage(&self) -> Result<ListCoverage, SearchError> {
        Ok(list_coverage(self)?)
    }
}
