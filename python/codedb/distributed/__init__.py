"""A sharded index: N ordinary index directories sharing one model, searched as one.

* **Writes** (:class:`ShardedIndex`) route by id: row ``id`` lives in shard
  ``splitmix64(id) mod N`` (:func:`codedb._merge.shard_of`), so the list of paths, *in its
  order*, is the sharded index's layout; ids are unique across shards. Every shard has its own
  writer — a thread of this process, or (``ray=True``) a Ray actor placed where the shard
  lives (``actor_options`` per shard, :func:`on_shard_nodes`) — which encodes, commits,
  compacts and collects there; the driver only routes rows and replays the writes staged
  since the last commit into a writer that restarted (:class:`StaleWriter`).
* **One version of the whole**: a sharded commit commits every shard, then publishes a cut
  record (``CUT.json`` in shard 0's directory, :class:`Cut`, FORMAT.md §8.2) naming every
  shard's version. Readers pin the cut, so they see whole sharded commits only, and
  ``refresh()`` moves them from cut to cut.
* **Reads** fan a query batch out to every shard and merge exactly
  (:mod:`codedb._merge`): the results are those of one index holding every row, ``nprobe``
  included (IVF cells are the model's; class lists are chosen by the merged class means).
  Shards are reached through a backend: :class:`ThreadShards` (in-process, a thread pool; the
  engine releases the GIL) or :class:`RayShards` (one Ray actor per shard, ``pip install
  ./python[ray]``), both behind :class:`ShardedSearcher`.
* **Layout**: each shard directory holds a layout record, ``SHARD.json`` (FORMAT.md §8.1,
  :class:`ShardLayout`): shard i of N, the layout's id and the model's, written before the
  shard's first manifest. Every sharded open checks it, so paths in another order, a missing or
  an extra shard, or a shard of another sharded index is refused by name (:class:`ShardError`)
  instead of routing ids to the wrong shard.
* **Fallback**: a shard whose newest manifests do not read opens at an older version (FORMAT.md
  §11.3); opening it and every search over it warn, naming the shard
  (:class:`ShardFallbackWarning`).
* **Faults**: a shard that fails is an error naming it (:class:`ShardError`), never a silently
  partial result — unless the caller passes ``allow_partial=True``; then the result's
  ``missing`` lists the shards left out.
"""

from __future__ import annotations

from codedb._merge import shard_of
from codedb.distributed._backends import Backend, RayShards, ThreadShards
from codedb.distributed._cut import CUT_FILE, Cut
from codedb.distributed._errors import (
    Missing,
    Partial,
    PartialColumns,
    ShardError,
    ShardFallbackWarning,
    ShardLayoutWarning,
)
from codedb.distributed._layout import LAYOUT_FILE, ShardLayout, check_layout
from codedb.distributed._placement import on_shard_nodes, shard_resource
from codedb.distributed._searcher import ShardedSearcher
from codedb.distributed._shard_writer import StaleWriter
from codedb.distributed._writer import ShardCutWarning, ShardedIndex


__all__ = [
    "Backend",
    "CUT_FILE",
    "Cut",
    "LAYOUT_FILE",
    "Missing",
    "Partial",
    "PartialColumns",
    "RayShards",
    "ShardCutWarning",
    "ShardError",
    "ShardFallbackWarning",
    "ShardLayout",
    "ShardLayoutWarning",
    "ShardedIndex",
    "ShardedSearcher",
    "StaleWriter",
    "ThreadShards",
    "check_layout",
    "on_shard_nodes",
    "shard_of",
    "shard_resource",
]
