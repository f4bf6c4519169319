#!/usr/bin/env python3
"""Checks codedb's CCA (`cca:R`, Gordo et al. CVPR 2012 eq. 6-8) against references.

1. The digits (tests/data/digits) with their one-hot labels, ρ = 1e-4 (the default): codedb's
   canonical correlations (`codedb train --json`, "cca_correlations") against a numpy solve of
   the same regularised problem written as eq. 8, the non-symmetric eigenproblem
   C_aa⁻¹ C_ab C_bb⁻¹ C_ba u = λ² u (np.linalg.eig), with C = Σ/(N−1) + ρ·tr(Σ)/D·I per view.
2. A synthetic continuous second view (`--view`), ρ = 0: the same comparison, and
   scikit-learn's CCA (NIPALS, unregularised) canonical correlations.

Pass: every correlation within 1e-4 of the reference. Prints the largest differences.
Usage: python3 tools/compare_cca.py [--codedb PATH]   (default: target/release/codedb, built
if missing). Runs inside its own venv (tools/_venv.py) with numpy and scikit-learn.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _venv import ensure  # noqa: E402

ensure(["numpy", "scikit-learn"])

import numpy as np  # noqa: E402
from sklearn.cross_decomposition import CCA  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(ROOT, "tests", "data", "digits")
TOL = 1e-4


def codedb_bin():
    if "--codedb" in sys.argv:
        return sys.argv[sys.argv.index("--codedb") + 1]
    path = os.path.join(ROOT, "target", "release", "codedb")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "--release", "-p", "codedb-cli"], cwd=ROOT, check=True)
    return path


def codedb_correlations(exe, tmp, data, spec, labels=None, view=None, rho=None):
    out = os.path.join(tmp, "m.model")
    args = [exe, "train", "--data", data, "--pipeline", spec, "--out", out, "--force", "--json"]
    if labels:
        args += ["--labels", labels]
    if view:
        args += ["--view", view]
    if rho is not None:
        args += ["--cca-rho", str(rho)]
    r = subprocess.run(args, check=True, capture_output=True, text=True)
    return np.array(json.loads(r.stdout)["cca_correlations"])


def reference(x, y, rho):
    """Canonical correlations of eq. 8 by a dense non-symmetric eigensolve."""
    x = x - x.mean(0)
    y = y - y.mean(0)
    n = len(x)

    def cov(a, b):
        return a.T @ b / (n - 1)

    caa, cbb = cov(x, x), cov(y, y)
    caa += rho * np.trace(caa) / caa.shape[0] * np.eye(caa.shape[0])
    cbb += rho * np.trace(cbb) / cbb.shape[0] * np.eye(cbb.shape[0])
    cab = cov(x, y)
    m = np.linalg.solve(caa, cab) @ np.linalg.solve(cbb, cab.T)
    w = np.sort(np.clip(np.linalg.eigvals(m).real, 0, None))[::-1]
    return np.sqrt(w[: min(x.shape[1], y.shape[1])])


def check(name, got, want, k):
    diff = np.abs(got[:k] - want[:k]).max()
    print(f"{name}: top {k} correlations {np.round(got[:k], 6).tolist()}")
    print(f"{name}: max |codedb − reference| = {diff:.2e} ({'ok' if diff <= TOL else 'FAIL'})")
    return diff <= TOL


def main():
    exe = codedb_bin()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        pixels = os.path.join(DIGITS, "pixels.npy")
        labels = os.path.join(DIGITS, "labels.npy")
        x = np.load(pixels).astype(np.float64)
        y = np.load(labels).astype(np.int64)
        onehot = (y[:, None] == np.unique(y)[None, :]).astype(np.float64)
        got = codedb_correlations(exe, tmp, pixels, "cca:9,float", labels=labels)
        ok &= check("digits one-hot, rho 1e-4 vs eq. 8 (numpy)", got, reference(x, onehot, 1e-4), 9)

        rng = np.random.default_rng(0)
        xs = rng.standard_normal((3000, 12))
        ys = xs[:, :5] @ rng.standard_normal((5, 6)) + 2.0 * rng.standard_normal((3000, 6))
        xp, vp = os.path.join(tmp, "x.npy"), os.path.join(tmp, "view.npy")
        np.save(xp, xs.astype(np.float32))
        np.save(vp, ys.astype(np.float32))
        xs32 = np.load(xp).astype(np.float64)
        ys32 = np.load(vp).astype(np.float64)
        got = codedb_correlations(exe, tmp, xp, "cca:4,float", view=vp, rho=0)
        ok &= check("continuous view, rho 0 vs eq. 8 (numpy)", got, reference(xs32, ys32, 0.0), 6)
        cca = CCA(n_components=4, scale=False, max_iter=10000, tol=1e-12).fit(xs32, ys32)
        xsc, ysc = cca.transform(xs32, ys32)
        sk = np.array([abs(np.corrcoef(xsc[:, i], ysc[:, i])[0, 1]) for i in range(4)])
        ok &= check("continuous view, rho 0 vs sklearn CCA", got, sk, 4)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
