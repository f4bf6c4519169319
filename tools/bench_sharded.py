#!/usr/bin/env python3
"""Sharded build and search (codedb.distributed) against one index of the same rows.

    ./test.sh --python            # or: a venv with `pip install ./python[ray]`
    target/py-venv/bin/python tools/bench_sharded.py --rows 1000000 --shards 1,2,4 \\
        --specs pq:16x8,ivf:1024,pq:16x8 --queries 1,64 --dir /tmp/codedb-shards
    target/py-venv/bin/python tools/bench_sharded.py --rows 1000000 --fanout 4,16,64 \\
        --fanout-nprobe 1,4,16 --dir /tmp/codedb-fanout

Generates --rows clustered 96-D descriptors (a mixture of 1 000 Gaussians, seeded; ids
0..n-1, routed by codedb.distributed.shard_of) saved as .npy, trains each --specs model on a
50 000-row sample, then times, on a Ray cluster of this machine (``ray.init(num_cpus=2)``):

* ``build``: one index (``Index.build`` in this process: the driver-side baseline),
  ``ShardedIndex.build`` with the writers on a thread pool of this process (``threads``), and
  with S shard actors (``ray``: every actor reads the .npy files itself, keeps its rows and
  encodes them; the driver sends paths only);
* ``search``: one index (``Index.search``, 1 thread) and ``ShardedSearcher(RayShards)`` over
  the S shards (pinned at the published cut), k = 10, at each --queries batch size: best of
  --repeats batches after a warm-up, ms per batch and queries/s; IVF models with
  ``nprobe=--nprobe``. Every sharded result is checked equal to the single index's first;
* ``merge``: the driver's merge alone (``_merge.merge_topk`` of the S per-shard lists), and over
  --merge-shards synthetic lists, per query;
* ``restart``: a reader actor killed (``ray.kill``), then one query: time until the answer
  (Ray restarts the actor, which reopens its shard at the pinned version; the task is
  retried); and a writer actor killed in the middle of a ``ShardedIndex.add`` of 10 000 rows:
  time of that add (the driver revives the writer, replays the staged writes, retries) against
  the same add undisturbed.

With ``--fanout K1,K2,...`` it compares instead the two partitions of K shards on 10^6
clustered rows (1 000 Gaussians of Zipf-like sizes) under an ``ivf:--fanout-lists,pq:16x8``
model: ``partition="id"`` (rows by id hash; every query reaches every shard) and
``partition="list"`` (whole inverted lists per shard, placed largest first on the shard with
the fewest rows; a query reaches the shards holding its probed lists). Per K and nprobe: the
mean number of shards a query reaches, the row skew (largest shard over the mean), the query
skew (the busiest shard's queries over the mean), and the time of single queries (nq = 1)
through ``ShardedSearcher(ThreadShards)`` — answers checked equal to one index first.

Prints one line per case; `--json` prints objects. The last line gives the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import threading
import time
from typing import Any, Callable

import numpy as np

import codedb
from codedb import _merge
from codedb.distributed import RayShards, ShardedIndex, ShardedSearcher


def best(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def clustered(n: int, d: int, seed: int) -> np.ndarray:
    """n rows around 1 000 centres (spread 4, within-cluster 1), float32."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(1000, d)).astype(np.float32)
    out = np.empty((n, d), np.float32)
    step = 200_000
    for a in range(0, n, step):
        b = min(n, a + step)
        out[a:b] = centres[rng.integers(0, 1000, b - a)] + rng.normal(size=(b - a, d))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="descriptors to index")
    ap.add_argument("--dim", type=int, default=96, help="their dimension")
    ap.add_argument("--shards", default="1,2,4", help="shard (actor) counts to time")
    ap.add_argument("--specs", default="pq:16x8,ivf:1024,pq:16x8",
                    help="models, comma-separated; an ivf: stage takes the next stage with it")
    ap.add_argument("--queries", default="1,64", help="query batch sizes")
    ap.add_argument("--nprobe", type=int, default=16, help="lists probed by IVF models")
    ap.add_argument("--repeats", type=int, default=10, help="timed batches per case (best of)")
    ap.add_argument("--dir", default="/tmp/codedb-shards", help="scratch directory (emptied)")
    ap.add_argument("--merge-shards", default="10,100,1000",
                    help="also time the merge alone over this many synthetic lists (k = 10)")
    ap.add_argument("--fanout", default="",
                    help="shard counts: measure list-partitioned fan-out and skew only")
    ap.add_argument("--fanout-nprobe", default="1,4,16", help="nprobe values for --fanout")
    ap.add_argument("--fanout-lists", type=int, default=1000,
                    help="inverted lists (ivf:L,pq:16x8) for --fanout")
    ap.add_argument("--fanout-queries", type=int, default=1000,
                    help="queries whose fan-out and skew --fanout counts")
    ap.add_argument("--fanout-timed", type=int, default=200,
                    help="of those, single queries (nq = 1) timed per case, best of 3 passes")
    ap.add_argument("--json", action="store_true", help="print JSON objects, one per line")
    a = ap.parse_args()
    if a.fanout:
        fanout(a)
        return
    import ray

    root = pathlib.Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    x = clustered(a.rows, a.dim, 0)
    ids = np.arange(a.rows, dtype=np.int64)
    np.save(root / "x.npy", x)
    np.save(root / "ids.npy", ids)
    specs: list[str] = []
    for part in a.specs.split(","):
        if specs and specs[-1].startswith("ivf:") and "," not in specs[-1]:
            specs[-1] += "," + part
        else:
            specs.append(part)
    shard_counts = [int(v) for v in a.shards.split(",")]
    batches = [int(v) for v in a.queries.split(",")]
    out: list[dict[str, Any]] = []

    def emit(**r: Any) -> None:
        out.append(r)
        if not a.json:
            print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                            for k, v in r.items()), flush=True)

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    qs = {nq: clustered(nq, a.dim, 100 + nq) for nq in batches}
    for spec in specs:
        model = codedb.train(x[:50_000], spec, seed=1)
        ivf = model.ivf_lists is not None
        kw: dict[str, Any] = {"nprobe": a.nprobe} if ivf else {}
        t = time.perf_counter()
        single = codedb.Index.build(root / "one", model, x, ids=ids)
        emit(case="build", spec=spec, backend="one index", shards=1, s=time.perf_counter() - t)
        for nq in batches:
            s = best(lambda: single.search(qs[nq], k=10, **kw), a.repeats)
            emit(case="search", spec=spec, backend="one index", shards=1, nq=nq, ms=s * 1e3,
                 qps=nq / s)
        tag = spec.replace(":", "").replace(",", "-")
        for n in shard_counts:
            paths = [root / f"{tag}-T{n}-{i}" for i in range(n)]
            t = time.perf_counter()
            ShardedIndex.build(paths, model, x, ids=ids, threads=2).close()
            emit(case="build", spec=spec, backend="threads", shards=n, s=time.perf_counter() - t)
            for p in paths:
                shutil.rmtree(p, ignore_errors=True)
            paths = [root / f"{tag}-S{n}-{i}" for i in range(n)]
            cpus = {"num_cpus": 2 / n}
            t = time.perf_counter()
            sh = ShardedIndex.build(paths, model, root / "x.npy", root / "ids.npy", ray=True,
                                    actor_options=cpus)
            emit(case="build", spec=spec, backend="ray actors (.npy paths)", shards=n,
                 s=time.perf_counter() - t)
            if n == max(shard_counts):
                extra = clustered(10_000, a.dim, 7)
                extra_ids = np.arange(a.rows, a.rows + 10_000)
                t = time.perf_counter()
                sh.add(extra, ids=extra_ids)
                calm = time.perf_counter() - t
                sh.delete(extra_ids)  # staged: the same add again below
                sh.commit()
                extra_ids = extra_ids + 10_000
                done: list[float] = []

                def add() -> None:
                    t0 = time.perf_counter()
                    sh.add(extra, ids=extra_ids)
                    done.append(time.perf_counter() - t0)

                th = threading.Thread(target=add)
                th.start()
                time.sleep(calm / 4)
                ray.kill(sh.actors[0], no_restart=False)
                th.join()
                emit(case="restart", spec=spec, backend="writer killed mid-add", shards=n,
                     s=done[0], undisturbed_s=calm)
                sh.delete(extra_ids)
                sh.commit()
            sh.close()
            shards = RayShards(paths, actor_options=cpus)
            searcher = ShardedSearcher(shards)
            for nq in batches:
                q = qs[nq]
                want = single.search(q, k=10, **kw)
                got = searcher.search(q, k=10, **kw)
                assert np.array_equal(got[1], want[1]) and np.array_equal(got[0], want[0])
                s = best(lambda: searcher.search(q, k=10, **kw), a.repeats)
                emit(case="search", spec=spec, backend="ray", shards=n, nq=nq, ms=s * 1e3,
                     qps=nq / s)
                parts = [r[0] for r in shards.run(
                    "search", (q, 10, None, None, None, 1, "auto", kw.get("nprobe"), None),
                    range(n))]
                s = best(lambda: _merge.merge_topk(parts, 10), max(a.repeats, 50))
                emit(case="merge", spec=spec, shards=n, nq=nq, us_per_query=s * 1e6 / nq)
            if n == max(shard_counts):
                q = qs[batches[0]]
                t = time.perf_counter()
                ray.kill(shards.actors[0], no_restart=False)
                searcher.search(q, k=10, **kw)
                emit(case="restart", spec=spec, backend="reader killed, one query", shards=n,
                     s=time.perf_counter() - t)
            searcher.close()
            for p in paths:
                shutil.rmtree(p, ignore_errors=True)
        single.close()
        shutil.rmtree(root / "one")
    for m in [int(v) for v in a.merge_shards.split(",") if v]:
        for nq in batches:
            g = np.random.default_rng(m)
            parts = []
            for _ in range(m):
                dd = np.sort(g.integers(0, 20, size=(nq, 10)), axis=1).astype(np.int32)
                parts.append((dd, g.integers(0, 2**40, size=(nq, 10))))
            s = best(lambda: _merge.merge_topk(parts, 10), a.repeats)
            emit(case="merge", spec="synthetic", shards=m, nq=nq, us_per_query=s * 1e6 / nq)
    if a.json:
        for r in out:
            print(json.dumps(r))
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()}", flush=True)


