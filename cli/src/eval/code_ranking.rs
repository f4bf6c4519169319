//! Ranking an in-memory database of codes for a batch of queries with the crate's scan kernels,
//! exactly as a search would: Hamming distance for binary codes (ITQ, Gong et al. TPAMI 2013,
//! §3), L2 ADC with 256- or 16-entry tables for PQ codes (Jégou et al. TPAMI 2011, eq. 13), and
//! squared L2 on the stored floats for float codes (the exact-search baseline).
//!
//! Evaluation needs the *full* ranking for mean average precision (the area under the whole
//! recall-precision curve, ITQ §4.2), so [`EncodedDatabase::rank`] accepts `k` up to the
//! database size. Ties are broken by the smaller database row, the kernels' total order, so a
//! top-k list is exactly the prefix of the full ranking. Queries are split into chunks that run
//! in parallel on the rayon pool, each chunk scanning the rows on one thread, so the output does
//! not depend on the number of threads.

use ndarray::ArrayView2;
use rayon::prelude::*;

use crate::error::Error;
use codedb::format::CodeKind;
use codedb::kernels::{
    CodeRows, DenseRows, DenseValues, Direction, Metric, ScanOptions, dense_topk,
    hamming_topk_batch, lut4_topk_batch, lut8_topk_batch,
};
use codedb::model::{AdcMetric, Model};

use crate::error::EvalError;

/// Queries scanned together by one task: enough to reuse each block of codes from cache, few
/// enough that a chunk's full rankings (N entries per query) stay small.
const QUERY_CHUNK: usize = 16;

/// How a model's codes are compared with queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeScan {
    /// Binary codes, queries binarised with the same model; score = Hamming distance.
    Hamming,
    /// PQ codes with 8-bit sub-quantisers (one byte each); score = L2 ADC.
    Adc8 { m: usize },
    /// PQ codes with 4-bit sub-quantisers (two per byte); score = L2 ADC.
    Adc4 { m: usize },
    /// Stored float vectors; score = squared L2 distance.
    Dense { dim: usize },
}

impl CodeScan {
    /// The scan a model's codes call for.
    pub fn for_model(model: &Model) -> CodeScan {
        match model.code_kind() {
            CodeKind::Binary => CodeScan::Hamming,
            CodeKind::Pq8 => CodeScan::Adc8 {
                m: model.pq().map_or(model.code_bytes(), |p| p.m()),
            },
            CodeKind::Pq4 => CodeScan::Adc4 {
                m: model.pq().map_or(2 * model.code_bytes(), |p| p.m()),
            },
            CodeKind::Float32 | CodeKind::Float16 => CodeScan::Dense {
                dim: model.project_dim(),
            },
        }
    }

    /// A short name for tables: `hamming`, `adc`, `l2`.
    pub fn name(self) -> &'static str {
        match self {
            CodeScan::Hamming => "hamming",
            CodeScan::Adc8 { .. } | CodeScan::Adc4 { .. } => "adc",
            CodeScan::Dense { .. } => "l2",
        }
    }
}

/// Queries prepared for one scan kind (binarised codes, ADC tables or projected floats).
enum PreparedQueries {
    Codes(Vec<u8>),
    Tables(Vec<f32>),
    Floats(Vec<f32>),
}

/// A database encoded with a model: codes, row ids 0..N, and (float models) the decoded
/// vectors the dense kernel scans.
pub struct EncodedDatabase<'m> {
    model: &'m Model,
    scan: CodeScan,
    codes: Vec<u8>,
    ids: Vec<u64>,
    dense: Vec<f32>,
}

impl<'m> EncodedDatabase<'m> {
    /// Encodes the rows of `database` with `model` (errors: empty input, dimension mismatch,
    /// NaN/Inf).
    pub fn new(model: &'m Model, database: ArrayView2<f32>) -> Result<Self, Error> {
        let codes = model.encode(database)?;
        let scan = CodeScan::for_model(model);
        let dense = match scan {
            CodeScan::Dense { .. } => model.decode(&codes)?.into_raw_vec_and_offset().0,
            _ => Vec::new(),
        };
        Ok(EncodedDatabase {
            model,
            scan,
            ids: (0..database.nrows() as u64).collect(),
            codes,
            dense,
        })
    }

