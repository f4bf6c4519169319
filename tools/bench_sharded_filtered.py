#!/usr/bin/env python3
"""A sharded filtered probed search (``nprobe`` with ``where=``) against one index of the same
rows, and against the same sharded search without the filter.

    ./test.sh --python            # builds target/py-venv with codedb
    target/py-venv/bin/python tools/bench_sharded_filtered.py --rows 200000 --shards 3 \\
        --dir /tmp/codedb-shards-filtered

Generates --rows clustered 64-D descriptors (a mixture of 500 Gaussians, seeded) with an
integer column ``u`` (a random permutation of 0..n-1), trains ``ivf:--lists,pq:8x8`` on a
20 000-row sample, builds one index and a sharded index of --shards shards (writers and
readers on a thread pool of this process: ``ShardedIndex``, whose searches reach the shards
in threads), and times, per filter ``u < n·s`` at the selectivities --selectivities: one
index's ``search`` and the sharded ``search`` (one more round trip for the counts, then the
planned search), each answer checked equal first; and the sharded search without a filter as
the peer. k = 10, nprobe = --nprobe, batches of --queries queries, best of --repeats after a
warm-up. The last line gives the load average.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import time

import numpy as np

import codedb
from codedb.distributed import ShardedIndex


def best(f, repeats: int) -> float:
    f()
    out = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the index")
    ap.add_argument("--shards", type=int, default=3, help="shards of the sharded index")
    ap.add_argument("--lists", type=int, default=256, help="IVF lists of the model")
    ap.add_argument("--nprobe", type=int, default=4, help="lists every query probes")
    ap.add_argument("--queries", type=int, default=64, help="queries per batch")
    ap.add_argument("--repeats", type=int, default=5, help="timed batches (best kept)")
    ap.add_argument("--selectivities", default="0.001,0.01,0.1,0.5",
                    help="fractions of the rows the filters pass")
    ap.add_argument("--seed", type=int, default=7, help="seed of the data and the model")
    ap.add_argument("--dir", required=True, help="scratch directory (emptied first)")
    a = ap.parse_args()
    root = pathlib.Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = np.random.default_rng(a.seed)
    centres = rng.normal(scale=4.0, size=(500, 64))
    x = (centres[rng.integers(0, 500, a.rows)] + rng.normal(size=(a.rows, 64))).astype(np.float32)
    u = rng.permutation(a.rows).astype(np.int64)
    q = (x[rng.choice(a.rows, a.queries, replace=False)]
         + rng.normal(scale=0.5, size=(a.queries, 64))).astype(np.float32)
    model = codedb.train(x[rng.choice(a.rows, min(a.rows, 20_000), replace=False)],
                         f"ivf:{a.lists},pq:8x8", seed=a.seed)
    ids = np.arange(a.rows, dtype=np.int64)
    one = codedb.Index.build(root / "one", model, x, ids=ids, attributes={"u": u})
    sh = ShardedIndex.build([root / f"s{s}" for s in range(a.shards)], model, x, ids=ids,
                            attributes={"u": u})
    kw = {"k": 10, "nprobe": a.nprobe}
    t = best(lambda: sh.search(q, **kw), a.repeats)
    print(f"sharded, no filter: {1e3 * t:.1f} ms per batch of {a.queries}")
    for s in (float(v) for v in a.selectivities.split(",")):
        where = f"u < {int(a.rows * s)}"
        want = one.search(q, where=where, **kw)
        got = sh.search(q, where=where, **kw)
        assert np.array_equal(want[1], got[1]) and np.array_equal(want[0], got[0]), where
        t1 = best(lambda: one.search(q, where=where, **kw), a.repeats)
        ts = best(lambda: sh.search(q, where=where, **kw), a.repeats)
        print(f"{where} ({100 * s:g} %): one index {1e3 * t1:.1f} ms, "
              f"{a.shards} shards {1e3 * ts:.1f} ms per batch of {a.queries}, "
              f"ratio {ts / t1:.2f}, sharded / sharded unfiltered {ts / t:.2f}")
    sh.close()
    print("load average:", " ".join(f"{v:.1f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
