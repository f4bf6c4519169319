"""A sharded index partitioned by list (``partition="list"``): every inverted list of an IVF
model lives whole on one shard, a query with ``nprobe`` goes only to the shards holding its
probed lists, and the answer is still one index's — after writes, upserts that move a row to
another list's shard, deletes, reopening, and through the readers that pin cuts."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import codedb
from codedb.distributed import ShardedIndex, ShardedSearcher, ShardError, ShardLayout, ThreadShards
from codedb.distributed._route import place_lists
from test_distributed import N_SHARDS, assert_same

SPEC = "ivf:16,pq:8x8"


def data(seed: int = 5, n: int = 3_000) -> tuple[np.ndarray, np.ndarray]:
    """Rows around 16 separated centres of different sizes (lists of unequal weight)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(16, 24))
    which = rng.choice(16, size=n, p=np.arange(1, 17) / np.arange(1, 17).sum())
    x = (centres[which] + rng.normal(size=(n, 24))).astype(np.float32)
    ids = rng.permutation(1_000_000)[:n].astype(np.int64)
    return x, ids


def queries(x: np.ndarray, n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(9)
    return (x[rng.choice(len(x), n, replace=False)]
            + rng.normal(scale=0.8, size=(n, x.shape[1]))).astype(np.float32)


def pair(tmp: pathlib.Path, **kw: Any) -> tuple[codedb.Index, ShardedIndex, np.ndarray, np.ndarray]:
    x, ids = data()
    model = codedb.train(x, SPEC, seed=3)
    tmp.mkdir(parents=True, exist_ok=True)
    one = codedb.Index.build(tmp / "one", model, x, ids=ids, store_vectors="f32")
    paths = [tmp / f"s{i}" for i in range(N_SHARDS)]
    sharded = ShardedIndex.build(paths, model, x, ids=ids, store_vectors="f32",
                                 partition="list", **kw)
    return one, sharded, x, ids


def every_search_equal(one: codedb.Index, sharded: Any, q: np.ndarray) -> None:
    for nprobe in (1, 2, 5, 16):
        for mode, rerank in ((None, None), (None, 20), ("exact", None), ("exact-ip", None)):
            for k in (1, 10):
                want = one.search(q, k=k, mode=mode, rerank=rerank, nprobe=nprobe)
                assert_same(sharded.search(q, k=k, mode=mode, rerank=rerank, nprobe=nprobe), want)
    assert_same(sharded.search(q, k=10), one.search(q, k=10))


def test_whole_lists_live_on_one_shard_and_nprobe_equals_one_index(tmp_path: pathlib.Path) -> None:
    one, sharded, x, ids = pair(tmp_path)
    model = sharded.model
    assert sharded.partition == "list"
    placement = sharded.list_shards
    assert placement is not None and len(placement) == 16
    # Every row is in the shard of its list, and nowhere else.
    lists = model.assign_lists(x)
    for s, ix in enumerate(sharded.indexes):
        held = set(ids[np.asarray(placement)[lists] == s].tolist())
        assert len(ix) == len(held)
        assert ix.snapshot().search(x[:1], k=1) is not None
    assert sum(len(ix) for ix in sharded.indexes) == len(x)
    every_search_equal(one, sharded, queries(x))
    # The lists are balanced by their rows (largest first on the lightest shard).
    counts = np.bincount(lists, minlength=16)
    assert placement == place_lists(counts, N_SHARDS)
    loads = np.bincount(np.asarray(placement), weights=counts, minlength=N_SHARDS)
    assert loads.max() <= loads.mean() + counts.max()
    sharded.close()


def test_a_query_asks_only_the_shards_holding_its_probed_lists(tmp_path: pathlib.Path) -> None:
    one, sharded, x, _ = pair(tmp_path)
    q = queries(x)
    probes = sharded.model.probe_lists(q, 1)
    asked = sharded._searcher.fanout(q, 1)
    assert asked == [1] * len(q)
    fan2 = sharded._searcher.fanout(q, 2)
    placement = np.asarray(sharded.list_shards)
    assert fan2 == [len(set(placement[p].tolist())) for p in sharded.model.probe_lists(q, 2)]
    assert np.mean(fan2) < N_SHARDS
    # A shard that holds none of a query's lists is never asked: count the calls.
    calls: list[int] = []
    backend = sharded._searcher.backend
    real = backend.run

    def counting(op: str, args: Any, shards: Any) -> list[Any]:
        if op == "search":
            calls.extend(shards)
        return real(op, args, shards)

    backend.run = counting  # type: ignore[method-assign]
    one_query = q[:1]
    sharded.search(one_query, k=5, nprobe=1)
    assert calls == [int(placement[probes[0][0]])]
    backend.run = real  # type: ignore[method-assign]
    sharded.close()


def test_writes_keep_rows_in_their_lists_shard(tmp_path: pathlib.Path) -> None:
    one, sharded, x, ids = pair(tmp_path)
    rng = np.random.default_rng(4)
    extra = (x[rng.choice(len(x), 200)] + rng.normal(size=(200, x.shape[1]))).astype(np.float32)
    extra_ids = np.arange(2_000_000, 2_000_200, dtype=np.int64)
    one.add(extra, ids=extra_ids)
    sharded.add(extra, ids=extra_ids)
    # Upserts that move rows to far lists (their old rows on another shard must go).
    moved_ids = ids[:50]
    far = x[rng.choice(len(x), 50)][::-1].copy()
    assert one.upsert(far, ids=moved_ids) == 50
    assert sharded.upsert(far, ids=moved_ids) == 50
    gone = ids[100:140]
    assert one.delete(gone) == 40
    assert sharded.delete(gone) == 40
    with pytest.raises(codedb.NotFoundError, match="held by no shard"):
        sharded.delete(np.array([7_777_777_777], dtype=np.int64))
    assert sharded.delete(np.array([7_777_777_777], dtype=np.int64), ignore_missing=True) == 0
    one.commit()
    sharded.commit()
    assert sum(len(ix) for ix in sharded.indexes) == len(one)
    every_search_equal(one, sharded, queries(x))
    sharded.close()
    # Reopened, as a writer and as a reader pinning the cut: the same placement and answers.
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    again = ShardedIndex.open(paths)
    assert again.partition == "list"
    every_search_equal(one, again, queries(x))
    again.close()
    reader = ShardedSearcher(ThreadShards.open(paths))
    every_search_equal(one, reader, queries(x))
    reader.close()


def test_an_id_held_by_another_shard_is_refused_before_anything_is_staged(
    tmp_path: pathlib.Path,
) -> None:
    one, sharded, x, ids = pair(tmp_path)
    rng = np.random.default_rng(6)
    where = sharded.add(x[:1], ids=np.array([5_000_000], dtype=np.int64))  # staged, not committed
    for held in (int(ids[0]), 5_000_000):  # a committed id, a staged one
        # A vector filed in a list of another shard than the one holding the id.
        holder = [s for s in range(N_SHARDS)
                  if sharded.indexes[s].holds(np.array([held], dtype=np.int64))[0]]
        assert len(holder) == 1
        far = None
        for _ in range(200):
            cand = x[rng.integers(len(x))][None, :]
            dest = int(sharded._route(cand, np.array([held]))[0])
            if dest != holder[0]:
                far = cand
                break
        assert far is not None
        fresh = np.array([held, 6_000_000], dtype=np.int64)
        with pytest.raises(ShardError, match=f"id {held} is held by shard {holder[0]}") as e:
            sharded.add(np.vstack([far, x[1:2]]), ids=fresh)
        assert isinstance(e.value.cause, codedb.AlreadyExistsError)
        # Nothing of the refused batch was staged: 6,000,000 is held by no shard.
        assert not any(ix.holds(np.array([6_000_000]))[0] for ix in sharded.indexes)
    assert where.shape == (1,)
    sharded.commit()
    one.add(x[:1], ids=np.array([5_000_000], dtype=np.int64))
    one.commit()
    every_search_equal(one, sharded, queries(x))
    sharded.close()


def test_create_empty_places_lists_round_robin_and_build_from_files(tmp_path: pathlib.Path) -> None:
    x, ids = data()
    model = codedb.train(x, SPEC, seed=3)
    made = ShardedIndex.create([tmp_path / f"c{i}" for i in range(N_SHARDS)], model,
                               partition="list")
    assert made.list_shards == tuple(l % N_SHARDS for l in range(16))
    made.add(x, ids=ids)
    made.commit()
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids)
    q = queries(x)
    for nprobe in (1, 3):
        assert_same(made.search(q, k=10, nprobe=nprobe), one.search(q, k=10, nprobe=nprobe))
    made.close()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ids.npy", ids)
    files = ShardedIndex.build([tmp_path / f"f{i}" for i in range(N_SHARDS)], model,
                               str(tmp_path / "x.npy"), str(tmp_path / "ids.npy"),
                               partition="list")
    for nprobe in (1, 3):
        assert_same(files.search(q, k=10, nprobe=nprobe), one.search(q, k=10, nprobe=nprobe))
    files.close()


