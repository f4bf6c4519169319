"""The verbs beside the CLI and FAISS: compact/gc with the CLI's semantics and reports, query by
examples and by a given classifier, upsert, reconstruct, decode, delete counts, empty batches,
uint8 input, pickling — each giving the CLI's answer where the CLI has the verb."""

from __future__ import annotations

import json
import pickle
import subprocess

import numpy as np
import pytest

import codedb


def _cli_json(codedb_bin, *args):
    r = subprocess.run([str(codedb_bin), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_compact_seals_the_log_and_drops_deleted_rows_as_the_cli(tmp_path, data, model, codedb_bin):
    x, _ = data
    reports = {}
    for door in ("python", "cli"):
        path = tmp_path / door
        with codedb.Index.create(path, model) as idx:
            idx.add(x)
            idx.commit()
            assert idx.delete([0, 1]) == 2
            idx.commit()
            if door == "python":
                reports[door] = idx.compact(deleted_threshold=0)
        if door == "cli":
            reports[door] = json.loads(
                _cli_json(codedb_bin, "compact", path, "--deleted-threshold", "0", "--json")
            )
        with codedb.Snapshot.open(path) as snap:
            assert len(snap) == 598
        with codedb.Index.open(path) as idx:
            v = idx.versions()[-1]
            assert (v["rows"], v["deleted"], v["segments"]) == (598, 0, 1), v
    py, cli = reports["python"], reports["cli"]
    assert py["sealed_log_rows"] == cli["sealed_log_rows"] == 600
    for key in ("version", "based_on", "deleted_rows_kept", "sealed_version", "folded_class_files"):
        assert py[key] == cli[key], key
    assert py["deleted_rows_kept"] == 0


def test_compact_full_and_threshold_checked(tmp_path, data, model):
    x, _ = data
    with codedb.Index.create(tmp_path / "idx", model) as idx:
        for part in np.array_split(x, 3):
            idx.add(part)
            idx.commit()
            idx.compact()  # each seals the committed log's rows into a segment
        assert idx.versions()[-1]["segments"] == 3
        r = idx.compact(full=True)
        assert [m["reason"] for m in r["merges"]] == ["full"]
        assert idx.versions()[-1]["segments"] == 1
        with pytest.raises(codedb.InvalidArgument, match="deleted"):
            idx.compact(deleted_threshold=1.5)


def test_gc_reports_what_it_removed(tmp_path, data, model):
    x, _ = data
    with codedb.Index.create(tmp_path / "idx", model) as idx:
        idx.add(x)
        idx.commit()
        r = idx.gc()
        assert set(r) >= {"removed", "removed_bytes", "kept_versions"}
        assert isinstance(r["removed"], list)


def test_versions_match_the_cli_json(tmp_path, data, model, codedb_bin):
    x, _ = data
    path = tmp_path / "idx"
    with codedb.Index.build(path, model, x) as idx:
        idx.delete([3])
        idx.commit()
        ours = idx.versions()
    assert ours == json.loads(_cli_json(codedb_bin, "versions", path, "--json"))


def test_search_examples_batch_equals_one_call_per_set(tmp_path, data, model):
    x, y = data
    path = tmp_path / "idx"
    codedb.Index.build(path, model, x, labels=y).close()
    sets = [x[y == c][:4] for c in (2, 0, 1)]
    negs = [x[y == (c + 1) % 3][10:16] for c in (2, 0, 1)]
    with codedb.Snapshot.open(path) as snap:
        for kw in ({"random_negatives": 50}, {"negatives": negs}, {"negatives": x[400:420]}):
            D, I = snap.search_examples(sets, k=15, **kw)
            assert D.shape == I.shape == (3, 15)
            for i, s in enumerate(sets):
                one = dict(kw)
                if isinstance(kw.get("negatives"), list):
                    one["negatives"] = negs[i]
                D1, I1 = snap.search_examples(s, k=15, **one)
                assert np.array_equal(I1[0], I[i]) and np.array_equal(D1[0], D[i])
        # The default seed is the engine's (1234), as train's and the CLI's.
        assert np.array_equal(
            snap.search_examples(sets[0], random_negatives=50)[1],
            snap.search_examples(sets[0], random_negatives=50, seed=1234)[1],
        )
        with pytest.raises(codedb.InvalidArgument, match="negatives"):
            snap.search_examples(sets, negatives=negs[:2])
        with pytest.raises(codedb.InvalidArgument, match="negatives"):
            snap.search_examples(sets[0], negatives=negs)


def test_search_examples_equals_the_cli(tmp_path, data, model, codedb_bin):
    x, y = data
    path = tmp_path / "idx"
    codedb.Index.build(path, model, x, labels=y).close()
    np.save(tmp_path / "pos.npy", x[:5])
    with codedb.Snapshot.open(path) as snap:
        D, I = snap.search_examples(x[:5], k=20, random_negatives=100, seed=4)
        D2, I2 = snap.search_examples(x[:5], k=20, negatives=x[400:], svm_c=2.0)
    assert D.shape == I.shape == (1, 20) and D.dtype == np.float32
    assert (y[I[0]] == 0).all() and (y[I2[0]] == 0).all()
    out = json.loads(
        _cli_json(
            codedb_bin, "search", path, "--examples", tmp_path / "pos.npy", "--random-negatives",
            "100", "--seed", "4", "-k", "20", "--format", "json",
        )
    )
    assert [r["id"] for r in out[0]["results"]] == I[0].tolist()
    assert np.allclose([r["score"] for r in out[0]["results"]], D[0], rtol=1e-5)
    with codedb.Index.open(path) as idx:  # Index delegates to its newest snapshot
        assert np.array_equal(idx.search_examples(x[:5], k=20, random_negatives=100, seed=4)[1], I)
        with pytest.raises(codedb.InvalidArgument, match="random_negatives"):
            idx.search_examples(x[:5], random_negatives=10**6)
        with pytest.raises(codedb.InvalidArgument, match="random_negatives"):
            idx.search_examples(x[:5], negatives=x[:3], random_negatives=3)


def test_search_classifier_equals_the_cli(tmp_path, data, model, codedb_bin):
    x, _ = data
    path = tmp_path / "idx"
    codedb.Index.build(path, model, x).close()
    w = np.append(model.decode(model.encode(x[300:301]))[0], 0.5).astype(np.float32)
    np.save(tmp_path / "w.npy", w)
    with codedb.Snapshot.open(path) as snap:
        D, I = snap.search_classifier(w, k=5)
        with pytest.raises(codedb.InvalidArgument, match="classifier"):
            snap.search_classifier(w[:-2], k=5)
    out = json.loads(
        _cli_json(codedb_bin, "search", path, "--classifier", tmp_path / "w.npy", "-k", "5", "--format", "json")
    )
    assert [r["id"] for r in out[0]["results"]] == I[0].tolist()
    assert D[0, 0] == pytest.approx(16.5)


def test_upsert_replaces_live_rows_and_counts_them(tmp_path, data, model):
    x, _ = data
    with codedb.Index.create(tmp_path / "idx", model, store_vectors="f32") as idx:
        idx.add(x[:3], ids=[1, 2, 3])
        idx.commit()
        with pytest.raises(codedb.AlreadyExistsError):
            idx.add(x[3:4], ids=[2])
        assert idx.upsert(x[[400, 401]], ids=[2, 9]) == 1
        idx.commit()
        assert len(idx) == 4
        assert np.array_equal(idx.reconstruct([2, 9]), x[[400, 401]])


def test_reconstruct_without_stored_vectors_is_a_typed_error(index, data):
    with pytest.raises(codedb.InvalidArgument, match="stores no vectors"):
        index.reconstruct([0])


def test_reconstruct_unknown_id_is_not_found(tmp_path, data, model):
    x, _ = data
    with codedb.Index.build(tmp_path / "idx", model, x[:5], store_vectors="f16") as idx:
        assert idx.reconstruct(np.array([4, 0])).shape == (2, 32)
        with pytest.raises(codedb.NotFoundError, match="7"):
            idx.reconstruct([0, 7])


def test_decode_gives_the_projected_codes(model, data):
    x, _ = data
    z = model.decode(model.encode(x[:4]))
    assert z.shape == (4, 16) and set(np.unique(z)) <= {-1.0, 1.0}
    pq = codedb.train(x, "pq:4x8", seed=1)
    r = pq.decode(pq.encode(x[:4]))
    assert r.dtype == np.float32 and r.shape[0] == 4
    with pytest.raises(codedb.InvalidArgument, match="codes"):
        model.decode(np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(TypeError, match="codes"):
        model.decode(np.zeros((2, 2), dtype=np.float32))


def test_delete_returns_the_count_and_ignores_missing_on_request(index, data):
    assert index.delete([0, 1, 2]) == 3
    with pytest.raises(codedb.NotFoundError, match="99999"):
        index.delete([5, 99999])
    assert index.delete([5, 99999, 0], ignore_missing=True) == 1  # 0 is already staged
    assert index.delete([99999], ignore_missing=True) == 0
    index.commit()
    assert len(index) == 596


def test_empty_batches_give_zero_rows_for_every_search_kind(index, data):
    x, _ = data
    empty = x[:0]
    for D, I in (
        index.search(empty, k=7),
        index.search(empty, k=7, mode="asym"),
        index.snapshot().search(empty, k=7),
    ):
        assert D.shape == I.shape == (0, 7) and I.dtype == np.int64
    assert index.search(empty, k=7)[0].dtype == np.int32
    lims, D, I = index.search_radius(empty, 1)
    assert lims.tolist() == [0] and D.size == I.size == 0
    with pytest.raises(codedb.InvalidArgument, match="q"):
        index.search(np.zeros((0, 5), dtype=np.float32), k=3)
    with pytest.raises(codedb.InvalidArgument, match="k"):
        index.search(empty, k=0)


def test_empty_batch_classify(tmp_path, data, model):
    x, y = data
    with codedb.Index.build(tmp_path / "idx", model, x, labels=y) as idx:
        s, c = idx.classify(x[:0], top=2)
        assert s.shape == c.shape == (0, 2)
        dim, table = idx.class_sums()
        s, c = codedb.classify_sums(model, dim, table, x[:0], top=2)
        assert s.shape == (0, 2)


def test_uint8_input_is_converted_like_the_cli_reads_pixels(tmp_path, data):
    x, _ = data
    pixels = np.clip(x * 20 + 128, 0, 255).astype(np.uint8)
    m = codedb.train(pixels, "pca-itq:16", seed=1)
    assert np.array_equal(m.encode(pixels), m.encode(pixels.astype(np.float32)))
    with codedb.Index.build(tmp_path / "idx", m, pixels) as idx:
        assert int(idx.search(pixels[:1], k=1, mode="asym")[1][0, 0]) == 0
    with pytest.raises(TypeError, match="x: dtype int16"):
        m.encode(pixels.astype(np.int16))


def test_model_pickles_through_its_file_bytes(model, data):
    x, _ = data
    again = pickle.loads(pickle.dumps(model))
    assert again.id == model.id and np.array_equal(again.encode(x[:5]), model.encode(x[:5]))
    assert codedb.Model.from_bytes(model.to_bytes()).id == model.id
    with pytest.raises(codedb.CorruptError):
        codedb.Model.from_bytes(b"not a model file at all, not at all")


def test_train_reports_picodes_rounds_like_the_cli(data):
    import warnings

    x, y = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = codedb.train(x, "pca:16,picodes:16", labels=y, seed=3)
    r = m.report["train"]
    assert len(r["picodes_objective"]) == len(r["picodes_updated"]) >= 1
    assert r["picodes_updated"][0] > 0 and r["picodes_stop"] in ("rounds", "converged", "stalled")
    # Every note (the CLI's `note:` lines) is warned, and only notes are.
    assert [str(w.message) for w in caught if w.category is UserWarning] == r["notes"]
    assert (r["picodes_stop"] == "stalled") == (len(r["notes"]) == 1)
