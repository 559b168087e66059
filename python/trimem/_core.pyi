"""Type stubs of the native engine module (checked against the build by mypy.stubtest)."""

from collections.abc import Sequence
from typing import final

import numpy as np
import numpy.typing as npt

__all__ = [
    "DTypeError",
    "DimensionError",
    "DuplicateIdError",
    "Hits",
    "HybridIndex",
    "InvalidArgumentError",
    "InvalidNameError",
    "InvalidTimeRangeError",
    "InvalidVectorError",
    "StoredRecord",
    "TextTooLongError",
    "TrimemError",
    "UnknownIdError",
    "__version__",
    "build_profile",
    "simd_kernel",
    "tokenize",
]
__version__: str

class TrimemError(Exception): ...
class InvalidArgumentError(TrimemError, ValueError): ...
class DimensionError(InvalidArgumentError): ...
class DTypeError(InvalidArgumentError): ...
class InvalidVectorError(InvalidArgumentError): ...
class InvalidTimeRangeError(InvalidArgumentError): ...
class InvalidNameError(InvalidArgumentError): ...
class TextTooLongError(InvalidArgumentError): ...
class DuplicateIdError(InvalidArgumentError): ...
class UnknownIdError(TrimemError, LookupError): ...

def build_profile() -> str: ...
def simd_kernel() -> str: ...
def tokenize(text: str, *, stem: bool = False, stopwords: bool = False) -> list[str]: ...

_Ids = npt.NDArray[np.uint64] | Sequence[int]
_Times = npt.NDArray[np.int64] | Sequence[int]
_Floats = npt.NDArray[np.float32] | npt.NDArray[np.float64] | Sequence[float]

@final
class StoredRecord:
    @property
    def id(self) -> int: ...
    @property
    def namespace(self) -> str: ...
    @property
    def session(self) -> str | None: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def importance(self) -> float: ...
    @property
    def vector(self) -> npt.NDArray[np.float32] | None: ...

@final
class Hits:
    @property
    def ids(self) -> npt.NDArray[np.uint64]: ...
    @property
    def scores(self) -> npt.NDArray[np.float32]: ...
    @property
    def bm25_scores(self) -> npt.NDArray[np.float32]: ...
    @property
    def vector_scores(self) -> npt.NDArray[np.float32]: ...
    @property
    def bm25_ranks(self) -> npt.NDArray[np.uint32]: ...
    @property
    def vector_ranks(self) -> npt.NDArray[np.uint32]: ...
    @property
    def decay(self) -> npt.NDArray[np.float32]: ...
    @property
    def importance(self) -> npt.NDArray[np.float32]: ...
    @property
    def timestamps(self) -> npt.NDArray[np.int64]: ...
    @property
    def plan(self) -> str: ...
    def __len__(self) -> int: ...

@final
class HybridIndex:
    def __new__(
        cls,
        dim: int,
        *,
        metric: str = "cosine",
        m: int = 16,
        ef_construction: int = 200,
        stem: bool = False,
        stopwords: bool = False,
        k1: float = 1.2,
        b: float = 0.75,
        seed: int = 42,
        max_text_bytes: int = 1048576,
        threads: int = 0,
        exact_threshold: int = 1000,
    ) -> HybridIndex: ...
    @property
    def dim(self) -> int: ...
    @property
    def metric(self) -> str: ...
    def __len__(self) -> int: ...
    def __contains__(self, key: int, /) -> bool: ...
    def add(
        self,
        ids: _Ids,
        texts: Sequence[str],
        timestamps: _Times,
        namespaces: Sequence[str],
        vectors: npt.NDArray[np.float32] | None = None,
        *,
        sessions: Sequence[str | None] | None = None,
        payloads: Sequence[bytes] | None = None,
        importance: _Floats | None = None,
        upsert: bool = False,
    ) -> None: ...
    def delete(self, ids: _Ids, *, missing_ok: bool = False) -> int: ...
    def set_importance(self, ids: _Ids, values: _Floats) -> None: ...
    def get(self, id: int) -> StoredRecord | None: ...
    def get_many(self, ids: _Ids) -> list[StoredRecord | None]: ...
    def ids(self) -> npt.NDArray[np.uint64]: ...
    def bm25_score(self, text: str, id: int) -> float: ...
    def doc_freq(self, term: str) -> int: ...
    def stats(self) -> dict[str, int | float | str]: ...
    def search(
        self,
        text: str | None = None,
        vector: npt.NDArray[np.float32] | None = None,
        *,
        k: int = 10,
        time_range: tuple[int, int] | None = None,
        namespace: str | None = None,
        session: str | None = None,
        mode: str = "hybrid",
        ef: int = 64,
        rrf_k: float = 60.0,
        weights: tuple[float, float] | None = None,
        window: int | None = None,
        min_bm25: float | None = None,
        min_cosine: float | None = None,
        half_life: float | None = None,
        now: int | None = None,
        decay_weight: float = 0.005,
        importance_weight: float = 0.0,
    ) -> Hits: ...
