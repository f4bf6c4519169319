//! The points of a scan-throughput figure, from `codedb bench scan` results in this process or
//! from JSON files: `codedb bench scan --json` (`codes_per_s`) and
//! `tools/bench_vs_faiss.py --json` (`codedb_codes_per_s`, `faiss_codes_per_s`).

use std::path::Path;

use serde::Deserialize;

use super::target::PlotError;
use crate::bench::scan_case::{BenchKind, ScanResult};

/// One measured case.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanPoint {
    pub kind: String,
    /// Bytes per code of `kind` (for the bandwidth bound).
    pub code_bytes: u32,
    pub codes: u64,
    pub queries: usize,
    pub threads: usize,
    /// `hot` or `cold`.
    pub cache: String,
    pub codedb_codes_per_s: f64,
    pub faiss_codes_per_s: Option<f64>,
    /// Read bandwidth measured on the same mapping with the same threads.
    pub bandwidth_gb_per_s: f64,
}

impl ScanPoint {
    /// Codes per second a scan reading at the measured bandwidth would reach (a batch of
    /// queries reads the codes once).
    pub fn bandwidth_bound(&self) -> f64 {
        self.bandwidth_gb_per_s * 1e9 / f64::from(self.code_bytes.max(1)) * self.queries as f64
    }
}

pub fn scan_points_from_results(results: &[ScanResult]) -> Vec<ScanPoint> {
    results
        .iter()
        .map(|r| ScanPoint {
            code_bytes: BenchKind::parse(&r.kind).map_or(0, |k| k.layout().code_bytes),
            kind: r.kind.clone(),
            codes: r.codes,
            queries: r.queries,
            threads: r.threads,
            cache: r.cache.to_string(),
            codedb_codes_per_s: r.codes_per_s,
            faiss_codes_per_s: None,
            bandwidth_gb_per_s: r.bandwidth_gb_per_s,
        })
        .collect()
}

/// A row of either JSON shape.
#[derive(Deserialize)]
struct Row {
    kind: String,
    codes: u64,
    queries: usize,
    threads: usize,
    cache: Option<String>,
    codes_per_s: Option<f64>,
    codedb_codes_per_s: Option<f64>,
    faiss_codes_per_s: Option<f64>,
    bandwidth_gb_per_s: f64,
}

/// Parses one JSON file's text (`path` names it in errors): a list of rows, each a measured
/// case with a known kind and finite, positive throughputs.
pub fn scan_points_from_json(path: &Path, text: &str) -> Result<Vec<ScanPoint>, PlotError> {
    let bad = |detail: String| PlotError::BadInput {
        path: path.into(),
        detail,
    };
    let rows: Vec<Row> = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "not a list of `codedb bench scan --json` or `tools/bench_vs_faiss.py --json` \
             rows: {e}"
        ))
    })?;
    if rows.is_empty() {
        return Err(bad("no rows".into()));
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| {
            let kind = BenchKind::parse(&r.kind)
                .ok_or_else(|| bad(format!("row {i}: unknown kind {:?}", r.kind)))?;
            let codedb = r.codes_per_s.or(r.codedb_codes_per_s).ok_or_else(|| {
                bad(format!(
                    "row {i}: neither codes_per_s nor codedb_codes_per_s"
                ))
            })?;
            let positive = |v: f64| v.is_finite() && v > 0.0;
            if !positive(codedb) || !r.faiss_codes_per_s.is_none_or(positive) {
                return Err(bad(format!(
                    "row {i}: throughputs must be finite and positive"
                )));
            }
            if !r.bandwidth_gb_per_s.is_finite() || r.bandwidth_gb_per_s < 0.0 {
                return Err(bad(format!("row {i}: bandwidth_gb_per_s must be ≥ 0")));
            }
            if r.codes == 0 || r.queries == 0 || r.threads == 0 {
                return Err(bad(format!(
                    "row {i}: codes, queries and threads must be ≥ 1"
                )));
            }
            Ok(ScanPoint {
                kind: kind.name(),
                code_bytes: kind.layout().code_bytes,
                codes: r.codes,
                queries: r.queries,
                threads: r.threads,
                cache: r.cache.unwrap_or_else(|| "hot".into()),
                codedb_codes_per_s: codedb,
                faiss_codes_per_s: r.faiss_codes_per_s,
                bandwidth_gb_per_s: r.bandwidth_gb_per_s,
            })
        })
        .collect()
}
