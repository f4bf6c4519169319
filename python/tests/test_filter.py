"""Filtered search from Python (``where=``, ``ids=``; docs/filtering.md): every query kind
returns exactly the brute-force best over the passing rows, ties by id, equals the CLI's
``--where``/``--ids`` on the same index, and refuses bad filters as the rest of the binding
refuses bad arguments."""

from __future__ import annotations

import json
import pathlib
import subprocess

import numpy as np
import pytest

import codedb
from codedb.distributed import ShardedIndex

# Random filters over the row ids: comparisons, IN lists, NOT, AND/OR and parentheses.
FILTERS = [
    "id >= 300",
    "id < 17 OR id > 580",
    "id NOT IN (0, 1, 2, 3) AND (id < 250 OR id >= 400)",
    "NOT (id >= 5 AND id <= 590)",
    "id IN (7, 300, 599, 123456)",
    "id = 42",
    "FALSE",
]


def passing(expr: str, ids: np.ndarray) -> np.ndarray:
    """The rows `expr` passes, evaluated here in numpy (an independent reading of the
    language for the forms FILTERS uses)."""
    i = ids.astype(np.int64)
    table = {
        "id >= 300": i >= 300,
        "id < 17 OR id > 580": (i < 17) | (i > 580),
        "id NOT IN (0, 1, 2, 3) AND (id < 250 OR id >= 400)": ~np.isin(i, [0, 1, 2, 3])
        & ((i < 250) | (i >= 400)),
        "NOT (id >= 5 AND id <= 590)": ~((i >= 5) & (i <= 590)),
        "id IN (7, 300, 599, 123456)": np.isin(i, [7, 300, 599, 123456]),
        "id = 42": i == 42,
        "FALSE": np.zeros(len(i), dtype=bool),
    }
    return table[expr]


def brute_hamming(model: codedb.Model, x: np.ndarray, q: np.ndarray, keep: np.ndarray, k: int):
    """The k nearest passing rows by Hamming distance of the codes, ties by smaller id."""
    codes = np.unpackbits(model.encode(x), axis=1)
    qc = np.unpackbits(model.encode(q), axis=1)
    rows = np.flatnonzero(keep)
    out_d, out_i = [], []
    for c in qc:
        d = (codes[rows] != c).sum(axis=1)
        order = np.lexsort((rows, d))[:k]
        out_d.append(d[order].tolist())
        out_i.append(rows[order].tolist())
    return out_d, out_i


def brute_exact(x: np.ndarray, q: np.ndarray, keep: np.ndarray, k: int):
    """The k nearest passing rows by exact squared L2 (float64), ties by smaller id."""
    rows = np.flatnonzero(keep)
    out = []
    for v in q.astype(np.float64):
        d = ((x[rows].astype(np.float64) - v) ** 2).sum(axis=1)
        out.append(rows[np.lexsort((rows, d))[:k]].tolist())
    return out


def unpad(i_row: np.ndarray) -> list[int]:
    return [int(v) for v in i_row if v >= 0]


@pytest.fixture
def built(tmp_path: pathlib.Path, data, model):
    x, y = data
    idx = codedb.Index.build(tmp_path / "idx", model, x, labels=y, store_vectors="f32")
    yield idx
    idx.close()


@pytest.mark.parametrize("expr", FILTERS)
def test_hamming_filter_is_brute_force_over_passing_rows(built, data, model, expr):
    x, _ = data
    q = x[::53] + 0.3
    keep = passing(expr, np.arange(len(x)))
    want_d, want_i = brute_hamming(model, x, q, keep, 9)
    for mih in ("auto", "on", "off"):
        D, I = built.search(q, k=9, where=expr, mih=mih)
        assert I.shape == (len(q), 9)
        for qi in range(len(q)):
            assert unpad(I[qi]) == want_i[qi], (expr, mih, qi)
            assert D[qi, : len(want_d[qi])].tolist() == want_d[qi]


@pytest.mark.parametrize("expr", FILTERS[:4])
def test_exact_and_reranked_filters_are_brute_force(built, data, expr):
    x, _ = data
    q = x[::71] - 0.2
    keep = passing(expr, np.arange(len(x)))
    want = brute_exact(x, q, keep, 6)
    _, I = built.search(q, k=6, mode="exact", where=expr)
    assert [unpad(r) for r in I] == want
    # Re-ranking with R = every passing row re-scores them all: the exact order again.
    _, I = built.search(q, k=6, rerank=int(keep.sum()) or 6, where=expr)
    assert [unpad(r) for r in I] == want


