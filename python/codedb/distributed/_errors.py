"""The errors and warnings of a sharded index: each names the shard (number and path)."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence
import warnings

import numpy as np
import numpy.typing as npt

from codedb._errors import CodedbError, FallbackWarning

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


class PartialColumns(NamedTuple):
    """An ``allow_partial=True`` result with ``columns=``: :class:`Partial`'s ``D`` and ``I``,
    the hits' attribute ``columns`` (``{name: array shaped like I}``, as
    :meth:`Index.search` returns them), and the ``missing`` shards."""

    D: npt.NDArray[Any]
    I: npt.NDArray[np.int64]  # noqa: E741 (FAISS's name)
    columns: dict[str, npt.NDArray[Any]]
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



def _no_answer(missing: Sequence[Missing]) -> ShardError:
    """The error of a query no shard answered: the first shard left out, and why."""
    first = missing[0]
    return ShardError(first.shard, first.path, f"no shard answered; {first.error}")


def _describe(cause: BaseException | str) -> str:
    if isinstance(cause, str):
        return cause
    inner = getattr(cause, "cause", None)  # Ray wraps a task's exception; show the original
    if isinstance(inner, BaseException):
        cause = inner
    text = str(cause).strip() or type(cause).__name__
    return f"{type(cause).__name__}: {text}"


