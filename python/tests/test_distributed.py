"""codedb.distributed without Ray: routing, the exact merge (ties by id included) and the
sharded writer, over a thread pool. Results must equal one index holding every row."""

from __future__ import annotations

import glob
import os
import pathlib
from typing import Any

import numpy as np
import pytest

import codedb
from codedb import _merge
from codedb.distributed import (
    Partial,
    ShardError,
    ShardedIndex,
    ShardedSearcher,
    ThreadShards,
    shard_of,
)

N_SHARDS = 4


def tied_data(seed: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """800 rows of 32-D in 4 classes; rows come in groups of 4 identical descriptors with
    distinct ids, so codes — and every code score — tie, inside and across shards."""
    rng = np.random.default_rng(seed)
    base_y = np.repeat(np.arange(4), 50)
    base = (rng.normal(size=(200, 32)) + 3 * base_y[:, None]).astype(np.float32)
    x = np.repeat(base, 4, axis=0)
    y = np.repeat(base_y, 4)
    ids = rng.permutation(10_000)[: len(x)].astype(np.int64)  # not 0..n-1, not sorted
    return x, y, ids


def build_pair(
    tmp: pathlib.Path, spec: str, store_vectors: str | None = None
) -> tuple[codedb.Index, ShardedIndex, np.ndarray]:
    x, y, ids = tied_data()
    model = codedb.train(x, spec, seed=2)
    single = codedb.Index.build(tmp / "one", model, x, ids=ids, labels=y, store_vectors=store_vectors)
    paths = [tmp / f"s{i}" for i in range(N_SHARDS)]
    sharded = ShardedIndex.build(paths, model, x, ids=ids, labels=y, store_vectors=store_vectors)
    return single, sharded, x


def assert_same(a: tuple[Any, Any], b: tuple[Any, Any]) -> None:
    np.testing.assert_array_equal(a[1], b[1])
    assert a[0].dtype == b[0].dtype
    np.testing.assert_array_equal(a[0], b[0])


def kill_for_good(ray: Any, actor: Any, timeout: float = 60.0) -> None:
    """``ray.kill(actor, no_restart=True)`` and wait until the actor is gone: the kill is
    asynchronous, so a call made right after it may still be answered."""
    import time

    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=5)
        except Exception:
            return
        time.sleep(0.05)
    raise AssertionError(f"the actor still answers {timeout} s after ray.kill")


def test_shard_of_is_splitmix64_and_spreads() -> None:
    def splitmix(v: int) -> int:
        m = (1 << 64) - 1
        z = (v + 0x9E3779B97F4A7C15) & m
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    ids = np.array([0, 1, 2, 12345, 2**40 + 7, 2**63 - 1], dtype=np.int64)
    for n in (1, 3, 4, 7):
        assert shard_of(ids, n).tolist() == [splitmix(int(v)) % n for v in ids]
    counts = np.bincount(shard_of(np.arange(100_000), 4), minlength=4)
    assert counts.min() > 24_000 and counts.max() < 26_000
    with pytest.raises(codedb.InvalidArgument):
        shard_of(np.array([-1]), 4)


def test_merge_breaks_ties_by_smaller_id() -> None:
    # Shard lists, each sorted as a shard returns them; scores tie across shards.
    a = (np.array([[1, 3, 3]], np.int32), np.array([[9, 4, 8]], np.int64))
    b = (np.array([[1, 3, 2147483647]], np.int32), np.array([[2, 5, -1]], np.int64))
    d, i = _merge.merge_topk([a, b], 5)
    assert i.tolist() == [[2, 9, 4, 5, 8]] and d.tolist() == [[1, 1, 3, 3, 3]]
    d, i = _merge.merge_topk([a, b], 7)  # fewer candidates than k: padded
    assert i.tolist() == [[2, 9, 4, 5, 8, -1, -1]] and d[0, -1] == np.iinfo(np.int32).max
    f = (np.array([[0.5, 0.25]], np.float32), np.array([[7, 3]], np.int64))
    g = (np.array([[0.5, -np.inf]], np.float32), np.array([[1, -1]], np.int64))
    d, i = _merge.merge_topk([f, g], 3, larger_is_better=True)
    assert i.tolist() == [[1, 7, 3]]


@pytest.mark.parametrize(
    ("spec", "mode", "rerank", "store"),
    [
        ("pca-itq:16", None, None, None),  # Hamming
        ("pca-itq:16", "asym", None, None),
        ("pq:8x8", None, None, None),  # ADC
        ("pq:8x8", "adc-ip", None, None),  # larger is better
        ("pca-itq:16", None, 40, "f32"),  # Hamming, re-ranked
        ("pq:8x8", None, 25, "f32"),  # ADC, re-ranked
        ("pca-itq:16", "exact", None, "f32"),
    ],
)
def test_sharded_equals_one_index(
    tmp_path: pathlib.Path, spec: str, mode: str | None, rerank: int | None, store: str | None
) -> None:
    single, sharded, x = build_pair(tmp_path, spec, store)
    assert len(sharded) == len(single)
    assert all(len(ix) > 0 for ix in sharded.indexes)
    q = x[::37] + np.float32(0.01)
    for k in (1, 10, 23):
        if rerank is not None and rerank < k:
            continue
        want = single.search(q, k=k, mode=mode, rerank=rerank)
        got = sharded.search(q, k=k, mode=mode, rerank=rerank)
        assert_same(got, want)
    # Ties: the first result list of an exact duplicate holds its 4 copies, by id.
    if mode is None and rerank is None and spec.startswith("pca"):
        _, i = sharded.search(x[:1], k=4)
        assert sorted(i[0].tolist()) == i[0].tolist()


