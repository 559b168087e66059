"""What every embedder shares: the protocol, the output check, normalisation, and the base of a
model with a fixed name and width."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from trimem.errors import ArgumentTypeError, DimensionError, DTypeError, InvalidVectorError

_log = logging.getLogger("trimem")

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """What the memory needs from an embedder.

    ``name`` identifies the vector space (a store built with one name refuses
    another); ``dim`` is the vector width; calling it with ``n`` texts returns a
    C-contiguous float32 array of shape ``(n, dim)``. A model trained with separate
    query and passage inputs also has ``query(texts)``, which the memory calls for
    search requests (without one, a request is embedded like what is stored).
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def __call__(self, texts: list[str], /) -> Vectors: ...


def _as_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ArgumentTypeError("an embedder takes a list of texts, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ArgumentTypeError(f"text #{i} is {type(t).__name__}, not str")
    return out


def _checked_call(embed: Any, texts: Sequence[str], dim: int, name: str) -> Vectors:
    """``embed`` called with the texts (not when there are none), its output checked."""
    items = _as_texts(texts)
    if not items:
        return np.empty((0, dim), dtype=np.float32)
    return check_vectors(embed(items), len(items), dim, name)


def check_vectors(
    out: Any, n: int, dim: int | None, name: str, *, kinds: str = "fiu", who: str | None = None, item: str = "text"
) -> Vectors:
    """Validate and normalise an encoder's output to C-contiguous float32 ``(n, dim)``.

    Other dtypes of `kinds` (numpy kind letters) are converted; anything else is a
    :class:`DTypeError`, a wrong shape a :class:`DimensionError`, NaN/inf or an all-zero row an
    :class:`InvalidVectorError` (all :class:`ValueError`), naming `who` (default: the embedder)
    and the `item` (text, image, …) at fault.
    """
    who = who or f"embedder {name!r}"
    try:
        arr = np.asarray(out)
    except Exception as exc:  # ragged lists and the like
        raise DTypeError(f"{who} returned something that is not an array: {exc}") from exc
    if arr.dtype.kind not in kinds:
        raise DTypeError(f"{who} returned dtype {arr.dtype}, expected float32")
    if arr.ndim != 2 or arr.shape[0] != n or (dim is not None and arr.shape[1] != dim):
        want = f"({n}, {dim})" if dim is not None else f"({n}, dim)"
        raise DimensionError(f"{who} returned shape {arr.shape}, expected {want}")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if arr.size:
        finite = np.isfinite(arr).all(axis=1)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise InvalidVectorError(f"{who} returned NaN or inf for {item} #{bad}")
        zero = ~arr.any(axis=1)
        if zero.any():
            bad = int(np.flatnonzero(zero)[0])
            raise InvalidVectorError(
                f"{who} returned an all-zero vector for {item} #{bad} (cosine similarity is undefined for it)"
            )
    return arr


def _l2_normalise(arr: Vectors) -> Vectors:
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    np.maximum(norms, 1e-12, out=norms)
    arr /= norms
    return arr


class NamedModel:
    """A model's ``name`` and ``dim``, read-only (a subclass sets ``_name`` and ``_dim``)."""

    _name: str
    _dim: int

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim


# What an embedder may declare of itself, which every wrapper of one passes on: the languages it
# reads, its scale of similarity and its vector leg's weight per request language.
DECLARED = ("languages", "cosine_floors", "language_weights")


def _utf8_safe(text: str) -> str:
    """The text as a C engine takes it: NUL (ends a C string) as a space, lone surrogates as U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text
