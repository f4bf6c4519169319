//! Explicit feature maps of the additive homogeneous kernels χ² and intersection (stage kind
//! HOM, format 1.6), after Vedaldi & Zisserman, *Efficient additive kernels via explicit
//! feature maps* (CVPR 2010 / TPAMI 2012), the map PiCoDes applies to its descriptors
//! (Bergamo et al. NIPS 2011, §2). For a non-negative x the kernel is
//! `k(x, y) = √(xy) K(log y − log x)` with spectrum κ(λ) (the inverse Fourier transform of K);
//! sampling κ at `0, L, …, rL` gives `2r + 1` features per input dimension:
//!
//! `ψ₀(x) = √(x L κ(0))`, `ψ₂ⱼ₋₁(x) = √(2 x L κ(jL)) cos(jL log x)`,
//! `ψ₂ⱼ(x) = √(2 x L κ(jL)) sin(jL log x)`, and ψ(0) = 0 (the limit),
//!
//! so that `ψ(x)·ψ(y) ≈ k(x, y)` per dimension and the sum over dimensions approximates the
//! additive kernel. Spectra: χ² (`k = 2xy/(x+y)`, `K(t) = sech(t/2)`): `κ(λ) = sech(πλ)`;
//! intersection (`k = min(x, y)`, `K(t) = e^{−|t|/2}`): `κ(λ) = (1/2π) ∫ e^{−|t|/2} e^{−iλt} dt
//! = 2 / (π (1 + 4λ²))`. Output layout as scikit-learn's `AdditiveChi2Sampler` (same map for
//! χ² with `sample_steps = r + 1`, `sample_interval = L`): the d values of ψ₀, then for each j
//! the d cosines, then the d sines. Default r = 1 (3× dimensions); L = 0.5 for χ²
//! (scikit-learn's interval for two steps) and L = 0.8 for the intersection (VLFeat's rule
//! `2π / (8.80 √(r + 4.44) − 12.6)` = 0.79 for r = 1: its spectrum decays as 1/λ², so a wider
//! step loses less). With r = 1 the map is coarse: |ψ(x)·ψ(y) − k(x, y)| / √(xy) reaches 0.10
//! (χ²) and 0.20 (intersection) for y/x within [0.1, 10]; higher orders converge (tests).
//!
//! Stored tensors: `dim` u64 [] (d), `kernel` u64 [] (1 = χ², 2 = intersection), `order` u64
//! [] (r), `period` f64 [] (L).

use crate::format::{StageRecord, Tensor, TensorData, stage_kind};

use super::error::{ModelError, Result};
use super::record::{RecordReader, f64_tensor};
use super::transform::RowMap;

/// Default order r: 3 features per input dimension, as PiCoDes uses.
pub const DEFAULT_HOM_ORDER: usize = 1;
/// Default sampling period L of χ² (scikit-learn's `sample_interval` for `sample_steps = 2`).
pub const DEFAULT_HOM_PERIOD: f64 = 0.5;
/// Default sampling period L of the intersection kernel (VLFeat's rule for r = 1, rounded).
pub const DEFAULT_HOM_PERIOD_INTERSECTION: f64 = 0.8;
/// Largest order r a stored stage may ask for.
const MAX_HOM_ORDER: u64 = 16;

/// The additive homogeneous kernel a [`Hom`] stage approximates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomKernel {
    /// χ²: `k(x, y) = 2xy / (x + y)`.
    Chi2,
    /// Intersection: `k(x, y) = min(x, y)`.
    Intersection,
}

impl HomKernel {
    /// Stored code (tensor `kernel`).
    pub fn code(self) -> u64 {
        match self {
            HomKernel::Chi2 => 1,
            HomKernel::Intersection => 2,
        }
    }

    /// The kernel of a stored code.
    pub fn from_code(code: u64) -> Option<HomKernel> {
        match code {
            1 => Some(HomKernel::Chi2),
            2 => Some(HomKernel::Intersection),
            _ => None,
        }
    }

    /// SPEC name: `chi2` or `inter`.
    pub fn name(self) -> &'static str {
        match self {
            HomKernel::Chi2 => "chi2",
            HomKernel::Intersection => "inter",
        }
    }

    /// The spectrum κ(λ) (module doc).
    pub fn spectrum(self, lambda: f64) -> f64 {
        use std::f64::consts::PI;
        match self {
            HomKernel::Chi2 => 1.0 / (PI * lambda).cosh(),
            HomKernel::Intersection => 2.0 / (PI * (1.0 + 4.0 * lambda * lambda)),
        }
    }

    /// The default sampling period L for order r = 1 (module doc).
    pub fn default_period(self) -> f64 {
        match self {
            HomKernel::Chi2 => DEFAULT_HOM_PERIOD,
            HomKernel::Intersection => DEFAULT_HOM_PERIOD_INTERSECTION,
        }
    }

    /// The exact kernel of two non-negative scalars.
    pub fn exact(self, x: f64, y: f64) -> f64 {
        match self {
            HomKernel::Chi2 if x + y > 0.0 => 2.0 * x * y / (x + y),
            HomKernel::Chi2 => 0.0,
            HomKernel::Intersection => x.min(y),
        }
    }
}

