//! Asymmetric binary search: database codes are binary, the query is not binarised.
//!
//! Gong et al. (TPAMI 2013, §1) note the alternative to Hamming ranking in which "the database
//! points are quantized but the query is not" (their ref. [14], Gordo & Perronnin 2011). The
//! query goes through the model up to, not including, the sign step: [`Model::project`] gives
//! `y` with `y_j > 0` exactly where the query's own bit `j` would be 1 (`x − t` after the
//! transforms for sign bits, the SKLSH margin for SKLSH bits).
//!
//! **Score** of a database code `b` (smaller is better):
//!
//! ```text
//! asym(y, b) = Σ_j |y_j| · [b_j ≠ 1(y_j > 0)]
//! ```
//!
//! the total margin of the bits on which the code disagrees with the query's side of each
//! hyperplane. It is 0 for the query's own code, equals the Hamming distance when every
//! `|y_j| = 1`, and with `s = 2b − 1 ∈ {±1}` it equals `½(‖y‖₁ − ⟨y, s⟩)`, so for one query it
//! ranks codes exactly like `−⟨y, s⟩` and like `‖y − s‖²` (which differ from it by per-query
//! constants) — up to f32 rounding of near ties.
//!
//! Bits are independent, so the score is a sum over code bytes of a 256-entry table of partial
//! sums (built by [`crate::scan::lut8_from_bit_terms`]: bit clear costs `max(y_j, 0)`, bit set
//! costs `max(−y_j, 0)`) and runs on the LUT-8 kernel, as PQ ADC does. Padding bits past
//! `code_bits` (codes whose width is not a multiple of 8) cost nothing either way.

use ndarray::ArrayView2;

use crate::format::CodeKind;
use crate::model::Model;
use crate::scan::lut8_from_bit_terms;

use super::error::{SearchError, invalid};

/// Per-bit costs of one projected query: `(zero, one)`, the cost of a 0 bit and of a 1 bit at
/// each of `code_bytes * 8` positions (positions past `y.len()` cost 0).
pub fn asym_bit_terms(y: &[f32], code_bytes: usize) -> (Vec<f32>, Vec<f32>) {
    let n = code_bytes * 8;
    let mut zero = vec![0.0f32; n];
    let mut one = vec![0.0f32; n];
    for ((z, o), &v) in zero.iter_mut().zip(one.iter_mut()).zip(y) {
        *z = v.max(0.0);
        *o = (-v).max(0.0);
    }
    (zero, one)
}

/// LUT-8 tables for asymmetric search of binary codes: `nq × code_bytes × 256` f32, query
/// after query, for [`crate::scan::lut8_topk_batch`] with `Direction::SmallerIsBetter`.
pub fn asym_tables(model: &Model, queries: ArrayView2<f32>) -> Result<Vec<f32>, SearchError> {
    if model.code_kind() != CodeKind::Binary {
        return Err(SearchError::ModeNotApplicable {
            mode: "asym",
            kind: model.code_kind().name(),
            hint: "asymmetric binary search needs binary codes",
        });
    }
    let cb = model.code_bytes();
    if model.project_dim() > cb * 8 {
        return Err(invalid(
            "model",
            format!(
                "projects to {} dimensions but codes hold {} bits",
                model.project_dim(),
                cb * 8
            ),
        ));
    }
    let y = model.project(queries)?;
    let mut out = Vec::with_capacity(y.nrows() * cb * 256);
    for row in y.rows() {
        let row: Vec<f32> = row.to_vec();
        let (zero, one) = asym_bit_terms(&row, cb);
        out.extend(lut8_from_bit_terms(&zero, &one, 0.0)?);
    }
    Ok(out)
}

/// The score of one code, summed directly from its bits in f64 (the reference the tables are
/// tested against; not used on the search path).
#[cfg(test)]
fn asym_score_reference(y: &[f32], code: &[u8]) -> f64 {
    y.iter()
        .enumerate()
        .map(|(j, &v)| {
            let bit = code.get(j / 8).is_some_and(|b| (b >> (j % 8)) & 1 == 1);
            if bit != (v > 0.0) {
                f64::from(v).abs()
            } else {
                0.0
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::lut8_score;

    #[test]
    fn tables_sum_the_disagreeing_margins() {
        let y = [0.5f32, -2.0, 0.0, 3.0, -0.25, 1.0, -1.0, 0.125, 4.0, -4.0];
        let (z, o) = asym_bit_terms(&y, 2);
        let lut = lut8_from_bit_terms(&z, &o, 0.0).unwrap();
        // The query's own code scores 0.
        let own = [0b1010_1001u8, 0b0000_0001];
        assert_eq!(lut8_score(&own, &lut).unwrap(), 0.0);
        assert_eq!(asym_score_reference(&y, &own), 0.0);
        for code in [[0u8, 0], [0xff, 0xff], [0b0101_0110, 0b10], [0x0f, 0xf0]] {
            let want = asym_score_reference(&y, &code);
            let got = lut8_score(&code, &lut).unwrap();
            assert_eq!(f64::from(got), want, "{code:?}");
        }
        // All ones: cost = Σ max(−y, 0) over the 10 real bits, padding bits free.
        assert_eq!(
            lut8_score(&[0xff, 0xff], &lut).unwrap(),
            2.0 + 0.25 + 1.0 + 4.0
        );
    }

    #[test]
    fn ranks_like_the_inner_product_with_the_sign_code() {
        // ½(‖y‖₁ − ⟨y, s⟩) = asym: check the identity on a few codes.
        let y = [0.7f32, -1.5, 0.2, 2.5, -0.3, 0.9, -2.0, 0.4];
        let l1: f64 = y.iter().map(|v| f64::from(v.abs())).sum();
        for c in [0u8, 0x5a, 0xff, 0x81, 0x3c] {
            let ip: f64 = (0..8)
                .map(|j| {
                    let s = if (c >> j) & 1 == 1 { 1.0 } else { -1.0 };
                    f64::from(y[j]) * s
                })
                .sum();
            let a = asym_score_reference(&y, &[c]);
            assert!((a - 0.5 * (l1 - ip)).abs() < 1e-9, "{c}: {a} vs {ip}");
        }
    }
}
