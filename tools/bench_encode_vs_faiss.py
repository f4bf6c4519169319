#!/usr/bin/env python3
"""codedb encoding throughput next to FAISS, same pipeline, shapes and threads, in one run.

    cargo build --release
    python3 tools/bench_encode_vs_faiss.py --rows 1000000 --threads 1,2

Cases: PCA-ITQ 64 bits on 784-D input (codedb `pca-itq:64`, FAISS
`index_factory(784, "ITQ64,LSH")` = PCA + ITQ rotation + sign), and PQ with M = 16 one-byte
sub-quantisers on 128-D input (codedb `pq:16x8`, FAISS `index_factory(128, "PQ16x8")`).
Both sides train on the same number of rows and then encode `--rows` rows: codedb through
`codedb bench encode --json` (its own seeded Gaussian rows with a decaying spectrum), FAISS
through `sa_encode` on rows drawn the same way in numpy, in chunks of 65,536 rows (the size of
codedb's pool). Encoding speed does not depend on the values. Prints rows/s of each and their
ratio; `--json` prints the rows as a list. `--baseline-binary OLD` also runs a second codedb
build on each case in the same run (before/after figures under the same load).
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

CASES = [
    # (name, codedb pipeline, faiss factory string, dim)
    ("pca-itq64/784", "pca-itq:64", "ITQ64,LSH", 784),
    ("pq16x8/128", "pq:16x8", "PQ16x8", 128),
]
POOL = 65_536


def gaussian(rng, n, d):
    scale = 1.0 / np.sqrt(1.0 + np.arange(d, dtype=np.float32))
    return (rng.standard_normal((n, d), dtype=np.float32) * scale).astype(np.float32)


def faiss_case(factory, d, rows, train_rows, threads, seed):
    faiss.omp_set_num_threads(threads)
    rng = np.random.default_rng(seed)
    index = faiss.index_factory(d, factory)
    xt = gaussian(rng, train_rows, d)
    t = time.perf_counter()
    index.train(xt)
    train_s = time.perf_counter() - t
    pool = gaussian(rng, min(rows, POOL), d)
    done = 0
    t = time.perf_counter()
    while done < rows:
        n = min(rows - done, pool.shape[0])
        index.sa_encode(pool[:n])
        done += n
    encode_s = time.perf_counter() - t
    return train_s, encode_s, rows / encode_s, index.sa_code_size()


def codedb_case(binary, pipeline, d, rows, train_rows, threads, seed):
    out = subprocess.run(
        [binary, "bench", "encode", "--pipeline", pipeline, "--dim", str(d), "--rows", str(rows),
         "--train-rows", str(train_rows), "--threads", str(threads), "--seed", str(seed), "--json"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--train-rows", type=int, default=20_000)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "target", "release", "codedb"))
    ap.add_argument("--baseline-binary", help="a second codedb binary to time in the same run")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    binary = os.environ.get("CODEDB_BIN", a.binary)
    rows_out = []
    for name, pipeline, factory, d in CASES:
        for threads in [int(t) for t in a.threads.split(",")]:
            c = codedb_case(binary, pipeline, d, a.rows, a.train_rows, threads, a.seed)
            f_train, f_enc, f_rate, f_bytes = faiss_case(factory, d, a.rows, a.train_rows, threads, a.seed)
            base = None
            if a.baseline_binary:
                base = codedb_case(a.baseline_binary, pipeline, d, a.rows, a.train_rows, threads, a.seed)
            rows_out.append({
                "case": name, "threads": threads, "rows": a.rows, "train_rows": a.train_rows,
                "codedb_code_bytes": c["code_bytes"], "faiss_code_bytes": f_bytes,
                "codedb_rows_per_s": c["rows_per_s"], "faiss_rows_per_s": f_rate,
                "ratio": c["rows_per_s"] / f_rate,
                "codedb_train_s": c["train_s"], "faiss_train_s": f_train,
            })
            if base is not None:
                rows_out[-1]["baseline_rows_per_s"] = base["rows_per_s"]
                rows_out[-1]["baseline_ratio"] = base["rows_per_s"] / f_rate
    if a.json:
        print(json.dumps(rows_out, indent=2))
        return
    if a.baseline_binary:
        print("| case | threads | codedb rows/s | baseline rows/s | FAISS rows/s | codedb / FAISS | "
              "baseline / FAISS |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in rows_out:
            print(f"| {r['case']} | {r['threads']} | {r['codedb_rows_per_s']:.3e} | "
                  f"{r['baseline_rows_per_s']:.3e} | {r['faiss_rows_per_s']:.3e} | {r['ratio']:.2f} | "
                  f"{r['baseline_ratio']:.2f} |")
        return
    print("| case | threads | codedb rows/s | FAISS rows/s | codedb / FAISS | train s (codedb / FAISS) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows_out:
        print(f"| {r['case']} | {r['threads']} | {r['codedb_rows_per_s']:.3e} | {r['faiss_rows_per_s']:.3e} | "
              f"{r['ratio']:.2f} | {r['codedb_train_s']:.2f} / {r['faiss_train_s']:.2f} |")


if __name__ == "__main__":
    main()
