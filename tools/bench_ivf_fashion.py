#!/usr/bin/env python3
"""IVFADC on Fashion-MNIST by the ann-benchmarks protocol: codedb's `ivf:K,pq:16x8` next to
FAISS `IVF{K},PQ16` in one run, at the same 16 code bytes per vector.

    cargo build --release -p codedb-cli
    python3 tools/bench_ivf_fashion.py --lists 256,1024 --nprobe 1,2,4,8,16,32,64

Protocol (ann-benchmarks' fashion-mnist-784-euclidean): the 60,000 training images are the
database, the first --queries (5,000) test images the queries, the truth is the exact 10 nearest
neighbours in L2 (FAISS IndexFlatL2), recall@10 = |returned ∩ true 10-NN| / 10, one thread on
both sides for the searches (training and adding: --train-threads, default 2). Pixels are the exported rows of /tmp/datasets/fashion_mnist (L2-normalised; see
/work/shared/DATASETS.md).

codedb runs through the CLI: `codedb train --pipeline ivf:K,pq:16x8` on the database (seed
--seed), `codedb build --store-vectors f16`, then per nprobe `codedb search --nprobe n
--threads 1 --verbose` (the time is the search call the CLI reports, index already open), with
and without `--rerank R`. FAISS: IndexIVFPQ(IndexFlatL2, K, 16, 8) trained on the database (its
precomputed tables on), `index.nprobe = n`, `omp_set_num_threads(1)`, the fastest of --repeats
(3) `index.search` calls after a warm-up (codedb: the fastest of --repeats CLI searches); re-ranked: IndexRefineFlat over it, k_factor R / 10 (float32
vectors; codedb re-ranks from f16). --flat adds the flat baselines (codedb pq:16x8 ADC, FAISS
IndexPQ); --reuse keeps codedb model files already in --dir (same seed: same model).
Prints a markdown table and writes --out (JSON).
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _venv  # noqa: E402

_venv.ensure(["faiss-cpu", "numpy"])

import faiss  # noqa: E402
import numpy as np  # noqa: E402


def load(data, nq):
    x = np.load(os.path.join(data, "pixels.npy")).astype(np.float32)
    split = np.load(os.path.join(data, "split.npy"))
    db = np.ascontiguousarray(x[split == 0])
    q = np.ascontiguousarray(x[split == 1][:nq])
    return db, q


def recall(found, truth):
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


def codedb(args, *cmd, threads=1):
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    r = subprocess.run([args.codedb, *cmd], check=True, capture_output=True, text=True, env=env)
    return r.stdout, r.stderr


def codedb_search(args, index, q_path, k, extra):
    out, err = codedb(args, "search", index, "--queries", q_path, "-k", str(k), "--threads", "1",
                      "--format", "json", "--verbose", *extra)
    secs = float(err.strip().split(",")[-1].split()[0])
    hits = json.loads(out)
    found = [[h["id"] for h in r["results"]] for r in sorted(hits, key=lambda r: r["query"])]
    return found, secs


def time_search(index, q, k, repeats):
    index.search(q[:100], k)  # warm-up
    best = None
    for _ in range(repeats):
        t = time.perf_counter()
        _, ids = index.search(q, k)
        secs = time.perf_counter() - t
        best = secs if best is None else min(best, secs)
    return ids, best


def best_of(repeats, run):
    """The fastest of `repeats` runs of a codedb search (results are the same each time)."""
    runs = [run() for _ in range(repeats)]
    return runs[0][0], min(secs for _, secs in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/datasets/fashion_mnist")
    ap.add_argument("--codedb", default="target/release/codedb")
    ap.add_argument("--dir", default="/tmp/codedb-ivf-bench")
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--lists", default="256,1024")
    ap.add_argument("--nprobe", default="1,2,4,8,16,32,64")
    ap.add_argument("--rerank", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", default=None)
    ap.add_argument("--flat", action="store_true", help="also the flat baselines (PQ16 ADC)")
    ap.add_argument("--reuse", action="store_true", help="keep model files already in --dir")
    ap.add_argument("--repeats", type=int, default=3,
                    help="time each search this many times on both sides and keep the fastest")
    ap.add_argument("--train-threads", type=int, default=2,
                    help="threads for training and adding (searches use one)")
    args = ap.parse_args()
    k = 10
    os.makedirs(args.dir, exist_ok=True)
    db, q = load(args.data, args.queries)
    db_path, q_path = os.path.join(args.dir, "db.npy"), os.path.join(args.dir, "q.npy")
    np.save(db_path, db)
    np.save(q_path, q)
    flat = faiss.IndexFlatL2(db.shape[1])
    flat.add(db)
    _, truth = flat.search(q, k)
    rows = []

    def row(system, nprobe, found, secs, **extra):
        r = dict(system=system, nprobe=nprobe, recall=recall(found, truth), qps=len(q) / secs, **extra)
        rows.append(r)
        print(json.dumps(r), file=sys.stderr, flush=True)

    nprobes = [int(n) for n in args.nprobe.split(",")]
    tt = args.train_threads
    if args.flat:
        model = os.path.join(args.dir, "pq16.model")
        if not (args.reuse and os.path.exists(model)):
            codedb(args, "train", "--data", db_path, "--pipeline", "pq:16x8", "--out", model,
                   "--force", "--seed", str(args.seed), threads=tt)
        index = os.path.join(args.dir, "pq16")
        subprocess.run(["rm", "-rf", index], check=True)
        codedb(args, "build", index, "--model", model, "--data", db_path, threads=tt)
        found, secs = best_of(args.repeats, lambda: codedb_search(args, index, q_path, k, []))
        row("codedb pq:16x8 (flat ADC)", None, found, secs)
        faiss.omp_set_num_threads(tt)
        fpq = faiss.IndexPQ(db.shape[1], 16, 8)
        fpq.train(db)
        fpq.add(db)
        faiss.omp_set_num_threads(1)
        ids, secs = time_search(fpq, q, k, args.repeats)
        row("FAISS IndexPQ 16x8", None, ids.tolist(), secs)
    for lists in [int(x) for x in args.lists.split(",")]:
        model = os.path.join(args.dir, f"ivf{lists}.model")
        t = time.perf_counter()
        if not (args.reuse and os.path.exists(model)):
            codedb(args, "train", "--data", db_path, "--pipeline", f"ivf:{lists},pq:16x8", "--out",
                   model, "--force", "--seed", str(args.seed), threads=tt)
        train_s = time.perf_counter() - t
        index = os.path.join(args.dir, f"ivf{lists}")
        subprocess.run(["rm", "-rf", index], check=True)
        t = time.perf_counter()
        codedb(args, "build", index, "--model", model, "--data", db_path, "--store-vectors", "f16",
               threads=tt)
        build_s = time.perf_counter() - t
        print(f"codedb ivf:{lists},pq:16x8: train {train_s:.1f} s, build {build_s:.1f} s",
              file=sys.stderr)
        faiss.omp_set_num_threads(tt)
        quant = faiss.IndexFlatL2(db.shape[1])
        ivf = faiss.IndexIVFPQ(quant, db.shape[1], lists, 16, 8)
        refine = faiss.IndexRefineFlat(ivf)
        refine.k_factor = args.rerank / k
        t = time.perf_counter()
        refine.train(db)
        refine.add(db)
        faiss.omp_set_num_threads(1)
        print(f"FAISS IVF{lists},PQ16: train + add {time.perf_counter() - t:.1f} s", file=sys.stderr)
        for n in [n for n in nprobes if n <= lists]:
            plain, rerank = ["--nprobe", str(n)], ["--nprobe", str(n), "--rerank", str(args.rerank)]
            found, secs = best_of(args.repeats, lambda: codedb_search(args, index, q_path, k, plain))
            row(f"codedb ivf:{lists},pq:16x8", n, found, secs)
            found, secs = best_of(args.repeats, lambda: codedb_search(args, index, q_path, k, rerank))
            row(f"codedb ivf:{lists},pq:16x8 + rerank {args.rerank} (f16)", n, found, secs)
            ivf.nprobe = n
            ids, secs = time_search(ivf, q, k, args.repeats)
            row(f"FAISS IVF{lists},PQ16", n, ids.tolist(), secs)
            ids, secs = time_search(refine, q, k, args.repeats)
            row(f"FAISS IVF{lists},PQ16 + RefineFlat k_factor {args.rerank // k}", n, ids.tolist(), secs)
    print("| system | nprobe | recall@10 | queries/s |")
    print("|---|---:|---:|---:|")
    for r in rows:
        n = "" if r["nprobe"] is None else r["nprobe"]
        print(f"| {r['system']} | {n} | {r['recall']:.3f} | {r['qps']:,.0f} |")
    # Same-run ratios: each codedb row against the FAISS row of the same lists, nprobe and
    # re-ranking.
    print()
    print("| lists | nprobe | codedb / FAISS queries/s | re-ranked |")
    print("|---:|---:|---:|---:|")
    by = {(r["system"], r["nprobe"]): r["qps"] for r in rows}
    for lists in [int(x) for x in args.lists.split(",")]:
        for n in [n for n in nprobes if n <= lists]:
            c = by.get((f"codedb ivf:{lists},pq:16x8", n))
            f = by.get((f"FAISS IVF{lists},PQ16", n))
            cr = by.get((f"codedb ivf:{lists},pq:16x8 + rerank {args.rerank} (f16)", n))
            fr = by.get((f"FAISS IVF{lists},PQ16 + RefineFlat k_factor {args.rerank // k}", n))
            if c and f and cr and fr:
                print(f"| {lists} | {n} | {c / f:.2f} | {cr / fr:.2f} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(faiss=faiss.__version__, queries=len(q), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
