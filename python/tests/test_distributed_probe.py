"""`nprobe` on a sharded index equals one index holding every row: IVF models (the coarse
centroids are the model's, the same in every shard) and class lists (probed by the merged class
means, the table being additive), in every mode, with re-ranking, after writes."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import codedb
from codedb.distributed import ShardedIndex
from test_distributed import N_SHARDS, assert_same


def probe_data(seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """1 204 rows of 32-D in 13 classes around separated centres, in pairs of identical rows
    (ties inside and across shards); class 12 has 2 rows only, so most shards lack it."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(13, 32))
    y_base = np.concatenate([np.repeat(np.arange(12), 50), [12]])
    base = centres[y_base] + rng.normal(size=(len(y_base), 32))
    x = np.repeat(base, 2, axis=0).astype(np.float32)
    y = np.repeat(y_base, 2).astype(np.int64)
    ids = rng.permutation(50_000)[: len(x)].astype(np.int64)
    return x, y, ids


def pair(tmp: pathlib.Path, spec: str, lists: str | None) -> tuple[codedb.Index, ShardedIndex, np.ndarray]:
    x, y, ids = probe_data()
    model = codedb.train(x, spec, seed=3)
    one = codedb.Index.build(tmp / "one", model, x, ids=ids, labels=y, store_vectors="f32",
                             lists=lists)
    paths = [tmp / f"s{i}" for i in range(N_SHARDS)]
    sharded = ShardedIndex.build(paths, model, x, ids=ids, labels=y, store_vectors="f32",
                                 lists=lists)
    return one, sharded, x


def queries(x: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(11)
    q = x[rng.choice(len(x), 48, replace=False)] + rng.normal(scale=1.5, size=(48, x.shape[1]))
    return np.vstack([q, x[-1:]]).astype(np.float32)  # and one query at the rare class


CASES: list[tuple[Any, ...]] = [
    ("pca-itq:16", None, None),
    ("pca-itq:16", "asym", None),
    ("pca-itq:16", None, 30),
    ("pca-itq:16", "exact", None),
    ("pq:8x8", None, None),
    ("pq:8x8", "adc-ip", None),
    ("pq:8x8", None, 25),
]


@pytest.mark.parametrize(("spec", "mode", "rerank"), CASES)
def test_class_list_nprobe_equals_one_index(tmp_path: pathlib.Path, spec: str,
                                            mode: str | None, rerank: int | None) -> None:
    one, sharded, x = pair(tmp_path, spec, "label")
    q = queries(x)
    # The rare class lives in some shards only: the others answer without it.
    rare = [s for s, ix in enumerate(sharded.indexes) if 12 in ix.classes and
            any(c["id"] == 12 and c["count"] > 0 for c in ix.class_sums()[1])]
    assert 0 < len(rare) < N_SHARDS
    for nprobe in (1, 2, 5, 12, 13, 40):
        for k in (1, 10, 25):
            if rerank is not None and rerank < k:
                continue
            want = one.search(q, k=k, mode=mode, rerank=rerank, nprobe=nprobe)
            assert_same(sharded.search(q, k=k, mode=mode, rerank=rerank, nprobe=nprobe), want)
    # Probing really restricts: with one list, far rows are not reached.
    full = one.search(q, k=200)[1]
    assert not np.array_equal(sharded.search(q, k=200, nprobe=1)[1], full)
    sharded.close()


def test_class_list_nprobe_after_writes(tmp_path: pathlib.Path) -> None:
    one, sharded, x = pair(tmp_path, "pca-itq:16", "label")
    rng = np.random.default_rng(5)
    extra = (x[:300] + rng.normal(scale=0.3, size=(300, 32))).astype(np.float32)
    extra_ids = np.arange(100_000, 100_300, dtype=np.int64)
    labels = np.arange(300) % 12  # classes every shard has (class 12 lives in a few)
    for ix in (one, sharded):
        ix.add(extra, ids=extra_ids, labels=labels, lists="label")
        ix.delete(extra_ids[::4])
        ix.commit()
    q = queries(x)
    for nprobe in (1, 3, 7):
        assert_same(sharded.search(q, k=15, nprobe=nprobe), one.search(q, k=15, nprobe=nprobe))
    sharded.compact()
    one.compact()
    assert_same(sharded.search(q, k=15, nprobe=3), one.search(q, k=15, nprobe=3))
    sharded.close()


@pytest.mark.parametrize(("mode", "rerank"), [(None, None), (None, 30), ("exact", None)])
def test_ivf_nprobe_equals_one_index(tmp_path: pathlib.Path, mode: str | None,
                                     rerank: int | None) -> None:
    one, sharded, x = pair(tmp_path, "ivf:16,pq:8x8", None)
    assert sharded.model.ivf_lists == 16
    q = queries(x)
    for nprobe in (1, 3, 16):
        for k in (1, 10):
            want = one.search(q, k=k, mode=mode, rerank=rerank, nprobe=nprobe)
            assert_same(sharded.search(q, k=k, mode=mode, rerank=rerank, nprobe=nprobe), want)
    assert not np.array_equal(sharded.search(q, k=100, nprobe=1)[1], one.search(q, k=100)[1])
    sharded.close()


def test_nprobe_refusals_name_the_argument(tmp_path: pathlib.Path) -> None:
    one, sharded, x = pair(tmp_path, "pca-itq:16", None)  # labels, but no lists
    q = queries(x)
    with pytest.raises(codedb.InvalidArgument, match="no inverted lists"):
        one.search(q, nprobe=2)
    with pytest.raises(codedb.InvalidArgument, match="nprobe: the sharded index has no inverted"):
        sharded.search(q, nprobe=2)
    with pytest.raises(codedb.InvalidArgument, match="nprobe"):
        sharded.search(q, nprobe=0)
    with pytest.raises(codedb.InvalidArgument, match="nprobe: not with classes"):
        sharded.search(q, nprobe=2, classes=[1])
    with pytest.raises(codedb.InvalidArgument, match="lists: 'nearest'"):
        sharded.add(x[:2], ids=[900_000, 900_001], labels=[0, 1], lists="nearest")
    sharded.close()
