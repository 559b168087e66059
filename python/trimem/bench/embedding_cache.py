"""Embeddings of the evaluation texts, cached on disk per model and text (a re-run embeds only
what is new), computed a batch per call so long runs can report progress."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from trimem.bench.meter import Meter

Vectors = npt.NDArray[np.float32]


def default_cache_dir() -> Path:
    """``$TRIMEM_BENCH_CACHE`` when set, else ``<tmp>/trimem-eval-cache``."""
    env = os.environ.get("TRIMEM_BENCH_CACHE")
    return Path(env) if env else Path(tempfile.gettempdir()) / "trimem-eval-cache"


class EmbeddingCache:
    """An embedder with an on-disk, per-text cache (``<dir>/eval-<name>.{npy,json}``).

    Rows are keyed by a SHA-256 of the text; new texts are embedded and appended, with progress
    on ``progress`` (``None``: quiet). ``directory=None`` disables the disk cache. A cache that
    cannot be read or written is ignored.
    """

    def __init__(self, embedder: Any, directory: Path | None, *, progress: TextIO | None = sys.stderr) -> None:
        self.embedder = embedder
        self.progress = progress
        self.dim = int(embedder.dim)
        self.name = str(embedder.name)
        self._dir = directory
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", self.name)
        self._npy = None if directory is None else directory / f"eval-{safe}-d{self.dim}.npy"
        self._keys_path = None if directory is None else directory / f"eval-{safe}-d{self.dim}.json"
        self.queries: EmbeddingCache = self  # what embeds requests (see _make_embedder)
        self._rows: dict[str, int] = {}
        self._data: Vectors = np.empty((0, self.dim), dtype=np.float32)
        self._load()

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def _load(self) -> None:
        if self._npy is None or self._keys_path is None:
            return
        try:
            keys = json.loads(self._keys_path.read_text(encoding="utf-8"))
            data = np.load(self._npy, allow_pickle=False)
        except (OSError, ValueError):
            return
        if (
            not isinstance(keys, list)
            or data.dtype != np.float32
            or data.ndim != 2
            or data.shape != (len(keys), self.dim)
        ):
            return
        self._rows = {str(k): i for i, k in enumerate(keys)}
        self._data = data

    def _save(self) -> None:
        if self._dir is None or self._npy is None or self._keys_path is None:
            return
        keys = [""] * len(self._rows)
        for k, i in self._rows.items():
            keys[i] = k
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            tmp_npy = self._npy.with_suffix(f".{os.getpid()}.tmp.npy")
            tmp_keys = self._keys_path.with_suffix(f".{os.getpid()}.tmp")
            np.save(tmp_npy, self._data, allow_pickle=False)
            tmp_keys.write_text(json.dumps(keys), encoding="utf-8")
            os.replace(tmp_npy, self._npy)
            os.replace(tmp_keys, self._keys_path)
        except OSError:
            pass

    def __call__(self, texts: Sequence[str], *, desc: str = "embedding") -> Vectors:
        keys = [self._key(t) for t in texts]
        missing: dict[str, str] = {}
        for k, t in zip(keys, texts):
            if k not in self._rows and k not in missing:
                missing[k] = t
        if missing:
            new = self._embed(list(missing.values()), desc)
            base = len(self._rows)
            for i, k in enumerate(missing):
                self._rows[k] = base + i
            self._data = np.concatenate([self._data, new]) if base else new
            self._save()
        if not keys:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(self._data[[self._rows[k] for k in keys]])

    def _embed(self, texts: list[str], desc: str) -> Vectors:
        """``texts`` embedded one batch per call, so progress can be shown while a large set
        takes minutes. MiniLM sorts a call's texts by length and runs them in batches of
        ``batch_size``; feeding it the length-sorted texts one batch at a time gives it the very
        batches of a single call, so the vectors do not depend on the chunking."""
        step = max(1, int(getattr(self.embedder, "batch_size", 64)))
        if len(texts) <= step:
            return np.asarray(self.embedder(texts), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with Meter(self.progress, f"{desc} with {self.name}", len(texts), "texts") as meter:
            for start in range(0, len(order), step):
                chunk = order[start : start + step]
                out[chunk] = np.asarray(self.embedder([texts[i] for i in chunk]), dtype=np.float32)
                meter.update(len(chunk))
        return out


class _QuerySide:
    """An embedder's ``query`` under a name of its own (its cache file is not the passages')."""

    def __init__(self, inner: Any) -> None:
        self.call = inner.query
        self.name = f"{inner.name}-query"
        self.dim = int(inner.dim)
        self.batch_size = getattr(inner, "batch_size", 64)

    def __call__(self, texts: list[str]) -> Vectors:
        return np.asarray(self.call(texts), dtype=np.float32)


def _make_embedder(spec: str, cache_dir: Path | None, progress: TextIO | None) -> EmbeddingCache:
    """The passages' cached embedder; its ``queries`` embeds requests (through the model's
    ``query`` where it has one, as ``Memory`` does)."""
    from trimem.embedders import resolve_embedder

    emb = resolve_embedder(spec)
    if emb is None:
        raise ValueError("an embedder is needed for the vector and hybrid runs")
    passages = EmbeddingCache(emb, cache_dir, progress=progress)
    has_query = callable(getattr(emb, "query", None))
    passages.queries = EmbeddingCache(_QuerySide(emb), cache_dir, progress=progress) if has_query else passages
    return passages


# ============================================================================ LoCoMo data
