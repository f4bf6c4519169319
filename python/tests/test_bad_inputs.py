"""Bad inputs are typed errors naming the argument; nothing panics, nothing half-written."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import codedb


def test_wrong_dtype_is_type_error_naming_the_argument(index, data):
    with pytest.raises(TypeError, match=r"^q: dtype int64, expected float32"):
        index.search(np.zeros((2, 32), dtype=np.int64))
    with pytest.raises(TypeError, match=r"^x: dtype"):
        index.add(np.array([["a"] * 32]))
    with pytest.raises(TypeError, match=r"^ids: dtype"):
        index.add(data[0][:2], ids=np.array([0.5, 1.5]))


def test_float64_and_strided_input_are_converted_once(index, data):
    x = data[0]
    D32, I32 = index.search(x[:8], k=5)
    D64, I64 = index.search(x[:8].astype(np.float64), k=5)
    wide = np.zeros((8, 64), dtype=np.float32)
    wide[:, ::2] = x[:8]
    Ds, Is = index.search(wide[:, ::2], k=5)  # non-contiguous view
    np.testing.assert_array_equal(I32, I64)
    np.testing.assert_array_equal(I32, Is)
    np.testing.assert_array_equal(D32, Ds)


def test_wrong_shape(index, data):
    with pytest.raises(codedb.InvalidArgument, match=r"q: shape \[32\], expected a 2-D"):
        index.search(data[0][0])
    with pytest.raises(codedb.InvalidArgument, match="32") as e:
        index.search(np.zeros((1, 31), dtype=np.float32))
    assert isinstance(e.value, ValueError)
    with pytest.raises(codedb.InvalidArgument, match="labels"):
        index.add(data[0][:3], labels=np.array([1, 2]))
    with pytest.raises(codedb.InvalidArgument, match="k"):
        index.search(data[0][:1], k=0)
    with pytest.raises(codedb.InvalidArgument, match="mode"):
        index.search(data[0][:1], mode="nope")


def test_nan_is_refused_and_nothing_is_staged(index, data):
    bad = data[0][:4].copy()
    bad[2, 5] = np.nan
    n = len(index)
    with pytest.raises(codedb.InvalidArgument, match=r"(?i)nan|finite"):
        index.add(bad)
    index.commit()
    assert len(index) == n
    with pytest.raises(codedb.InvalidArgument, match=r"(?i)nan|finite"):
        index.search(bad)
    with pytest.raises(codedb.InvalidArgument, match=r"(?i)nan|finite"):
        codedb.train(bad, "pca-itq:8")


def test_closed_index(index, data):
    snap = index.snapshot()
    index.close()
    assert index.closed
    for call in (
        lambda: index.search(data[0][:1]),
        lambda: index.add(data[0][:1]),
        lambda: index.commit(),
        lambda: len(index),
        lambda: index.inspect(),
    ):
        with pytest.raises(codedb.ClosedError, match="closed"):
            call()
    assert len(snap) == 600  # a snapshot taken before stays readable
    snap.close()
    with pytest.raises(codedb.ClosedError):
        snap.search(data[0][:1])
    index.close()  # idempotent


def test_unknown_id_and_missing_index(index, tmp_path):
    with pytest.raises(codedb.NotFoundError) as e:
        index.delete([10_000])
    assert isinstance(e.value, LookupError)
    with pytest.raises(codedb.NotFoundError, match="nowhere"):
        codedb.Index.open(tmp_path / "nowhere")
    with pytest.raises(codedb.LockedError):  # held by `index`
        codedb.Index.create(index.path, index.model)
    other = tmp_path / "other"
    codedb.Index.create(other, index.model).close()
    with pytest.raises(codedb.AlreadyExistsError, match="other"):
        codedb.Index.create(other, index.model)


def test_writer_in_another_process_is_locked_error(index):
    script = textwrap.dedent(
        f"""
        import sys, codedb
        try:
            codedb.Index.open({str(index.path)!r})
        except codedb.LockedError as e:
            print("locked:", e); sys.exit(3)
        sys.exit(0)
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 3, r.stdout + r.stderr
    assert str(index.path) in r.stdout
    index.close()
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_corrupt_file_is_corrupt_error_naming_the_file(tmp_path, data, model):
    path = tmp_path / "idx"
    codedb.Index.build(path, model, data[0]).close()
    seg = sorted(path.glob("**/*.seg")) or sorted(p for p in path.rglob("*") if p.is_file() and "seg" in p.name)
    assert seg, sorted(path.rglob("*"))
    raw = bytearray(seg[0].read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    seg[0].write_bytes(bytes(raw))
    with pytest.raises(codedb.CorruptError, match=seg[0].name):
        snap = codedb.Snapshot.open(path)
        snap.search(data[0][:4], k=600)
