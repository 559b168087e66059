"""A document collection through the product path (``python -m trimem eval scifact|cmrc``, row
``Memory.recall``): what an agent gets when it keeps a corpus in its knowledge base.

One in-process ``Memory(embedder=...)`` (``"auto"`` by default); every document added to the
agent's shared knowledge base with ``mem.knowledge.add_many`` (the bulk preload a user would
call; text = title + " " + abstract, as the engine path indexes it, its id in ``metadata``);
then each query once: ``mem.recall(query, user_id="reader", k_knowledge=100)`` with every other
option at its default, the ranked list being ``bundle.knowledge`` in order. nDCG@10 and
recall@100 over the same queries and judgements as the engine modes of the same run.

Embeddings: with a cache folder, the memory gets a :class:`trimem.bench.product.CachedEmbedder`
whose many-text calls (the preload) share the engine path's cache file and whose one-text calls
(the requests) have their own; without one, the embedder's name as a user would pass it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from trimem.bench.evaluate import SciFact, _progress, ndcg_at_k, recall_at_k
from trimem.bench.meter import Meter
from trimem.bench.product import _embedder_name, product_embedder

__all__ = ["PRODUCT_ROW", "evaluate_documents_product"]

PRODUCT_ROW = "Memory.recall"
K = 100  # documents asked of each recall (recall@100; nDCG@10 reads the first ten)
READER = "reader"


def evaluate_documents_product(
    data: SciFact,
    *,
    embedder: str | None = "auto",
    cache_dir: Path | None = None,
    progress: TextIO | None = sys.stderr,
    label: str = "documents",
    memory_factory: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """nDCG@10 and recall@100 of ``Memory.recall(...).knowledge`` over `data`'s queries, with the
    preload and per-request times (see the module docstring). `memory_factory(embedder)` makes
    the memory (default ``trimem.Memory(embedder=embedder)``)."""
    from trimem import Memory

    say = _progress(progress)
    emb = product_embedder(embedder, cache_dir, progress, batch_cache=True)
    name = _embedder_name(emb)
    say(f"{label} product path: Memory(embedder={name!r}); {len(data.texts)} documents into the knowledge base")
    t0 = time.perf_counter()
    nd: list[float] = []
    rc: list[float] = []
    returned: list[int] = []
    ms: list[float] = []
    with memory_factory(emb) if memory_factory is not None else Memory(embedder=emb) as mem:
        mem.knowledge.add_many(
            [{"text": text, "metadata": {"doc": did}} for did, text in zip(data.doc_ids, data.texts, strict=True)]
        )
        preload_s = time.perf_counter() - t0
        with Meter(progress, f"{label} Memory.recall", len(data.queries), "queries") as meter:
            for qid, query in data.queries.items():
                tq = time.perf_counter()
                bundle = mem.recall(query, user_id=READER, k_knowledge=K)
                ms.append((time.perf_counter() - tq) * 1000)
                ranked = [str(r.doc.metadata["doc"]) for r in bundle.knowledge]
                returned.append(len(ranked))
                nd.append(ndcg_at_k(ranked, data.qrels[qid], 10))
                rc.append(recall_at_k(ranked, data.qrels[qid], K))
                meter.update()
    row = {
        "n": float(len(nd)),
        "ndcg@10": float(np.mean(nd)) if nd else 0.0,
        f"recall@{K}": float(np.mean(rc)) if rc else 0.0,
        "returned_mean": float(np.mean(returned)) if returned else 0.0,
        "short_share": float(np.mean([n < K for n in returned])) if returned else 0.0,
    }
    say(f"{label} {PRODUCT_ROW}: nDCG@10={row['ndcg@10']:.4f} ({len(nd)} queries)")
    return {
        "embedder": name,
        "row": row,
        "preload_s": round(preload_s, 2),
        "recall_ms_p50": float(np.median(ms)) if ms else 0.0,
    }