    /// Number of database rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when the database has no rows (never, after [`EncodedDatabase::new`]).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn scan(&self) -> CodeScan {
        self.scan
    }

    /// The packed codes, `code_bytes` per row.
    pub fn codes(&self) -> &[u8] {
        &self.codes
    }

    fn prepare(&self, queries: ArrayView2<f32>) -> Result<PreparedQueries, Error> {
        Ok(match self.scan {
            CodeScan::Hamming => PreparedQueries::Codes(self.model.encode(queries)?),
            CodeScan::Adc8 { .. } | CodeScan::Adc4 { .. } => PreparedQueries::Tables(
                self.model
                    .adc_tables(queries, AdcMetric::L2)?
                    .into_raw_vec_and_offset()
                    .0,
            ),
            CodeScan::Dense { .. } => {
                PreparedQueries::Floats(self.model.project(queries)?.into_raw_vec_and_offset().0)
            }
        })
    }

    /// The `k` best database rows for every query row, best first: `(score, row)` with the
    /// score of [`CodeScan`] (smaller is better), ties by smaller row. `k` may be the whole
    /// database (the full ranking).
    pub fn rank(&self, queries: ArrayView2<f32>, k: usize) -> Result<Vec<Vec<(f32, u32)>>, Error> {
        let n = self.len();
        if k == 0 || k > n {
            return Err(EvalError::InvalidArgument {
                argument: "k",
                detail: format!("k = {k}, must be between 1 and the {n} database rows"),
            }
            .into());
        }
        let prepared = self.prepare(queries)?;
        let nq = queries.nrows();
        let chunks: Vec<usize> = (0..nq).step_by(QUERY_CHUNK).collect();
        let parts: Vec<Vec<Vec<(f32, u32)>>> = chunks
            .par_iter()
            .map(|&start| {
                let end = (start + QUERY_CHUNK).min(nq);
                self.rank_chunk(&prepared, start, end, k)
            })
            .collect::<Result<_, Error>>()?;
        Ok(parts.into_iter().flatten().collect())
    }

    fn rank_chunk(
        &self,
        prepared: &PreparedQueries,
        start: usize,
        end: usize,
        k: usize,
    ) -> Result<Vec<Vec<(f32, u32)>>, Error> {
        let opts = ScanOptions {
            threads: 1,
            ..ScanOptions::default()
        };
        let to_rows = |lists: Vec<Vec<(f32, u64)>>| -> Vec<Vec<(f32, u32)>> {
            lists
                .into_iter()
                .map(|l| l.into_iter().map(|(s, id)| (s, id as u32)).collect())
                .collect()
        };
        match (self.scan, prepared) {
            (CodeScan::Hamming, PreparedQueries::Codes(q)) => {
                let w = self.model.code_bytes();
                let rows = CodeRows::new(&self.codes, w, &self.ids, None)?;
                let lists = hamming_topk_batch(&rows, &q[start * w..end * w], k, opts)?;
                Ok(lists
                    .into_iter()
                    .map(|l| l.into_iter().map(|(d, id)| (d as f32, id as u32)).collect())
                    .collect())
            }
            (CodeScan::Adc8 { m }, PreparedQueries::Tables(t)) => {
                let rows = CodeRows::new(&self.codes, m, &self.ids, None)?;
                let per = m * 256;
                let lists = lut8_topk_batch(
                    &rows,
                    &t[start * per..end * per],
                    Direction::SmallerIsBetter,
                    k,
                    opts,
                )?;
                Ok(to_rows(lists))
            }
            (CodeScan::Adc4 { m }, PreparedQueries::Tables(t)) => {
                let rows = CodeRows::new(&self.codes, m.div_ceil(2), &self.ids, None)?;
                let per = m * 16;
                let lists = lut4_topk_batch(
                    &rows,
                    m,
                    &t[start * per..end * per],
                    Direction::SmallerIsBetter,
                    k,
                    opts,
                )?;
                Ok(to_rows(lists))
            }
            (CodeScan::Dense { dim }, PreparedQueries::Floats(f)) => {
                let rows = DenseRows::new(DenseValues::F32(&self.dense), dim, &self.ids, None)?;
                let lists = dense_topk(&rows, &f[start * dim..end * dim], Metric::L2Sq, k, opts)?;
                Ok(to_rows(lists))
            }
            _ => Err(EvalError::InvalidArgument {
                argument: "queries",
                detail: "internal: queries prepared for another scan kind".into(),
            }
            .into()),
        }
    }
}
