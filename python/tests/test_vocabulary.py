"""The words the engine says once for every door: class names → list ids, margin names,
stored-vector types and the direction of a mode's scores give the CLI's answers and messages."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import codedb
from codedb import _codedb, _merge


def test_classes_resolve_as_the_cli_resolves_them(tmp_path, data, model, codedb_bin):
    x, y = data
    path = tmp_path / "idx"
    with codedb.Index.build(path, model, x, labels=y, lists="label") as idx:
        shoes = idx.add_class("footwear", x[y == 0][:4] + 40)
        idx.commit()
        by_name = idx.search(x[:3], k=5, classes=["footwear", "1"])
        by_id = idx.search(x[:3], k=5, classes=[shoes, 1])
        by_decimal = idx.search(x[:3], k=5, classes=[str(shoes), "1"])
        for other in (by_id, by_decimal):
            np.testing.assert_array_equal(by_name[1], other[1])
        assert (y[by_name[1]] == 1).all()
        np.save(tmp_path / "q.npy", x[:1])
        for bad in ("nope", "77"):
            with pytest.raises(codedb.InvalidArgument) as err:
                idx.search(x[:1], classes=[bad])
            cli = subprocess.run(
                [str(codedb_bin), "search", str(path), "--queries", str(tmp_path / "q.npy"),
                 "--classes", bad], capture_output=True, text=True)
            assert cli.returncode == 1
            detail = str(err.value).split("invalid argument classes: ", 1)[1]
            assert f"--classes {detail}" in cli.stderr, (detail, cli.stderr)
        with pytest.raises(codedb.InvalidArgument, match="classes"):
            idx.search(x[:1], classes=[2**32 - 1])
        with pytest.raises(codedb.InvalidArgument, match="expected class names or class ids"):
            idx.search(x[:1], classes=[1.5])


def test_the_direction_of_scores_is_the_engines():
    assert [m for m in ("hamming", "asym", "adc", "adc-ip", "float", "float-ip", "exact",
                        "exact-ip", "float-dot", "exact-dot", "adc-l2", None, "nope")
            if _merge.larger_is_better(m)] == ["adc-ip", "float-ip", "exact-ip", "float-dot",
                                              "exact-dot"]
    assert _codedb.larger_is_better("adc-ip") is True


def test_margin_and_vector_type_names(tmp_path, data, model):
    x, y = data
    caps = [["red"] if v else ["blue"] for v in y == 0]
    with pytest.raises(codedb.InvalidArgument, match='margin: "hinge": expected "constant" or "caption"'):
        codedb.train(x, "pca-itq:16", captions=caps, margin="hinge")
    with pytest.raises(codedb.InvalidArgument, match='store_vectors: "f64": expected "f32", "f16" or None'):
        codedb.Index.create(tmp_path / "v", model, store_vectors="f64")
    m = codedb.train(x, "pca-itq:16", seed=3, captions=caps, margin="caption",
                     pamir_iterations=500, pamir_c=[1.0], pamir_validation=0.0)
    assert m.report["text"] is not None
