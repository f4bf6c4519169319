//! Where full-precision vectors come from, for re-ranking and exact search.
//!
//! [`VectorSource`] is the seam: the search asks for the vector of one row (identified by its
//! block in [`Snapshot::blocks`] order, its row in the block, and its id) or for a block's
//! whole column. [`SnapshotVectors`] serves the vectors a snapshot's segments store (the
//! `vectors` section, f32 or f16, FORMAT.md §3); [`MemoryVectors`] serves vectors held in memory
//! by id (tests, or an application that keeps its descriptors elsewhere).

use std::collections::HashMap;

use crate::format::VectorsView;
use crate::scan::DenseValues;
use crate::storage::Snapshot;

use super::error::{SearchError, invalid};

/// One stored row: its block (position in [`Snapshot::blocks`]), row within the block, and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef {
    pub block: usize,
    pub row: usize,
    pub id: u64,
}

/// Full-precision vectors of the rows of a snapshot.
pub trait VectorSource: Sync {
    /// Values per vector.
    fn dim(&self) -> usize;
    /// Writes the vector of `at` into `out` (`dim()` values); `Ok(false)` when that row has no
    /// stored vector.
    fn vector(&self, at: RowRef, out: &mut [f32]) -> Result<bool, SearchError>;
    /// Block `block`'s whole column (`dim()` values per row, rows in block order), when the
    /// source holds one: exact search then runs the dense kernels over it. Default: none, rows
    /// are fetched one at a time.
    fn column(&self, _block: usize) -> Option<DenseValues<'_>> {
        None
    }
}

/// The vectors a snapshot's segments store, decoded once (zstd sections are decompressed when
/// this is built; plain sections are borrowed from the mapping).
pub struct SnapshotVectors<'a> {
    dim: usize,
    columns: Vec<Option<VectorsView<'a>>>,
}

impl<'a> SnapshotVectors<'a> {
    /// Every block of `snapshot` that holds rows must store vectors, all of one dimension;
    /// otherwise [`SearchError::NoVectors`] names the first block without them.
    pub fn new(snapshot: &'a Snapshot) -> Result<SnapshotVectors<'a>, SearchError> {
        let any = snapshot
            .blocks()
            .any(|b| b.segment().is_some_and(|s| s.meta().vectors.is_some()));
        if !any {
            return Err(SearchError::NoVectors {
                detail: format!(
                    "the index in {} stores no vectors; re-ranking and the exact modes need \
                     vectors stored when rows are added",
                    snapshot.dir().display()
                ),
            });
        }
        let mut dim = None;
        let mut columns = Vec::new();
        for block in snapshot.blocks() {
            let seg = block.segment();
            let meta = seg.and_then(|s| s.meta().vectors);
            let view = match (seg, meta) {
                (Some(s), Some((_, d))) => {
                    let d = d as usize;
                    match dim {
                        None => dim = Some(d),
                        Some(prev) if prev != d => {
                            return Err(invalid(
                                "index",
                                format!(
                                    "{} stores {d}-D vectors, an earlier segment {prev}-D",
                                    s.path().display()
                                ),
                            ));
                        }
                        Some(_) => {}
                    }
                    s.vectors()?
                }
                _ => None,
            };
            if view.is_none() && block.rows() > 0 {
                return Err(SearchError::NoVectors {
                    detail: match seg {
                        Some(s) => format!(
                            "segment {} of the index in {} stores none (rows added without \
                             vectors)",
                            s.path().display(),
                            snapshot.dir().display()
                        ),
                        None => format!(
                            "{} rows in the active log of the index in {} have none",
                            block.rows(),
                            snapshot.dir().display()
                        ),
                    },
                });
            }
            columns.push(view);
        }
        Ok(SnapshotVectors {
            dim: dim.unwrap_or(0),
            columns,
        })
    }
}

impl VectorSource for SnapshotVectors<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn vector(&self, at: RowRef, out: &mut [f32]) -> Result<bool, SearchError> {
        let d = self.dim;
        let range = at.row * d..(at.row + 1) * d;
        let ok = match self.columns.get(at.block) {
            Some(Some(VectorsView::F32(v))) => v.get(range).map(|s| out.copy_from_slice(s)),
            Some(Some(VectorsView::F16(v))) => v.get(range).map(|s| {
                for (o, x) in out.iter_mut().zip(s) {
                    *o = x.to_f32();
                }
            }),
            _ => None,
        };
        Ok(ok.is_some())
    }

    fn column(&self, block: usize) -> Option<DenseValues<'_>> {
        match self.columns.get(block)? {
            Some(VectorsView::F32(v)) => Some(DenseValues::F32(v)),
            Some(VectorsView::F16(v)) => Some(DenseValues::F16(v)),
            None => None,
        }
    }
}

/// Vectors held in memory, looked up by row id.
#[derive(Debug, Clone)]
pub struct MemoryVectors {
    dim: usize,
    rows: HashMap<u64, usize>,
    data: Vec<f32>,
}

impl MemoryVectors {
    /// `data` holds one `dim`-value vector per id, row-major. Ids must be unique and values
    /// finite.
    pub fn new(dim: usize, ids: &[u64], data: Vec<f32>) -> Result<MemoryVectors, SearchError> {
        if dim == 0 {
            return Err(invalid("dim", "must be at least 1"));
        }
        if data.len() != ids.len() * dim {
            return Err(invalid(
                "data",
                format!(
                    "{} values for {} ids of {dim} dimensions",
                    data.len(),
                    ids.len()
                ),
            ));
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(invalid(
                "data",
                format!("row {} column {} is not finite", i / dim, i % dim),
            ));
        }
        let mut rows = HashMap::with_capacity(ids.len());
        for (r, &id) in ids.iter().enumerate() {
            if rows.insert(id, r).is_some() {
                return Err(invalid("ids", format!("id {id} appears twice")));
            }
        }
        Ok(MemoryVectors { dim, rows, data })
    }
}

impl VectorSource for MemoryVectors {
    fn dim(&self) -> usize {
        self.dim
    }

    fn vector(&self, at: RowRef, out: &mut [f32]) -> Result<bool, SearchError> {
        let Some(&r) = self.rows.get(&at.id) else {
            return Ok(false);
        };
        match self.data.get(r * self.dim..(r + 1) * self.dim) {
            Some(s) => {
                out.copy_from_slice(s);
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_vectors_by_id() {
        let m = MemoryVectors::new(2, &[7, 3], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        let mut out = [0.0f32; 2];
        let at = |id| RowRef {
            block: 0,
            row: 0,
            id,
        };
        assert!(m.vector(at(3), &mut out).unwrap());
        assert_eq!(out, [3.0, 4.0]);
        assert!(!m.vector(at(9), &mut out).unwrap());
        assert!(MemoryVectors::new(2, &[1, 1], vec![0.0; 4]).is_err());
        assert!(MemoryVectors::new(2, &[1], vec![0.0; 3]).is_err());
        assert!(MemoryVectors::new(1, &[1], vec![f32::NAN]).is_err());
        assert!(MemoryVectors::new(0, &[], vec![]).is_err());
    }
}
