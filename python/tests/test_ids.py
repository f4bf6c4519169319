"""One id domain (u64, u64::MAX reserved) across the engine, the CLI and Python: ids at and above
2⁶³ go in as uint64, come back from `add` as uint64 and in `I` as their 64 bits (int64, so
`I.view(np.uint64)` reads them); every check runs before anything is staged."""

from __future__ import annotations

import numpy as np
import pytest

import codedb

BIG = 2**63


def test_auto_ids_past_two_to_the_63_are_searchable(tmp_path, data, model):
    x, _ = data
    first = np.array([BIG - 1] + list(range(9)), dtype=np.uint64)
    idx = codedb.Index.build(tmp_path / "idx", model, x[:10], ids=first, store_vectors="f32")
    added = idx.add(x[[10, 300, 590]])  # the next automatic ids are 2⁶³ and up
    assert added.dtype == np.uint64 and added.tolist() == [BIG, BIG + 1, BIG + 2]
    idx.commit()
    for mode in ("hamming", "exact"):
        D, I = idx.search(x[[10, 300, 590]], k=13, mode=mode)
        assert I.dtype == np.int64 and (I != -1).all()
        assert set(I.view(np.uint64)[0].tolist()) == set(first.tolist()) | {BIG, BIG + 1, BIG + 2}
    assert I.view(np.uint64)[:, 0].tolist() == [BIG, BIG + 1, BIG + 2]  # exact: itself first
    lims, _, Ir = idx.search_radius(x[300:301], 0)
    assert BIG + 1 in Ir.view(np.uint64).tolist()
    assert np.array_equal(idx.reconstruct(added), x[[10, 300, 590]])
    assert idx.delete(np.array([BIG + 1], dtype=np.uint64)) == 1
    idx.commit()
    assert len(idx) == 12
    idx.close()


def test_uint64_ids_above_two_to_the_63_round_trip(tmp_path, data, model):
    x, _ = data
    ids = np.array([2**64 - 2, BIG, 5], dtype=np.uint64)
    rows = x[[0, 300, 599]]
    with codedb.Index.create(tmp_path / "idx", model, store_vectors="f32") as idx:
        assert idx.add(rows, ids=ids).tolist() == ids.tolist()
        idx.commit()
        _, I = idx.search(rows, k=1, mode="exact")
        assert I.view(np.uint64)[:, 0].tolist() == ids.tolist()
        assert np.array_equal(idx.reconstruct(ids), rows)
        assert np.array_equal(idx.reconstruct([2**64 - 2]), rows[:1])  # a Python int list too


def test_negative_int64_ids_are_refused_naming_ids(tmp_path, data, model):
    x, _ = data
    with codedb.Index.create(tmp_path / "idx", model) as idx:
        with pytest.raises(codedb.InvalidArgument, match="ids.*negative"):
            idx.add(x[:2], ids=np.array([3, -1]))
        with pytest.raises(codedb.InvalidArgument, match="ids"):
            idx.add(x[:1], ids=np.array([2**64 - 1], dtype=np.uint64))  # reserved
        assert idx.commit() == 1 and len(idx) == 0


def test_a_failed_add_stages_nothing(tmp_path, data, model):
    x, _ = data
    idx = codedb.Index.build(tmp_path / "idx", model, x[:10], ids=np.arange(10, dtype=np.uint64))
    version, rows = idx.version, len(idx)
    for bad in (
        lambda: idx.add(x[10:13], ids=[1, 2, 3]),  # already live
        lambda: idx.add(x[10:13], ids=[20, -21, 22]),
        lambda: idx.add(x[10:13], labels=[0, 1]),  # wrong length
        lambda: idx.add(np.full((2, 32), np.nan, dtype=np.float32)),
        lambda: idx.add(x[10:13, :5]),
    ):
        with pytest.raises(codedb.CodedbError):
            bad()
    assert idx.commit() == version and len(idx) == rows
    idx.close()


def test_an_add_that_raises_has_staged_nothing_past_two_to_the_63(tmp_path, data, model):
    # The reported case: after an explicit id 2⁶³−1 the automatic ids pass 2⁶³. Whatever add
    # does, raising and staging must not both happen (the rows would surface at the next commit).
    x, _ = data
    idx = codedb.Index.build(tmp_path / "idx", model, x[:10], ids=[BIG - 1] + list(range(9)))
    try:
        added = idx.add(x[10:13])
    except codedb.CodedbError:
        added = None
    version = idx.commit()
    if added is None:
        assert (version, len(idx)) == (2, 10), "a failed add staged its rows"
    else:
        assert (version, len(idx)) == (3, 13) and added.dtype == np.uint64
    D, I = idx.search(x[10:13], k=13)  # every search reaching those rows works
    assert (I != -1).all()
    idx.close()
