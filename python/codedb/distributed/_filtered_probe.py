"""A probed search under a filter over shards, planned as one index holding every row plans it
(docs/filtering.md, "IVF"; src/search/ivf_filter.rs).

An IVF model's filtered ADC search reads a query's ``nprobe`` nearest lists, then the
next-nearest while they hold fewer passing rows than its collector keeps (k, or R when
re-ranked), unless the flat search over every passing row reads less. Every shard holds part of
every list, so a shard left to itself would probe on until *it* had k passing rows and judge the
flat search by *its* passing rows: other lists, other answers. Here the driver

1. gathers each shard's counts per list in probe order (:meth:`Index.ivf_list_counts`: as many
   lists as the shard's own plan reads, so one round trip usually suffices; a query still
   undecided over the lists every shard reported asks the shards for more),
2. sums them and decides once per query with the engine's own rule
   (:func:`codedb._codedb.ivf_probe_decision`, with the live rows of every shard),
3. has every shard run that decision (:meth:`Index.search_ivf_planned`) and merges the top-k
   exactly, ties by id; re-ranked, the global R best code candidates re-scored (the merge of
   :func:`codedb._merge.merge_reranked`), and a query left to the flat search the exact k best
   passing rows, as one index answers it.

An IVF model in an exact mode chooses otherwise: every query scans the passing rows instead of
its ``nprobe`` lists when the passing rows are few (no more than those lists hold, or fewer than
k expected in them), and a query whose lists hold fewer than min(k, passing rows) passing rows
is searched again over the passing rows. The driver gathers every shard's passing and live rows
(:meth:`Index.passing_rows`, one more round trip), decides with the engine's rule
(:func:`codedb._codedb.ivf_filter_scans_passing`), has every shard scan each query's probed
lists (the model's, :meth:`Model.probe_lists`) or the passing rows
(:meth:`Index.search_ivf_planned`), and sends a query short after the merge to the passing rows
of every shard.

With class lists (no IVF model) one index probes the lists of the ``nprobe`` nearest class
means and searches every list again for a query whose probed lists hold fewer than
min(k, passing rows) passing rows. The driver probes by the merged class means as for any
probed search and searches every shard again, over every list, for a merged query with fewer
than k hits: when the whole index has fewer than k passing rows and the probed lists hold them
all, that second search finds the same rows with the same scores, so the answer is one index's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from codedb import _merge
from codedb._codedb import ivf_filter_scans_passing, ivf_probe_decision
from codedb.distributed._backends import Backend, ask, gather
from codedb.distributed._errors import Missing, ShardError
from codedb.distributed._ops import Planned

_Result = tuple[npt.NDArray[Any], npt.NDArray[np.int64]]
_Part = tuple[_Result, _Result | None]


def ivf_plan(
    backend: Backend,
    qa: npt.NDArray[np.float32],
    p: Planned,
    lists: int,
    allow_partial: bool,
) -> tuple[list[tuple[int, _Part]], list[Missing], list[int | None]] | None:
    """Steps 1-2 and the planned search of step 3 (see the module doc): per answering shard its
    part, the shards left out, and per query the lists scanned (``None``: the flat search).
    ``None`` when a search with these arguments does not run the filtered IVF plan (an exact
    mode)."""
    ok, missing = gather(backend, "ivf_counts", (qa, p, None, None), allow_partial)
    if any(r[0] is None for _, r in ok):
        return None
    shards = [s for s, _ in ok]
    live = sum(int(r[1]) for _, r in ok)
    nq = len(qa)
    order: list[list[int]] = [[] for _ in range(nq)]
    passing: list[list[int]] = [[] for _ in range(nq)]
    read: list[list[int]] = [[] for _ in range(nq)]
    decided: list[int | str | None] = [None] * nq
    pending = list(range(nq))
    answers = {s: r[0] for s, r in ok}
    while True:
        for j, qi in enumerate(pending):
            per = [answers[s][j] for s in shards]
            known = min(len(c[0]) for c in per)
            head = np.asarray(per[0][0][:known], dtype=np.int64)
            for s, c in zip(shards, per):
                if not np.array_equal(np.asarray(c[0][:known]), head):
                    raise ShardError(s, backend.paths[s],
                                     f"query {qi}: its probe order differs from shard "
                                     f"{shards[0]}'s (the shards' models differ)")
            order[qi].extend(int(v) for v in head)
            passing[qi].extend(int(v) for v in np.sum([c[1][:known] for c in per], axis=0))
            read[qi].extend(int(v) for v in np.sum([c[2][:known] for c in per], axis=0))
            decided[qi] = ivf_probe_decision(passing[qi], read[qi], p.nprobe, lists, p.k,
                                             p.rerank, live)
        pending = [qi for qi in pending if decided[qi] is None]
        if not pending:
            break
        # Undecided over the lists every shard reported: the next lists, as many again.
        start = [len(order[qi]) for qi in pending]
        count = max(max(start), 1)
        got, lost = gather(backend, "ivf_counts", (qa[pending], p, start, count), allow_partial,
                           shards)
        missing.extend(lost)
        shards = [s for s, _ in got]
        answers = {s: r[0] for s, r in got}
    plan: list[list[int] | None] = [
        order[qi][:d] if isinstance(d, int) else None for qi, d in enumerate(decided)
    ]
    got, lost = gather(backend, "search_planned", (qa, plan, p), allow_partial, shards)
    missing.extend(lost)
    return got, missing, [None if q is None else len(q) for q in plan]


def exact_plan(
    backend: Backend,
    qa: npt.NDArray[np.float32],
    p: Planned,
    lists: int,
    allow_partial: bool,
) -> tuple[_Result, list[tuple[int, _Part]], list[Missing]]:
    """The exact modes' plan over the shards (see the module doc): the merged ``(D, I)``, the
    shards' parts (for ``columns=``) and the shards left out."""
    ok, missing = gather(backend, "passing", (p.where, p.ids), allow_partial)
    passing = sum(int(r[0]) for _, r in ok)
    live = sum(int(r[1]) for _, r in ok)
    shards = [s for s, _ in ok]
    nq = len(qa)
    if ivf_filter_scans_passing(passing, live, p.nprobe, lists, p.k):
        plan: list[list[int] | None] = [None] * nq
    else:
        model = ask(backend, "model", (), shards[0])
        plan = [[int(v) for v in row] for row in model.probe_lists(qa, p.nprobe)] if nq else []
    larger = _merge.larger_is_better(p.mode)
    got, lost = gather(backend, "search_planned", (qa, plan, p), allow_partial, shards)
    missing.extend(lost)
    d, i = _merge.merge_parts([r for _, r in got], p.k, p.rerank, larger)
    want = min(p.k, passing)
    short = [qi for qi in range(nq) if plan[qi] is not None and int((i[qi] >= 0).sum()) < want]
    parts = list(got)
    if short:
        again, lost = gather(backend, "search_planned", (qa[short], [None] * len(short), p),
                             allow_partial, [s for s, _ in got])
        missing.extend(lost)
        if again:
            sd, si = _merge.merge_parts([r for _, r in again], p.k, p.rerank, larger)
            d[short], i[short] = sd, si
            parts += again
    return (d, i), parts, missing
