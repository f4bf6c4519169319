//! Runtime choice of the instruction set a kernel runs with.
//!
//! The CPU is probed once (`is_x86_feature_detected!`, cached in a `OnceLock`) and every scan
//! resolves its [`Dispatch`] request against that probe. Nothing is compiled with
//! `-C target-cpu=native`: SIMD kernels are `#[target_feature]` functions that are only called
//! after the probe said the features are present. `CODEDB_FORCE_SCALAR=1` in the environment
//! (read once, at the first probe) makes `Dispatch::Auto` pick the scalar kernels, which is how a
//! user can rule the SIMD paths out when hunting a bug. `CODEDB_SCAN_ISA=scalar|avx2|avx512|neon`
//! caps `Auto` at that level instead (to measure the AVX2 kernels on an AVX-512 CPU in the same
//! binary); a value that is unknown or that the CPU lacks makes `Auto` an error naming the
//! variable, never a silent fallback.
//!
//! The level is the ceiling, not the kernel: under `Auto` each kernel family picks, per shape,
//! the fastest kernel measured at or below it (e.g. an AVX2 kernel on an AVX-512 CPU where that
//! won; each module's dispatch function says what was measured). An explicit `Dispatch::Avx2`
//! or `Dispatch::Avx512` runs that level's kernels, so the tests exercise every one.

use std::sync::OnceLock;

use super::error::{Result, ScanError};

/// Which kernels a scan asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dispatch {
    /// The best kernels this CPU supports (scalar if `CODEDB_FORCE_SCALAR=1`, at most the level
    /// `CODEDB_SCAN_ISA` names), chosen per kernel and shape.
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
    /// Portable Rust, no SIMD.
    Scalar,
    /// AArch64 NEON.
    Neon,
    /// x86-64 AVX2 with FMA.
    Avx2,
    /// x86-64 AVX-512 with VPOPCNTDQ.
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
    /// 512-bit operations run at full width (false on AMD Zen 4, which splits them in two
    /// 256-bit halves).
    full_width_512: bool,
    /// What `Auto` resolves to: `best`, scalar under `CODEDB_FORCE_SCALAR=1`, or the level
    /// `CODEDB_SCAN_ISA` names (an error if that is unknown or unavailable).
    auto: Result<Isa>,
}

fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let best = best_isa();
        let force_scalar = std::env::var("CODEDB_FORCE_SCALAR").is_ok_and(|v| v == "1");
        let cap = std::env::var("CODEDB_SCAN_ISA").ok();
        let auto = match (force_scalar, cap) {
            (true, _) => Ok(Isa::Scalar),
            (false, None) => Ok(best),
            (false, Some(v)) => auto_cap(&v, best),
        };
        Probe {
            best,
            auto,
            full_width_512: full_width_512(),
        }
    })
}

/// The level `CODEDB_SCAN_ISA=value` asks `Auto` to use on a CPU whose best level is `best`.
fn auto_cap(value: &str, best: Isa) -> Result<Isa> {
    let want = match value {
        "scalar" => Isa::Scalar,
        "avx2" => Isa::Avx2,
        "avx512" => Isa::Avx512,
        "neon" => Isa::Neon,
        other => {
            return Err(ScanError::Invalid {
                argument: "CODEDB_SCAN_ISA",
                detail: format!("{other:?} is not one of scalar, avx2, avx512, neon"),
            });
        }
    };
    let available = match want {
        Isa::Scalar => true,
        Isa::Neon => best == Isa::Neon,
        _ => best != Isa::Neon && want <= best,
    };
    if available {
        Ok(want)
    } else {
        Err(ScanError::IsaUnavailable {
            requested: want.name(),
            detected: best.name(),
        })
    }
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

/// False on AMD family 19h (Zen 3/Zen 4; only Zen 4 has AVX-512), whose vector units are 256
/// bits wide and run a 512-bit instruction as two halves: there a 512-bit kernel has no more
/// arithmetic throughput than a 256-bit one. Intel's AVX-512 cores (two 512-bit FMA ports on
/// Xeon) and AMD Zen 5 (family 1Ah, 512-bit datapaths) run them at full width.
#[cfg(target_arch = "x86_64")]
fn full_width_512() -> bool {
    use core::arch::x86_64::__cpuid;
    let v = __cpuid(0);
    // "AuthenticAMD" in ebx, edx, ecx.
    let amd = (v.ebx, v.edx, v.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
    let eax = __cpuid(1).eax;
    let base = (eax >> 8) & 0xf;
    let family = base + if base == 0xf { (eax >> 20) & 0xff } else { 0 };
    !(amd && family == 0x19)
}

#[cfg(not(target_arch = "x86_64"))]
fn full_width_512() -> bool {
    false
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

/// Whether this CPU runs 512-bit vector instructions at full width (see the module docs:
/// kernels bound by vector arithmetic pick AVX-512 under `Auto` only where this holds).
pub fn avx512_full_width() -> bool {
    probe().full_width_512
}

/// What `Dispatch::Auto` runs with on this machine, as a short name for benchmark output
/// (`"invalid CODEDB_SCAN_ISA"` when that variable makes `Auto` an error).
pub fn detected_isa() -> &'static str {
    match Dispatch::Auto.resolve() {
        Ok(isa) => isa.name(),
        Err(_) => "invalid CODEDB_SCAN_ISA",
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
            Dispatch::Auto => return p.auto.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_isa_variable_caps_auto_or_is_an_error() {
        assert_eq!(auto_cap("avx2", Isa::Avx512), Ok(Isa::Avx2));
        assert_eq!(auto_cap("avx512", Isa::Avx512), Ok(Isa::Avx512));
        assert_eq!(auto_cap("scalar", Isa::Neon), Ok(Isa::Scalar));
        assert_eq!(auto_cap("neon", Isa::Neon), Ok(Isa::Neon));
        for (v, best) in [
            ("avx512", Isa::Avx2),
            ("avx2", Isa::Neon),
            ("neon", Isa::Avx512),
        ] {
            assert!(
                matches!(auto_cap(v, best), Err(ScanError::IsaUnavailable { .. })),
                "{v} on {best:?}"
            );
        }
        let e = auto_cap("AVX2", Isa::Avx512).unwrap_err();
        assert!(e.to_string().contains("CODEDB_SCAN_ISA"), "{e}");
    }
}
