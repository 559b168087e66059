"""trimem: fast embedded three-layer memory for LLM agents.

:class:`Memory` gives an agent working, episodic and semantic memory with the Recall → Retain →
Reflect lifecycle; see its docstring. The hot path — BM25, HNSW, filters and reciprocal rank fusion — is a Rust engine
(:class:`HybridIndex`); one call searches both legs with the GIL released.

>>> import numpy as np, trimem
>>> idx = trimem.HybridIndex(dim=4)
>>> idx.add(ids=[1, 2], texts=["Node in Docker on port 8080", "Nginx proxy on 443"],
...         timestamps=[10, 20], namespaces=["agent/u1", "agent/u1"],
...         vectors=np.eye(4, dtype=np.float32)[:2])
>>> hits = idx.search(text="which port for node?", vector=np.eye(4, dtype=np.float32)[0],
...                   namespace="agent/u1", k=2)
>>> hits.ids.tolist()
[1, 2]
>>> trimem.tokenize("node.js on 8080")
['node.js', 'node', 'js', 'on', '8080']
"""

from trimem._core import Hits, HybridIndex, Store, StoredRecord, build_profile, simd_kernel, tokenize
from trimem.errors import (
    DimensionError,
    DTypeError,
    DuplicateIdError,
    EmbedderMismatchError,
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
from trimem.records import Episode, Fact, FactChange, FactVersion, KnowledgeDoc, ToolCall

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # `Memory` pulls in the rewriter, extractor and embedders: load it on first use so that
    # `import trimem` stays as light as the engine.
    if name == "Memory":
        from trimem.memory import Memory

        return Memory
    raise AttributeError(f"module 'trimem' has no attribute {name!r}")


__all__ = [
    "DTypeError",
    "DimensionError",
    "DuplicateIdError",
    "EmbedderMismatchError",
    "Episode",
    "Fact",
    "FactChange",
    "FactVersion",
    "Hits",
    "HybridIndex",
    "InvalidArgumentError",
    "InvalidNameError",
    "InvalidTimeRangeError",
    "InvalidVectorError",
    "KnowledgeDoc",
    "Memory",
    "Store",
    "StoreCorruptedError",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "StoreVersionError",
    "StoredRecord",
    "TextTooLongError",
    "ToolCall",
    "TrimemError",
    "UnknownIdError",
    "build_profile",
    "simd_kernel",
    "tokenize",
]
