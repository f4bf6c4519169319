#!/usr/bin/env python3
"""Why CCA learned on categories does or does not transfer to instance retrieval: a numpy
probe over the sets `tools/instance_retrieval.py --work DIR` writes (learn.npy,
learn_labels.npy, learn_groups.npy, inst.npy, inst_groups.npy).

For each R it fits, in float64, the CCA `cca:R` fits (Gordo et al. CVPR 2012 eq. 6-8: the
covariances divided by N - 1, `C_aa = S_aa + rho * tr(S_aa) / D * I`, likewise for the one-hot
labels) for every rho of the grid, and scores the instance set (every variant queries the
others and itself, Euclidean, no distractors) as 4xrecall@4 / mAP with:
- the directions as CCA gives them (unit regularised variance, what `cca:R,float` stores);
- the directions multiplied by lambda_k^p, p = 1, 2 (the ITQ paper's CCA-ITQ eq. 4 scales
  by the eigenvalues: "correlation power");
- PCA at the same R, on the same rows, as the peer.
It also prints the spectrum of the descriptors against the regularisation `rho * tr/D`, which
is what decides whether CCA whitens.

Usage:
    python3 tools/cca_instance_probe.py --work /tmp/codedb-instances --dims 16,32 \\
        [--fit-rows learning|all]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _venv import ensure  # noqa: E402

ensure(["numpy"])

import numpy as np  # noqa: E402


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, help="an instance_retrieval.py --work directory")
    ap.add_argument("--dims", default="16,32", help="R values, comma-separated")
    ap.add_argument("--rho", default="0.0001,0.01,1,10,100,1000,10000", help="rho grid")
    ap.add_argument("--powers", default="0,1,2", help="correlation powers p")
    ap.add_argument("--fit-rows", default="all", choices=["all", "learning"],
                    help="fit on every training row, or on the rows without a group only")
    return ap.parse_args()


def scores(p, groups):
    """4xrecall@4 (itself included) and mAP (itself left out, over the whole ranking)."""
    sq = (p * p).sum(1)
    dist = sq[:, None] + sq[None, :] - 2 * p @ p.T
    np.fill_diagonal(dist, -np.inf)
    order = np.argsort(dist, axis=1, kind="stable")
    same = groups[order] == groups[:, None]
    s4 = same[:, :4].sum(1).mean()
    rel = same[:, 1:]
    hits = np.cumsum(rel, axis=1)
    ranks = np.arange(1, rel.shape[1] + 1)
    ap = (np.where(rel, hits / ranks, 0).sum(1) / rel.sum(1))
    return s4, float(ap.mean())


def isqrt(s, rho):
    s = s + rho * np.trace(s) / len(s) * np.eye(len(s))
    w, v = np.linalg.eigh(s)
    return (v / np.sqrt(w)) @ v.T


def main():
    a = args()
    w = a.work
    x = np.load(os.path.join(w, "learn.npy")).astype(np.float64)
    y = np.load(os.path.join(w, "learn_labels.npy"))
    g = os.path.join(w, "learn_groups.npy")
    if a.fit_rows == "learning" and os.path.exists(g):
        keep = np.load(g) < 0
        x, y = x[keep], y[keep]
    inst = np.load(os.path.join(w, "inst.npy")).astype(np.float64)
    groups = np.load(os.path.join(w, "inst_groups.npy"))
    n, d = x.shape
    _, y = np.unique(y, return_inverse=True)
    k = y.max() + 1
    m = x.mean(0)
    xc = x - m
    sxx = xc.T @ xc / (n - 1)
    yc = np.eye(k)[y]
    yc -= yc.mean(0)
    syy = yc.T @ yc / (n - 1)
    sxy = xc.T @ yc / (n - 1)
    ev, evec = np.linalg.eigh(sxx)
    ev, evec = ev[::-1], evec[:, ::-1]
    mean_var = np.trace(sxx) / d
    print(f"{n} rows, D = {d}, {k} classes; mean variance tr/D = {mean_var:.3e}; eigenvalues / "
          f"mean: top {ev[0] / mean_var:.1f}, 16th {ev[15] / mean_var:.2f}, 32nd "
          f"{ev[31] / mean_var:.2f}, smallest {ev[-1] / mean_var:.2e}")
    rhos = [float(r) for r in a.rho.split(",")]
    powers = [float(p) for p in a.powers.split(",")]
    for r in [int(v) for v in a.dims.split(",")]:
        print(f"\nR = {r}: PCA {'%.3f / %.3f' % scores((inst - m) @ evec[:, :r], groups)}")
        if r > k - 1:
            print(f"  CCA: one-hot labels of {k} classes give at most {k - 1} directions")
            continue
        print("| rho | rho * tr/D vs eigenvalues | lambda_1, lambda_R | "
              + " | ".join(f"p = {p:g}" for p in powers) + " |")
        print("|---:|---|---|" + "---:|" * len(powers))
        byy = {}
        for rho in rhos:
            ax = isqrt(sxx, rho)
            byy.setdefault(rho, isqrt(syy, rho))
            u, lam, _ = np.linalg.svd(ax @ sxy @ byy[rho], full_matrices=False)
            dirs = ax @ u[:, :r]
            lam = lam[:r]
            proj = (inst - m) @ dirs
            reg = rho * mean_var
            above = int((ev > reg).sum())
            cells = [("%.3f / %.3f" % scores(proj * lam ** p, groups)) for p in powers]
            print(f"| {rho:g} | {reg:.1e}: {above} of {d} eigenvalues above | "
                  f"{lam[0]:.3f}, {lam[-1]:.3f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
