"""What every layer shares: text checks, the embedder call with its shape check, the parts of a
layer searched by keywords and meaning, and the pause of the cyclic collector around bulk
writes."""

from __future__ import annotations

import contextlib
import functools
import gc
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import msgspec
import numpy as np

from trimem._backend import Backend, Floors
from trimem._checks import check_str
from trimem._core import tokenize
from trimem.config import (
    FACT_QUESTION_SUPPORT,
    MAX_TEXT_CHARS,
    MIN_COSINE,
    MIN_COSINE_ALONE,
    SAME_SUBJECT_COSINE,
    Policy,
)
from trimem.errors import ArgumentTypeError, InvalidArgumentError
from trimem.text.asking import asks_for_fact
from trimem.text.script import has_han, query_language
from trimem.text.stopwords import QUERY_STOPWORDS
from trimem.text.words import name_words


def check_options(given: Mapping[str, object], allowed: Iterable[str], what: str) -> None:
    """Refuses keyword options a verb does not know (a typo must not pass silently)."""
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ArgumentTypeError(f"{what} got unknown options {unknown}; it takes {sorted(allowed)}")


def check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
    if not text or text.isspace():
        raise InvalidArgumentError("text is empty; there is nothing to remember")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidArgumentError(f"text has {len(text)} characters, over the limit of {MAX_TEXT_CHARS}; split it")
    return check_str("text", text)


@functools.cache  # on first use, not at import
def _grammar() -> frozenset[str]:
    """Words of grammar as index terms (and the single letters tokenizing leaves of "What's"):
    they meet anything."""
    return frozenset(tokenize(" ".join(QUERY_STOPWORDS), stem=True)) | frozenset("abcdefghijklmnopqrstuvwxyz")


@functools.cache
def _when() -> frozenset[str]:
    """Words of a span of time, as index terms."""
    return frozenset(tokenize("year years month months week weeks day days date dates time times", stem=True))


def named_only(request: str) -> Callable[[str], bool] | None:
    """For a request that names someone or something ("What's Tala's middle name?"), whether a
    text meets it only in those names ("Tala can't stand coconut") or, when it asks for one
    piece of information, in none of them: the name (or the word asked for) lifts both the
    keyword score and the cosine, so the floors let such a text pass as a confident match
    though it says nothing of what is asked. None when the request names no one."""
    names = frozenset(tokenize(" ".join(name_words(request)), stem=True, stopwords=True))
    if not names:
        return None
    asked = frozenset(tokenize(request, stem=True, stopwords=True)) - _grammar()
    # a question for one piece of information of someone named is not met by a text that
    # names no one of them: "How old is Gareth?" by "Mot, the old dog, is fourteen"
    of_them = asks_for_fact(request, own_life=False)

    def only(text: str) -> bool:
        shared = asked.intersection(tokenize(text, stem=True, stopwords=True))
        # a word of time met tells nothing asked: "What year did Dagny and I marry?" is not
        # answered by "22 years sober. Dagny still likes a glass of wine"
        said = shared - _when()
        return bool(shared) and (said <= names or (of_them and said.isdisjoint(names)))

    return only


def _cosine_floors(declared: object, name: str | None) -> tuple[float, float, float]:
    """An embedder's declared ``cosine_floors``, checked, or the defaults (calibrated on MiniLM)."""
    if declared is None:
        return (MIN_COSINE, MIN_COSINE_ALONE, SAME_SUBJECT_COSINE)
    if (
        not isinstance(declared, (tuple, list)) or len(declared) != 3
        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and -1 <= x <= 1 for x in declared)
    ):  # fmt: skip
        raise InvalidArgumentError(f"embedder {name!r}: cosine_floors must be 3 numbers in [-1, 1], got {declared!r}")
    return (float(declared[0]), float(declared[1]), float(declared[2]))


