//! One query's fast-scan tables (André et al., "Cache locality is not enough", VLDB 2015,
//! §4.3): the exact f32 tables, their u8 quantised copy that the kernels sum (the scalar
//! twin in [`super`], the AVX2 / AVX-512 kernels in `x86.rs`), and the bound that decides
//! which rows are re-scored exactly. Apart from both so that neither imports the other.

use super::super::lut::scalar::bound_score;
use super::super::rows::Sink;
use super::super::topk::f32_to_key;
use super::layout::{BLOCK_ROWS, nibble, padded_m};

/// Levels of the quantised tables (entries `0..=LEVELS`): four entries sum to at most 252.
pub(crate) const LEVELS: u8 = 63;

/// One query's tables: exact f32 (ranked smaller-is-better) and the u8 quantised copy.
pub(crate) struct QuantLut<'t> {
    pub(super) exact: &'t [[f32; 16]],
    /// `M2` tables of 16 u8, back to back (padding table all zero).
    pub(super) q: Vec<u8>,
    pub(super) scale: f64,
    pub(super) sum_min: f64,
    pub(super) slack: f64,
}

impl<'t> QuantLut<'t> {
    pub(super) fn new(exact: &'t [[f32; 16]]) -> Self {
        let m = exact.len();
        let mins: Vec<f64> = exact
            .iter()
            .map(|t| t.iter().fold(f64::INFINITY, |a, &x| a.min(f64::from(x))))
            .collect();
        let range = exact
            .iter()
            .zip(&mins)
            .map(|(t, &mn)| t.iter().fold(0.0f64, |a, &x| a.max(f64::from(x) - mn)))
            .fold(0.0f64, f64::max);
        let levels = f64::from(LEVELS);
        let scale = if range > 0.0 { levels / range } else { 1.0 };
        let mut q = vec![0u8; padded_m(m) * 16];
        for (j, (t, &mn)) in exact.iter().zip(&mins).enumerate() {
            for (i, &x) in t.iter().enumerate() {
                q[16 * j + i] = ((f64::from(x) - mn) * scale).round().clamp(0.0, levels) as u8;
            }
        }
        let abs_sum: f64 = exact
            .iter()
            .map(|t| t.iter().fold(0.0f64, |a, &x| a.max(f64::from(x).abs())))
            .sum();
        let gamma = m as f64 * f64::powi(2.0, -23) * abs_sum;
        QuantLut {
            exact,
            q,
            scale,
            sum_min: mins.iter().sum(),
            slack: gamma,
        }
    }

    /// The largest quantised sum a row may have and still reach the collector's bound.
    #[inline]
    pub(super) fn q_bound(&self, key_bound: u32) -> u16 {
        if key_bound == u32::MAX {
            return u16::MAX;
        }
        let theta = f64::from(bound_score(key_bound));
        let m = self.exact.len() as f64;
        let t = (theta + self.slack - self.sum_min) * self.scale + 0.5 * m + 1.0;
        t.floor().clamp(0.0, f64::from(u16::MAX)) as u16
    }

    /// Exact score of row `r`, in the plain LUT-4 kernels' order.
    #[inline]
    pub(super) fn exact_score(&self, packed: &[u8], r: usize) -> f32 {
        let m = self.exact.len();
        let mut acc = 0.0f32;
        for (j, t) in self.exact.iter().enumerate() {
            acc += t[nibble(packed, m, r, j) as usize];
        }
        acc
    }

    /// Re-scores the rows of block `b` whose bit is set in `pass` (bit i = row 32b + i) and
    /// offers those within the bound; returns the new quantised bound.
    #[inline(never)]
    pub(super) fn rescore<S: Sink>(
        &self,
        packed: &[u8],
        b: usize,
        mut pass: u32,
        end: usize,
        sink: &mut S,
    ) -> u16 {
        let mut bound = sink.bound();
        while pass != 0 {
            let i = pass.trailing_zeros() as usize;
            pass &= pass - 1;
            let r = b * BLOCK_ROWS + i;
            if r >= end {
                break;
            }
            let key = f32_to_key(self.exact_score(packed, r));
            if key <= bound {
                bound = sink.offer(key, r);
            }
        }
        self.q_bound(bound)
    }
}