def test_list_partition_is_refused_without_lists_and_records_must_agree(tmp_path: pathlib.Path) -> None:
    x, ids = data(n=600)
    flat = codedb.train(x, "pq:8x8", seed=3)
    with pytest.raises(codedb.InvalidArgument, match="partition: 'list'.*has none"):
        ShardedIndex.create([tmp_path / "a", tmp_path / "b"], flat, partition="list")
    with pytest.raises(codedb.InvalidArgument, match="partition: 'hash'"):
        ShardedIndex.create([tmp_path / "a", tmp_path / "b"], flat, partition="hash")
    with pytest.raises(codedb.InvalidArgument, match="no coarse quantiser"):
        flat.assign_lists(x)
    model = codedb.train(x, SPEC, seed=3)
    with pytest.raises(codedb.InvalidArgument, match="nprobe"):
        model.probe_lists(x[:2], 17)
    paths = [tmp_path / f"p{i}" for i in range(2)]
    ShardedIndex.build(paths, model, x, ids=ids, partition="list").close()
    rec = ShardLayout.read(paths[1])
    assert rec is not None and rec.partition == "list"
    # Shard 1's record rewritten with another placement: refused by name.
    other = rec._replace(lists=tuple(1 - s for s in rec.lists))  # type: ignore[union-attr]
    (paths[1] / "SHARD.json").chmod(0o644)
    (paths[1] / "SHARD.json").unlink()
    other.write(paths[1])
    with pytest.raises(ShardError, match=r"shard 1 .*another list placement"):
        ShardedIndex.open(paths)
    with pytest.raises(ShardError, match=r"shard 1 .*another list placement"):
        ThreadShards.open(paths)


