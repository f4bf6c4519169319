"""Where the shards' writers run: threads of the driver's process (:class:`ThreadWriters`) or
one Ray actor per shard (:class:`RayWriters`). Both run :class:`_ShardWriter` and answer the
searcher's operations too (the :class:`Backend` protocol), reading each shard's newest
committed version through its writer."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from codedb._errors import CodedbError
from codedb.distributed._calls import kill, pooled, ray_answers
from codedb.distributed._errors import ShardError
from codedb.distributed._ops import Args, _args
from codedb.distributed._placement import ActorOptions, describe, options_for
from codedb.distributed._shard_writer import StaleWriter, _ShardWriter

_Path = str | os.PathLike[str]
ArgsOf = Callable[[int], tuple[Any, ...]]


class ThreadWriters:
    """Every shard's writer in this process; calls on a pool of ``threads`` workers (the
    engine releases the GIL, so shards encode, commit and compact in parallel)."""

    def __init__(self, paths: Sequence[_Path], threads: int = 2) -> None:
        self.paths = [os.fspath(p) for p in paths]
        self.writers = [_ShardWriter(p, s, len(self.paths)) for s, p in enumerate(self.paths)]
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads))

    def call(self, shards: Sequence[int], method: str, args_of: ArgsOf) -> list[Any]:
        """``method(*args_of(s))`` on every shard's writer at once; per shard its result or
        its exception."""
        return pooled(
            [self._pool.submit(getattr(self.writers[s], method), *args_of(s)) for s in shards]
        )

    def is_lost(self, e: BaseException) -> bool:
        """Whether ``e`` says the writer is gone (restarted), rather than refusing the call."""
        return isinstance(e, StaleWriter)

    def restart(self, shard: int) -> None:
        """A new writer for ``shard`` (the old one closed): it reopens the shard at its last
        committed version."""
        try:
            self.writers[shard].close()
        finally:
            self.writers[shard] = _ShardWriter(self.paths[shard], shard, len(self.paths))

    # The searcher's backend protocol.
    def run(self, op: str, args: Args, shards: Sequence[int]) -> list[Any]:
        return self.call(shards, "run", lambda s: (op, *_args(args, s)))

    def refresh(self) -> list[int]:
        return [int(h["version"]) for h in self.call(range(len(self.paths)), "hello", lambda s: ())]

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]:
        out = []
        for s, h in enumerate(self.call(range(len(self.paths)), "health", lambda s: ())):
            if isinstance(h, dict) and h["skipped"]:
                out.append((s, h["version"], h["skipped"]))
        return out

    def close(self) -> None:
        for w in self.writers:
            w.close()
        self._pool.shutdown(wait=True)


class RayWriters:
    """One Ray actor per shard running its writer (call ``ray.init`` first), placed by
    ``actor_options`` (:mod:`codedb.distributed._placement`). Ray restarts a dead actor up to
    ``max_restarts`` times (the new actor reopens the shard at its last committed version);
    writes are never retried by Ray (``max_task_retries=0``) but by the driver, after it
    replayed the writes staged since the last commit (:class:`StaleWriter`). An actor not
    started within ``start_timeout`` seconds (the cluster lacks what it asks for) is an error
    naming the shard and what it asked for."""

    def __init__(
        self,
        paths: Sequence[_Path],
        *,
        actor_options: ActorOptions = None,
        max_restarts: int = 3,
        start_timeout: float = 120.0,
        timeout: float | None = None,
    ) -> None:
        import ray  # type: ignore[import-not-found, unused-ignore]

        self._ray = ray
        self.paths = [os.fspath(p) for p in paths]
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.max_restarts = max_restarts
        self._cls = ray.remote(_ShardWriter)
        self.options = [
            {"num_cpus": 1, **options_for(actor_options, s, len(self.paths)),
             "max_restarts": max_restarts, "max_task_retries": 0}
            for s in range(len(self.paths))
        ]
        self.actors: list[Any] = [self._start(s) for s in range(len(self.paths))]
        # Every actor starts now; one the cluster cannot place fails after `start_timeout`.
        for s, h in enumerate(self.call(range(len(self.paths)), "hello", lambda s: (),
                                        timeout=start_timeout)):
            if isinstance(h, TimeoutError):
                self._kill_all()
                raise ShardError(
                    s, self.paths[s],
                    f"its writer's actor did not start within {start_timeout} s (does the "
                    f"cluster have what it asks for: {describe(self.options[s])}?)",
                )
            if isinstance(h, BaseException) and not isinstance(h, CodedbError):
                self._kill_all()
                raise ShardError(s, self.paths[s], h) from h

    def _start(self, shard: int) -> Any:
        return self._cls.options(**self.options[shard]).remote(
            self.paths[shard], shard, len(self.paths)
        )

    def call(
        self, shards: Sequence[int], method: str, args_of: ArgsOf, timeout: float | None = None
    ) -> list[Any]:
        refs: list[Any] = []
        for s in shards:
            try:
                refs.append(getattr(self.actors[s], method).remote(*args_of(s)))
            except Exception as e:  # the actor handle is dead for good
                refs.append(e)
        wait = self.timeout if timeout is None else timeout
        return ray_answers(
            self._ray, refs, wait,
            lambda n: f"no answer within {wait} s (does the cluster have what its actor asks "
                      f"for: {describe(self.options[shards[n]])}?)",
        )

    def is_lost(self, e: BaseException) -> bool:
        return isinstance(e, (StaleWriter, self._ray.exceptions.RayActorError))

    def restart(self, shard: int) -> None:
        """A new actor for ``shard`` (the old one killed, its restarts too), e.g. after
        ``ray.kill(actor)`` or past ``max_restarts``."""
        kill(self._ray, [self.actors[shard]])
        self.actors[shard] = self._start(shard)

    def run(self, op: str, args: Args, shards: Sequence[int]) -> list[Any]:
        return self.call(shards, "run", lambda s: (op, *_args(args, s)))

    def refresh(self) -> list[int]:
        self._fallbacks: list[tuple[int, Any, list[str]]] | None = None
        return [int(h["version"]) for h in self.call(range(len(self.paths)), "hello", lambda s: ())]

    def fallbacks(self) -> list[tuple[int, Any, list[str]]]:
        """The shards whose writers opened an older version (asked once, then at refresh: a
        writer that fell back refuses writes, so it stays fallen back until reopened)."""
        if getattr(self, "_fallbacks", None) is None:
            out = []
            for s, h in enumerate(self.call(range(len(self.paths)), "health", lambda s: ())):
                if isinstance(h, dict) and h["skipped"]:
                    out.append((s, h["version"], h["skipped"]))
            self._fallbacks = out
        assert self._fallbacks is not None
        return self._fallbacks

    def close(self) -> None:
        """Closes every shard's index (its lock released) and ends the actors."""
        if self.actors:
            self.call(range(len(self.actors)), "close", lambda s: (), timeout=30.0)
        self._kill_all()

    def _kill_all(self) -> None:
        kill(self._ray, self.actors)
        self.actors = []
