"""The small records of a sharded index (FORMAT.md §8: ``SHARD.json``, ``CUT.json``): one JSON
line and a CRC-32 line, so a damaged record is found, not read as another shard's or cut's."""

from __future__ import annotations

import json
import os
import pathlib
import zlib
from typing import Any

from codedb._errors import CorruptError


def encode(fields: dict[str, Any]) -> bytes:
    """A record's bytes: ``fields`` as one compact JSON line, then ``crc32 <8 hex digits>``."""
    body = json.dumps(fields, separators=(",", ":")).encode()
    return body + b"\n" + f"crc32 {zlib.crc32(body):08x}\n".encode()


def decode(data: bytes, path: str, what: str, fmt: int | tuple[int, ...]) -> dict[str, Any]:
    """The fields of a record of format ``fmt`` (or one of several); a damaged or
    other-format record is a :class:`CorruptError` naming ``path`` and ``what`` it is."""
    lines = data.split(b"\n")
    if len(lines) != 3 or lines[2] != b"" or not lines[1].startswith(b"crc32 "):
        raise bad(path, what, "expected a JSON line and a crc32 line")
    try:
        want = int(lines[1][6:], 16)
    except ValueError:
        raise bad(path, what, "the crc32 line is not hexadecimal") from None
    if len(lines[1]) != 14 or zlib.crc32(lines[0]) != want:
        raise bad(path, what, "checksum mismatch: the file is damaged")
    try:
        rec = json.loads(lines[0])
    except ValueError as e:
        raise bad(path, what, f"not JSON ({e})") from None
    fmts = (fmt,) if isinstance(fmt, int) else fmt
    if not isinstance(rec, dict) or rec.get("format") not in fmts:
        got = rec.get("format") if isinstance(rec, dict) else rec
        reads = " or ".join(str(f) for f in fmts)
        raise bad(path, what, f"format {got!r}, this codedb reads {reads}")
    return rec


def bad(path: str, what: str, why: str) -> CorruptError:
    """The error for a record that does not read."""
    return CorruptError(f"{path}: {what} does not read: {why}")


def is_hex32(v: object) -> bool:
    """Whether ``v`` is an id of 32 lowercase hex digits (a layout or model id)."""
    return isinstance(v, str) and len(v) == 32 and all(c in "0123456789abcdef" for c in v)


def publish(path: str | os.PathLike[str], name: str, data: bytes) -> None:
    """Publishes ``data`` as file ``name`` in directory ``path`` as codedb publishes a file
    (FORMAT.md §11.1): a temporary name, fsync, read-only, rename, directory fsync — so a crash
    leaves the old record or the new one, whole."""
    d = pathlib.Path(path)
    tmp = d / (name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, d / name)
    fsync_dir(d)


def fsync_dir(d: pathlib.Path) -> None:
    """Makes a directory's entries durable."""
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
