# Hand-written stubs of the native module; `python -m mypy.stubtest codedb._codedb` checks
# them against the built module (python/tests/test_stubs.py).
import os
import pathlib
from typing import Any, Callable, Iterable, Literal, Sequence, final, overload, type_check_only

import numpy as np
import numpy.typing as npt
from numpy.typing import ArrayLike
from typing_extensions import Self, TypeAlias

from codedb._errors import FallbackWarning as FallbackWarning

__all__ = ["FallbackWarning", "Index", "Model", "Snapshot", "__version__", "classify_sums", "ivf_filter_scans_passing", "ivf_probe_decision", "larger_is_better", "spec_from_faiss", "train"]

__version__: str

_Path: TypeAlias = str | os.PathLike[str]

@final
class Model:
    @property
    def d(self) -> int: ...
    @property
    def code_bits(self) -> int: ...
    @property
    def code_bytes(self) -> int: ...
    @property
    def code_kind(self) -> str: ...
    @property
    def ivf_lists(self) -> int | None: ...
    @property
    def id(self) -> str: ...
    @property
    def report(self) -> dict[str, Any] | None: ...
    @property
    def origin(self) -> dict[str, Any] | None: ...
    def encode(self, x: ArrayLike) -> npt.NDArray[np.uint8]: ...
    def assign_lists(self, x: ArrayLike) -> npt.NDArray[np.uint32]: ...
    def probe_lists(self, q: ArrayLike, nprobe: int) -> npt.NDArray[np.uint32]: ...
    def decode(self, codes: ArrayLike) -> npt.NDArray[np.float32]: ...
    def save(self, path: _Path) -> None: ...
    @staticmethod
    def load(path: _Path) -> Model: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> Model: ...
    def __reduce__(self) -> tuple[Any, tuple[bytes]]: ...

def train(
    x: ArrayLike,
    spec: str,
    labels: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    cca_rho: float | str | Sequence[float] | None = None,
    seed: int = 1234,
    sample: int | None = None,
    captions: Sequence[str | Sequence[str]] | None = None,
    margin: str = "constant",
    epsilon: float | None = None,
    pamir_c: Sequence[float] = ...,
    pamir_iterations: int = 10000000,
    pamir_patience: int = 3,
    pamir_validation: float = 0.2,
    pamir_validation_groups: ArrayLike | None = None,
    max_words: int = 100000,
    progress: bool | Callable[[str, str, int, int], object] | None = None,
) -> Model: ...

def larger_is_better(mode: str | None = None) -> bool: ...
def classify_sums(
    model: Model, dim: int, classes: Iterable[Any], x: ArrayLike, top: int = 5
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...

def spec_from_faiss(factory: str, d: int | None = None) -> tuple[str, list[str]]: ...
def ivf_probe_decision(
    passing: Sequence[int],
    read: Sequence[int],
    nprobe: int,
    lists: int,
    k: int,
    rerank: int | None = None,
    live: int = 0,
) -> int | str | None: ...
def ivf_filter_scans_passing(passing: int, live: int, nprobe: int, lists: int, k: int) -> bool: ...

# The query methods `Index` and `Snapshot` share, written once. At run time the two classes
# have no common base: python/src/query_methods.rs writes these methods into each PyO3 class
# (a shared native base would take `#[pyclass(subclass)]` and `extends`, changing both
# classes' layout), so `_Queries` exists for type checkers only and `help()` shows each
# method on `Index` and on `Snapshot`.
@type_check_only
class _Queries:
    @overload
    def search(
        self,
        q: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        mih: Literal["auto", "on", "off"] = "auto",
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: None = None,
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]: ...
    @overload
    def search(
        self,
        q: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        mih: Literal["auto", "on", "off"] = "auto",
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        *,
        columns: str | Iterable[str],
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]: ...
    @overload
    def search(
        self,
        q: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        mih: Literal["auto", "on", "off"] = "auto",
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: str | Iterable[str] | None = None,
        *,
        as_frame: Literal[True],
    ) -> Any: ...
    @overload
    def search_text(
        self,
        queries: str | Sequence[str],
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        mih: Literal["auto", "on", "off"] = "auto",
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: None = None,
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    @overload
    def search_text(
        self,
        queries: str | Sequence[str],
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        mih: Literal["auto", "on", "off"] = "auto",
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        *,
        columns: str | Iterable[str],
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]: ...
    @overload
    def search_text(
        self,
        queries: str | Sequence[str],
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        mih: Literal["auto", "on", "off"] = "auto",
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: str | Iterable[str] | None = None,
        *,
        as_frame: Literal[True],
    ) -> Any: ...
    @overload
    def search_examples(
        self,
        examples: ArrayLike | list[ArrayLike] | tuple[ArrayLike, ...],
        k: int = 10,
        negatives: ArrayLike | list[ArrayLike] | tuple[ArrayLike, ...] | None = None,
        random_negatives: int | None = None,
        seed: int = 1234,
        svm_c: float | None = None,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: None = None,
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    @overload
    def search_examples(
        self,
        examples: ArrayLike | list[ArrayLike] | tuple[ArrayLike, ...],
        k: int = 10,
        negatives: ArrayLike | list[ArrayLike] | tuple[ArrayLike, ...] | None = None,
        random_negatives: int | None = None,
        seed: int = 1234,
        svm_c: float | None = None,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        *,
        columns: str | Iterable[str],
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]: ...
    @overload
    def search_examples(
        self,
        examples: ArrayLike | list[ArrayLike] | tuple[ArrayLike, ...],
        k: int = 10,
        negatives: ArrayLike | list[ArrayLike] | tuple[ArrayLike, ...] | None = None,
        random_negatives: int | None = None,
        seed: int = 1234,
        svm_c: float | None = None,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: str | Iterable[str] | None = None,
        *,
        as_frame: Literal[True],
    ) -> Any: ...
    @overload
    def search_classifier(
        self,
        classifier: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: None = None,
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    @overload
    def search_classifier(
        self,
        classifier: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        *,
        columns: str | Iterable[str],
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]: ...
    @overload
    def search_classifier(
        self,
        classifier: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        classes: Iterable[str | int] | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: str | Iterable[str] | None = None,
        *,
        as_frame: Literal[True],
    ) -> Any: ...
    def ivf_list_counts(
        self,
        q: ArrayLike,
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        start: Iterable[int] | None = None,
        count: int | None = None,
    ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]] | None: ...
    def search_ivf_planned(
        self,
        q: ArrayLike,
        plan: Sequence[Iterable[int] | None],
        k: int = 10,
        mode: str | None = None,
        rerank: int | None = None,
        nprobe: int | None = None,
        threads: int = 1,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
    ) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64]]: ...
    def passing_rows(
        self,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
    ) -> int: ...
    @overload
    def search_radius(
        self,
        q: ArrayLike,
        radius: int,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: None = None,
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64]]: ...
    @overload
    def search_radius(
        self,
        q: ArrayLike,
        radius: int,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        *,
        columns: str | Iterable[str],
        as_frame: Literal[False] = False,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.int64], dict[str, npt.NDArray[Any]]]: ...
    @overload
    def search_radius(
        self,
        q: ArrayLike,
        radius: int,
        where: str | None = None,
        ids: Iterable[int] | npt.NDArray[np.integer[Any]] | None = None,
        columns: str | Iterable[str] | None = None,
        *,
        as_frame: Literal[True],
    ) -> Any: ...
    def classify(
        self, x: ArrayLike, top: int = 5
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    def reconstruct(self, ids: ArrayLike) -> npt.NDArray[np.float32]: ...
    @property
    def classes(self) -> dict[int, str]: ...
    def class_sums(self) -> tuple[int, list[dict[str, Any]]]: ...
    @property
    def skipped_manifests(self) -> list[dict[str, Any]]: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *_args: object) -> bool: ...

