"""A sharded index: N ordinary index directories sharing one model, searched as one.

* **Writes** (:class:`ShardedIndex`) route by id: row ``id`` lives in shard
  ``splitmix64(id) mod N`` (:func:`codedb._merge.shard_of`), so the list of paths, *in its
  order*, is the sharded index's layout; ids are unique across shards. Each shard commits on its
  own: a shard's commit is atomic, a sharded commit is not (see :meth:`ShardedIndex.commit`).
* **Reads** fan a query batch out to every shard and merge exactly
  (:mod:`codedb._merge`): the results are those of one index holding every row. Shards are
  reached through a backend: :class:`ThreadShards` (in-process, a thread pool; the engine
  releases the GIL) or :class:`RayShards` (one Ray actor per shard, ``pip install
  ./python[ray]``), both behind :class:`ShardedSearcher`.
* **Faults**: a shard that fails is an error naming it (:class:`ShardError`), never a silently
  partial result — unless the caller passes ``allow_partial=True``; then the result's
  ``missing`` lists the shards left out.
"""

from __future__ import annotations

import os
import pathlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple, Protocol, Sequence

import numpy as np
import numpy.typing as npt

from codedb import _merge
from codedb._codedb import Index, Model, Snapshot, classify_sums
from codedb._errors import CodedbError, InvalidArgument

__all__ = [
    "Missing",
    "Partial",
    "RayShards",
    "ShardError",
    "ShardedIndex",
    "ShardedSearcher",
    "ThreadShards",
    "shard_of",
]

shard_of = _merge.shard_of

_Path = str | os.PathLike[str]
_Result = tuple[npt.NDArray[Any], npt.NDArray[np.int64]]


class ShardError(CodedbError):
    """A shard failed: ``shard`` (its number), ``path`` (its directory) and ``cause`` (the
    error it raised, or why it could not answer)."""

    def __init__(self, shard: int, path: str, cause: BaseException | str) -> None:
        self.shard = shard
        self.path = path
        self.cause = cause
        super().__init__(f"shard {shard} ({path}): {_describe(cause)}")


class Missing(NamedTuple):
    """A shard an ``allow_partial=True`` result leaves out, and why."""

    shard: int
    path: str
    error: str


class Partial(NamedTuple):
    """An ``allow_partial=True`` result: FAISS-shaped ``D`` and ``I`` over the shards that
    answered, and ``missing``, the shards that did not (empty when every shard answered)."""

    D: npt.NDArray[Any]
    I: npt.NDArray[np.int64]  # noqa: E741 (FAISS's name)
    missing: list[Missing]


def _describe(cause: BaseException | str) -> str:
    if isinstance(cause, str):
        return cause
    inner = getattr(cause, "cause", None)  # Ray wraps a task's exception; show the original
    if isinstance(inner, BaseException):
        cause = inner
    text = str(cause).strip() or type(cause).__name__
    return f"{type(cause).__name__}: {text}"


# ---- What one shard runs (in a thread of this process or in its Ray actor) -------------------


def _op_search(
    target: Any,
    q: npt.NDArray[np.float32],
    k: int,
    mode: str | None,
    rerank: int | None,
    classes: list[str | int] | None,
    threads: int,
) -> tuple[_Result, _Result | None]:
    """A shard's part of a k-NN query: its k best; with ``rerank=R`` its R best by code score
    and the same R re-scored exactly (what `_merge.merge_reranked` needs)."""
    if rerank is None:
        return target.search(q, k=k, mode=mode, classes=classes, threads=threads), None
    codes = target.search(q, k=rerank, mode=mode, classes=classes, threads=threads)
    exact = target.search(q, k=rerank, mode=mode, rerank=rerank, classes=classes, threads=threads)
    return codes, exact


def _op_class_sums(target: Any) -> tuple[int, list[dict[str, Any]]]:
    dim, classes = target.class_sums()
    return int(dim), list(classes)


def _op_classify_sums(
    target: Any, dim: int, classes: list[dict[str, Any]], x: npt.NDArray[np.float32], top: int
) -> _Result:
    return classify_sums(target.model, dim, classes, x, top)


def _op_info(target: Any) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "model_id": target.model.id,
        "rows": len(target),
        "version": target.version,
    }


_OPS: dict[str, Callable[..., Any]] = {
    "search": _op_search,
    "class_sums": _op_class_sums,
    "classify_sums": _op_classify_sums,
    "info": _op_info,
}


