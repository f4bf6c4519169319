"""Backends: how the driver reaches its shards (a thread pool here, or one Ray actor each)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, Sequence

from codedb._codedb import Index, Snapshot
from codedb._errors import CodedbError, InvalidArgument
from codedb.distributed._calls import kill, pooled, ray_answers
from codedb.distributed._errors import (
    Missing,
    ShardError,
    _describe,
    _no_answer,
    _skipped,
    _warn_fallback,
)
from codedb.distributed._layout import ShardLayout, _check_paths, _check_shards
from codedb.distributed._cut import CUT_FILE, Cut
from codedb.distributed._ops import _OPS, Args, _args
from codedb.distributed._placement import ActorOptions, describe, options_for
from codedb.distributed._shard_writer import _ShardReader, open_pinned

_Path = str | os.PathLike[str]

class Backend(Protocol):
    """Runs one operation on some shards and returns, per shard, its result or its exception."""

    paths: list[str]

    def run(self, op: str, args: Args, shards: Sequence[int]) -> list[Any]:
        """``op`` on each of ``shards``: with ``args``, or ``args(s)`` when it is a function of
        the shard; per shard its result or its exception."""
        ...

    def refresh(self) -> list[int]: ...

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]: ...

    def close(self) -> None: ...


def gather(
    backend: Backend,
    op: str,
    args: Args,
    allow_partial: bool,
    shards: Sequence[int] | None = None,
) -> tuple[list[tuple[int, Any]], list[Missing]]:
    """``op`` on ``shards`` (default: every shard): the ``(shard, result)`` of those that
    answered and the shards left out. A failed shard raises :class:`ShardError` naming it,
    unless ``allow_partial`` (then it is left out, unless its error is the query's own
    ``InvalidArgument``, which every shard would raise); no shard answering raises too. Shards
    that answered from an older version warn (:class:`ShardFallbackWarning`)."""
    shards = range(len(backend.paths)) if shards is None else shards
    results = backend.run(op, args, shards)
    ok: list[tuple[int, Any]] = []
    missing: list[Missing] = []
    for s, r in zip(shards, results):
        if isinstance(r, BaseException):
            if not allow_partial or isinstance(r, InvalidArgument):
                raise ShardError(s, backend.paths[s], r) from r
            missing.append(Missing(s, backend.paths[s], _describe(r)))
        else:
            ok.append((s, r))
    if not ok and not missing:
        return ok, missing  # no shard was asked
    if not ok:
        raise _no_answer(missing)
    answered = {s for s, _ in ok}
    for s, version, skipped in backend.fallbacks():
        if s in answered:
            _warn_fallback(s, backend.paths[s], version, skipped, "answered from")
    return ok, missing


def ask(backend: Backend, op: str, args: Args, shard: int) -> Any:
    """``op`` on one shard: its result, or :class:`ShardError` naming it."""
    r = backend.run(op, args, [shard])[0]
    if isinstance(r, BaseException):
        raise ShardError(shard, backend.paths[shard], r) from r
    return r


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
        #: The cut the shards are pinned at (:meth:`open` of a sharded index with cut records).
        self.cut: Cut | None = None

    @staticmethod
    def open(paths: Sequence[_Path], threads: int = 2) -> ThreadShards:
        """Read-only, at the published cut: every shard at the version the cut record names
        (``CUT.json`` in shard 0's directory, written after every shard of a sharded commit
        committed), so the shards show one sharded commit, whole; without a cut record (an
        index made before them) the newest committed version of every shard. Checks the
        shards' layout records (:func:`check_layout`; shards without records, made before
        codedb wrote them, open with a :class:`ShardLayoutWarning`). A shard that fell back to
        an older version opens with a :class:`ShardFallbackWarning` naming it."""
        _check_paths(paths)
        names = [os.fspath(p) for p in paths]
        try:
            cut = Cut.read(names[0])
        except (CodedbError, OSError) as e:
            raise ShardError(0, names[0], e) from e
        snaps: list[Index | Snapshot] = []
        try:
            for s, p in enumerate(names):
                try:
                    snaps.append(open_pinned(p, None if cut is None or s >= len(cut.versions)
                                             else cut.versions[s]))
                except CodedbError as e:
                    raise ShardError(s, p, e) from e
            _check_shards(names, [t.model.id for t in snaps], writer=False)
            if cut is not None:
                _check_cut(cut, names)
        except (ShardError, CodedbError):
            for t in snaps:
                t.close()
            raise
        shards = ThreadShards(snaps, paths, threads)
        shards.cut = cut
        for s, version, skipped in shards.fallbacks():
            _warn_fallback(s, shards.paths[s], version, skipped, "opened at")
        return shards

    def run(self, op: str, args: Args, shards: Sequence[int]) -> list[Any]:
        fn = _OPS[op]
        return pooled([self._pool.submit(fn, self.targets[s], *_args(args, s)) for s in shards])

    def refresh(self) -> list[int]:
        """Moves to the newest published cut (every shard at the version it names; shards
        opened without cut records: to their newest committed versions); open :class:`Index`
        targets already read their newest. Returns the versions."""
        cut: Cut | None = None
        if self.cut is not None:
            try:
                cut = Cut.read(self.paths[0])
            except (CodedbError, OSError) as e:
                raise ShardError(0, self.paths[0], e) from e
            if cut is None:
                raise ShardError(0, self.paths[0], f"its cut record ({CUT_FILE}) is gone")
            _check_cut(cut, self.paths, self.cut.layout)
        versions = []
        for s, t in enumerate(self.targets):
            if isinstance(t, Snapshot):
                want = None if cut is None else cut.versions[s]
                if want is None or want != t.version:
                    try:
                        fresh = open_pinned(self.paths[s], want)
                    except CodedbError as e:
                        raise ShardError(s, self.paths[s], e) from e
                    t.close()
                    self.targets[s] = t = fresh
            versions.append(int(t.version))
        if cut is not None:
            self.cut = cut
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
    """One Ray actor per shard (``pip install ./python[ray]``; call ``ray.init`` first), placed
    by ``actor_options``: one dict for every shard, a list of one dict per shard, or a function
    of the shard number (``num_cpus`` defaults to 1: one core scans one shard; see
    :func:`on_shard_nodes` for shards on their nodes' local disks). Each actor opens its shard
    once (mmap) and answers whole query batches, at the version the published cut names
    (``CUT.json``, read through shard 0's actor; without one, the newest committed version):
    every call names that version, so an actor that Ray restarted answers from the same one.
    An actor that dies is restarted up to ``max_restarts`` times and the task it was running
    retried up to ``max_task_retries`` times (Ray's actor fault tolerance); past that, or when
    a batch has no answer ``timeout`` seconds after it was sent, the shard's result is an
    error naming it (:meth:`restart` starts a new actor); an actor not started within
    ``start_timeout`` seconds (the cluster lacks what it asks for) is one too.
    ``model_id``: the model every shard must have (default: shard 0's)."""

    def __init__(
        self,
        paths: Sequence[_Path],
        *,
        max_restarts: int = 3,
        max_task_retries: int = 3,
        timeout: float | None = None,
        start_timeout: float = 120.0,
        model_id: str | None = None,
        actor_options: ActorOptions = None,
    ) -> None:
        import ray  # type: ignore[import-not-found, unused-ignore]

        if not paths:
            raise InvalidArgument("paths: at least one shard")
        self._ray = ray
        self.paths = [os.fspath(p) for p in paths]
        self.timeout = timeout
        n = len(self.paths)
        self.options = [
            {"num_cpus": 1, **options_for(actor_options, s, n),
             "max_restarts": max_restarts, "max_task_retries": max_task_retries}
            for s in range(n)
        ]
        self._cls = ray.remote(_ShardReader)
        self.pins: list[int | None] = [None] * n
        self.cut: Cut | None = None
        self.actors: list[Any] = []
        for s in range(n):
            try:
                self.actors.append(self._start(s))
            except Exception as e:
                self.close()
                raise ShardError(s, self.paths[s], e) from e
        # Every actor opens its shard now: a missing, corrupt or foreign shard fails here, and
        # an actor the cluster cannot place fails after `start_timeout`.
        self.timeout, wait = start_timeout, self.timeout
        try:
            infos = self.run("info", (), range(n))
        finally:
            self.timeout = wait
        for s, info in enumerate(infos):
            if isinstance(info, TimeoutError):
                self.close()
                raise ShardError(
                    s,
                    self.paths[s],
                    f"its actor did not start within {start_timeout} s (does the cluster have "
                    f"what it asks for: {describe(self.options[s])}?)",
                )
            if isinstance(info, BaseException):
                self.close()
                raise ShardError(s, self.paths[s], info) from info
        want = model_id or infos[0]["model_id"]
        records = [None if i["layout"] is None else ShardLayout(*i["layout"]) for i in infos]
        try:
            _check_shards(self.paths, [i["model_id"] for i in infos], writer=False,
                          records=records, want=want)
            self._layout = None if records[0] is None else records[0].layout
            self._pin_cut(required=False)
        except (ShardError, CodedbError):
            self.close()
            raise
        self.model_id: str = want
        self._infos = self.run("info", (), range(n)) if self.cut is not None else infos
        for s, version, skipped in self.fallbacks():
            _warn_fallback(s, self.paths[s], version, skipped, "opened at")

    def _start(self, shard: int) -> Any:
        return self._cls.options(**self.options[shard]).remote(self.paths[shard])

    def _pin_cut(self, required: bool) -> None:
        """Reads the published cut through shard 0's actor and pins every shard at it."""
        raw = self.run("read_cut", (), [0])[0]
        if isinstance(raw, BaseException):
            raise ShardError(0, self.paths[0], raw) from raw
        if raw is None:
            if required:
                raise ShardError(0, self.paths[0], f"its cut record ({CUT_FILE}) is gone")
            return
        cut = Cut.from_bytes(raw, os.path.join(self.paths[0], CUT_FILE))
        _check_cut(cut, self.paths, self._layout or cut.layout)
        self.cut = cut
        self.pins = list(cut.versions)

    def run(self, op: str, args: Args, shards: Sequence[int]) -> list[Any]:
        ray = self._ray
        refs: list[Any] = []
        for s in shards:
            try:
                refs.append(self.actors[s].run_at.remote(self.pins[s], op, *_args(args, s)))
            except Exception as e:  # a dead handle
                refs.append(e)
        return ray_answers(ray, refs, self.timeout, lambda n: f"no answer within {self.timeout} s")

    def refresh(self) -> list[int]:
        """Moves to the newest published cut (without cut records: every actor to its shard's
        newest committed version); returns the versions."""
        if self.cut is not None:
            self._pin_cut(required=True)
        else:
            got = self._ray.get([a.refresh.remote() for a in self.actors])
            self.pins = [None] * len(self.paths)
            del got
        infos = self.run("info", (), range(len(self.paths)))
        for s, i in enumerate(infos):
            if isinstance(i, BaseException):
                raise ShardError(s, self.paths[s], i) from i
        self._infos = infos
        return [int(i["version"]) for i in infos]

    def restart(self, shard: int) -> dict[str, Any]:
        """A new actor for ``shard`` (one killed without restart, or past its restarts); it
        answers at the pinned version. Returns its health."""
        if not 0 <= shard < len(self.paths):
            raise InvalidArgument(f"shard: {shard}, expected 0 ≤ shard < {len(self.paths)}")
        kill(self._ray, [self.actors[shard]])
        self.actors[shard] = self._start(shard)
        return self.health()[shard]

    def health(self) -> list[dict[str, Any]]:
        """Per shard: ``shard``, ``path``, ``alive``, and when alive the ``version`` it answers
        from, its live ``rows``, whether it ``fell_back`` (and the ``skipped`` manifests) and
        its ``pid``; a dead shard has ``error`` instead."""
        out = []
        for s, i in enumerate(self.run("info", (), range(len(self.paths)))):
            rec: dict[str, Any] = {"shard": s, "path": self.paths[s]}
            if isinstance(i, BaseException):
                rec.update(alive=False, error=f"{type(i).__name__}: {i}")
            else:
                rec.update(alive=True, version=i["version"], rows=i["rows"],
                           fell_back=bool(i["skipped"]), skipped=i["skipped"], pid=i["pid"],
                           node=i["node"])
            out.append(rec)
        return out

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]:
        """The shards that fell back when their actors last opened them (at start or
        :meth:`refresh`): (shard, version, skipped manifests)."""
        return [(s, i["version"], i["skipped"]) for s, i in enumerate(self._infos)
                if isinstance(i, dict) and i["skipped"]]

    def close(self) -> None:
        """Ends the actors (their restarts too)."""
        kill(self._ray, self.actors)
        self.actors = []


def _check_cut(cut: Cut, paths: Sequence[str], layout: str | None = None) -> None:
    """The cut must be of these shards' sharded index (the layout of shard 0's record)."""
    if layout is None:
        rec = ShardLayout.read(paths[0]) if os.path.isdir(paths[0]) else None
        layout = cut.layout if rec is None else rec.layout
    cut.check(layout, list(paths))
