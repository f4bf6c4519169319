"""The sharded writer without Ray: writes in each shard's writer, the journal replayed into a
writer that restarted (nothing acknowledged lost, nothing applied twice), cut records pinned
by readers, health, restart, compaction and GC per shard, builds from .npy files."""

from __future__ import annotations

import json
import pathlib
import warnings

import numpy as np
import pytest

import codedb
from codedb.distributed import (
    CUT_FILE,
    Cut,
    ShardCutWarning,
    ShardedIndex,
    ShardedSearcher,
    ThreadShards,
)
from test_distributed import N_SHARDS, assert_same, tied_data


def fresh(tmp: pathlib.Path, spec: str = "pca-itq:16") -> tuple[codedb.Index, ShardedIndex]:
    x, _, _ = tied_data()
    model = codedb.train(x, spec, seed=2)
    one = codedb.Index.create(tmp / "one", model)
    sharded = ShardedIndex.create([tmp / f"s{i}" for i in range(N_SHARDS)], model)
    return one, sharded


def test_a_restarted_writer_gets_the_staged_writes_replayed(tmp_path: pathlib.Path) -> None:
    x, y, ids = tied_data()
    one, sh = fresh(tmp_path)
    for target in (one, sh):
        target.add(x[:300], ids=ids[:300])
        target.commit()
        target.add(x[300:600], ids=ids[300:600])
        target.delete(ids[:50])
    # Shard 1's writer restarts between two staged writes: its staged rows and deletes are gone
    # with it; the next write finds a new incarnation, the driver replays, then writes.
    sh._w.restart(1)
    for target in (one, sh):
        target.add(x[600:], ids=ids[600:])
        target.commit()
    assert len(sh) == len(one) == len(x) - 50
    q = x[::17] + np.float32(0.01)
    assert_same(sh.search(q, k=20), one.search(q, k=20))
    # restart() by hand, with writes staged: the same.
    for target in (one, sh):
        target.upsert(x[:10] + np.float32(1.0), ids=ids[:10])
        target.delete(ids[60:70])
    info = sh.restart(2)
    assert info["alive"] and info["staged"] > 0 and info["version"] == sh.cut.versions[2]
    for target in (one, sh):
        target.commit()
    assert len(sh) == len(one)
    assert_same(sh.search(q, k=20), one.search(q, k=20))
    # A writer lost right after its commit published: the sharded commit does not repeat it
    # (nor replay its writes on top of it), and the cut names that version.
    for target in (one, sh):
        target.add(x[:3] + np.float32(2.0), ids=[30_001, 30_002, 30_003])
    s = int(codedb.distributed.shard_of(np.array([30_001]), N_SHARDS)[0])
    published = sh.indexes[s].commit()
    sh._w.restart(s)
    versions = sh.commit()
    one.commit()
    assert versions[s] == published and sh.cut.versions[s] == published
    assert len(sh) == len(one)
    assert_same(sh.search(q, k=20), one.search(q, k=20))
    sh.close()


def test_health_reports_every_shard(tmp_path: pathlib.Path) -> None:
    x, _, ids = tied_data()
    _, sh = fresh(tmp_path)
    sh.add(x, ids=ids)
    sh.commit()
    sh.add(x[:5] + 1, ids=np.arange(20_000, 20_005))
    h = sh.health()
    assert [r["shard"] for r in h] == list(range(N_SHARDS))
    assert all(r["alive"] and r["version"] == 2 and not r["fell_back"] for r in h)
    assert sum(r["rows"] for r in h) == len(x)
    assert sum(r["staged"] for r in h) == len({int(s) for s in codedb.distributed.shard_of(
        np.arange(20_000, 20_005), N_SHARDS)})
    with pytest.raises(codedb.InvalidArgument, match="shard: 9"):
        sh.restart(9)
    sh.close()