def test_rerank_is_the_global_candidate_set(tmp_path: pathlib.Path) -> None:
    """Per-shard re-ranking alone (the k best of each shard's own R candidates) is not one
    index's answer; the merge must restrict to the global R best code candidates."""
    single, sharded, x = build_pair(tmp_path, "pca-itq:16", "f32")
    rng = np.random.default_rng(1)
    q = (x[rng.choice(len(x), 40)] + rng.normal(scale=0.5, size=(40, 32))).astype(np.float32)
    want = single.search(q, k=5, rerank=8)
    assert_same(sharded.search(q, k=5, rerank=8), want)
    naive = _merge.merge_topk(
        [ix.search(q, k=5, rerank=8) for ix in sharded.indexes], 5
    )
    assert not np.array_equal(naive[1], want[1]), "the data must tell the two merges apart"


def test_classify_equals_one_index(tmp_path: pathlib.Path) -> None:
    single, sharded, x = build_pair(tmp_path, "pca-itq:16")
    q = x[::11]
    assert_same(sharded.classify(q, top=3), single.classify(q, top=3))
    dim, table = sharded.class_sums()
    d1, t1 = single.class_sums()
    assert dim == d1 and [c["count"] for c in table] == [c["count"] for c in t1]
    # A class added with images: shard 0 holds it, the merged table has it once.
    extra = x[:40] + np.float32(5.0)
    cid = sharded.add_class("extra", extra)
    assert single.add_class("extra", extra, id=cid) == cid
    sharded.commit(), single.commit()
    assert_same(sharded.classify(q, top=4), single.classify(q, top=4))


def test_writes_route_and_match_after_delete_and_compact(tmp_path: pathlib.Path) -> None:
    x, y, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    single = codedb.Index.create(tmp_path / "one", model)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sharded = ShardedIndex.create(paths, model)
    where = sharded.add(x, ids=ids)
    single.add(x, ids=ids)
    versions = sharded.commit()
    single.commit()
    assert versions == [2] * N_SHARDS
    for s, ix in enumerate(sharded.indexes):
        assert len(ix) == int((where == s).sum())
    gone = ids[::3]
    sharded.delete(gone)
    single.delete(gone)
    sharded.commit(), single.commit()
    q = x[::29]
    assert_same(sharded.search(q, k=12), single.search(q, k=12))
    sharded.compact()
    single.compact()
    assert_same(sharded.search(q, k=12), single.search(q, k=12))
    assert not np.isin(sharded.search(q, k=50)[1], gone).any()
    with pytest.raises(ShardError, match=r"shard \d .*NotFoundError"):
        sharded.delete([10_000_123])
    with pytest.raises(codedb.InvalidArgument, match="explicit ids"):
        sharded.add(x, ids=None)  # type: ignore[arg-type]
    with pytest.raises(codedb.InvalidArgument, match="nprobe"):
        sharded.search(q, nprobe=2)
    sharded.close()
    # Reopened (same path order): the same index.
    again = ShardedIndex.open(paths)
    assert_same(again.search(q, k=12), single.search(q, k=12))
    again.close()


def test_shard_with_another_model_is_refused(tmp_path: pathlib.Path) -> None:
    x, _, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    other = codedb.train(x, "pca-itq:16", seed=3)
    paths = [tmp_path / f"s{i}" for i in range(3)]
    ShardedIndex.create(paths[:2], model).close()
    codedb.Index.create(paths[2], other).close()
    with pytest.raises(ShardError, match=r"shard 2 \(.*s2\): model [0-9a-f]+ differs") as e:
        ShardedIndex.open(paths)
    assert e.value.shard == 2
    # The lock of every shard opened before the refusal is released.
    ShardedIndex.open(paths[:2]).close()


