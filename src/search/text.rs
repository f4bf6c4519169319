//! Text → image search (PAMIR, Grangier, Monay & Bengio 2006) over the stored codes.
//!
//! The model's text head turns each query into `u = Wᵀq` (q its tf-idf-norm vector) once;
//! rows are ranked by `uᵀp` (larger is better), `p` the vector the row's code stands for,
//! with the kernels image queries use:
//!
//! | codes | `p` | query side | kernel |
//! |---|---|---|---|
//! | binary | the ±1 vector of the bits | LUT-8 of the per-bit terms: bit 0 adds `−u_j`, bit 1 adds `+u_j`, so the score is `Σ_j u_j (2b_j − 1)` | LUT-8 |
//! | PQ8 / PQ4 | the PQ reconstruction | inner-product ADC tables of `u` | LUT-8 / LUT-4, fast-scan |
//! | float32 / float16 | the stored float vector | `u` | dense dot |
//!
//! With `rerank`, the candidates are re-scored with `uᵀ project(v)`, `v` the row's stored
//! vector (the unquantised projection). `lists` restrict as for image queries; `nprobe` probes
//! the lists of the classes whose projected means score best for the text.

use ndarray::ArrayView2;

use crate::format::CodeKind;
use crate::model::{AdcMetric, Model};
use crate::scan::{Direction, lut8_from_bit_terms};
use crate::storage::Block;

use super::candidates::{Candidate, gather, rescore};
use super::error::{SearchError, invalid};
use super::query::{Hit, Prepared, SearchParams, check_params};
use super::vectors::VectorSource;

/// Argument checks of a text search (`u`: the queries' `Wᵀq` rows).
pub(crate) fn check_text(
    model: &Model,
    u: ArrayView2<f32>,
    params: &SearchParams,
) -> Result<(), SearchError> {
    if model.text_head().is_none() {
        return Err(SearchError::NoTextHead);
    }
    if params.mode.is_exact() {
        return Err(invalid(
            "mode",
            format!(
                "{}: text queries are scored on the codes (re-rank with stored vectors instead)",
                params.mode.name()
            ),
        ));
    }
    if u.nrows() == 0 {
        return Err(invalid("queries", "no text query"));
    }
    if u.ncols() != model.project_dim() || u.iter().any(|v| !v.is_finite()) {
        return Err(invalid(
            "queries",
            format!(
                "text query rows must be {} finite values (the model's projected dimension)",
                model.project_dim()
            ),
        ));
    }
    check_params(model, params)
}

/// The LUT-8 tables of `Σ_j u_j (2b_j − 1)` for binary codes of `code_bytes` bytes: one
/// `code_bytes × 256` table per row of `u` (larger is better).
pub fn text_tables(u: ArrayView2<f32>, code_bytes: usize) -> Result<Vec<f32>, SearchError> {
    let n = code_bytes * 8;
    if u.ncols() > n {
        return Err(invalid(
            "queries",
            format!("{} values for codes of {n} bits", u.ncols()),
        ));
    }
    let mut out = Vec::with_capacity(u.nrows() * code_bytes * 256);
    for row in u.rows() {
        let mut zero = vec![0.0f32; n];
        let mut one = vec![0.0f32; n];
        for ((z, o), &v) in zero.iter_mut().zip(one.iter_mut()).zip(row) {
            *z = -v;
            *o = v;
        }
        out.extend(lut8_from_bit_terms(&zero, &one, 0.0)?);
    }
    Ok(out)
}

/// The query side of a text scan of `model`'s codes.
pub(crate) fn prepare_text(model: &Model, u: ArrayView2<f32>) -> Result<Prepared, SearchError> {
    Ok(match (model.code_kind(), model.pq()) {
        (CodeKind::Binary, _) => Prepared::Lut8(text_tables(u, model.code_bytes())?),
        (CodeKind::Pq4, Some(pq)) => {
            let t = pq.adc_tables(u, AdcMetric::InnerProduct)?;
            Prepared::Lut4(t.into_raw_vec_and_offset().0, pq.m())
        }
        (CodeKind::Pq8, Some(pq)) => {
            let t = pq.adc_tables(u, AdcMetric::InnerProduct)?;
            Prepared::Lut8(t.into_raw_vec_and_offset().0)
        }
        (CodeKind::Float32 | CodeKind::Float16, _) => Prepared::Floats(u.iter().copied().collect()),
        (kind, None) => {
            return Err(invalid(
                "model",
                format!("{} codes without a product quantiser", kind.name()),
            ));
        }
    })
}

/// Re-scores text candidates with `uᵀ project(v)`, `v` the stored vectors.
pub(crate) fn rerank_text(
    blocks: &[Block<'_>],
    candidates: &[Vec<Candidate>],
    model: &Model,
    u: ArrayView2<f32>,
    k: usize,
    source: &dyn VectorSource,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    if source.dim() != model.input_dim() {
        return Err(invalid(
            "vectors",
            format!(
                "stored vectors are {}-D, the model takes {}-D",
                source.dim(),
                model.input_dim()
            ),
        ));
    }
    let dim = source.dim();
    rescore(
        blocks,
        candidates,
        Direction::LargerIsBetter,
        k,
        |qi, rows| {
            let vectors = gather(source, rows)?;
            let v =
                ArrayView2::from_shape((vectors.len() / dim, dim), &vectors[..]).map_err(|e| {
                    crate::model::ModelError::Shape {
                        what: "stored vectors".into(),
                        source: e,
                    }
                })?;
            let p = model.project(v)?;
            let q = u.row(qi);
            Ok(p.rows().into_iter().map(|r| r.dot(&q)).collect())
        },
    )
}
