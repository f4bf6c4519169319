#!/usr/bin/env python3
"""Filtered search against unfiltered search on one generated index (standard library only).

Writes N random Gaussian rows (seeded) as .npy, trains pca-itq:64 on the first 20,000, builds an
index of all N, then times `codedb search --verbose` (the search alone, one thread, k = 10) with
no filter, and with filters passing 0.1 %, 1 %, 10 % and 50 % of the rows: random ids
(`--ids-file`) and a contiguous id range (`--where "id < n"`). With --peer BIN, the unfiltered
search also runs on BIN (another build of codedb) in the same loop, so the two are compared under
the same load. Prints a Markdown table.

With --columns, the same rows are also built with attribute columns (a JSON-lines file: `year`,
an int uniform in 0..999; `ts`, a timestamp increasing with the row's id, as images added over
time, one second apart with a seeded jitter of up to 100 s, so a range of `ts` is a run of rows;
and `tags`, one or two of 1,000 tags drawn from a Zipf law, P(tag i) ∝ 1/(i+1), seeded), and a
second table gives what carrying them costs — index bytes, build time, unfiltered search with
and without columns in the same loop — and filtered search on the stored columns: `year < n` at
0.1 %, 1 %, 10 % and 50 % (beside the id range of the same selectivity, whose filter reads no
column), `ts < t` at 1 %, 10 % and 50 % (a run of rows: what per-block minima and maxima would
skip), and `tags HAS` tags of Zipf ranks 0, 9, 99 and 999. With --peer, each of these searches
also runs on the peer binary in the same loop (a last column); --columns-only skips the first
table.

With --ivf, a third table times a selective filter with an IVF index: ROWS clustered 96-D rows
(--clusters Gaussian centres of spread 4, unit noise; seeded) with their f32 vectors stored and a
column `u` uniform over 0..ROWS-1, built with `ivf:K,pq:16x8` (K = --lists) and, for a peer, with
`pq:16x8` (flat); the queries drawn alike. Filters `u < n` passing 0.1 %, 1 % and 10 % are
searched flat and with --nprobe 1, 4 and 16 (ADC, re-ranked by 40, k = 10; with --peer, the IVF
searches also on the peer binary in the same loop), and each row gives recall@10 against the exact
search over the passing rows (`--mode exact` on the same index).

    python3 tools/bench_filter.py --codedb target/release/codedb --dir /tmp/fb [--peer OTHER] [--columns] [--ivf]
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
    p.add_argument("--columns", action="store_true")
    p.add_argument("--columns-only", action="store_true",
                   help="only the attribute-column tables (skip the id-filter table)")
    p.add_argument("--ivf", action="store_true")
    p.add_argument("--lists", type=int, default=256)
    p.add_argument("--clusters", type=int, default=500)
    a = p.parse_args()
    if a.ivf:
        return ivf(a)
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
    if a.columns_only:
        return columns(a, data, model, q)
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
    if a.columns:
        columns(a, data, model, q)


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
               if os.path.isfile(os.path.join(d, f)))


TS0 = 1_262_304_000_000_000  # 2010-01-01T00:00:00Z in microseconds


def ts_of(row, rng):
    """Row `row`'s `ts`: one second after the previous row's, give or take up to 100 s."""
    return TS0 + row * 1_000_000 + rng.randrange(-100_000_000, 100_000_000)


def columns(a, data, model, q):
    """The cost of attribute columns and filters on them (see the module doc)."""
    rng = random.Random(a.seed + 7)
    ntags = 1000
    weights = [1.0 / (i + 1) for i in range(ntags)]
    attrs = os.path.join(a.dir, "attrs.jsonl")
    counts = [0] * ntags
    with open(attrs, "w") as f:
        for row in range(a.rows):
            tags = set(rng.choices(range(ntags), weights, k=rng.choice((1, 2))))
            for t in tags:
                counts[t] += 1
            f.write('{"year": %d, "ts": %d, "tags": [%s]}\n'
                    % (rng.randrange(1000), ts_of(row, rng),
                       ", ".join('"t%d"' % t for t in sorted(tags))))
    built = {}
    schema = ["--schema", "year:int,ts:timestamp,tags:tags"]
    for name, extra in (("plain", []), ("columns", ["--attributes", attrs, *schema])):
        d = os.path.join(a.dir, "idx-" + name)
        if os.path.exists(d):
            subprocess.run(["rm", "-rf", d], check=True)
        t0 = time.perf_counter()
        subprocess.run([a.codedb, "build", d, "--model", model, "--data", data, *extra],
                       check=True, capture_output=True)
        built[name] = (d, time.perf_counter() - t0, dir_bytes(d))
    plain, cols = built["plain"][0], built["columns"][0]
    base = ["--queries", q, "-k", "10", "--threads", "1"]
    cases = [("unfiltered, no columns", plain, []), ("unfiltered, with columns", cols, [])]
    for sel in (0.001, 0.01, 0.1, 0.5):
        n = int(1000 * sel) if sel >= 0.001 else 1
        cases.append((f"{sel:.1%} `year < {n}`", cols, ["--where", f"year < {n}"]))
        cases.append((f"{sel:.1%} `id < {int(a.rows * sel)}`", cols,
                      ["--where", f"id < {int(a.rows * sel)}"]))
    for sel in (0.01, 0.1, 0.5):
        t = TS0 + int(a.rows * sel) * 1_000_000
        cases.append((f"{sel:.1%} `ts < {t}` (time-ordered)", cols, ["--where", f"ts < {t}"]))
    for rank in (0, 9, 99, 999):
        frac = counts[rank] / a.rows
        cases.append((f"{frac:.2%} `tags HAS 't{rank}'`", cols, ["--where", f"tags HAS 't{rank}'"]))
    best, peer = {}, {}
    for _ in range(a.repeats):
        for name, d, extra in cases:
            t = search_seconds(a.codedb, [d] + base + extra)
            best[name] = min(best.get(name, t), t)
            if a.peer:
                t = search_seconds(a.peer, [d] + base + extra)
                peer[name] = min(peer.get(name, t), t)
    load = os.getloadavg()[0]
    print()
    print(f"With attribute columns: {a.rows} rows, year (int), ts (timestamp, time-ordered) and "
          f"Zipf tags (1,000 tags, 1-2 per row); best of {a.repeats}; load average {load:.1f}; "
          f"{time.strftime('%Y-%m-%d', time.gmtime())}")
    print()
    print("| index | bytes | build s (rows/s) |")
    print("|---|---|---|")
    for name in ("plain", "columns"):
        _, t, b = built[name]
        print(f"| {name} | {b:,} | {t:.1f} ({a.rows / t:,.0f}) |")
    print()
    extra_head = " peer build s |" if a.peer else ""
    print(f"| search | search s | queries/s | vs unfiltered with columns |{extra_head}")
    print("|---|---|---|---|" + ("---|" if a.peer else ""))
    ref = best["unfiltered, with columns"]
    for name, _, _ in cases:
        t = best[name]
        tail = f" {peer[name]:.4f} |" if a.peer else ""
        print(f"| {name} | {t:.4f} | {a.queries / t:,.0f} | {ref / t:.2f}× |{tail}")


def write_clustered(path, rows, dim, centres, rng):
    """Rows drawn around seeded Gaussian centres (spread 4, unit noise), streamed to .npy."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, dim)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        for _ in range(rows):
            c = centres[rng.randrange(len(centres))]
            array.array("f", (x + rng.gauss(0.0, 1.0) for x in c)).tofile(f)