def test_ids_take_any_integer_iterable(built, data, model):
    x, _ = data
    q = x[:3]
    allowed = [5, 250, 251, 420, 599, 10**6]
    keep = np.isin(np.arange(len(x)), allowed)
    _, want = brute_hamming(model, x, q, keep, 4)
    forms = [
        allowed,
        tuple(allowed),
        set(allowed),
        np.array(allowed, dtype=np.int64),
        np.array(allowed, dtype=np.uint64),
        (v for v in allowed),
        iter(allowed),
    ]
    for ids in forms:
        _, I = built.search(q, k=4, ids=ids)
        assert [unpad(r) for r in I] == want, type(ids)
    _, I = built.search(q, k=4, ids=range(250, 260))
    assert all(250 <= v < 260 for r in I for v in unpad(r))


def test_where_and_ids_must_both_pass(built, data, model):
    x, _ = data
    q = x[::100]
    ids = np.arange(0, 600, 3)
    expr = "id >= 200 AND id < 500"
    keep = np.isin(np.arange(len(x)), ids) & (np.arange(len(x)) >= 200) & (np.arange(len(x)) < 500)
    _, want = brute_hamming(model, x, q, keep, 8)
    _, I = built.search(q, k=8, where=expr, ids=ids)
    assert [unpad(r) for r in I] == want


def test_no_passing_row_pads_every_column(built, data):
    x, _ = data
    for kw in ({"ids": []}, {"where": "id > 100000"}, {"where": "TRUE", "ids": [10**9]}):
        D, I = built.search(x[:2], k=5, **kw)
        assert (I == -1).all() and (D == np.iinfo(np.int32).max).all(), kw
        lims, _, I = built.search_radius(x[:2], 2, **kw)
        assert lims.tolist() == [0, 0, 0] and len(I) == 0


def test_index_and_snapshot_answer_alike(built, data):
    x, _ = data
    snap = built.snapshot()
    for kw in ({"where": "id < 100"}, {"ids": [1, 2, 3]}, {"where": "id != 1", "ids": [1, 2]}):
        a, b = built.search(x[:4], k=3, **kw), snap.search(x[:4], k=3, **kw)
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[0], b[0])


def test_radius_filter_is_the_unfiltered_lookup_restricted(built, data):
    x, _ = data
    q = x[::29]
    lims, D, I = built.search_radius(q, 2)
    flims, fD, fI = built.search_radius(q, 2, where="id >= 150", ids=range(0, 600, 2))
    for qi in range(len(q)):
        whole = list(zip(D[lims[qi] : lims[qi + 1]].tolist(), I[lims[qi] : lims[qi + 1]].tolist()))
        want = [(d, i) for d, i in whole if i >= 150 and i % 2 == 0]
        got = list(zip(fD[flims[qi] : flims[qi + 1]].tolist(), fI[flims[qi] : flims[qi + 1]].tolist()))
        assert got == want


def test_classifier_and_examples_rank_only_passing_rows(built, data, model):
    x, y = data
    w = np.append(model.decode(model.encode(x[:1]))[0], 0.0)
    D, I = built.search_classifier(w, k=600)
    whole = [(int(i), float(d)) for d, i in zip(D[0], I[0]) if i >= 0]
    Df, If = built.search_classifier(w, k=20, where="id >= 400")
    want = [(i, d) for i, d in whole if i >= 400][:20]
    assert [(int(i), float(d)) for d, i in zip(Df[0], If[0])] == want
    De, Ie = built.search_examples(x[:5], k=600, random_negatives=100, seed=1)
    whole = [(int(i), float(d)) for d, i in zip(De[0], Ie[0]) if i >= 0]
    Def, Ief = built.search_examples(x[:5], k=10, random_negatives=100, seed=1, ids=range(200, 600))
    want = [(i, d) for i, d in whole if 200 <= i < 600][:10]
    assert [(int(i), float(d)) for d, i in zip(Def[0], Ief[0])] == want
    # A batch of example sets: each set's row equals its own filtered call.
    sets = [x[:5], x[300:305]]
    Db, Ib = built.search_examples(sets, k=7, random_negatives=100, seed=1, where="id < 250")
    for si, pos in enumerate(sets):
        D1, I1 = built.search_examples(pos, k=7, random_negatives=100, seed=1, where="id < 250")
        np.testing.assert_array_equal(Ib[si], I1[0])
        np.testing.assert_array_equal(Db[si], D1[0])
        assert (Ib[si] < 250).all()


