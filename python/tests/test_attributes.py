"""Attribute columns from Python (`attributes=` on build, add and upsert): a dict of numpy
arrays or lists, a pandas DataFrame or a pyarrow Table when those are installed; filters
(`where=`) over them equal brute force, and equal the CLI's on an index whose columns the CLI
wrote; malformed columns are refused naming the column, with nothing written."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import codedb

N = 400


def data() -> tuple[np.ndarray, dict[str, object]]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(N, 32)).astype(np.float32)
    tags = [["cat"] if i % 3 == 0 else ["dog", "beach"] if i % 3 == 1 else [] for i in range(N)]
    cols = {
        "year": (2000 + np.arange(N) % 20).astype(np.int64),
        "score": rng.random(N),
        "public": np.arange(N) % 2 == 0,
        "licence": ["cc0" if i % 4 == 0 else "cc-by" for i in range(N)],
        "tags": tags,
        "taken": np.datetime64("2010-01-01") + np.arange(N).astype("timedelta64[D]"),
    }
    return x, cols


def passing(cols: dict[str, object], rule: object) -> np.ndarray:
    return np.array([i for i in range(N) if rule(i)], dtype=np.int64)  # type: ignore[operator]


def brute(x: np.ndarray, model: codedb.Model, q: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    root = pathlib.Path(os.environ["_ATTR_TMP"])
    one = codedb.Index.build(root / f"b{len(list(root.glob('b*')))}", model,
                             x[rows], ids=rows.astype(np.uint64))
    return one.search(q, k=k)[1]


def test_columns_from_a_dict_filter_as_brute_force(tmp_path: pathlib.Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_ATTR_TMP", str(tmp_path))
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    idx = codedb.Index.build(tmp_path / "i", model, x, attributes=cols)
    q = x[:5] + np.float32(0.01)
    years = np.asarray(cols["year"])
    lic = cols["licence"]
    tags = cols["tags"]
    cases = [
        ("year >= 2010", lambda i: years[i] >= 2010),
        ("tags HAS 'cat'", lambda i: "cat" in tags[i]),  # type: ignore[index]
        ("licence IN ('cc-by') AND NOT public", lambda i: lic[i] == "cc-by" and i % 2 == 1),  # type: ignore[index]
        ("taken < '2010-02-01'", lambda i: i < 31),
        ("score > 0.5 OR tags HAS ALL ('dog', 'beach')",
         lambda i: np.asarray(cols["score"])[i] > 0.5 or i % 3 == 1),
    ]
    for where, rule in cases:
        rows = passing(cols, rule)
        got = idx.search(q, k=7, where=where)[1]
        assert np.array_equal(got, brute(x, model, q, rows, 7)), where
    # Added and upserted rows carry their values; a column left out takes its default.
    more = x[:10] + np.float32(0.5)
    idx.add(more, ids=np.arange(1000, 1010), attributes={"year": np.full(10, 1999)})
    idx.commit()
    assert sorted(idx.search(more, k=10, where="year = 1999")[1][0].tolist()) == list(range(1000, 1010))
    assert idx.search(more[:1], k=10, where="year = 1999 AND licence = ''")[1][0, 0] >= 1000
    idx.upsert(more[:2], ids=[1000, 1001], attributes={"year": [1998, 1998]})
    idx.commit()
    assert set(idx.search(more, k=20, where="year = 1998")[1][0].tolist()) - {-1} == {1000, 1001}


def test_malformed_columns_are_refused_naming_them(tmp_path: pathlib.Path) -> None:
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    for bad, match in [
        ({"year": np.arange(N - 1)}, r"year"),
        ({"year": np.arange(N).reshape(N // 2, 2)}, r"year.*shape"),
        ({"m": [1, "a"] * (N // 2)}, r"m.*mixed"),
        ({"u": np.full(N, 2**63, dtype=np.uint64)}, r"u.*signed 64-bit"),
        ({"t": np.full(N, np.datetime64("NaT"), dtype="datetime64[us]")}, r"t.*NaT"),
        ({"id": np.arange(N)}, r"id"),
        ("year", r"expected a dict"),
    ]:
        with pytest.raises(codedb.InvalidArgument, match=match):
            codedb.Index.build(tmp_path / "bad", model, x, attributes=bad)
        assert not (tmp_path / "bad").exists()
    idx = codedb.Index.build(tmp_path / "ok", model, x, attributes={"year": cols["year"]})
    with pytest.raises(codedb.InvalidArgument, match="colour"):
        idx.add(x[:2], attributes={"colour": ["red", "blue"]})
    with pytest.raises(codedb.InvalidArgument, match="year"):
        idx.add(x[:2], attributes={"year": ["a", "b"]})
    assert idx.commit() == idx.version and len(idx) == N


def test_python_and_cli_columns_filter_alike(tmp_path: pathlib.Path) -> None:
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    model.save(tmp_path / "m.model")
    np.save(tmp_path / "x.npy", x)
    with open(tmp_path / "a.jsonl", "w") as f:
        for i in range(N):
            f.write(json.dumps({"year": int(np.asarray(cols["year"])[i]),
                                "tags": cols["tags"][i]}) + "\n")  # type: ignore[index]
    cli = os.environ.get("CODEDB_BIN", "codedb")
    subprocess.run([cli, "build", str(tmp_path / "c"), "--model", str(tmp_path / "m.model"),
                    "--data", str(tmp_path / "x.npy"), "--attributes", str(tmp_path / "a.jsonl"),
                    "--schema", "year:int,tags:tags"], check=True, capture_output=True)
    py = codedb.Index.build(tmp_path / "p", model, x,
                            attributes={"year": cols["year"], "tags": cols["tags"]})
    from_cli = codedb.Snapshot.open(tmp_path / "c")
    q = x[:4]
    for where in ("year < 2005", "tags HAS 'dog'", "tags HAS ANY ('cat', 'beach') AND year > 2003"):
        assert np.array_equal(py.search(q, k=9, where=where)[1],
                              from_cli.search(q, k=9, where=where)[1]), where


def _plain(tmp_path: pathlib.Path) -> tuple[codedb.Model, np.ndarray, dict[str, object], np.ndarray]:
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    plain = codedb.Index.build(tmp_path / "d", model, x, attributes=cols)
    return model, x, cols, plain.search(x[:3], k=8, where=WHERE)[1]


WHERE = "year > 2012 AND licence = 'cc-by' AND tags HAS 'dog' AND taken > '2010-03-01'"


def test_a_pandas_dataframe_gives_the_same_columns(tmp_path: pathlib.Path) -> None:
    pd = pytest.importorskip("pandas")
    model, x, cols, want = _plain(tmp_path)
    frame = pd.DataFrame({k: v for k, v in cols.items() if k != "tags"})
    frame["tags"] = cols["tags"]
    via = codedb.Index.build(tmp_path / "pd", model, x, attributes=frame)
    assert np.array_equal(via.search(x[:3], k=8, where=WHERE)[1], want)


def test_a_pyarrow_table_gives_the_same_columns(tmp_path: pathlib.Path) -> None:
    pa = pytest.importorskip("pyarrow")
    model, x, cols, want = _plain(tmp_path)
    table = pa.table({k: v for k, v in cols.items() if k != "taken"})
    table = table.append_column("taken", pa.array(np.asarray(cols["taken"]).astype("datetime64[us]")))
    via = codedb.Index.build(tmp_path / "pa", model, x, attributes=table)
    assert np.array_equal(via.search(x[:3], k=8, where=WHERE)[1], want)


def test_inspect_and_verify_show_the_stored_indexes_as_the_cli_does(tmp_path: pathlib.Path) -> None:
    # A sealed segment stores its tag postings and zone maps (format 1.8); Python's inspect and
    # verify report them in the CLI's words.
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    idx = codedb.Index.build(tmp_path / "i", model, x, attributes=cols)
    segs = [f for f in idx.inspect()["files"] if f["file_kind"] == "segment"]
    assert segs
    for f in segs:
        assert f["format_version"] == "1.8"
        kinds = [s["kind"] for s in f["sections"]]
        assert "attribute_postings" in kinds and "attribute_zones" in kinds
        ix = f["contents"]["attribute_index"]
        assert ix["source"] == "stored"
        shown = {c["column"]: (c["index"], c["entries"]) for c in ix["columns"]}
        rows = f["contents"]["rows"]
        assert shown["tags"] == ("postings", sum(len(t) for t in cols["tags"][:rows]))  # type: ignore[index]
        for name in ("year", "score", "taken"):
            assert shown[name] == ("zones", -(-rows // 4096))
        assert "public" not in shown and "licence" not in shown
    cli = os.environ.get("CODEDB_BIN", "codedb")
    out = subprocess.run([cli, "inspect", str(tmp_path / "i"), "--json"], check=True,
                         capture_output=True, text=True).stdout
    from_cli = [f["contents"]["attribute_index"] for f in json.loads(out)["files"]
                if f["file_kind"] == "segment"]
    assert from_cli == [f["contents"]["attribute_index"] for f in segs]
    assert idx.verify()["ok"] is True
