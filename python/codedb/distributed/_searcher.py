"""The driver's side of a query: fan out to every shard, merge exactly (codedb._merge)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

from codedb import _merge
from codedb._errors import CodedbError, InvalidArgument
from codedb._codedb import Model
from codedb.distributed._backends import Backend, ask, gather
from codedb.distributed._layout import ShardLayout
from codedb.distributed._ops import Planned, assemble
from codedb.distributed._route import query_shards
from codedb.distributed._filtered_probe import exact_plan, ivf_plan
from codedb.distributed import _attributes
from codedb.distributed._errors import Missing, Partial, PartialColumns, ShardError, _no_answer

class ShardedSearcher:
    """Queries over every shard of a backend, merged exactly: ``search`` and ``classify`` give
    what one index holding every row gives. With ``allow_partial=True`` a failed shard is left
    out and named in the result (:class:`Partial`) instead of raising :class:`ShardError`."""

    def __init__(
        self, backend: Backend, lists: tuple[int, ...] | None = None, model: Model | None = None
    ) -> None:
        """``lists`` and ``model``: a writer's own searcher over a sharded index partitioned
        by list says so here; any other searcher reads the partition from shard 0's layout
        record the first time a query with ``nprobe`` needs it."""
        self.backend = backend
        if lists is not None:
            self._route: tuple[tuple[int, ...] | None, Model | None] = (lists, model)

    @property
    def paths(self) -> list[str]:
        return list(self.backend.paths)

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
        columns: str | Sequence[str] | None = None,
        as_frame: bool = False,
    ) -> Any:
        """k-NN over every shard: ``(D, I)`` as :meth:`Index.search` returns them (a
        :class:`Partial` with ``allow_partial=True``). ``columns=`` and ``as_frame=`` as
        :meth:`Index.search`: ``(D, I, columns)`` or a DataFrame, each hit's attribute values
        asked of the shard that holds it (:class:`PartialColumns`, or a DataFrame whose
        ``attrs["missing"]`` names the missing shards, with ``allow_partial=True``). ``threads`` is per shard; ``mih``
        ("auto", "on", "off") as :meth:`Index.search`, in every shard. ``where`` and ``ids``
        (docs/filtering.md) go to every shard, so the merge is the k best passing rows of one
        index holding every row. With ``nprobe`` too, the driver plans as one index: an IVF
        model's ADC search gathers every shard's passing rows per list (one more round trip),
        decides per query which lists to scan or the flat search over the passing rows, and
        has every shard run that decision (:mod:`codedb.distributed._filtered_probe`; an exact
        mode decides by the passing rows of every shard); class lists search every list again
        for a query left with fewer than k hits. A shard that fell back
        to an older version answers from it, with a :class:`ShardFallbackWarning` naming it.

        ``nprobe`` probes exactly as one index holding every row: an IVF model's coarse
        centroids are in the model, the same in every shard, so every shard probes the cells
        one index would; class lists are probed by the class means of the *merged* class table
        (per class, the shards' counts and sums added: FORMAT.md §5), chosen here on the driver
        and sent to every shard with the query. On a sharded index partitioned by list a query
        with ``nprobe`` goes only to the shards holding one of its probed lists (each
        list is whole on one shard), with the same answer."""
        if k < 1:
            raise InvalidArgument(f"k: {k}, must be at least 1")
        if rerank is not None and rerank < k:
            raise InvalidArgument(f"rerank: {rerank} candidates cannot give k = {k} (use R ≥ k)")
        if nprobe is not None and nprobe < 1:
            raise InvalidArgument(f"nprobe: {nprobe}, must be at least 1")
        if nprobe is not None and classes is not None:
            raise InvalidArgument("nprobe: not with classes=[...] (each picks the lists to scan)")
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
        filtered = nprobe is not None and (where is not None or ids is not None)
        if filtered and shard_nprobe is not None:
            planned = Planned(k, mode, rerank, threads, shard_nprobe, where, ids)
            return self._search_ivf_filtered(qa, planned, columns, as_frame, allow_partial)
        lists, model = self._partition() if shard_nprobe is not None else (None, None)
        if lists is not None and model is not None and qa.ndim == 2 and len(qa):
            ok, missing = self._search_routed(
                qa, lists, model,
                (k, mode, rerank, cls, threads, mih, shard_nprobe, None, where, ids),
                allow_partial,
            )
        else:
            ok, missing = gather(
                self.backend,
                "search",
                (qa, k, mode, rerank, cls, threads, mih, shard_nprobe, probes, where, ids),
                allow_partial,
            )
        larger = _merge.larger_is_better(mode)
        if not ok:  # partitioned by list, every shard asked failed
            raise _no_answer(missing)
        d, i = _merge.merge_parts([r for _, r in ok], k, rerank, larger)
        if filtered and qa.ndim == 2 and len(qa):
            # One index searches every list again for a query whose probed lists hold fewer than
            # min(k, passing rows) passing rows (_filtered_probe's module doc: why "fewer than
            # k hits" gives the same answers).
            short = np.flatnonzero((i >= 0).sum(axis=1) < k)
            if short.size:
                again, lost = gather(
                    self.backend,
                    "search",
                    (qa[short], k, mode, rerank, cls, threads, mih, None, None, where, ids),
                    allow_partial,
                )
                missing.extend(m for m in lost if m.shard not in {x.shard for x in missing})
                if again:
                    ad, ai = _merge.merge_parts([r for _, r in again], k, rerank, larger)
                    d[short], i[short] = ad, ai
                    ok = ok + again
        return self._finish(qa, d, i, ok, rerank is not None, columns, as_frame, missing,
                            allow_partial)

    def _search_ivf_filtered(
        self,
        qa: npt.NDArray[np.float32],
        p: Planned,
        columns: str | Sequence[str] | None,
        as_frame: bool,
        allow_partial: bool,
    ) -> Any:
        """A probed search of an IVF model under a filter, planned over every shard as one
        index plans it (:mod:`codedb.distributed._filtered_probe`)."""
        lists = self._ivf_lists()
        assert lists is not None
        planned = ivf_plan(self.backend, qa, p, lists, allow_partial)
        if planned is None:  # an exact mode: its own plan
            (d, i), ok, missing = exact_plan(self.backend, qa, p, lists, allow_partial)
        else:
            ok, missing, scanned = planned
            flat = [qi for qi, n in enumerate(scanned) if n is None]
            d, i = _merge.merge_parts([r for _, r in ok], p.k, p.rerank,
                                      _merge.larger_is_better(p.mode), flat)
        return self._finish(qa, d, i, ok, p.rerank is not None, columns, as_frame, missing,
                            allow_partial)

    def _finish(
        self,
        qa: npt.NDArray[np.float32],
        d: npt.NDArray[Any],
        i: npt.NDArray[np.int64],
        ok: list[tuple[int, Any]],
        reranked: bool,
        columns: str | Sequence[str] | None,
        as_frame: bool,
        missing: list[Missing],
        allow_partial: bool,
    ) -> Any:
        """The merged hits as the caller asked for them: ``(D, I)`` (a :class:`Partial` with
        ``allow_partial``), or with their attribute columns, each shard asked for the columns
        of the hits it found (src/search's ``ids=`` selector, one search per shard)."""
        if columns is None and not as_frame:
            return Partial(d, i, missing) if allow_partial else (d, i)
        names = [columns] if isinstance(columns, str) else list(columns or [])
        owner_of: dict[int, int] = {}
        for s, r in ok:
            for h in np.asarray(r[1 if reranked else 0][1]).ravel():
                if h >= 0:
                    owner_of[int(h)] = s
        owner = np.vectorize(lambda h: owner_of.get(int(h), -1), otypes=[np.int64])(i) \
            if i.size else np.zeros(i.shape, dtype=np.int64)
        asked = sorted({int(s) for s in np.unique(owner[i >= 0])})
        if names and not asked and (i < 0).any():
            asked = [ok[0][0]]  # no hit at all: one shard gives the columns' defaults
        answers: dict[int, Any] = {}
        if names and asked:
            per = {s: np.unique(i[(owner == s) & (i >= 0)]).astype(np.int64) for s in asked}
            got, _ = gather(self.backend, "columns", lambda s: (qa[:1], per[s], names), False, asked)
            answers = {s: _attributes.values_by_id(r, names) for s, r in got}
        if names and not len(qa):  # no query: the columns' types, from a shard's empty answer
            got, _ = gather(self.backend, "columns", (qa, np.zeros(0, np.int64), names), False,
                                  [ok[0][0]])
            empty = got[0][1][2]
            cols = {n: np.empty(i.shape, dtype=empty[n].dtype) for n in names}
        else:
            cols = _attributes.gather(i, owner, answers, names) if names else {}
        if as_frame:
            return _attributes.frame(d, i, cols, names, missing if allow_partial else None)
        if allow_partial:
            return PartialColumns(d, i, cols, missing)
        return d, i, cols

    def _partition(self) -> tuple[tuple[int, ...] | None, Model | None]:
        """The list placement of a sharded index partitioned by list and its model (read once,
        from shard 0's layout record); ``(None, None)`` when partitioned by id."""
        if not hasattr(self, "_route"):
            info = ask(self.backend, "info", (self.backend.paths[0],), 0)
            rec = None if info["layout"] is None else ShardLayout(*info["layout"])
            if rec is None or rec.lists is None:
                self._route = (None, None)
            else:
                self._route = (rec.lists, ask(self.backend, "model", (), 0))
        return self._route

    def _search_routed(
        self,
        qa: npt.NDArray[np.float32],
        lists: tuple[int, ...],
        model: Model,
        rest: tuple[Any, ...],
        allow_partial: bool,
    ) -> tuple[list[tuple[int, Any]], list[Missing]]:
        """Each shard searched for the queries with a probed list on it only; the parts put
        back in query order, blank (no hit) for the queries a shard was not asked."""
        n = len(self.backend.paths)
        nprobe = rest[6]
        asked = query_shards(lists, model, qa, nprobe, n)
        shards = [s for s in range(n) if asked[s].size]
        ok, missing = gather(
            self.backend, "search", lambda s: (qa[asked[s]], *rest), allow_partial, shards
        )
        mode = rest[1]
        return [(s, assemble([(asked[s], part)], len(qa), mode)) for s, part in ok], missing

    def _ivf_lists(self) -> int | None:
        """The model's coarse cells (``Model.ivf_lists``), from the first shard that answers
        (every shard has the model: checked at open)."""
        if not hasattr(self, "_ivf"):
            ok, _ = gather(self.backend, "info", (), allow_partial=True)
            self._ivf: int | None = ok[0][1]["ivf_lists"]
        return self._ivf

    def _class_probes(
        self, qa: npt.NDArray[np.float32], nprobe: int, allow_partial: bool
    ) -> npt.NDArray[np.int64] | None:
        """Per query, the ``nprobe`` classes whose merged means are nearest (NCM, Mensink et
        al., TPAMI 2013, eq. 1; ties by smaller class id), sorted; ``None`` when ``nprobe``
        covers every class with rows, where one index scans every row (src/search/probe.rs)."""
        (dim, table), shards, _ = self._class_table(allow_partial)
        with_rows = [c for c in table if int(c["count"]) > 0]
        if not with_rows:
            raise InvalidArgument(
                "nprobe: the class means are the coarse quantiser, and no class of the sharded "
                "index has images (build or add with labels)"
            )
        cover, _ = gather(self.backend, "list_coverage", (), allow_partial)
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
        _, ranked = self._classified(shards, dim, with_rows, qa, nprobe)
        return np.sort(np.asarray(ranked, dtype=np.int64), axis=1)

    def _class_table(
        self, allow_partial: bool
    ) -> tuple[tuple[int, list[dict[str, Any]]], list[int], list[Missing]]:
        """The sharded class table (every shard's counts and sums added up: FORMAT.md §5), the
        shards that gave it and the shards left out."""
        ok, missing = gather(self.backend, "class_sums", (), allow_partial)
        names = [f"shard {s} ({self.backend.paths[s]})" for s, _ in ok]
        return _merge.merge_class_sums([r for _, r in ok], names=names), [s for s, _ in ok], missing

    def _classified(
        self,
        shards: list[int],
        dim: int,
        table: list[dict[str, Any]],
        x: npt.NDArray[np.float32],
        top: int,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]:
        """NCM over the merged ``table`` (Mensink et al., TPAMI 2013, eq. 1), by the first of
        ``shards`` that answers (every shard holds the model): ``(scores, class ids)``."""
        last: BaseException | None = None
        for s in shards:
            r = self.backend.run("classify_sums", (dim, table, x, top), [s])[0]
            if not isinstance(r, BaseException):
                return r  # type: ignore[no-any-return, unused-ignore]
            if isinstance(r, CodedbError) and not isinstance(r, ShardError):
                raise r  # the query's own error (shape, NaN, no classes): no other shard helps
            last = r
        assert last is not None
        raise ShardError(shards[-1], self.backend.paths[shards[-1]], last) from last

    def class_sums(self, allow_partial: bool = False) -> tuple[int, list[dict[str, Any]]]:
        """The sharded class table: every shard's counts and sums added up."""
        return self._class_table(allow_partial)[0]

    def classify(self, x: npt.ArrayLike, top: int = 5, allow_partial: bool = False) -> Any:
        """NCM classification against the class means of the whole sharded index (merged from
        per-shard counts and sums): ``(scores, class ids)`` as :meth:`Index.classify` (a
        :class:`Partial` with ``allow_partial=True``)."""
        (dim, table), shards, missing = self._class_table(allow_partial)
        xa = np.ascontiguousarray(x, dtype=np.float32)
        d, i = self._classified(shards, dim, table, xa, top)
        return Partial(d, i, missing) if allow_partial else (d, i)

    def fanout(self, q: npt.ArrayLike, nprobe: int) -> list[int]:
        """Per query, how many shards a search with ``nprobe`` asks: every shard partitioned by
        id, the shards holding one of its probed lists partitioned by list."""
        qa = np.ascontiguousarray(q, dtype=np.float32)
        n = len(self.backend.paths)
        lists, model = self._partition()
        if lists is None or model is None:
            return [n] * len(qa)
        asked = query_shards(lists, model, qa, nprobe, n)
        count = np.zeros(len(qa), dtype=np.int64)
        for rows in asked:
            count[rows] += 1
        return [int(c) for c in count]

    def refresh(self) -> list[int]:
        """Every shard pins its newest committed version; returns the versions."""
        return self.backend.refresh()

    def close(self) -> None:
        self.backend.close()

