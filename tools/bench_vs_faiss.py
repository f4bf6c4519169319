#!/usr/bin/env python3
"""codedb scan throughput next to FAISS, on the same sizes, query counts and threads, in one run.

    cargo build --release
    python3 tools/bench_vs_faiss.py --codes 100000000 --kinds hamming64,pq8x16 \
        --queries 1,16 --threads 1,2 --dir /tmp/codedb-bench

For every case it runs `codedb bench scan ... --json` (codes in a real on-disk segment, mmapped,
hot cache) and the matching FAISS index on random codes of the same shape held in RAM
(IndexBinaryFlat for hammingB, IndexPQ for pq8xM, IndexPQFastScan for pq4xM; faiss-cpu from
PyPI), and prints one table with codes/s of each and their ratio. Codes are uniform random:
scan speed does not depend on their values. FAISS runs with `omp_set_num_threads(threads)`.
Both sides take the best of --repeats timed batches after one warm-up batch.

`--baseline-binary OLD` also runs a second codedb build on every case, right after the first,
so before/after figures share the same FAISS run and the same load.

A figure (codes/s against N and threads, codedb and FAISS, the read bandwidth as a bound):
give several sizes, save the table and let `codedb bench plot` draw it, in one command:

    python3 tools/bench_vs_faiss.py --codes 1000000,10000000 --kinds hamming64,pq4x32 \
        --threads 1,2 --out faiss.json --plot faiss.svg

(`--plot F` runs `codedb bench plot --from OUT --plot F`; rerun that alone to redraw.)

Multi-query batches (nq = 16 and nq = 256) are compute-bound, so
measure them at N = 10^6-10^7 (at 10^8, nq = 256 takes minutes per case):

    python3 tools/bench_vs_faiss.py --codes 1000000 --queries 16,256 --threads 1,2 --repeats 3
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


def parse_kind(kind):
    if kind.startswith("hamming"):
        return ("hamming", int(kind[len("hamming"):]))
    if kind.startswith("pq8x"):
        return ("pq8", int(kind[len("pq8x"):]))
    if kind.startswith("pq4x"):
        return ("pq4", int(kind[len("pq4x"):]))
    raise SystemExit(f"unknown kind {kind!r} (hamming64, hamming128, hamming256, pq8xM, pq4xM)")


def random_codes(rng, n, width, chunk=1 << 24):
    out = np.empty((n, width), dtype=np.uint8)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        out[s:e] = rng.integers(0, 256, size=(e - s, width), dtype=np.uint8)
    return out


def build_faiss(kind, n, rng):
    family, p = parse_kind(kind)
    if family == "hamming":
        index = faiss.IndexBinaryFlat(p)
        index.add(random_codes(rng, n, p // 8))
        return index, lambda nq: random_codes(rng, nq, p // 8)
    m = p
    dsub = 8  # 8-dimensional sub-vectors, as in the PCA -> PQ pipeline of the papers
    d = m * dsub
    nbits = 8 if family == "pq8" else 4
    pq_index = faiss.IndexPQ(d, m, nbits)
    cents = rng.standard_normal((m * (1 << nbits) * dsub,)).astype(np.float32)
    faiss.copy_array_to_vector(cents, pq_index.pq.centroids)
    pq_index.is_trained = True
    codes = rng.integers(0, 1 << nbits, size=(n, m), dtype=np.uint8)
    if nbits == 4:
        packed = np.zeros((n, (m + 1) // 2), dtype=np.uint8)
        packed[:, : m // 2] = codes[:, 0 : m - m % 2 : 2] | (codes[:, 1 : m : 2] << 4)
        if m % 2:
            packed[:, -1] = codes[:, -1]
        codes = packed
    pq_index.add_sa_codes(codes)
    index = faiss.IndexPQFastScan(pq_index) if nbits == 4 else pq_index
    return index, lambda nq: rng.standard_normal((nq, d)).astype(np.float32)


def time_faiss(index, queries, k, repeats):
    index.search(queries, k)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        index.search(queries, k)
        best = min(best, time.perf_counter() - t)
    return best


def run_codedb(args, codes, kind, nq, threads, binary=None):
    cmd = [binary or args.codedb, "bench", "scan", "--codes", str(codes), "--kind", kind,
           "--queries", str(nq), "--k", str(args.k), "--threads", str(threads),
           "--dir", args.dir, "--cache", "hot", "--repeats", str(args.repeats), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    return rows[0] if isinstance(rows, list) else rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--codes", default="10000000", help="rows, comma-separated for several sizes")
    ap.add_argument("--kinds", default="hamming64,hamming128,hamming256,pq8x8,pq8x16,pq4x16,pq4x32")
    ap.add_argument("--queries", default="1,16")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/codedb-bench")
    ap.add_argument("--codedb", default="target/release/codedb")
    ap.add_argument("--baseline-binary", help="a second codedb binary to time on every case")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    ap.add_argument("--out", help="also write the table as JSON to this file")
    ap.add_argument("--plot", help="draw it with `codedb bench plot` into this .svg (needs --out)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.plot and not args.out:
        ap.error("--plot draws the file --out writes: give --out too")

    rng = np.random.default_rng(args.seed)
    table = []
    sizes = [int(n) for n in args.codes.split(",")]
    for kind, codes in ((k, n) for k in args.kinds.split(",") for n in sizes):
        index, make_queries = build_faiss(kind, codes, rng)
        for threads in map(int, args.threads.split(",")):
            faiss.omp_set_num_threads(threads)
            for nq in map(int, args.queries.split(",")):
                q = make_queries(nq)
                f_s = time_faiss(index, q, args.k, args.repeats)
                c = run_codedb(args, codes, kind, nq, threads)
                base = run_codedb(args, codes, kind, nq, threads, args.baseline_binary) \
                    if args.baseline_binary else None
                f_cps = codes * nq / f_s
                row = {
                    "kind": kind, "codes": codes, "queries": nq, "threads": threads,
                    "k": args.k,
                    "codedb_codes_per_s": c["codes_per_s"],
                    "faiss_codes_per_s": f_cps,
                    "ratio": c["codes_per_s"] / f_cps,
                    "codedb_bandwidth_fraction": c["bandwidth_fraction"],
                    "bandwidth_gb_per_s": c["bandwidth_gb_per_s"],
                    "isa": c["isa"],
                }
                if base:
                    row["baseline_codes_per_s"] = base["codes_per_s"]
                    row["baseline_ratio"] = base["codes_per_s"] / f_cps
                    row["baseline_bandwidth_fraction"] = base["bandwidth_fraction"]
                table.append(row)
                print(f"{kind:>10} N={codes:<10} nq={nq:<4} threads={threads}  codedb {row['codedb_codes_per_s']:.3e}"
                      f"  faiss {f_cps:.3e}  ratio {row['ratio']:.2f}"
                      f"  codedb at {100 * row['codedb_bandwidth_fraction']:.0f}% of read bandwidth"
                      + (f"  baseline {row['baseline_codes_per_s']:.3e} ratio {row['baseline_ratio']:.2f}"
                         if base else ""),
                      file=sys.stderr, flush=True)
        del index
    if args.out:
        with open(args.out, "w") as f:
            json.dump(table, f, indent=1)
    if args.plot:
        subprocess.run([args.codedb, "bench", "plot", "--from", args.out, "--plot", args.plot,
                        "--title", f"Scan throughput: codedb and FAISS {faiss.__version__}, k = {args.k}, "
                        f"codedb ISA {table[0]['isa'] if table else '?'}"], check=True)
    if len(sizes) > 1:  # several N: name the size in the kind column of the table
        table_rows = [dict(r, kind=f"{r['kind']} N={r['codes']}") for r in table]
    else:
        table_rows = table
    if args.json:
        print(json.dumps(table, indent=1))
    else:
        isa = table[0]["isa"] if table else "?"
        print(f"faiss {faiss.__version__}; N = {args.codes}; k = {args.k}; hot cache; codedb ISA {isa}")
        if args.baseline_binary:
            print("| kind | nq | threads | codedb codes/s | baseline codes/s | FAISS codes/s "
                  "| codedb / FAISS | baseline / FAISS | codedb % of read BW | baseline % of read BW |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for r in table_rows:
                print(f"| {r['kind']} | {r['queries']} | {r['threads']} | {r['codedb_codes_per_s']:.3e} | "
                      f"{r['baseline_codes_per_s']:.3e} | {r['faiss_codes_per_s']:.3e} | {r['ratio']:.2f} | "
                      f"{r['baseline_ratio']:.2f} | {100 * r['codedb_bandwidth_fraction']:.0f}% | "
                      f"{100 * r['baseline_bandwidth_fraction']:.0f}% |")
        else:
            print("| kind | nq | threads | codedb codes/s | FAISS codes/s | codedb / FAISS | codedb % of read BW |")
            print("|---|---:|---:|---:|---:|---:|---:|")
            for r in table_rows:
                print(f"| {r['kind']} | {r['queries']} | {r['threads']} | {r['codedb_codes_per_s']:.3e} | "
                      f"{r['faiss_codes_per_s']:.3e} | {r['ratio']:.2f} | {100 * r['codedb_bandwidth_fraction']:.0f}% |")


if __name__ == "__main__":
    main()
