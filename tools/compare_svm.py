#!/usr/bin/env python3
"""Exactness check of codedb's linear SVM (src/model/classify/linear_svm.rs) against
scikit-learn's LinearSVC, which runs LIBLINEAR's dual coordinate descent (Hsieh et al. 2008).

Data: the digits of tests/data/digits, pixels / 16, even rows train, odd rows test, class 3
against the rest. Per-row cost weights: seeded uniform in [0.2, 3] (numpy seed 17). Cases:

  hinge_c1       loss="hinge",         C=1,   no weights, intercept_scaling=1
  sqhinge_c01_w  loss="squared_hinge", C=0.1, weights,    intercept_scaling=1
  hinge_c5_w_b3  loss="hinge",         C=5,   weights,    intercept_scaling=3

Both sides run to a tight tolerance (1e-9, at most 10^6 passes), so both reach the unique
optimum; tests/linear_svm_sklearn.rs compares test-row decision values and the weights.

One-vs-rest (the crate's `train_one_vs_rest`, shared by PiCoDes, classemes, attributes and the
`svm` classifier) against `LinearSVC(multi_class="ovr")`, all 10 digit classes:

  ovr_hinge_c1   loss="hinge", C=1, no weights, intercept_scaling=1

written as ovr_hinge_c1_decision.npy (the first 200 test rows × 10 classes, row-major) and
ovr_hinge_c1_predict.npy (every test row's predicted class).

With --write-golden it writes tests/data/svm/{weights,<case>_decision,<case>_coef}.npy
(coef: the d weights then the intercept) and the one-vs-rest files; then it runs that Rust
test.

Usage: python3 tools/compare_svm.py [--write-golden]
Runs inside its own venv (tools/_venv.py) with numpy and scikit-learn.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _venv import ensure  # noqa: E402

ensure(["numpy", "scikit-learn"])

import numpy as np  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(ROOT, "tests", "data", "digits")
OUT = os.path.join(ROOT, "tests", "data", "svm")
CASES = {
    "hinge_c1": dict(loss="hinge", C=1.0, weighted=False, intercept_scaling=1.0),
    "sqhinge_c01_w": dict(loss="squared_hinge", C=0.1, weighted=True, intercept_scaling=1.0),
    "hinge_c5_w_b3": dict(loss="hinge", C=5.0, weighted=True, intercept_scaling=3.0),
}


def main():
    write = "--write-golden" in sys.argv
    x = (np.load(os.path.join(DIGITS, "pixels.npy")).astype(np.float32) / 16).astype(np.float64)
    y = np.load(os.path.join(DIGITS, "labels.npy")) == 3
    tr, te = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    weights = np.random.default_rng(17).uniform(0.2, 3.0, len(tr))
    if write:
        os.makedirs(OUT, exist_ok=True)
        np.save(os.path.join(OUT, "weights.npy"), weights)
    for name, c in CASES.items():
        svc = LinearSVC(loss=c["loss"], C=c["C"], intercept_scaling=c["intercept_scaling"],
                        dual=True, tol=1e-9, max_iter=1_000_000, random_state=0)
        svc.fit(x[tr], y[tr], sample_weight=weights if c["weighted"] else None)
        dec = svc.decision_function(x[te])
        coef = np.concatenate([svc.coef_[0], svc.intercept_])
        acc = np.mean((dec > 0) == y[te])
        print(f"{name}: test accuracy {acc:.4f}, intercept {svc.intercept_[0]:.6f}, "
              f"|w| {np.linalg.norm(svc.coef_):.6f}, passes {svc.n_iter_}")
        if write:
            np.save(os.path.join(OUT, f"{name}_decision.npy"), dec)
            np.save(os.path.join(OUT, f"{name}_coef.npy"), coef)
        else:
            old = np.load(os.path.join(OUT, f"{name}_decision.npy"))
            print(f"  max |decision - golden| {np.max(np.abs(old - dec)):.2e}")
    labels = np.load(os.path.join(DIGITS, "labels.npy"))
    svc = LinearSVC(loss="hinge", C=1.0, intercept_scaling=1.0, dual=True,  # ovr: the default
                    tol=1e-9, max_iter=1_000_000, random_state=0)
    svc.fit(x[tr], labels[tr])
    dec = svc.decision_function(x[te])
    pred = svc.classes_[np.argmax(dec, axis=1)]
    print(f"ovr_hinge_c1: test accuracy {np.mean(pred == labels[te]):.4f}, passes {svc.n_iter_}")
    if write:
        np.save(os.path.join(OUT, "ovr_hinge_c1_decision.npy"), dec[:200].ravel())
        np.save(os.path.join(OUT, "ovr_hinge_c1_predict.npy"), pred.astype(np.int64))
    else:
        old = np.load(os.path.join(OUT, "ovr_hinge_c1_decision.npy"))
        print(f"  max |decision - golden| {np.max(np.abs(old - dec[:200].ravel())):.2e}")
    cmd = ["cargo", "test", "--release", "--test", "linear_svm_sklearn"]
    print("+", " ".join(cmd), file=sys.stderr)
    sys.exit(subprocess.run(cmd, cwd=ROOT).returncode)


if __name__ == "__main__":
    main()
