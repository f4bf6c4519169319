#!/usr/bin/env python3
"""Filtered search against unfiltered search on one generated index (standard library only).

Writes N random Gaussian rows (seeded) as .npy, trains pca-itq:64 on the first 20,000, builds an
index of all N, then times `codedb search --verbose` (the search alone, one thread, k = 10) with
no filter, and with filters passing 0.1 %, 1 %, 10 % and 50 % of the rows: random ids
(`--ids-file`) and a contiguous id range (`--where "id < n"`). With --peer BIN, the unfiltered
search also runs on BIN (another build of codedb) in the same loop, so the two are compared under
the same load. Prints a Markdown table.

    python3 tools/bench_filter.py --codedb target/release/codedb --dir /tmp/fb [--peer OTHER]
"""

import argparse
import array
import os
import random
import re
import subprocess
import time


def write_npy(path, rows, dim, rng):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, dim)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        chunk = 10_000
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            array.array("f", (rng.gauss(0.0, 1.0) for _ in range(n * dim))).tofile(f)


def search_seconds(binary, args):
    out = subprocess.run(
        [binary, "search", *args, "--verbose"], capture_output=True, text=True, check=True
    )
    m = re.search(r"([0-9.]+) s\s*$", out.stderr.strip().splitlines()[-1])
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--codedb", required=True)
    p.add_argument("--peer")
    p.add_argument("--dir", required=True)
    p.add_argument("--rows", type=int, default=500_000)
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(a.seed)
    dim = 64
    data, train = (os.path.join(a.dir, n) for n in ("x.npy", "train.npy"))
    model, idx = os.path.join(a.dir, "m.model"), os.path.join(a.dir, "idx")
    if not os.path.exists(idx):
        write_npy(data, a.rows, dim, rng)
        write_npy(train, 20_000, dim, rng)
        run = lambda *c: subprocess.run([a.codedb, *c], check=True, capture_output=True)
        run("train", "--data", train, "--pipeline", "pca-itq:64", "--out", model)
        run("build", idx, "--model", model, "--data", data)
    q = os.path.join(a.dir, f"q-{a.queries}.npy")
    if not os.path.exists(q):
        write_npy(q, a.queries, dim, random.Random(a.seed + 1))
    base = [idx, "--queries", q, "-k", "10", "--threads", "1"]
    cases = [("none", [])]
    for sel in (0.001, 0.01, 0.1, 0.5):
        n = int(a.rows * sel)
        ids = os.path.join(a.dir, f"ids-{sel}.txt")
        with open(ids, "w") as f:
            f.write("\n".join(map(str, random.Random(a.seed + n).sample(range(a.rows), n))))
        cases.append((f"{sel:.1%} random ids", ["--ids-file", ids]))
        cases.append((f"{sel:.1%} id range", ["--where", f"id < {n}"]))
    best = {}
    for _ in range(a.repeats):
        for name, extra in cases:
            t = search_seconds(a.codedb, base + extra)
            best[name] = min(best.get(name, t), t)
        if a.peer:
            t = search_seconds(a.peer, base)
            best["peer"] = min(best.get("peer", t), t)
    load = os.getloadavg()[0]
    print(f"{a.rows} rows, 64-bit codes (pca-itq:64), {a.queries} queries, k = 10, 1 thread, "
          f"best of {a.repeats}; load average {load:.1f}; {time.strftime('%Y-%m-%d', time.gmtime())}")
    print()
    print("| filter | search s | queries/s | vs unfiltered |")
    print("|---|---|---|---|")
    rows = ([("unfiltered (peer build)", best["peer"])] if a.peer else []) + [
        (n if n != "none" else "unfiltered", best[n]) for n, _ in cases
    ]
    for name, t in rows:
        print(f"| {name} | {t:.4f} | {a.queries / t:,.0f} | {best['none'] / t:.2f}× |")


if __name__ == "__main__":
    main()
