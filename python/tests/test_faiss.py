"""faiss-cpu on the same codes: IndexBinaryFlat's Hamming distances equal codedb's scores."""

from __future__ import annotations

import numpy as np

import faiss


def test_hamming_distances_equal_faiss_binary_flat(index, data, model):
    x, _ = data
    codes = model.encode(x)
    assert codes.dtype == np.uint8 and codes.shape == (600, model.code_bytes)
    q = x[:50] + 0.5
    flat = faiss.IndexBinaryFlat(model.code_bits)
    flat.add(codes)
    Df, If = flat.search(model.encode(q), 10)
    D, I = index.search(q, k=10, mode="hamming")
    assert D.dtype == np.int32 and I.dtype == np.int64
    # Distances agree exactly; ids may differ only inside runs of equal distance.
    np.testing.assert_array_equal(D, Df)
    for qi in range(len(q)):
        for d in np.unique(D[qi]):
            full = np.nonzero((Df[qi] == d))[0]
            if full.max() < 9:  # a tie group not cut by k: the same set of ids
                assert set(I[qi][D[qi] == d]) == set(If[qi][Df[qi] == d])
