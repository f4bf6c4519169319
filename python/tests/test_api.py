"""The rest of the API: FAISS shapes and padding, radius, classes, snapshots, reports."""

from __future__ import annotations

import numpy as np
import pytest

import codedb


def test_faiss_shapes_and_padding(tmp_path, data, model):
    x, _ = data
    with codedb.Index.create(tmp_path / "idx", model) as idx:
        ids = idx.add(x[:5], ids=[10, 11, 12, 13, 14])
        assert ids.dtype == np.uint64 and ids.tolist() == [10, 11, 12, 13, 14]
        assert idx.commit() == 2
        D, I = idx.search(x[:3], k=8)
        assert D.shape == I.shape == (3, 8)
        assert D.dtype == np.int32 and I.dtype == np.int64
        assert (I[:, 5:] == -1).all() and (D[:, 5:] == np.iinfo(np.int32).max).all()
        assert I[0, 0] == 10 and D[0, 0] == 0
        D, I = idx.search(x[:3], k=8, mode="asym")
        assert D.dtype == np.float32 and np.isinf(D[:, 5:]).all()
        # results are fresh arrays the caller owns
        assert D.flags.owndata or D.base is not None
        D[:] = 0


def test_rerank_with_stored_vectors(tmp_path, data, model):
    x, _ = data
    with codedb.Index.build(tmp_path / "idx", model, x, store_vectors="f32") as idx:
        D, I = idx.search(x[:4], k=5, mode="asym", rerank=50)
        assert D.dtype == np.float32
        assert I[:, 0].tolist() == [0, 1, 2, 3]
        assert np.allclose(D[:, 0], 0)
        exact = ((x[I[0]] - x[0]) ** 2).sum(axis=1)
        np.testing.assert_allclose(D[0], exact, rtol=1e-4, atol=1e-3)
        assert (np.diff(D, axis=1) >= 0).all()
        De, Ie = idx.search(x[:4], k=5, mode="exact")  # re-ranking every row is exact search
        Da, Ia = idx.search(x[:4], k=5, mode="asym", rerank=600)
        np.testing.assert_array_equal(Ia, Ie)
        np.testing.assert_allclose(Da, De, rtol=1e-5)


def test_radius_is_range_search_layout(index, data):
    x, _ = data
    lims, D, I = index.search_radius(x[:6], 1)
    assert lims.dtype == np.int64 and lims.shape == (7,) and lims[0] == 0
    assert len(D) == len(I) == lims[-1]
    for qi in range(6):
        assert qi in I[lims[qi] : lims[qi + 1]]
        assert (D[lims[qi] : lims[qi + 1]] <= 1).all()
    Dk, Ik = index.search(x[:6], k=600, mode="hamming")
    for qi in range(6):
        within = set(Ik[qi][(Dk[qi] <= 1) & (Ik[qi] >= 0)])
        assert set(I[lims[qi] : lims[qi + 1]]) == within


def test_classes_classify_nprobe(tmp_path, data, model):
    x, y = data
    with codedb.Index.build(tmp_path / "idx", model, x, labels=y, lists="label") as idx:
        assert idx.classes == {0: "0", 1: "1", 2: "2"}
        scores, cls = idx.classify(x[::100], top=2)
        assert scores.dtype == np.float32 and cls.dtype == np.int64 and cls.shape == (6, 2)
        assert cls[:, 0].tolist() == y[::100].tolist()
        assert (scores[:, 0] >= scores[:, 1]).all()
        _, cls5 = idx.classify(x[:1], top=5)
        assert cls5[0, 3:].tolist() == [-1, -1]
        D, I = idx.search(x[:3], k=5, classes=["1"])
        assert (y[I] == 1).all()
        D, I = idx.search(x[:3], k=5, classes=[2])
        assert (y[I] == 2).all()
        D1, I1 = idx.search(x[:3], k=5, nprobe=3)
        Dall, Iall = idx.search(x[:3], k=5)
        np.testing.assert_array_equal(D1, Dall)
        with pytest.raises(codedb.InvalidArgument, match="classes"):
            idx.search(x[:1], classes=["nope"])
        shoes = idx.add_class("footwear", x[y == 0][:4] + 40)
        new = idx.add_class("boot", x[y == 0][4:8] + 40, parent="footwear")
        zero = idx.add_class("sandal", parent=shoes)
        assert idx.classify(x[:1] + 40, top=1)[1][0, 0] != new  # staged, not committed
        idx.commit()
        assert idx.classes[new] == "boot" and idx.classes[zero] == "sandal"
        assert idx.classify(x[:1] + 40, top=1)[1][0, 0] in (shoes, new, zero)
        with pytest.raises(codedb.AlreadyExistsError):
            idx.add_class("boot", x[:2])
        with pytest.raises(codedb.NotFoundError):
            idx.add_class("clog", parent="nope")


def test_snapshot_is_pinned(index, data):
    x, _ = data
    with index.snapshot() as s:
        v = s.version
        index.delete(np.arange(10))
        index.add(x[:3])
        index.commit()
        assert len(s) == 600 and s.version == v
        assert len(index) == 593 and index.version == v + 1
        D, I = s.search(x[:1], k=1)
        assert I[0, 0] == 0
    assert s.closed
    _, I = index.search(x[:1], k=600, mode="asym")
    assert 600 in I[0] and not set(range(10)) & set(I[0].tolist())


def test_delete_compact_reports(index, data):
    index.delete([0, 1, 2])
    index.commit()
    index.compact()
    assert len(index) == 597
    versions = index.versions()
    assert isinstance(versions, list) and versions[-1]["version"] == index.version
    report = index.inspect()
    assert isinstance(report, dict)
    verify = index.verify()
    assert verify["ok"] is True and verify["problems"] == []
    assert index.d == 32


def test_model_save_load_and_supervised_training(tmp_path, data, model):
    x, y = data
    model.save(tmp_path / "m.model")
    again = codedb.Model.load(tmp_path / "m.model")
    np.testing.assert_array_equal(again.encode(x[:20]), model.encode(x[:20]))
    assert (again.d, again.code_bits, again.code_kind) == (32, 16, "binary")
    sup = codedb.train(x, "ncmml:8,float", labels=y, seed=2)
    assert (sup.d, sup.code_kind, sup.code_bytes) == (32, "float32", 32)
    # What training did comes back with a trained model; a loaded one has no report.
    r = model.report
    assert r["train"]["training_rows"] == len(x) and r["text"] is None
    itq = r["train"]["itq_loss"]
    assert len(itq) > 1 and itq[-1] <= itq[0], itq
    assert 0 < r["train"]["pca"]["explained_variance_ratio"] <= 1
    assert [s["step"] for s in r["train"]["steps"]], r["train"]["steps"]
    assert again.report is None
    # How it was trained travels with the model file.
    assert again.origin == model.origin
    assert again.origin["spec"].endswith("itq,bits"), again.origin
    assert len(again.origin["steps"]) >= 3 and again.origin["steps"][-1] == "bits"
    with pytest.raises(codedb.InvalidArgument, match="labels"):
        codedb.train(x, "ncmml:8,float")
    with pytest.raises(codedb.InvalidArgument, match="spec|pipeline|nope"):
        codedb.train(x, "nope:3")


def test_model_save_to_a_missing_directory_is_io_error(tmp_path, model):
    with pytest.raises(codedb.IoError, match="nodir") as e:
        model.save(tmp_path / "nodir" / "m.model")
    assert isinstance(e.value, OSError)
