#!/usr/bin/env python3
"""Reproduces the ITQ paper's claims (Gong et al., TPAMI 2013, §4.3 and §6.2) on Fashion-MNIST
with `codedb eval`, and prints the full table with a verdict per claim. Not part of CI.

    cargo build --release
    python3 tools/claims.py                                  # defaults below, ~15-30 min on 2 cores
    python3 tools/claims.py --queries 200 --bits 32,64      # a quick look

It runs `codedb eval --data DIR --pipelines "<method>:<bits>; ..." --json` for every code length
(32, 64, 128, 256 bits) and method (lsh, pca-direct, pca-rr, pca-itq, sklsh, kpca-itq), on the
official split (database = the 60,000 training images, queries = --queries random test images
per run), and scores both protocols of §4.2: Euclidean-neighbour mAP and class precision@500.
Only the standard library is needed. `--save FILE` keeps the raw JSON; `--load FILE` re-prints
the table and verdicts from it without running anything.

Claims checked (each one's verdict is computed from the numbers, never asserted):
1. PCA-ITQ >= PCA-RR > PCA-Direct at 64 and 128 bits (Euclidean mAP; Fig. 5a);
2. PCA-ITQ > LSH at 32-128 bits (Euclidean mAP; Fig. 5a);
3. LSH and SKLSH improve steadily with the number of bits (Euclidean mAP; Fig. 5a);
4. KPCA-ITQ >= PCA-ITQ on class precision@500 at 128 and 256 bits (Fig. 13b);
5. ITQ's quantisation loss decreases monotonically over the iterations (§3.2).
"""
import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ["lsh", "pca-direct", "pca-rr", "pca-itq", "sklsh", "kpca-itq"]


def run(args):
    results = {}
    for bits in args.bits:
        specs = "; ".join(f"{m}:{bits}" for m in args.methods)
        cmd = [args.codedb, "eval", "--data", args.data, "--pipelines", specs,
               "--queries", str(args.queries), "--runs", str(args.runs),
               "--seed", str(args.seed), "--json"]
        if args.labels:
            cmd += ["--labels", args.labels]
        if args.train_sample:
            cmd += ["--train-sample", str(args.train_sample)]
        print(f"[{time.strftime('%H:%M:%S')}] {' '.join(cmd)}", file=sys.stderr)
        t = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        print(f"  {time.perf_counter() - t:.0f} s", file=sys.stderr)
        for row in json.loads(out):
            results[row["pipeline"]] = row
    return results


def table(results, bits, key, title):
    lines = [f"**{title}**", "", "| method | " + " | ".join(f"{b} bits" for b in bits) + " |",
             "|---|" + "---:|" * len(bits)]
    for m in METHODS:
        cells = []
        for b in bits:
            r = results.get(f"{m}:{b}")
            cells.append("—" if r is None or r.get(key) is None else f"{r[key]:.4f}")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdicts(results, bits):
    def v(m, b, key="map_euclid"):
        r = results.get(f"{m}:{b}")
        return None if r is None else r.get(key)

    out = []

    def claim(text, rows):
        rows = [r for r in rows if r[1] is not None]
        if not rows:
            out.append((text, "not run", ""))
            return
        ok = all(r[1] for r in rows)
        detail = "; ".join(r[0] for r in rows)
        out.append((text, "holds" if ok else "does NOT hold", detail))

    rows = []
    for b in (64, 128):
        itq, rr, d = v("pca-itq", b), v("pca-rr", b), v("pca-direct", b)
        if None not in (itq, rr, d):
            rows.append((f"{b} bits: ITQ {itq:.4f}, RR {rr:.4f}, Direct {d:.4f}",
                         itq >= rr and rr > d))
    claim("PCA-ITQ >= PCA-RR > PCA-Direct at 64-128 bits (Euclidean mAP)", rows)
    rows = []
    for b in (32, 64, 128):
        itq, lsh = v("pca-itq", b), v("lsh", b)
        if None not in (itq, lsh):
            rows.append((f"{b} bits: ITQ {itq:.4f}, LSH {lsh:.4f}", itq > lsh))
    claim("PCA-ITQ > LSH at <= 128 bits (Euclidean mAP)", rows)
    for m in ("lsh", "sklsh"):
        seq = [(b, v(m, b)) for b in bits if v(m, b) is not None]
        if len(seq) >= 2:
            inc = all(b2[1] > b1[1] for b1, b2 in zip(seq, seq[1:]))
            claim(f"{m.upper()} improves with bits (Euclidean mAP)",
                  [(" -> ".join(f"{b}: {x:.4f}" for b, x in seq), inc)])
    rows = []
    for b in (128, 256):
        k, p = v("kpca-itq", b, "precision_at_k"), v("pca-itq", b, "precision_at_k")
        if None not in (k, p):
            rows.append((f"{b} bits: KPCA-ITQ {k:.4f}, PCA-ITQ {p:.4f}", k >= p))
    claim("KPCA-ITQ >= PCA-ITQ class P@500 at >= 128 bits", rows)
    rows = []
    for name, r in sorted(results.items()):
        loss = r.get("itq_loss") or []
        if loss:
            worst = max((b - a) / a for a, b in zip(loss, loss[1:]))
            rows.append((f"{name}: {loss[0]:.1f} -> {loss[-1]:.1f}, largest relative rise "
                         f"{max(worst, 0):.1e}", worst <= 1e-9))
    claim("ITQ quantisation loss decreases monotonically", rows)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--labels", help="class labels when --data is not a Fashion-MNIST directory")
    ap.add_argument("--bits", default="32,64,128,256",
                    type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--methods", default=",".join(METHODS), type=lambda s: s.split(","))
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--train-sample", type=int, default=20000,
                    help="training rows sampled from the database (0 = all)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--codedb", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "release", "codedb"))
    ap.add_argument("--save")
    ap.add_argument("--load")
    args = ap.parse_args()
    if args.load:
        with open(args.load) as f:
            results = json.load(f)
    else:
        results = run(args)
        if args.save:
            with open(args.save, "w") as f:
                json.dump(results, f, indent=1)
    print(table(results, args.bits, "map_euclid", "Euclidean-neighbour mAP (ITQ §4.2)"))
    print()
    print(table(results, args.bits, "precision_at_k", "Class-label precision@500"))
    print()
    print(table(results, args.bits, "map_class", "Class-label mAP"))
    print()
    print("| claim | verdict | numbers |")
    print("|---|---|---|")
    for text, verdict, detail in verdicts(results, args.bits):
        print(f"| {text} | {verdict} | {detail} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
