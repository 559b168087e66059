"""From the engine's hits to :class:`~trimem.records.Scored`: each column of a :class:`Hits` read
once per search (not ten array reads per hit: they cost more than the rest of a search's Python).
"""

from __future__ import annotations

import numpy as np

from trimem._core import Hits
from trimem.config import Policy, explain
from trimem.records import Scored

__all__ = ["scored_hits"]


def scored_hits(hits: Hits, order: list[int], policy: Policy, weak: set[int]) -> list[Scored]:
    """The :class:`Scored` of the hits at positions `order` (`weak`: the positions under the
    floors of a confident match)."""
    if not order:
        return []
    at = np.asarray(order, dtype=np.intp)
    score, decay, imp, bm25, cosine, base = (
        c[at].tolist()
        for c in (hits.scores, hits.decay, hits.importance, hits.bm25_scores, hits.vector_scores, hits.base_importance)
    )
    acc, men = hits.accesses[at].tolist(), hits.mentions[at].tolist()
    bm25_rank, vector_rank = hits.bm25_ranks[at].tolist(), hits.vector_ranks[at].tolist()
    return [
        Scored(
            score=score[n],
            bm25=None if bm25[n] != bm25[n] else bm25[n],
            cosine=None if cosine[n] != cosine[n] else cosine[n],
            bm25_rank=bm25_rank[n],
            vector_rank=vector_rank[n],
            decay=decay[n],
            importance=imp[n],
            base_importance=base[n],
            accesses=acc[n],
            mentions=men[n],
            explain=explain(
                score=score[n], decay=decay[n], importance=imp[n], accesses=acc[n], mentions=men[n], policy=policy
            ),
            weak=i in weak,
        )
        for n, i in enumerate(order)
    ]
