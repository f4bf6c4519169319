#!/usr/bin/env python3
"""Instance retrieval from category labels, the shape of Gordo et al. CVPR 2012's protocol,
on openclipart or Fashion-MNIST.

The paper learns projections from category labels (ImageNet) and measures instance retrieval on
Holidays / UKB. Here, with `--set openclipart` (the default):

- **Instance set** (UKB-like): `--instances` drawings chosen with the seed from the openclipart
  export (../shared/DATASETS.md), each rendered in 4 variants from its PNG — (0) as exported,
  (1) zoomed out to 70 % on a transparent canvas, (2) a random 80 % crop, (3) rotated by a random
  5-15 degrees with its hue shifted by a random 0.05-0.15 turn and saturation scaled by 0.7-1.3 —
  and described with the export's own recipe (`_common.colour_features`, `hogcolor`, 1696-D).
  Drawings above 16 Mpixel are never chosen (the export renders those from their SVG).
- **Learning set**: every other drawing's export row (`hogcolor.npy`) with its sub-folder label
  (`labels_sub.npy`), leaving out sub-folders with fewer than `--min-class-rows` (10) rows, too
  few for the validation splits of metric / JSCL: no instance drawing is learned from.
- **Validation instances**: `--val-instances` (250) further drawings, rendered in the same 4
  variants, learned from with their sub-folder labels and passed to `codedb train --groups`
  (one group per drawing, -1 for learning rows): with them `cca:R` chooses ρ and `metric:R` /
  `jscl:R` choose η and the epoch by the instance mAP of these groups, codedb's default with
  groups (Gordo et al. §7.4 tune their parameters for instances on another instance set);
  `--sgd-validation classes` / `--cca-rho 0.0001` train as without groups. Every method trains
  on the same rows.
- **Measures**: every variant is a query against the 4 × N variants (itself included, as UKB
  counts it): **4×recall@4** (UKB's score: how many of the drawing's 4 variants are in the first
  4, 4 = perfect) and **mAP** Holidays-style (the query itself left out, 3 relevant images, over
  the first `--depth` results). With `--distractors`, every learning-set row is added to the
  database too (the paper's Fig. 3 adds Flickr images; these are the learning images themselves,
  the only other openclipart rows).
- **Pipelines**: `pca:R`, `metric:R`, `attributes:R`, `cca:R` (one-hot labels: R < classes;
  `--cca-rho each:0.0001,default` adds a row at the fixed ρ = 1e-4, `classes` one chosen by
  class precision) and
  `jscl:R`, each before `float` (uncompressed) and `pq:(R/8)x8` (the paper's 8-D sub-vectors ×
  8 bits: R bits per image), trained by `codedb train --labels` on the learning set.

With `--set fashion_mnist` (`--export` = its export directory): the instance set is
`--instances` images drawn from the 10,000 test images, each in 4 variants made from the raw
28×28 image — (0) as is, (1) zoomed out to 70 % on black, (2) a random 80 % crop scaled back,
(3) rotated by a random 5-15 degrees with its brightness scaled by 0.7-1.3 — and described
with the export's recipe (`--feature hog`: `_common.hog_gray`, 7-pixel cells, 288-D; or
`pixels`, 784-D). The learning set is the 60,000 training images (`--learn-rows` samples
fewer, seeded) with their 10 class labels, plus `--val-instances` other training images in the
same 4 variants as validation groups; the distractors are the other test images. With 10
classes `cca:R` needs R ≤ 9 and `attributes:R` R ≤ 10, so `--dims 8,16,32,64` suits it.

Usage (the export takes minutes, once):
    DATASETS_OUT=/tmp/datasets bash ../shared/datasets/export.sh openclipart
    python3 tools/instance_retrieval.py --export /tmp/datasets/openclipart \\
        --instances 1000 --dims 16,32,64 --seed 1 [--distractors] [--json out.json]
    DATASETS_OUT=/tmp/datasets bash ../shared/datasets/export.sh fashion_mnist
    python3 tools/instance_retrieval.py --set fashion_mnist --export /tmp/datasets/fashion_mnist \\
        --instances 1000 --dims 8,16,32,64 --learn-rows 20000 --seed 1 --distractors

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
    ap.add_argument("--set", default="openclipart", choices=["openclipart", "fashion_mnist"],
                    help="which export --export is")
    ap.add_argument("--export", required=True, help="the export directory of --set")
    ap.add_argument("--feature", default="hog", choices=["hog", "pixels"],
                    help="fashion_mnist: the export's feature to use")
    ap.add_argument("--learn-rows", type=int, default=0,
                    help="fashion_mnist: learn from this many training rows (seeded; 0 = all)")
    ap.add_argument("--png-root", help="the PNGs (default: the export's Debian unpack)")
    ap.add_argument("--datasets-code", default=os.path.join(ROOT, "..", "shared", "datasets"),
                    help="where _common.py (the feature recipe) lives")
    ap.add_argument("--instances", type=int, default=1000, help="drawings in the instance set")
    ap.add_argument("--dims", default="16,32,64,128", help="R values, comma-separated")
    ap.add_argument("--methods", default=",".join(METHODS), help="projections, comma-separated")
    ap.add_argument("--cca-rho", default="default",
                    help="ρ of cca:R: default (no --cca-rho: with --groups, codedb chooses it "
                         "on the validation instances), classes (--cca-rho auto without "
                         "--groups: chosen by class precision), a value (fixed), or several "
                         "comma-separated runs prefixed by 'each:' (each:0.0001,default: one "
                         "row per ρ)")
    ap.add_argument("--sgd-validation", default="instances",
                    help="what metric:R and jscl:R validate η and the epoch on: instances "
                         "(--groups, the default recipe), classes (no --groups: held-out class "
                         "precision), or each:instances,classes (one row per choice)")
    ap.add_argument("--val-instances", type=int, default=250,
                    help="drawings / images rendered in 4 variants as validation instance "
                         "groups, learned from with their labels (codedb train --groups)")
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
    eligible = []
    Image.MAX_IMAGE_PIXELS = None
    for i in rng.permutation(len(items)):
        path = os.path.join(png_root, items[i].split("|")[0])
        with Image.open(path) as im:
            if im.size[0] * im.size[1] > MAX_PNG_PIXELS:
                continue
        eligible.append(int(i))
        if len(eligible) == a.instances + a.val_instances:
            break
    chosen = sorted(eligible[:a.instances])
    val = sorted(eligible[a.instances:])
    t = time.time()

    def render(drawings):
        rgba, groups = [], []
        for g, i in enumerate(drawings):
            for v in variants(os.path.join(png_root, items[i].split("|")[0]), rng, common):
                rgba.append(v)
                groups.append(g)
        feats4 = common.colour_features(np.stack(rgba))["hogcolor"].astype(np.float32)
        return feats4, np.array(groups, dtype=np.int64)

    inst, groups = render(chosen)
    print(f"instance set: {len(chosen)} drawings x 4 variants, {time.time() - t:.0f} s",
          file=sys.stderr)
    keep = np.ones(len(items), dtype=bool)
    keep[chosen] = False
    keep[val] = False
    # Sub-folders with too few rows for a validation split are left out of the learning set.
    counts = np.bincount(labels[keep], minlength=labels.max() + 1)
    keep &= counts[labels] >= a.min_class_rows
    # Validation drawings of a left-out sub-folder have no label to learn from: dropped.
    val = [i for i in val if counts[labels[i]] >= a.min_class_rows]
    learn, learn_labels = feats[keep], labels[keep]
    if val:
        val_feats, val_groups = render(val)
        val_labels = np.repeat(labels[val], 4)
    else:
        val_feats, val_groups, val_labels = np.zeros((0, feats.shape[1]), np.float32), \
            np.zeros(0, np.int64), np.zeros(0, np.int64)
    print(f"validation instances: {len(val)} drawings x 4 variants", file=sys.stderr)
    # Labels as dense 0..C-1 over the learning set (a sub-folder may lose all its rows).
    _, dense = np.unique(np.concatenate([learn_labels, val_labels]), return_inverse=True)
    save_learning(work, learn, val_feats, dense, val_groups)
    np.save(os.path.join(work, "inst.npy"), inst)
    np.save(os.path.join(work, "inst_groups.npy"), groups)
    np.save(os.path.join(work, "db_distract.npy"), np.concatenate([inst, learn]))
    return inst, groups, learn, dense, len(learn)


def save_learning(work, learn, val_feats, labels, val_groups):
    """The training rows (the learning set, then the validation instances' variants), their
    labels and their groups (-1 for learning rows)."""
    np.save(os.path.join(work, "learn.npy"), np.concatenate([learn, val_feats]).astype(np.float32))
    np.save(os.path.join(work, "learn_labels.npy"), labels.astype(np.int64))
    np.save(os.path.join(work, "learn_groups.npy"),
            np.concatenate([np.full(len(learn), -1, np.int64), val_groups]).astype(np.int64))


def fmnist_variants(img, rng):
    """The 4 variants of one 28×28 uint8 image (white object on black)."""
    im = Image.fromarray(img)
    out = [img]
    small = im.resize((20, 20), Image.LANCZOS)  # 70 % of 28, rounded
    canvas = Image.new("L", (28, 28), 0)
    canvas.paste(small, (4, 4))
    out.append(np.asarray(canvas))
    c = 22  # 80 % of 28, rounded
    x0, y0 = int(rng.integers(0, 28 - c + 1)), int(rng.integers(0, 28 - c + 1))
    out.append(np.asarray(im.crop((x0, y0, x0 + c, y0 + c)).resize((28, 28), Image.LANCZOS)))
    angle = float(rng.uniform(5, 15)) * (1 if rng.random() < 0.5 else -1)
    rot = np.asarray(im.rotate(angle, resample=Image.BICUBIC, fillcolor=0), dtype=np.float64)
    out.append(np.clip(np.round(rot * rng.uniform(0.7, 1.3)), 0, 255).astype(np.uint8))
    return out


def read_idx(path):
    import gzip

    with gzip.open(path, "rb") as f:
        b = f.read()
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(b[3])]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def build_sets_fmnist(a, work):
    sys.path.insert(0, os.path.abspath(a.datasets_code))
    import _common as common  # the export's feature recipe

    exp = a.export
    split = np.load(os.path.join(exp, "split.npy"))
    labels = np.load(os.path.join(exp, "labels.npy")).astype(np.int64)
    feats = np.load(os.path.join(exp, f"{a.feature}.npy")).astype(np.float32)
    raw_dirs = ["/usr/share/datasets/fashion-mnist",
                os.path.join(exp, "..", "_src", "deb", "dataset-fashion-mnist", "root", "usr",
                             "share", "datasets", "fashion-mnist")]
    raw = next((d for d in raw_dirs if os.path.isdir(d)), None)
    if raw is None:
        sys.exit(f"the raw Fashion-MNIST images are in none of {raw_dirs}: run the export")
    test_imgs = read_idx(os.path.join(raw, "t10k-images-idx3-ubyte.gz"))
    test_rows = np.flatnonzero(split == 1)
    if len(test_rows) != len(test_imgs):
        sys.exit(f"{len(test_rows)} test rows in the export, {len(test_imgs)} raw test images")
    rng = np.random.default_rng(a.seed)
    chosen = np.sort(rng.choice(len(test_rows), size=a.instances, replace=False))
    imgs, groups = [], []
    for g, i in enumerate(chosen):
        for v in fmnist_variants(test_imgs[i], rng):
            imgs.append(v)
            groups.append(g)
    imgs = np.stack(imgs)
    if a.feature == "hog":
        inst = common.hog_gray(imgs.astype(np.float64) / 255.0, ppc=7, orientations=8)
    else:
        inst = common.pixels(imgs)
    inst = inst.astype(np.float32)
    # The recipe reproduces the export's own rows for unaltered images.
    if not np.allclose(inst[0::4], feats[test_rows[chosen]], atol=1e-5):
        sys.exit("the instance features of unaltered images differ from the export's rows")
    learn_rows = np.flatnonzero(split == 0)
    if a.learn_rows and a.learn_rows < len(learn_rows):
        learn_rows = np.sort(rng.choice(learn_rows, size=a.learn_rows, replace=False))
    learn, learn_labels = feats[learn_rows], labels[learn_rows]
    others = np.setdiff1d(test_rows, test_rows[chosen])
    # Validation instances: training images outside the learning rows, in 4 variants each.
    train_rows = np.flatnonzero(split == 0)
    train_imgs = read_idx(os.path.join(raw, "train-images-idx3-ubyte.gz"))
    if len(train_rows) != len(train_imgs):
        sys.exit(f"{len(train_rows)} train rows in the export, {len(train_imgs)} raw train images")
    spare = np.setdiff1d(np.arange(len(train_rows)), np.searchsorted(train_rows, learn_rows))
    val = np.sort(rng.choice(spare, size=min(a.val_instances, len(spare)), replace=False))
    vimgs, vgroups = [], []
    for g, i in enumerate(val):
        for v in fmnist_variants(train_imgs[i], rng):
            vimgs.append(v)
            vgroups.append(g)
    if len(val):
        vimgs = np.stack(vimgs)
        vfeats = (common.hog_gray(vimgs.astype(np.float64) / 255.0, ppc=7, orientations=8)
                  if a.feature == "hog" else common.pixels(vimgs)).astype(np.float32)
    else:
        vfeats = np.zeros((0, feats.shape[1]), np.float32)
    print(f"validation instances: {len(val)} training images x 4 variants", file=sys.stderr)
    save_learning(work, learn, vfeats,
                  np.concatenate([learn_labels, np.repeat(labels[train_rows[val]], 4)]),
                  np.array(vgroups, dtype=np.int64))
    np.save(os.path.join(work, "inst.npy"), inst)
    np.save(os.path.join(work, "inst_groups.npy"), np.array(groups, dtype=np.int64))
    np.save(os.path.join(work, "db_distract.npy"), np.concatenate([inst, feats[others]]))
    print(f"instance set: {a.instances} test images x 4 variants; {len(others)} distractors",
          file=sys.stderr)
    return inst, np.array(groups), learn, learn_labels, len(others)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def train(a, work, spec, extra=()):
    """Trains `spec` on the learning set (with the validation instances); the model's path,
    the seconds it took and what validation chose: {"rho": ...} for cca:R with a ρ grid,
    {"eta": ..., "epoch": ..., "on": ...} for metric:R / jscl:R, else None."""
    model = os.path.join(work, "m.model")
    t = time.time()
    out = json.loads(run([a.codedb, "train", "--data", os.path.join(work, "learn.npy"),
                          "--labels", os.path.join(work, "learn_labels.npy"), "--pipeline", spec,
                          "--seed", str(a.seed), "--out", model, "--force", "--json", *extra]))
    ts = time.time() - t
    if out.get("cca_rho_choice"):
        c = out["cca_rho_choice"]
        return model, ts, {"rho": c["rho"], "on": c["validation"]}
    if out.get("sgd_choice"):
        c = out["sgd_choice"]
        return model, ts, {"eta": c["learning_rate"], "epoch": c["best_epoch"],
                           "on": c["validation"], "score": c["validation_score"]}
    return model, ts, None


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
    names = ["inst.npy", "inst_groups.npy", "learn.npy", "learn_labels.npy", "learn_groups.npy",
             "db_distract.npy"]
    if a.reuse and all(os.path.exists(os.path.join(work, f)) for f in names):
        groups_inst = np.load(os.path.join(work, "inst_groups.npy"))
        learn = np.load(os.path.join(work, "learn.npy"))
        learn_labels = np.load(os.path.join(work, "learn_labels.npy"))
        n_distract = len(np.load(os.path.join(work, "db_distract.npy"), mmap_mode="r")) - len(groups_inst)
    elif a.set == "fashion_mnist":
        _, groups_inst, learn, learn_labels, n_distract = build_sets_fmnist(a, work)
    else:
        _, groups_inst, learn, learn_labels, n_distract = build_sets(a, work)
    classes = int(learn_labels.max()) + 1
    print(f"learning set: {len(learn)} rows in {classes} classes", file=sys.stderr)
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
                groups = ["--groups", os.path.join(work, "learn_groups.npy")]
                # (row label, extra train arguments) per run.
                runs = [(None, groups if m != "pca" else [])]
                if m == "cca":
                    rhos = (a.cca_rho[len("each:"):].split(",") if a.cca_rho.startswith("each:")
                            else [a.cca_rho])
                    runs = []
                    for rho in rhos:
                        if rho == "default":
                            runs.append(("ρ default", groups))
                        elif rho == "classes":
                            # ρ chosen by held-out class precision (no --groups).
                            runs.append(("ρ classes", ["--cca-rho", "auto"]))
                        else:
                            runs.append((f"ρ = {rho}", ["--cca-rho", rho]))
                elif m in ("metric", "jscl"):
                    ons = (a.sgd_validation[len("each:"):].split(",")
                           if a.sgd_validation.startswith("each:") else [a.sgd_validation])
                    runs = [(f"η, epoch on {on}", groups if on == "instances" else [])
                            for on in ons]
                for what, extra in runs:
                    model, ts, chosen = train(a, work, spec, extra)
                    label = f"{spec} ({what})" if what else spec
                    if chosen is not None:
                        print(f"{label}: chose {chosen}", file=sys.stderr)
                    for distract in [False, True] if a.distractors else [False]:
                        s4, mp = evaluate(a, work, model, spec, groups_inst, distract)
                        row = {"pipeline": label, "R": r, "method": m, "quantizer": qz,
                               "distractors": n_distract if distract else 0,
                               "ukb_4xrecall4": round(s4, 4), "map": round(mp, 4),
                               "train_s": round(ts, 1), "chosen": chosen}
                        rows.append(row)
                        print(json.dumps(row), flush=True)
    print_tables(rows, dims)
    if a.json:
        json.dump({"args": vars(a), "rows": rows}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