def search_hits(binary, args):
    """Seconds (`--verbose`) and each query's ids, from `codedb search --format json`."""
    import json
    out = subprocess.run([binary, "search", *args, "--verbose", "--format", "json"],
                         capture_output=True, text=True, check=True)
    m = re.search(r"([0-9.]+) s\s*$", out.stderr.strip().splitlines()[-1])
    ids = {r["query"]: {h["id"] for h in r["results"]} for r in json.loads(out.stdout)}
    return float(m.group(1)), ids


def ivf(a):
    """A selective filter with an IVF index against the flat one (see the module doc)."""
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(a.seed)
    dim = 96
    centres = [[rng.gauss(0.0, 4.0) for _ in range(dim)] for _ in range(a.clusters)]
    data, train = (os.path.join(a.dir, n) for n in ("ivf-x.npy", "ivf-train.npy"))
    q = os.path.join(a.dir, f"ivf-q-{a.queries}.npy")
    attrs = os.path.join(a.dir, "ivf-u.jsonl")
    run = lambda *c: subprocess.run([a.codedb, *c], check=True, capture_output=True)
    idx = {"flat": os.path.join(a.dir, "ivf-idx-flat"), "ivf": os.path.join(a.dir, "ivf-idx-ivf")}
    if not os.path.exists(idx["ivf"]):
        write_clustered(data, a.rows, dim, centres, rng)
        write_clustered(train, 20_000, dim, centres, rng)
        with open(attrs, "w") as f:
            for _ in range(a.rows):
                f.write('{"u": %d}\n' % rng.randrange(a.rows))
        for name, spec in (("flat", "pq:16x8"), ("ivf", f"ivf:{a.lists},pq:16x8")):
            m = os.path.join(a.dir, f"ivf-{name}.model")
            run("train", "--data", train, "--pipeline", spec, "--out", m, "--seed", str(a.seed))
            run("build", idx[name], "--model", m, "--data", data, "--store-vectors", "f32",
                "--attributes", attrs)
    if not os.path.exists(q):
        write_clustered(q, a.queries, dim, centres, random.Random(a.seed + 1))
    base = ["--queries", q, "-k", "10", "--threads", "1"]
    cases = []
    for sel in (0.001, 0.01, 0.1):
        w = ["--where", f"u < {int(a.rows * sel)}"]
        cases.append((sel, "exact", a.codedb, idx["flat"], w + ["--mode", "exact"]))
        cases.append((sel, "flat, rerank 40", a.codedb, idx["flat"], w + ["--rerank", "40"]))
        for n in (1, 4, 16):
            extra = w + ["--nprobe", str(n), "--rerank", "40"]
            cases.append((sel, f"IVF nprobe {n}, rerank 40", a.codedb, idx["ivf"], extra))
            if a.peer:
                cases.append((sel, f"IVF nprobe {n}, rerank 40 (peer build)", a.peer, idx["ivf"],
                              extra))
    best, found = {}, {}
    for _ in range(a.repeats):
        for sel, name, binary, d, extra in cases:
            t, ids = search_hits(binary, [d] + base + extra)
            best[sel, name] = min(best.get((sel, name), t), t)
            found[sel, name] = ids
    load = os.getloadavg()[0]
    print(f"{a.rows} clustered 96-D rows ({a.clusters} centres), f32 vectors stored, "
          f"ivf:{a.lists},pq:16x8 against pq:16x8; {a.queries} queries, k = 10, 1 thread, best "
          f"of {a.repeats}; load average {load:.1f}; {time.strftime('%Y-%m-%d', time.gmtime())}")
    print()
    print("| filter | search | search s | queries/s | recall@10 |")
    print("|---|---|---|---|---|")
    for sel, name, *_ in cases:
        truth = found[sel, "exact"]
        got = found[sel, name]
        r = sum(len(got.get(k, set()) & v) / max(1, min(10, len(v))) for k, v in truth.items())
        r /= max(1, len(truth))
        t = best[sel, name]
        qps = f"{a.queries / t:,.0f}" if t > 0 else "–"
        print(f"| {sel:.1%} `u < {int(a.rows * sel)}` | {name} | {t:.4f} | {qps} | {r:.3f} |")


if __name__ == "__main__":
    main()
