"""`search(mih=...)` is the CLI's `search --mih auto|on|off`: the multi-index hashing tables
change the time, never the results; "on" over an index without tables scans linearly, as the
CLI does; any other value is a ValueError naming `mih`."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import codedb


def cli_search(codedb_bin, path, qfile, k, mih):
    cmd = [str(codedb_bin), "search", str(path), "--queries", str(qfile), "-k", str(k)]
    cmd += ["--mode", "hamming", "--mih", mih, "--format", "json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [[(r["id"], r["score"]) for r in e["results"]] for e in json.loads(out)]


def as_pairs(D, I):
    return [[(int(i), float(d)) for d, i in zip(dr, ir) if i >= 0] for dr, ir in zip(D, I)]


def segments_with_tables(codedb_bin, path):
    """Segment files of the index and how many carry a `mih` section (`codedb inspect`)."""
    segs = sorted(path.glob("seg-*.seg"))
    with_tables = 0
    for f in segs:
        out = subprocess.run(
            [str(codedb_bin), "inspect", str(f), "--json"], check=True, capture_output=True, text=True
        ).stdout
        with_tables += '"mih"' in out
    return len(segs), with_tables


@pytest.mark.parametrize("k", [1, 10, 700])
def test_mih_on_off_and_auto_give_the_same_results_as_the_cli(tmp_path, data, codedb_bin, k):
    x, _ = data
    model = codedb.train(x, "pca-itq:32", seed=3)  # 32-bit codes: the smallest with tables
    path = tmp_path / "idx"
    q = x[::11] + 0.5
    np.save(tmp_path / "q.npy", q)
    with codedb.Index.build(path, model, x) as idx:
        got = {m: idx.search(q, k=k, mode="hamming", mih=m) for m in ("off", "on", "auto")}
        with idx.snapshot() as s:
            got["snapshot on"] = s.search(q, k=k, mode="hamming", mih="on")
    assert segments_with_tables(codedb_bin, path) == (1, 1)
    D, I = got["off"]
    assert (I[:, : min(k, len(x))] >= 0).all()
    for m, (Dm, Im) in got.items():
        np.testing.assert_array_equal(Im, I, err_msg=m)
        np.testing.assert_array_equal(Dm, D, err_msg=m)
    assert cli_search(codedb_bin, path, tmp_path / "q.npy", k, "on") == as_pairs(D, I)


def test_mih_on_without_tables_scans_linearly_as_the_cli_does(tmp_path, index, data, codedb_bin):
    # The `index` fixture's model has 16-bit codes: no segment carries tables.
    x, _ = data
    path = tmp_path / "idx"
    segs, with_tables = segments_with_tables(codedb_bin, path)
    assert with_tables == 0, segs
    q = x[::13] + 0.25
    np.save(tmp_path / "q.npy", q)
    Don, Ion = index.search(q, k=10, mode="hamming", mih="on")
    Doff, Ioff = index.search(q, k=10, mode="hamming", mih="off")
    np.testing.assert_array_equal(Ion, Ioff)
    np.testing.assert_array_equal(Don, Doff)
    assert cli_search(codedb_bin, path, tmp_path / "q.npy", 10, "on") == as_pairs(Don, Ion)


@pytest.mark.parametrize("bad", ["sometimes", "ON", ""])
def test_a_bad_mih_value_is_a_value_error_naming_it(index, data, bad):
    with pytest.raises(ValueError, match="mih") as e:
        index.search(data[0][:2], k=3, mih=bad)
    assert isinstance(e.value, codedb.InvalidArgument)
    with index.snapshot() as s, pytest.raises(ValueError, match="mih"):
        s.search(data[0][:2], k=3, mih=bad)
