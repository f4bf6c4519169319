#!/usr/bin/env python3
"""CCA-ITQ against PCA-ITQ on class-label retrieval: the ITQ paper's Fig. 11 (Gong et al. TPAMI
2013 §5.2), on the data sets this machine has.

The paper's "clean" protocol: the database rows' class labels train the CCA embedding; 1,000
queries held out; a result is relevant when it has the query's class; the score is the average
precision of the first 500 results, ranked by Hamming distance (codes) or Euclidean distance
(uncompressed). Its claims, checked here:

1. CCA-ITQ > PCA-ITQ at every code length.
2. Beyond 32 bits CCA-ITQ beats the uncompressed CCA embedding it was computed from.

Every figure comes from `codedb eval --task retrieve --json` (precision_at_k), one run per set:

- `fashion_mnist`: pixels (784-D), the official split (queries drawn from the 10,000 test rows,
  database = the 60,000 training rows), 10 classes;
- `openclipart`: HOG + colour (1696-D), 22 folder labels, 1,000 queries drawn at random.

Pipelines at each length B: `pca:B,itq,bits` (PCA-ITQ), `cca:B,itq,bits` (CCA-ITQ: directions
scaled by their canonical correlations, then ITQ; past the labels' rank the extra directions are
zero rows), and `cca:B,rr,float` (the same scaled embedding, randomly rotated, uncompressed: a
rotation does not change distances, so this is "uncompressed CCA" at B dimensions). CCA's ρ is
chosen on held-out database rows (`--cca-rho auto`) unless `--cca-rho` says otherwise.

Usage:
    DATASETS_OUT=/tmp/datasets bash ../shared/datasets/export.sh fashion_mnist openclipart
    cargo build --release
    python3 tools/cca_itq_classes.py --datasets /tmp/datasets --bits 16,32,64,128,256 --seed 1

Standard library only; prints a Markdown table per set and the claims, and writes --json.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SETS = {
    "fashion_mnist": {"data": "pixels.npy", "labels": "labels.npy", "split": "split.npy"},
    "openclipart": {"data": "hogcolor.npy", "labels": "labels.npy", "split": None},
}


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", required=True, help="the export root (holds <set>/)")
    ap.add_argument("--sets", default="fashion_mnist,openclipart", help="comma-separated")
    ap.add_argument("--bits", default="16,32,64,128,256", help="code lengths B")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("-k", type=int, default=500, help="precision@k (the paper: 500)")
    ap.add_argument("--cca-rho", default="auto", help="as `codedb eval --cca-rho`")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--codedb", default=os.path.join(ROOT, "target", "release", "codedb"))
    ap.add_argument("--json", help="write every score here")
    return ap.parse_args()


def pipelines(bits):
    out = []
    for b in bits:
        out += [f"pca:{b},itq,bits", f"cca:{b},itq,bits", f"cca:{b},rr,float"]
    return out


def evaluate(a, name, bits):
    spec = SETS[name]
    d = os.path.join(a.datasets, name)
    cmd = [a.codedb, "eval", "--task", "retrieve", "--data", os.path.join(d, spec["data"]),
           "--labels", os.path.join(d, spec["labels"]), "--pipelines", "; ".join(pipelines(bits)),
           "--queries", str(a.queries), "-k", str(a.k), "--seed", str(a.seed),
           "--cca-rho", a.cca_rho, "--json"]
    if spec["split"]:
        cmd += ["--split", os.path.join(d, spec["split"])]
    print("$ " + " ".join(cmd), file=sys.stderr)
    t = time.time()
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    print(f"  {time.time() - t:.0f} s", file=sys.stderr)
    return {p["pipeline"]: p for p in json.loads(r.stdout)}


def precision(scores, spec):
    p = scores[spec]
    v = p.get("precision_at_k")
    if v is None:
        sys.exit(f"{spec}: no precision_at_k in codedb eval's output: {sorted(p)}")
    return v


def main():
    a = args()
    bits = [int(b) for b in a.bits.split(",")]
    results = {}
    for name in a.sets.split(","):
        scores = evaluate(a, name, bits)
        rows = {
            "PCA-ITQ": [precision(scores, f"pca:{b},itq,bits") for b in bits],
            "CCA-ITQ": [precision(scores, f"cca:{b},itq,bits") for b in bits],
            "CCA (uncompressed, scaled)": [precision(scores, f"cca:{b},rr,float") for b in bits],
        }
        results[name] = {"bits": bits, "precision_at_k": rows}
        print(f"\n{name}: class precision@{a.k} ({a.queries} queries, seed {a.seed})\n")
        print("| embedding | " + " | ".join(f"{b} bits" for b in bits) + " |")
        print("|---|" + "---:|" * len(bits))
        for k, v in rows.items():
            print(f"| {k} | " + " | ".join(f"{x:.3f}" for x in v) + " |")
        c1 = [c > p for c, p in zip(rows["CCA-ITQ"], rows["PCA-ITQ"])]
        print(f"\nClaim 1, CCA-ITQ > PCA-ITQ at every length: "
              f"{'holds' if all(c1) else 'does not hold'} "
              f"({sum(c1)} of {len(bits)} lengths).")
        big = [i for i, b in enumerate(bits) if b > 32]
        c2 = [rows["CCA-ITQ"][i] > rows["CCA (uncompressed, scaled)"][i] for i in big]
        print(f"Claim 2, beyond 32 bits CCA-ITQ > uncompressed CCA: "
              f"{'holds' if big and all(c2) else 'does not hold'} "
              f"({sum(c2)} of {len(big)} lengths above 32).")
        results[name]["claims"] = {"cca_itq_beats_pca_itq": c1, "cca_itq_beats_float_above_32": c2}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
