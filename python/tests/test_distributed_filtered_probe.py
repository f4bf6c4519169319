"""`nprobe` with `where=`/`ids=` on a sharded index equals one index holding every row: an IVF
model's filtered plan (a query whose probed lists hold too few passing rows probes on, or is
answered by the flat search over the passing rows) decided once per query over every shard's
counts (codedb.distributed._filtered_probe), with and without re-ranking, in threads and on Ray;
exact modes deciding by the passing rows of every shard; class lists searched again for a
query left short; the same errors as one index."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import codedb
from codedb import _merge, ivf_probe_decision
from codedb.distributed import RayShards, ShardError, ShardedIndex, ShardedSearcher
from test_distributed import assert_same

SHARDS = 3
LISTS = 16


def data(n: int = 1500, seed: int = 21) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Rows around 16 centres (so the lists differ in size), ids spread, two attribute columns:
    ``year`` (uniform over 40 years) and ``rare`` (true on 1 row in 60)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(16, 24))
    x = (centres[rng.integers(0, 16, n)] + rng.normal(size=(n, 24))).astype(np.float32)
    ids = rng.permutation(40 * n)[:n].astype(np.int64)
    cols = {"year": (1980 + rng.integers(0, 40, n)).astype(np.int64),
            "rare": rng.random(n) < 1 / 60}
    return x, ids, cols


@pytest.fixture(scope="module")
def ivf(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fprobe")
    x, ids, cols = data()
    model = codedb.train(x, f"ivf:{LISTS},pq:8x8", seed=4)
    one = codedb.Index.build(tmp / "one", model, x, ids=ids, attributes=cols, store_vectors="f32")
    paths = [tmp / f"s{i}" for i in range(SHARDS)]
    sharded = ShardedIndex.build(paths, model, x, ids=ids, attributes=cols, store_vectors="f32")
    yield one, sharded, x, ids, paths
    sharded.close()


def filters(ids: np.ndarray, seed: int) -> list[dict[str, Any]]:
    """Random predicates and id selectors, broad to very selective (seeded)."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = [{"where": "rare"}, {"where": "year >= 1990"},
                                 {"where": "rare OR year = 2001"}]
    for _ in range(3):
        a = int(rng.integers(1980, 2019))
        out.append({"where": f"year >= {a} AND year <= {a + int(rng.integers(0, 4))}"})
    for n in (4, 60, 600):
        out.append({"ids": rng.choice(ids, n, replace=False)})
    out.append({"where": "NOT rare", "ids": rng.choice(ids, 300, replace=False).tolist()})
    return out


def decisions(one: codedb.Index, q: np.ndarray, k: int, rerank: int | None, nprobe: int,
              kw: dict[str, Any]) -> list[Any]:
    """One index's own decision per query, from its counts of every list."""
    counts = one.ivf_list_counts(q, k=k, rerank=rerank, nprobe=nprobe, count=LISTS, **kw)
    return [ivf_probe_decision(p.tolist(), r.tolist(), nprobe, LISTS, k, rerank, len(one))
            for _, p, r in counts]


def test_ivf_plan_over_shards_equals_one_index(ivf: Any) -> None:
    one, sharded, x, ids, _ = ivf
    q = x[::53] + np.float32(0.05)
    kinds = {"within": 0, "on": 0, "flat": 0}
    for kw in filters(ids, seed=3):
        for nprobe, k, rerank in [(1, 10, None), (2, 5, None), (1, 10, 30), (3, 1, 12),
                                  (LISTS, 4, None)]:
            want = one.search(q, k=k, rerank=rerank, nprobe=nprobe, **kw)
            assert_same(sharded.search(q, k=k, rerank=rerank, nprobe=nprobe, **kw), want)
            for d in decisions(one, q, k, rerank, nprobe, kw):
                kinds["flat" if d == "flat" else "on" if d > nprobe else "within"] += 1
    assert min(kinds.values()) > 0, kinds
    # Columns and DataFrames ride on the planned search as on any other.
    kw = {"where": "year >= 2015", "nprobe": 1, "k": 6}
    d1, i1, c1 = sharded.search(q, columns=["year"], **kw)
    d2, i2, c2 = one.search(q, columns=["year"], **kw)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(c1["year"], c2["year"])
    assert_same(sharded.search(q[:0], **kw), one.search(q[:0], **kw))
    part = sharded.search(q, allow_partial=True, **kw)
    assert part.missing == []
    assert_same((part.D, part.I), one.search(q, **kw))
    for mode in (None, "exact"):
        part = sharded.search(q, mode=mode, allow_partial=True, **kw)
        assert part.missing == []
        assert_same((part.D, part.I), one.search(q, mode=mode, **kw))