/// `x ↦ ψ(x)`, per dimension, `(2r + 1) d` outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Hom {
    dim: usize,
    kernel: HomKernel,
    order: usize,
    period: f64,
    /// `√(L κ(0))`, then `√(2 L κ(jL))` for j = 1..=r.
    scale: Vec<f64>,
}

impl Hom {
    /// The map of `kernel` for `dim` inputs, order r, period L (checked: d ≥ 1,
    /// 1 ≤ r ≤ 16, L finite and > 0).
    pub fn new(dim: usize, kernel: HomKernel, order: usize, period: f64) -> Result<Hom> {
        let bad = |t: &str, d: String| ModelError::bad_tensor("hom", t, d);
        if dim == 0 {
            return Err(bad("dim", "must be >= 1".into()));
        }
        if order == 0 || order as u64 > MAX_HOM_ORDER {
            return Err(bad(
                "order",
                format!("must be between 1 and {MAX_HOM_ORDER}, got {order}"),
            ));
        }
        if !(period.is_finite() && period > 0.0) {
            return Err(bad(
                "period",
                format!("must be finite and > 0, got {period}"),
            ));
        }
        let scale = (0..=order)
            .map(|j| {
                let s = if j == 0 { 1.0 } else { 2.0 };
                (s * period * kernel.spectrum(j as f64 * period)).sqrt()
            })
            .collect();
        Ok(Hom {
            dim,
            kernel,
            order,
            period,
            scale,
        })
    }

    /// The kernel approximated.
    pub fn kernel(&self) -> HomKernel {
        self.kernel
    }

    /// Order r (2r + 1 features per input dimension).
    pub fn order(&self) -> usize {
        self.order
    }

    /// Sampling period L.
    pub fn period(&self) -> f64 {
        self.period
    }

    /// The first negative value of row-major `data` (`dim` columns) as an error naming `what`:
    /// the map is defined on non-negative input only (histograms).
    pub(crate) fn check_non_negative(&self, what: &str, data: &[f32]) -> Result<()> {
        match data.iter().position(|v| *v < 0.0) {
            None => Ok(()),
            Some(p) => Err(negative_error(self.kernel, what, data, self.dim, p)),
        }
    }

