#!/usr/bin/env python3
"""Novel-category search with PiCoDes (Bergamo, Torresani, Fitzgibbon NIPS 2011, §3, Figs. 5-6),
on data we have.

- **Classes**: the data set's classes are split in two with the seed: *training classes*
  (`--train-classes`, default half) learn the codes, *novel classes* are never seen by any model.
- **Model training set**: the split-0 rows of the training classes (all their rows with
  `--database all`; `--sample` of them, seeded, through `codedb train --sample`).
- **Database**: the split-1 rows of the novel classes. **Examples**: split-0 rows of the novel
  classes (never in the database). With `--database all` (small classes: openclipart's
  sub-folders) every novel row is in the database, the examples are drawn from them and left
  out of the ranking, and a class is queried with p positives only if it has more than p rows.
- **Query** (for each novel class c, each p in `--p`, `--trials` draws): p positives of class c
  and p negatives of every other novel class, `codedb search --examples pos --negatives neg -k
  K` (an SVM learned at query time on the examples' codes, every database row scored through
  the LUT kernel). Measures: precision@25 (Fig. 5) and precision@K for K = 10 … 1000 (Fig. 6),
  averaged over classes and trials.
- **Codes** at each length C in `--bits`, all after the same explicit χ² map (`hom:chi2`, the
  paper's ψ; its features are non-negative histograms):
  `picodes` = `hom:chi2,pca:P,picodes:C`; `lsh` = `hom:chi2,center,proj:C,bits`;
  `pca-itq` = `hom:chi2,pca:C,itq,bits`; `classemes` = `hom:chi2,pca:P,classemes:C` (the
  paper's classeme baseline at equal bits: one thresholded SVM per training class plus SVMs of
  seeded random dichotomies of the training classes, 2C candidates, multi-class RFE to C;
  src/model/supervised/classemes.rs).

Usage:
    python3 tools/picodes_novel.py --data /tmp/datasets/fashion_mnist --features hog \\
        --bits 64,128,256 --p 1,3,5,10,25 --trials 3 --sample 6000 --seed 1 [--json out.json]
    python3 tools/picodes_novel.py --data /tmp/datasets/openclipart --features hogcolor \\
        --labels labels_sub.npy --database all --bits 64,128,256 --p 1,3,5,10 --trials 3 \\
        --sample 6900 --seed 1

Runs inside its own venv (tools/_venv.py) with numpy; uses target/release/codedb (built if
missing).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _venv import ensure  # noqa: E402

ensure(["numpy"])

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUTOFFS = [10, 25, 50, 100, 250, 500, 1000]


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def specs(c, pca):
    return {
        "picodes": f"hom:chi2,pca:{pca},picodes:{c}",
        "lsh": f"hom:chi2,center,proj:{c},bits",
        "pca-itq": f"hom:chi2,pca:{c},itq,bits",
        "classemes": f"hom:chi2,pca:{pca},classemes:{c}",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="an exported data set folder")
    ap.add_argument("--features", default="hog", help="feature file name without .npy")
    ap.add_argument("--labels", default="labels.npy", help="label file in --data")
    ap.add_argument("--train-classes", type=int, default=None,
                    help="number of training classes (default: half)")
    ap.add_argument("--bits", default="64,128,256")
    ap.add_argument("--p", default="1,3,5,10,25")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--sample", type=int, default=6000, help="model training rows")
    ap.add_argument("--pca", type=int, default=256, help="PCA dimension before picodes")
    ap.add_argument("--rounds", type=int, default=None,
                    help="PiCoDes rounds (default: codedb's)")
    ap.add_argument("--picodes-c", type=float, default=None,
                    help="PiCoDes' λ, --picodes-c of codedb train (default: codedb's)")
    ap.add_argument("--methods", default="picodes,lsh,pca-itq,classemes")
    ap.add_argument("--database", default="test", choices=["test", "all"],
                    help="test: the novel classes' split-1 rows (examples from split 0); all: "
                         "every novel row, the examples drawn from them and left out of the "
                         "ranking (small classes, openclipart)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--codedb", default=os.path.join(ROOT, "target", "release", "codedb"))
    ap.add_argument("--json", default=None, help="write the results here")
    a = ap.parse_args()
    if not os.path.exists(a.codedb):
        run(["cargo", "build", "--release", "-p", "codedb-cli"])
    x = np.load(os.path.join(a.data, a.features + ".npy")).astype(np.float32)
    y = np.load(os.path.join(a.data, a.labels)).astype(np.int64)
    split = np.load(os.path.join(a.data, "split.npy"))
    rng = np.random.default_rng(a.seed)
    classes = np.unique(y)
    perm = rng.permutation(classes)
    kt = a.train_classes or len(classes) // 2
    train_cls, novel_cls = np.sort(perm[:kt]), np.sort(perm[kt:])
    # The training classes never reach the database: with --database all they learn from
    # every row, otherwise from the split-0 rows.
    learn = np.flatnonzero(np.isin(y, train_cls) & ((split == 0) | (a.database == "all")))
    if a.database == "all":
        db = np.flatnonzero(np.isin(y, novel_cls))
        ex = db
    else:
        db = np.flatnonzero(np.isin(y, novel_cls) & (split != 0))
        ex = np.flatnonzero(np.isin(y, novel_cls) & (split == 0))
    pos_in_db = {int(r): j for j, r in enumerate(db)}
    print(f"training classes {list(train_cls)} ({len(learn)} rows), novel classes "
          f"{list(novel_cls)}: database {len(db)} rows, example pool {len(ex)} rows",
          file=sys.stderr)
    bits = [int(b) for b in a.bits.split(",")]
    ps = [int(p) for p in a.p.split(",")]
    methods = a.methods.split(",")
    kmax = min(max(CUTOFFS), len(db))
    results = []
    with tempfile.TemporaryDirectory() as work:
        np.save(os.path.join(work, "learn.npy"), x[learn])
        np.save(os.path.join(work, "learn_labels.npy"), y[learn])
        np.save(os.path.join(work, "db.npy"), x[db])
        # The queries, drawn once so every method answers the same ones.
        queries = []
        for t in range(a.trials):
            for c in novel_cls:
                for p in ps:
                    # A class needs p examples (and, with --database all, rows left to find).
                    if np.sum(y[ex] == c) < p + (1 if a.database == "all" else 0):
                        continue
                    pos = rng.choice(ex[y[ex] == c], p, replace=False)
                    neg = np.concatenate([
                        rng.choice(ex[y[ex] == o], min(p, int(np.sum(y[ex] == o))), replace=False)
                        for o in novel_cls if o != c])
                    qp = os.path.join(work, f"pos_{t}_{c}_{p}.npy")
                    qn = os.path.join(work, f"neg_{t}_{c}_{p}.npy")
                    np.save(qp, x[pos])
                    np.save(qn, x[neg])
                    drop = {pos_in_db[int(r)] for r in np.concatenate([pos, neg])
                            if int(r) in pos_in_db} if a.database == "all" else set()
                    queries.append((t, c, p, qp, qn, drop))
        for c in bits:
            for m in methods:
                spec = specs(c, a.pca)[m]
                model = os.path.join(work, "m.model")
                t0 = time.time()
                run([a.codedb, "train", "--data", os.path.join(work, "learn.npy"), "--labels",
                     os.path.join(work, "learn_labels.npy"), "--pipeline", spec,
                     "--sample", str(min(a.sample, len(learn))), "--seed", str(a.seed),
                     "--out", model, "--force"]
                    + (["--picodes-rounds", str(a.rounds)] if a.rounds else [])
                    + (["--picodes-c", str(a.picodes_c)] if a.picodes_c else []))
                train_s = time.time() - t0
                idx = os.path.join(work, "idx")
                run(["rm", "-rf", idx])
                run([a.codedb, "build", idx, "--model", model, "--data",
                     os.path.join(work, "db.npy")])
                prec = {p: np.zeros(len(CUTOFFS)) for p in ps}
                counts = {p: 0 for p in ps}
                t0 = time.time()
                for (t, cls, p, qp, qn, drop) in queries:
                    k = min(kmax + len(drop), len(db))
                    out = run([a.codedb, "search", idx, "--examples", qp, "--negatives", qn,
                               "-k", str(k), "--format", "json", "--seed", str(t)])
                    hits = json.loads(out)[0]["results"]
                    ids = np.array([h["id"] for h in hits if h["id"] not in drop][:kmax],
                                   dtype=np.int64)
                    rel = (y[db[ids]] == cls).astype(np.float64)
                    prec[p] += [rel[:k].mean() if k <= len(rel) else np.nan for k in CUTOFFS]
                    counts[p] += 1
                query_s = (time.time() - t0) / len(queries)
                row = {"method": m, "spec": spec, "bits": c, "train_s": round(train_s, 2),
                       "query_s": round(query_s, 3),
                       "precision": {p: list(np.round(prec[p] / counts[p], 4)) for p in ps}}
                results.append(row)
                p25 = " ".join(f"p={p}:{prec[p][1] / counts[p]:.3f}" for p in ps)
                print(f"{m:8s} {c:4d} bits  precision@25 {p25}  (train {train_s:.0f} s)",
                      file=sys.stderr)
    summary = {"data": a.data, "features": a.features, "train_classes": [int(v) for v in train_cls],
               "novel_classes": [int(v) for v in novel_cls], "learn_rows": int(len(learn)),
               "database_rows": int(len(db)), "cutoffs": CUTOFFS, "results": results}
    print("\nprecision@25 (Fig. 5): rows = method @ bits, columns = positives p")
    print("| method | bits | " + " | ".join(f"p = {p}" for p in ps) + " |")
    print("|---|---:|" + "---:|" * len(ps))
    for r in results:
        print(f"| {r['method']} | {r['bits']} | "
              + " | ".join(f"{r['precision'][p][1]:.3f}" for p in ps) + " |")
    pbig = max(ps)
    print(f"\nprecision@K with p = {pbig} (Fig. 6)")
    print("| method | bits | " + " | ".join(f"K = {k}" for k in CUTOFFS) + " |")
    print("|---|---:|" + "---:|" * len(CUTOFFS))
    for r in results:
        print(f"| {r['method']} | {r['bits']} | "
              + " | ".join(f"{v:.3f}" for v in r["precision"][pbig]) + " |")
    print("\nclaim: PiCoDes > every baseline at every length (precision@25, every p)")
    for c in bits:
        by = {r["method"]: r for r in results if r["bits"] == c}
        if "picodes" not in by:
            continue
        for p in ps:
            mine = by["picodes"]["precision"][p][1]
            best = max((r["precision"][p][1], m) for m, r in by.items() if m != "picodes")
            verdict = "holds" if mine > best[0] else "does not hold"
            print(f"  {c} bits, p = {p}: picodes {mine:.3f} vs best baseline {best[1]} "
                  f"{best[0]:.3f}: {verdict}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1, default=float)


if __name__ == "__main__":
    main()
