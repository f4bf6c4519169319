#!/usr/bin/env python3
"""Stored tag postings and zone maps (format 1.8, FORMAT.md §3.8) against the same indexes
built in memory on first use (a format 1.7 segment): size and first-query latency (standard
library only).

Writes ROWS random Gaussian 16-D rows (seeded), trains `lsh:64` on the first 20,000 and builds
one index with the filter-track columns of tools/bench_filter.py — `year`, an int uniform in
0..999; `ts`, a timestamp increasing with the row's id (one second apart, a seeded jitter of up
to 100 s); `score`, a float uniform in [0, 100); `tags`, one or two of 1,000 tags drawn from a
Zipf law, P(tag i) ∝ 1/(i+1) — then copies it and rewrites the copy's segments as format 1.7
files: the same bytes without the sections `attribute_postings` and `attribute_zones`, so this
build reads the copy as it reads a 1.7 index and builds the indexes from the columns on the
first filter. Prints:

- per section, bytes and bytes per row (the stored indexes beside the columns they index);
- for each filter, the first query on a freshly opened index — every `codedb search` is a new
  process, so its one query pays the first touch of the segment's columns and indexes — with
  the stored indexes and with the built ones in the same loop (best and median of REPEATS,
  the search alone as `--verbose` reports it, and the process's wall time).

    python3 tools/bench_attribute_index.py --codedb target/release/codedb --dir /tmp/ab [--rows 1000000]
"""

import argparse
import os
import random
import shutil
import statistics
import struct
import subprocess
import time
import zlib

from bench_filter import search_seconds, ts_of, write_npy

SEG_POSTINGS, SEG_ZONES, SEG_ATTRIBUTES = 12, 13, 11


def sections(path):
    """(kind, flags, stored bytes) of every section of a codedb container."""
    b = open(path, "rb").read()
    table, count = struct.unpack_from("<QI", b, len(b) - 32)
    out = []
    for i in range(count):
        kind, flags, off, stored = struct.unpack_from("<IIQQ", b, table + 48 * i)
        out.append((kind, flags, b[off:off + stored], b[table + 48 * i:table + 48 * (i + 1)]))
    return b, out