    /// The stage as a model-file record (FORMAT.md §4.2, format 1.6).
    pub fn to_record(&self) -> StageRecord {
        let u = |name: &str, v: u64| Tensor::new(name, &[], TensorData::U64(vec![v]));
        StageRecord {
            kind: stage_kind::HOM,
            required: true,
            tensors: vec![
                u("dim", self.dim as u64),
                u("kernel", self.kernel.code()),
                u("order", self.order as u64),
                f64_tensor("period", &[], vec![self.period]),
            ],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and values.
    pub fn from_record(rec: &StageRecord) -> Result<Hom> {
        let mut r = RecordReader::new("hom", stage_kind::HOM, rec)?;
        let dim = r.u64_scalar("dim")?;
        let code = r.u64_scalar("kernel")?;
        let order = r.u64_scalar("order")?;
        let period = r.f64_scalar("period")?;
        r.finish()?;
        let kernel = HomKernel::from_code(code).ok_or_else(|| {
            ModelError::bad_tensor(
                "hom",
                "kernel",
                format!("unknown kernel {code} (1 = chi2, 2 = intersection)"),
            )
        })?;
        if order > MAX_HOM_ORDER {
            return Err(ModelError::bad_tensor(
                "hom",
                "order",
                format!("must be between 1 and {MAX_HOM_ORDER}, got {order}"),
            ));
        }
        let dim = usize::try_from(dim)
            .map_err(|_| ModelError::bad_tensor("hom", "dim", format!("{dim} is too large")))?;
        Hom::new(dim, kernel, order as usize, period)
    }
}

/// The error for the negative value at flat position `pos` of `data` (`dim` columns).
pub(crate) fn negative_error(
    kernel: HomKernel,
    what: &str,
    data: &[f32],
    dim: usize,
    pos: usize,
) -> ModelError {
    ModelError::OutOfRange {
        what: what.to_string(),
        row: pos / dim.max(1),
        col: pos % dim.max(1),
        value: data.get(pos).copied().unwrap_or(f32::NAN),
        detail: format!(
            "hom:{} maps non-negative input only (histograms, Vedaldi & Zisserman)",
            kernel.name()
        ),
    }
}

impl RowMap for Hom {
    fn in_dim(&self) -> usize {
        self.dim
    }
    fn out_dim(&self) -> usize {
        (2 * self.order + 1) * self.dim
    }
    fn map_row(&self, x: &[f32], out: &mut [f32]) {
        let d = self.dim;
        for (i, &v) in x.iter().enumerate() {
            let v = f64::from(v);
            if v <= 0.0 {
                // ψ(0) = 0 (the limit); negative input is refused before any map runs.
                for j in 0..=2 * self.order {
                    out[j * d + i] = 0.0;
                }
                continue;
            }
            let root = v.sqrt();
            let log = v.ln();
            out[i] = (self.scale[0] * root) as f32;
            for j in 1..=self.order {
                let a = root * self.scale[j];
                let (s, c) = (j as f64 * self.period * log).sin_cos();
                out[(2 * j - 1) * d + i] = (a * c) as f32;
                out[2 * j * d + i] = (a * s) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(h: &Hom, x: f32, y: f32) -> f64 {
        let w = h.out_dim();
        let (mut px, mut py) = (vec![0f32; w], vec![0f32; w]);
        h.map_row(&[x], &mut px);
        h.map_row(&[y], &mut py);
        px.iter().zip(&py).map(|(a, b)| f64::from(a * b)).sum()
    }

    const VALUES: [f32; 6] = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5];

    /// r = 1: ψ(x)·ψ(y) is the truncated series √(xy) (L κ(0) + 2 L κ(L) cos(L log(y/x))),
    /// within 0.10 (χ²) / 0.21 (intersection) of the kernel, relative to √(xy).
    #[test]
    fn order_one_is_the_truncated_series() {
        for (kernel, bound) in [(HomKernel::Chi2, 0.102), (HomKernel::Intersection, 0.21)] {
            let l = kernel.default_period();
            let h = Hom::new(1, kernel, 1, l).unwrap();
            for &x in &VALUES {
                for &y in &VALUES {
                    let got = approx(&h, x, y);
                    let (xf, yf) = (f64::from(x), f64::from(y));
                    let s = (xf * yf).sqrt();
                    let series = if s == 0.0 {
                        0.0
                    } else {
                        s * (l * kernel.spectrum(0.0)
                            + 2.0 * l * kernel.spectrum(l) * (l * (yf / xf).ln()).cos())
                    };
                    assert!((got - series).abs() < 1e-6, "{kernel:?} ψ({x})·ψ({y})");
                    let err = (got - kernel.exact(xf, yf)).abs();
                    assert!(err <= bound * s + 1e-7, "{kernel:?} k({x}, {y}): {got}");
                }
            }
        }
    }

    /// Higher orders converge to the kernel: χ² r = 8, L = 0.4 within 0.3 %, intersection
    /// r = 16, L = 0.4 within 5 % (its spectrum's 1/λ² tail), relative to √(xy).
    #[test]
    fn higher_orders_approximate_the_kernels() {
        for (kernel, order, bound) in [
            (HomKernel::Chi2, 8, 0.003),
            (HomKernel::Intersection, 16, 0.048),
        ] {
            let h = Hom::new(1, kernel, order, 0.4).unwrap();
            for &x in &VALUES {
                for &y in &VALUES {
                    let got = approx(&h, x, y);
                    let want = kernel.exact(x.into(), y.into());
                    let tol = bound * f64::from(x * y).sqrt() + 1e-7;
                    assert!(
                        (got - want).abs() <= tol,
                        "{kernel:?} k({x}, {y}) = {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn intersection_spectrum_integrates_to_the_kernel_at_zero() {
        // K(0) = ∫ κ(λ) dλ = 1 for both kernels (√(xx) K(0) = x).
        for kernel in [HomKernel::Chi2, HomKernel::Intersection] {
            let step = 1e-3;
            let total: f64 = (-200_000..=200_000)
                .map(|i| kernel.spectrum(f64::from(i) * step) * step)
                .sum();
            assert!((total - 1.0).abs() < 3e-3, "{kernel:?}: ∫κ = {total}");
        }
    }

    #[test]
    fn record_round_trips_and_bad_values_are_refused() {
        let h = Hom::new(5, HomKernel::Intersection, 1, 0.5).unwrap();
        assert_eq!(Hom::from_record(&h.to_record()).unwrap(), h);
        let mut rec = h.to_record();
        rec.tensors[1].data = TensorData::U64(vec![7]);
        let err = Hom::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("hom") && err.contains("kernel"), "{err}");
        let mut rec = h.to_record();
        rec.tensors[3].data = TensorData::F64(vec![-1.0]);
        let err = Hom::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("period"), "{err}");
        let err = h
            .check_non_negative("encode: input", &[0.0, 1.0, 2.0, 3.0, 4.0, 0.5, -0.25])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("row 1, column 1") && err.contains("hom:inter"),
            "{err}"
        );
    }
}
