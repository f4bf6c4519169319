"""The sharded writer on Ray: every shard's writer in its own actor, placed per shard; a writer
killed mid-add loses nothing acknowledged and duplicates nothing; a writer killed without
restart is restarted; readers (RayShards) pin the published cut and move with refresh()."""

from __future__ import annotations

import os
import pathlib
import threading
import time
from typing import Any

import numpy as np
import pytest

import codedb
from codedb.distributed import (
    RayShards,
    ShardError,
    ShardedIndex,
    ShardedSearcher,
    on_shard_nodes,
)
from test_distributed import N_SHARDS, assert_same, kill_for_good, tied_data

# A tenth of a CPU each on the 2-CPU test cluster; shard s on the "node" advertising
# codedb-shard-<s> (the session cluster advertises all four).
PLACED = on_shard_nodes(num_cpus=0.1)


def big(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 32)) * 3).astype(np.float32), np.arange(10**6, 10**6 + n)


def test_writers_run_in_the_shards_actors_and_equal_one_index(
    ray_cluster: Any, tmp_path: pathlib.Path
) -> None:
    x, y, ids = tied_data()
    order = np.random.default_rng(8).permutation(len(x))  # every class in the first rows
    x, y, ids = x[order], y[order], ids[order]
    model = codedb.train(x, "pq:8x8", seed=2)
    one = codedb.Index.build(tmp_path / "one", model, x[:500], ids=ids[:500], labels=y[:500],
                             lists="label", store_vectors="f32")
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.build(paths, model, x[:500], ids=ids[:500], labels=y[:500], lists="label",
                            store_vectors="f32", ray=True, actor_options=PLACED)
    try:
        pids = {h["pid"] for h in sh.health()}
        assert os.getpid() not in pids and len(pids) == N_SHARDS
        for target in (one, sh):
            target.add(x[500:], ids=ids[500:], labels=y[500:], lists="label")
            target.delete(ids[:40])
            target.commit()
        q = x[::23] + np.float32(0.01)
        assert_same(sh.search(q, k=10), one.search(q, k=10))
        assert_same(sh.search(q, k=10, nprobe=2), one.search(q, k=10, nprobe=2))
        assert_same(sh.classify(q, top=2), one.classify(q, top=2))
        reports = sh.compact(full=True)
        assert len(reports) == N_SHARDS
        assert len(sh.gc()) == N_SHARDS
        assert_same(sh.search(q, k=10), one.search(q, k=10))
        with pytest.raises(codedb.InvalidArgument, match="indexes: the shards' writers live in Ray"):
            sh.indexes
    finally:
        sh.close()
    # The locks were released with the actors: the shards open again, in actors or here.
    again = ShardedIndex.open(paths, ray=True, actor_options=PLACED)
    try:
        assert again.cut == sh.cut and len(again) == len(one)
        assert_same(again.search(q, k=10, nprobe=2), one.search(q, k=10, nprobe=2))
    finally:
        again.close()
    ShardedIndex.open(paths).close()


