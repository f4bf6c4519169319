"""Results carrying attribute columns (`columns=`, `as_frame=` on every search method that
takes `where=`): the values are the rows' own, shaped like the ids, padding positions hold the
column's default; the DataFrame holds the same values, one row per hit; the values equal the
CLI's `search --with --format json`; unknown columns are refused naming them."""

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
    rng = np.random.default_rng(5)
    x = rng.normal(size=(N, 32)).astype(np.float32)
    cols = {
        "year": (2000 + np.arange(N) % 20).astype(np.int64),
        "score": np.round(rng.random(N), 3),
        "public": np.arange(N) % 2 == 0,
        "licence": ["cc0" if i % 4 == 0 else "cc-by" for i in range(N)],
        "tags": [["cat"] if i % 3 == 0 else ["dog", "beach"] if i % 3 == 1 else [] for i in range(N)],
        "taken": np.datetime64("2010-01-01T00:00:00", "us") + np.arange(N).astype("timedelta64[h]"),
    }
    return x, cols


NAMES = ["year", "score", "public", "licence", "tags", "taken"]


def check(cols: dict[str, object], I: np.ndarray, got: dict[str, np.ndarray],
          defaults: dict[str, object]) -> None:
    """Every cell of `got` is the row's value (ids are row numbers), or the default on padding."""
    assert list(got) == NAMES
    for name in NAMES:
        a = got[name]
        assert a.shape == I.shape, name
        src = cols[name]
        for pos in np.ndindex(I.shape):
            want = defaults[name] if I[pos] < 0 else src[I[pos]]  # type: ignore[index]
            v = a[pos]
            if isinstance(want, list):
                assert sorted(v) == sorted(want), (name, pos)
            else:
                assert v == want, (name, pos, v, want)
    assert got["year"].dtype == np.int64 and got["score"].dtype == np.float64
    assert got["public"].dtype == np.bool_ and got["taken"].dtype == np.dtype("datetime64[us]")
    assert got["licence"].dtype == object and got["tags"].dtype == object


DEFAULTS: dict[str, object] = {
    "year": 0, "score": 0.0, "public": False, "licence": "", "tags": [],
    "taken": np.datetime64(0, "us"),
}


@pytest.fixture()
def built(tmp_path: pathlib.Path) -> tuple[codedb.Index, np.ndarray, dict[str, object]]:
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    return codedb.Index.build(tmp_path / "i", model, x, attributes=cols), x, cols


def test_columns_come_back_shaped_like_the_ids_padding_holds_the_default(built) -> None:
    idx, x, cols = built
    q = x[:4] + np.float32(0.01)
    D, I, got = idx.search(q, k=6, where="year >= 2010", columns=NAMES)
    D0, I0 = idx.search(q, k=6, where="year >= 2010")
    assert np.array_equal(I, I0) and np.array_equal(D, D0)
    check(cols, I, got, DEFAULTS)
    # Fewer passing rows than k: -1 padding, the default in every column.
    D, I, got = idx.search(q, k=25, where="year = 2003", columns=NAMES)
    assert (I[:, 20:] == -1).all() and (I[:, :20] >= 0).all()
    check(cols, I, got, DEFAULTS)
    # One name as a string; a snapshot answers alike.
    _, I1, one = idx.snapshot().search(q, k=6, where="year >= 2010", columns="tags")
    assert list(one) == ["tags"] and np.array_equal(I1, I0)
    # An empty batch: (0, k) arrays.
    _, I, got = idx.search(q[:0], k=3, columns=["year", "tags"])
    assert got["year"].shape == (0, 3) and got["tags"].shape == (0, 3)


def test_every_search_method_carries_columns(built) -> None:
    idx, x, cols = built
    kw = {"where": "public", "columns": NAMES}
    _, I, got = idx.search_classifier(np.append(np.ones(16, np.float32), 0.0), k=5, **kw)
    check(cols, I, got, DEFAULTS)
    _, I, got = idx.search_examples(x[:5], k=5, random_negatives=50, seed=2, **kw)
    check(cols, I, got, DEFAULTS)
    _, I, got = idx.search_examples([x[:5], x[5:9]], k=5, random_negatives=50, seed=2, **kw)
    assert I.shape == (2, 5)
    check(cols, I, got, DEFAULTS)
    lims, D, I, got = idx.search_radius(x[:3], 2, **kw)
    assert I.ndim == 1 and len(I) == lims[-1] > 0
    check(cols, I, got, DEFAULTS)
    assert np.array_equal(I, idx.search_radius(x[:3], 2, where="public")[2])


@pytest.mark.filterwarnings("ignore:the text head")
def test_text_queries_carry_columns(tmp_path: pathlib.Path) -> None:
    x, cols = data()
    caps = [["red"] if i % 2 else ["blue"] for i in range(N)]
    m = codedb.train(x, "pca-itq:16", seed=3, captions=caps, pamir_iterations=2000)
    idx = codedb.Index.build(tmp_path / "t", m, x, attributes=cols)
    _, I, got = idx.search_text(["red", "blue"], k=4, where="year < 2005", columns=NAMES)
    check(cols, I, got, DEFAULTS)