class _ShardServer:
    """One shard opened once, read-only (a :class:`Snapshot`: the mmap'd newest committed
    version), answering operations; the body of a Ray actor."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.snap = Snapshot.open(path)

    def run(self, op: str, *args: Any) -> Any:
        return _OPS[op](self.snap, *args)

    def refresh(self) -> int:
        """Pins the newest committed version (after a writer's commit)."""
        snap = Snapshot.open(self.path)
        old, self.snap = self.snap, snap
        old.close()
        return int(snap.version)


# ---- Backends: how the driver reaches its shards -----------------------------------------------


class Backend(Protocol):
    """Runs one operation on some shards and returns, per shard, its result or its exception."""

    paths: list[str]

    def run(self, op: str, args: tuple[Any, ...], shards: Sequence[int]) -> list[Any]: ...

    def refresh(self) -> list[int]: ...

    def close(self) -> None: ...


class ThreadShards:
    """Shards in this process: open :class:`Index` or :class:`Snapshot` objects, one
    operation per shard on a thread pool of ``threads`` workers (the engine releases the GIL,
    so shards scan in parallel)."""

    def __init__(
        self, targets: Sequence[Index | Snapshot], paths: Sequence[_Path], threads: int = 2
    ) -> None:
        if len(targets) != len(paths) or not targets:
            raise InvalidArgument("targets: one open shard per path, at least one")
        self.targets = list(targets)
        self.paths = [os.fspath(p) for p in paths]
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads))

    @staticmethod
    def open(paths: Sequence[_Path], threads: int = 2) -> ThreadShards:
        """Read-only: the newest committed version of every shard."""
        snaps: list[Index | Snapshot] = []
        for s, p in enumerate(paths):
            try:
                snaps.append(Snapshot.open(p))
            except CodedbError as e:
                raise ShardError(s, os.fspath(p), e) from e
        return ThreadShards(snaps, paths, threads)

    def run(self, op: str, args: tuple[Any, ...], shards: Sequence[int]) -> list[Any]:
        fn = _OPS[op]
        futures = [self._pool.submit(fn, self.targets[s], *args) for s in shards]
        out: list[Any] = []
        for f in futures:
            try:
                out.append(f.result())
            except Exception as e:  # reported per shard by the caller
                out.append(e)
        return out

    def refresh(self) -> list[int]:
        versions = []
        for s, t in enumerate(self.targets):
            if isinstance(t, Snapshot):
                fresh = Snapshot.open(self.paths[s])
                t.close()
                self.targets[s] = t = fresh
            versions.append(int(t.version))
        return versions

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class RayShards:
    """One Ray actor per shard (``pip install ./python[ray]``; call ``ray.init`` first). Each
    actor opens its shard once (mmap) and answers whole query batches. An actor that dies is
    restarted up to ``max_restarts`` times and the task it was running retried up to
    ``max_task_retries`` times (Ray's actor fault tolerance); past that, or when a batch has
    no answer ``timeout`` seconds after it was sent, the shard's result is an error naming it; an actor not started
    within ``start_timeout`` seconds (the cluster lacks the resources it asks for) is one too.
    ``actor_options`` go to ``ActorClass.options`` (``num_cpus`` defaults to 1: one core scans
    one shard). ``model_id``: the model every shard must have (default: shard 0's)."""

    def __init__(
        self,
        paths: Sequence[_Path],
        *,
        max_restarts: int = 3,
        max_task_retries: int = 3,
        timeout: float | None = None,
        start_timeout: float = 120.0,
        model_id: str | None = None,
        actor_options: dict[str, Any] | None = None,
    ) -> None:
        import ray  # type: ignore[import-not-found, unused-ignore]

        if not paths:
            raise InvalidArgument("paths: at least one shard")
        self._ray = ray
        self.paths = [os.fspath(p) for p in paths]
        self.timeout = timeout
        options: dict[str, Any] = {"num_cpus": 1}
        options.update(actor_options or {})
        options.update(max_restarts=max_restarts, max_task_retries=max_task_retries)
        cls = ray.remote(_ShardServer).options(**options)
        self.actors: list[Any] = []
        for s, p in enumerate(self.paths):
            try:
                self.actors.append(cls.remote(p))
            except Exception as e:
                self.close()
                raise ShardError(s, p, e) from e
        # Every actor opens its shard now: a missing, corrupt or foreign shard fails here, and
        # an actor the cluster cannot place (too few CPUs) fails after `start_timeout`.
        self.timeout, wait = start_timeout, self.timeout
        try:
            infos = self.run("info", (), range(len(self.paths)))
        finally:
            self.timeout = wait
        for s, info in enumerate(infos):
            if isinstance(info, TimeoutError):
                self.close()
                raise ShardError(
                    s,
                    self.paths[s],
                    f"its actor did not start within {start_timeout} s (does the cluster have "
                    f"the resources it asks for: {options.get('num_cpus')} CPU?)",
                )
            if isinstance(info, BaseException):
                self.close()
                raise ShardError(s, self.paths[s], info) from info
        want = model_id or infos[0]["model_id"]
        for s, info in enumerate(infos):
            if info["model_id"] != want:
                self.close()
                raise ShardError(
                    s,
                    self.paths[s],
                    f"model {info['model_id']} differs from the sharded index's {want} "
                    "(every shard must be made with the same model)",
                )
        self.model_id: str = want

    def run(self, op: str, args: tuple[Any, ...], shards: Sequence[int]) -> list[Any]:
        ray = self._ray
        refs = [self.actors[s].run.remote(op, *args) for s in shards]
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        out: list[Any] = []
        for ref in refs:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                out.append(ray.get(ref, timeout=left))
            except ray.exceptions.GetTimeoutError:
                ray.cancel(ref)
                out.append(TimeoutError(f"no answer within {self.timeout} s"))
            except Exception as e:  # RayActorError past the retry budget, or the shard's error
                out.append(e)
        return out

    def refresh(self) -> list[int]:
        return [int(v) for v in self._ray.get([a.refresh.remote() for a in self.actors])]

    def close(self) -> None:
        """Ends the actors (their restarts too)."""
        for a in self.actors:
            self._ray.kill(a, no_restart=True)
        self.actors = []


