"""The sketch plan: a filtered vector search that scans the matches' sign sketches and scores
the best candidates exactly (cosine, 128+ dims). Recall against brute force and against the
graph walk, exact scores, full answers, and — since the plan never reads the graph — results
that are a function of the live records alone: equal across deletes, slot reuse, text-only
records and a reopen."""

from __future__ import annotations

import numpy as np
import pytest

import trimem
from tests.conftest import Clustered, brute_topk, build_index, make_clustered, recall_at_k
from trimem.bench.datasets import time_window

K = 10
EF = 64
DIM = 256


@pytest.fixture(scope="module")
def data() -> Clustered:
    """20,000 x 256 dims around 1,000 centres (20 points each): tight clusters, the hard case
    for a one-bit estimate."""
    return make_clustered(20_000, DIM, n_queries=200, n_centers=1000, seed=4)


@pytest.fixture(scope="module")
def default_index(data) -> trimem.HybridIndex:
    return build_index(data)


@pytest.fixture(scope="module")
def graph_index(data) -> trimem.HybridIndex:
    return build_index(data, exact_threshold=0)


def window(d: Clustered, fraction: float, seed: int = 3) -> tuple[tuple[int, int], np.ndarray]:
    lo, hi = time_window(d.timestamps, fraction, seed=seed)
    return (lo, hi), np.nonzero((d.timestamps >= lo) & (d.timestamps < hi))[0]


def answers(idx: trimem.HybridIndex, queries: np.ndarray, **kw) -> list[trimem.Hits]:
    kw = {"mode": "vector", "k": K, "ef": EF, **kw}
    return [idx.search(vector=q, **kw) for q in queries]


@pytest.mark.parametrize("fraction", [0.1, 0.3])
def test_sketch_recall_against_brute_force_and_the_walk(data, default_index, graph_index, fraction) -> None:
    (lo, hi), rows = window(data, fraction)
    hits = answers(default_index, data.queries, time_range=(lo, hi))
    assert {h.plan for h in hits} == {"sketch"}
    for q, h in zip(data.queries, hits):
        assert len(h) == K
        assert ((h.timestamps >= lo) & (h.timestamps < hi)).all()
        # Scores are exact cosines of the returned records, best first: the estimate only
        # picks candidates.
        np.testing.assert_allclose(h.vector_scores, data.vectors[h.ids.astype(np.int64)] @ q, atol=2e-5)
        assert (np.diff(h.vector_scores) <= 1e-6).all()
    truth = brute_topk(data.queries, data.vectors, K, rows)
    r = recall_at_k([h.ids.astype(np.int64) for h in hits], truth)
    walk = answers(graph_index, data.queries, time_range=(lo, hi))
    assert {h.plan for h in walk} <= {"graph", "graph+exact"}
    r_walk = recall_at_k([h.ids.astype(np.int64) for h in walk], truth)
    print(f"window {fraction:.0%} ({len(rows)} records): sketch recall@10 {r:.4f}, graph walk {r_walk:.4f}")
    assert r >= 0.95
    assert r >= r_walk - 0.02
    # More effort re-scores more candidates.
    wide = answers(default_index, data.queries[:100], time_range=(lo, hi), ef=256)
    assert recall_at_k([h.ids.astype(np.int64) for h in wide], truth[:100]) >= 0.99


def test_sketch_needs_cosine_and_enough_dimensions(data) -> None:
    rows = np.arange(5000)
    (lo, hi), _ = window(data, 0.3)
    small = make_clustered(5000, 64, n_queries=5, n_centers=100, seed=2)
    # (index, queries, whether the plan scans sketches, whether the graph keeps them)
    cases = {
        "cosine, 256 dims": (build_index(data, rows=rows), data.queries[:5], True, True),
        "ip": (build_index(data, rows=rows, metric="ip"), data.queries[:5], False, False),
        "graph forced": (build_index(data, rows=rows, exact_threshold=0), data.queries[:5], False, True),
        "64 dims": (build_index(small), small.queries, False, False),
    }
    for name, (idx, queries, scans, kept) in cases.items():
        plans = {h.plan for h in answers(idx, queries, time_range=(lo, hi))}
        assert (plans == {"sketch"}) if scans else ("sketch" not in plans), (name, plans)
        assert idx.stats()["sketch_simd"] == (sketch_kernel() if kept else None), name


def sketch_kernel() -> str:
    idx = trimem.HybridIndex(dim=128)
    kernel = idx.stats()["sketch_simd"]
    assert kernel in {"avx512vpopcntdq", "popcnt", "portable"}
    return str(kernel)


