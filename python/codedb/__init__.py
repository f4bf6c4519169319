"""codedb: an embedded, versioned, checksummed index database for compact image codes.

Train a model (``codedb.train``), keep codes in an index (``codedb.Index``), search it with
FAISS-shaped results, classify with class means. See README.md for the quick start.
"""

from __future__ import annotations

from codedb._codedb import (
    Index,
    Model,
    Snapshot,
    classify_sums,
    ivf_filter_scans_passing,
    ivf_probe_decision,
    spec_from_faiss,
    train,
)
# The Cargo package version (`codedb --version` prints the same).
from codedb._codedb import __version__ as __version__
from codedb._errors import (
    AlreadyExistsError,
    ClosedError,
    CodedbError,
    CorruptError,
    FallbackWarning,
    FellBackError,
    InvalidArgument,
    IoError,
    LockedError,
    ModelError,
    NotFoundError,
    UnsupportedVersionError,
)

__all__ = [
    "Index",
    "Model",
    "Snapshot",
    "train",
    "classify_sums",
    "ivf_probe_decision",
    "ivf_filter_scans_passing",
    "spec_from_faiss",
    "AlreadyExistsError",
    "ClosedError",
    "CodedbError",
    "CorruptError",
    "FallbackWarning",
    "FellBackError",
    "InvalidArgument",
    "IoError",
    "LockedError",
    "ModelError",
    "NotFoundError",
    "UnsupportedVersionError",
]
