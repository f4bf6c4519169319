#!/usr/bin/env python3
"""Sharded search (codedb.distributed) against one index of the same rows, on this machine.

    ./test.sh --python            # or: a venv with `pip install ./python[ray]`
    target/py-venv/bin/python tools/bench_sharded.py --rows 1000000 --shards 1,2,4 \
        --queries 1,64 --dir /tmp/codedb-shards

Generates --rows descriptors (64-D, seeded), trains pca-itq:64 (64-bit codes) on a sample,
builds one index and, per shard count S, a sharded index of the same rows (ids 0..n-1,
routed by codedb.distributed.shard_of). For every query batch size it times, best of
--repeats after one warm-up batch, k = 10:

* ``single``: ``Index.search`` of one process (threads = 1 and 2);
* ``threads``: ``ShardedSearcher(ThreadShards)``, the S shards scanned on a pool of 2 threads;
* ``ray``: ``ShardedSearcher(RayShards)``, one actor per shard (``ray.init(num_cpus=2)``,
  each actor asking for 2/S CPUs);
* ``merge``: the driver's merge alone (``_merge.merge_topk`` of the S per-shard lists), and
  of --merge-shards synthetic lists (ties included) to see how it grows with the fan-out;
* ``restart``: with Ray, one actor killed (``ray.kill``), then one query: the time until the
  answer (restart, reopen, retry).

Prints one row per case: batch latency (ms) and queries/s; `--json` prints objects instead.
Results are checked equal to the single index's before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import time
from typing import Any, Callable

import numpy as np

import codedb
from codedb import _merge
from codedb.distributed import RayShards, ShardedIndex, ShardedSearcher, ThreadShards


def best(fn: Callable[[], Any], repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--queries", default="1,64")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--dir", default="/tmp/codedb-shards")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray backend")
    ap.add_argument(
        "--merge-shards", default="10,100,1000",
        help="also time the merge alone over this many synthetic per-shard lists (k = 10)",
    )
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    root = pathlib.Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    d = 64
    x = rng.normal(size=(a.rows, d)).astype(np.float32)
    ids = np.arange(a.rows, dtype=np.int64)
    model = codedb.train(x[: min(a.rows, 50_000)], "pca-itq:64", seed=1)
    single = codedb.Index.build(root / "one", model, x, ids=ids)
    rows: list[dict[str, Any]] = []

    def emit(**r: Any) -> None:
        rows.append(r)
        if not a.json:
            print(
                f"{r['backend']:>8} S={r['shards']} threads={r['threads']} nq={r['nq']:>4}: "
                f"{r['ms']:8.3f} ms/batch {r['qps']:10.1f} queries/s",
                flush=True,
            )

    if not a.no_ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    for nq in [int(v) for v in a.queries.split(",")]:
        q = rng.normal(size=(nq, d)).astype(np.float32)
        for t in (1, 2):
            s = best(lambda: single.search(q, k=10, threads=t), a.repeats)
            emit(backend="single", shards=1, threads=t, nq=nq, ms=s * 1e3, qps=nq / s)
    for n in [int(v) for v in a.shards.split(",")]:
        paths = [root / f"S{n}-{i}" for i in range(n)]
        ShardedIndex.build(paths, model, x, ids=ids).close()
        backends: list[tuple[str, Any, int]] = [("threads", ThreadShards.open(paths, threads=2), 2)]
        if not a.no_ray:
            ray_shards = RayShards(paths, actor_options={"num_cpus": 2 / n})
            backends.append(("ray", ray_shards, n))
        for nq in [int(v) for v in a.queries.split(",")]:
            q = np.random.default_rng(nq).normal(size=(nq, d)).astype(np.float32)
            want = single.search(q, k=10)
            for name, backend, threads in backends:
                searcher = ShardedSearcher(backend)
                got = searcher.search(q, k=10)
                assert np.array_equal(got[1], want[1]) and np.array_equal(got[0], want[0])
                s = best(lambda: searcher.search(q, k=10), a.repeats)
                emit(backend=name, shards=n, threads=threads, nq=nq, ms=s * 1e3, qps=nq / s)
            parts = [r[0] for r in backends[0][1].run("search", (q, 10, None, None, None, 1), range(n))]
            s = best(lambda: _merge.merge_topk(parts, 10), max(a.repeats, 50))
            emit(backend="merge", shards=n, threads=1, nq=nq, ms=s * 1e3, qps=nq / s,
                 us_per_query=s * 1e6 / nq)
        if not a.no_ray and n == max(int(v) for v in a.shards.split(",")):
            # A node failure in small: kill one actor, time until the batch answers again
            # (Ray restarts the actor, which reopens its shard; the task is retried).
            q = np.random.default_rng(1).normal(size=(1, d)).astype(np.float32)
            searcher = ShardedSearcher(ray_shards)
            t = time.perf_counter()
            ray.kill(ray_shards.actors[0], no_restart=False)
            searcher.search(q, k=10)
            s = time.perf_counter() - t
            emit(backend="restart", shards=n, threads=n, nq=1, ms=s * 1e3, qps=1 / s)
        for _, backend, _ in backends:
            backend.close()
    for m in [int(v) for v in a.merge_shards.split(",") if v]:
        for nq in [int(v) for v in a.queries.split(",")]:
            g = np.random.default_rng(m)
            parts = []
            for s_ in range(m):
                dd = np.sort(g.integers(0, 20, size=(nq, 10)), axis=1).astype(np.int32)
                parts.append((dd, g.integers(0, 2**40, size=(nq, 10))))
            s = best(lambda: _merge.merge_topk(parts, 10), a.repeats)
            emit(backend="merge", shards=m, threads=1, nq=nq, ms=s * 1e3, qps=nq / s,
                 us_per_query=s * 1e6 / nq)
    if a.json:
        for r in rows:
            print(json.dumps(r))
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
