"""codedb.distributed served by Ray actors (one per shard, a local cluster: the session
fixture `ray_cluster`): identical results to one index, an actor killed mid-batch, the retry
budget, a shard with another model, a corrupt shard."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import codedb
from codedb.distributed import Partial, RayShards, ShardError, ShardedIndex, ShardedSearcher
from test_distributed import N_SHARDS, assert_same, corrupt_log, kill_for_good, tied_data

# Up to 16 actors live at once on the 2-CPU cluster (two shared searchers and one per test):
# a tenth of a CPU each for placement (each scans with one thread).
ACTORS = {"num_cpus": 0.1}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One index and the same rows in 4 shards, for binary (pca-itq) and PQ codes, with stored
    vectors for re-ranking; the sharded writers closed (actors open the shards)."""
    tmp = tmp_path_factory.mktemp("ray")
    x, y, ids = tied_data()
    out: dict[str, Any] = {"x": x}
    for spec in ("pca-itq:16", "pq:8x8"):
        model = codedb.train(x, spec, seed=2)
        name = spec.split(":")[0]
        single = codedb.Index.build(tmp / f"{name}-one", model, x, ids=ids, labels=y, store_vectors="f32")
        paths = [tmp / f"{name}-s{i}" for i in range(N_SHARDS)]
        ShardedIndex.build(paths, model, x, ids=ids, labels=y, store_vectors="f32").close()
        out[name] = (single, paths)
    return out


@pytest.fixture(scope="module")
def searchers(ray_cluster: Any, pair: dict[str, Any]) -> Any:
    """A Ray searcher (4 actors) per code kind, shared by the equality tests."""
    made = {kind: ShardedSearcher(RayShards(pair[kind][1], actor_options=ACTORS))
            for kind in ("pca-itq", "pq")}
    yield made
    for s in made.values():
        s.close()


@pytest.mark.parametrize(
    ("kind", "mode", "rerank"),
    [("pca-itq", None, None), ("pca-itq", "asym", None), ("pq", None, None),
     ("pq", "adc-ip", None), ("pca-itq", None, 40), ("pq", None, 25)],
)
def test_ray_shards_equal_one_index(searchers: Any, pair: dict[str, Any], kind: str,
                                    mode: str | None, rerank: int | None) -> None:
    single = pair[kind][0]
    searcher = searchers[kind]
    q = pair["x"][::37] + np.float32(0.01)
    for k in (1, 10, 23):
        assert_same(searcher.search(q, k=k, mode=mode, rerank=rerank),
                    single.search(q, k=k, mode=mode, rerank=rerank))
    assert_same(searcher.classify(q, top=3), single.classify(q, top=3))


def test_actor_killed_mid_batch_is_restarted_and_retried(ray_cluster: Any,
                                                          pair: dict[str, Any]) -> None:
    ray = ray_cluster
    single, paths = pair["pca-itq"]
    shards = RayShards(paths, max_restarts=2, max_task_retries=2, actor_options=ACTORS)
    searcher = ShardedSearcher(shards)
    rng = np.random.default_rng(3)
    q = rng.normal(size=(4000, 32)).astype(np.float32) * 3
    want = single.search(q, k=10, rerank=40)
    try:
        pid = ray.get(shards.actors[2].run.remote("info"))["pid"]
        # The batch is in flight on every actor when shard 2's actor is killed.
        refs = [a.run.remote("search", q, 10, None, 40, None, 1) for a in shards.actors]
        ray.kill(shards.actors[2], no_restart=False)
        parts = ray.get(refs)
        from codedb import _merge

        got = _merge.merge_reranked([p[0] for p in parts], [p[1] for p in parts], 10, 40)
        assert_same(got, want)
        assert ray.get(shards.actors[2].run.remote("info"))["pid"] != pid, "not restarted"
        # And through the searcher, after another kill.
        ray.kill(shards.actors[1], no_restart=False)
        assert_same(searcher.search(q, k=10, rerank=40), want)
    finally:
        searcher.close()


def test_past_the_retry_budget_the_error_names_the_shard(ray_cluster: Any,
                                                          pair: dict[str, Any]) -> None:
    ray = ray_cluster
    single, paths = pair["pca-itq"]
    shards = RayShards(paths, max_restarts=0, max_task_retries=0, actor_options=ACTORS)
    searcher = ShardedSearcher(shards)
    q = pair["x"][::50]
    try:
        kill_for_good(ray, shards.actors[3])
        with pytest.raises(ShardError, match=r"shard 3 \(.*pca-itq-s3\)") as e:
            searcher.search(q, k=5)
        assert e.value.shard == 3
        got = searcher.search(q, k=5, allow_partial=True)
        assert isinstance(got, Partial) and [m.shard for m in got.missing] == [3]
        live = [codedb.Snapshot.open(p) for p in paths[:3]]
        from codedb import _merge

        assert_same((got.D, got.I), _merge.merge_topk([s.search(q, k=5) for s in live], 5))
        part = searcher.classify(q, top=2, allow_partial=True)
        assert [m.shard for m in part.missing] == [3]
    finally:
        searcher.close()


