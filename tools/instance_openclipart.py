#!/usr/bin/env python3
"""Instance retrieval on openclipart, the shape of Gordo et al. CVPR 2012's protocol (issue 15).

The paper learns projections from category labels (ImageNet) and measures instance retrieval on
Holidays / UKB. Here:

- **Instance set** (UKB-like): `--instances` drawings chosen with the seed from the openclipart
  export (../shared/DATASETS.md), each rendered in 4 variants from its PNG — (0) as exported,
  (1) zoomed out to 70 % on a transparent canvas, (2) a random 80 % crop, (3) rotated by a random
  5-15 degrees with its hue shifted by a random 0.05-0.15 turn and saturation scaled by 0.7-1.3 —
  and described with the export's own recipe (`_common.colour_features`, `hogcolor`, 1696-D).
  Drawings above 16 Mpixel are never chosen (the export renders those from their SVG).
- **Learning set**: every other drawing's export row (`hogcolor.npy`) with its sub-folder label
  (`labels_sub.npy`), leaving out sub-folders with fewer than `--min-class-rows` (10) rows, too
  few for the validation splits of metric / JSCL: no instance drawing is learned from.
- **Measures**: every variant is a query against the 4 × N variants (itself included, as UKB
  counts it): **4×recall@4** (UKB's score: how many of the drawing's 4 variants are in the first
  4, 4 = perfect) and **mAP** Holidays-style (the query itself left out, 3 relevant images, over
  the first `--depth` results). With `--distractors`, every learning-set row is added to the
  database too (the paper's Fig. 3 adds Flickr images; these are the learning images themselves,
  the only other openclipart rows).
- **Pipelines**: `pca:R`, `metric:R`, `attributes:R`, `cca:R` (one-hot labels: R < classes) and
  `jscl:R`, each before `float` (uncompressed) and `pq:(R/8)x8` (the paper's 8-D sub-vectors ×
  8 bits: R bits per image), trained by `codedb train --labels` on the learning set.

Usage (the export takes minutes, once):
    DATASETS_OUT=/tmp/datasets bash ../shared/datasets/export.sh openclipart
    python3 tools/instance_openclipart.py --export /tmp/datasets/openclipart \\
        --instances 1000 --dims 16,32,64,128 --seed 1 [--distractors] [--json out.json]

Runs inside its own venv (tools/_venv.py) with numpy, scipy, scikit-image and Pillow.
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

ensure(["numpy", "scipy", "scikit-image", "pillow"])

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METHODS = ["pca", "metric", "attributes", "cca", "jscl"]
MAX_PNG_PIXELS = 16_000_000


def args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--export", required=True, help="the openclipart export directory")
    ap.add_argument("--png-root", help="the PNGs (default: the export's Debian unpack)")
    ap.add_argument("--datasets-code", default=os.path.join(ROOT, "..", "shared", "datasets"),
                    help="where _common.py (the feature recipe) lives")
    ap.add_argument("--instances", type=int, default=1000, help="drawings in the instance set")
    ap.add_argument("--dims", default="16,32,64,128", help="R values, comma-separated")
    ap.add_argument("--methods", default=",".join(METHODS), help="projections, comma-separated")
    ap.add_argument("--cca-rho", default="",
                    help="ρ values of cca:R, comma-separated (default: codedb's, 1e-4)")
    ap.add_argument("--min-class-rows", type=int, default=10,
                    help="leave sub-folders with fewer learning rows out of the learning set")
    ap.add_argument("--depth", type=int, default=100, help="results ranked per query (mAP depth)")
    ap.add_argument("--seed", type=int, default=1, help="seed of every random choice")
    ap.add_argument("--distractors", action="store_true", help="add the learning set to the database")
    ap.add_argument("--no-pq", action="store_true", help="uncompressed pipelines only")
    ap.add_argument("--work", help="directory for the instance set and indexes (default: a temp dir)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the sets already in --work (same --instances, --seed)")
    ap.add_argument("--codedb", default=os.path.join(ROOT, "target", "release", "codedb"),
                    help="the codedb binary")
    ap.add_argument("--json", help="also write the results as JSON here")
    return ap.parse_args()


def variants(path, rng, common):
    """The 4 variants of one drawing, each (64, 64, 4) uint8 RGBA as the export makes them."""
    im = Image.open(path).convert("RGBA")
    w, h = im.size
    out = [common.load_image_square(path, 64)]
    # (1) zoomed out: the drawing at 70 % in the middle of its own square canvas.
    s = max(w, h)
    canvas = Image.new("RGBA", (s, s), (255, 255, 255, 0))
    small = im.resize((max(1, round(w * 0.7)), max(1, round(h * 0.7))), Image.LANCZOS)
    canvas.paste(small, ((s - small.width) // 2, (s - small.height) // 2))
    out.append(square64(canvas))
    # (2) a random 80 % crop.
    cw, ch = max(1, round(w * 0.8)), max(1, round(h * 0.8))
    x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    out.append(square64(im.crop((x0, y0, x0 + cw, y0 + ch))))
    # (3) rotated, hue shifted, saturation scaled.
    angle = float(rng.uniform(5, 15)) * (1 if rng.random() < 0.5 else -1)
    rot = im.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=(255, 255, 255, 0))
    out.append(colour_jitter(square64(rot), rng))
    return out


def square64(im):
    w, h = im.size
    s = max(w, h)
    canvas = Image.new("RGBA", (s, s), (255, 255, 255, 0))
    canvas.paste(im, ((s - w) // 2, (s - h) // 2))
    return np.asarray(canvas.resize((64, 64), Image.LANCZOS), dtype=np.uint8)


def colour_jitter(rgba, rng):
    from skimage.color import hsv2rgb, rgb2hsv

    hsv = rgb2hsv(rgba[..., :3].astype(np.float64) / 255.0)
    hsv[..., 0] = (hsv[..., 0] + rng.uniform(0.05, 0.15)) % 1.0
    hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(0.7, 1.3), 0, 1)
    out = rgba.copy()
    out[..., :3] = np.round(hsv2rgb(hsv) * 255).astype(np.uint8)
    return out


def build_sets(a, work):
    sys.path.insert(0, os.path.abspath(a.datasets_code))
    import _common as common  # the export's feature recipe

    exp = a.export
    items = json.load(open(os.path.join(exp, "items.json")))
    labels = np.load(os.path.join(exp, "labels_sub.npy")).astype(np.int64)
    feats = np.load(os.path.join(exp, "hogcolor.npy")).astype(np.float32)
    png_root = a.png_root or os.path.join(exp, "..", "_src", "deb", "openclipart-png",
                                          "root", "usr", "share", "openclipart", "png")
    rng = np.random.default_rng(a.seed)
    chosen = []
    Image.MAX_IMAGE_PIXELS = None
    for i in rng.permutation(len(items)):
        path = os.path.join(png_root, items[i].split("|")[0])
        with Image.open(path) as im:
            if im.size[0] * im.size[1] > MAX_PNG_PIXELS:
                continue
        chosen.append(int(i))
        if len(chosen) == a.instances:
            break
    chosen.sort()
    rgba, groups = [], []
    t = time.time()
    for g, i in enumerate(chosen):
        for v in variants(os.path.join(png_root, items[i].split("|")[0]), rng, common):
            rgba.append(v)
            groups.append(g)
    inst = common.colour_features(np.stack(rgba))["hogcolor"].astype(np.float32)
    print(f"instance set: {len(chosen)} drawings x 4 variants, {time.time() - t:.0f} s",
          file=sys.stderr)
    keep = np.ones(len(items), dtype=bool)
    keep[chosen] = False
    # Sub-folders with too few rows for a validation split are left out of the learning set.
    counts = np.bincount(labels[keep], minlength=labels.max() + 1)
    keep &= counts[labels] >= a.min_class_rows
    learn, learn_labels = feats[keep], labels[keep]
    # Labels as dense 0..C-1 over the learning set (a sub-folder may lose all its rows).
    _, learn_labels = np.unique(learn_labels, return_inverse=True)
    np.save(os.path.join(work, "learn.npy"), learn)
    np.save(os.path.join(work, "learn_labels.npy"), learn_labels.astype(np.int64))
    np.save(os.path.join(work, "inst.npy"), inst)
    np.save(os.path.join(work, "inst_groups.npy"), np.array(groups, dtype=np.int64))
    np.save(os.path.join(work, "db_distract.npy"), np.concatenate([inst, learn]))
    return inst, np.array(groups), learn, learn_labels


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def train(a, work, spec, extra=()):
    """Trains `spec` on the learning set; the model's path and the seconds it took."""
    model = os.path.join(work, "m.model")
    t = time.time()
    run([a.codedb, "train", "--data", os.path.join(work, "learn.npy"), "--labels",
         os.path.join(work, "learn_labels.npy"), "--pipeline", spec, "--seed", str(a.seed),
         "--out", model, "--force", "--json", *extra])
    return model, time.time() - t


