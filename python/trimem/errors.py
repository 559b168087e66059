"""trimem's exception hierarchy (defined once, in the native module).

Every error trimem raises derives from :class:`TrimemError`. Argument mistakes also derive from
:class:`ValueError` (unknown ids from :class:`LookupError`, store I/O failures from
:class:`OSError`), so generic handlers keep working:

>>> import numpy as np, trimem
>>> idx = trimem.HybridIndex(dim=3)
>>> try:
...     idx.add(ids=[1], texts=["x"], timestamps=[0], namespaces=["u"],
...             vectors=np.ones((1, 4), dtype=np.float32))
... except trimem.DimensionError as e:
...     print(isinstance(e, ValueError), e)
True vector dimension mismatch: the index expects 3 values per vector, got 4
"""

from trimem._core import (
    DimensionError,
    DTypeError,
    DuplicateIdError,
    InvalidArgumentError,
    InvalidNameError,
    InvalidTimeRangeError,
    InvalidVectorError,
    StoreCorruptedError,
    StoreError,
    StoreIOError,
    StoreLockedError,
    StoreVersionError,
    TextTooLongError,
    TrimemError,
    UnknownIdError,
)


class EmbedderMismatchError(StoreError):
    """The store was built with another embedder; vectors from two models do not mix."""


__all__ = [
    "DTypeError",
    "DimensionError",
    "DuplicateIdError",
    "EmbedderMismatchError",
    "InvalidArgumentError",
    "InvalidNameError",
    "InvalidTimeRangeError",
    "InvalidVectorError",
    "StoreCorruptedError",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "StoreVersionError",
    "TextTooLongError",
    "TrimemError",
    "UnknownIdError",
]