@final
class Snapshot(_Queries):
    @staticmethod
    def open(path: _Path, version: int | None = None) -> Snapshot: ...
    def list_coverage(self) -> tuple[int, int]: ...
    def __len__(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def model(self) -> Model: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

@final
class Index(_Queries):
    @staticmethod
    def create(
        path: _Path, model: Model, store_vectors: str | None = None, schema: str | None = None
    ) -> Index: ...
    @staticmethod
    def build(
        path: _Path,
        model: Model,
        x: ArrayLike,
        ids: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        store_vectors: str | None = None,
        lists: str | None = None,
        attributes: Any = None,
        progress: bool | Callable[[str, str, int, int], object] | None = None,
        schema: str | None = None,
    ) -> Index: ...
    @staticmethod
    def open(path: _Path) -> Index: ...
    @staticmethod
    def recover(path: _Path, to_version: int) -> dict[str, Any]: ...
    def add(
        self,
        x: ArrayLike,
        ids: ArrayLike | None = None,
        labels: ArrayLike | None = None,
        lists: str | None = None,
        attributes: Any = None,
        progress: bool | Callable[[str, str, int, int], object] | None = None,
    ) -> npt.NDArray[np.uint64]: ...
    def upsert(
        self,
        x: ArrayLike,
        ids: ArrayLike,
        labels: ArrayLike | None = None,
        lists: str | None = None,
        keep_class_stats: bool = False,
        attributes: Any = None,
        progress: bool | Callable[[str, str, int, int], object] | None = None,
    ) -> int: ...
    def commit(self) -> int: ...
    def delete(
        self, ids: ArrayLike, ignore_missing: bool = False, keep_class_stats: bool = False
    ) -> int: ...
    def holds(self, ids: ArrayLike) -> npt.NDArray[np.bool_]: ...
    def add_column(self, name: str, type: str, default: Any = None) -> None: ...
    def compact(
        self,
        full: bool = False,
        deleted_threshold: float = 0.2,
        progress: bool | Callable[[str, str, int, int], object] | None = None,
    ) -> dict[str, Any]: ...
    def gc(self) -> dict[str, Any]: ...
    def add_class(
        self,
        name: str,
        x: ArrayLike | None = None,
        mean: ArrayLike | None = None,
        parent: str | int | None = None,
        id: int | None = None,
        prior_weight: int | None = None,
    ) -> int: ...
    def snapshot(self) -> Snapshot: ...
    def __len__(self) -> int: ...
    @property
    def d(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def path(self) -> pathlib.Path: ...
    @property
    def model(self) -> Model: ...
    def versions(self) -> list[dict[str, Any]]: ...
    def inspect(self) -> dict[str, Any]: ...
    def verify(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
