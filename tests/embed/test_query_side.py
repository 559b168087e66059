"""Models trained with separate query and passage inputs: the memory embeds what it stores with
the embedder's call and every search request with its ``query`` (when it has one)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from trimem import Memory
from trimem.embedders import HashingEmbedder, LangChainEmbedder, resolve_embedder


class _Sided:
    """Hashing vectors, with every call recorded by side (passage or query)."""

    name = "sided-hashing"
    dim = 64

    def __init__(self, *, with_query: bool = True) -> None:
        self._inner = HashingEmbedder(self.dim)
        self.passages: list[str] = []
        self.queries: list[str] = []
        if not with_query:
            self.query = None  # an attribute that is not callable: no query side

    def __call__(self, texts: list[str]) -> Any:
        self.passages += texts
        return self._inner(texts)

    def query(self, texts: list[str]) -> Any:  # type: ignore[no-redef]
        self.queries += texts
        return self._inner(texts)


def test_recall_and_search_embed_the_request_with_query_and_retain_with_the_call() -> None:
    emb = _Sided()
    mem = Memory(embedder=emb)
    mem.retain("We moved the main database to PostgreSQL", user_id="u")
    mem.knowledge.add("Travel policy: taxis up to 100 a day", user_id="u")
    assert emb.queries == []
    assert "We moved the main database to PostgreSQL" in emb.passages
    stored = len(emb.passages)
    mem.recall("which database do we use", user_id="u")
    mem.search("postgres", user_id="u")
    mem.knowledge.search("taxi", user_id="u")
    # the embedder reads any language: recall embeds the request as asked
    assert emb.queries == ["which database do we use", "postgres", "taxi"]
    assert len(emb.passages) == stored  # no request went through the passage side


def test_an_embedder_without_query_embeds_requests_like_passages() -> None:
    emb = _Sided(with_query=False)
    mem = Memory(embedder=emb)
    mem.retain("We moved the main database to PostgreSQL", user_id="u")
    hits = mem.search("main database", user_id="u")
    assert [h.episode.text for h in hits] == ["We moved the main database to PostgreSQL"]
    assert emb.passages[-1] == "main database"


def test_a_query_side_of_the_wrong_shape_is_refused() -> None:
    class Bad(_Sided):
        def query(self, texts: list[str]) -> Any:  # type: ignore[override]
            return np.ones((len(texts), self.dim + 1), np.float32)

    mem = Memory(embedder=Bad())
    mem.retain("hello there", user_id="u")
    from trimem.errors import TrimemError

    with pytest.raises(TrimemError, match="shape"):
        mem.search("hello", user_id="u")


class _LangChainLike:
    model = "fake"

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.requests: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += texts
        return [[1.0, float(len(t)), 0.5] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.requests.append(text)
        return [0.0, 1.0, float(len(text))]


def test_langchain_wrapper_embeds_requests_with_embed_query() -> None:
    lc = _LangChainLike()
    emb = LangChainEmbedder(lc)
    q = emb.query(["ab"])
    assert lc.requests == ["ab"]
    np.testing.assert_allclose(q[0], np.array([0.0, 1.0, 2.0]) / np.sqrt(5.0), rtol=1e-6)
    d = emb(["ab"])
    np.testing.assert_allclose(d[0], np.array([1.0, 2.0, 0.5]) / np.sqrt(5.25), rtol=1e-6)


def test_a_users_embedder_keeps_its_query_side_when_checked() -> None:
    emb = _Sided()
    checked = resolve_embedder(emb)
    assert checked is not emb
    out = checked.query(["x y"])  # type: ignore[union-attr]
    assert out.shape == (1, 64) and emb.queries == ["x y"]
    assert checked.query([]).shape == (0, 64)  # type: ignore[union-attr]


def test_a_request_the_model_cannot_read_is_embedded_as_its_keyword_reading() -> None:
    """An English-only model gets the rewriter's keyword reading of a Chinese request, not the
    request as asked."""
    emb = _Sided()
    emb.languages = ("en",)  # type: ignore[attr-defined]
    mem = Memory(embedder=emb)
    mem.retain("我们的主数据库是 PostgreSQL", user_id="u")
    bundle = mem.recall("连接到我们定下来的数据库", user_id="u")
    assert emb.queries == [bundle.intent.text] and emb.queries[0] != "连接到我们定下来的数据库"
    mem.recall("which database do we use", user_id="u")
    assert emb.queries[-1] == "which database do we use"
