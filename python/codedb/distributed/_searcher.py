"""The driver's side of a query: fan out to every shard, merge exactly (codedb._merge)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from codedb import _merge
from codedb._errors import CodedbError, InvalidArgument
from codedb.distributed._backends import Backend
from codedb.distributed._errors import Missing, Partial, ShardError, _describe, _warn_fallback

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
        where: str | None = None,
        ids: Any = None,
    ) -> Any:
        """k-NN over every shard: ``(D, I)`` as :meth:`Index.search` returns them (a
        :class:`Partial` with ``allow_partial=True``). ``threads`` is per shard; ``mih``
        ("auto", "on", "off") as :meth:`Index.search`, in every shard. ``where`` and ``ids``
        (docs/filtering.md) go to every shard, so the merge is the k best passing rows of one
        index holding every row; not with ``nprobe``, whose one-index rule (a query whose
        probed lists hold fewer than k passing rows is searched again over every list) counts
        the passing rows of all shards together. A shard that fell back
        to an older version answers from it, with a :class:`ShardFallbackWarning` naming it.

        ``nprobe`` probes exactly as one index holding every row: an IVF model's coarse
        centroids are in the model, the same in every shard, so every shard probes the cells
        one index would; class lists are probed by the class means of the *merged* class table
        (per class, the shards' counts and sums added: FORMAT.md §5), chosen here on the driver
        and sent to every shard with the query."""
        if k < 1:
            raise InvalidArgument(f"k: {k}, must be at least 1")
        if rerank is not None and rerank < k:
            raise InvalidArgument(f"rerank: {rerank} candidates cannot give k = {k} (use R ≥ k)")
        if nprobe is not None and nprobe < 1:
            raise InvalidArgument(f"nprobe: {nprobe}, must be at least 1")
        if nprobe is not None and classes is not None:
            raise InvalidArgument("nprobe: not with classes=[...] (each picks the lists to scan)")
        if nprobe is not None and (where is not None or ids is not None):
            raise InvalidArgument(
                "nprobe: not with where=/ids= on a sharded index (a probed filtered search falls "
                "back to every list by the passing rows of all shards together)"
            )
        qa = np.ascontiguousarray(q, dtype=np.float32)
        cls = list(classes) if classes is not None else None
        if ids is not None and not isinstance(ids, np.ndarray):
            ids = list(ids)  # an iterator is read once, here, and sent to every shard
        if mih not in ("auto", "on", "off"):
            raise InvalidArgument(f"mih: {mih!r}, expected 'auto', 'on' or 'off'")
        shard_nprobe, probes = None, None
        if nprobe is not None:
            if self._ivf_lists() is not None:
                shard_nprobe = nprobe
            else:
                probes = self._class_probes(qa, nprobe, allow_partial)
        ok, missing = self._gather(
            "search", (qa, k, mode, rerank, cls, threads, mih, shard_nprobe, probes, where, ids),
            allow_partial,
        )
        larger = _merge.larger_is_better(mode)
        if rerank is None:
            d, i = _merge.merge_topk([r[0] for _, r in ok], k, larger)
        else:
            d, i = _merge.merge_reranked(
                [r[0] for _, r in ok], [r[1] for _, r in ok], k, rerank, larger
            )
        return Partial(d, i, missing) if allow_partial else (d, i)

    def _ivf_lists(self) -> int | None:
        """The model's coarse cells (``Model.ivf_lists``), from the first shard that answers
        (every shard has the model: checked at open)."""
        if not hasattr(self, "_ivf"):
            ok, _ = self._gather("info", (), allow_partial=True)
            self._ivf: int | None = ok[0][1]["ivf_lists"]
        return self._ivf

    def _class_probes(
        self, qa: npt.NDArray[np.float32], nprobe: int, allow_partial: bool
    ) -> npt.NDArray[np.int64] | None:
        """Per query, the ``nprobe`` classes whose merged means are nearest (NCM, Mensink et
        al., TPAMI 2013, eq. 1; ties by smaller class id), sorted; ``None`` when ``nprobe``
        covers every class with rows, where one index scans every row (src/search/probe.rs)."""
        ok, _ = self._gather("class_sums", (), allow_partial)
        names = [f"shard {s} ({self.backend.paths[s]})" for s, _ in ok]
        dim, table = _merge.merge_class_sums([r for _, r in ok], names=names)
        with_rows = [c for c in table if int(c["count"]) > 0]
        if not with_rows:
            raise InvalidArgument(
                "nprobe: the class means are the coarse quantiser, and no class of the sharded "
                "index has images (build or add with labels)"
            )
        cover, _ = self._gather("list_coverage", (), allow_partial)
        listed = sum(c[0] for _, c in cover)
        unlisted = sum(c[1] for _, c in cover)
        if listed == 0 and unlisted > 0:
            raise InvalidArgument(
                f"nprobe: the sharded index has no inverted lists (none of its {unlisted} live "
                "rows has a list id), so a list-restricted search would scan every row; file "
                "rows under lists when adding them (lists='label')"
            )
        if nprobe >= len(with_rows):
            return None
        for s, _ in ok:
            r = self.backend.run("classify_sums", (dim, with_rows, qa, nprobe), [s])[0]
            if not isinstance(r, BaseException):
                return np.sort(np.asarray(r[1], dtype=np.int64), axis=1)
            if isinstance(r, CodedbError) and not isinstance(r, ShardError):
                raise r
        raise ShardError(ok[-1][0], self.backend.paths[ok[-1][0]], "no shard ranked the class means")

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