def _language_weights(declared: object, name: str | None) -> dict[str, float]:
    """An embedder's declared ``language_weights`` (request language -> vector leg weight), checked."""
    if declared is None:
        return {}
    if not isinstance(declared, Mapping) or not all(
        isinstance(k, str) and isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w <= 1
        for k, w in declared.items()
    ):
        raise InvalidArgumentError(
            f"embedder {name!r}: language_weights must map languages to weights in [0, 1], got {declared!r}"
        )
    return {k: float(w) for k, w in declared.items()}


class Embedding:
    """The memory's embedder (or none), called with a check of what it returns."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.dim: int = embedder.dim if embedder is not None else 0
        self.name: str | None = embedder.name if embedder is not None else None
        # the languages whose texts the embedder's vectors mean something for (None: any)
        self.languages: tuple[str, ...] | None = getattr(embedder, "languages", None)
        # its scale of similarity: (unrelated under, confident alone from, one subject from)
        self.cosine_floors = _cosine_floors(getattr(embedder, "cosine_floors", None), self.name)
        # per request language, the weight of its vector leg in fusion (1 where not declared)
        self.language_weights = _language_weights(getattr(embedder, "language_weights", None), self.name)

    def vouches(self, text: str) -> bool:
        """Whether a vector of `text` means something: not when the embedder reads no Chinese and
        the text is Chinese. Then similarity alone never makes a confident match, and events and
        documents are searched by keywords alone (fused with a blind leg, a ranking only worsens:
        on CMRC 2018 MiniLM's hybrid falls far under BM25's)."""
        return self.languages is None or "zh" in self.languages or not has_han(text)

    def vector_weight(self, text: str) -> float:
        """The fusion weight of the vector leg for a request in `text`'s language: a model may
        read a language less well than keywords find it (USE's Chinese beside BM25's)."""
        return self.language_weights.get(query_language(text), 1.0) if self.language_weights else 1.0

    def floors(self, floors: Floors, text: str, *, request: str | None = None) -> Floors:
        """The floors of a search for `text` made for `request` (default: `text`): where the
        vector cannot vouch for it, similarity neither makes a match confident nor supports a
        keyword match; where the request asks for a fact of the asker's life
        (:func:`~trimem.text.asking.asks_for_fact`), a keyword match missing part of it needs
        meaning ``FACT_QUESTION_SUPPORT`` of the way to confident alone: "when's Linda's birthday
        again?" is not answered by what was said of Linda."""
        if not self.vouches(text):
            return msgspec.structs.replace(floors, cosine=math.inf, cosine_alone=math.inf)
        if asks_for_fact(text if request is None else request):
            support = floors.cosine + FACT_QUESTION_SUPPORT * (floors.cosine_alone - floors.cosine)
            return msgspec.structs.replace(floors, support=support)
        return floors

    def __call__(self, texts: list[str], *, query: bool = False) -> np.ndarray | None:
        """Stored texts' vectors; with `query`, requests' (through the embedder's ``query``
        where it has one: models trained with separate query and passage inputs)."""
        if self.embedder is None or not texts:
            return None
        call = getattr(self.embedder, "query", None) if query else None
        vecs = np.ascontiguousarray((call if callable(call) else self.embedder)(texts), dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise InvalidArgumentError(
                f"embedder {self.name!r} returned shape {vecs.shape}, expected ({len(texts)}, {self.dim})"
            )
        return vecs

    def one(self, text: str) -> np.ndarray | None:
        vecs = self([text])
        return None if vecs is None else vecs[0]

    def query(self, text: str) -> np.ndarray | None:
        """The vector of a search request."""
        vecs = self([text], query=True)
        return None if vecs is None else vecs[0]


class IndexedLayer:
    """A layer searched by keywords and meaning (episodes, knowledge): its backend, the embedder
    call, the policy (decay, lifetimes) and the floors of weak matches."""

    def __init__(self, backend: Backend, embedding: Embedding, policy: Policy, floors: Floors) -> None:
        self._backend = backend
        self._embed = embedding
        self._policy = policy
        self.floors = floors


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pauses Python's cyclic garbage collector around a bulk write: a batch allocates a few
    objects per item (none in cycles), and the collector would otherwise walk every live
    object several times over a 100k batch. Restored on exit, also on error."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
