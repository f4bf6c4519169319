"""A damaged newest manifest: every Python open that falls back to an older version says so
(a `codedb.FallbackWarning` with the CLI's text), tells which manifests it skipped, and writers
refuse until `Index.recover` accepts the loss — as the CLI does."""

from __future__ import annotations

import pathlib
import subprocess
import warnings

import numpy as np
import pytest

import codedb


def _damaged(tmp_path: pathlib.Path, model, x) -> pathlib.Path:
    """An index whose version 3 deleted row 0, with one byte of that manifest flipped."""
    path = tmp_path / "idx"
    idx = codedb.Index.build(path, model, x)
    idx.delete([0])
    assert idx.commit() == 3
    idx.close()
    newest = max(path.glob("v*.manifest"))
    raw = bytearray(newest.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    newest.write_bytes(bytes(raw))
    return path


def test_snapshot_open_of_a_damaged_newest_manifest_warns_and_lists_it(tmp_path, data, model):
    x, _ = data
    path = _damaged(tmp_path, model, x)
    with pytest.warns(codedb.FallbackWarning) as caught:
        snap = codedb.Snapshot.open(path)
    text = str(caught[0].message)
    assert str(path) in text and "serving version 2" in text and "codedb recover" in text
    assert issubclass(codedb.FallbackWarning, UserWarning)
    assert snap.version == 2
    skipped = snap.skipped_manifests
    assert [s["version"] for s in skipped] == [3] and skipped[0]["file"].endswith(".manifest")
    assert skipped[0]["error"]
    # The deleted row is back: exactly what the warning is for.
    assert int(snap.search(x[:1], k=1)[1][0, 0]) == 0


def test_fallback_warning_is_the_cli_text(tmp_path, data, model, codedb_bin):
    x, _ = data
    path = _damaged(tmp_path, model, x)
    with pytest.warns(codedb.FallbackWarning) as caught:
        codedb.Snapshot.open(path).close()
    cli = subprocess.run(
        [str(codedb_bin), "search", str(path), "--text", "x"], capture_output=True, text=True
    )
    lines = [
        line.removeprefix("codedb: warning: ")
        for line in cli.stderr.splitlines()
        if line.startswith("codedb: warning: ")
    ]
    assert lines and str(caught[0].message).splitlines() == lines


def test_index_open_of_a_damaged_newest_manifest_warns_and_refuses_writes(tmp_path, data, model):
    x, _ = data
    path = _damaged(tmp_path, model, x)
    with pytest.warns(codedb.FallbackWarning, match="serving version 2"):
        idx = codedb.Index.open(path)
    assert [s["version"] for s in idx.skipped_manifests] == [3]
    assert idx.skipped_manifests == idx.inspect()["skipped_manifests"]
    writes = {
        "add": lambda: idx.add(x[:2]),
        "upsert": lambda: idx.upsert(x[:1], ids=[5]),
        "delete": lambda: idx.delete([1]),
        "commit": idx.commit,
        "compact": idx.compact,
        "gc": idx.gc,
        "add_class": lambda: idx.add_class("c", x=x[:3]),
    }
    for name, write in writes.items():
        with pytest.raises(codedb.FellBackError, match=str(path)) as e:
            write()
        assert isinstance(e.value, codedb.CorruptError), name
    assert idx.version == 2
    idx.close()


def test_recover_accepts_the_loss_and_makes_the_index_writable(tmp_path, data, model):
    x, _ = data
    path = _damaged(tmp_path, model, x)
    report = codedb.Index.recover(path, to_version=2)
    assert report["kept_version"] == 2 and report["version"] == report["published_version"] > 3
    assert [d["version"] for d in report["dropped"]] == [3]
    with warnings.catch_warnings():
        warnings.simplefilter("error", codedb.FallbackWarning)
        with codedb.Index.open(path) as idx:
            assert idx.skipped_manifests == []
            assert idx.delete([0]) == 1
            idx.commit()
            assert int(idx.search(x[:1], k=1)[1][0, 0]) != 0


def test_recover_refuses_a_version_that_is_not_the_newest_readable(tmp_path, data, model):
    x, _ = data
    path = _damaged(tmp_path, model, x)
    with pytest.raises(codedb.CodedbError, match="1"):
        codedb.Index.recover(path, to_version=1)
    with pytest.raises(codedb.InvalidArgument, match="to_version"):
        codedb.Index.recover(path, to_version=-1)
    assert np.asarray(codedb.Index.recover(path, to_version=2)["dropped"]).size == 1
