#!/usr/bin/env python3
"""Exactness check of codedb's classifiers against scikit-learn.

On the digits data of tests/data/digits, split by row parity (even rows train, odd rows test,
the split tests/classify_digits.rs uses), it computes
  - sklearn.neighbors.NearestCentroid predictions on the test rows, and
  - sklearn LinearDiscriminantAnalysis(solver="svd") test-row projections (9 directions),
writes them as golden files next to the data (--write-golden), and runs the Rust test that
compares codedb's NCM predictions (must be identical) and FDA projection (each direction equal
up to sign and scale: |correlation| >= 0.9999) with them.

With --fashion it also runs NearestCentroid on the full Fashion-MNIST train/test split
(/usr/share/datasets/fashion-mnist) and the ignored Rust test that compares all 10,000 test
predictions.

Usage: python3 tools/compare_classifiers.py [--write-golden] [--fashion]
Runs inside its own venv (tools/_venv.py) with numpy and scikit-learn.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _venv import ensure  # noqa: E402

ensure(["numpy", "scikit-learn"])

import gzip  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.neighbors import NearestCentroid  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(ROOT, "tests", "data", "digits")
FASHION = "/usr/share/datasets/fashion-mnist"


def idx_images(path):
    with gzip.open(path) as f:
        data = f.read()
    n, r, c = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
    return np.frombuffer(data, np.uint8, offset=16).reshape(n, r * c)


def idx_labels(path):
    with gzip.open(path) as f:
        data = f.read()
    return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)


def cargo_test(args, env):
    cmd = ["cargo", "test", "--release", "--test", "classify_digits", "--", *args]
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, cwd=ROOT, env=env).returncode


def main():
    write = "--write-golden" in sys.argv
    x = np.load(os.path.join(DIGITS, "pixels.npy")).astype(np.float64)
    y = np.load(os.path.join(DIGITS, "labels.npy")).astype(np.int64)
    tr, te = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    nc = NearestCentroid().fit(x[tr], y[tr]).predict(x[te]).astype(np.int64)
    lda = LinearDiscriminantAnalysis(solver="svd").fit(x[tr], y[tr])
    proj = lda.transform(x[te])[:, :9].astype(np.float32)
    print(f"digits: NearestCentroid test accuracy {np.mean(nc == y[te]):.4f}; "
          f"LDA explained variance ratio {np.round(lda.explained_variance_ratio_, 4)}")
    nc_path = os.path.join(DIGITS, "sklearn_nearest_centroid.npy")
    lda_path = os.path.join(DIGITS, "sklearn_lda_transform.npy")
    if write:
        np.save(nc_path, nc)
        np.save(lda_path, proj)
        print(f"wrote {nc_path}, {lda_path}")
    else:
        same = np.array_equal(np.load(nc_path), nc) and np.allclose(np.load(lda_path), proj, atol=1e-4)
        print("golden files match this scikit-learn" if same else
              "golden files differ from this scikit-learn: rerun with --write-golden")
    env = dict(os.environ)
    rc = cargo_test(["sklearn"], env)
    if "--fashion" in sys.argv:
        xtr = idx_images(os.path.join(FASHION, "train-images-idx3-ubyte.gz")).astype(np.float64)
        ytr = idx_labels(os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
        xte = idx_images(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")).astype(np.float64)
        pred = NearestCentroid().fit(xtr, ytr).predict(xte).astype(np.int64)
        out = "/tmp/codedb-sklearn-fashion-nearest-centroid.npy"
        np.save(out, pred)
        print(f"fashion-mnist: NearestCentroid test top-1 error {np.mean(pred != idx_labels(os.path.join(FASHION, 't10k-labels-idx1-ubyte.gz'))):.4f}")
        env["CODEDB_SKLEARN_FASHION_NC"] = out
        rc = rc or cargo_test(["--ignored", "fashion_ncm_matches_sklearn"], env)
    sys.exit(rc)


if __name__ == "__main__":
    main()