def test_on_ray_a_list_partitioned_index_equals_one_index(
    ray_cluster: Any, tmp_path: pathlib.Path
) -> None:
    from codedb.distributed import RayShards, on_shard_nodes

    one, _, x, ids = pair(tmp_path / "local")
    model = one.model
    paths = [tmp_path / f"r{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.build(paths, model, x, ids=ids, store_vectors="f32", partition="list",
                            ray=True, actor_options=on_shard_nodes(num_cpus=0.1))
    try:
        q = queries(x)
        for nprobe in (1, 4):
            assert_same(sh.search(q, k=10, nprobe=nprobe), one.search(q, k=10, nprobe=nprobe))
        moved = x[::-1][:30].copy()
        assert sh.upsert(moved, ids=ids[:30]) == one.upsert(moved, ids=ids[:30]) == 30
        sh.commit()
        one.commit()
        readers = ShardedSearcher(RayShards(paths, actor_options=on_shard_nodes(num_cpus=0.1)))
        try:
            for nprobe in (1, 4):
                want = one.search(q, k=10, nprobe=nprobe)
                assert_same(readers.search(q, k=10, nprobe=nprobe), want)
                assert_same(sh.search(q, k=10, nprobe=nprobe), want)
        finally:
            readers.close()
    finally:
        sh.close()
