"""An embedder may declare, per request language, the fusion weight of its vector leg
(``language_weights``): the bilingual default reads Chinese less well than BM25 finds it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from trimem import Memory
from trimem.errors import InvalidArgumentError
from trimem.layers._shared import Embedding

DIM = 4


class _Weighted:
    """Keyword-blind vectors: the text "near" and every request share one axis."""

    name, dim = "weighted", DIM

    def __init__(self, weights: dict[str, float] | None) -> None:
        if weights is not None:
            self.language_weights = weights

    def __call__(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), DIM), np.float32)
        for i, t in enumerate(texts):
            out[i, 0 if ("near" in t or "近" in t or t.endswith("?") or t.endswith("？")) else 1 + i % 3] = 1.0
        return out


def test_the_weight_follows_the_request_language() -> None:
    emb = Embedding(_Weighted({"zh": 0.1}))
    assert emb.vector_weight("哪个数据库？") == 0.1
    assert emb.vector_weight("which database?") == 1.0
    assert emb.vector_weight("the PostgreSQL 数据库 we chose") == 1.0  # mixed: not declared
    assert Embedding(_Weighted(None)).vector_weight("哪个数据库？") == 1.0
    assert Embedding(None).vector_weight("哪个数据库？") == 1.0


@pytest.mark.parametrize("bad", [{"zh": 1.5}, {"zh": -0.1}, {"zh": True}, ["zh"], {1: 0.5}])
def test_a_bad_declaration_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match="language_weights"):
        Memory(embedder=_Weighted(bad))  # type: ignore[arg-type]


def _order(weights: dict[str, float] | None, texts: list[str], request: str) -> list[str]:
    mem = Memory(embedder=_Weighted(weights))
    for i, t in enumerate(texts):
        mem.retain(t, user_id="u", session_id=f"s{i}")
    return [h.episode.text for h in mem.search(request, user_id="u", k=2)]


def test_a_low_weight_lets_keywords_lead_for_that_language_only() -> None:
    zh = ["近来的事", "数据库选型：PostgreSQL"]  # the first is near by meaning, the second shares the keywords
    request = "数据库选型？"
    # equal weights: the vector leg's first place (the near text) ties the keyword leg's and wins
    # on the fused score's tie-break; a weight of 0.1 on the vector leg leaves the keyword match first
    assert _order(None, zh, request) == ["近来的事", "数据库选型：PostgreSQL"]
    assert _order({"zh": 0.1}, zh, request) == ["数据库选型：PostgreSQL", "近来的事"]
    en = ["near things lately", "database choice: PostgreSQL"]
    unweighted = _order(None, en, "database choice?")
    assert _order({"zh": 0.1}, en, "database choice?") == unweighted  # English requests unchanged
