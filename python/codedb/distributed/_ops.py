"""What one shard runs, in a thread of the driver's process or in the shard's Ray actor."""

from __future__ import annotations

import os
import sys
from functools import partial
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import numpy.typing as npt

from codedb import _merge
from codedb._codedb import classify_sums
from codedb._errors import InvalidArgument
from codedb.distributed._errors import _skipped
from codedb.distributed._layout import ShardLayout

_Result = tuple[npt.NDArray[Any], npt.NDArray[np.int64]]

#: A shard operation's arguments: the same for every shard, or a function of the shard.
Args = tuple[Any, ...] | Callable[[int], tuple[Any, ...]]


def _args(args: Args, s: int) -> tuple[Any, ...]:
    return args(s) if callable(args) else args


def _op_search(
    target: Any,
    q: npt.NDArray[np.float32],
    k: int,
    mode: str | None,
    rerank: int | None,
    classes: list[str | int] | None,
    threads: int,
    mih: str = "auto",
    nprobe: int | None = None,
    probes: npt.NDArray[np.int64] | None = None,
    where: str | None = None,
    ids: Any = None,
) -> tuple[_Result, _Result | None]:
    """A shard's part of a k-NN query: its k best; with ``rerank=R`` its R best by code score
    and the same R re-scored exactly (what `_merge.merge_reranked` needs). ``mih`` as
    :meth:`Index.search` (the tables change the time, never the results).

    ``nprobe`` (IVF models only): the shard probes the model's coarse centroids itself — they
    are the model's, the same in every shard, so each shard scans the same cells one index
    would (Jégou et al., TPAMI 2011, §III-A). ``probes`` (class lists): row i holds the class
    ids the driver chose for query i from the *merged* class means (the class table is
    additive, FORMAT.md §5); the shard scans those of its lists, plus its unlisted rows, as
    one index's ``nprobe`` search does (src/search/probe.rs)."""
    kw: dict[str, Any] = {"mode": mode, "classes": classes, "threads": threads}
    if mih != "auto":
        kw["mih"] = mih
    if nprobe is not None:
        kw["nprobe"] = nprobe
    if where is not None:
        kw["where"] = where
    if ids is not None:
        kw["ids"] = ids
    if probes is None:
        return _search_pair(target, q, k, rerank, kw)
    return _search_probed(target, q, k, rerank, kw, probes)


def _pair(search: Callable[..., _Result], k: int, rerank: int | None) -> tuple[_Result, _Result | None]:
    """A shard's part of a query answered by ``search`` (called with ``k=`` and ``rerank=``):
    its k best; with ``rerank=R`` its R best by code score and the same R re-scored exactly,
    what :func:`codedb._merge.merge_reranked` needs to pick the global R best candidates."""
    if rerank is None:
        return search(k=k), None
    return search(k=rerank), search(k=rerank, rerank=rerank)


def _search_pair(
    target: Any, q: npt.NDArray[np.float32], k: int, rerank: int | None, kw: dict[str, Any]
) -> tuple[_Result, _Result | None]:
    return _pair(partial(target.search, q, **kw), k, rerank)


def _search_probed(
    target: Any,
    q: npt.NDArray[np.float32],
    k: int,
    rerank: int | None,
    kw: dict[str, Any],
    probes: npt.NDArray[np.int64],
) -> tuple[_Result, _Result | None]:
    """Queries grouped by their probed lists (as the engine groups them), each group one
    list-restricted search over this shard's part of those lists."""
    own = {int(c) for c in target.classes}
    listed, unlisted = _op_list_coverage(target)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, row in enumerate(np.asarray(probes)):
        groups.setdefault(tuple(int(c) for c in row), []).append(i)
    parts: list[tuple[list[int], tuple[_Result, _Result | None]]] = []
    for lists, rows in groups.items():
        mine = [c for c in lists if c in own]
        sub = q[rows]
        if mine and listed > 0:
            part = _search_pair(target, sub, k, rerank, {**kw, "classes": mine})
        elif unlisted > 0:
            # None of the probed lists has rows here (or no row here has a list): the scan
            # one index would make reaches only this shard's unlisted rows — all of them when
            # no row has a list, else the rows outside every list need the probed lists'
            # restriction, which a search with lists of other rows cannot express.
            if listed > 0:
                raise InvalidArgument(
                    f"nprobe: this shard has {unlisted} live rows without a list and none of "
                    f"the lists {list(lists)} probed for query {rows[0]}, so the search cannot "
                    "be restricted to its unlisted rows alone; give every row a list "
                    "(lists='label' on every add) to probe a sharded index"
                )
            part = _search_pair(target, sub, k, rerank, kw)
        elif own:
            # Nothing of this shard is in the probed lists: one list's scan gives the
            # result's shape and score type, its hits are dropped.
            one = _search_pair(target, sub, k, rerank, {**kw, "classes": [min(own)]})
            part = assemble([], len(rows), kw.get("mode"), like=one)
        else:
            part = _search_pair(target, sub, k, rerank, kw)  # no live rows: nothing found
        parts.append((rows, part))
    return assemble(parts, len(q), kw.get("mode"))