# ---- The driver: fan out, merge ----------------------------------------------------------------


class ShardedSearcher:
    """Queries over every shard of a backend, merged exactly: ``search`` and ``classify`` give
    what one index holding every row gives. With ``allow_partial=True`` a failed shard is left
    out and named in the result (:class:`Partial`) instead of raising :class:`ShardError`."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @property
    def paths(self) -> list[str]:
        return list(self.backend.paths)

    def _gather(
        self, op: str, args: tuple[Any, ...], allow_partial: bool
    ) -> tuple[list[tuple[int, Any]], list[Missing]]:
        n = len(self.backend.paths)
        results = self.backend.run(op, args, range(n))
        ok: list[tuple[int, Any]] = []
        missing: list[Missing] = []
        for s, r in enumerate(results):
            if isinstance(r, BaseException):
                if not allow_partial or isinstance(r, InvalidArgument):
                    raise ShardError(s, self.backend.paths[s], r) from r
                missing.append(Missing(s, self.backend.paths[s], _describe(r)))
            else:
                ok.append((s, r))
        if not ok:
            first = missing[0]
            raise ShardError(first.shard, first.path, f"no shard answered; {first.error}")
        return ok, missing

    def search(
        self,
        q: npt.ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Sequence[str | int] | None = None,
        threads: int = 1,
        allow_partial: bool = False,
    ) -> Any:
        """k-NN over every shard: ``(D, I)`` as :meth:`Index.search` returns them (a
        :class:`Partial` with ``allow_partial=True``). ``threads`` is per shard. ``nprobe`` is
        refused: each shard would probe its own lists by its own centroids, which is not the
        probe of one index (docs/SCALING.md)."""
        if nprobe is not None:
            raise InvalidArgument(
                "nprobe: a sharded index cannot probe exactly (each shard ranks its own lists); "
                "use classes=[...] or a full scan"
            )
        if k < 1:
            raise InvalidArgument(f"k: {k}, must be at least 1")
        if rerank is not None and rerank < k:
            raise InvalidArgument(f"rerank: {rerank} candidates cannot give k = {k} (use R ≥ k)")
        qa = np.ascontiguousarray(q, dtype=np.float32)
        cls = list(classes) if classes is not None else None
        ok, missing = self._gather(
            "search", (qa, k, mode, rerank, cls, threads), allow_partial
        )
        larger = mode in _merge.LARGER_IS_BETTER
        if rerank is None:
            d, i = _merge.merge_topk([r[0] for _, r in ok], k, larger)
        else:
            d, i = _merge.merge_reranked(
                [r[0] for _, r in ok], [r[1] for _, r in ok], k, rerank, larger
            )
        return Partial(d, i, missing) if allow_partial else (d, i)

    def class_sums(self, allow_partial: bool = False) -> tuple[int, list[dict[str, Any]]]:
        """The sharded class table: every shard's counts and sums added up."""
        ok, _ = self._gather("class_sums", (), allow_partial)
        return _merge.merge_class_sums(
            [r for _, r in ok], names=[f"shard {s} ({self.backend.paths[s]})" for s, _ in ok]
        )

    def classify(self, x: npt.ArrayLike, top: int = 5, allow_partial: bool = False) -> Any:
        """NCM classification against the class means of the whole sharded index (merged from
        per-shard counts and sums): ``(scores, class ids)`` as :meth:`Index.classify` (a
        :class:`Partial` with ``allow_partial=True``)."""
        ok, missing = self._gather("class_sums", (), allow_partial)
        names = [f"shard {s} ({self.backend.paths[s]})" for s, _ in ok]
        dim, table = _merge.merge_class_sums([r for _, r in ok], names=names)
        xa = np.ascontiguousarray(x, dtype=np.float32)
        # The merged table is classified by one shard that answered (it holds the model).
        last: BaseException | None = None
        for s, _ in ok:
            r = self.backend.run("classify_sums", (dim, table, xa, top), [s])[0]
            if not isinstance(r, BaseException):
                return Partial(r[0], r[1], missing) if allow_partial else r
            if isinstance(r, CodedbError) and not isinstance(r, ShardError):
                raise r  # the query's own error (shape, NaN, no classes): no other shard helps
            last = r
        assert last is not None
        raise ShardError(ok[-1][0], self.backend.paths[ok[-1][0]], last) from last

    def refresh(self) -> list[int]:
        """Every shard pins its newest committed version; returns the versions."""
        return self.backend.refresh()

    def close(self) -> None:
        self.backend.close()


