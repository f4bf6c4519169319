//! The embedded API's search entry points as methods: [`Snapshot::search`],
//! [`Index::search`] and their radius-lookup twins (thin wrappers over [`super::search_with`]
//! and [`super::search_radius`]).

use ndarray::ArrayView2;

use crate::model::Model;
use crate::storage::{Index, Snapshot};

use super::{
    Hit, ListCoverage, SearchError, SearchParams, list_coverage, search_radius, search_with,
};

impl Snapshot {
    /// The best live rows of this snapshot for each query row (see [`super::search_with`]).
    /// `model` must be the index's model: `Model::from_model_file(snapshot.model())`.
    pub fn search(
        &self,
        model: &Model,
        queries: ArrayView2<f32>,
        params: &SearchParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_with(self, model, queries, params)
    }

    /// How many live rows have a list id and how many have none (a list-restricted search
    /// scans the latter whatever lists it names; see [`super::list_coverage`]).
    pub fn list_coverage(&self) -> ListCoverage {
        list_coverage(self)
    }

    /// Every live row within Hamming `radius` (≤ 2) of each query's code (binary codes of at
    /// most 32 bits; see [`super::search_radius`]).
    pub fn search_radius(
        &self,
        model: &Model,
        queries: ArrayView2<f32>,
        radius: u32,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        search_radius(self, model, queries, radius)
    }
}

impl Index {
    /// Searches the newest committed version ([`Index::snapshot`]); uncommitted rows are not
    /// seen.
    pub fn search(
        &self,
        model: &Model,
        queries: ArrayView2<f32>,
        params: &SearchParams,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        self.snapshot().search(model, queries, params)
    }

    /// [`Snapshot::search_radius`] on the newest committed version.
    pub fn search_radius(
        &self,
        model: &Model,
        queries: ArrayView2<f32>,
        radius: u32,
    ) -> Result<Vec<Vec<Hit>>, SearchError> {
        self.snapshot().search_radius(model, queries, radius)
    }
}
