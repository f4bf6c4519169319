//! Shift-invariant kernel LSH (stage kind SKLSH), Raginsky & Lazebnik, "Locality-sensitive
//! binary codes from shift-invariant kernels" (NIPS 2009), the SKLSH baseline of Gong et al.
//! TPAMI 2013 §4.2.
//!
//! Bit k of a code is `1` iff `cos(w_k · x + b_k) + t_k > 0`, with `w_k ~ N(0, σ⁻² I)`,
//! `b_k ~ U[0, 2π)`, `t_k ~ U[−1, 1]` — Raginsky & Lazebnik's
//! `h_t(x) = ½(1 + sgn(cos(ω·x + b) + t))` with ω drawn from the spectral density of the
//! Gaussian kernel
//! `K(x, y) = exp(−‖x − y‖² / (2σ²))` (their `γ = 1/σ²`). σ is the mean distance to the 50th
//! nearest neighbour, as in Gong et al. §4.2.
//!
//! Stored tensors: `weight` f32 `[c, d]` (rows `w_k`, divided by σ), `phase` f32 `[c]`,
//! `threshold` f32 `[c]` (each in [−1, 1]), `bandwidth` f64 `[]` (σ, informative).

use ndarray::{Array2, ArrayView2};

use crate::format::{StageRecord, stage_kind};

use super::error::{ModelError, Result};
use super::fixed_order::dot;
use super::input::checked_rows;
use super::quantizer::{RowFault, RowQuantizer, encode_rows, set_bit};
use super::random::{derive_seed, rng, uniform};
use super::record::{RecordReader, f32_tensor, f64_tensor};
use super::rff::{check_bandwidth, fourier_directions};

/// SKLSH hash functions.
#[derive(Debug, Clone, PartialEq)]
pub struct Sklsh {
    weight: Array2<f32>,
    phase: Vec<f32>,
    threshold: Vec<f32>,
    bandwidth: f64,
}

