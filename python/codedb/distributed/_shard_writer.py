"""What a shard's writer runs, where the shard lives: in a thread of the driver's process, or in
the shard's Ray actor on the node whose disk holds it.

The writer holds the shard's :class:`Index` (its lock, its staged writes). The driver sends it
rows — arrays, or the paths of ``.npy`` files the writer reads itself — and it encodes and
writes them there, so encoded data never travels. Each writer instance has an *incarnation*
(process id and start time: not random, unique per start); every write names the incarnation
the driver last synchronised with, and a writer that restarted since (Ray restarted its actor,
or :meth:`ShardedIndex.restart` made a new one) refuses it with :class:`StaleWriter` before
changing anything. The restarted writer reopened the shard at its last committed version —
staged writes die with a process (docs/durability.md) — so the driver replays exactly the
writes it staged since that commit, then retries: nothing acknowledged is lost, nothing is
applied twice.
"""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from codedb._codedb import Index, Model, Snapshot
from codedb._errors import CodedbError, CorruptError, InvalidArgument
from codedb.distributed import _attributes
from codedb.distributed._cut import CUT_FILE, Cut
from codedb.distributed._errors import _skipped
from codedb.distributed._layout import ShardLayout, _with_record
from codedb.distributed._route import route_rows
from codedb.distributed._ops import _OPS, _node, _op_info


class StaleWriter(CodedbError):
    """A write named an incarnation of the shard's writer that is gone: the writer restarted
    (and reopened the shard at its last committed version) since the driver last synchronised.
    Nothing was changed; the driver replays its staged writes and retries."""


def _has_index(path: str) -> bool:
    d = pathlib.Path(path)
    return d.is_dir() and any(d.glob("v*.manifest"))


def _load(a: Any) -> Any:
    """An array argument, a reference to one in Ray's object store (fetched here), or a
    ``.npy`` file's path read here (memory-mapped: only this shard's rows are touched)."""
    if type(a).__name__ == "ObjectRef":
        import ray  # type: ignore[import-not-found, unused-ignore]

        return ray.get(a)
    if isinstance(a, (str, os.PathLike)):
        try:
            return np.load(os.fspath(a), mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise InvalidArgument(f"{os.fspath(a)}: cannot read as .npy: {e}") from e
    return a


class _ShardWriter:
    """The writer of shard ``shard`` at ``path`` (the body of a Ray actor, or an in-process
    object). A new instance opens the shard if it holds an index, so a restarted actor comes
    back at the shard's last committed version."""

    def __init__(self, path: str, shard: int, n_shards: int) -> None:
        self.path = path
        self.shard = shard
        self.n_shards = n_shards
        self.incarnation = f"{os.getpid()}:{time.time_ns()}"
        self.ix: Index | None = None
        self.open_error: BaseException | None = None
        if _has_index(path):
            try:
                self.ix = Index.open(path)
            except CodedbError as e:  # reported by every later call, naming the shard
                self.open_error = e

    def _index(self) -> Index:
        if self.ix is None:
            if self.open_error is not None:
                raise self.open_error
            raise InvalidArgument(f"{self.path}: the shard holds no index yet")
        return self.ix

    # ---- lifecycle -------------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        """Who answers: incarnation, process, and the shard's committed version (``None``
        without an index)."""
        if self.open_error is not None:
            raise self.open_error
        return {
            "incarnation": self.incarnation,
            "pid": os.getpid(),
            "version": None if self.ix is None else int(self.ix.version),
        }

    def create(self, record: tuple[Any, ...], model: Model,
               store_vectors: str | None, schema: str | None = None) -> dict[str, Any]:
        layout = ShardLayout(*record)
        if self.ix is not None and ShardLayout.read(self.path) == layout:
            return self.hello()  # a retry after the writer died just after creating it
        self.close()  # an index already there: the create below refuses it, naming it
        self.ix = _with_record(self.path, layout,
                               lambda: Index.create(self.path, model, store_vectors=store_vectors,
                                                    schema=schema))
        return self.hello()

    def build(
        self,
        record: tuple[Any, ...],
        model: Model,
        x: Any,
        ids: Any,
        labels: Any,
        store_vectors: str | None,
        lists: str | None,
        select: Any,
        attributes: Any = None,
        schema: str | None = None,
    ) -> dict[str, Any]:
        """Builds the shard in one commit (:meth:`Index.build`). With ``select``, ``x``,
        ``ids`` and ``labels`` are the whole input (arrays or ``.npy`` paths) and this shard
        keeps its rows: ``select=True``, those with ``shard_of(id) == shard``; an array (or
        its Ray reference), those row numbers (partitioned by list: the driver assigned every
        row to its list once); else they are this shard's rows already. ``attributes`` (or
        its Ray reference) follow the same rule.
        A build that already went through (this is a retry after the writer died just after
        it) is not repeated: the index exists at the same path with this layout."""
        if self.ix is not None:
            have = ShardLayout.read(self.path)
            if have is not None and tuple(have) == tuple(record):
                return self.hello()
            self.close()  # another index is there: the build below refuses it, naming it
        xa, ia, la = _load(x), _load(ids), _load(labels)
        attributes = _load(attributes)
        layout = ShardLayout(*record)
        if select is not False:
            ia = np.asarray(ia)
            _attributes.check_rows(attributes, len(ia))
            rows = (np.asarray(_load(select)) if select is not True else
                    np.flatnonzero(route_rows(self.n_shards, None, model, xa, ia) == self.shard))
            xa = np.asarray(xa[rows])
            ia = ia[rows]
            la = None if la is None else np.asarray(la[rows])
            attributes = _attributes.take(attributes, rows)
        self.ix = _with_record(
            self.path, layout,
            lambda: Index.build(self.path, model, xa, ids=ia, labels=la,
                                store_vectors=store_vectors, lists=lists,
                                attributes=attributes, schema=schema),
        )
        return self.hello()

    def model(self) -> Model:
        return self._index().model

    def adopt_layout(self, record: tuple[Any, ...]) -> None:
        """Records the layout in a shard made before layout records (under its writer lock)."""
        self._index()
        ShardLayout(*record).write(self.path)

    def close(self) -> None:
        if self.ix is not None:
            self.ix.close()
            self.ix = None

    # ---- writes ------------------------------------------------------------------------------

    def write(self, incarnation: str, op: str, kwargs: dict[str, Any]) -> Any:
        """One staged write (``add``, ``upsert``, ``delete``, ``add_class``, ``add_column``) or ``commit``, if
        ``incarnation`` is this writer's; :class:`StaleWriter` otherwise."""
        if incarnation != self.incarnation:
            raise StaleWriter(
                f"shard {self.shard} ({self.path}): its writer restarted (incarnation "
                f"{self.incarnation}, the driver knew {incarnation})"
            )
        ix = self._index()
        if op not in ("add", "upsert", "delete", "add_class", "add_column", "commit"):
            raise InvalidArgument(f"op: {op!r} is not a write")
        args = {k: _load(v) if k in ("x", "ids", "labels") else v for k, v in kwargs.items()}
        out = getattr(ix, op)(**args)
        return int(out) if op in ("commit", "add_class", "upsert", "delete") else None

    def compact(self, full: bool, deleted_threshold: float) -> dict[str, Any]:
        return dict(self._index().compact(full=full, deleted_threshold=deleted_threshold))

    def gc(self, keep: int | None) -> dict[str, Any]:
        """Garbage collection of the shard, keeping version ``keep`` (the published cut's)
        when it is not the newest: the engine retains the newest versions only."""
        ix = self._index()
        if keep is not None and keep != ix.version:
            raise InvalidArgument(
                f"shard {self.shard} ({self.path}): the published cut names version {keep} but "
                f"the shard is at {ix.version}; commit the sharded index before collecting"
            )
        return dict(ix.gc())

    # ---- reads and records -------------------------------------------------------------------

    def run(self, op: str, *args: Any) -> Any:
        if op == "info":
            return _op_info(self._index(), self.path)
        return _OPS[op](self._index(), *args)

    def health(self) -> dict[str, Any]:
        ix = self._index()
        return {
            "pid": os.getpid(),
            "node": _node(),
            "incarnation": self.incarnation,
            "version": int(ix.version),
            "rows": len(ix),
            "fell_back": bool(_skipped(ix)),
            "skipped": _skipped(ix),
        }

    def write_cut(self, data: bytes) -> None:
        Cut.publish(self.path, data)

    def read_cut(self) -> bytes | None:
        f = pathlib.Path(self.path) / CUT_FILE
        try:
            return f.read_bytes()
        except FileNotFoundError:
            return None


