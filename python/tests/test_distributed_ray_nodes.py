"""Per-shard placement on several Ray nodes of one machine (``ray.cluster_utils.Cluster``): each
node advertises the shard it holds (``codedb-shard-<s>``), and ``on_shard_nodes`` puts shard s's
writer and reader on that node. Runs in a child process, since the session's cluster owns this
one's Ray connection."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

CHILD = r"""
import json, sys, numpy as np, ray, codedb
from ray.cluster_utils import Cluster
from codedb.distributed import RayShards, ShardedIndex, ShardedSearcher, on_shard_nodes
root = sys.argv[1]
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 1, "resources": {"codedb-shard-0": 1}, "include_dashboard": False})
node1 = cluster.add_node(num_cpus=1, resources={"codedb-shard-1": 1})
ray.init(address=cluster.address, log_to_driver=False)
want = {0: cluster.head_node.node_id, 1: node1.node_id}
rng = np.random.default_rng(0)
x = rng.normal(size=(600, 16)).astype(np.float32); ids = np.arange(600)
model = codedb.train(x, "pca-itq:16", seed=1)
paths = [f"{root}/s0", f"{root}/s1"]
place = on_shard_nodes(num_cpus=0.2)
sh = ShardedIndex.build(paths, model, x, ids=ids, ray=True, actor_options=place)
writers = {h["shard"]: h["node"] for h in sh.health()}
sh.close()
readers = RayShards(paths, actor_options=place)
got = ShardedSearcher(readers).search(x[:5], k=3)[1]
out = {"want": want, "writers": writers,
       "readers": {h["shard"]: h["node"] for h in readers.health()},
       "self_hits": [int(i) for i in got[:, 0]]}
readers.close()
ray.shutdown(); cluster.shutdown()
print(json.dumps(out))
"""


def test_each_shard_runs_on_the_node_that_advertises_it(tmp_path: pathlib.Path) -> None:
    if os.environ.get("CODEDB_REQUIRE_RAY") != "1":
        pytest.importorskip("ray")
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    want = {int(k): v for k, v in out["want"].items()}
    assert want[0] != want[1]
    assert {int(k): v for k, v in out["writers"].items()} == want
    assert {int(k): v for k, v in out["readers"].items()} == want
    assert out["self_hits"] == [0, 1, 2, 3, 4]
