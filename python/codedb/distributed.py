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

import hashlib
import json
import os
import pathlib
import time
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple, Protocol, Sequence

import numpy as np
import numpy.typing as npt

from codedb import _merge
from codedb._codedb import Index, Model, Snapshot, classify_sums
from codedb._errors import CodedbError, CorruptError, FallbackWarning, InvalidArgument

__all__ = [
    "LAYOUT_FILE",
    "Missing",
    "Partial",
    "RayShards",
    "ShardError",
    "ShardFallbackWarning",
    "ShardLayout",
    "ShardLayoutWarning",
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


class ShardFallbackWarning(FallbackWarning):
    """A shard opened at an older version because its newest manifests do not read (FORMAT.md
    §11.3): its rows committed by those versions are missing from sharded results. The message
    names the shard (number and path) and the skipped manifests."""


class ShardLayoutWarning(UserWarning):
    """A read-only sharded open of shards without layout records (made before codedb wrote
    them): their order cannot be checked, so results rely on the paths' order."""


def _skipped(target: Any) -> list[str]:
    """The manifests an open shard skipped (``skipped_manifests`` of a Snapshot or Index), as
    text."""
    out = []
    for m in getattr(target, "skipped_manifests", None) or []:
        if isinstance(m, dict):
            out.append(f"version {m.get('version')} ({m.get('file')}): {m.get('error')}")
        elif hasattr(m, "version"):
            out.append(f"version {m.version} ({getattr(m, 'file', '?')}): {getattr(m, 'error', '?')}")
        else:
            out.append(str(m))
    return out


def _warn_fallback(shard: int, path: str, version: Any, skipped: Sequence[str], doing: str) -> None:
    if skipped:
        warnings.warn(
            ShardFallbackWarning(
                f"shard {shard} ({path}): {doing} version {version}, an older version, because "
                f"newer manifests do not read: {'; '.join(skipped)} — rows they committed are "
                "missing (restore the files, or accept the loss with `codedb recover`)"
            ),
            stacklevel=3,
        )


# ---- The layout record (FORMAT.md §8.1) --------------------------------------------------------

#: The layout record's file name in a shard directory.
LAYOUT_FILE = "SHARD.json"
_LAYOUT_FORMAT = 1


class ShardLayout(NamedTuple):
    """A shard's layout record: it is shard ``shard`` of ``shards`` of the sharded index
    ``layout`` (32 hex digits, made at create), whose rows are encoded by model ``model``."""

    layout: str
    shard: int
    shards: int
    model: str

    def to_bytes(self) -> bytes:
        body = json.dumps(
            {
                "format": _LAYOUT_FORMAT,
                "layout": self.layout,
                "shard": self.shard,
                "shards": self.shards,
                "model": self.model,
            },
            separators=(",", ":"),
        ).encode()
        return body + b"\n" + f"crc32 {zlib.crc32(body):08x}\n".encode()

    @staticmethod
    def from_bytes(data: bytes, path: str) -> ShardLayout:
        """Parses a record; a damaged one is a :class:`CorruptError` naming ``path``."""

        def bad(why: str) -> CorruptError:
            return CorruptError(f"{path}: shard layout record does not read: {why}")

        lines = data.split(b"\n")
        if len(lines) != 3 or lines[2] != b"" or not lines[1].startswith(b"crc32 "):
            raise bad("expected a JSON line and a crc32 line")
        try:
            want = int(lines[1][6:], 16)
        except ValueError:
            raise bad("the crc32 line is not hexadecimal") from None
        if len(lines[1]) != 14 or zlib.crc32(lines[0]) != want:
            raise bad("checksum mismatch: the file is damaged")
        try:
            rec = json.loads(lines[0])
        except ValueError as e:
            raise bad(f"not JSON ({e})") from None
        if not isinstance(rec, dict) or rec.get("format") != _LAYOUT_FORMAT:
            raise bad(f"format {rec.get('format') if isinstance(rec, dict) else rec!r}, "
                      f"this codedb reads {_LAYOUT_FORMAT}")
        layout, shard, shards, model = (rec.get(k) for k in ("layout", "shard", "shards", "model"))
        if not (type(shards) is int and type(shard) is int and 0 <= shard < shards):
            raise bad(f"shard {shard!r} of {shards!r}")
        for name, v in (("layout", layout), ("model", model)):
            if not (isinstance(v, str) and len(v) == 32 and all(c in "0123456789abcdef" for c in v)):
                raise bad(f"{name} {v!r} is not 32 hex digits")
        return ShardLayout(str(layout), shard, shards, str(model))

    @staticmethod
    def read(path: _Path) -> ShardLayout | None:
        """The record of the shard directory ``path``; ``None`` when it has none."""
        f = pathlib.Path(path) / LAYOUT_FILE
        try:
            data = f.read_bytes()
        except FileNotFoundError:
            return None
        return ShardLayout.from_bytes(data, str(f))

    def write(self, path: _Path) -> None:
        """Publishes the record in ``path`` as codedb publishes a file (FORMAT.md §11.1): a
        temporary name, fsync, read-only, rename, directory fsync — so a crash leaves the old
        record or the new one, whole."""
        d = pathlib.Path(path)
        tmp = d / (LAYOUT_FILE + ".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            os.write(fd, self.to_bytes())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, d / LAYOUT_FILE)
        _fsync_dir(d)


def _fsync_dir(d: pathlib.Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _new_layout_id(paths: Sequence[_Path], model_id: str) -> str:
    """A new layout's identity: unique (clock, process, paths, model), not random."""
    seed = f"{time.time_ns()}:{os.getpid()}:{model_id}:" + "|".join(
        str(pathlib.Path(p).resolve()) for p in paths
    )
    return hashlib.blake2b(seed.encode(), digest_size=16).hexdigest()


def check_layout(
    paths: Sequence[str], records: Sequence[ShardLayout | None], models: Sequence[str]
) -> list[int]:
    """Checks the shards at ``paths`` (their layout records and model ids) form one sharded
    index in this order; raises :class:`ShardError` naming the first shard that does not.
    Returns the shards without a record, which is allowed only when no shard has one (an index
    made before layout records)."""
    unmarked = [s for s, r in enumerate(records) if r is None]
    marked = [s for s, r in enumerate(records) if r is not None]
    if unmarked and marked:
        s, m = unmarked[0], marked[0]
        raise ShardError(
            s, paths[s],
            f"has no layout record ({LAYOUT_FILE}) but shard {m} ({paths[m]}) has one: it is "
            "not a shard of that sharded index",
        )
    if not marked:
        return unmarked
    ref = records[marked[0]]
    assert ref is not None
    for s, r in enumerate(records):
        assert r is not None
        if r.layout != ref.layout:
            raise ShardError(
                s, paths[s],
                f"belongs to sharded index {r.layout} (shard {r.shard} of {r.shards}), not to "
                f"{ref.layout} of shard 0 ({paths[0]})",
            )
    for s, r in enumerate(records):
        assert r is not None
        if r.shards != len(paths):
            raise ShardError(
                s, paths[s],
                f"its sharded index has {r.shards} shards but {len(paths)} paths were given "
                f"(a shard is {'missing' if len(paths) < r.shards else 'extra'})",
            )
        if r.shard != s:
            raise ShardError(
                s, paths[s],
                f"is shard {r.shard} of {r.shards} but was given as shard {s}: pass the paths in "
                "the order the sharded index was created with (ids route by position)",
            )
        if r.model != models[s]:
            raise ShardError(
                s, paths[s],
                f"its layout record names model {r.model}, but the shard holds model {models[s]}",
            )
    return []


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
    mih: str = "auto",
) -> tuple[_Result, _Result | None]:
    """A shard's part of a k-NN query: its k best; with ``rerank=R`` its R best by code score
    and the same R re-scored exactly (what `_merge.merge_reranked` needs). ``mih`` as
    :meth:`Index.search` (the tables change the time, never the results)."""
    kw: dict[str, Any] = {"mode": mode, "classes": classes, "threads": threads}
    if mih != "auto":
        kw["mih"] = mih
    if rerank is None:
        return target.search(q, k=k, **kw), None
    codes = target.search(q, k=rerank, **kw)
    exact = target.search(q, k=rerank, rerank=rerank, **kw)
    return codes, exact


def _op_class_sums(target: Any) -> tuple[int, list[dict[str, Any]]]:
    dim, classes = target.class_sums()
    return int(dim), list(classes)


def _op_classify_sums(
    target: Any, dim: int, classes: list[dict[str, Any]], x: npt.NDArray[np.float32], top: int
) -> _Result:
    return classify_sums(target.model, dim, classes, x, top)


def _op_info(target: Any, path: str = "") -> dict[str, Any]:
    """What the driver checks of a shard: its model, layout record (read where the shard
    lives, which for a Ray actor may be another machine) and the manifests it skipped."""
    layout = ShardLayout.read(path) if path else None
    return {
        "pid": os.getpid(),
        "model_id": target.model.id,
        "rows": len(target),
        "version": target.version,
        "layout": None if layout is None else tuple(layout),
        "skipped": _skipped(target),
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
        if op == "info":
            return _op_info(self.snap, self.path)
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

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]: ...

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
        """Read-only: the newest committed version of every shard, after checking the shards'
        layout records (:func:`check_layout`; shards without records, made before codedb wrote
        them, open with a :class:`ShardLayoutWarning`). A shard that fell back to an older
        version opens with a :class:`ShardFallbackWarning` naming it."""
        _check_paths(paths)
        snaps: list[Index | Snapshot] = []
        try:
            for s, p in enumerate(paths):
                try:
                    snaps.append(Snapshot.open(p))
                except CodedbError as e:
                    raise ShardError(s, os.fspath(p), e) from e
            names = [os.fspath(p) for p in paths]
            _check_shards(names, [t.model.id for t in snaps], writer=False)
        except ShardError:
            for t in snaps:
                t.close()
            raise
        shards = ThreadShards(snaps, paths, threads)
        for s, version, skipped in shards.fallbacks():
            _warn_fallback(s, shards.paths[s], version, skipped, "opened at")
        return shards

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

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]:
        """The shards that fell back: (shard, version, skipped manifests)."""
        out = []
        for s, t in enumerate(self.targets):
            try:
                skipped = _skipped(t)
            except Exception:  # a shard that cannot answer is reported by the operation
                continue
            if skipped:
                out.append((s, t.version, skipped))
        return out

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
        records = [None if i["layout"] is None else ShardLayout(*i["layout"]) for i in infos]
        try:
            _check_shards(self.paths, [i["model_id"] for i in infos], writer=False,
                          records=records, want=want)
        except ShardError:
            self.close()
            raise
        self.model_id: str = want
        self._infos = infos
        for s, version, skipped in self.fallbacks():
            _warn_fallback(s, self.paths[s], version, skipped, "opened at")

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
        versions = [int(v) for v in self._ray.get([a.refresh.remote() for a in self.actors])]
        self._infos = self._ray.get([a.run.remote("info") for a in self.actors])
        return versions

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]:
        """The shards that fell back when their actors last opened them (at start or
        :meth:`refresh`): (shard, version, skipped manifests)."""
        return [(s, i["version"], i["skipped"]) for s, i in enumerate(self._infos) if i["skipped"]]

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
        answered = {s for s, _ in ok}
        for s, version, skipped in self.backend.fallbacks():
            if s in answered:
                _warn_fallback(s, self.backend.paths[s], version, skipped, "answered from")
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
        mih: str = "auto",
    ) -> Any:
        """k-NN over every shard: ``(D, I)`` as :meth:`Index.search` returns them (a
        :class:`Partial` with ``allow_partial=True``). ``threads`` is per shard; ``mih``
        ("auto", "on", "off") as :meth:`Index.search`, in every shard. ``nprobe`` is
        refused: each shard would probe its own lists by its own centroids, which is not the
        probe of one index (docs/SCALING.md). A shard that fell back to an older version
        answers from it, with a :class:`ShardFallbackWarning` naming it."""
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
        if mih not in ("auto", "on", "off"):
            raise InvalidArgument(f"mih: {mih!r}, expected 'auto', 'on' or 'off'")
        ok, missing = self._gather(
            "search", (qa, k, mode, rerank, cls, threads, mih), allow_partial
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
        """Creates an empty index with ``model`` at every path (shard s = ``paths[s]``), each
        with its layout record (shard s of N, a new layout id, the model id) written before the
        shard's first manifest."""
        _check_paths(paths)
        layout = _new_layout_id(paths, model.id)
        made: list[Index] = []
        for s, p in enumerate(paths):
            try:
                made.append(
                    _with_record(p, ShardLayout(layout, s, len(paths), model.id),
                                 lambda: Index.create(p, model, store_vectors=store_vectors))
                )
            except (CodedbError, OSError) as e:
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
        layout = _new_layout_id(paths, model.id)
        made: list[Index] = []
        for s, p in enumerate(paths):
            rows = np.flatnonzero(where == s)
            try:
                made.append(
                    _with_record(
                        p, ShardLayout(layout, s, len(paths), model.id),
                        lambda: Index.build(
                            p, model, xa[rows], ids=ia[rows],
                            labels=None if la is None else la[rows], store_vectors=store_vectors,
                        ),
                    )
                )
            except (CodedbError, OSError) as e:
                for ix in made:
                    ix.close()
                raise ShardError(s, os.fspath(p), e) from e
        return ShardedIndex(made, threads)

    @staticmethod
    def open(paths: Sequence[_Path], threads: int = 2, adopt_layout: bool = False) -> ShardedIndex:
        """Opens every shard as its writer, in the order the index was created with (the
        routing depends on it). Refuses, naming the path (:class:`ShardError`): a shard whose
        model differs from shard 0's, and paths that do not match the shards' layout records —
        another order, a shard missing or extra, a shard of another sharded index.

        Shards without layout records (made before codedb wrote them) are refused too, since
        their order cannot be checked; ``adopt_layout=True`` states that ``paths`` are in the
        creation order and records that layout in every shard (under the shards' writer
        locks)."""
        _check_paths(paths)
        opened: list[Index] = []
        names = [os.fspath(p) for p in paths]
        try:
            for s, p in enumerate(paths):
                try:
                    opened.append(Index.open(p))
                except CodedbError as e:
                    raise ShardError(s, names[s], e) from e
            models = [ix.model.id for ix in opened]
            unmarked = _check_shards(names, models, writer=True, adopt=adopt_layout)
            if unmarked and adopt_layout:
                layout = _new_layout_id(paths, models[0])
                for s, p in enumerate(names):
                    try:
                        ShardLayout(layout, s, len(names), models[s]).write(p)
                    except OSError as e:
                        raise ShardError(s, p, e) from e
        except ShardError:
            for ix in opened:
                ix.close()
            raise
        sharded = ShardedIndex(opened, threads)
        for s, version, skipped in sharded._searcher.backend.fallbacks():
            _warn_fallback(s, names[s], version, skipped, "opened at")
        return sharded

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


def _check_shards(
    names: Sequence[str],
    models: Sequence[str],
    writer: bool,
    records: Sequence[ShardLayout | None] | None = None,
    want: str | None = None,
    adopt: bool = False,
) -> list[int]:
    """One sharded index's checks at open: every shard has the same model (``want``, default
    shard 0's), and the layout records match the paths (:func:`check_layout`). Shards without
    records are refused for a ``writer`` (unless it will ``adopt`` the order) and warned about
    for a reader; returns them."""
    want = want or models[0]
    for s, m in enumerate(models):
        if m != want:
            raise ShardError(
                s, names[s],
                f"model {m} differs from the sharded index's {want} (shard 0: {names[0]}); "
                "every shard must be made with the same model",
            )
    if records is None:
        read: list[ShardLayout | None] = []
        for s, p in enumerate(names):
            try:
                read.append(ShardLayout.read(p))
            except (CodedbError, OSError) as e:
                raise ShardError(s, p, e) from e
        records = read
    unmarked = check_layout(names, records, models)
    if unmarked and writer and adopt:
        return unmarked
    if unmarked and writer:
        raise ShardError(
            0, names[0],
            f"no shard has a layout record ({LAYOUT_FILE}; made before codedb wrote them), so "
            "the order of the paths cannot be checked; if they are in the order the index was "
            "created with, open it once with adopt_layout=True to record it",
        )
    if unmarked:
        warnings.warn(
            ShardLayoutWarning(
                f"no shard has a layout record ({LAYOUT_FILE}; made before codedb wrote them): "
                f"the order of the {len(names)} paths is trusted, not checked"
            ),
            stacklevel=3,
        )
    return unmarked


def _with_record(path: _Path, record: ShardLayout, make: Callable[[], Index]) -> Index:
    """Writes the layout record into ``path`` (made if missing), then ``make()``s the shard's
    index there: the record exists before any manifest, so no crash leaves a shard without
    it. A directory already holding an index is left alone (``make`` refuses it); a failed
    ``make`` takes the record (and the directory, if this made it) away again."""
    d = pathlib.Path(path)
    if d.is_dir() and any(d.glob("v*.manifest")):
        return make()  # refused by the engine (it already holds an index), record untouched
    made_dir = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    record.write(d)
    try:
        return make()
    except BaseException:
        if not any(d.glob("v*.manifest")):
            (d / LAYOUT_FILE).unlink(missing_ok=True)
            if made_dir:
                try:
                    d.rmdir()
                except OSError:
                    pass  # the failed make left files; its error names them
        raise


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