def test_commit_publishes_a_cut_that_readers_pin(tmp_path: pathlib.Path) -> None:
    x, _, ids = tied_data()
    _, sh = fresh(tmp_path)
    assert sh.cut is not None and sh.cut.cut == 1 and sh.cut.versions == (1,) * N_SHARDS
    sh.add(x[:400], ids=ids[:400])
    assert sh.commit() == [2] * N_SHARDS
    cut = Cut.read(sh.paths[0])
    assert cut == sh.cut and cut.cut == 2 and cut.versions == (2,) * N_SHARDS
    record = (pathlib.Path(sh.paths[0]) / CUT_FILE).read_bytes().split(b"\n")
    assert json.loads(record[0])["versions"] == [2] * N_SHARDS
    reader = ThreadShards.open(sh.paths)
    assert [t.version for t in reader.targets] == [2] * N_SHARDS
    # A sharded commit cut short: shards 0 and 1 committed, the driver died before 2, 3 and
    # the cut. Readers keep cut 2, while the shards' newest versions mix old and new rows.
    sh.add(x[400:], ids=ids[400:])
    for s in (0, 1):
        sh.indexes[s].commit()
    newest = sum(len(codedb.Snapshot.open(p)) for p in sh.paths)
    assert 400 < newest < len(x), "the newest versions must show the partial commit"
    sh.close()
    fresh_reader = ThreadShards.open(sh.paths)
    assert sum(len(t) for t in fresh_reader.targets) == 400
    assert reader.refresh() == [2] * N_SHARDS
    # The writer reopened: warned that shards 0, 1 are past the cut; redoing the commit with
    # upsert (idempotent by id) publishes it whole.
    with pytest.warns(ShardCutWarning, match=r"shard 0 .*version 3, the published cut 2 names 2"):
        sh = ShardedIndex.open(sh.paths)
    sh.upsert(x[400:], ids=ids[400:])
    versions = sh.commit()
    assert versions == [4, 4, 3, 3] and sh.cut.cut == 3
    assert reader.refresh() == versions
    assert sum(len(t) for t in reader.targets) == len(x)
    one = codedb.Index.build(tmp_path / "all", sh.model, x, ids=ids)
    searcher = ShardedSearcher(reader)
    assert_same(searcher.search(x[::31], k=9), one.search(x[::31], k=9))
    searcher.close()
    fresh_reader.close()
    sh.close()


def test_a_damaged_cut_is_named(tmp_path: pathlib.Path) -> None:
    _, sh = fresh(tmp_path)
    sh.close()
    f = pathlib.Path(sh.paths[0]) / CUT_FILE
    b = bytearray(f.read_bytes())
    b[5] ^= 0x01
    f.chmod(0o644)
    f.write_bytes(bytes(b))
    with pytest.raises(codedb.distributed.ShardError, match=r"shard 0 .*CUT.json: cut record does not read"):
        ThreadShards.open(sh.paths)
    with pytest.raises(codedb.CorruptError, match="CUT.json: cut record does not read"):
        ShardedIndex.open(sh.paths)


def test_compact_and_gc_run_per_shard_and_keep_the_cut(tmp_path: pathlib.Path) -> None:
    x, _, ids = tied_data()
    one, sh = fresh(tmp_path)
    for target in (one, sh):
        for part in np.array_split(np.arange(len(x)), 4):
            target.add(x[part], ids=ids[part])
            target.commit()
        target.delete(ids[::5])
        target.commit()
    reports = sh.compact(full=True)
    one.compact(full=True)
    assert len(reports) == N_SHARDS
    assert sh.cut.versions == tuple(ix.version for ix in sh.indexes)
    gcs = sh.gc()
    assert len(gcs) == N_SHARDS and all("removed" in g for g in gcs)
    reader = ThreadShards.open(sh.paths)
    assert [t.version for t in reader.targets] == list(sh.cut.versions)
    assert_same(sh.search(x[::13], k=10), one.search(x[::13], k=10))
    reader.close()
    # A shard past the cut: GC refuses rather than remove what the cut names.
    sh.indexes[3].add(x[:1] + 3, ids=[77_777])
    sh.indexes[3].commit()
    with pytest.raises(codedb.distributed.ShardError, match=r"shard 3 .*commit the sharded index"):
        sh.gc()
    sh.close()


def test_build_from_npy_files_each_writer_reads(tmp_path: pathlib.Path) -> None:
    x, y, ids = tied_data()
    model = codedb.train(x, "pq:8x8", seed=2)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "y.npy", y)
    one = codedb.Index.build(tmp_path / "one", model, x, ids=ids, labels=y)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.build(paths, model, tmp_path / "x.npy", tmp_path / "ids.npy",
                            tmp_path / "y.npy")
    assert len(sh) == len(one)
    assert_same(sh.search(x[::19], k=10), one.search(x[::19], k=10))
    assert_same(sh.classify(x[::19], top=2), one.classify(x[::19], top=2))
    sh.close()
    with pytest.raises(codedb.InvalidArgument, match="ids: with x a file"):
        ShardedIndex.build([tmp_path / f"t{i}" for i in range(2)], model, tmp_path / "x.npy", ids)
    with pytest.raises(codedb.distributed.ShardError, match=r"shard 0 .*missing.npy: cannot read"):
        ShardedIndex.build([tmp_path / f"u{i}" for i in range(2)], model, tmp_path / "missing.npy",
                           tmp_path / "ids.npy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ShardedIndex.open(paths).close()
