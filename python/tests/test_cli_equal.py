"""A search from Python equals the CLI's on the same index (the same engine underneath)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import codedb


@pytest.mark.parametrize("mode", [None, "asym"])
def test_search_equals_cli(tmp_path, data, model, codedb_bin, mode):
    x, y = data
    path = tmp_path / "idx"
    with codedb.Index.build(path, model, x, labels=y) as idx:
        q = x[::37] + 0.25
        D, I = idx.search(q, k=7, mode=mode)
    np.save(tmp_path / "q.npy", q)
    cmd = [str(codedb_bin), "search", str(path), "--queries", str(tmp_path / "q.npy"), "-k", "7"]
    cmd += ["--format", "json"] + (["--mode", mode] if mode else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    cli = json.loads(out)
    assert len(cli) == len(q)
    for qi, entry in enumerate(cli):
        assert entry["query"] == qi
        assert [r["id"] for r in entry["results"]] == I[qi].tolist()
        np.testing.assert_allclose([r["score"] for r in entry["results"]], D[qi], rtol=1e-6)
