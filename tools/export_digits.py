#!/usr/bin/env python3
"""Re-creates tests/data/digits/ from scikit-learn's bundled copy of the UCI optdigits test set.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy scikit-learn
    /tmp/venv/bin/python tools/export_digits.py tests/data/digits

Writes pixels.npy (uint8, 1797 x 64, grey levels 0..16, row-major 8x8 images) and labels.npy
(int32, 1797). No network access: the data ships inside the scikit-learn wheel.
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/digits"
    os.makedirs(out, exist_ok=True)
    d = load_digits()
    pixels = d.data.astype(np.uint8)
    assert pixels.shape == (1797, 64) and pixels.max() == 16
    np.save(os.path.join(out, "pixels.npy"), pixels)
    np.save(os.path.join(out, "labels.npy"), d.target.astype(np.int32))
    print(f"wrote {out}/pixels.npy {pixels.shape} and labels.npy")


if __name__ == "__main__":
    main()
