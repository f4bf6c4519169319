"""The writer of a sharded index: rows routed by id, each shard written where it lives.

Every shard has a writer (:class:`_ShardWriter`) — in this process (``ray=False``: a thread
pool) or in the shard's own Ray actor (``ray=True``, placed by ``actor_options``). The driver
routes rows by id and sends each writer its rows (or the paths of ``.npy`` files the writers
read themselves); encoding, writing, committing, compaction and garbage collection run in the
writers, in parallel. The driver keeps, per shard, the writes it staged since the last commit
(the rows as given, never encoded data) and replays them into a writer that restarted, so a
writer killed mid-``add`` loses nothing acknowledged and applies nothing twice. A sharded
commit ends by publishing a cut record (:mod:`codedb.distributed._cut`), the one version of
the whole that readers pin.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from codedb._codedb import Index, Model
from codedb._errors import AlreadyExistsError, CodedbError, InvalidArgument, NotFoundError
from codedb._merge import shard_of
from codedb.distributed import _attributes
from codedb.distributed._cut import CUT_FILE, Cut
from codedb.distributed._errors import ShardError, _warn_fallback
from codedb.distributed._layout import (
    ShardLayout,
    _check_paths,
    _check_shards,
    _new_layout_id,
)
from codedb.distributed._placement import ActorOptions
from codedb.distributed._route import (
    assign_all,
    check_partition,
    place_lists,
    round_robin,
    route_rows,
)
from codedb.distributed._searcher import ShardedSearcher
from codedb.distributed._writers import RayWriters, ThreadWriters

_Path = str | os.PathLike[str]
Writers = ThreadWriters | RayWriters


class ShardCutWarning(UserWarning):
    """A shard is at a newer version than the published cut names: a sharded commit was cut
    short (the driver died between shard commits), or the shard was written on its own.
    Readers keep the previous cut; the next sharded commit publishes that shard's version
    with the rest (redo a cut-short commit with :meth:`ShardedIndex.upsert`: idempotent by
    id, it completes the shards that missed it and rewrites the same rows in the others)."""


def _writers(
    paths: Sequence[_Path], threads: int, ray: bool, actor_options: ActorOptions,
    max_restarts: int, start_timeout: float,
) -> Writers:
    if ray:
        return RayWriters(paths, actor_options=actor_options, max_restarts=max_restarts,
                          start_timeout=start_timeout)
    if actor_options is not None:
        raise InvalidArgument("actor_options: only with ray=True")
    return ThreadWriters(paths, threads)


class ShardedIndex:
    """The writer of a sharded index. Make one with :meth:`create`, :meth:`build` or
    :meth:`open`; ``ray=True`` runs every shard's writer in its own Ray actor (``ray.init``
    first), placed by ``actor_options`` — one dict for every shard, a list of one dict per
    shard, or a function of the shard number (:func:`on_shard_nodes`). Queries read every
    shard's newest committed version; serve readers from :class:`RayShards` /
    :class:`ThreadShards`, which pin the published cut."""

    def __init__(
        self, writers: Writers, model: Model, layout: str, cut: Cut | None,
        lists: tuple[int, ...] | None = None,
    ) -> None:
        self._w = writers
        self.paths = list(writers.paths)
        self._model = model
        self._layout = layout
        self._cut = cut
        self._lists = lists
        n = len(self.paths)
        self._inc: list[str | None] = [None] * n
        self._committed: list[int] = [0] * n
        self._journal: list[list[tuple[str, dict[str, Any]]]] = [[] for _ in range(n)]
        self.retries = 3
        self._searcher = ShardedSearcher(writers, lists=lists, model=model)

    # ---- making one ------------------------------------------------------------------------

    @staticmethod
    def create(
        paths: Sequence[_Path],
        model: Model,
        store_vectors: str | None = None,
        threads: int = 2,
        *,
        schema: str | None = None,
        partition: str = "id",
        ray: bool = False,
        actor_options: ActorOptions = None,
        max_restarts: int = 3,
        start_timeout: float = 120.0,
    ) -> ShardedIndex:
        """Creates an empty index with ``model`` at every path (shard s = ``paths[s]``), each
        with its layout record (shard s of N, a new layout id, the model id) written before the
        shard's first manifest, by the shard's writer. ``schema`` (``"name:type,…"``) gives
        every shard the same attribute columns (:meth:`Index.create`).

        ``partition="list"`` (IVF models) keeps each inverted list whole on one shard, list l
        on shard ``l mod N`` (:meth:`build` balances the lists by their rows instead), so a
        query with ``nprobe`` goes only to the shards holding its probed lists."""
        _check_paths(paths)
        check_partition(partition, model)
        layout = _new_layout_id(paths, model.id)
        n = len(paths)
        lists = round_robin(int(model.ivf_lists), n) if partition == "list" else None  # type: ignore[arg-type]
        w = _writers(paths, threads, ray, actor_options, max_restarts, start_timeout)
        return ShardedIndex._made(
            w, model, layout, lists,
            "create",
            lambda s: (tuple(ShardLayout(layout, s, n, model.id, lists)), model, store_vectors,
                       schema),
        )

    @staticmethod
    def build(
        paths: Sequence[_Path],
        model: Model,
        x: npt.ArrayLike | _Path,
        ids: npt.ArrayLike | _Path,
        labels: npt.ArrayLike | _Path | None = None,
        store_vectors: str | None = None,
        threads: int = 2,
        lists: str | None = None,
        *,
        attributes: Any = None,
        schema: str | None = None,
        partition: str = "id",
        ray: bool = False,
        actor_options: ActorOptions = None,
        max_restarts: int = 3,
        start_timeout: float = 120.0,
    ) -> ShardedIndex:
        """Builds every shard from its rows in one commit each (:meth:`Index.build`), all
        shards at once, each in its writer: with ``labels``, each shard's class table holds the
        counts and sums of its rows, and the sharded table is their sum. Every shard must
        receive at least one row. ``lists="label"`` files each row under its label's inverted
        list, for ``nprobe``.

        ``x``, ``ids`` and ``labels`` are arrays (the driver routes the rows and sends each
        writer its own) or paths of ``.npy`` files every writer reads itself, memory-mapped,
        keeping its rows — on a cluster, files every node can read (or a copy on each).

        ``partition="list"`` (IVF models) keeps each inverted list whole on one shard: the
        lists are counted over ``x`` (a file is read a chunk at a time) and placed largest
        first on the shard with the fewest rows, and each row goes to its list's shard; a query
        with ``nprobe`` then goes only to the shards holding its probed lists.

        ``attributes`` (a dict of columns, a DataFrame or a pyarrow Table, one value per row of
        ``x``) as :meth:`Index.build`: each shard stores its rows' values; with ``x`` a file,
        every writer receives them whole and keeps its rows'. ``schema`` (``"name:type,…"``)
        fixes every shard's columns, as :meth:`Index.build`; without it each shard's columns
        are those of ``attributes``."""
        _check_paths(paths)
        _check_lists(lists)
        check_partition(partition, model)
        layout = _new_layout_id(paths, model.id)
        n = len(paths)
        files = isinstance(x, (str, os.PathLike))
        placed: tuple[int, ...] | None = None
        where: npt.NDArray[np.int64] | None = None
        if partition == "list":
            # Every row's list, once: the lists' sizes place them, and the rows follow.
            source = (np.load(os.fspath(x), mmap_mode="r", allow_pickle=False)  # type: ignore[arg-type]
                      if files else np.asarray(x))
            assigned = assign_all(model, source)
            placed = place_lists(np.bincount(assigned, minlength=int(model.ivf_lists)), n)  # type: ignore[arg-type]
            where = np.asarray(placed, dtype=np.int64)[assigned]
        w = _writers(paths, threads, ray, actor_options, max_restarts, start_timeout)
        if files:
            if not isinstance(ids, (str, os.PathLike)) or not (
                labels is None or isinstance(labels, (str, os.PathLike))
            ):
                w.close()
                raise InvalidArgument("ids: with x a file, ids (and labels) are .npy files too")
            parts = [(x, ids, labels)] * n
            # Partitioned by list, each writer gets its row numbers (the driver assigned the
            # rows once); by id, each selects its rows by the ids' hash.
            select: list[Any] = ([True] * n if where is None else
                                 [_put(w, (np.flatnonzero(where == s),))[0] for s in range(n)])
            shared = _share(w, attributes)
            attrs: list[Any] = [shared] * n
        else:
            try:
                xa, ia, la = _rows(x, ids, labels)  # type: ignore[arg-type]
            except InvalidArgument:
                w.close()
                raise
            try:
                _attributes.check_rows(attributes, len(xa))
            except InvalidArgument:
                w.close()
                raise
            if where is None:
                where = route_rows(n, None, model, xa, ia)
            select = [False] * n
            parts = []
            attrs = []
            for s in range(n):
                rows = np.flatnonzero(where == s)
                parts.append(_put(w, (xa[rows], ia[rows], None if la is None else la[rows])))
                attrs.append(_attributes.take(attributes, rows))
        return ShardedIndex._made(
            w, model, layout, placed, "build",
            lambda s: (tuple(ShardLayout(layout, s, n, model.id, placed)), model, *parts[s],
                       store_vectors, lists, select[s], attrs[s], schema),
        )

    @staticmethod
    def _made(
        w: Writers, model: Model, layout: str, lists: tuple[int, ...] | None, method: str,
        args_of: Any,
    ) -> ShardedIndex:
        """Runs ``create`` or ``build`` on every writer; a writer that died is restarted and
        asked again (a build that went through is not repeated). Then the first cut."""
        n = len(w.paths)
        results = w.call(range(n), method, args_of)
        for s in range(n):
            for _ in range(3):
                r = results[s]
                if not (isinstance(r, BaseException) and w.is_lost(r)):
                    break
                _revive(w, s)
                results[s] = w.call([s], method, args_of)[0]
        for s, r in enumerate(results):
            if isinstance(r, BaseException):
                w.close()
                raise ShardError(s, w.paths[s], r) from r
        sh = ShardedIndex(w, model, layout, None, lists)
        for s, h in enumerate(results):
            sh._inc[s], sh._committed[s] = h["incarnation"], int(h["version"])
        sh._publish_cut()
        return sh

    @staticmethod
    def open(
        paths: Sequence[_Path],
        threads: int = 2,
        adopt_layout: bool = False,
        *,
        ray: bool = False,
        actor_options: ActorOptions = None,
        max_restarts: int = 3,
        start_timeout: float = 120.0,
    ) -> ShardedIndex:
        """Opens every shard as its writer, in the order the index was created with (the
        routing depends on it). Refuses, naming the path (:class:`ShardError`): a shard whose
        model differs from shard 0's, and paths that do not match the shards' layout records —
        another order, a shard missing or extra, a shard of another sharded index.

        Shards without layout records (made before codedb wrote them) are refused too, since
        their order cannot be checked; ``adopt_layout=True`` states that ``paths`` are in the
        creation order and records that layout in every shard (under the shards' writer
        locks). A shard at a newer version than the published cut (a sharded commit cut
        short) opens with a :class:`ShardCutWarning`."""
        _check_paths(paths)
        names = [os.fspath(p) for p in paths]
        w = _writers(paths, threads, ray, actor_options, max_restarts, start_timeout)
        try:
            hellos = w.call(range(len(names)), "hello", lambda s: ())
            for s, h in enumerate(hellos):
                if isinstance(h, BaseException):
                    raise ShardError(s, names[s], h) from h
                if h["version"] is None:
                    raise ShardError(s, names[s], "not a codedb index (no manifest found)")
            infos = w.run("info", (), range(len(names)))
            for s, i in enumerate(infos):
                if isinstance(i, BaseException):
                    raise ShardError(s, names[s], i) from i
            records = [None if i["layout"] is None else ShardLayout(*i["layout"]) for i in infos]
            models = [i["model_id"] for i in infos]
            unmarked = _check_shards(names, models, writer=True, records=records,
                                     adopt=adopt_layout)
            if unmarked:
                layout = _new_layout_id(paths, models[0])
                done = w.call(range(len(names)), "adopt_layout",
                              lambda s: (tuple(ShardLayout(layout, s, len(names), models[s])),))
                for s, r in enumerate(done):
                    if isinstance(r, BaseException):
                        raise ShardError(s, names[s], r) from r
            else:
                layout = records[0].layout  # type: ignore[union-attr]
            model = w.call([0], "model", lambda s: ())[0]
            if isinstance(model, BaseException):
                raise ShardError(0, names[0], model) from model
            raw = w.call([0], "read_cut", lambda s: ())[0]
            if isinstance(raw, BaseException):
                raise ShardError(0, names[0], raw) from raw
            cut = None if raw is None else Cut.from_bytes(raw, os.path.join(names[0], CUT_FILE))
            if cut is not None and unmarked:
                cut = None  # a cut of the shards before they had a layout: a new one follows
            if cut is not None:
                cut.check(layout, names)
        except (ShardError, CodedbError):
            w.close()
            raise
        sh = ShardedIndex(w, model, layout, cut,
                          None if records[0] is None else records[0].lists)
        for s, h in enumerate(hellos):
            sh._inc[s], sh._committed[s] = h["incarnation"], int(h["version"])
        for s, version, skipped in w.fallbacks():
            _warn_fallback(s, names[s], version, skipped, "opened at")
        if unmarked:
            sh._publish_cut()
        if cut is not None:
            ahead = [s for s in range(len(names)) if sh._committed[s] > cut.versions[s]]
            if ahead:
                warnings.warn(ShardCutWarning(
                    "; ".join(f"shard {s} ({names[s]}) is at version {sh._committed[s]}, the "
                              f"published cut {cut.cut} names {cut.versions[s]}" for s in ahead)
                    + ": a sharded commit was cut short (or the shard was written on its own); "
                    "readers keep the cut, the next sharded commit publishes these versions "
                    "with the rest"
                ), stacklevel=2)
        return sh

    # ---- what it is ------------------------------------------------------------------------

    @property
    def n_shards(self) -> int:
        return len(self.paths)

    @property
    def model(self) -> Model:
        return self._model

    @property
    def indexes(self) -> list[Index]:
        """The shards' open writers, in this process (``ray=False`` only)."""
        if not isinstance(self._w, ThreadWriters):
            raise InvalidArgument("indexes: the shards' writers live in Ray actors (ray=True)")
        return [w._index() for w in self._w.writers]

    @property
    def actors(self) -> list[Any]:
        """The Ray actor handle of every shard's writer (``ray=True`` only): what an operator
        drill kills (``ray.kill``) to see a writer revived."""
        if not isinstance(self._w, RayWriters):
            raise InvalidArgument("actors: the shards' writers are in this process (ray=False)")
        return list(self._w.actors)

    @property
    def cut(self) -> Cut | None:
        """The last cut this writer published or found (``None``: none yet)."""
        return self._cut

    # ---- writes ----------------------------------------------------------------------------

    def _fail(self, s: int, e: BaseException) -> ShardError:
        return ShardError(s, self.paths[s], e)

    def _hello(self, s: int) -> dict[str, Any]:
        """The shard's writer, started again if it is gone for good (killed without restart,
        or past its restarts)."""
        h = self._w.call([s], "hello", lambda _: ())[0]
        if isinstance(h, BaseException) and self._w.is_lost(h):
            self._w.restart(s)
            h = self._w.call([s], "hello", lambda _: ())[0]
        if isinstance(h, BaseException):
            raise self._fail(s, h) from h
        return h  # type: ignore[no-any-return]

    def _resync(self, s: int, committing: bool = False) -> dict[str, Any]:
        """After a writer was lost: its new incarnation, and the writes staged since the last
        commit replayed into it (it reopened the shard at that commit). ``committing``: the
        writer died during a commit, and a version past the last known one says the commit
        went through — then nothing is replayed (the caller records the commit)."""
        h = self._hello(s)
        inc = h["incarnation"]
        if h["version"] is not None and int(h["version"]) > self._committed[s]:
            if committing:
                return h
            self._committed[s] = int(h["version"])  # a compaction published before the loss
        for op, kw in self._journal[s]:
            r = self._w.call([s], "write", lambda _: (inc, op, kw))[0]
            if isinstance(r, BaseException):
                raise ShardError(s, self.paths[s],
                                 f"replaying the writes staged since version "
                                 f"{self._committed[s]} into its restarted writer: "
                                 f"{type(r).__name__}: {r}") from r
        self._inc[s] = inc
        return h

    def _write(self, op: str, per_shard: dict[int, dict[str, Any]]) -> dict[int, Any]:
        """One staged write on the shards of ``per_shard`` at once, each journaled once its
        writer acknowledged it. A lost writer is revived, replayed and asked again."""
        shards = sorted(per_shard)
        results = self._w.call(shards, "write", lambda s: (self._inc[s], op, per_shard[s]))
        out: dict[int, Any] = {}
        first: ShardError | None = None
        for s, r in zip(shards, results):
            for _ in range(self.retries):
                if not (isinstance(r, BaseException) and self._w.is_lost(r)):
                    break
                self._resync(s)
                r = self._w.call([s], "write", lambda _: (self._inc[s], op, per_shard[s]))[0]
            if isinstance(r, BaseException):
                first = first or self._fail(s, r)
                continue
            self._journal[s].append((op, per_shard[s]))
            out[s] = r
        if first is not None:
            raise first
        return out

    def add(
        self,
        x: npt.ArrayLike,
        ids: npt.ArrayLike,
        labels: npt.ArrayLike | None = None,
        lists: str | None = None,
        attributes: Any = None,
    ) -> npt.NDArray[np.int64]:
        """Stages the rows of ``x`` with ``ids`` (required, and unique across shards), each in
        its shard — ``shard_of(id)``, or its inverted list's shard when partitioned by list —
        encoded by that shard's writer; visible at the next :meth:`commit`. Returns the shard
        of each row. Not atomic across shards: if shard s refuses its rows (say, an id it
        already has), the other shards have staged theirs (nothing is visible before the
        commit). Partitioned by list, where an id's shard follows its vector, every shard is
        first asked whether it holds one of the ids (committed or staged): an id held by
        another shard than its row's is refused (``AlreadyExistsError`` in a
        :class:`ShardError` naming that shard) before anything is staged; replace a row with
        :meth:`upsert`. ``attributes`` (a dict of columns, a DataFrame or a pyarrow Table, one
        value per row) as :meth:`Index.add`: each shard stores its rows' values."""
        _check_lists(lists)
        xa, ia, la = _rows(x, ids, labels)
        _attributes.check_rows(attributes, len(xa))
        where = self._route(xa, ia)
        if self._lists is not None:
            self._refuse_held_elsewhere(ia, where)
        per = self._split(xa, ia, la, where, lists, attributes)
        self._write("add", per)
        return where

    def _refuse_held_elsewhere(self, ia: npt.NDArray[Any], where: npt.NDArray[np.int64]) -> None:
        """Partitioned by list: a ``ShardError`` wrapping ``AlreadyExistsError`` if a shard
        holds (committed or staged) an id this batch routes to another shard. The row's own
        shard makes the same check when it stages the row."""
        shards = list(range(self.n_shards))
        for s, r in zip(shards, self._w.run("holds", (ia,), shards)):
            for _ in range(self.retries):
                if not (isinstance(r, BaseException) and self._w.is_lost(r)):
                    break
                self._resync(s)
                r = self._w.run("holds", (ia,), [s])[0]
            if isinstance(r, BaseException):
                raise self._fail(s, r)
            clash = np.flatnonzero(np.asarray(r, dtype=bool) & (where != s))
            if clash.size:
                i = int(clash[0])
                raise self._fail(s, AlreadyExistsError(
                    f"ids: id {int(ia[i])} is held by shard {s}, but its row's inverted list "
                    f"lives on shard {int(where[i])} ({clash.size} such ids; nothing staged; "
                    "use upsert to move a row)"
                ))

    def upsert(
        self,
        x: npt.ArrayLike,
        ids: npt.ArrayLike,
        labels: npt.ArrayLike | None = None,
        lists: str | None = None,
        attributes: Any = None,
    ) -> int:
        """Stages rows that replace the rows with the same ids (or are added), each in its
        owning shard (:meth:`Index.upsert`, ``attributes`` as there and in :meth:`add`);
        returns how many rows they replaced. Partitioned
        by list, a row's new vector may fall in a list of another shard than its old one: the
        old row is deleted wherever it is (every other shard stages the deletion of these ids,
        missing ones ignored), so the id stays unique."""
        _check_lists(lists)
        xa, ia, la = _rows(x, ids, labels)
        _attributes.check_rows(attributes, len(xa))
        where = self._route(xa, ia)
        per = self._split(xa, ia, la, where, lists, attributes)
        moved = 0
        if self._lists is not None:
            gone = {s: {"ids": ia[where != s], "ignore_missing": True}
                    for s in range(self.n_shards) if (where != s).any()}
            moved = int(sum(self._write("delete", gone).values()))
        return moved + int(sum(self._write("upsert", per).values()))

    def delete(self, ids: npt.ArrayLike, ignore_missing: bool = False) -> int:
        """Stages the deletion of these ids, each in its owning shard (an id no shard has is a
        ``ShardError`` wrapping ``NotFoundError`` from the shard it routes to, unless
        ``ignore_missing``); returns how many rows were deleted. Not atomic across shards.
        Partitioned by list, an id's shard is not known from the id: every shard stages the
        deletion of the ids it holds, and ids no shard held are then a ``NotFoundError``
        naming how many (unless ``ignore_missing``)."""
        ia = np.asarray(ids)
        if self._lists is not None:
            uniq = np.unique(ia)
            per_all = {s: {"ids": uniq, "ignore_missing": True} for s in range(self.n_shards)}
            deleted = int(sum(self._write("delete", per_all).values()))
            if deleted < len(uniq) and not ignore_missing:
                raise NotFoundError(
                    f"ids: {len(uniq) - deleted} of the {len(uniq)} ids are held by no shard "
                    "(the other deletions are staged, as with ignore_missing=True)"
                )
            return deleted
        where = shard_of(ia, self.n_shards)
        per = {s: {"ids": ia[where == s], "ignore_missing": ignore_missing}
               for s in range(self.n_shards) if (where == s).any()}
        return int(sum(self._write("delete", per).values()))

    def add_column(self, name: str, type: str, default: Any = None) -> None:
        """Adds attribute column ``name`` to every shard's schema (:meth:`Index.add_column`),
        visible at the next :meth:`commit`."""
        self._write("add_column", {s: {"name": name, "type": type, "default": default}
                                   for s in range(self.n_shards)})

    def add_class(
        self, name: str, x: npt.ArrayLike | None = None, mean: npt.ArrayLike | None = None,
        id: int | None = None,
    ) -> int:
        """Stages a class (its mean from images ``x`` or a given ``mean``) in shard 0 and
        returns its id: ``id``, or one past every class id of every shard. The class table is
        additive, so the sharded table holds the class once, from shard 0. Labelled rows of
        this class routed to other shards are refused there (their tables lack the class);
        classes that rows will be labelled with come from :meth:`build`'s ``labels``.
        Zero-shot classes (``parent=``) are not offered: their prior would come from shard 0's
        part of the parent only."""
        tables = self._w.run("classes", (), range(self.n_shards))
        for s, t in enumerate(tables):
            if isinstance(t, BaseException):
                raise self._fail(s, t) from t
        if id is None:
            taken = [int(c) for t in tables for c in t]
            id = max(taken) + 1 if taken else 0
        for s, table in enumerate(tables):
            if id in table or name in table.values():
                raise ShardError(s, self.paths[s], f"class {name!r} or id {id} exists already")
        kw = {"name": name, "x": None if x is None else np.asarray(x),
              "mean": None if mean is None else np.asarray(mean), "id": id}
        return int(self._write("add_class", {0: kw})[0])

    def commit(self) -> list[int]:
        """Commits every shard, all at once, then publishes the cut naming every shard's new
        version (``CUT.json`` in shard 0's directory, atomically); returns the versions.

        Readers that pin cuts (:class:`ThreadShards`, :class:`RayShards`) see the whole commit
        or none of it: a crash before the cut is published leaves the previous cut visible
        (the shards that committed keep their new versions, published with the next cut).
        A writer that dies during its commit is revived: if its commit went through it is not
        repeated, else its staged writes are replayed and committed."""
        n = self.n_shards
        before = list(self._committed)
        results = self._w.call(range(n), "write", lambda s: (self._inc[s], "commit", {}))
        first: ShardError | None = None
        for s in range(n):
            r = results[s]
            for _ in range(self.retries):
                if not (isinstance(r, BaseException) and self._w.is_lost(r)):
                    break
                h = self._resync(s, committing=True)
                if h["version"] is not None and int(h["version"]) > before[s]:
                    self._inc[s] = h["incarnation"]
                    r = int(h["version"])
                    break
                r = self._w.call([s], "write", lambda _: (self._inc[s], "commit", {}))[0]
            if isinstance(r, BaseException):
                first = first or self._fail(s, r)
                continue
            self._committed[s] = int(r)
            self._journal[s] = []
        if first is not None:
            raise first
        self._publish_cut()
        return list(self._committed)

    def _publish_cut(self) -> Cut:
        """Writes the next cut (every shard's committed version) through shard 0's writer."""
        cut = Cut(self._layout, 1 if self._cut is None else self._cut.cut + 1,
                  tuple(self._committed))
        data = cut.to_bytes()
        r = self._w.call([0], "write_cut", lambda _: (data,))[0]
        if isinstance(r, BaseException) and self._w.is_lost(r):
            self._hello(0)
            r = self._w.call([0], "write_cut", lambda _: (data,))[0]
        if isinstance(r, BaseException):
            raise ShardError(0, self.paths[0], f"publishing cut {cut.cut}: {r}") from r
        self._cut = cut
        return cut

    def _split(
        self, xa: npt.NDArray[Any], ia: npt.NDArray[Any], la: npt.NDArray[Any] | None,
        where: npt.NDArray[np.int64], lists: str | None, attributes: Any = None,
    ) -> dict[int, dict[str, Any]]:
        """Each shard's part of a batch (rows ``where == s``), as its writer's arguments."""
        per: dict[int, dict[str, Any]] = {}
        for s in range(self.n_shards):
            rows = np.flatnonzero(where == s)
            if rows.size:
                xs, ids_s, ls = _put(self._w, (xa[rows], ia[rows],
                                              None if la is None else la[rows]))
                per[s] = {"x": xs, "ids": ids_s, "labels": ls, "lists": lists}
                if attributes is not None:
                    per[s]["attributes"] = _attributes.take(attributes, rows)
        return per

    def _route(self, xa: npt.NDArray[Any], ia: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        return route_rows(self.n_shards, self._lists, self._model, xa, ia)

    @property
    def partition(self) -> str:
        """How rows are partitioned: ``"id"`` (by a hash of the id) or ``"list"`` (whole
        inverted lists per shard)."""
        return "id" if self._lists is None else "list"

    @property
    def list_shards(self) -> tuple[int, ...] | None:
        """Partitioned by list: the shard of every inverted list (``None`` by id)."""
        return self._lists

    # ---- operating -------------------------------------------------------------------------

    def _each(self, method: str, args: tuple[Any, ...]) -> list[Any]:
        """``method`` on every shard's writer at once; a lost writer is revived (its staged
        writes replayed) and asked again."""
        n = self.n_shards
        results = self._w.call(range(n), method, lambda s: args)
        for s in range(n):
            for _ in range(self.retries):
                r = results[s]
                if not (isinstance(r, BaseException) and self._w.is_lost(r)):
                    break
                self._resync(s)
                results[s] = self._w.call([s], method, lambda _: args)[0]
        for s, r in enumerate(results):
            if isinstance(r, BaseException):
                raise self._fail(s, r) from r
        return results

    def compact(self, full: bool = False, deleted_threshold: float = 0.2) -> list[dict[str, Any]]:
        """Compacts every shard in its own writer, all at once (:meth:`Index.compact`), then
        publishes a cut naming the compacted versions; returns each shard's report."""
        reports = self._each("compact", (full, deleted_threshold))
        for s, h in enumerate(self._each("hello", ())):
            self._committed[s] = int(h["version"])
        self._publish_cut()
        return reports

    def gc(self) -> list[dict[str, Any]]:
        """Garbage collection of every shard in its own writer, all at once (:meth:`Index.gc`),
        after checking that every shard is at the version the published cut names (so no
        version the cut needs is removed)."""
        keep = None if self._cut is None else self._cut.versions
        n = self.n_shards
        results = self._w.call(range(n), "gc", lambda s: (None if keep is None else keep[s],))
        for s, r in enumerate(results):
            if isinstance(r, BaseException):
                raise self._fail(s, r) from r
        return results

    def restart(self, shard: int) -> dict[str, Any]:
        """A new writer for ``shard`` — for one whose actor was killed without restart
        (``ray.kill``) or ran out of restarts: it reopens the shard at its last committed
        version and gets the writes staged since replayed. Returns its health."""
        if not 0 <= shard < self.n_shards:
            raise InvalidArgument(f"shard: {shard}, expected 0 ≤ shard < {self.n_shards}")
        self._w.restart(shard)
        self._resync(shard)
        return self.health()[shard]

    def health(self) -> list[dict[str, Any]]:
        """Per shard: ``shard``, ``path``, ``alive``, and when alive its committed ``version``,
        live ``rows``, whether it ``fell_back`` to an older version (with the ``skipped``
        manifests), its process ``pid`` and Ray ``node`` (``None`` in this process), and
        ``staged`` (writes since the last commit, kept by
        the driver for replay); a dead shard has ``error`` instead. Never raises for a dead
        shard: it is what this reports."""
        out = []
        got = self._w.call(range(self.n_shards), "health", lambda s: ())
        for s, h in enumerate(got):
            rec: dict[str, Any] = {"shard": s, "path": self.paths[s],
                                   "staged": len(self._journal[s])}
            if isinstance(h, BaseException):
                rec.update(alive=False, error=f"{type(h).__name__}: {h}")
            else:
                rec.update(alive=True, **h)
            out.append(rec)
        return out

    # ---- reads -----------------------------------------------------------------------------

    def _read(self, fn: Any) -> Any:
        try:
            return fn()
        except ShardError as e:
            cause = e.cause if isinstance(e.cause, BaseException) else None
            if cause is None or not self._w.is_lost(cause):
                raise
            self._resync(e.shard)
            return fn()

    def search(self, q: npt.ArrayLike, k: int = 10, **kw: Any) -> Any:
        """k-NN over the shards' newest committed versions (:meth:`ShardedSearcher.search`)."""
        return self._read(lambda: self._searcher.search(q, k, **kw))

    def classify(self, x: npt.ArrayLike, top: int = 5, allow_partial: bool = False) -> Any:
        """NCM classification over the merged class table (:meth:`ShardedSearcher.classify`)."""
        return self._read(lambda: self._searcher.classify(x, top, allow_partial))

    def class_sums(self) -> tuple[int, list[dict[str, Any]]]:
        return self._read(lambda: self._searcher.class_sums())  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return sum(int(h["rows"]) for h in self._each("health", ()))

    def close(self) -> None:
        """Closes every shard's writer (staged, uncommitted writes are dropped, as
        :meth:`Index.close` drops them)."""
        self._w.close()

    def __enter__(self) -> ShardedIndex:
        return self

    def __exit__(self, *_args: object) -> None:
        self.close()


def _revive(w: Writers, s: int) -> None:
    h = w.call([s], "hello", lambda _: ())[0]
    if isinstance(h, BaseException) and w.is_lost(h):
        w.restart(s)


def _put(w: Writers, arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    """Rows for a shard's writer: as they are in this process; in Ray's object store for an
    actor (put once, so a replay sends a reference, not the rows again)."""
    if isinstance(w, RayWriters):
        return tuple(None if a is None else w._ray.put(np.ascontiguousarray(a)) for a in arrays)
    return arrays


def _share(w: Writers, attributes: Any) -> Any:
    """Attributes every writer receives whole: in Ray's object store once for actors."""
    if attributes is None or not isinstance(w, RayWriters):
        return attributes
    return w._ray.put(attributes)


def _check_lists(lists: str | None) -> None:
    """``lists="nearest"`` files a row under the class mean nearest it — in a shard, by that
    shard's part of the class table, not the whole index's, so a sharded index refuses it."""
    if lists == "nearest":
        raise InvalidArgument(
            "lists: 'nearest' would pick each row's list by its shard's class means, not the "
            "sharded index's; use lists='label'"
        )


def _rows(
    x: npt.ArrayLike, ids: npt.ArrayLike | None, labels: npt.ArrayLike | None
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any] | None]:
    """Rows, ids and labels checked for routing: one id per row, unique."""
    if ids is None:
        raise InvalidArgument(
            "ids: a sharded index needs explicit ids (they route rows to shards and must be "
            "unique across them)"
        )
    xa = np.asarray(x)
    ia = np.asarray(ids)
    if xa.ndim != 2 or ia.ndim != 1 or ia.shape[0] != xa.shape[0]:
        raise InvalidArgument(f"ids: {ia.shape} for x of shape {xa.shape}, expected one per row")
    if len(np.unique(ia)) != len(ia):
        raise InvalidArgument("ids: an id appears twice")
    la = None if labels is None else np.asarray(labels)
    if la is not None and la.shape != ia.shape:
        raise InvalidArgument(f"labels: {la.shape}, expected one per row ({ia.shape})")
    return xa, ia, la

