"""The cut record (FORMAT.md §8.2): one version of a whole sharded index.

Each shard's commit is atomic; a sharded commit is N of them, one after another, so between
the first and the last a reader that opened every shard's newest version would see the new
rows of some shards only. A sharded commit therefore ends by publishing a *cut*: the version
of every shard, written after every shard's commit returned, as one small file in shard 0's
directory (``CUT.json``: a JSON line and a CRC-32 line, published as codedb publishes a file —
temporary name, fsync, rename, directory fsync — so a crash leaves the old cut or the new one,
whole). Readers open a cut and pin each shard at the version it names
(:meth:`Snapshot.open` with ``version=``), so they see whole sharded commits only: a crash
between shard commits leaves the previous cut, which names the previous versions, visible.
"""

from __future__ import annotations

import os
import pathlib
from typing import NamedTuple, Sequence

from codedb._errors import CorruptError
from codedb.distributed import _record

#: The cut record's file name, in shard 0's directory.
CUT_FILE = "CUT.json"
_CUT_FORMAT = 1


class Cut(NamedTuple):
    """Cut number ``cut`` of the sharded index ``layout``: shard s at version
    ``versions[s]``."""

    layout: str
    cut: int
    versions: tuple[int, ...]

    def to_bytes(self) -> bytes:
        return _record.encode(
            {"format": _CUT_FORMAT, "layout": self.layout, "cut": self.cut,
             "versions": list(self.versions)}
        )

    @staticmethod
    def from_bytes(data: bytes, path: str) -> Cut:
        """Parses a record; a damaged one is a :class:`CorruptError` naming ``path``."""

        def bad(why: str) -> CorruptError:
            return _record.bad(path, "cut record", why)

        rec = _record.decode(data, path, "cut record", _CUT_FORMAT)
        layout, cut, versions = rec.get("layout"), rec.get("cut"), rec.get("versions")
        if not _record.is_hex32(layout):
            raise bad(f"layout {layout!r} is not 32 hex digits")
        if type(cut) is not int or cut < 1:
            raise bad(f"cut {cut!r} is not a number ≥ 1")
        if (not isinstance(versions, list) or not versions
                or not all(type(v) is int and v >= 1 for v in versions)):
            raise bad(f"versions {versions!r} are not one version ≥ 1 per shard")
        return Cut(str(layout), cut, tuple(versions))

    @staticmethod
    def read(path: str | os.PathLike[str]) -> Cut | None:
        """The cut record in shard 0's directory ``path``; ``None`` when it has none (an index
        made before cut records, or one never committed as a sharded index)."""
        f = pathlib.Path(path) / CUT_FILE
        try:
            data = f.read_bytes()
        except FileNotFoundError:
            return None
        return Cut.from_bytes(data, str(f))

    @staticmethod
    def publish(path: str | os.PathLike[str], data: bytes) -> None:
        """Publishes the record's bytes in ``path`` atomically (FORMAT.md §11.1)."""
        _record.publish(path, CUT_FILE, data)

    def check(self, layout: str, paths: Sequence[str]) -> None:
        """A cut of another sharded index, or of another shard count, is corrupt."""
        if self.layout != layout or len(self.versions) != len(paths):
            raise CorruptError(
                f"{pathlib.Path(paths[0]) / CUT_FILE}: cut {self.cut} is of sharded index "
                f"{self.layout} with {len(self.versions)} shards, not of {layout} with "
                f"{len(paths)}"
            )
