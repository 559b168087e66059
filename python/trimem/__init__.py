"""trimem: fast embedded three-layer memory for LLM agents.

:class:`Memory` gives an agent working, episodic and semantic memory with the Recall → Retain →
Reflect lifecycle; see its docstring. The hot path — BM25, HNSW, filters and reciprocal rank
fusion — is a Rust engine (:class:`HybridIndex`); one call searches both legs with the GIL released.

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

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from trimem import errors
from trimem._core import Hits, HybridIndex, Store, StoredRecord, build_profile, simd_kernel, tokenize
from trimem.errors import *  # noqa: F403  (the whole hierarchy: errors.__all__)
from trimem.records import Episode, Fact, FactChange, FactVersion, KnowledgeDoc, ToolCall
from trimem.scope import SHARED

if TYPE_CHECKING:
    from trimem.aio import AsyncMemory
    from trimem.config import Policy
    from trimem.memory import Memory
    from trimem.pipeline.bundle import RecallBundle

__version__ = "0.1.0"

# `Memory` pulls in the rewriter, extractor and embedders: these load on first use so that
# `import trimem` stays as light as the engine.
_LAZY = {
    "AsyncMemory": "trimem.aio",
    "Memory": "trimem.memory",
    "Policy": "trimem.config",
    "RecallBundle": "trimem.pipeline.bundle",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'trimem' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "SHARED",
    "AsyncMemory",
    "Episode",
    "Fact",
    "FactChange",
    "FactVersion",
    "Hits",
    "HybridIndex",
    "KnowledgeDoc",
    "Memory",
    "Policy",
    "RecallBundle",
    "Store",
    "StoredRecord",
    "ToolCall",
    "__version__",
    "build_profile",
    "simd_kernel",
    "tokenize",
]
__all__ += errors.__all__