def fanout(a: argparse.Namespace) -> None:
    """Shards partitioned by inverted list against shards partitioned by id (see the module
    doc)."""
    from codedb.distributed import ThreadShards
    from codedb.distributed._route import query_shards

    root = pathlib.Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=4.0, size=(1000, a.dim)).astype(np.float32)
    # Cluster sizes vary as real data's do (Zipf-like weights), so list sizes vary too.
    weights = 1.0 / np.arange(1, 1001) ** 0.7
    y = rng.choice(1000, size=a.rows, p=weights / weights.sum())
    x = (centres[y] + rng.normal(size=(a.rows, a.dim))).astype(np.float32)
    ids = np.arange(a.rows, dtype=np.int64)
    model = codedb.train(x[:50_000], f"ivf:{a.fanout_lists},pq:16x8", seed=1)
    one = codedb.Index.build(root / "one", model, x, ids=ids)
    yq = rng.choice(1000, size=a.fanout_queries, p=weights / weights.sum())
    q = (centres[yq] + rng.normal(size=(len(yq), a.dim))).astype(np.float32)
    for k in [int(v) for v in a.fanout.split(",")]:
        for partition in ("id", "list"):
            paths = [root / f"{partition}-{k}-{i}" for i in range(k)]
            t = time.perf_counter()
            sh = ShardedIndex.build(paths, model, x, ids=ids, threads=2, partition=partition)
            built = time.perf_counter() - t
            rows = np.array([h["rows"] for h in sh.health()], dtype=np.float64)
            placement = sh.list_shards
            sh.close()
            searcher = ShardedSearcher(ThreadShards.open(paths, threads=2))
            for nprobe in [int(v) for v in a.fanout_nprobe.split(",")]:
                want = one.search(q[:50], k=10, nprobe=nprobe)
                got = searcher.search(q[:50], k=10, nprobe=nprobe)
                assert np.array_equal(got[1], want[1]) and np.array_equal(got[0], want[0])
                if placement is None:
                    fan, hits = float(k), np.full(k, len(q), dtype=np.float64)
                else:
                    asked = query_shards(placement, model, q, nprobe, k)
                    hits = np.array([len(r) for r in asked], dtype=np.float64)
                    fan = float(hits.sum() / len(q))
                singles = q[: a.fanout_timed]
                s = best(lambda: [searcher.search(qq[None], k=10, nprobe=nprobe)
                                  for qq in singles], 3)
                emit_json({
                    "case": "fanout", "partition": partition, "shards": k, "nprobe": nprobe,
                    "mean_shards_per_query": round(fan, 2),
                    "row_skew": round(float(rows.max() / rows.mean()), 2),
                    "query_skew": round(float(hits.max() / hits.mean()), 2),
                    "ms_per_query_nq1": round(s * 1e3 / len(singles), 3),
                    "build_s": round(built, 1),
                })
            searcher.close()
            for p in paths:
                shutil.rmtree(p, ignore_errors=True)
    one.close()
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()}", flush=True)


def emit_json(r: dict[str, Any]) -> None:
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
