"""trimem's exception hierarchy, defined once, here; the native engine raises these same classes.

Every error trimem raises derives from :class:`TrimemError`, and also from the standard type a
generic handler would expect: argument mistakes are :class:`ValueError` (wrong types also
:class:`TypeError`), unknown ids :class:`LookupError`, store I/O failures :class:`OSError` with a
real ``errno``. An error means nothing was changed::

    TrimemError
    ├── InvalidArgumentError            (ValueError)  an argument outside its domain
    │   ├── ArgumentTypeError           (TypeError)   an argument of the wrong type
    │   ├── DimensionError                            a vector of the wrong length
    │   ├── DTypeError                                an array of the wrong dtype or shape
    │   ├── InvalidVectorError                        NaN, infinity, or zeros under cosine
    │   ├── InvalidTimeRangeError                     a range whose start is after its end
    │   ├── InvalidNameError                          a bad namespace, session or scope name
    │   ├── TextTooLongError                          a text over the byte limit
    │   ├── DuplicateIdError                          an id that exists, added without upsert
    │   ├── ForbiddenFactError                        a fact key about roles, permissions, prompts, rules
    │   ├── EmbedderError                             an embedder's output is not (n, dim) float32
    │   ├── RouterError                               a classifier's answer is not a valid route
    │   └── GraphExtractionError                      an extractor's answer is not a valid graph
    ├── UnknownIdError                  (LookupError) an id that is not there
    ├── DependencyError                 (RuntimeError) an optional package or its offline data is missing
    ├── NotSupportedError               (NotImplementedError) a feature this backend does not have
    └── StoreError                                    a problem with the folder store
        ├── StoreIOError                (OSError)     a file operation failed; .errno says why
        ├── StoreCorruptedError                       committed data failed its checksum
        ├── StoreLockedError                          another writer has the folder
        ├── StoreVersionError                         written by a newer trimem
        ├── StoreClosedError                          the store was closed
        └── EmbedderMismatchError                     built with another embedder

>>> import numpy as np, trimem
>>> idx = trimem.HybridIndex(dim=3)
>>> try:
...     idx.add(ids=[1], texts=["x"], timestamps=[0], namespaces=["u"],
...             vectors=np.ones((1, 4), dtype=np.float32))
... except trimem.DimensionError as e:
...     print(isinstance(e, ValueError), e)
True vector dimension mismatch: the index expects 3 values per vector, got 4
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "DTypeError",
    "DependencyError",
    "DimensionError",
    "DuplicateIdError",
    "EmbedderError",
    "EmbedderMismatchError",
    "ForbiddenFactError",
    "GraphExtractionError",
    "InvalidArgumentError",
    "InvalidNameError",
    "InvalidTimeRangeError",
    "InvalidVectorError",
    "NotSupportedError",
    "RouterError",
    "StoreClosedError",
    "StoreCorruptedError",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "StoreVersionError",
    "TextTooLongError",
    "TrimemError",
    "UnknownIdError",
]


class TrimemError(Exception):
    """Root of every error trimem raises."""


class InvalidArgumentError(TrimemError, ValueError):
    """An argument is outside its domain; nothing was changed."""


class ArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument has the wrong type (a string where a list of strings goes, say)."""


class DimensionError(InvalidArgumentError):
    """A vector's length differs from the index dimension."""


class DTypeError(InvalidArgumentError):
    """An array has the wrong dtype or shape (vectors are float32, ids uint64, timestamps int64)."""


class InvalidVectorError(InvalidArgumentError):
    """A vector holds NaN or infinity, or is all zeros under the cosine metric."""


class InvalidTimeRangeError(InvalidArgumentError):
    """A time range whose start is after its end."""


class InvalidNameError(InvalidArgumentError):
    """A namespace, session or scope name that is empty, too long or has control characters."""


class TextTooLongError(InvalidArgumentError):
    """A text over the index's byte limit."""


class DuplicateIdError(InvalidArgumentError):
    """An id that already exists was added without ``upsert=True``."""


class ForbiddenFactError(InvalidArgumentError):
    """A fact whose key is about roles, permissions, prompts or rules: stored text is data, and a
    model (or injected text it read) must not be able to write instructions into the profile."""


class EmbedderError(InvalidArgumentError):
    """An embedder returned something other than float32 ``(n, dim)`` for ``n`` texts."""


class RouterError(InvalidArgumentError):
    """A classifier answered with something that is not a valid route."""


class GraphExtractionError(InvalidArgumentError):
    """A graph extractor returned something that is not a valid ``{"entities", "relations"}``."""


class UnknownIdError(TrimemError, LookupError):
    """An id that is not in the index."""


class DependencyError(TrimemError, RuntimeError):
    """An optional package, or data it needs offline, is missing; the message says what to install."""


class NotSupportedError(TrimemError, NotImplementedError):
    """A feature the memory's backend does not have (perceptual memory on PostgreSQL, say)."""


class StoreError(TrimemError):
    """A problem with the folder store."""


class StoreIOError(StoreError, OSError):
    """A file operation of the store failed (full disk, failing fsync, ...); the write did not happen.

    ``errno`` holds the operating system's error number (``errno.ENOSPC``, ``errno.EIO``, ...)."""


class StoreCorruptedError(StoreError):
    """Committed store data failed its checksum: damage, not a torn tail. Restore from a backup."""


class StoreLockedError(StoreError):
    """Another writer has the store open: another process, or another open store of this process."""


class StoreVersionError(StoreError):
    """A store file written by a newer trimem."""


class StoreClosedError(StoreError):
    """The store was closed; open it again to go on."""


class EmbedderMismatchError(StoreError):
    """The store was built with another embedder; vectors from two models do not mix.
    ``recorded`` names the store's model (None when unknown)."""

    recorded: str | None = None
