"""Long calls obey Ctrl-C: a SIGINT during `codedb.train` / `Index.add` / `Index.search` /
`Model.encode` raises
KeyboardInterrupt within about a second, and the index is as it was (version, rows).
`progress=` gets (step, unit, done, total) events; `progress=True` draws a bar on stderr."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import codedb

CHILD = textwrap.dedent(
    """
    import sys, time, json
    import numpy as np
    import codedb

    what, path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(0)
    try:
        if what == "train":
            x = rng.standard_normal((60_000, 128), dtype=np.float32)
            print("ready", flush=True)
            codedb.train(x, "opq:16x8", seed=1)
        else:
            idx = codedb.Index.open(path)
            model = idx.model
            x = rng.standard_normal((3_000_000, model.d), dtype=np.float32)
            print("ready", flush=True)
            # Calls repeated until the signal comes, so a fast machine still gets it inside one
            # (each call takes most of a second; the loop's own bytecode is negligible).
            while True:
                if what == "add":
                    idx.add(x)
                elif what == "search":
                    idx.search(x, k=10)
                else:
                    model.encode(x)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted %.3f" % time.monotonic(), flush=True)
        sys.exit(3)
    """
)


def _interrupt(what, path, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    p = subprocess.Popen(
        [sys.executable, str(script), what, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    assert p.poll() is None, "the call ended before the signal: make it longer"
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 3, (out, err)
    at = float(out.split()[-1])
    assert at - sent < 2.0, f"KeyboardInterrupt {at - sent:.2f} s after SIGINT"


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_stops_a_long_opq_training(tmp_path):
    _interrupt("train", "", tmp_path)


@pytest.fixture()
def small_index(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2_000, 64), dtype=np.float32)
    model = codedb.train(x, "pq:8x8", seed=1)
    path = tmp_path / "idx"
    idx = codedb.Index.build(path, model, x[:500])
    v, n = idx.version, len(idx.snapshot())
    idx.close()
    return path, v, n


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_stops_a_long_add_and_leaves_the_index_as_it_was(tmp_path, small_index):
    path, version, rows = small_index
    _interrupt("add", path, tmp_path)
    idx = codedb.Index.open(path)
    assert idx.version == version
    assert len(idx.snapshot()) == rows


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_stops_a_long_search(tmp_path, small_index):
    _interrupt("search", small_index[0], tmp_path)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_stops_a_long_encode(tmp_path, small_index):
    _interrupt("encode", small_index[0], tmp_path)


def test_progress_callable_gets_step_unit_done_total():
    x = np.random.default_rng(2).standard_normal((3_000, 32), dtype=np.float32)
    seen = []
    codedb.train(x, "opq:4x4", seed=1, progress=lambda *e: seen.append(e))
    assert seen, "no progress event"
    step, unit, done, total = seen[-1]
    assert (step, unit) == ("opq:4x4", "iterations") and done == total == 50
    assert all(0 <= d <= t for _, _, d, t in seen)


def test_an_exception_in_the_progress_callable_stops_the_training():
    x = np.random.default_rng(3).standard_normal((3_000, 32), dtype=np.float32)

    def stop(step, unit, done, total):
        if done == 2:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        codedb.train(x, "opq:4x4", seed=1, progress=stop)


def test_progress_true_draws_on_stderr_and_a_bad_progress_is_a_type_error(capfd):
    x = np.random.default_rng(4).standard_normal((3_000, 32), dtype=np.float32)
    codedb.train(x, "pq:4x4", seed=1, progress=True)
    assert "pq:4x4" in capfd.readouterr().err
    with pytest.raises(TypeError, match="progress"):
        codedb.train(x, "pq:4x4", progress=3)


def test_build_progress_counts_every_row(tmp_path):
    x = np.random.default_rng(5).standard_normal((5_000, 32), dtype=np.float32)
    model = codedb.train(x[:2_000], "pq:4x8", seed=1)
    seen = []
    idx = codedb.Index.build(tmp_path / "b", model, x, progress=lambda *e: seen.append(e))
    assert len(idx) == 5_000
    assert seen and seen[-1] == ("build", "rows", 5_000, 5_000)
    assert all(0 <= d <= t == 5_000 for _, _, d, t in seen)


def test_add_and_upsert_progress_count_every_row(tmp_path):
    x = np.random.default_rng(6).standard_normal((70_000, 16), dtype=np.float32)
    model = codedb.train(x[:2_000], "pq:4x8", seed=1)
    idx = codedb.Index.create(tmp_path / "a", model)
    seen = []
    idx.add(x, progress=lambda *e: seen.append(e))
    # Encoded in chunks of 65,536 rows: one event per chunk, the last at every row.
    assert seen == [("add", "rows", 65_536, 70_000), ("add", "rows", 70_000, 70_000)]
    seen.clear()
    assert idx.upsert(x[:10], ids=np.arange(10), progress=lambda *e: seen.append(e)) == 10
    assert seen == [("upsert", "rows", 10, 10)]
    idx.commit()
    assert len(idx) == 70_000


def test_compact_progress_names_each_column_up_to_the_live_rows(tmp_path):
    x = np.random.default_rng(7).standard_normal((3_000, 16), dtype=np.float32)
    model = codedb.train(x, "pq:4x8", seed=1)
    idx = codedb.Index.build(tmp_path / "c", model, x)
    idx.delete([0, 1, 2])
    idx.commit()
    seen = []
    r = idx.compact(deleted_threshold=0, progress=lambda *e: seen.append(e))
    assert r["merges"][0]["rows"] == 2_997
    steps = list(dict.fromkeys(s for s, _, _, _ in seen))
    assert steps[:2] == ["compact ids", "compact codes"], steps
    for step in steps:
        assert [e for e in seen if e[0] == step][-1] == (step, "rows", 2_997, 2_997)


def test_an_exception_in_the_compact_progress_publishes_nothing(tmp_path):
    x = np.random.default_rng(8).standard_normal((3_000, 16), dtype=np.float32)
    model = codedb.train(x, "pq:4x8", seed=1)
    idx = codedb.Index.build(tmp_path / "d", model, x)
    idx.delete([0, 1, 2])
    version = idx.commit()

    def stop(step, unit, done, total):
        raise RuntimeError("stop the merge")

    with pytest.raises(RuntimeError, match="stop the merge"):
        idx.compact(deleted_threshold=0, progress=stop)
    assert idx.version == version
    assert len(idx) == 2_997
    # And the same compaction without the callable runs.
    assert idx.compact(deleted_threshold=0)["version"] == version + 1
