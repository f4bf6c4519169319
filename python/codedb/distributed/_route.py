"""Where a row lives and which shards a query needs, for both partitions of a sharded index.

* **By id** (the default): row ``id`` lives in shard ``splitmix64(id) mod N``
  (:func:`codedb._merge.shard_of`); every query goes to every shard.
* **By list** (``partition="list"``, IVF models only): every inverted list of the model's
  coarse quantiser lives whole on one shard (the layout record's ``list_shards``), a row in the
  shard of its list (:meth:`Model.assign_lists`: the cell its code is filed under). A query
  with ``nprobe`` goes only to the shards holding one of its probed lists
  (:meth:`Model.probe_lists`), and each of those scans its part of the probed lists as one
  index would, so the merged answer is one index's (Jégou et al., TPAMI 2011, §III-A: the
  probed cells hold every candidate). The price is skew: a list's rows cannot be spread.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from codedb._codedb import Model
from codedb._errors import InvalidArgument
from codedb._merge import shard_of

#: Rows assigned per call when lists are counted from a memory-mapped file.
_CHUNK = 1 << 16

PARTITIONS = ("id", "list")


def check_partition(partition: str, model: Model) -> None:
    """``partition`` is known, and ``"list"`` has a model with inverted lists."""
    if partition not in PARTITIONS:
        raise InvalidArgument(f"partition: {partition!r}, expected 'id' or 'list'")
    if partition == "list" and model.ivf_lists is None:
        raise InvalidArgument(
            "partition: 'list' places whole inverted lists on shards, and this model has none "
            "(train an ivf:K,... model)"
        )


def assign_all(model: Model, x: Any) -> npt.NDArray[np.int64]:
    """The inverted list of every row of ``x`` (an array or a memory-mapped ``.npy``),
    assigned a chunk at a time so a file is never read whole."""
    out = np.empty(len(x), dtype=np.int64)
    for start in range(0, len(x), _CHUNK):
        chunk = np.ascontiguousarray(x[start:start + _CHUNK], dtype=np.float32)
        out[start:start + len(chunk)] = model.assign_lists(chunk)
    return out


def place_lists(counts: npt.NDArray[np.int64], n_shards: int) -> tuple[int, ...]:
    """The shard of every list: largest list first onto the shard holding the fewest rows so
    far (ties: the smaller shard; lists of equal size: the smaller list first) — Graham's
    longest-processing-time rule, within 4/3 of the best balance when no list outweighs a
    shard. Deterministic, so every process places the same data the same way."""
    load = np.zeros(n_shards, dtype=np.int64)
    out = np.zeros(len(counts), dtype=np.int64)
    for l in np.lexsort((np.arange(len(counts)), -np.asarray(counts))):
        s = int(np.argmin(load))
        out[l] = s
        load[s] += counts[l]
    return tuple(int(s) for s in out)


def round_robin(k: int, n_shards: int) -> tuple[int, ...]:
    """List l on shard ``l mod N``: the placement of an index created empty (no rows to
    balance by)."""
    return tuple(l % n_shards for l in range(k))


def route_rows(
    n_shards: int,
    lists: Sequence[int] | None,
    model: Model,
    x: npt.NDArray[Any],
    ids: npt.NDArray[Any],
) -> npt.NDArray[np.int64]:
    """The shard of every row: by id, or (``lists``) by the row's inverted list."""
    if lists is None:
        return shard_of(ids, n_shards)
    return np.asarray(lists, dtype=np.int64)[assign_all(model, x)]


def query_shards(
    lists: Sequence[int], model: Model, q: npt.NDArray[np.float32], nprobe: int, n_shards: int
) -> list[npt.NDArray[np.int64]]:
    """Per shard, the queries (row numbers of ``q``) with a probed list on it."""
    probes = model.probe_lists(q, nprobe).astype(np.int64)
    owner = np.asarray(lists, dtype=np.int64)[probes]  # (nq, nprobe): each probed list's shard
    return [np.flatnonzero((owner == s).any(axis=1)) for s in range(n_shards)]
