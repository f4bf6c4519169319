"""The layout record (FORMAT.md §8.1): which shard of which sharded index a directory is."""

from __future__ import annotations

import hashlib
import os
import pathlib
import time
import warnings
from typing import Callable, NamedTuple, Sequence

from codedb._codedb import Index
from codedb._errors import CodedbError, CorruptError, InvalidArgument
from codedb.distributed import _record
from codedb.distributed._errors import ShardError, ShardLayoutWarning

_Path = str | os.PathLike[str]

#: The layout record's file name in a shard directory.
LAYOUT_FILE = "SHARD.json"
#: Format 1: rows partitioned by id; format 2: by inverted list (``partition``, ``list_shards``).
_LAYOUT_FORMATS = (1, 2)


class ShardLayout(NamedTuple):
    """A shard's layout record: it is shard ``shard`` of ``shards`` of the sharded index
    ``layout`` (32 hex digits, made at create), whose rows are encoded by model ``model``.
    ``lists``: ``None`` when rows are partitioned by id (``splitmix64(id) mod shards``), else
    the shard of every inverted list of the model's coarse quantiser (``lists[l]``: the shard
    holding list l's rows)."""

    layout: str
    shard: int
    shards: int
    model: str
    lists: tuple[int, ...] | None = None

    def to_bytes(self) -> bytes:
        fields: dict[str, object] = {
            "format": 1 if self.lists is None else 2,
            "layout": self.layout,
            "shard": self.shard,
            "shards": self.shards,
            "model": self.model,
        }
        if self.lists is not None:
            fields["partition"] = "list"
            fields["list_shards"] = list(self.lists)
        return _record.encode(fields)

    @staticmethod
    def from_bytes(data: bytes, path: str) -> ShardLayout:
        """Parses a record; a damaged one is a :class:`CorruptError` naming ``path``."""

        def bad(why: str) -> CorruptError:
            return _record.bad(path, "shard layout record", why)

        rec = _record.decode(data, path, "shard layout record", _LAYOUT_FORMATS)
        layout, shard, shards, model = (rec.get(k) for k in ("layout", "shard", "shards", "model"))
        if not (type(shards) is int and type(shard) is int and 0 <= shard < shards):
            raise bad(f"shard {shard!r} of {shards!r}")
        for name, v in (("layout", layout), ("model", model)):
            if not _record.is_hex32(v):
                raise bad(f"{name} {v!r} is not 32 hex digits")
        lists = None
        if rec["format"] == 2:
            if rec.get("partition") != "list":
                raise bad(f"partition {rec.get('partition')!r}, expected 'list'")
            ls = rec.get("list_shards")
            if (not isinstance(ls, list) or not ls
                    or not all(type(v) is int and 0 <= v < shards for v in ls)):
                raise bad(f"list_shards is not one shard (0 ≤ s < {shards}) per list")
            lists = tuple(ls)
        return ShardLayout(str(layout), shard, shards, str(model), lists)

    @property
    def partition(self) -> str:
        """How rows are partitioned: ``"id"`` or ``"list"``."""
        return "id" if self.lists is None else "list"

    @staticmethod
    def read(path: _Path) -> ShardLayout | None:
        """The record of the shard directory ``path``; ``None`` when it has none."""
        f = pathlib.Path(path) / LAYOUT_FILE
        try:
            data = f.read_bytes()
        except FileNotFoundError:
            return None
        return ShardLayout.from_bytes(data, str(f))

    def write(self, path: _Path) -> None:
        """Publishes the record in ``path`` atomically (FORMAT.md §11.1)."""
        _record.publish(path, LAYOUT_FILE, self.to_bytes())


def _new_layout_id(paths: Sequence[_Path], model_id: str) -> str:
    """A new layout's identity: unique (clock, process, paths, model), not random."""
    seed = f"{time.time_ns()}:{os.getpid()}:{model_id}:" + "|".join(
        str(pathlib.Path(p).resolve()) for p in paths
    )
    return hashlib.blake2b(seed.encode(), digest_size=16).hexdigest()


