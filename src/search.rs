//! Scan plans: a query batch over a snapshot compiles to one kernel per block (Hamming for
//! binary codes, LUT-8 / LUT-4 ADC for product-quantisation codes), and the per-block top-k lists
//! merge into one list per query, best first, ties by smaller id.

use ndarray::ArrayView2;
use serde::Serialize;

use crate::format::CodeKind;
use crate::model::{AdcMetric, Model};
use crate::scan::{
    CodeRows, Direction, ScanOptions, hamming_topk_batch, lut4_topk_batch, lut8_topk_batch,
};
use crate::storage::Snapshot;

/// How queries are compared with stored codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    /// Queries binarised with the index's model, ranked by Hamming distance (binary codes).
    Hamming,
    /// Asymmetric distance computation, squared L2 (PQ codes; queries are not quantised).
    AdcL2,
    /// Asymmetric inner product (PQ codes), larger is better.
    AdcIp,
}

impl SearchMode {
    /// The natural mode for a model's codes.
    pub fn default_for(kind: CodeKind) -> Option<SearchMode> {
        match kind {
            CodeKind::Binary => Some(SearchMode::Hamming),
            CodeKind::Pq8 | CodeKind::Pq4 => Some(SearchMode::AdcL2),
            CodeKind::Float32 | CodeKind::Float16 => None,
        }
    }

    pub fn parse(s: &str) -> Option<SearchMode> {
        match s {
            "hamming" => Some(SearchMode::Hamming),
            "adc" | "adc-l2" => Some(SearchMode::AdcL2),
            "adc-ip" => Some(SearchMode::AdcIp),
            _ => None,
        }
    }
}

/// One result row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Hit {
    pub id: u64,
    /// Hamming distance, squared L2 distance (smaller is better) or inner product (larger).
    pub score: f32,
}

/// Errors of a search: bad arguments, or a kernel refusing its input.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument { argument: String, detail: String },
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
}

fn invalid(argument: &str, detail: String) -> SearchError {
    SearchError::InvalidArgument {
        argument: argument.into(),
        detail,
    }
}

/// The `k` best live rows of `snapshot` for each query row, best first (ties: smaller id).
pub fn search(
    snapshot: &Snapshot,
    model: &Model,
    queries: ArrayView2<f32>,
    k: usize,
    mode: SearchMode,
    threads: usize,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    if k == 0 {
        return Err(invalid("k", "must be at least 1".into()));
    }
    if queries.ncols() != model.input_dim() {
        return Err(invalid(
            "queries",
            format!(
                "{} columns, the index's model takes {}-D vectors",
                queries.ncols(),
                model.input_dim()
            ),
        ));
    }
    if queries.nrows() == 0 {
        return Err(invalid("queries", "no query rows".into()));
    }
    let kind = model.code_kind();
    let ok = matches!(
        (mode, kind),
        (SearchMode::Hamming, CodeKind::Binary)
            | (
                SearchMode::AdcL2 | SearchMode::AdcIp,
                CodeKind::Pq8 | CodeKind::Pq4
            )
    );
    if !ok {
        return Err(invalid(
            "mode",
            format!("{mode:?} does not apply to {} codes", kind.name()),
        ));
    }
    let nq = queries.nrows();
    let cb = model.code_bytes();
    let opts = ScanOptions {
        threads: threads.max(1),
        ..ScanOptions::default()
    };
    let (prepared, direction): (Prepared, Direction) = match mode {
        SearchMode::Hamming => (
            Prepared::Codes(model.encode(queries)?),
            Direction::SmallerIsBetter,
        ),
        SearchMode::AdcL2 => (
            Prepared::Luts(
                model
                    .adc_tables(queries, AdcMetric::L2)?
                    .into_raw_vec_and_offset()
                    .0,
            ),
            Direction::SmallerIsBetter,
        ),
        SearchMode::AdcIp => (
            Prepared::Luts(
                model
                    .adc_tables(queries, AdcMetric::InnerProduct)?
                    .into_raw_vec_and_offset()
                    .0,
            ),
            Direction::LargerIsBetter,
        ),
    };
    let mut lists: Vec<Vec<Hit>> = vec![Vec::new(); nq];
    for block in snapshot.blocks() {
        if block.rows() == 0 {
            continue;
        }
        let deleted = block.deleted_words();
        let rows = CodeRows::new(block.codes, cb, block.ids, deleted.as_deref())?;
        let part: Vec<Vec<Hit>> = match (&prepared, kind) {
            (Prepared::Codes(q), _) => hamming_topk_batch(&rows, q, k, opts)?
                .into_iter()
                .map(|l| {
                    l.into_iter()
                        .map(|(d, id)| Hit {
                            id,
                            score: d as f32,
                        })
                        .collect()
                })
                .collect(),
            (Prepared::Luts(l), CodeKind::Pq4) => {
                let m = model.pq().map(|p| p.m()).unwrap_or(cb * 2);
                to_hits(lut4_topk_batch(&rows, m, l, direction, k, opts)?)
            }
            (Prepared::Luts(l), _) => to_hits(lut8_topk_batch(&rows, l, direction, k, opts)?),
        };
        for (acc, p) in lists.iter_mut().zip(part) {
            acc.extend(p);
        }
    }
    let better = |a: &Hit, b: &Hit| {
        let s = match direction {
            Direction::SmallerIsBetter => a.score.total_cmp(&b.score),
            Direction::LargerIsBetter => b.score.total_cmp(&a.score),
        };
        s.then(a.id.cmp(&b.id))
    };
    for l in &mut lists {
        l.sort_by(better);
        l.truncate(k);
    }
    Ok(lists)
}

enum Prepared {
    Codes(Vec<u8>),
    Luts(Vec<f32>),
}

fn to_hits(v: Vec<Vec<(f32, u64)>>) -> Vec<Vec<Hit>> {
    v.into_iter()
        .map(|l| l.into_iter().map(|(score, id)| Hit { id, score }).collect())
        .collect()
}
