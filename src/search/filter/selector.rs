//! The id selector: the set of row ids a search may return (FAISS's `IDSelectorBatch`;
//! docs/filtering.md, first section).

/// A set of row ids (FAISS's `IDSelectorBatch`): a search returns only rows whose id it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdSelector {
    ids: Vec<u64>,
}

impl IdSelector {
    /// The selector of these ids (any order, repeats allowed).
    pub fn new(ids: impl IntoIterator<Item = u64>) -> IdSelector {
        let mut ids: Vec<u64> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        IdSelector { ids }
    }

    /// The ids, ascending, without repeats.
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// Whether `id` is selected.
    pub fn contains(&self, id: u64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }
}