impl Sklsh {
    /// From stored parameters (checked: finite, consistent shapes, thresholds in [−1, 1],
    /// σ > 0).
    pub fn new(
        weight: Array2<f32>,
        phase: Vec<f32>,
        threshold: Vec<f32>,
        bandwidth: f64,
    ) -> Result<Sklsh> {
        let (c, d) = weight.dim();
        if c == 0 || d == 0 {
            return Err(ModelError::bad_tensor(
                "sklsh",
                "weight",
                format!("empty shape [{c}, {d}]"),
            ));
        }
        if weight.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "sklsh",
                "weight",
                "non-finite value",
            ));
        }
        if phase.len() != c || phase.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "sklsh",
                "phase",
                format!("need {c} finite values, got {}", phase.len()),
            ));
        }
        if threshold.len() != c || threshold.iter().any(|t| !(-1.0..=1.0).contains(t)) {
            return Err(ModelError::bad_tensor(
                "sklsh",
                "threshold",
                format!("need {c} values in [-1, 1], got {}", threshold.len()),
            ));
        }
        check_bandwidth("sklsh", bandwidth)?;
        Ok(Sklsh {
            weight: weight.as_standard_layout().into_owned(),
            phase,
            threshold,
            bandwidth,
        })
    }

    /// `bits` random hash functions for `input_dim`-dimensional data, kernel bandwidth σ,
    /// seeded.
    pub fn random(input_dim: usize, bits: usize, bandwidth: f64, seed: u64) -> Result<Sklsh> {
        if input_dim == 0 || bits == 0 {
            return Err(ModelError::invalid(
                "sklsh",
                format!("dimensions must be >= 1, got {bits} bits of {input_dim} inputs"),
            ));
        }
        check_bandwidth("sklsh", bandwidth)?;
        let (w, b) = fourier_directions(bits, input_dim, bandwidth, seed);
        let t: Vec<f32> = uniform(&mut rng(derive_seed(seed, 1)), bits, -1.0, 1.0)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let w = Array2::from_shape_vec((bits, input_dim), w)
            .map_err(|e| ModelError::shape("sklsh weight", e))?;
        Sklsh::new(w, b, t, bandwidth)
    }

    /// Kernel bandwidth σ the Fourier directions were drawn for.
    pub fn bandwidth(&self) -> f64 {
        self.bandwidth
    }

    /// Bits per code.
    pub fn bits(&self) -> usize {
        self.weight.nrows()
    }

    /// Encodes rows as packed SKLSH bits (Raginsky & Lazebnik, NIPS 2009).
    pub fn encode(&self, x: ArrayView2<f32>) -> Result<Vec<u8>> {
        let rows = checked_rows("sklsh: input", x, Some(self.weight.ncols()))?;
        encode_rows(self, "sklsh: input", rows.as_slice())
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        let (c, d) = self.weight.dim();
        StageRecord {
            kind: stage_kind::SKLSH,
            required: true,
            tensors: vec![
                f32_tensor("weight", &[c, d], self.weight.iter().copied().collect()),
                f32_tensor("phase", &[c], self.phase.clone()),
                f32_tensor("threshold", &[c], self.threshold.clone()),
                f64_tensor("bandwidth", &[], vec![self.bandwidth]),
            ],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<Sklsh> {
        let mut r = RecordReader::new("sklsh", stage_kind::SKLSH, rec)?;
        let (w, shape) = r.f32("weight", &[None, None])?;
        let (phase, _) = r.f32("phase", &[Some(shape[0])])?;
        let (t, _) = r.f32("threshold", &[Some(shape[0])])?;
        let sigma = r.f64_scalar("bandwidth")?;
        r.finish()?;
        let w = Array2::from_shape_vec((shape[0], shape[1]), w.to_vec())
            .map_err(|e| ModelError::tensor_shape("sklsh", "weight", e))?;
        Sklsh::new(w, phase.to_vec(), t.to_vec(), sigma)
    }

    /// `cos(w_k · x + b_k) + t_k` for every k, passed to `f(k, margin)`.
    fn for_each_margin(&self, x: &[f32], mut f: impl FnMut(usize, f32)) {
        let d = self.weight.ncols();
        let w = self.weight.as_slice().unwrap_or(&[]);
        for (k, ((row, &b), &t)) in w
            .chunks_exact(d)
            .zip(&self.phase)
            .zip(&self.threshold)
            .enumerate()
        {
            f(k, ((dot(row, x) + b) as f64).cos() as f32 + t);
        }
    }
}

impl RowQuantizer for Sklsh {
    fn in_dim(&self) -> usize {
        self.weight.ncols()
    }
    fn code_bytes(&self) -> usize {
        self.weight.nrows().div_ceil(8)
    }
    fn code_bits(&self) -> usize {
        self.weight.nrows()
    }
    fn project_dim(&self) -> usize {
        self.weight.nrows()
    }
    fn encode_row(&self, x: &[f32], out: &mut [u8]) -> std::result::Result<(), RowFault> {
        out.fill(0);
        self.for_each_margin(x, |k, m| {
            if m > 0.0 {
                set_bit(out, k);
            }
        });
        Ok(())
    }
    /// `cos(w·x + b) + t`: positive exactly where the bit is 1.
    fn project_row(&self, x: &[f32], out: &mut [f32]) {
        self.for_each_margin(x, |k, m| {
            if let Some(o) = out.get_mut(k) {
                *o = m;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn collision_probability_grows_with_kernel_value() {
        // Raginsky & Lazebnik: for far points bits agree with probability ≈ 1/2 ... and with
        // probability → 1 for identical points; nearer points agree more often.
        let sk = Sklsh::random(2, 4096, 1.0, 5).unwrap();
        let x = Array2::from_shape_vec((3, 2), vec![0.0f32, 0.0, 0.3, 0.0, 10.0, 0.0]).unwrap();
        let codes = sk.encode(x.view()).unwrap();
        let cb = 512;
        let agree = |a: usize, b: usize| {
            (0..4096)
                .filter(|&k| {
                    super::super::quantizer::get_bit(&codes[a * cb..], k)
                        == super::super::quantizer::get_bit(&codes[b * cb..], k)
                })
                .count() as f64
                / 4096.0
        };
        let near = agree(0, 1);
        let far = agree(0, 2);
        assert!(near > 0.85, "near {near}");
        assert!(far < near - 0.2, "far {far} near {near}");
        assert_eq!(Sklsh::from_record(&sk.to_record()).unwrap(), sk);
    }

    #[test]
    fn thresholds_out_of_range_are_refused() {
        let sk = Sklsh::random(2, 8, 1.0, 0).unwrap();
        let mut rec = sk.to_record();
        rec.tensors[2].data = crate::format::TensorData::F32(vec![2.0; 8]);
        let err = Sklsh::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("sklsh") && err.contains("threshold"), "{err}");
    }
}