def assemble(
    parts: Sequence[tuple[Any, tuple[_Result, _Result | None]]],
    nq: int,
    mode: str | None,
    like: tuple[_Result, _Result | None] | None = None,
) -> tuple[_Result, _Result | None]:
    """Parts of an answer, each to the queries ``rows`` of ``(rows, part)``, as one answer to
    ``nq`` queries in query order, shaped like the first part (or ``like``); a query no part
    answers is blank (ids −1, the padding score one index uses for ``mode``), which the merge
    skips."""
    first = like if like is not None else parts[0][1]
    larger = _merge.larger_is_better(mode)

    def put(which: int) -> _Result:
        ref = first[which]
        assert ref is not None
        d = np.full((nq, ref[0].shape[1]), _merge._pad(ref[0].dtype, larger), dtype=ref[0].dtype)
        i = np.full((nq, ref[1].shape[1]), -1, dtype=np.int64)
        for rows, part in parts:
            got = part[which]
            assert got is not None
            d[rows], i[rows] = got
        return d, i

    return put(0), None if first[1] is None else put(1)


class Planned(NamedTuple):
    """A filtered probed IVF search's arguments, the same for every shard and every round trip
    of its plan (:mod:`codedb.distributed._filtered_probe`)."""

    k: int
    mode: str | None
    rerank: int | None
    threads: int
    nprobe: int
    where: str | None
    ids: Any

    def kw(self) -> dict[str, Any]:
        """As keywords of :meth:`Index.ivf_list_counts` and :meth:`Index.search_ivf_planned`,
        without ``k`` and ``rerank``."""
        return {"mode": self.mode, "nprobe": self.nprobe, "threads": self.threads,
                "where": self.where, "ids": self.ids}


def _op_ivf_counts(
    target: Any,
    q: npt.NDArray[np.float32],
    p: Planned,
    start: list[int] | None,
    count: int | None,
) -> tuple[Any, int]:
    """The shard's counts of the filtered IVF plan (:meth:`Index.ivf_list_counts`: per query its
    lists in probe order, their passing and live rows; ``None`` when the search does not run
    the plan) and its live rows, which the driver sums to decide as one index."""
    counts = target.ivf_list_counts(q, k=p.k, rerank=p.rerank, start=start, count=count,
                                    **p.kw())
    return counts, len(target)


def _op_search_planned(
    target: Any, q: npt.NDArray[np.float32], plan: list[list[int] | None], p: Planned
) -> tuple[_Result, _Result | None]:
    """The shard's part of a filtered probed IVF search decided by the driver
    (:meth:`Index.search_ivf_planned`) over the planned lists, as :func:`_pair` gives it (a
    flat query's exact part: its exact R best passing rows)."""
    return _pair(partial(target.search_ivf_planned, q, plan, **p.kw()), p.k, p.rerank)


def _op_passing(target: Any, where: str | None, ids: Any) -> tuple[int, int]:
    """The shard's live rows the filter passes (:meth:`Index.passing_rows`) and its live rows."""
    return int(target.passing_rows(where=where, ids=ids)), len(target)


def _op_class_sums(target: Any) -> tuple[int, list[dict[str, Any]]]:
    dim, classes = target.class_sums()
    return int(dim), list(classes)


def _op_classify_sums(
    target: Any, dim: int, classes: list[dict[str, Any]], x: npt.NDArray[np.float32], top: int
) -> _Result:
    return classify_sums(target.model, dim, classes, x, top)


def _op_list_coverage(target: Any) -> tuple[int, int]:
    """The shard's live rows with a list id and without one."""
    snap = target.snapshot() if hasattr(target, "snapshot") else target
    listed, unlisted = snap.list_coverage()
    return int(listed), int(unlisted)


def _op_classes(target: Any) -> dict[int, str]:
    return {int(k): str(v) for k, v in target.classes.items()}


def _node() -> str | None:
    """The Ray node answering (``None`` outside Ray)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return str(ray.get_runtime_context().get_node_id())


def _op_info(target: Any, path: str = "") -> dict[str, Any]:
    """What the driver checks of a shard: its model, layout record (read where the shard
    lives, which for a Ray actor may be another machine) and the manifests it skipped."""
    layout = ShardLayout.read(path) if path else None
    return {
        "pid": os.getpid(),
        "node": _node(),
        "model_id": target.model.id,
        "ivf_lists": target.model.ivf_lists,
        "rows": len(target),
        "version": target.version,
        "layout": None if layout is None else tuple(layout),
        "skipped": _skipped(target),
    }


def _op_model(target: Any) -> Any:
    """The shard's model (it pickles, so it travels from an actor)."""
    return target.model


def _op_holds(target: Any, ids: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Which ids the shard's writer holds, committed or staged (:meth:`Index.holds`)."""
    held: npt.NDArray[np.bool_] = target.holds(ids)
    return held


def _op_columns(
    target: Any, q: npt.NDArray[np.float32], ids: npt.NDArray[np.int64], names: list[str]
) -> Any:
    """The attribute columns of the shard's rows ``ids`` (live in the version it answers
    from): the search one index answers restricted to those ids, with one more result than
    ids, so the last cell is padding and holds the columns' defaults."""
    return target.search(q, k=len(ids) + 1, ids=ids, columns=names)


_OPS: dict[str, Callable[..., Any]] = {
    "columns": _op_columns,
    "holds": _op_holds,
    "model": _op_model,
    "search": _op_search,
    "class_sums": _op_class_sums,
    "classify_sums": _op_classify_sums,
    "info": _op_info,
    "classes": _op_classes,
    "list_coverage": _op_list_coverage,
    "ivf_counts": _op_ivf_counts,
    "search_planned": _op_search_planned,
    "passing": _op_passing,
}
