"""The schema from Python as from the CLI: `Index.create(schema=)` / `Index.build(schema=)`
take the CLI's `--schema` words, `add_column` adds a column whose default older rows read, and
a bad type, name or default is refused naming the argument, with nothing changed."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import codedb


def data(n: int = 300) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, 32)).astype(np.float32)


def test_create_with_a_schema_then_add_columns_older_rows_read_the_default(
    tmp_path: pathlib.Path,
) -> None:
    x = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    ix = codedb.Index.create(tmp_path / "i", model, schema="year:int,tags:tags")
    ix.add(x[:100], attributes={"year": np.arange(100)})  # tags left out: no tags
    ix.add_column("source", "string", default="flickr")
    ix.add_column("taken", "timestamp", default="2010-01-01")
    ix.add_column("score", "float")
    assert ix.commit() == 2
    ix.add(x[100:200], attributes={"source": ["web"] * 100, "tags": [["a", "b"]] * 100,
                                   "score": np.full(100, 0.5)})
    ix.commit()
    _, i, cols = ix.search(x[:4], k=200, where="source = 'flickr'",
                           columns=["year", "source", "taken", "tags", "score"])
    hit = i >= 0
    assert hit.sum() == 4 * 100 and (i[hit] < 100).all()
    assert (cols["year"][hit] == i[hit]).all()
    assert set(cols["source"][hit]) == {"flickr"}
    assert (cols["taken"][hit] == np.datetime64("2010-01-01", "us")).all()
    assert (cols["score"][hit] == 0.0).all() and all(t == [] for t in cols["tags"][hit])
    _, i, cols = ix.search(x[:2], k=5, where="tags HAS 'b' AND score > 0.4", columns="year")
    assert ((i >= 100) & (i < 200)).all() and (cols["year"] == 0).all()
    # The schema survives reopening.
    ix.close()
    again = codedb.Index.open(tmp_path / "i")
    assert again.search(x[:1], k=1, where="source = 'web'")[1][0, 0] >= 100


def test_build_with_a_schema_fills_the_columns_left_out(tmp_path: pathlib.Path) -> None:
    x = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    ix = codedb.Index.build(tmp_path / "i", model, x, attributes={"year": np.arange(300)},
                            schema="year:int,licence:string,public:bool")
    _, i, cols = ix.search(x[:3], k=4, where="year < 50 AND NOT public", columns=["licence"])
    assert (i < 50).all() and set(cols["licence"].ravel()) == {""}
    with pytest.raises(codedb.InvalidArgument, match="year"):
        codedb.Index.build(tmp_path / "j", model, x, attributes={"year": np.arange(300) * 0.5},
                           schema="year:int")
    assert not (tmp_path / "j").exists() or not any((tmp_path / "j").iterdir())


@pytest.mark.parametrize(
    "name, type_, default, match",
    [
        ("z", "integer", None, r"type: \"integer\""),
        ("w", "int", 1.5, r"default: 1\.5: expected an int"),
        ("w", "bool", 1, "default: 1: expected a bool"),
        ("w", "tags", "x y", "expected a list of str"),
        ("w", "timestamp", "not a date", "timestamp .not a date.: the date is not YYYY-MM-DD"),
        ("w", "timestamp", 1.5, "expected a datetime64"),
        ("year", "int", None, "year: bad name: given twice"),
        ("bad name!", "int", None, "bad name"),
    ],
)
def test_a_bad_column_is_refused_naming_it_and_nothing_changes(
    tmp_path: pathlib.Path, name: str, type_: str, default: object, match: str
) -> None:
    x = data(50)
    model = codedb.train(x, "pca-itq:16", seed=1)
    ix = codedb.Index.create(tmp_path / "i", model, schema="year:int")
    with pytest.raises(codedb.InvalidArgument, match=match):
        ix.add_column(name, type_, default)
    ix.add(x, attributes={"year": np.arange(50)})
    ix.commit()
    with pytest.raises(codedb.InvalidArgument, match="no such column|unknown column|w"):
        ix.search(x[:1], k=1, where="w = 1")


def test_a_schema_that_does_not_parse_is_refused(tmp_path: pathlib.Path) -> None:
    model = codedb.train(data(50), "pca-itq:16", seed=1)
    for spec, match in [("year:integer", "unknown type"), ("year", "name:type"),
                        ("a:int,a:int", "given twice")]:
        with pytest.raises(codedb.InvalidArgument, match=f"schema: .*{match}"):
            codedb.Index.create(tmp_path / "i", model, schema=spec)
        assert not (tmp_path / "i").exists() or not any((tmp_path / "i").iterdir())
