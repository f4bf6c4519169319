//! Runtime choice of the instruction set a kernel runs with.
//!
//! The CPU is probed once (`is_x86_feature_detected!`, cached in a `OnceLock`) and every scan
//! resolves its [`Dispatch`] request against that probe. Nothing is compiled with
//! `-C target-cpu=native`: SIMD kernels are `#[target_feature]` functions that are only called
//! after the probe said the features are present. `CODEDB_FORCE_SCALAR=1` in the environment
//! (read once, at the first probe) makes `Dispatch::Auto` pick the scalar kernels, which is how a
//! user can rule the SIMD paths out when hunting a bug.

use std::sync::OnceLock;

use super::error::{Result, ScanError};

/// Which kernels a scan asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dispatch {
    /// The best kernels this CPU supports (scalar if `CODEDB_FORCE_SCALAR=1`).
    #[default]
    Auto,
    /// The portable scalar twins: the reference every SIMD kernel is tested against.
    Scalar,
    /// AVX2 (+FMA, F16C, POPCNT, BMI2) kernels; an error if the CPU lacks them.
    Avx2,
    /// AVX-512 (F, BW, VPOPCNTDQ) kernels where they exist, AVX2 ones elsewhere; an error if the
    /// CPU lacks them.
    Avx512,
    /// AArch64 NEON kernels where they exist (Hamming: `cnt`), scalar elsewhere; an error on
    /// other CPUs.
    Neon,
}

/// A resolved instruction-set level. Each x86 level implies the ones below it; `Neon` (AArch64)
/// sits between `Scalar` and the x86 levels in the order only so that an x86 request on an
/// AArch64 CPU compares as unavailable — a `Neon` request is resolved explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Isa {
    Scalar,
    Neon,
    Avx2,
    Avx512,
}

impl Isa {
    /// A short name, as printed by `codedb bench`.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Neon => "neon",
            Isa::Avx2 => "avx2+fma",
            Isa::Avx512 => "avx512-vpopcntdq",
        }
    }
}

struct Probe {
    best: Isa,
    force_scalar: bool,
}

fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| Probe {
        best: best_isa(),
        force_scalar: std::env::var("CODEDB_FORCE_SCALAR").is_ok_and(|v| v == "1"),
    })
}

#[cfg(target_arch = "x86_64")]
fn best_isa() -> Isa {
    let avx2 = is_x86_feature_detected!("avx2")
        && is_x86_feature_detected!("fma")
        && is_x86_feature_detected!("f16c")
        && is_x86_feature_detected!("popcnt")
        && is_x86_feature_detected!("bmi2");
    let avx512 = avx2
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vpopcntdq");
    if avx512 {
        Isa::Avx512
    } else if avx2 {
        Isa::Avx2
    } else {
        Isa::Scalar
    }
}

#[cfg(target_arch = "aarch64")]
fn best_isa() -> Isa {
    if std::arch::is_aarch64_feature_detected!("neon") {
        Isa::Neon
    } else {
        Isa::Scalar
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn best_isa() -> Isa {
    Isa::Scalar
}

/// The best instruction set this CPU offers to the scan kernels (ignores `CODEDB_FORCE_SCALAR`).
pub fn best_available() -> Isa {
    probe().best
}

/// What `Dispatch::Auto` runs with on this machine, as a short name for benchmark output.
pub fn detected_isa() -> &'static str {
    // Auto always resolves.
    match Dispatch::Auto.resolve() {
        Ok(isa) => isa.name(),
        Err(_) => Isa::Scalar.name(),
    }
}

/// Every [`Dispatch`] this CPU can run, scalar first (what the equivalence tests iterate over).
pub fn available_dispatches() -> Vec<Dispatch> {
    let best = probe().best;
    let mut out = vec![Dispatch::Scalar];
    if best >= Isa::Avx2 {
        out.push(Dispatch::Avx2);
    }
    if best >= Isa::Avx512 {
        out.push(Dispatch::Avx512);
    }
    if best == Isa::Neon {
        out.push(Dispatch::Neon);
    }
    out
}

impl Dispatch {
    /// The instruction set this request runs with, or an error if the CPU lacks it.
    pub fn resolve(self) -> Result<Isa> {
        let p = probe();
        let want = match self {
            Dispatch::Auto => {
                return Ok(if p.force_scalar { Isa::Scalar } else { p.best });
            }
            Dispatch::Scalar => Isa::Scalar,
            Dispatch::Avx2 => Isa::Avx2,
            Dispatch::Avx512 => Isa::Avx512,
            Dispatch::Neon => {
                return if p.best == Isa::Neon {
                    Ok(Isa::Neon)
                } else {
                    Err(ScanError::IsaUnavailable {
                        requested: Isa::Neon.name(),
                        detected: p.best.name(),
                    })
                };
            }
        };
        if want <= p.best {
            Ok(want)
        } else {
            Err(ScanError::IsaUnavailable {
                requested: want.name(),
                detected: p.best.name(),
            })
        }
    }
}