def open_pinned(path: str, version: int | None) -> Snapshot:
    """The shard at ``version`` (the pinned cut's), or the newest without one. When that
    version's manifest does not read, the shard falls back as any reader does (FORMAT.md
    §11.3): the newest older version that reads, its ``skipped_manifests`` naming the damage
    (the caller warns with :class:`ShardFallbackWarning`)."""
    if version is None:
        return Snapshot.open(path)
    try:
        return Snapshot.open(path, version=version)
    except CorruptError:
        snap = Snapshot.open(path)
        if snap.version <= version and snap.skipped_manifests:
            return snap
        snap.close()
        raise


class _ShardReader:
    """One shard opened read-only at a given version (a :class:`Snapshot`), answering
    operations; the body of a reader's Ray actor. Each call names the version the driver pins
    (its cut's), so an actor that Ray restarted answers from the same version."""

    def __init__(self, path: str, version: int | None = None) -> None:
        self.path = path
        self.snap = open_pinned(path, version)

    def at(self, version: int | None) -> Snapshot:
        if version is not None and version != self.snap.version and not (
            self.snap.skipped_manifests and self.snap.version < version
        ):
            fresh = open_pinned(self.path, version)
            old, self.snap = self.snap, fresh
            old.close()
        return self.snap

    def run(self, op: str, *args: Any) -> Any:
        return self.run_at(None, op, *args)

    def run_at(self, version: int | None, op: str, *args: Any) -> Any:
        snap = self.at(version)
        if op == "info":
            return _op_info(snap, self.path)
        if op == "read_cut":
            f = pathlib.Path(self.path) / CUT_FILE
            return f.read_bytes() if f.exists() else None
        return _OPS[op](snap, *args)

    def refresh(self) -> int:
        """Pins the newest committed version (an index without cut records)."""
        snap = Snapshot.open(self.path)
        old, self.snap = self.snap, snap
        old.close()
        return int(snap.version)

