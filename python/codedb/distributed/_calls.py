"""The driver's calls to its shards' workers (a thread pool, or one Ray actor each): every
call's answer per shard, its result or its exception, so the caller reports each failure by
shard; and the end of Ray actors."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any, Callable, Sequence


def pooled(futures: Sequence[Future[Any]]) -> list[Any]:
    """Each future's result, or the exception it raised."""
    out: list[Any] = []
    for f in futures:
        try:
            out.append(f.result())
        except Exception as e:  # reported per shard by the caller
            out.append(e)
    return out


def ray_answers(
    ray: Any, refs: Sequence[Any], wait: float | None, late: Callable[[int], str]
) -> list[Any]:
    """Each reference's value within ``wait`` seconds of now for all of them (``None``: no
    limit); a reference that is an exception already (a dead actor handle) stays one, a task
    that raised gives its exception, and one without an answer in time is cancelled and gives
    a ``TimeoutError`` saying ``late(position)``."""
    deadline = None if wait is None else time.monotonic() + wait
    out: list[Any] = []
    for n, ref in enumerate(refs):
        if isinstance(ref, BaseException):
            out.append(ref)
            continue
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            out.append(ray.get(ref, timeout=left))
        except ray.exceptions.GetTimeoutError:
            ray.cancel(ref)
            out.append(TimeoutError(late(n)))
        except Exception as e:  # the actor died past its retries, or the shard's own error
            out.append(e)
    return out


def kill(ray: Any, actors: Sequence[Any]) -> None:
    """Ends ``actors`` and their restarts; one already gone is passed over."""
    for a in actors:
        try:
            ray.kill(a, no_restart=True)
        except Exception:
            pass  # already gone