def test_writer_killed_mid_add_loses_nothing_and_duplicates_nothing(
    ray_cluster: Any, tmp_path: pathlib.Path
) -> None:
    ray = ray_cluster
    x, ids = big(60_000, 4)
    model = codedb.train(x[:5000], "pca-itq:32", seed=1)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids)
    sh = ShardedIndex.create([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, ray=True,
                             actor_options=PLACED, max_restarts=4)
    try:
        sh.add(x[:20_000], ids=ids[:20_000])  # acknowledged, staged in the actors
        # Killed while idle: Ray restarts it, its staged rows gone; the next add replays them.
        ray.kill(sh.actors[2], no_restart=False)
        sh.add(x[20_000:30_000], ids=ids[20_000:30_000])
        # Killed in the middle of an add.
        done: list[Any] = []
        t = threading.Thread(target=lambda: done.append(
            sh.add(x[30_000:], ids=ids[30_000:])))
        t.start()
        time.sleep(0.05)
        ray.kill(sh.actors[1], no_restart=False)
        t.join()
        assert done, "the add did not return"
        sh.commit()
        assert len(sh) == len(one)  # nothing lost, nothing twice (ids are unique per shard)
        q = x[::997]
        assert_same(sh.search(q, k=25), one.search(q, k=25))
        assert all(h["alive"] and h["staged"] == 0 for h in sh.health())
    finally:
        sh.close()


def test_writer_killed_without_restart_is_restarted(ray_cluster: Any,
                                                    tmp_path: pathlib.Path) -> None:
    ray = ray_cluster
    x, y, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids)
    sh = ShardedIndex.create([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, ray=True,
                             actor_options=PLACED, max_restarts=0)
    try:
        sh.add(x[:500], ids=ids[:500])
        kill_for_good(ray, sh.actors[3])
        health = sh.health()
        assert not health[3]["alive"] and "error" in health[3]
        assert all(h["alive"] for h in health[:3])
        t0 = time.monotonic()
        back = sh.restart(3)
        assert back["alive"] and back["staged"] > 0, back
        assert time.monotonic() - t0 < 60
        sh.add(x[500:], ids=ids[500:])
        # And a writer gone for good is started again by the next write, without restart().
        kill_for_good(ray, sh.actors[0])
        sh.commit()
        assert len(sh) == len(x)
        assert_same(sh.search(x[::41], k=10), one.search(x[::41], k=10))
    finally:
        sh.close()


def test_a_shard_that_cannot_be_placed_is_named(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    x, _, _ = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    opts = [{"num_cpus": 0.1}] * 3 + [{"num_cpus": 0.1, "resources": {"codedb-shard-9": 0.001}}]
    with pytest.raises(ShardError, match=r"shard 3 .*did not start within 30.0 s .*codedb-shard-9"):
        ShardedIndex.create([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, ray=True,
                            actor_options=opts, start_timeout=30.0)
    with pytest.raises(codedb.InvalidArgument, match="actor_options: 2 dicts for 4 shards"):
        ShardedIndex.create([tmp_path / f"t{i}" for i in range(N_SHARDS)], model, ray=True,
                            actor_options=opts[:2])
    with pytest.raises(codedb.InvalidArgument, match="actor_options: only with ray=True"):
        ShardedIndex.create([tmp_path / f"u{i}" for i in range(N_SHARDS)], model,
                            actor_options=opts)


def test_ray_readers_pin_the_cut_and_refresh(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    ray = ray_cluster
    x, _, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.create(paths, model)  # the writer in this process, readers on Ray
    sh.add(x[:400], ids=ids[:400])
    sh.commit()
    shards = RayShards(paths, actor_options=PLACED)
    searcher = ShardedSearcher(shards)
    try:
        assert shards.cut is not None and shards.pins == [2] * N_SHARDS
        # A sharded commit cut short (shards 0, 1 only): readers stay at the cut, even an actor
        # restarted meanwhile (every call names the pinned version).
        sh.add(x[400:], ids=ids[400:])
        for s in (0, 1):
            sh.indexes[s].commit()
        ray.kill(shards.actors[0], no_restart=False)
        assert sum(h["rows"] for h in shards.health()) == 400
        assert shards.refresh() == [2] * N_SHARDS
        versions = sh.commit()  # the rest of the commit, and the cut naming it
        assert shards.refresh() == versions
        assert sum(h["rows"] for h in shards.health()) == len(x)
        one = codedb.Index.build(tmp_path / "one", model, x, ids=ids)
        assert_same(searcher.search(x[::29], k=7), one.search(x[::29], k=7))
        # A reader actor killed without restart: restart(shard) brings it back at the cut.
        kill_for_good(ray, shards.actors[2])
        assert not shards.health()[2]["alive"]
        assert shards.restart(2)["version"] == versions[2]
        assert_same(searcher.search(x[::29], k=7), one.search(x[::29], k=7))
    finally:
        searcher.close()
        sh.close()