def corrupt_log(path: pathlib.Path) -> str:
    f = glob.glob(str(path / "log-*.log"))[0]
    b = bytearray(pathlib.Path(f).read_bytes())
    b[len(b) // 2] ^= 0xFF
    os.chmod(f, 0o644)
    pathlib.Path(f).write_bytes(bytes(b))
    return f


def test_corrupt_shard_is_named(tmp_path: pathlib.Path) -> None:
    x, _, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.create(paths, model)
    sh.add(x, ids=ids)
    sh.commit()
    sh.close()
    bad = corrupt_log(paths[1])
    with pytest.raises(ShardError, match=r"shard 1 \(.*s1\): CorruptError") as e:
        ThreadShards.open(paths)
    assert bad in str(e.value)
    with pytest.raises(ShardError, match=r"shard 1 .*CorruptError"):
        ShardedIndex.open(paths)


class FailingShard:
    """Stands for a shard whose server is gone."""

    def __getattr__(self, name: str) -> Any:
        raise ConnectionError("server gone")


def test_failed_shard_raises_or_is_reported_missing(tmp_path: pathlib.Path) -> None:
    single, sharded, x = build_pair(tmp_path, "pca-itq:16")
    targets: list[Any] = list(sharded.indexes)
    targets[2] = FailingShard()
    searcher = ShardedSearcher(ThreadShards(targets, sharded.paths))
    q = x[::50]
    with pytest.raises(ShardError, match=r"shard 2 \(.*s2\): ConnectionError: server gone"):
        searcher.search(q, k=5)
    with pytest.raises(ShardError, match="shard 2"):
        searcher.classify(q)
    got = searcher.search(q, k=5, allow_partial=True)
    assert isinstance(got, Partial)
    assert [m.shard for m in got.missing] == [2] and "server gone" in got.missing[0].error
    rest = [ix for s, ix in enumerate(sharded.indexes) if s != 2]
    assert_same((got.D, got.I), _merge.merge_topk([ix.search(q, k=5) for ix in rest], 5))
    full = sharded.search(q, k=5, allow_partial=True)
    assert full.missing == []
    searcher.close()


@pytest.mark.parametrize("mih", ["on", "off", "auto"])
def test_sharded_mih_equals_one_index(tmp_path: pathlib.Path, mih: str) -> None:
    """`mih=` as on Index.search: the multi-index hashing tables of every shard change the
    time, never the merged results (32-bit codes: the shards' segments carry tables)."""
    single, sharded, x = build_pair(tmp_path, "pca-itq:32", "f32")
    q = x[::23] + np.float32(0.01)
    for k in (1, 10, 23):
        want = single.search(q, k=k, mih=mih)
        assert_same(sharded.search(q, k=k, mih=mih), want)
        assert_same(sharded.search(q, k=k, mih=mih), single.search(q, k=k, mih="off"))
    want = single.search(q, k=5, rerank=20, mih=mih)
    assert_same(sharded.search(q, k=5, rerank=20, mih=mih), want)
    with pytest.raises(codedb.InvalidArgument, match="mih"):
        sharded.search(q, k=5, mih="sometimes")


class FellBack:
    """A shard target whose open fell back: `skipped_manifests` as the native Snapshot and
    Index report it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.skipped_manifests = [
            {"version": 3, "file": "v00000000000000000003.manifest", "error": "checksum mismatch"}
        ]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_search_over_a_fallen_back_shard_warns_naming_it(tmp_path: pathlib.Path) -> None:
    from codedb.distributed import ShardFallbackWarning

    single, sharded, x = build_pair(tmp_path, "pca-itq:16")
    targets: list[Any] = list(sharded.indexes)
    targets[1] = FellBack(targets[1])
    searcher = ShardedSearcher(ThreadShards(targets, sharded.paths))
    q = x[::50]
    with pytest.warns(ShardFallbackWarning, match=r"shard 1 \(.*s1\): answered from version 2, "
                      r"an older version.*v00000000000000000003.manifest.*checksum mismatch"):
        got = searcher.search(q, k=5)
    assert_same(got, single.search(q, k=5))
    with pytest.warns(ShardFallbackWarning, match=r"shard 1 \(.*s1\)"):
        searcher.classify(q)
    searcher.close()


def damage_newest_manifest(path: pathlib.Path) -> pathlib.Path:
    f = sorted(path.glob("v*.manifest"))[-1]
    b = bytearray(f.read_bytes())
    b[len(b) // 2] ^= 0xFF
    os.chmod(f, 0o644)
    f.write_bytes(bytes(b))
    return f


def test_a_shard_with_a_damaged_manifest_warns_at_open_and_search(tmp_path: pathlib.Path) -> None:
    """A real fallback: shard 2's newest manifest damaged. Needs the native
    `skipped_manifests` (Snapshot and Index)."""
    from codedb.distributed import ShardFallbackWarning

    x, _, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    with ShardedIndex.create(paths, model) as sh:
        sh.add(x[:400], ids=ids[:400])
        sh.commit()
        sh.add(x[400:], ids=ids[400:])
        sh.commit()
    bad = damage_newest_manifest(paths[2])
    with pytest.warns(ShardFallbackWarning, match=rf"shard 2 \(.*s2\): opened at version 2.*{bad.name}"):
        shards = ThreadShards.open(paths)
    searcher = ShardedSearcher(shards)
    with pytest.warns(ShardFallbackWarning, match=r"shard 2 \(.*s2\): answered from version 2"):
        searcher.search(x[:3], k=5)
    searcher.close()
    with pytest.warns(ShardFallbackWarning, match=r"shard 2 \(.*s2\)"):
        ShardedIndex.open(paths).close()