def check_layout(
    paths: Sequence[str], records: Sequence[ShardLayout | None], models: Sequence[str]
) -> list[int]:
    """Checks the shards at ``paths`` (their layout records and model ids) form one sharded
    index in this order; raises :class:`ShardError` naming the first shard that does not.
    Returns the shards without a record, which is allowed only when no shard has one (an index
    made before layout records)."""
    unmarked = [s for s, r in enumerate(records) if r is None]
    marked = [s for s, r in enumerate(records) if r is not None]
    if unmarked and marked:
        s, m = unmarked[0], marked[0]
        raise ShardError(
            s, paths[s],
            f"has no layout record ({LAYOUT_FILE}) but shard {m} ({paths[m]}) has one: it is "
            "not a shard of that sharded index",
        )
    if not marked:
        return unmarked
    ref = records[marked[0]]
    assert ref is not None
    for s, r in enumerate(records):
        assert r is not None
        if r.layout != ref.layout:
            raise ShardError(
                s, paths[s],
                f"belongs to sharded index {r.layout} (shard {r.shard} of {r.shards}), not to "
                f"{ref.layout} of shard 0 ({paths[0]})",
            )
    for s, r in enumerate(records):
        assert r is not None
        if r.shards != len(paths):
            raise ShardError(
                s, paths[s],
                f"its sharded index has {r.shards} shards but {len(paths)} paths were given "
                f"(a shard is {'missing' if len(paths) < r.shards else 'extra'})",
            )
        if r.shard != s:
            raise ShardError(
                s, paths[s],
                f"is shard {r.shard} of {r.shards} but was given as shard {s}: pass the paths in "
                "the order the sharded index was created with (ids route by position)",
            )
        if r.model != models[s]:
            raise ShardError(
                s, paths[s],
                f"its layout record names model {r.model}, but the shard holds model {models[s]}",
            )
        if r.lists != ref.lists:
            raise ShardError(
                s, paths[s],
                f"its layout record partitions rows by {r.partition}"
                + (" with another list placement" if r.partition == ref.partition else "")
                + f" than shard 0's ({paths[0]}, by {ref.partition})",
            )
    return []



def _check_shards(
    names: Sequence[str],
    models: Sequence[str],
    writer: bool,
    records: Sequence[ShardLayout | None] | None = None,
    want: str | None = None,
    adopt: bool = False,
) -> list[int]:
    """One sharded index's checks at open: every shard has the same model (``want``, default
    shard 0's), and the layout records match the paths (:func:`check_layout`). Shards without
    records are refused for a ``writer`` (unless it will ``adopt`` the order) and warned about
    for a reader; returns them."""
    want = want or models[0]
    for s, m in enumerate(models):
        if m != want:
            raise ShardError(
                s, names[s],
                f"model {m} differs from the sharded index's {want} (shard 0: {names[0]}); "
                "every shard must be made with the same model",
            )
    if records is None:
        read: list[ShardLayout | None] = []
        for s, p in enumerate(names):
            try:
                read.append(ShardLayout.read(p))
            except (CodedbError, OSError) as e:
                raise ShardError(s, p, e) from e
        records = read
    unmarked = check_layout(names, records, models)
    if unmarked and writer and adopt:
        return unmarked
    if unmarked and writer:
        raise ShardError(
            0, names[0],
            f"no shard has a layout record ({LAYOUT_FILE}; made before codedb wrote them), so "
            "the order of the paths cannot be checked; if they are in the order the index was "
            "created with, open it once with adopt_layout=True to record it",
        )
    if unmarked:
        warnings.warn(
            ShardLayoutWarning(
                f"no shard has a layout record ({LAYOUT_FILE}; made before codedb wrote them): "
                f"the order of the {len(names)} paths is trusted, not checked"
            ),
            stacklevel=3,
        )
    return unmarked


def _with_record(path: _Path, record: ShardLayout, make: Callable[[], Index]) -> Index:
    """Writes the layout record into ``path`` (made if missing), then ``make()``s the shard's
    index there: the record exists before any manifest, so no crash leaves a shard without
    it. A directory already holding an index is left alone (``make`` refuses it); a failed
    ``make`` takes the record (and the directory, if this made it) away again."""
    d = pathlib.Path(path)
    if d.is_dir() and any(d.glob("v*.manifest")):
        return make()  # refused by the engine (it already holds an index), record untouched
    made_dir = not d.exists()
    d.mkdir(parents=True, exist_ok=True)
    record.write(d)
    try:
        return make()
    except BaseException:
        if not any(d.glob("v*.manifest")):
            (d / LAYOUT_FILE).unlink(missing_ok=True)
            if made_dir:
                try:
                    d.rmdir()
                except OSError:
                    pass  # the failed make left files; its error names them
        raise


def _check_paths(paths: Sequence[_Path]) -> None:
    if not paths:
        raise InvalidArgument("paths: at least one shard directory")
    real = [pathlib.Path(p).resolve() for p in paths]
    if len(set(real)) != len(real):
        raise InvalidArgument("paths: a directory appears twice")