# ---- The writer ---------------------------------------------------------------------------------


class ShardedIndex:
    """The writer of a sharded index: one :class:`Index` per path (each holding its shard's
    lock), rows routed by id. Queries run over the shards' newest committed versions on a
    thread pool (:class:`ThreadShards`); serve from Ray with :class:`RayShards` instead."""

    def __init__(self, indexes: Sequence[Index], threads: int = 2) -> None:
        self.indexes = list(indexes)
        self.paths = [str(ix.path) for ix in self.indexes]
        self._searcher = ShardedSearcher(ThreadShards(self.indexes, self.paths, threads))

    @staticmethod
    def create(
        paths: Sequence[_Path], model: Model, store_vectors: str | None = None, threads: int = 2
    ) -> ShardedIndex:
        """Creates an empty index with ``model`` at every path (shard s = ``paths[s]``)."""
        _check_paths(paths)
        made: list[Index] = []
        for s, p in enumerate(paths):
            try:
                made.append(Index.create(p, model, store_vectors=store_vectors))
            except CodedbError as e:
                for ix in made:
                    ix.close()
                raise ShardError(s, os.fspath(p), e) from e
        return ShardedIndex(made, threads)

    @staticmethod
    def build(
        paths: Sequence[_Path],
        model: Model,
        x: npt.ArrayLike,
        ids: npt.ArrayLike,
        labels: npt.ArrayLike | None = None,
        store_vectors: str | None = None,
        threads: int = 2,
    ) -> ShardedIndex:
        """Builds every shard from its rows of ``x`` in one commit each (:meth:`Index.build`):
        with ``labels``, each shard's class table holds the counts and sums of its rows, and
        the sharded table is their sum. Every shard must receive at least one row."""
        _check_paths(paths)
        xa, ia, la = _rows(x, ids, labels)
        where = shard_of(ia, len(paths))
        made: list[Index] = []
        for s, p in enumerate(paths):
            rows = np.flatnonzero(where == s)
            try:
                made.append(
                    Index.build(
                        p, model, xa[rows], ids=ia[rows],
                        labels=None if la is None else la[rows], store_vectors=store_vectors,
                    )
                )
            except CodedbError as e:
                for ix in made:
                    ix.close()
                raise ShardError(s, os.fspath(p), e) from e
        return ShardedIndex(made, threads)

    @staticmethod
    def open(paths: Sequence[_Path], threads: int = 2) -> ShardedIndex:
        """Opens every shard as its writer; refuses a shard whose model differs from shard 0's.
        ``paths`` must be in the order the index was created with (the routing depends on it)."""
        _check_paths(paths)
        opened: list[Index] = []
        try:
            for s, p in enumerate(paths):
                try:
                    ix = Index.open(p)
                except CodedbError as e:
                    raise ShardError(s, os.fspath(p), e) from e
                opened.append(ix)
                if ix.model.id != opened[0].model.id:
                    raise ShardError(
                        s,
                        os.fspath(p),
                        f"model {ix.model.id} differs from shard 0's {opened[0].model.id} "
                        f"({paths[0]}); every shard must be made with the same model",
                    )
        except ShardError:
            for ix in opened:
                ix.close()
            raise
        return ShardedIndex(opened, threads)

    @property
    def n_shards(self) -> int:
        return len(self.indexes)

    @property
    def model(self) -> Model:
        return self.indexes[0].model

    def _each(self, fn: Callable[[int, Index], Any], shards: Sequence[int] | None = None) -> list[Any]:
        out = []
        for s in range(self.n_shards) if shards is None else shards:
            try:
                out.append(fn(s, self.indexes[s]))
            except CodedbError as e:
                raise ShardError(s, self.paths[s], e) from e
        return out

    def add(
        self, x: npt.ArrayLike, ids: npt.ArrayLike, labels: npt.ArrayLike | None = None
    ) -> npt.NDArray[np.int64]:
        """Stages the rows of ``x`` with ``ids`` (required: the id is the routing key, and ids
        must be unique across shards), each in shard ``shard_of(id)``; visible at the next
        :meth:`commit`. Returns the shard of each row. Not atomic across shards: if shard s
        refuses its rows (say, an id it already has), shards before s have staged theirs."""
        xa, ia, la = _rows(x, ids, labels)
        where = shard_of(ia, self.n_shards)

        def add_one(s: int, ix: Index) -> None:
            rows = np.flatnonzero(where == s)
            if rows.size:
                ix.add(xa[rows], ids=ia[rows], labels=None if la is None else la[rows])

        self._each(add_one)
        return where

    def delete(self, ids: npt.ArrayLike) -> None:
        """Stages the deletion of these ids, each in its owning shard (an id no shard has is a
        ``ShardError`` wrapping ``NotFoundError`` from the shard it routes to). Not atomic
        across shards: shards before the refusing one have staged their deletes."""
        ia = np.asarray(ids)
        where = shard_of(ia, self.n_shards)
        self._each(lambda s, ix: ix.delete(ia[where == s]) if (where == s).any() else None)

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
        if id is None:
            ids = [int(c["id"]) for _, classes in self._each(lambda s, ix: ix.class_sums())
                   for c in classes]
            id = max(ids) + 1 if ids else 0
        taken = self._each(lambda s, ix: ix.classes)
        for s, table in enumerate(taken):
            if id in table or name in table.values():
                raise ShardError(s, self.paths[s], f"class {name!r} or id {id} exists already")
        return int(self._each(lambda s, ix: ix.add_class(name, x=x, mean=mean, id=id), [0])[0])

    def commit(self) -> list[int]:
        """Commits every shard, in shard order; returns each shard's new version.

        Each shard's commit is atomic; the sharded commit is not. A reader that pins versions
        between two shard commits (a :class:`ThreadShards` or :class:`RayShards` refresh, or a
        new searcher) sees the new rows of the shards committed so far and the old rows of the
        others; a crash part-way leaves the later shards' staged writes uncommitted (lost, as
        any uncommitted write). Readers keep the versions they pinned until they refresh."""
        return [int(v) for v in self._each(lambda s, ix: ix.commit())]

    def compact(self) -> None:
        """Compacts every shard, in parallel on the thread pool (each shard on its own)."""
        pool = ThreadPoolExecutor(max_workers=max(1, min(self.n_shards, 2)))
        futures = [pool.submit(ix.compact) for ix in self.indexes]
        pool.shutdown(wait=True)
        for s, f in enumerate(futures):
            e = f.exception()
            if e is not None:
                raise ShardError(s, self.paths[s], e) from e

    def search(self, q: npt.ArrayLike, k: int = 10, **kw: Any) -> Any:
        """k-NN over the shards' newest committed versions (:meth:`ShardedSearcher.search`)."""
        return self._searcher.search(q, k, **kw)

    def classify(self, x: npt.ArrayLike, top: int = 5, allow_partial: bool = False) -> Any:
        """NCM classification over the merged class table (:meth:`ShardedSearcher.classify`)."""
        return self._searcher.classify(x, top, allow_partial)

    def class_sums(self) -> tuple[int, list[dict[str, Any]]]:
        return self._searcher.class_sums()

    def __len__(self) -> int:
        return sum(len(ix) for ix in self.indexes)

    def close(self) -> None:
        self._searcher.close()
        for ix in self.indexes:
            ix.close()

    def __enter__(self) -> ShardedIndex:
        return self

    def __exit__(self, *_args: object) -> None:
        self.close()


def _check_paths(paths: Sequence[_Path]) -> None:
    if not paths:
        raise InvalidArgument("paths: at least one shard directory")
    real = [pathlib.Path(p).resolve() for p in paths]
    if len(set(real)) != len(real):
        raise InvalidArgument("paths: a directory appears twice")


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
