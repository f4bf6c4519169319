//! Where full-precision vectors come from, for re-ranking and exact search.
//!
//! [`VectorSource`] is the seam: the search asks for the vector of one row (identified by its
//! block in [`Snapshot::blocks`] order, its row in the block, and its id) or for a block's
//! whole column. [`SnapshotVectors`] serves the vectors a snapshot stores (segments' `vectors`
//! sections and active-log batches, f32 or f16, FORMAT.md §3 and §10); [`MemoryVectors`] serves vectors held in memory
//! by id (tests, or an application that keeps its descriptors elsewhere).

use std::collections::HashMap;
use std::ops::Range;

use crate::format::VectorSlice;
use crate::scan::dense::prefetch;
use crate::scan::{DenseValues, Dispatch, Metric, dense_f32, dense_f32_f16};
use crate::storage::{Block, Snapshot};

use super::error::{SearchError, invalid};

/// One stored row: its block (position in [`Snapshot::blocks`]), row within the block, and id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef {
    /// The block's position in [`Snapshot::blocks`].
    pub block: usize,
    /// The row within the block.
    pub row: usize,
    /// The row's id.
    pub id: u64,
}

/// Full-precision vectors of the rows of a snapshot.
pub trait VectorSource: Sync {
    /// Values per vector.
    fn dim(&self) -> usize;
    /// Writes the vector of `at` into `out` (`dim()` values); `Ok(false)` when that row has no
    /// stored vector.
    fn vector(&self, at: RowRef, out: &mut [f32]) -> Result<bool, SearchError>;
    /// Rows `rows` of block `block`'s column (`dim()` values per row, rows in block order),
    /// when the source holds one: exact search then runs the dense kernels over it. Default:
    /// none, rows are fetched one at a time.
    fn column(
        &self,
        _block: usize,
        _rows: Range<usize>,
    ) -> Result<Option<DenseValues<'_>>, SearchError> {
        Ok(None)
    }
    /// Hints that the vector of `at` is about to be read (default: nothing). Sources that
    /// hold rows in memory start loading them, so re-ranking overlaps the next candidate's
    /// memory reads with the current one's arithmetic.
    fn prefetch(&self, _at: RowRef) {}
    /// `metric(query, vector of at)` by the dense kernels; `Ok(None)` when that row has no
    /// stored vector. `buf` holds `dim()` values of scratch. Default: the vector through
    /// [`VectorSource::vector`] into `buf`, then scored. Sources holding f16 rows score them
    /// in place (the f32 × f16 kernel sums in the same order: the same value).
    fn score(
        &self,
        at: RowRef,
        query: &[f32],
        metric: Metric,
        buf: &mut [f32],
    ) -> Result<Option<f32>, SearchError> {
        if !self.vector(at, buf)? {
            return Ok(None);
        }
        Ok(Some(dense_f32(metric, query, buf, Dispatch::Auto)?))
    }
}

/// The vectors a snapshot stores: the `vectors` section of each segment (zero-copy from the
/// mapping; a zstd-compressed column, which the engine never writes, decoded once by the
/// segment) and the vectors column of each batch of the active log (in memory), through
/// [`crate::storage::Block::vectors_in`], which checks the rows it returns.
pub struct SnapshotVectors<'a> {
    dim: usize,
    blocks: Vec<Block<'a>>,
}

impl<'a> SnapshotVectors<'a> {
    /// Every block of `snapshot` that holds rows must store vectors, all of one dimension;
    /// otherwise [`SearchError::NoVectors`] names the first block without them.
    pub fn new(snapshot: &'a Snapshot) -> Result<SnapshotVectors<'a>, SearchError> {
        let Some(spec) = snapshot.vector_spec() else {
            return Err(SearchError::NoVectors {
                detail: format!(
                    "the index in {} stores no vectors; re-ranking and the exact modes need an \
                     index created with stored vectors (codedb build --store-vectors f16|f32)",
                    snapshot.dir().display()
                ),
            });
        };
        let dim = spec.dim as usize;
        let mut blocks = Vec::new();
        for block in snapshot.blocks() {
            let where_ = || match block.segment() {
                Some(s) => format!("segment {}", s.path().display()),
                None => format!("a batch of the active log of {}", snapshot.dir().display()),
            };
            match block.stored_vector_values() {
                Some(n) if block.vector_dim == dim && n == block.rows() * dim => {}
                Some(n) => {
                    return Err(invalid(
                        "index",
                        format!(
                            "{} stores {} values of {}-D vectors for {} rows; the index \
                             declares {dim}-D",
                            where_(),
                            n,
                            block.vector_dim,
                            block.rows()
                        ),
                    ));
                }
                None if block.rows() == 0 => {}
                None => {
                    return Err(SearchError::NoVectors {
                        detail: format!("{} ({} rows) stores none", where_(), block.rows()),
                    });
                }
            };
            blocks.push(block);
        }
        Ok(SnapshotVectors { dim, blocks })
    }
}

impl VectorSource for SnapshotVectors<'_> {
    fn dim(&self) -> usize {
        self.dim
    }

    fn vector(&self, at: RowRef, out: &mut [f32]) -> Result<bool, SearchError> {
        match self.blocks.get(at.block) {
            Some(b) => Ok(b.vector_into(at.row, out)?),
            None => Ok(false),
        }
    }

    fn column(
        &self,
        block: usize,
        rows: Range<usize>,
    ) -> Result<Option<DenseValues<'_>>, SearchError> {
        let Some(b) = self.blocks.get(block) else {
            return Ok(None);
        };
        Ok(match b.vectors_in(rows)? {
            Some(VectorSlice::F32(v)) => Some(DenseValues::F32(v)),
            Some(VectorSlice::F16(v)) => Some(DenseValues::F16(v)),
            None => None,
        })
    }

    fn prefetch(&self, at: RowRef) {
        // Unchecked bytes are only hinted at; `score` checks the row before reading it.
        if let Some(v) = self
            .blocks
            .get(at.block)
            .and_then(|b| b.vector_unchecked_for_hint(at.row))
        {
            match v {
                VectorSlice::F32(v) => prefetch(v),
                VectorSlice::F16(v) => prefetch(v),
            }
        }
    }

    fn score(
        &self,
        at: RowRef,
        query: &[f32],
        metric: Metric,
        _buf: &mut [f32],
    ) -> Result<Option<f32>, SearchError> {
        let Some(b) = self.blocks.get(at.block) else {
            return Ok(None);
        };
        if at.row >= b.rows() {
            return Ok(None);
        }
        Ok(match b.vectors_in(at.row..at.row + 1)? {
            Some(VectorSlice::F32(v)) => Some(dense_f32(metric, query, v, Dispatch::Auto)?),
            Some(VectorSlice::F16(v)) => Some(dense_f32_f16(metric, query, v, Dispatch::Auto)?),
            None => None,
        })
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
