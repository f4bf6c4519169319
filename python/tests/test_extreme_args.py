"""No Python call can crash the interpreter: every public method, swept with extreme integer
arguments (0, −1, 2⁶³, 2⁶⁴, …), returns or raises a typed codedb error — never a panic, an
abort, or an OverflowError. The sweep runs in a subprocess, so an abort fails the test instead
of killing pytest."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import codedb

SWEEP = textwrap.dedent(
    r'''
    import json, os, sys, tempfile
    import numpy as np
    import codedb

    EXTREMES = [0, -1, 2**31, 2**32, 2**62, 2**63, 2**64, 2**70]
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 100)
    x = (rng.normal(size=(300, 32)) + 4 * y[:, None]).astype(np.float32)
    model = codedb.train(x, "pca-itq:16", seed=1)
    path = os.path.join(tempfile.mkdtemp(), "idx")
    idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32", lists="label")
    snap = idx.snapshot()
    dim, table = idx.class_sums()
    w = np.ones(17, dtype=np.float32)

    calls = {}
    for target, who in ((idx, "Index"), (snap, "Snapshot")):
        for v in EXTREMES:
            calls[f"{who}.search(k={v})"] = lambda t=target, v=v: t.search(x[:2], k=v)
            calls[f"{who}.search(rerank={v})"] = lambda t=target, v=v: t.search(x[:2], k=1, rerank=v)
            calls[f"{who}.search(nprobe={v})"] = lambda t=target, v=v: t.search(x[:2], k=3, nprobe=v)
            calls[f"{who}.search(threads={v})"] = lambda t=target, v=v: t.search(x[:2], k=3, threads=v)
            calls[f"{who}.search_text(k={v})"] = lambda t=target, v=v: t.search_text("a", k=v)
            calls[f"{who}.search_examples(k={v})"] = lambda t=target, v=v: t.search_examples(x[:3], k=v, random_negatives=50)
            calls[f"{who}.search_examples(random_negatives={v})"] = lambda t=target, v=v: t.search_examples(x[:3], random_negatives=v)
            calls[f"{who}.search_examples(seed={v})"] = lambda t=target, v=v: t.search_examples(x[:3], random_negatives=50, seed=v)
            calls[f"{who}.search_classifier(k={v})"] = lambda t=target, v=v: t.search_classifier(w, k=v)
            calls[f"{who}.search_radius(radius={v})"] = lambda t=target, v=v: t.search_radius(x[:2], v)
            calls[f"{who}.classify(top={v})"] = lambda t=target, v=v: t.classify(x[:2], top=v)
            calls[f"{who}.reconstruct([{v}])"] = lambda t=target, v=v: t.reconstruct([v])
    for v in EXTREMES:
        calls[f"classify_sums(top={v})"] = lambda v=v: codedb.classify_sums(model, dim, table, x[:2], top=v)
        calls[f"classify_sums(dim={v})"] = lambda v=v: codedb.classify_sums(model, v, table, x[:2])
        calls[f"train(seed={v})"] = lambda v=v: codedb.train(x, "pca-itq:8", seed=v)
        calls[f"train(sample={v})"] = lambda v=v: codedb.train(x, "pca-itq:8", sample=v)
        calls[f"train(max_words={v})"] = lambda v=v: codedb.train(x, "pca-itq:8", max_words=v)
        calls[f"train(pamir_iterations={v})"] = lambda v=v: codedb.train(x, "pca-itq:8", pamir_iterations=v)
        calls[f"Index.add_class(id={v})"] = lambda v=v: idx.add_class(f"c{v}", x=x[:3], id=v)
        calls[f"Index.add_class(prior_weight={v})"] = lambda v=v: idx.add_class(f"p{v}", parent=0, prior_weight=v)
        calls[f"Index.delete([{v}])"] = lambda v=v: idx.delete([v], ignore_missing=True)
        calls[f"Index.add(ids=[{v}])"] = lambda v=v: idx.add(x[:1], ids=[v])
        calls[f"Index.upsert(ids=[{v}])"] = lambda v=v: idx.upsert(x[:1], ids=[v])
        calls[f"Index.recover(to_version={v})"] = lambda v=v: codedb.Index.recover(path + "-none", to_version=v)

    out = {}
    for name, call in calls.items():
        try:
            r = call()
            shape = [list(np.shape(a)) for a in r] if isinstance(r, tuple) else None
            out[name] = ["ok", shape]
        except codedb.CodedbError as e:
            out[name] = [type(e).__name__, str(e)[:200]]
        except BaseException as e:  # noqa: BLE001 (a panic is a BaseException)
            out[name] = ["BAD " + type(e).__name__, str(e)[:200]]
    print(json.dumps(out))
    '''
)


@pytest.fixture(scope="module")
def sweep() -> dict:
    r = subprocess.run([sys.executable, "-c", SWEEP], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"the sweep died (exit {r.returncode}): {r.stderr[-2000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_no_call_panics_aborts_or_overflows(sweep):
    bad = {name: res for name, res in sweep.items() if res[0].startswith("BAD")}
    assert not bad, bad
    assert len(sweep) > 150


def test_negative_counts_are_invalid_argument_naming_them(sweep):
    for who in ("Index", "Snapshot"):
        for arg in ("k", "rerank", "nprobe", "threads"):
            kind, msg = sweep[f"{who}.search({arg}=-1)"]
            assert kind == "InvalidArgument" and arg in msg, (who, arg, kind, msg)
        assert sweep[f"{who}.classify(top=-1)"][0] == "InvalidArgument"
        assert sweep[f"{who}.search(k=0)"][0] == "InvalidArgument"
        assert sweep[f"{who}.search(k={2**64})"][0] == "InvalidArgument"


def test_huge_k_returns_every_live_row_as_the_cli(sweep):
    for who in ("Index", "Snapshot"):
        for v in (2**31, 2**62, 2**63):
            assert sweep[f"{who}.search(k={v})"] == ["ok", [[2, 300], [2, 300]]], v
            assert sweep[f"{who}.search_classifier(k={v})"] == ["ok", [[1, 300], [1, 300]]], v
            assert sweep[f"{who}.classify(top={v})"] == ["ok", [[2, 3], [2, 3]]], v
        # re-ranking depth above the live rows is capped the same way
        assert sweep[f"{who}.search(rerank={2**63})"][0] == "ok"


def test_k_within_the_padding_limit_pads_like_faiss(index, data):
    x, _ = data
    D, I = index.search(x[:2], k=1000)
    assert I.shape == (2, 1000) and (I[:, 600:] == -1).all()
    D, I = index.search(x[:2], k=10**9)
    assert I.shape == (2, 600) and (I >= 0).all()


def test_k_minus_one_is_invalid_argument_in_process(index, data):
    x, _ = data
    with pytest.raises(codedb.InvalidArgument, match="k"):
        index.search(x[:1], k=-1)
    with pytest.raises(codedb.InvalidArgument, match="top"):
        codedb.classify_sums(index.model, 0, [], x[:1], top=-1)
    assert np.asarray(index.search(x[:1], k=2**62)[1]).shape == (1, 600)
