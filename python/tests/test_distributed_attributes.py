"""Attribute columns on a sharded index: built, added and upserted with `attributes=` (a dict
of columns, a DataFrame or a pyarrow Table), filtered with `where=` and returned with
`columns=` / `as_frame=` — every answer equal to one index holding every row, padding
included; a column of the wrong length is refused with nothing staged; on Ray as in threads."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import codedb
from codedb.distributed import PartialColumns, ShardedIndex
from test_distributed import N_SHARDS

N = 600
NAMES = ["year", "score", "public", "licence", "tags", "taken"]
WHERES = ["year >= 2015", "tags HAS 'cat' AND licence = 'cc0'", "year = 2003", "public"]


def data(n: int = N, seed: int = 5) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 32)).astype(np.float32)
    ids = np.arange(n, dtype=np.int64) * 7 + 3
    cols = {
        "year": (2000 + np.arange(n) % 20).astype(np.int64),
        "score": np.round(rng.random(n), 3),
        "public": np.arange(n) % 2 == 0,
        "licence": ["cc0" if i % 4 == 0 else "cc-by" for i in range(n)],
        "tags": [["cat"] if i % 3 == 0 else ["dog", "beach"] if i % 3 == 1 else []
                 for i in range(n)],
        "taken": np.datetime64("2010-01-01T00:00:00", "us")
        + np.arange(n).astype("timedelta64[h]"),
    }
    return x, ids, cols


def assert_same_columns(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for name in a:
        assert a[name].shape == b[name].shape and a[name].dtype == b[name].dtype, name
        for pos in np.ndindex(a[name].shape):
            u, v = a[name][pos], b[name][pos]
            assert (sorted(u) == sorted(v)) if isinstance(u, list) else u == v, (name, pos, u, v)


def assert_same(sh: Any, one: Any, q: np.ndarray, names: list[str] = NAMES, **kw: Any) -> None:
    d1, i1, c1 = sh.search(q, columns=names, **kw)
    d2, i2, c2 = one.search(q, columns=names, **kw)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
    assert_same_columns(c1, c2)


@pytest.fixture()
def pair(tmp_path: pathlib.Path) -> Any:
    x, ids, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids, attributes=cols,
                             store_vectors="f32")
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.build(paths, model, x, ids=ids, attributes=cols, store_vectors="f32")
    yield sh, one, x, ids, cols
    sh.close()


def test_a_sharded_build_filters_and_returns_columns_as_one_index(pair: Any) -> None:
    sh, one, x, _, _ = pair
    q = x[::37]
    for where in WHERES:
        assert_same(sh, one, q, k=8, where=where)
    # Few passing rows: the padding cells hold the columns' defaults, as one index pads.
    assert_same(sh, one, q, k=40, where="year = 2003 AND public")
    assert_same(sh, one, q, k=5, where="year > 3000")
    assert_same(sh, one, q[:0], k=5)
    # One column by name, re-ranked, and the DataFrame.
    d1, i1, c1 = sh.search(q, k=6, columns="tags", rerank=12)
    d2, i2, c2 = one.search(q, k=6, columns="tags", rerank=12)
    np.testing.assert_array_equal(i1, i2)
    assert_same_columns(c1, c2)
    pd = pytest.importorskip("pandas")
    for kw in ({"columns": NAMES}, {}, {"columns": ["score"]}):
        pd.testing.assert_frame_equal(
            sh.search(q, k=7, where="year < 2010", as_frame=True, **kw),
            one.search(q, k=7, where="year < 2010", as_frame=True, **kw),
        )
    part = sh.search(q, k=4, columns=NAMES, allow_partial=True)
    assert isinstance(part, PartialColumns) and part.missing == []
    assert_same_columns(part.columns, one.search(q, k=4, columns=NAMES)[2])


def test_adds_and_upserts_carry_attributes_in_every_container(tmp_path: pathlib.Path) -> None:
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    x, ids, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    frame = pd.DataFrame(cols)
    cut = np.array_split(np.arange(N), 3)
    first = {k: (v[cut[0]] if isinstance(v, np.ndarray) else [v[r] for r in cut[0]])
             for k, v in cols.items()}
    # The first batch's columns make the schema (a dict); then a DataFrame, a pyarrow Table.
    one = codedb.Index.build(tmp_path / "one", model, x[cut[0]], ids=ids[cut[0]],
                             attributes=first)
    sh = ShardedIndex.build([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, x[cut[0]],
                            ids=ids[cut[0]], attributes=first)
    try:
        for rows, chunk in ((cut[1], frame.iloc[cut[1]].reset_index(drop=True)),
                            (cut[2], pa.Table.from_pandas(frame).take(cut[2]))):
            sh.add(x[rows], ids=ids[rows], attributes=chunk)
            one.add(x[rows], ids=ids[rows], attributes=chunk)
        sh.commit()
        one.commit()
        # Upsert some rows with new values: both indexes replace row and columns.
        up = np.arange(0, N, 11)
        new = {"year": np.full(len(up), 1999, dtype=np.int64), "tags": [["new"]] * len(up)}
        assert sh.upsert(x[up], ids=ids[up], attributes=new) == len(up)
        one.upsert(x[up], ids=ids[up], attributes=new)
        sh.commit()
        one.commit()
        q = x[::29]
        for where in [*WHERES, "year = 1999", "tags HAS 'new'"]:
            assert_same(sh, one, q, k=9, where=where)
    finally:
        sh.close()


def test_a_column_of_the_wrong_length_is_refused_with_nothing_staged(
    tmp_path: pathlib.Path,
) -> None:
    x, ids, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    sh = ShardedIndex.build([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, x[:100],
                            ids=ids[:100], attributes={k: v[:100] for k, v in cols.items()})
    try:
        bad = {**cols, "year": cols["year"][:-1]}
        with pytest.raises(codedb.InvalidArgument, match=r"column 'year' has 599 values for 600"):
            sh.add(x, ids=ids, attributes=bad)
        with pytest.raises(codedb.InvalidArgument, match="column 'year'"):
            sh.upsert(x, ids=ids, attributes=bad)
        sh.commit()
        assert len(sh) == 100
        with pytest.raises(codedb.InvalidArgument, match="column 'year'"):
            ShardedIndex.build([tmp_path / f"b{i}" for i in range(N_SHARDS)], model, x, ids=ids,
                               attributes=bad)
    finally:
        sh.close()


def test_a_build_from_files_gives_each_shard_its_rows_columns(tmp_path: pathlib.Path) -> None:
    x, ids, cols = data()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ids.npy", ids)
    model = codedb.train(x, "pca-itq:16", seed=1)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids, attributes=cols)
    sh = ShardedIndex.build([tmp_path / f"s{i}" for i in range(N_SHARDS)], model,
                            tmp_path / "x.npy", ids=tmp_path / "ids.npy", attributes=cols)
    try:
        assert_same(sh, one, x[::41], k=6, where="tags HAS 'cat'")
    finally:
        sh.close()


def test_on_ray_the_shards_actors_store_and_return_the_columns(
    ray_cluster: Any, tmp_path: pathlib.Path
) -> None:
    x, ids, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    one = codedb.Index.build(tmp_path / "one", model, x[:400], ids=ids[:400],
                             attributes={k: v[:400] for k, v in cols.items()})
    sh = ShardedIndex.build([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, x[:300],
                            ids=ids[:300], attributes={k: v[:300] for k, v in cols.items()},
                            ray=True, actor_options={"num_cpus": 0.1})
    try:
        sh.add(x[300:400], ids=ids[300:400], attributes={k: v[300:400] for k, v in cols.items()})
        sh.commit()
        for where in WHERES:
            assert_same(sh, one, x[::31], k=8, where=where)
    finally:
        sh.close()


def test_a_sharded_create_takes_a_schema_and_add_column_reaches_every_shard(
    tmp_path: pathlib.Path,
) -> None:
    x, ids, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    spec = "year:int,tags:tags"
    one = codedb.Index.create(tmp_path / "one", model, schema=spec)
    sh = ShardedIndex.create([tmp_path / f"s{i}" for i in range(N_SHARDS)], model, schema=spec)
    try:
        first = {"year": cols["year"][:300], "tags": cols["tags"][:300]}
        for ix in (sh, one):
            ix.add(x[:300], ids=ids[:300], attributes=first)
            ix.add_column("source", "string", default="flickr")
            ix.commit()
            ix.add(x[300:], ids=ids[300:], attributes={"source": ["web"] * 300})
            ix.commit()
        for where in ["source = 'flickr' AND tags HAS 'cat'", "source = 'web'", "year > 10"]:
            assert_same(sh, one, x[::23], ["year", "source", "tags"], k=12, where=where)
    finally:
        sh.close()