def test_as_frame_is_one_row_per_hit_with_the_same_values(built) -> None:
    pd = pytest.importorskip("pandas")
    idx, x, cols = built
    q = x[:3]
    D, I, got = idx.search(q, k=25, where="year = 2003", columns=["year", "tags", "taken"])
    df = idx.search(q, k=25, where="year = 2003", columns=["year", "tags", "taken"], as_frame=True)
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["query", "rank", "id", "score", "year", "tags", "taken"]
    found = I >= 0
    assert len(df) == int(found.sum()) == 60
    assert df["id"].dtype == np.uint64 and df["score"].dtype == np.int32
    assert np.array_equal(df["query"], np.nonzero(found)[0])
    assert np.array_equal(df["rank"], np.nonzero(found)[1])
    assert np.array_equal(df["id"].astype(np.int64), I[found])
    assert np.array_equal(df["score"], D[found])
    assert np.array_equal(df["year"], got["year"][found])
    assert np.array_equal(df["taken"].to_numpy(), got["taken"][found])
    assert [list(t) for t in df["tags"]] == [list(t) for t in got["tags"][found]]
    # Without columns: the hits alone; a column named like a hit field stands beside it.
    assert list(idx.search(q, k=2, as_frame=True).columns) == ["query", "rank", "id", "score"]
    df = idx.search(q, k=2, columns=["score"], as_frame=True)
    assert list(df.columns) == ["query", "rank", "id", "score", "score"]
    assert np.array_equal(df.iloc[:, 4], np.asarray(cols["score"])[df["id"].astype(np.int64)])
    # Radius: the rows of each query in order.
    lims, D, I = idx.search_radius(q, 2)
    df = idx.search_radius(q, 2, columns=["year"], as_frame=True)
    assert np.array_equal(df["id"].astype(np.int64), I)
    assert np.array_equal(df["query"], np.repeat(np.arange(3), np.diff(lims)))
    assert np.array_equal(df["year"], np.asarray(cols["year"])[I])


def test_unknown_columns_are_refused_naming_them(built) -> None:
    idx, x, _ = built
    with pytest.raises(codedb.InvalidArgument, match=r'columns.*"yaer"'):
        idx.search(x[:1], k=3, columns=["year", "yaer"])
    with pytest.raises(codedb.InvalidArgument, match=r'columns.*"yaer"'):
        idx.search_radius(x[:1], 0, columns=["yaer"])
    with pytest.raises(codedb.InvalidArgument, match="columns"):
        idx.search(x[:1], k=3, columns=[3])
    with pytest.raises(codedb.InvalidArgument, match="columns"):
        idx.search(x[:1], k=3, columns=7)


def test_values_equal_the_cli_search_with(tmp_path: pathlib.Path) -> None:
    x, cols = data()
    model = codedb.train(x, "pca-itq:16", seed=1)
    model.save(tmp_path / "m.model")
    np.save(tmp_path / "x.npy", x)
    q = x[:5] + np.float32(0.01)
    np.save(tmp_path / "q.npy", q)
    # The CLI writes the columns from JSON lines (timestamps as microseconds).
    taken = np.asarray(cols["taken"]).astype(np.int64)
    with open(tmp_path / "a.jsonl", "w") as f:
        for i in range(N):
            row = {n: np.asarray(cols[n])[i].item() if n not in ("licence", "tags") else cols[n][i]  # type: ignore[index]
                   for n in ("year", "score", "public", "licence", "tags")}
            row["taken"] = int(taken[i])
            f.write(json.dumps(row) + "\n")
    cli = os.environ.get("CODEDB_BIN", "codedb")
    subprocess.run([cli, "build", str(tmp_path / "c"), "--model", str(tmp_path / "m.model"),
                    "--data", str(tmp_path / "x.npy"), "--attributes", str(tmp_path / "a.jsonl"),
                    "--schema", "year:int,score:float,public:bool,licence:string,tags:tags,"
                    "taken:timestamp"], check=True, capture_output=True)
    where = "year >= 2005 AND tags HAS ANY ('cat', 'beach')"
    out = subprocess.run([cli, "search", str(tmp_path / "c"), "--queries", str(tmp_path / "q.npy"),
                          "-k", "7", "--where", where, "--with", ",".join(NAMES),
                          "--format", "json"], check=True, capture_output=True, text=True)
    want = json.loads(out.stdout)
    _, I, got = codedb.Snapshot.open(tmp_path / "c").search(q, k=7, where=where, columns=NAMES)
    for qi, res in enumerate(want):
        assert [r["id"] for r in res["results"]] == [int(i) for i in I[qi] if i >= 0]
        for j, r in enumerate(res["results"]):
            mine = {
                "year": int(got["year"][qi, j]),
                "score": float(got["score"][qi, j]),
                "public": bool(got["public"][qi, j]),
                "licence": got["licence"][qi, j],
                "tags": list(got["tags"][qi, j]),
                "taken": int(got["taken"][qi, j].astype(np.int64)),
            }
            assert mine == r["attributes"], (qi, j)