def evaluate(a, work, model, spec, groups, distractors):
    """Indexes the instance set (+ distractors) with `model` and scores every instance variant
    as a query: (4×recall@4, mAP)."""
    idx = os.path.join(work, "idx")
    run(["rm", "-rf", idx])
    data = os.path.join(work, "db_distract.npy" if distractors else "inst.npy")
    run([a.codedb, "build", "--model", model, "--data", data, idx])
    mode = ["--mode", "adc"] if ",pq:" in spec else ["--mode", "float"]
    out = run([a.codedb, "search", idx, "--queries", os.path.join(work, "inst.npy"),
               "-k", str(a.depth), *mode, "--format", "json", "--threads", "0"])
    hits = json.loads(out)
    n = len(groups)
    ranked = [[] for _ in range(n)]
    for q in hits:
        ranked[q["query"]] = [h["id"] for h in q["results"]]
    score4, aps = 0.0, []
    for qi, ids in enumerate(ranked):
        same = [(i < n and groups[i] == groups[qi]) for i in ids]
        score4 += sum(same[:4])
        # Holidays: the query itself is not a result; 3 relevant images.
        found, ap = 0, 0.0
        rank = 0
        for i, s in zip(ids, same):
            if i == qi:
                continue
            rank += 1
            if s:
                found += 1
                ap += found / rank
        aps.append(ap / 3)
    return score4 / n, float(np.mean(aps))


