"""The engine's defaults agree with the one place defaults live (trimem.config), and its BM25
keyword floor is Lucene's idf mass computed by hand."""

from __future__ import annotations

import inspect
import math

import pytest

import trimem
from trimem import Policy


def test_the_engine_ranks_with_the_policy_defaults() -> None:
    params = inspect.signature(trimem.HybridIndex.search).parameters
    p = Policy()
    # The decay and reinforcement terms mean the same at both levels; the importance term is
    # off in a bare index (importance_weight 0) until a caller (Memory's policy) asks for it.
    assert params["decay_weight"].default == p.decay_weight
    assert params["reinforce_step"].default == p.reinforce_step
    assert params["reinforce_cap"].default == p.reinforce_cap
    assert params["importance_weight"].default == 0.0


def _index(texts: list[str]) -> trimem.HybridIndex:
    idx = trimem.HybridIndex(dim=2)
    idx.add(ids=list(range(1, len(texts) + 1)), texts=texts, timestamps=[0] * len(texts), namespaces=["u"] * len(texts))
    return idx


def test_the_keyword_floor_is_a_share_of_the_query_idf_mass() -> None:
    texts = ["node docker port 8080", "nginx proxy port 443", "postgres database", "docker compose file"]
    idx = _index(texts)
    n = len(texts)

    def idf(df: int) -> float:
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    # "docker" in 2 documents, "port" in 2, "kafka" in none (unknown terms add nothing), and a
    # repeated term counts once.
    mass = idf(2) + idf(2)
    expected = 0.3 * mass / (1.0 + 1.2)
    assert idx.bm25_floor("docker port kafka docker", 0.3) == pytest.approx(expected, rel=1e-6)
    assert idx.bm25_floor("kafka", 0.3) == 0.0
    assert idx.bm25_floor("docker port", 0.0) == 0.0
    assert idx.bm25_floor("docker port", float("nan")) == 0.0


def test_the_whole_request_floor_counts_terms_no_record_holds() -> None:
    texts = ["node docker port 8080", "nginx proxy port 443", "postgres database", "docker compose file"]
    idx = _index(texts)
    n = len(texts)

    def idf(df: int) -> float:
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    # "kafka" (in no record) now counts at the idf of df = 0; "docker" still once
    expected = 0.3 * (idf(2) + idf(2) + idf(0)) / (1.0 + 1.2)
    assert idx.bm25_floor("docker port kafka docker", 0.3, unseen=True) == pytest.approx(expected, rel=1e-6)
    assert idx.bm25_floor("kafka", 0.3, unseen=True) == pytest.approx(0.3 * idf(0) / 2.2, rel=1e-6)
    # a request of known words only: both floors agree
    assert idx.bm25_floor("docker port", 0.3, unseen=True) == pytest.approx(idx.bm25_floor("docker port", 0.3))
    assert idx.bm25_floor("kafka", 0.0, unseen=True) == 0.0
    assert trimem.HybridIndex(dim=2).bm25_floor("kafka", 0.3, unseen=True) == 0.0


def test_an_empty_index_has_no_floor() -> None:
    assert trimem.HybridIndex(dim=2).bm25_floor("docker", 0.3) == 0.0


def test_the_floor_uses_the_index_k1() -> None:
    a = trimem.HybridIndex(dim=2, k1=0.5)
    a.add(ids=[1, 2], texts=["alpha beta", "gamma"], timestamps=[0, 0], namespaces=["u", "u"])
    n, df = 2, 1
    expected = 0.3 * math.log(1.0 + (n - df + 0.5) / (df + 0.5)) / 1.5
    assert a.bm25_floor("alpha", 0.3) == pytest.approx(expected, rel=1e-6)
