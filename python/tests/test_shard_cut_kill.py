"""A driver SIGKILLed at random instants while it runs sharded commits: readers only ever see
whole cuts. The child upserts batch after batch (every batch spread over every shard) and
commits each; the parent reads the published cut all along, and after every kill, and checks
that the rows it sees are exactly batches 0..m-1 for some m — never part of a batch, though
the shards' newest versions show part of one whenever a commit is cut short. The next child
redoes the first batch the cut lacks (upsert: idempotent by id)."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
import time
import warnings

import numpy as np

import codedb
from codedb.distributed import ShardCutWarning, ShardedIndex, ThreadShards

SHARDS = 4
BATCH = 40
KILLS = 10

CHILD = """
import sys, warnings, numpy as np, codedb
from codedb.distributed import ShardCutWarning, ShardedIndex, ThreadShards
B = int(sys.argv[1]); paths = sys.argv[2:]
warnings.simplefilter("ignore")
reader = ThreadShards.open(paths)
start = sum(len(t) for t in reader.targets) // B
reader.close()
sh = ShardedIndex.open(paths)
for i in range(start, start + 100000):
    ids = np.arange(i * B, (i + 1) * B, dtype=np.int64)
    x = np.random.default_rng(i).normal(size=(B, 16)).astype(np.float32)
    sh.upsert(x, ids=ids)
    sh.commit()
    print(i, flush=True)
"""


def visible(paths: list[pathlib.Path], pinned: bool) -> set[int]:
    """Every live id of the cut (pinned) or of the shards' newest versions."""
    if pinned:
        reader = ThreadShards.open(paths)
        snaps = list(reader.targets)
    else:
        snaps = [codedb.Snapshot.open(p) for p in paths]
    out: set[int] = set()
    q = np.zeros((1, 16), np.float32)
    for s in snaps:
        if len(s):
            out.update(int(i) for i in s.search(q, k=len(s))[1][0] if i >= 0)
    if pinned:
        reader.close()
    else:
        for s in snaps:
            s.close()
    return out


def whole_batches(ids: set[int]) -> int:
    """m when ids are exactly batches 0..m-1; fails otherwise."""
    m = len(ids) // BATCH
    assert ids == set(range(m * BATCH)), (
        f"{len(ids)} rows visible, not whole batches 0..{m - 1}: "
        f"missing {sorted(set(range((m + 1) * BATCH)) - ids)[:5]}"
    )
    return m


def test_killed_driver_leaves_whole_cuts(tmp_path: pathlib.Path) -> None:
    model = codedb.train(np.random.default_rng(0).normal(size=(500, 16)).astype(np.float32),
                         "pca-itq:16", seed=1)
    paths = [tmp_path / f"s{i}" for i in range(SHARDS)]
    ShardedIndex.create(paths, model).close()
    rng = np.random.default_rng(2027)  # the kill instants, seeded
    seen: list[int] = []
    torn = 0  # times the shards' newest versions showed part of a batch
    for k in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(BATCH), *map(str, paths)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert child.stdout is not None
        first = child.stdout.readline()  # the child's first commit: it is committing now
        assert first, child.stderr.read() if child.stderr else "no output"
        until = time.monotonic() + rng.uniform(0.05, 0.6)
        while time.monotonic() < until:  # readers during the commits
            seen.append(whole_batches(visible(paths, pinned=True)))
            newest = visible(paths, pinned=False)
            torn += newest != set(range(len(newest) // BATCH * BATCH))
        child.send_signal(signal.SIGKILL)
        child.wait()
        seen.append(m := whole_batches(visible(paths, pinned=True)))
        newest = visible(paths, pinned=False)
        torn += len(newest) % BATCH != 0 or newest != set(range(m * BATCH))
    assert seen == sorted(seen), "a reader went back to an older cut"
    assert seen[-1] > KILLS, "the children committed too few batches to test anything"
    # The data must tell pinned from unpinned reads apart: the newest versions showed part of
    # a batch at least once (a read or a kill inside a sharded commit).
    assert torn >= 1, "no read or kill landed inside a sharded commit"
    # After the last kill the writer reopens (a shard past the cut is warned about) and
    # redoing the batch the cut lacks publishes it whole.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShardCutWarning)
        sh = ShardedIndex.open(paths)
    m = seen[-1]
    sh.upsert(np.random.default_rng(m).normal(size=(BATCH, 16)).astype(np.float32),
              ids=np.arange(m * BATCH, (m + 1) * BATCH))
    sh.commit()
    sh.close()
    assert whole_batches(visible(paths, pinned=True)) == m + 1
    assert visible(paths, pinned=False) == set(range((m + 1) * BATCH))