def print_tables(rows, dims):
    """One markdown table per database (without / with distractors): a row per projection and
    quantiser, a column per R, each cell "4×recall@4 / mAP"."""
    for distract in sorted({r["distractors"] for r in rows}):
        print(f"\n{distract} distractors\n")
        print("| projection | quantiser | " + " | ".join(f"R = {d}" for d in dims) + " |")
        print("|---|---|" + "---:|" * len(dims))
        keys = []
        for r in rows:
            k = (r["pipeline"].split(":")[0] + r["pipeline"][r["pipeline"].find(" ("):]
                 if " (" in r["pipeline"] else r["method"], r["quantizer"].split(":")[0])
            if k not in keys:
                keys.append(k)
        for name, qz in keys:
            cells = []
            for d in dims:
                hit = [r for r in rows if r["distractors"] == distract and r["R"] == d
                       and r["quantizer"].split(":")[0] == qz
                       and (r["pipeline"].split(":")[0] + r["pipeline"][r["pipeline"].find(" ("):]
                            if " (" in r["pipeline"] else r["method"]) == name]
                cells.append(f"{hit[0]['ukb_4xrecall4']:.2f} / {hit[0]['map']:.3f}" if hit else "—")
            print(f"| {name} | {'PQ, R bits' if qz == 'pq' else 'float'} | " + " | ".join(cells) + " |")


def main():
    a = args()
    work = a.work or tempfile.mkdtemp(prefix="codedb-instances-")
    os.makedirs(work, exist_ok=True)
    names = ["inst.npy", "inst_groups.npy", "learn.npy", "learn_labels.npy", "db_distract.npy"]
    if a.reuse and all(os.path.exists(os.path.join(work, f)) for f in names):
        groups = np.load(os.path.join(work, "inst_groups.npy"))
        learn = np.load(os.path.join(work, "learn.npy"))
        learn_labels = np.load(os.path.join(work, "learn_labels.npy"))
    else:
        _, groups, learn, learn_labels = build_sets(a, work)
    classes = int(learn_labels.max()) + 1
    print(f"learning set: {len(learn)} rows in {classes} sub-folders", file=sys.stderr)
    dims = [int(d) for d in a.dims.split(",")]
    rows = []
    for r in dims:
        for m in a.methods.split(","):
            if m == "attributes" and r > classes:
                print(f"attributes:{r}: skipped (one score per class: at most {classes})",
                      file=sys.stderr)
                continue
            if m == "cca" and r >= classes:
                print(f"cca:{r}: skipped (one-hot labels of {classes} classes give at most "
                      f"{classes - 1} directions)", file=sys.stderr)
                continue
            quants = ["float"] + ([] if a.no_pq or r % 8 else [f"pq:{r // 8}x8"])
            for qz in quants:
                spec = f"{m}:{r},{qz}"
                rhos = a.cca_rho.split(",") if m == "cca" and a.cca_rho else [None]
                for rho in rhos:
                    model, ts = train(a, work, spec, ["--cca-rho", rho] if rho else [])
                    label = f"{spec} (ρ = {rho})" if rho else spec
                    for distract in [False, True] if a.distractors else [False]:
                        s4, mp = evaluate(a, work, model, spec, groups, distract)
                        row = {"pipeline": label, "R": r, "method": m, "quantizer": qz,
                               "distractors": len(learn) if distract else 0,
                               "ukb_4xrecall4": round(s4, 4), "map": round(mp, 4),
                               "train_s": round(ts, 1)}
                        rows.append(row)
                        print(json.dumps(row), flush=True)
    print_tables(rows, dims)
    if a.json:
        json.dump({"args": vars(a), "rows": rows}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