def test_results_depend_only_on_live_records(data, tmp_path) -> None:
    """Deletes, slot reuse, upserts and text-only records in the window leave the sketch plan's
    answers equal to those of a fresh index of the same live records, and so does a reopen
    (sketches are rebuilt from the vectors)."""
    n = 8000
    rng = np.random.default_rng(5)
    churned = build_index(data, rows=np.arange(n))
    gone = np.sort(rng.choice(n, size=3000, replace=False))
    churned.delete(gone.astype(np.uint64))
    # New records take the freed slots; some live ones move to new vectors.
    new = np.arange(n, n + 2000)
    churned.add(
        ids=new.astype(np.uint64),
        texts=["new"] * len(new),
        timestamps=data.timestamps[new],
        namespaces=[data.namespaces[i] for i in new],
        vectors=data.vectors[new],
    )
    moved = np.setdiff1d(np.arange(n), gone)[:500]
    churned.add(
        ids=moved.astype(np.uint64),
        texts=["moved"] * len(moved),
        timestamps=data.timestamps[moved],
        namespaces=[data.namespaces[i] for i in moved],
        vectors=data.vectors[moved[::-1]],
        upsert=True,
    )
    # Text-only records inside the window must not take candidates' places.
    (lo, hi), _ = window(data, 0.3)
    churned.add(
        ids=np.arange(100_000, 102_000, dtype=np.uint64),
        texts=["no vector"] * 2000,
        timestamps=np.full(2000, (lo + hi) // 2, dtype=np.int64),
        namespaces=["agent/alice"] * 2000,
    )

    live = np.concatenate([np.setdiff1d(np.arange(n), gone), new])
    vectors = data.vectors.copy()
    vectors[moved] = data.vectors[moved[::-1]]
    fresh = trimem.HybridIndex(dim=DIM)
    order = rng.permutation(live)  # insertion order must not matter either
    fresh.add(
        ids=order.astype(np.uint64),
        texts=["x"] * len(order),
        timestamps=data.timestamps[order],
        namespaces=[data.namespaces[i] for i in order],
        vectors=vectors[order],
    )

    store = trimem.Store(str(tmp_path / "s"), durability="buffered")
    store.checkpoint([("main", churned)], b"")
    store.close()
    reopened = trimem.Store(str(tmp_path / "s"), durability="buffered").take_index("main")

    queries = data.queries[:60]
    want = answers(fresh, queries, time_range=(lo, hi))
    assert {h.plan for h in want} == {"sketch"}
    truth = brute_topk(queries, vectors, K, live[(data.timestamps[live] >= lo) & (data.timestamps[live] < hi)])
    assert recall_at_k([h.ids.astype(np.int64) for h in want], truth) >= 0.95
    for idx in (churned, reopened):
        got = answers(idx, queries, time_range=(lo, hi))
        for g, w in zip(got, want):
            assert g.plan == "sketch" and g.ids.tolist() == w.ids.tolist()
            np.testing.assert_allclose(g.vector_scores, w.vector_scores, atol=1e-6)
            assert not set(g.ids.tolist()) & set(gone.tolist())


def test_sketch_plan_inside_a_namespace_graph(data) -> None:
    """One graph per namespace: a window inside a namespace scans only that namespace."""
    idx = build_index(data, partition_by_namespace=True)
    (lo, hi), rows = window(data, 0.2)
    ns = np.array(data.namespaces)
    for namespace in ["agent/alice", "team/x"]:
        keep = rows[ns[rows] == namespace]
        hits = answers(idx, data.queries[:100], time_range=(lo, hi), namespace=namespace)
        assert {h.plan for h in hits} == {"sketch"}
        for h in hits:
            assert len(h) == K and set(h.ids.tolist()) <= set(keep.tolist())
        r = recall_at_k([h.ids.astype(np.int64) for h in hits], brute_topk(data.queries[:100], data.vectors, K, keep))
        print(f"namespace {namespace!r} window 20 % ({len(keep)} records): sketch recall@10 {r:.4f}")
        assert r >= 0.95


def test_a_window_barely_wider_than_the_candidates_is_scored_exactly(data) -> None:
    """Matches fewer than twice the candidates a sketch scan would re-score (4·ef) are all
    scored exactly: the same cost, and exact."""
    rows = np.arange(10_000)
    idx = build_index(data, rows=rows)
    (lo, hi), in_window = window(data, 0.15)
    matches = in_window[in_window < 10_000]
    assert 1000 < len(matches) < 2 * 4 * 256
    for ef, plan in [(64, "sketch"), (256, "exact")]:
        hits = answers(idx, data.queries[:20], time_range=(lo, hi), ef=ef)
        assert {h.plan for h in hits} == {plan}, ef
    exact = answers(idx, data.queries[:20], time_range=(lo, hi), ef=256)
    want = brute_topk(data.queries[:20], data.vectors, K, matches)
    assert [h.ids.tolist() for h in exact] == want.tolist()


def test_namespace_filter_and_hybrid_mode_take_the_sketch_plan(data, default_index) -> None:
    """One graph for all namespaces: a namespace alone (a quarter of the records) is a filter
    like a window; in hybrid mode the vector leg's 50 candidates come from the same scan."""
    ns = np.array(data.namespaces)
    rows = np.nonzero(ns == "agent/bob")[0]
    hits = answers(default_index, data.queries[:100], namespace="agent/bob")
    assert {h.plan for h in hits} == {"sketch"}
    assert all(len(h) == K and set(h.ids.tolist()) <= set(rows.tolist()) for h in hits)
    r = recall_at_k([h.ids.astype(np.int64) for h in hits], brute_topk(data.queries[:100], data.vectors, K, rows))
    print(f"namespace filter ({len(rows)} records): sketch recall@10 {r:.4f}")
    assert r >= 0.95
    (lo, hi), in_window = window(data, 0.1)
    for q in data.queries[:20]:
        h = default_index.search(text="record", vector=q, k=K, time_range=(lo, hi))
        assert h.plan == "sketch" and len(h) == K
        assert set(h.ids.tolist()) <= set(in_window.tolist())
        ranked = h.vector_ranks > 0
        np.testing.assert_allclose(h.vector_scores[ranked], data.vectors[h.ids[ranked].astype(np.int64)] @ q, atol=2e-5)
