"""Attribute columns on a sharded index: a batch's columns cut into each shard's rows on the
way in, and the columns of a sharded search's hits gathered from the shards that hold them.

A shard stores its rows' columns as one index does (docs/filtering.md), so ``where=`` runs in
every shard and the merge of the shards' passing rows is one index's answer. The columns of
the merged hits are asked of the shard each hit came from, by id (ids are unique across
shards), with the same search one index answers: restricted to those ids (``ids=``), with
``columns=``, one more result than ids so that the padding cell gives the columns' defaults.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from codedb._errors import InvalidArgument


def check_rows(attributes: Any, n: int) -> None:
    """``attributes`` (a dict of columns, a pandas DataFrame or a pyarrow Table) must hold
    one value per row of the batch: the shards are cut from it by row number."""
    if attributes is None:
        return
    if isinstance(attributes, dict):
        for name, col in attributes.items():
            got = _length(col, f"attributes: column {name!r}")
            if got != n:
                raise InvalidArgument(
                    f"attributes: column {name!r} has {got} values for {n} rows"
                )
        return
    got = _length(attributes, "attributes")
    if got != n:
        raise InvalidArgument(f"attributes: {got} rows for {n} rows of x")


def _length(obj: Any, what: str) -> int:
    try:
        return len(obj)
    except TypeError:
        raise InvalidArgument(
            f"{what}: {type(obj).__name__} has no length; expected a dict of columns "
            "(numpy arrays or lists), a pandas DataFrame or a pyarrow Table"
        ) from None


def take(attributes: Any, rows: npt.NDArray[np.intp]) -> Any:
    """The rows ``rows`` of ``attributes``, in the same kind of container."""
    if attributes is None:
        return None
    if isinstance(attributes, dict):
        return {name: _take(col, rows) for name, col in attributes.items()}
    return _take(attributes, rows)


def _take(col: Any, rows: npt.NDArray[np.intp]) -> Any:
    if isinstance(col, np.ndarray):
        return col[rows]
    if hasattr(col, "iloc"):  # pandas DataFrame or Series
        return col.iloc[rows].reset_index(drop=True)
    if hasattr(col, "take") and not isinstance(col, (list, tuple)):  # pyarrow Table / Array
        return col.take(rows)
    return [col[int(r)] for r in rows]


def values_by_id(
    answer: tuple[Any, Any, dict[str, Any]], names: Sequence[str]
) -> tuple[dict[int, int], dict[str, Any], dict[str, Any]]:
    """From a shard's ``search(q[:1], k=len(ids) + 1, ids=ids, columns=names)``: each id's
    position, the columns' values by position, and the columns' defaults (the padding cell)."""
    _, i, cols = answer
    row = np.asarray(i)[0]
    where = {int(h): p for p, h in enumerate(row) if h >= 0}
    pads = np.flatnonzero(row < 0)
    if not pads.size:
        raise InvalidArgument("columns: a shard found more rows than the ids it was asked for")
    values = {n: np.asarray(cols[n])[0] for n in names}
    defaults = {n: values[n][pads[0]] for n in names}
    return where, values, defaults


def gather(
    i: npt.NDArray[np.int64],
    owner: npt.NDArray[np.int64],
    answers: dict[int, tuple[dict[int, int], dict[str, Any], dict[str, Any]]],
    names: Sequence[str],
) -> dict[str, npt.NDArray[Any]]:
    """``{name: array shaped like i}``: each hit's value from its shard's answer, the
    column's default where ``i`` is −1 (as one index pads)."""
    defaults = next(iter(answers.values()))[2]
    out: dict[str, npt.NDArray[Any]] = {}
    for n in names:
        col = np.empty(i.shape, dtype=next(iter(answers.values()))[1][n].dtype)
        for idx in np.ndindex(i.shape):
            col[idx] = defaults[n]
        for idx in zip(*np.nonzero(i >= 0)):
            where, values, _ = answers[int(owner[idx])]
            col[idx] = values[n][where[int(i[idx])]]
        out[n] = col
    return out


def frame(
    d: npt.NDArray[Any],
    i: npt.NDArray[np.int64],
    cols: dict[str, npt.NDArray[Any]],
    names: Sequence[str],
    missing: Any,
) -> Any:
    """``as_frame=True``: one row per hit (query, rank, id as uint64, score), then the chosen
    columns, as :meth:`Index.search` makes it; ``attrs["missing"]`` with ``allow_partial``."""
    try:
        import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    except ImportError as e:
        raise ImportError(
            f"as_frame=True needs pandas ({e}); columns= alone returns numpy arrays"
        ) from None
    q, rank = np.nonzero(i >= 0)
    df = pd.DataFrame({
        "query": q.astype(np.int64),
        "rank": rank.astype(np.int64),
        "id": i[q, rank].astype(np.uint64),
        "score": d[q, rank],
    })
    for k, name in enumerate(names):
        df.insert(4 + k, name, cols[name][q, rank], allow_duplicates=True)
    if missing is not None:
        df.attrs["missing"] = missing
    return df
