#!/usr/bin/env python3
"""Exactness check of codedb's `hom:chi2` stage (src/model/hom.rs) against scikit-learn's
AdditiveChi2Sampler (Vedaldi & Zisserman's explicit χ² map), sample_steps = 2 (r = 1, 3
features per dimension), sample_interval = 0.5: codedb's defaults for `hom:chi2`.

Data (64 rows × 64 columns, float32): the first 32 digits of tests/data/digits, pixels / 16
(many zeros, 17 distinct values), then 32 rows drawn uniform in [0, 2) (numpy seed 5) with a
quarter of them set to 0. For `hom:inter` scikit-learn has no sampler: the script writes the
map from its formula (κ(λ) = 2 / (π (1 + 4λ²)), L = 0.8, same layout) in float64 numpy, an
independent reference for the Rust code.

With --write-golden it writes tests/data/hom/{input,chi2,inter}.npy; then it runs
tests/hom_sklearn.rs, which maps `input` with codedb and compares every value.

Usage: python3 tools/compare_hom.py [--write-golden]
Runs inside its own venv (tools/_venv.py) with numpy and scikit-learn.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _venv import ensure  # noqa: E402

ensure(["numpy", "scikit-learn"])

import numpy as np  # noqa: E402
from sklearn.kernel_approximation import AdditiveChi2Sampler  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(ROOT, "tests", "data", "digits")
OUT = os.path.join(ROOT, "tests", "data", "hom")


def intersection_map(x, period=0.8):
    """ψ of the intersection kernel, r = 1, in scikit-learn's layout [ψ0 | cos | sin]."""
    kappa = lambda lam: 2.0 / (np.pi * (1.0 + 4.0 * lam * lam))  # noqa: E731
    nz = x > 0
    out = np.zeros((x.shape[0], 3 * x.shape[1]))
    d = x.shape[1]
    v = x[nz]
    root, log = np.sqrt(v), np.log(v)
    b0, b1, b2 = out[:, :d], out[:, d:2 * d], out[:, 2 * d:]
    b0[nz] = np.sqrt(period * kappa(0.0)) * root
    a = np.sqrt(2 * period * kappa(period)) * root
    b1[nz] = a * np.cos(period * log)
    b2[nz] = a * np.sin(period * log)
    return out


def main():
    write = "--write-golden" in sys.argv
    digits = np.load(os.path.join(DIGITS, "pixels.npy")).astype(np.float32)[:32] / 16
    rng = np.random.default_rng(5)
    rand = rng.uniform(0, 2, (32, 64)).astype(np.float32)
    rand[rng.uniform(size=rand.shape) < 0.25] = 0
    x = np.vstack([digits, rand]).astype(np.float32)
    chi2 = AdditiveChi2Sampler(sample_steps=2, sample_interval=0.5).fit_transform(
        x.astype(np.float64))
    inter = intersection_map(x.astype(np.float64))
    # The maps approximate the kernels: report how well, on these rows.
    xd = x.astype(np.float64)
    exact = np.array([[np.sum(np.where(a + b > 0, 2 * a * b / np.maximum(a + b, 1e-300), 0))
                       for b in xd[:8]] for a in xd[:8]])
    print(f"chi2: max |ψψᵀ - k| / k over 8×8 rows: "
          f"{np.max(np.abs(chi2[:8] @ chi2[:8].T - exact) / exact):.4f}")
    exact_i = np.array([[np.sum(np.minimum(a, b)) for b in xd[:8]] for a in xd[:8]])
    print(f"inter: max |ψψᵀ - k| / k over 8×8 rows: "
          f"{np.max(np.abs(inter[:8] @ inter[:8].T - exact_i) / exact_i):.4f}")
    if write:
        os.makedirs(OUT, exist_ok=True)
        np.save(os.path.join(OUT, "input.npy"), x)
        np.save(os.path.join(OUT, "chi2.npy"), chi2)
        np.save(os.path.join(OUT, "inter.npy"), inter)
    else:
        old = np.load(os.path.join(OUT, "chi2.npy"))
        print(f"max |chi2 - golden| {np.max(np.abs(old - chi2)):.2e}")
    cmd = ["cargo", "test", "--release", "--test", "hom_sklearn"]
    print("+", " ".join(cmd), file=sys.stderr)
    sys.exit(subprocess.run(cmd, cwd=ROOT).returncode)


if __name__ == "__main__":
    main()
