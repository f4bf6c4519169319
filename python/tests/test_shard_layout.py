"""Every shard records its layout (shard i of N, the layout id, the model id) before its first
manifest, and every sharded open checks it: paths in another order, a missing or extra shard,
or a shard of another sharded index is refused naming the path — never a silent re-routing
that duplicates ids."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import warnings

import numpy as np
import pytest

import codedb
from codedb.distributed import (
    LAYOUT_FILE,
    ShardError,
    ShardLayout,
    ShardLayoutWarning,
    ShardedIndex,
    ThreadShards,
)
from test_distributed import N_SHARDS, tied_data


def make(
    tmp: pathlib.Path, name: str = "s", build: bool = False, model: codedb.Model | None = None
) -> tuple[list[pathlib.Path], np.ndarray]:
    x, y, ids = tied_data()
    model = model or codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp / f"{name}{i}" for i in range(N_SHARDS)]
    if build:
        ShardedIndex.build(paths, model, x, ids=ids, labels=y).close()
    else:
        sh = ShardedIndex.create(paths, model)
        sh.add(x, ids=ids)
        sh.commit()
        sh.close()
    return paths, x


def test_reversed_paths_are_refused_and_ids_stay_unique(tmp_path: pathlib.Path) -> None:
    x = tied_data()[0]
    model = codedb.train(x, "pca-itq:16", seed=2)
    paths = [tmp_path / f"s{i}" for i in range(N_SHARDS)]
    sh = ShardedIndex.create(paths, model)
    sh.add(x[:3], ids=[1, 3, 5])
    sh.commit()
    sh.close()
    rev = paths[::-1]
    with pytest.raises(ShardError, match=r"shard 0 \(.*s3\): is shard 3 of 4 but was given as shard 0") as e:
        ShardedIndex.open(rev)
    assert e.value.shard == 0 and e.value.path.endswith("s3")
    with pytest.raises(ShardError, match=r"shard 0 \(.*s3\): is shard 3 of 4"):
        ThreadShards.open(rev)
    # The right order: the same ids again are refused by the shards that hold them.
    with ShardedIndex.open(paths) as again:
        with pytest.raises(ShardError, match="AlreadyExists|exists"):
            again.add(x[:3], ids=[1, 3, 5])
        again.commit()
        _, i = again.search(x[:2], k=3)
        assert len(again) == 3 and sorted(set(i.ravel().tolist())) == [1, 3, 5]


def test_a_missing_or_extra_shard_is_refused_by_name(tmp_path: pathlib.Path) -> None:
    model = codedb.train(tied_data()[0], "pca-itq:16", seed=2)
    paths, _ = make(tmp_path, model=model)
    other, _ = make(tmp_path, "t", model=model)  # the same model: only the layouts differ
    with pytest.raises(ShardError, match=r"shard 0 \(.*s0\): its sharded index has 4 shards but 3 paths were given \(a shard is missing\)"):
        ShardedIndex.open(paths[:3])
    with pytest.raises(ShardError, match=r"shard 4 \(.*t0\): belongs to sharded index [0-9a-f]{32} \(shard 0 of 4\)"):
        ShardedIndex.open([*paths, other[0]])
    with pytest.raises(ShardError, match=r"shard 2 \(.*t2\): belongs to sharded index"):
        ThreadShards.open([paths[0], paths[1], other[2], paths[3]])
    # Every lock taken before a refusal is released.
    ShardedIndex.open(paths).close()


def test_layout_record_is_written_whole_before_the_index(tmp_path: pathlib.Path) -> None:
    paths, _ = make(tmp_path, build=True)
    recs = [ShardLayout.read(p) for p in paths]
    assert [r.shard for r in recs] == list(range(N_SHARDS))
    assert {r.shards for r in recs} == {N_SHARDS} and len({r.layout for r in recs}) == 1
    model_id = codedb.Snapshot.open(paths[0]).model.id
    assert {r.model for r in recs} == {model_id}
    # No temporary file left; the record is a JSON line and its CRC-32.
    assert not list(paths[0].glob("*.tmp"))
    body, crc, end = (paths[1] / LAYOUT_FILE).read_bytes().split(b"\n")
    assert json.loads(body)["shard"] == 1 and crc.startswith(b"crc32 ") and end == b""
    # A build that fails (NaN) leaves no record and no directory behind.
    x = tied_data()[0].copy()
    x[7, 3] = np.nan
    model = codedb.train(tied_data()[0], "pca-itq:16", seed=2)
    fresh = tmp_path / "n0"
    with pytest.raises(ShardError, match=r"shard 0 \(.*n0\)"):
        ShardedIndex.build([fresh], model, x, ids=np.arange(len(x)))
    assert not fresh.exists()


def test_a_damaged_record_is_refused_naming_the_file(tmp_path: pathlib.Path) -> None:
    paths, _ = make(tmp_path)
    f = paths[2] / LAYOUT_FILE
    data = bytearray(f.read_bytes())
    data[12] ^= 0x01
    os.chmod(f, 0o644)
    f.write_bytes(bytes(data))
    with pytest.raises(ShardError, match=r"shard 2 \(.*s2\): CorruptError: .*SHARD.json: shard layout record does not read: checksum mismatch"):
        ShardedIndex.open(paths)


def test_shards_without_records_need_an_explicit_adoption(tmp_path: pathlib.Path) -> None:
    """Shards made before layout records: readers warn, the writer refuses until the caller
    states the order (adopt_layout=True), which records it; a mix is refused."""
    paths, x = make(tmp_path)
    for p in paths:
        (p / LAYOUT_FILE).unlink()
    with pytest.raises(ShardError, match=r"shard 0 .*no shard has a layout record .*adopt_layout=True"):
        ShardedIndex.open(paths)
    with pytest.warns(ShardLayoutWarning, match="order of the 4 paths is trusted"):
        ThreadShards.open(paths).close()
    ShardedIndex.open(paths, adopt_layout=True).close()
    assert [ShardLayout.read(p).shard for p in paths] == [0, 1, 2, 3]
    with pytest.raises(ShardError, match=r"is shard 3 of 4 but was given as shard 0"):
        ShardedIndex.open(paths[::-1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ThreadShards.open(paths).close()
    (paths[1] / LAYOUT_FILE).unlink()
    with pytest.raises(ShardError, match=r"shard 1 \(.*s1\): has no layout record .* but shard 0"):
        ShardedIndex.open(paths, adopt_layout=True)


def test_verify_and_gc_keep_the_record(tmp_path: pathlib.Path) -> None:
    paths, _ = make(tmp_path)
    with codedb.Index.open(paths[0]) as ix:
        report = ix.verify()
        assert report["problems"] == [], report["problems"]
        assert LAYOUT_FILE not in report.get("unreferenced", [])
        assert ix.inspect()["shard_layout"]["shard"] == 0
        ix.compact()
    assert ShardLayout.read(paths[0]).shard == 0
    # A copy of a shard is still that shard: moving directories keeps the layout.
    shutil.copytree(paths[3], tmp_path / "moved3")
    ShardedIndex.open([*paths[:3], tmp_path / "moved3"]).close()