def test_text_queries_filter(tmp_path, data):
    x, y = data
    m = codedb.train(x, "pca-itq:16", seed=3, captions=[["red"] if v else ["blue"] for v in y == 0],
                     pamir_iterations=2000)
    with codedb.Index.build(tmp_path / "t", m, x) as idx:
        D, I = idx.search_text("red", k=600)
        whole = [(int(i), float(d)) for d, i in zip(D[0], I[0]) if i >= 0]
        Df, If = idx.search_text("red", k=15, where="id >= 100 AND id < 450")
        want = [(i, d) for i, d in whole if 100 <= i < 450][:15]
        assert [(int(i), float(d)) for d, i in zip(Df[0], If[0])] == want


def test_filter_equals_cli(tmp_path, data, model, codedb_bin):
    x, y = data
    path = tmp_path / "idx"
    q = x[::41] + 0.1
    expr = "id >= 120 AND id NOT IN (130, 131) OR id < 4"
    allowed = [0, 2, 3, 125, 126, 300, 301, 599]
    with codedb.Index.build(path, model, x, labels=y) as idx:
        results = {
            "where": idx.search(q, k=6, where=expr),
            "ids": idx.search(q, k=6, ids=allowed),
            "both": idx.search(q, k=6, where=expr, ids=allowed),
        }
    np.save(tmp_path / "q.npy", q)
    base = [str(codedb_bin), "search", str(path), "--queries", str(tmp_path / "q.npy"), "-k", "6",
            "--format", "json"]
    ids_arg = ["--ids", ",".join(map(str, allowed))]
    for name, extra in (("where", ["--where", expr]), ("ids", ids_arg),
                        ("both", ["--where", expr] + ids_arg)):
        out = subprocess.run(base + extra, check=True, capture_output=True, text=True).stdout
        D, I = results[name]
        for qi, entry in enumerate(json.loads(out)):
            assert [r["id"] for r in entry["results"]] == unpad(I[qi]), name
            assert [r["score"] for r in entry["results"]] == D[qi, : len(entry["results"])].tolist()


def test_bad_filters_are_refused_naming_the_column(built, data, codedb_bin):
    x, _ = data
    with pytest.raises(codedb.InvalidArgument, match=r'where: "id >= ": filter, column 7: expected a value'):
        built.search(x[:1], where="id >= ")
    with pytest.raises(codedb.InvalidArgument, match=r"column 11: no column named \"year\""):
        built.search(x[:1], where="id > 3 OR year = 2010")
    with pytest.raises(codedb.InvalidArgument, match=r"filter, column \d+"):
        built.search_radius(x[:1], 1, where="id = 'x'")
    for method, arg in (("search_text", "red"), ("search_classifier", np.ones(17))):
        with pytest.raises(codedb.InvalidArgument, match="where"):
            getattr(built, method)(arg, where="id >>= 3")
    with pytest.raises(codedb.InvalidArgument, match="where"):
        built.search_examples(x[:3], where="(id", random_negatives=10)
    # The same message as the CLI's usage error (exit 2).
    np.save(pathlib.Path(built.path).parent / "q.npy", x[:1])
    cli = subprocess.run([str(codedb_bin), "search", str(built.path), "--queries",
                          str(pathlib.Path(built.path).parent / "q.npy"), "--where", "id >= "],
                         capture_output=True, text=True)
    assert cli.returncode == 2
    with pytest.raises(codedb.InvalidArgument) as py_err:
        built.search(x[:1], where="id >= ")
    engine_text = str(py_err.value).split('"id >= ": ', 1)[1]
    assert engine_text in cli.stderr
    with pytest.raises(codedb.InvalidArgument, match="ids: -1 is negative"):
        built.search(x[:1], ids=[3, -1])
    with pytest.raises(TypeError, match="ids"):
        built.search(x[:1], ids="3,4")
    with pytest.raises(TypeError, match="ids"):
        built.search(x[:1], ids=3)


def test_sharded_search_passes_the_filter_to_every_shard(tmp_path, data, model):
    x, y = data
    ids = np.random.default_rng(4).permutation(5000)[: len(x)].astype(np.int64)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids, labels=y)
    paths = [tmp_path / f"s{i}" for i in range(3)]
    sharded = ShardedIndex.build(paths, model, x, ids=ids, labels=y)
    try:
        q = x[::61]
        cases = [
            lambda: {"where": "id >= 2500"},
            lambda: {"ids": ids[::7].tolist()},
            lambda: {"where": "id < 4000", "ids": (int(v) for v in ids[::3])},
        ]
        for case in cases:
            a = one.search(q, k=8, **case())
            b = sharded.search(q, k=8, **case())
            np.testing.assert_array_equal(a[1], b[1])
            np.testing.assert_array_equal(a[0], b[0])
        with pytest.raises(codedb.InvalidArgument, match="nprobe"):
            sharded.search(q, k=8, nprobe=1, where="id > 3")
    finally:
        sharded.close()
        one.close()