@pytest.mark.parametrize("mode", ["exact", "exact-ip"])
def test_exact_modes_plan_over_shards_as_one_index(ivf: Any, mode: str) -> None:
    """An exact mode scans each query's probed lists or every passing row, by the passing rows
    of the whole index, and a query short of passing rows the passing rows again."""
    one, sharded, x, ids, _ = ivf
    q = x[::47] + np.float32(0.05)
    scans = {True: 0, False: 0}
    for kw in filters(ids, seed=13):
        for nprobe, k in [(1, 10), (2, 5), (4, 1)]:
            assert_same(sharded.search(q, k=k, mode=mode, nprobe=nprobe, **kw),
                        one.search(q, k=k, mode=mode, nprobe=nprobe, **kw))
            passing = one.passing_rows(**kw)
            scans[codedb.ivf_filter_scans_passing(passing, len(one), nprobe, LISTS, k)] += 1
    assert min(scans.values()) > 0, scans


def test_the_sharded_plan_is_not_each_shards_own(ivf: Any) -> None:
    """Each shard left to its own plan (its own passing rows) answers otherwise for some query:
    the equality above is the summed decision's doing."""
    one, sharded, x, ids, paths = ivf
    q = x[::29]
    differs = 0
    for kw in filters(ids, seed=5):
        want = one.search(q, k=10, nprobe=1, **kw)
        parts = [codedb.Snapshot.open(p).search(q, k=10, nprobe=1, **kw) for p in paths]
        d = np.concatenate([p[0] for p in parts], axis=1)
        i = np.concatenate([p[1] for p in parts], axis=1)
        own = _merge.merge_topk([(d, i)], 10)
        differs += int(not np.array_equal(own[1], want[1]))
        assert_same(sharded.search(q, k=10, nprobe=1, **kw), want)
    assert differs > 0


def test_errors_are_one_index_errors(ivf: Any) -> None:
    one, sharded, x, _, _ = ivf
    q = x[:3]
    for kw in ({"where": "year >= ", "nprobe": 2}, {"where": "colour = 'red'", "nprobe": 2},
               {"where": "year > 2000", "nprobe": LISTS + 1}, {"ids": [-1], "nprobe": 1}):
        with pytest.raises(codedb.InvalidArgument) as single:
            one.search(q, k=5, **kw)
        with pytest.raises((ShardError, codedb.InvalidArgument)) as many:
            sharded.search(q, k=5, **kw)
        assert str(single.value) in str(many.value), (kw, str(many.value))
    with pytest.raises(codedb.InvalidArgument, match="plan"):
        one.search_ivf_planned(q, [[0]], k=5, nprobe=1, where="rare")
    with pytest.raises(codedb.InvalidArgument, match="plan"):
        one.search_ivf_planned(q, [[LISTS]] * 3, k=5, nprobe=1, where="rare")
    assert one.ivf_list_counts(q, k=5, nprobe=2) is None  # no filter: not the plan
    assert codedb.ivf_filter_scans_passing(50, 10**6, 4, 64, 10)
    assert one.passing_rows(where="rare") == int(one.search(
        x[:1], k=len(one), where="rare")[1].__ge__(0).sum())


def test_class_lists_with_a_filter_equal_one_index(tmp_path: pathlib.Path) -> None:
    x, ids, cols = data(900, seed=8)
    y = (np.arange(len(x)) % 9).astype(np.int64)
    model = codedb.train(x, "pca-itq:16", seed=2)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids, labels=y, lists="label",
                             attributes=cols, store_vectors="f32")
    sharded = ShardedIndex.build([tmp_path / f"s{i}" for i in range(SHARDS)], model, x, ids=ids,
                                 labels=y, lists="label", attributes=cols, store_vectors="f32")
    try:
        q = x[::37]
        for kw in filters(ids, seed=9):
            for nprobe, k, rerank in [(1, 10, None), (2, 4, 20), (9, 3, None)]:
                assert_same(sharded.search(q, k=k, rerank=rerank, nprobe=nprobe, **kw),
                            one.search(q, k=k, rerank=rerank, nprobe=nprobe, **kw))
    finally:
        sharded.close()


def test_ray_shards_plan_as_one_index(ray_cluster: Any, ivf: Any) -> None:
    one, _, x, ids, paths = ivf
    searcher = ShardedSearcher(RayShards(paths, actor_options={"num_cpus": 0.1}))
    try:
        q = x[::61]
        for kw in filters(ids, seed=11)[::2]:
            for rerank in (None, 25):
                assert_same(searcher.search(q, k=8, rerank=rerank, nprobe=1, **kw),
                            one.search(q, k=8, rerank=rerank, nprobe=1, **kw))
        with pytest.raises(ShardError, match="where"):
            searcher.search(q, k=5, nprobe=1, where="year >= ")
    finally:
        searcher.close()
