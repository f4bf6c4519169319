"""A build killed with SIGKILL at any instant — `codedb build` and `Index.build`, each in a
child process — leaves no index or the whole one, never an empty index: the same command, run
again, succeeds with every row. (Each shard of a sharded build is such a build.)"""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import codedb

ROWS = 60_000
KILLS = 12

CHILD = """
import sys, numpy as np, codedb
d = sys.argv[1]
x = np.load(d + "/x.npy"); ids = np.load(d + "/ids.npy"); y = np.load(d + "/y.npy")
codedb.Index.build(sys.argv[2], codedb.Model.load(d + "/m.model"), x, ids=ids, labels=y).close()
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("killed-build")
    rng = np.random.default_rng(17)
    y = rng.integers(0, 7, ROWS).astype(np.int64)
    x = (rng.normal(size=(ROWS, 48)) + y[:, None]).astype(np.float32)
    np.save(d / "x.npy", x)
    np.save(d / "y.npy", y)
    np.save(d / "ids.npy", np.arange(ROWS, dtype=np.int64) * 3 + 1)
    codedb.train(x[:4000], "pca-itq:32", seed=1).save(d / "m.model")
    return d


def commands(door: str, inputs: pathlib.Path, codedb_bin: pathlib.Path, out: pathlib.Path) -> list[str]:
    if door == "cli":
        return [str(codedb_bin), "build", str(out), "--model", str(inputs / "m.model"),
                "--data", str(inputs / "x.npy"), "--labels", str(inputs / "y.npy"),
                "--ids", str(inputs / "ids.npy")]
    return [sys.executable, "-c", CHILD, str(inputs), str(out)]


def check_full(path: pathlib.Path) -> None:
    with codedb.Snapshot.open(path) as snap:
        assert len(snap) == ROWS and snap.version == 2, path
        dim, classes = snap.class_sums()
        assert sum(c["count"] for c in classes) == ROWS


@pytest.mark.parametrize("door", ["cli", "python"])
def test_killed_build_reruns_with_every_row(
    tmp_path: pathlib.Path, inputs: pathlib.Path, codedb_bin: pathlib.Path, door: str
) -> None:
    t0 = time.monotonic()
    subprocess.run(commands(door, inputs, codedb_bin, tmp_path / "timed"), check=True,
                   capture_output=True)
    span = time.monotonic() - t0
    rng = np.random.default_rng(2026)  # the kill instants, seeded
    writing = 0
    for k in range(KILLS):
        out = tmp_path / f"k{k}"
        cmd = commands(door, inputs, codedb_bin, out)
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if k % 2 == 0:  # anywhere in the build's life
            time.sleep(rng.uniform(0.0, 1.2) * span)
        else:  # while it writes: from the moment its directory appears
            while not out.exists() and child.poll() is None:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0.0, 0.3) * span)
        wrote = out.exists()
        child.send_signal(signal.SIGKILL)
        writing += child.wait() != 0 and wrote
        again = subprocess.run(cmd, capture_output=True, text=True)
        if again.returncode != 0:
            # Only a build that had already committed its rows leaves an index, and a build
            # never overwrites an index.
            assert "already holds" in again.stderr, f"kill {k}: {again.stderr}"
        check_full(out)
    assert writing >= KILLS // 4, f"only {writing} of {KILLS} kills cut a build that was writing"