def test_ray_refuses_a_shard_with_another_model(ray_cluster: Any, pair: dict[str, Any],
                                                tmp_path: pathlib.Path) -> None:
    _, paths = pair["pca-itq"]
    x = pair["x"]
    other = codedb.train(x, "pca-itq:16", seed=9)
    codedb.Index.build(tmp_path / "foreign", other, x[:50], ids=np.arange(50)).close()
    mixed = [paths[0], paths[1], tmp_path / "foreign", paths[3]]
    with pytest.raises(ShardError, match=r"shard 2 \(.*foreign\): model [0-9a-f]+ differs"):
        RayShards(mixed, actor_options=ACTORS)


def test_ray_names_a_corrupt_shard(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    x, _, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.create(paths, model)
    sh.add(x, ids=ids)
    sh.commit()
    sh.close()
    bad = corrupt_log(paths[2])
    with pytest.raises(ShardError, match=r"shard 2 \(.*s2\)") as e:
        RayShards(paths, max_restarts=1, actor_options=ACTORS)
    assert "CorruptError" in str(e.value) and bad in str(e.value)


def test_ray_actor_that_cannot_be_placed_is_an_error(ray_cluster: Any,
                                                    pair: dict[str, Any]) -> None:
    _, paths = pair["pca-itq"]
    with pytest.raises(ShardError, match=r"shard 0 .*did not start within 3.0 s .*64 CPU"):
        RayShards(paths, start_timeout=3.0, actor_options={"num_cpus": 64})


def test_ray_refuses_shards_in_another_order(ray_cluster: Any, pair: dict[str, Any]) -> None:
    _, paths = pair["pca-itq"]
    with pytest.raises(ShardError, match=r"shard 0 \(.*pca-itq-s3\): is shard 3 of 4 but was given as shard 0"):
        RayShards(paths[::-1], actor_options=ACTORS)
    with pytest.raises(ShardError, match=r"shard 0 \(.*pca-itq-s0\): its sharded index has 4 shards but 3"):
        RayShards(paths[:3], actor_options=ACTORS)
    other = pair["pq"][1]
    with pytest.raises(ShardError, match=r"shard 1 \(.*pq-s1\): (model|belongs)"):
        RayShards([paths[0], other[1], paths[2], paths[3]], actor_options=ACTORS)


@pytest.mark.parametrize("mih", ["on", "off"])
def test_ray_mih_equals_one_index(searchers: Any, pair: dict[str, Any], mih: str) -> None:
    single = pair["pca-itq"][0]
    q = pair["x"][::37] + np.float32(0.01)
    for k in (1, 10):
        assert_same(searchers["pca-itq"].search(q, k=k, mih=mih), single.search(q, k=k, mih=mih))


def test_ray_shard_that_fell_back_is_named(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    from codedb.distributed import ShardFallbackWarning
    from test_distributed import damage_newest_manifest

    x, _, ids = tied_data()
    model = codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    with ShardedIndex.create(paths, model) as sh:
        sh.add(x[:400], ids=ids[:400])
        sh.commit()
        sh.add(x[400:], ids=ids[400:])
        sh.commit()
    damage_newest_manifest(paths[1])
    with pytest.warns(ShardFallbackWarning, match=r"shard 1 \(.*s1\): opened at version 2"):
        shards = RayShards(paths, actor_options=ACTORS)
    searcher = ShardedSearcher(shards)
    try:
        with pytest.warns(ShardFallbackWarning, match=r"shard 1 \(.*s1\): answered from version 2"):
            searcher.search(x[:3], k=5)
    finally:
        searcher.close()


@pytest.mark.parametrize(("kind", "mode", "rerank"), [("pca-itq", None, None), ("pq", "adc-ip", None),
                                                      ("pq", None, 25)])
def test_ray_shards_filter_as_one_index(searchers: Any, pair: dict[str, Any], kind: str,
                                        mode: str | None, rerank: int | None) -> None:
    single = pair[kind][0]
    q = pair["x"][::53] + np.float32(0.01)
    _, ids = single.search(pair["x"][:1], k=len(single))
    some = ids[0][ids[0] >= 0][::5]
    for kw in ({"where": "id >= 5000"}, {"ids": some}, {"where": "id < 7000", "ids": some.tolist()}):
        assert_same(searchers[kind].search(q, k=25, mode=mode, rerank=rerank, **kw),
                    single.search(q, k=25, mode=mode, rerank=rerank, **kw))
    with pytest.raises(ShardError, match="where"):
        searchers[kind].search(q, k=5, where="id >= ")
