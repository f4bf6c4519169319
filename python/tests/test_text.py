"""Text queries (the model's PAMIR text head): training with captions, search_text in FAISS's
shapes, equality with the CLI's `search --text`, and the typed errors."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import codedb
from test_gil import _progress_during

TAGS = ["red apple", "green car", "blue sky", "yellow sun"]
PAMIR = dict(pamir_c=[0.1, 1.0], pamir_iterations=4000, seed=5)


def _data(n: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """`n` 16-D rows in four classes (class c is rows i with i % 4 == c), seeded."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 4
    centres = rng.normal(size=(4, 16)) * 3
    x = (centres[y] + rng.normal(size=(n, 16))).astype(np.float32)
    return x, y


@pytest.fixture(scope="module")
def text_model() -> codedb.Model:
    x, y = _data(400)
    return codedb.train(x, "pca-itq:16", captions=[TAGS[c] for c in y], **PAMIR)


@pytest.fixture
def text_index(tmp_path, text_model):
    x, y = _data(400)
    with codedb.Index.build(tmp_path / "idx", text_model, x, labels=y, lists="label") as idx:
        yield idx, y


def test_search_text_ranks_the_named_class_first(text_index):
    idx, y = text_index
    words = ["apple", "car", "sky", "sun"]
    D, I = idx.search_text(words, k=50)
    assert I.shape == D.shape == (4, 50)
    assert I.dtype == np.int64 and D.dtype == np.float32
    for c in range(4):
        assert (y[I[c]] == c).all(), (words[c], y[I[c]])
        assert (np.diff(D[c]) <= 0).all(), "larger scores first"
    # One string is one query; the same query on a pinned snapshot gives the same answer.
    D1, I1 = idx.search_text("green", k=50)
    assert I1.shape == (1, 50) and (y[I1[0]] == 1).all()
    with idx.snapshot() as s:
        D2, I2 = s.search_text(words, k=50)
    np.testing.assert_array_equal(I2, I)
    np.testing.assert_array_equal(D2, D)


def test_the_text_head_report_comes_back_with_the_model(text_model):
    text = text_model.report["text"]
    assert text["vocabulary"] == 8 and text["captioned_rows"] > 0
    assert [t["c"] for t in text["trials"]] == pytest.approx([0.1, 1.0])
    assert all(0 <= t["validation"]["avgp"] <= 1 for t in text["trials"])
    assert text["loss_after"] < text["loss_before"], text


def test_pamir_patience_groups_and_cap_note_as_the_cli():
    x, y = _data(400)
    caps = [TAGS[c] for c in y]
    groups = np.arange(400) // 8
    m = codedb.train(x, "pca-itq:16", captions=caps, pamir_c=[1.0], pamir_iterations=1_000_000,
                     pamir_validation_groups=groups, seed=5)
    text = m.report["text"]
    # Four tags learn fast: the run stops by patience far below the cap, and says so.
    assert text["stopped"] == "patience" and text["cap_note"] is None, text
    trial = text["trials"][0]
    assert trial["stopped"] == "patience" and trial["iterations_run"] < 1_000_000
    assert trial["checkpoints"][-1]["iterations"] == trial["iterations_run"]
    assert text["validation_groups"] == 50 and text["validation_rows"] % 8 == 0
    # A cap it cannot converge by: a UserWarning with the CLI's note, and the note in the report.
    with pytest.warns(UserWarning, match="still rising at the cap"):
        m = codedb.train(x, "pca-itq:16", captions=caps, pamir_c=[1.0], pamir_iterations=1500,
                         seed=5)
    assert m.report["text"]["stopped"] == "cap" and "--pamir-iterations" in m.report["text"]["cap_note"]
    with pytest.raises(codedb.InvalidArgument, match="validation_groups"):
        codedb.train(x, "pca-itq:16", captions=caps, pamir_validation_groups=groups[:-1])
    with pytest.raises(codedb.InvalidArgument, match="pamir_patience"):
        codedb.train(x, "pca-itq:16", captions=caps, pamir_patience=0)


def test_search_text_pads_with_minus_one(text_index):
    idx, _ = text_index
    D, I = idx.search_text("red apple", k=450)
    assert (I[0, :400] >= 0).all() and (I[0, 400:] == -1).all()
    assert np.isfinite(D[0, :400]).all() and (D[0, 400:] == -np.inf).all()


