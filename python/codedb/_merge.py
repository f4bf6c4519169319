"""Routing and exact merging for sharded indexes, independent of how shards are reached.

* Routing: an id's shard is ``splitmix64(id) mod n`` — stable across processes, machines and
  Python versions (unlike ``hash``), and spreading sequential ids evenly.
* Top-k merge: the global k best of a query are among the union of every shard's k best, so
  sorting that union by ``(score, id)`` — better score first, ties by smaller id, the engine's
  own total order (``src/scan/topk.rs``) — and keeping k gives exactly one index's list.
* Re-ranking: one index re-scores its R best *code* candidates. The sharded equivalent keeps
  the global R best code candidates (the merge above with k = R) and then the k best exact
  scores among those only; every shard returns its R code candidates and their exact scores.
* Class tables are additive (per class: image count and f64 descriptor sum, FORMAT.md §5), so
  the merged table is the per-class sum over shards.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from codedb import _codedb
from codedb._errors import InvalidArgument

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)



def larger_is_better(mode: str | None) -> bool:
    """Whether ``mode``'s scores rank larger first: the engine says it
    (``SearchMode::larger_is_better``), so a merge sorts as one index does."""
    return _codedb.larger_is_better(mode)


def shard_of(ids: npt.ArrayLike, n_shards: int) -> npt.NDArray[np.int64]:
    """The shard of every id: ``splitmix64(id) mod n_shards`` (Steele et al., OOPSLA 2014)."""
    if n_shards < 1:
        raise InvalidArgument(f"n_shards: {n_shards}, expected at least 1")
    a = np.asarray(ids)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise InvalidArgument(f"ids: expected a 1-D integer array, got {a.dtype} of shape {a.shape}")
    if a.size and a.dtype.kind == "i" and int(a.min()) < 0:
        raise InvalidArgument(f"ids: {int(a.min())} is negative")
    x = a.astype(np.uint64)
    with np.errstate(over="ignore"):
        x = x + _GOLDEN
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        x = x ^ (x >> np.uint64(31))
    return (x % np.uint64(n_shards)).astype(np.int64)


def _pad(dtype: np.dtype[Any], larger: bool) -> Any:
    """The value FAISS-shaped results are padded with: the worst score."""
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return -np.inf if larger else np.inf


def merge_topk(
    parts: Sequence[tuple[npt.NDArray[Any], npt.NDArray[np.int64]]],
    k: int,
    larger_is_better: bool = False,
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """The k best of every query over per-shard ``(D, I)`` lists (FAISS shapes, ``I == -1``
    where a shard had fewer rows): better score first, ties by smaller id, padded as one index
    pads (``-1`` ids, the worst value of ``D``'s dtype)."""
    if k < 1:
        raise InvalidArgument(f"k: {k}, expected at least 1")
    if not parts:
        raise InvalidArgument("parts: no shard results to merge")
    nq = parts[0][1].shape[0]
    for d, i in parts:
        if d.shape != i.shape or d.ndim != 2 or i.shape[0] != nq:
            raise InvalidArgument(f"parts: shapes {d.shape} and {i.shape}, expected ({nq}, k) each")
    dtype = np.result_type(*[d.dtype for d, _ in parts])
    d_all = np.concatenate([d.astype(dtype, copy=False) for d, _ in parts], axis=1)
    i_all = np.concatenate([i for _, i in parts], axis=1)
    valid = i_all >= 0
    # Sort keys: smaller is better; invalid entries last (key +inf, id max).
    key = d_all.astype(np.float64)
    if larger_is_better:
        key = -key
    key = np.where(valid, key, np.inf)
    ids = np.where(valid, i_all, np.iinfo(np.int64).max)
    order = np.lexsort((ids, key), axis=-1)[:, :k]
    out_i = np.take_along_axis(i_all, order, axis=1)
    out_d = np.take_along_axis(d_all, order, axis=1)
    ok = np.take_along_axis(valid, order, axis=1)
    out_i = np.where(ok, out_i, -1).astype(np.int64)
    out_d = np.where(ok, out_d, _pad(dtype, larger_is_better)).astype(dtype)
    if out_i.shape[1] < k:  # fewer candidates than k over all shards: pad the columns
        extra = k - out_i.shape[1]
        out_i = np.pad(out_i, ((0, 0), (0, extra)), constant_values=-1)
        out_d = np.pad(out_d, ((0, 0), (0, extra)), constant_values=_pad(dtype, larger_is_better))
    return out_d, out_i


def merge_reranked(
    code_parts: Sequence[tuple[npt.NDArray[Any], npt.NDArray[np.int64]]],
    exact_parts: Sequence[tuple[npt.NDArray[Any], npt.NDArray[np.int64]]],
    k: int,
    rerank: int,
    larger_is_better: bool = False,
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """One index's ``search(k, rerank=R)`` from shards: ``code_parts[s]`` is shard s's R best
    by code score, ``exact_parts[s]`` the same candidates re-scored exactly (its
    ``search(k=R, rerank=R)``). Keeps the global R best code candidates, then the k best of
    their exact scores."""
    if len(code_parts) != len(exact_parts):
        raise InvalidArgument("exact_parts: one per shard of code_parts")
    _, top_r = merge_topk(code_parts, rerank, larger_is_better)
    kept = []
    for d, i in exact_parts:
        inside = np.array([np.isin(row, cand) for row, cand in zip(i, top_r)], dtype=bool)
        inside = inside.reshape(i.shape) & (i >= 0)
        kept.append((d, np.where(inside, i, -1).astype(np.int64)))
    return merge_topk(kept, k, larger_is_better)


def merge_parts(
    parts: Sequence[tuple[tuple[npt.NDArray[Any], npt.NDArray[np.int64]],
                          tuple[npt.NDArray[Any], npt.NDArray[np.int64]] | None]],
    k: int,
    rerank: int | None,
    larger_is_better: bool,
    flat: Sequence[int] = (),
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
    """One index's answer from every shard's part of a query, ``(codes, exact)`` as a shard
    gives it (``exact`` only when re-ranked): the top-k by ``(score, id)``; re-ranked, the
    exact scores of the global R best code candidates (:func:`merge_reranked`), and for the
    queries in ``flat`` (answered exactly over every passing row, a filtered IVF search's flat
    search) the exact k best."""
    if rerank is None:
        return merge_topk([p[0] for p in parts], k, larger_is_better)
    exact = [p[1] for p in parts if p[1] is not None]
    d, i = merge_reranked([p[0] for p in parts], exact, k, rerank, larger_is_better)
    if len(flat):
        rows = list(flat)
        fd, fi = merge_topk([(e[0][rows], e[1][rows]) for e in exact], k, larger_is_better)
        d[rows], i[rows] = fd, fi
    return d, i


def merge_class_sums(
    tables: Sequence[tuple[int, list[dict[str, Any]]]], names: Sequence[str] | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """Adds per-shard class tables (``class_sums()``: ``(dim, [{id, name, parent, count,
    sum}])``) class by class, in shard order. A class must have the same name and parent in
    every shard that has it; ``names[s]`` names shard s in the error when it does not."""

    def who(s: int) -> str:
        return names[s] if names is not None else f"shard {s}"

    dim = 0
    merged: dict[int, dict[str, Any]] = {}
    first: dict[int, int] = {}
    for s, (d, classes) in enumerate(tables):
        if d == 0 and not classes:
            continue
        if dim == 0:
            dim = d
        elif d != dim:
            raise InvalidArgument(f"{who(s)}: class table of dimension {d}, other shards {dim}")
        for c in classes:
            cid = int(c["id"])
            have = merged.get(cid)
            if have is None:
                merged[cid] = {
                    "id": cid,
                    "name": c["name"],
                    "parent": c["parent"],
                    "count": int(c["count"]),
                    "sum": np.array(c["sum"], dtype=np.float64),
                }
                first[cid] = s
                continue
            if have["name"] != c["name"] or have["parent"] != c["parent"]:
                raise InvalidArgument(
                    f"{who(s)}: class {cid} is {c['name']!r} (parent {c['parent']}), but "
                    f"{have['name']!r} (parent {have['parent']}) in {who(first[cid])}"
                )
            have["count"] += int(c["count"])
            have["sum"] = have["sum"] + np.asarray(c["sum"], dtype=np.float64)
    return dim, [merged[c] for c in sorted(merged)]
