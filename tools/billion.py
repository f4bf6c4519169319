#!/usr/bin/env python3
"""A billion rows end to end on one machine: train, add through the normal write path, search,
with recall, speed, memory, disk and the time of every phase.

    ./test.sh --python     # builds the wheel into target/py-venv (or pip install ./python)
    target/py-venv/bin/python tools/billion.py --rows 1000000000 --dir /data/codedb-billion
    target/py-venv/bin/python tools/billion.py --rows 2000000 --spec ivf:1024,pq:16x8 \\
        --train 100000 --dir /tmp/codedb-billion-small      # a quick run of the same path

Rows are generated, never stored: a mixture of --clusters Gaussians in --dim dimensions
(centres ~ N(0, 4²), Zipf-like weights ∝ rank^−0.7, unit noise), made in chunks of --batch
rows, chunk c from ``numpy.random.default_rng([seed, c])`` — so any row can be made again, and
the ids (the row numbers) make every step idempotent. Phases, each timed (wall seconds):

* ``train``: the model (--spec) on the first --train rows; kept as ``model.cdbm`` in --dir and
  reused when present (a rerun skips it).
* ``add``: ``Index.add`` of every chunk (encode + write through the append log), a commit every
  --commit-every chunks. Killed and rerun, it resumes after the last committed chunk. Per-row
  costs are split on one chunk: ``assign`` (``Model.assign_lists``, the coarse quantiser),
  ``encode`` (``Model.encode``, which includes the assignment), the rest of ``add`` is ``write``.
* ``seal``: ``compact(full=True)``: the committed log sealed into segments grouped by list.
* ``truth``: the exact 10 nearest rows of --queries queries by a streaming pass over the
  regenerated rows (squared L2 on the float rows, ties by smaller id), kept in ``truth.npz``.
* ``search``: ``Snapshot.search(k=10, nprobe=p, threads=t)`` for each --nprobe and --threads:
  queries/s (best of --repeats passes); from one k = 100 search, recall10@10 (the share of the
  true 10 nearest among the first 10 found) and 1-recall@10 / @100 (the share of queries whose
  true nearest row is among the first 10 / 100: FAISS's measure for IVF-PQ).

With --faiss-rows N (N ≤ --rows; 0 skips it), FAISS's ``IndexIVFPQ`` with the same K and M,
trained on the same rows, holds the first N rows in RAM and answers the same queries at the same
nprobe, recall against the exact 10 nearest of those N rows (the same streaming pass). Prints
the peak RSS of this process (``ru_maxrss``) and the index's bytes on disk. One JSON object per
line with --json. FAISS is installed into a tools venv when missing (tools/_venv.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import codedb  # noqa: E402


class Rows:
    """The generated data set: chunk c is made from ``default_rng([seed, c])``."""

    def __init__(self, n: int, dim: int, clusters: int, batch: int, seed: int) -> None:
        self.n, self.dim, self.batch, self.seed = n, dim, batch, seed
        g = np.random.default_rng([seed, 2**31])
        self.centres = (g.normal(size=(clusters, dim)) * 4.0).astype(np.float32)
        w = 1.0 / np.arange(1, clusters + 1) ** 0.7
        self.cdf = np.cumsum(w / w.sum())

    def chunks(self) -> int:
        return -(-self.n // self.batch)

    def chunk(self, c: int) -> np.ndarray:
        start = c * self.batch
        m = min(self.batch, self.n - start)
        g = np.random.default_rng([self.seed, c])
        which = np.minimum(np.searchsorted(self.cdf, g.random(m)), len(self.cdf) - 1)
        x = g.standard_normal(size=(m, self.dim), dtype=np.float32)
        x += self.centres[which]
        return x

    def first(self, m: int) -> np.ndarray:
        parts, c = [], 0
        while sum(len(p) for p in parts) < m and c < self.chunks():
            parts.append(self.chunk(c))
            c += 1
        return np.concatenate(parts)[:m]

    def queries(self, m: int) -> np.ndarray:
        g = np.random.default_rng([self.seed, 2**31 + 1])
        which = np.minimum(np.searchsorted(self.cdf, g.random(m)), len(self.cdf) - 1)
        return (self.centres[which] + g.standard_normal(size=(m, self.dim), dtype=np.float32))


def emit(args: argparse.Namespace, **r: Any) -> None:
    if args.json:
        print(json.dumps(r), flush=True)
    else:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in r.items()), flush=True)


def disk_bytes(d: pathlib.Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB on Linux


def truth(rows: Rows, q: np.ndarray, upto: list[int], k: int = 10) -> dict[int, np.ndarray]:
    """The exact k nearest ids of every query among the first n rows, for each n in ``upto``:
    one streaming pass, chunk by chunk (squared L2, ties by smaller id)."""
    qn = (q.astype(np.float64) ** 2).sum(1)
    best_d = np.full((len(q), k), np.inf)
    best_i = np.full((len(q), k), -1, dtype=np.int64)
    out: dict[int, np.ndarray] = {}
    marks = sorted(set(upto))
    for c in range(rows.chunks()):
        x = rows.chunk(c)
        start = c * rows.batch
        d = qn[:, None] - 2.0 * (q.astype(np.float64) @ x.T.astype(np.float64))
        d += (x.astype(np.float64) ** 2).sum(1)[None, :]
        ids = np.arange(start, start + len(x), dtype=np.int64)
        for mark in marks:
            if start < mark <= start + len(x) and mark not in out:
                cut = mark - start
                out[mark] = _merge(best_d, best_i, d[:, :cut], ids[:cut], k)[1]
        best_d, best_i = _merge(best_d, best_i, d, ids, k)
        if c % 50 == 0:
            print(f"# truth: chunk {c + 1} of {rows.chunks()}", file=sys.stderr, flush=True)
    for mark in marks:
        out.setdefault(mark, best_i)
    return out


def _merge(bd: np.ndarray, bi: np.ndarray, d: np.ndarray, ids: np.ndarray,
           k: int) -> tuple[np.ndarray, np.ndarray]:
    kk = min(k, d.shape[1])
    part = np.argpartition(d, kk - 1, axis=1)[:, :kk]
    cd = np.concatenate([bd, np.take_along_axis(d, part, 1)], axis=1)
    ci = np.concatenate([bi, ids[part]], axis=1)
    order = np.lexsort((ci, cd), axis=-1)[:, :k]
    return np.take_along_axis(cd, order, 1), np.take_along_axis(ci, order, 1)


def recall(found: np.ndarray, true: np.ndarray) -> float:
    """recall10@10: the share of the true 10 nearest among the 10 found."""
    return float(np.mean([len(set(f[:10].tolist()) & set(t.tolist())) / t.shape[0]
                          for f, t in zip(found, true)]))


def nn_recall(found: np.ndarray, true: np.ndarray, r: int) -> float:
    """1-recall@r: the share of queries whose true nearest row is among the r found."""
    return float(np.mean([t[0] in f[:r] for f, t in zip(found, true)]))


def best(fn: Any, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10**9, help="rows to generate and add")
    ap.add_argument("--dim", type=int, default=96, help="their dimension")
    ap.add_argument("--clusters", type=int, default=10_000, help="Gaussians in the mixture")
    ap.add_argument("--spec", default="ivf:16384,pq:16x8",
                    help="model (K = 16384: ~61k rows per list at 10^9; 65536 trains 4x longer)")
    ap.add_argument("--train", type=int, default=1_000_000, help="training rows (the first ones)")
    ap.add_argument("--batch", type=int, default=1_000_000, help="rows per generated chunk / add")
    ap.add_argument("--commit-every", type=int, default=20, help="chunks per commit")
    ap.add_argument("--nprobe", default="16,64,256", help="nprobe values to search with")
    ap.add_argument("--threads", default="1,2", help="search threads")
    ap.add_argument("--queries", type=int, default=100, help="queries (recall and speed)")
    ap.add_argument("--repeats", type=int, default=3, help="timed passes per case (best of)")
    ap.add_argument("--faiss-rows", type=int, default=0,
                    help="FAISS IndexIVFPQ over the first N rows in RAM (0: skip)")
    ap.add_argument("--seed", type=int, default=1234, help="data and training seed")
    ap.add_argument("--dir", required=True, help="index directory (kept: reruns resume)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args()
    if args.faiss_rows:
        from _venv import ensure

        ensure(["faiss-cpu", "numpy"])
    root = pathlib.Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    rows = Rows(args.rows, args.dim, args.clusters, args.batch, args.seed)
    q = rows.queries(args.queries)

    model_path = root / "model.cdbm"
    if model_path.exists():
        model = codedb.Model.load(model_path)
        emit(args, phase="train", s=0.0, note="model.cdbm reused")
    else:
        t = time.perf_counter()
        sample = rows.first(args.train)
        model = codedb.train(sample, args.spec, seed=args.seed)
        model.save(model_path)
        emit(args, phase="train", rows=len(sample), s=time.perf_counter() - t)
    index_dir = root / "index"
    ix = codedb.Index.open(index_dir) if index_dir.exists() else codedb.Index.create(index_dir, model)

    # Per-row costs on one chunk: the coarse assignment, the whole encoding.
    probe = rows.chunk(0)
    if model.ivf_lists is not None:
        t = time.perf_counter()
        model.assign_lists(probe)
        assign_us = (time.perf_counter() - t) * 1e6 / len(probe)
    else:
        assign_us = 0.0
    t = time.perf_counter()
    model.encode(probe)
    encode_us = (time.perf_counter() - t) * 1e6 / len(probe)

    done = len(ix)
    if done % args.batch and done < args.rows:
        sys.exit(f"{index_dir}: {done} rows, not a whole number of --batch {args.batch} chunks")
    first = done // args.batch
    t_add = time.perf_counter()
    added = 0
    tty = sys.stderr.isatty()
    for c in range(first, rows.chunks()):
        x = rows.chunk(c)
        ids = np.arange(c * args.batch, c * args.batch + len(x), dtype=np.uint64)
        ix.add(x, ids=ids)
        added += len(x)
        if (c + 1) % args.commit_every == 0 or c + 1 == rows.chunks():
            ix.commit()
            ix.gc()  # the logs a commit sealed into segments: at 10^9 rows they are 28 GB
        if tty:
            el = time.perf_counter() - t_add
            print(f"\r# add: {(c + 1) * args.batch:,} of {args.rows:,} rows, "
                  f"{added / max(el, 1e-9):,.0f} rows/s", end="", file=sys.stderr, flush=True)
    if tty:
        print(file=sys.stderr)
    add_s = time.perf_counter() - t_add
    if added:
        per_row = add_s * 1e6 / added
        emit(args, phase="add", rows=added, resumed_at=done, s=add_s, rows_per_s=added / add_s,
             us_per_row=per_row, assign_us=assign_us, encode_us=encode_us,
             write_us=max(0.0, per_row - encode_us))
    t = time.perf_counter()
    ix.compact(full=True)
    emit(args, phase="seal", s=time.perf_counter() - t, disk_gb=disk_bytes(index_dir) / 1e9)

    truth_file = root / f"truth-{args.queries}-{args.faiss_rows}.npz"
    if truth_file.exists():
        z = np.load(truth_file)
        true_all, true_faiss = z["all"], z["faiss"]
        emit(args, phase="truth", s=0.0, note=f"{truth_file.name} reused")
    else:
        t = time.perf_counter()
        marks = [args.rows] + ([args.faiss_rows] if args.faiss_rows else [])
        got = truth(rows, q, marks)
        true_all = got[args.rows]
        true_faiss = got.get(args.faiss_rows, true_all)
        np.savez(truth_file, all=true_all, faiss=true_faiss)
        emit(args, phase="truth", queries=len(q), s=time.perf_counter() - t)

    snap = ix.snapshot()
    nprobes = [int(v) for v in args.nprobe.split(",")]
    thread_counts = [int(v) for v in args.threads.split(",")]
    for p in nprobes:
        for th in thread_counts:
            found = snap.search(q, k=100, nprobe=p, threads=th)[1]
            s = best(lambda: snap.search(q, k=10, nprobe=p, threads=th), args.repeats)
            emit(args, phase="search", engine="codedb", rows=args.rows, nprobe=p, threads=th,
                 qps=len(q) / s, recall10_at10=recall(found, true_all),
                 nn_recall_at10=nn_recall(found, true_all, 10),
                 nn_recall_at100=nn_recall(found, true_all, 100))
    if args.faiss_rows:
        import faiss  # type: ignore[import-not-found]

        k_lists = int(model.ivf_lists or 1024)
        m = int(args.spec.split("pq:")[1].split("x")[0]) if "pq:" in args.spec else 16
        t = time.perf_counter()
        fx = faiss.IndexIVFPQ(faiss.IndexFlatL2(args.dim), args.dim, k_lists, m, 8)
        fx.train(rows.first(args.train))
        emit(args, phase="train", engine="faiss", s=time.perf_counter() - t)
        t = time.perf_counter()
        n_f = 0
        for c in range(rows.chunks()):
            if n_f >= args.faiss_rows:
                break
            x = rows.chunk(c)[: args.faiss_rows - n_f]
            fx.add_with_ids(x, np.arange(n_f, n_f + len(x), dtype=np.int64))
            n_f += len(x)
        add_s = time.perf_counter() - t
        emit(args, phase="add", engine="faiss", rows=n_f, s=add_s, rows_per_s=n_f / add_s,
             rss_gb=rss_gb())
        for p in nprobes:
            fx.nprobe = p
            for th in thread_counts:
                faiss.omp_set_num_threads(th)
                found = fx.search(q, 100)[1]
                s = best(lambda: fx.search(q, 10), args.repeats)
                emit(args, phase="search", engine="faiss", rows=n_f, nprobe=p, threads=th,
                     qps=len(q) / s, recall10_at10=recall(found, true_faiss),
                     nn_recall_at10=nn_recall(found, true_faiss, 10),
                     nn_recall_at100=nn_recall(found, true_faiss, 100))
    emit(args, phase="done", peak_rss_gb=rss_gb(), disk_gb=disk_bytes(index_dir) / 1e9,
         load=os.getloadavg()[0])


if __name__ == "__main__":
    main()
