"""The exceptions of codedb, one class per kind of engine error.

The native module picks the class from the engine error's variant (never from its text); the
message is the engine's, naming the file and section, or the argument, at fault.
"""

from __future__ import annotations


class CodedbError(Exception):
    """Any codedb error."""


class CorruptError(CodedbError):
    """A file or manifest does not read: checksum, truncation, bad magic, bad section."""


class UnsupportedVersionError(CodedbError):
    """A file of a format version this codedb does not read."""


class LockedError(CodedbError):
    """Another writer (process or handle) holds the index's lock."""


class InvalidArgument(CodedbError, ValueError):
    """An argument is wrong: shape, dimension, NaN, unknown mode, out-of-range value."""


class NotFoundError(CodedbError, LookupError):
    """No index at the path, or an unknown id or class."""


class AlreadyExistsError(CodedbError):
    """The index, id or class exists already."""


class IoError(CodedbError, OSError):
    """The operating system refused a read or write."""


class ModelError(CodedbError):
    """Training or applying a model failed (linear algebra, classifier training)."""


class ClosedError(CodedbError):
    """The index or snapshot was closed."""


class FellBackError(CorruptError):
    """A write to an index that opened at an older version because its newest manifest(s) do
    not read: writers refuse until ``Index.recover(path, to_version=N)`` accepts the loss (or
    the damaged manifest is restored). The message names the index directory."""


class FallbackWarning(UserWarning):
    """An open served an older version because newer manifests do not read (the CLI's
    ``codedb: warning: …`` lines, naming the index directory). ``skipped_manifests`` on the
    ``Snapshot`` or ``Index`` lists them; writes raise :class:`FellBackError` until
    ``Index.recover``."""


__all__ = [
    "CodedbError",
    "CorruptError",
    "UnsupportedVersionError",
    "LockedError",
    "InvalidArgument",
    "NotFoundError",
    "AlreadyExistsError",
    "IoError",
    "ModelError",
    "ClosedError",
    "FellBackError",
    "FallbackWarning",
]