def as_1_7(path):
    """Rewrites segment `path` as format 1.7 wrote it: without sections 12 and 13."""
    b, secs = sections(path)
    header = bytearray(b[:64])
    header[10:12] = struct.pack("<H", 7)
    header[60:64] = struct.pack("<I", zlib.crc32(bytes(header[:60])))
    out = bytearray(header)
    table = bytearray()
    for kind, _, data, entry in secs:
        if kind in (SEG_POSTINGS, SEG_ZONES):
            continue
        entry = bytearray(entry)
        struct.pack_into("<Q", entry, 8, len(out))
        table += entry
        out += data
        out += b"\0" * (-len(out) % 64)
    table_offset = len(out)
    trailer = bytearray(struct.pack("<QIB3x8s4x", table_offset, len(table) // 48, 1, b"CDB-END\n"))
    trailer += struct.pack("<I", zlib.crc32(bytes(table + trailer)))
    os.chmod(path, 0o644)
    with open(path, "wb") as f:
        f.write(out + table + trailer)
    os.chmod(path, 0o444)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--codedb", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(a.seed)
    dim = 16
    data, train, q = (os.path.join(a.dir, n) for n in ("x.npy", "train.npy", "q.npy"))
    model, attrs = os.path.join(a.dir, "m.model"), os.path.join(a.dir, "attrs.jsonl")
    stored, built = os.path.join(a.dir, "idx-1.8"), os.path.join(a.dir, "idx-1.7")
    run = lambda *c: subprocess.run([a.codedb, *c], check=True, capture_output=True)
    if not os.path.exists(data):
        write_npy(data, a.rows, dim, rng)
        write_npy(train, 20_000, dim, rng)
        write_npy(q, 1, dim, random.Random(a.seed + 1))
        ntags = 1000
        weights = [1.0 / (i + 1) for i in range(ntags)]
        crng = random.Random(a.seed + 7)
        with open(attrs, "w") as f:
            for row in range(a.rows):
                tags = set(crng.choices(range(ntags), weights, k=crng.choice((1, 2))))
                f.write('{"year": %d, "ts": %d, "score": %.3f, "tags": [%s]}\n'
                        % (crng.randrange(1000), ts_of(row, crng), crng.random() * 100,
                           ", ".join('"t%d"' % t for t in sorted(tags))))
        run("train", "--data", train, "--pipeline", "lsh:64", "--out", model)
    for d in (stored, built):
        shutil.rmtree(d, ignore_errors=True)
    run("build", stored, "--model", model, "--data", data, "--attributes", attrs,
        "--schema", "year:int,ts:timestamp,score:float,tags:tags")
    shutil.copytree(stored, built)
    segs = sorted(f for f in os.listdir(built) if f.endswith(".seg"))
    for f in segs:
        as_1_7(os.path.join(built, f))
    size = {SEG_ATTRIBUTES: 0, SEG_POSTINGS: 0, SEG_ZONES: 0}
    for f in segs:
        for kind, _, data_, _ in sections(os.path.join(stored, f))[1]:
            if kind in size:
                size[kind] += len(data_)
    total = sum(os.path.getsize(os.path.join(stored, f)) for f in os.listdir(stored))
    load = os.getloadavg()[0]
    print(f"{a.rows} rows in {len(segs)} segment(s); year (int), ts (timestamp, time-ordered), "
          f"score (float), Zipf tags (1,000 tags, 1-2 per row); load average {load:.1f}; "
          f"{time.strftime('%Y-%m-%d')}\n")
    print("| section | bytes | bytes per row |\n|---|---|---|")
    for name, k in (("attributes (the columns)", SEG_ATTRIBUTES),
                    ("attribute_postings (tags)", SEG_POSTINGS),
                    ("attribute_zones (year, ts, score)", SEG_ZONES)):
        print(f"| {name} | {size[k]:,} | {size[k] / a.rows:.2f} |")
    print(f"| whole index (1.8) | {total:,} | {total / a.rows:.2f} |\n")
    t1 = ts_of(a.rows // 100, random.Random(0))
    filters = [("unfiltered", []), ("`tags HAS 't9'`", ["--where", "tags HAS 't9'"]),
               ("`tags HAS 't999'`", ["--where", "tags HAS 't999'"]),
               (f"`ts < {t1}` (1 %)", ["--where", f"ts < {t1}"]),
               ("`year < 10`", ["--where", "year < 10"]),
               ("`score < 1.0`", ["--where", "score < 1.0"])]
    times = {(f, d): [] for f, _ in filters for d in ("stored", "built")}
    walls = {(f, d): [] for f, _ in filters for d in ("stored", "built")}
    for _ in range(a.repeats):
        for f, w in filters:
            for d, path in (("stored", stored), ("built", built)):
                args = [path, "--queries", q, "-k", "10", "--threads", "1", *w]
                t0 = time.perf_counter()
                times[(f, d)].append(search_seconds(a.codedb, args))
                walls[(f, d)].append(time.perf_counter() - t0)
    print(f"First query on a freshly opened index, best / median of {a.repeats} (search s as "
          "`--verbose` reports it; process wall s)\n")
    print("| filter | stored (1.8) search s | built (1.7) search s | built / stored "
          "| stored wall s | built wall s |\n|---|---|---|---|---|---|")
    for f, _ in filters:
        s, b = times[(f, "stored")], times[(f, "built")]
        ratio = statistics.median(b) / max(statistics.median(s), 1e-9)
        print(f"| {f} | {min(s):.4f} / {statistics.median(s):.4f} "
              f"| {min(b):.4f} / {statistics.median(b):.4f} | {ratio:.2f}× "
              f"| {statistics.median(walls[(f, 'stored')]):.3f} "
              f"| {statistics.median(walls[(f, 'built')]):.3f} |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