def test_search_text_restricts_to_classes(text_index):
    idx, y = text_index
    _, I = idx.search_text("apple", k=20, classes=[2])
    assert (y[I[0]] == 2).all()


def test_tag_lists_train_the_same_head_as_strings(tmp_path, text_model):
    x, y = _data(400)
    tagged = codedb.train(x, "pca-itq:16", captions=[TAGS[c].split() for c in y], **PAMIR)
    ids = []
    for name, m in (("a", text_model), ("b", tagged)):
        with codedb.Index.build(tmp_path / name, m, x) as idx:
            ids.append(idx.search_text(["apple", "blue sky"], k=30))
    np.testing.assert_array_equal(ids[0][1], ids[1][1])
    np.testing.assert_array_equal(ids[0][0], ids[1][0])


def test_caption_margin_trains(tmp_path):
    x, y = _data(400)
    m = codedb.train(x, "pca-itq:16", captions=[TAGS[c] for c in y], margin="caption", **PAMIR)
    with codedb.Index.build(tmp_path / "idx", m, x) as idx:
        _, I = idx.search_text("sky", k=30)
    assert (y[I[0]] == 2).all()


def test_search_text_equals_cli(tmp_path, text_index, codedb_bin):
    idx, _ = text_index
    queries = ["apple", "blue sky", "sun red"]
    D, I = idx.search_text(queries, k=12)
    cmd = [str(codedb_bin), "search", str(idx.path), "-k", "12", "--format", "json"]
    for q in queries:
        cmd += ["--text", q]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    cli = json.loads(out)
    assert len(cli) == len(queries)
    for qi, entry in enumerate(cli):
        assert entry["query"] == qi
        assert [r["id"] for r in entry["results"]] == I[qi].tolist()
        np.testing.assert_allclose([r["score"] for r in entry["results"]], D[qi], rtol=1e-6)


def test_unknown_words(text_index):
    idx, _ = text_index
    with pytest.raises(codedb.InvalidArgument, match="vocabulary"):
        idx.search_text("zebra")
    with pytest.raises(codedb.InvalidArgument):
        idx.search_text(["apple", "zebra unicorn"])
    with pytest.warns(UserWarning, match="ignored words not in the model's vocabulary: zebra"):
        _, I = idx.search_text("apple zebra", k=5)
    assert (I[0] >= 0).all()


def test_no_text_head_is_a_model_error(index):
    with pytest.raises(codedb.ModelError, match="no text head"):
        index.search_text("apple")
    with index.snapshot() as s, pytest.raises(codedb.ModelError, match="no text head"):
        s.search_text(["apple"])


def test_bad_text_arguments(text_index):
    idx, _ = text_index
    x, y = _data(40)
    with pytest.raises(codedb.InvalidArgument, match="margin"):
        codedb.train(x, "pca-itq:16", captions=[TAGS[c] for c in y], margin="big")
    with pytest.raises(codedb.InvalidArgument, match="captions"):
        codedb.train(x, "pca-itq:16", captions=[TAGS[c] for c in y[:-1]])
    with pytest.raises(codedb.InvalidArgument, match="captions"):
        codedb.train(x, "pca-itq:16", captions="red apple")
    with pytest.raises(codedb.InvalidArgument, match="captions"):
        codedb.train(x, "pca-itq:16", captions=[1] * 40)
    with pytest.raises(codedb.InvalidArgument, match="queries"):
        idx.search_text(7)
    D, I = idx.search_text([], k=4)  # an empty batch, as every search kind: (0, k)
    assert D.shape == I.shape == (0, 4)
    with pytest.raises(codedb.InvalidArgument, match="mode"):
        idx.search_text("apple", mode="exact")


def test_other_python_threads_run_during_a_text_search(tmp_path, text_model):
    x, _ = _data(100_000, seed=9)
    with codedb.Index.build(tmp_path / "idx", text_model, x) as idx:
        queries = [TAGS[i % 4] for i in range(400)]
        idx.search_text(queries, k=10)  # warm: pages, kernels
        searching = _progress_during(lambda: idx.search_text(queries, k=10))
    held = _progress_during(lambda: sorted(range(3_000_000, 0, -1)))
    assert held < 0.15, f"control: a GIL-holding call let the other thread run ({held:.2f})"
    assert searching > max(0.25, 3 * held), (searching, held)
