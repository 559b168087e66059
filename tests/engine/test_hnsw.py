"""HNSW recall against exact brute force, filtered search and its planner, deletes, upserts
and slot reuse."""

from __future__ import annotations

import numpy as np
import pytest

import trimem
from tests.conftest import build_index as build
from trimem.bench.datasets import time_window

K = 10
EF = 64


def vector_search(idx: trimem.HybridIndex, queries: np.ndarray, **kw) -> list[trimem.Hits]:
    kw = {"mode": "vector", "k": K, "ef": EF, **kw}
    return [idx.search(vector=q, **kw) for q in queries]


@pytest.fixture(scope="module")
def default_index(clustered_20k) -> trimem.HybridIndex:
    return build(clustered_20k)


@pytest.fixture(scope="module")
def graph_index(clustered_20k) -> trimem.HybridIndex:
    """exact_threshold=0: every filtered search goes through the graph."""
    return build(clustered_20k, exact_threshold=0)


def test_recall_unfiltered_cosine(clustered_20k, default_index, brute, recall) -> None:
    d = clustered_20k
    assert len(default_index) == d.n and default_index.stats()["vectors"] == d.n
    hits = vector_search(default_index, d.queries)
    truth = brute(d.queries, d.vectors, K)
    r = recall([h.ids.astype(np.int64) for h in hits], truth)
    print(f"unfiltered recall@10 (cosine, 20k x 64, ef=64) = {r:.4f}")
    assert r >= 0.95
    for q, h in zip(d.queries, hits):
        assert len(h) == K and h.plan == "graph"
        # Reported similarities are the true cosines, best first, ranks 1..k.
        want = d.vectors[h.ids.astype(np.int64)] @ q
        np.testing.assert_allclose(h.vector_scores, want, atol=2e-5)
        assert (np.diff(h.vector_scores) <= 1e-6).all()
        assert h.vector_ranks.tolist() == list(range(1, K + 1))
        assert (h.bm25_ranks == 0).all() and np.isnan(h.bm25_scores).all()
    # More effort never hurts much.
    r_hi = recall([h.ids.astype(np.int64) for h in vector_search(default_index, d.queries[:50], ef=200)], truth[:50])
    assert r_hi >= 0.97


def test_recall_inner_product(clustered_20k, brute, recall) -> None:
    d = clustered_20k
    rng = np.random.default_rng(3)
    # Unequal norms, so inner product and cosine rank differently.
    scaled = (d.vectors * rng.uniform(0.5, 2.0, size=(d.n, 1))).astype(np.float32)
    idx = build(d, vectors=scaled, metric="ip")
    assert idx.metric == "ip"
    hits = vector_search(idx, d.queries)
    truth = brute(d.queries, scaled, K)
    r = recall([h.ids.astype(np.int64) for h in hits], truth)
    print(f"unfiltered recall@10 (ip, 20k x 64, ef=64) = {r:.4f}")
    assert r >= 0.95
    for q, h in zip(d.queries[:20], hits[:20]):
        np.testing.assert_allclose(h.vector_scores, scaled[h.ids.astype(np.int64)] @ q, rtol=1e-5, atol=1e-5)
    # Under "ip" vectors are stored as given, not normalised.
    np.testing.assert_array_equal(idx.get(7).vector, scaled[7])
    assert not np.allclose(np.linalg.norm(scaled[:100], axis=1), 1.0)
    # A query vector is not normalised either: scaling it scales the scores.
    h2 = idx.search(vector=d.queries[0] * 3, mode="vector", k=K, ef=EF)
    assert h2.ids.tolist() == hits[0].ids.tolist()
    np.testing.assert_allclose(h2.vector_scores, 3 * hits[0].vector_scores, rtol=1e-5)


def test_cosine_stores_normalised_vectors(clustered_small) -> None:
    d = clustered_small
    idx = trimem.HybridIndex(dim=d.dim)
    v = d.vectors[:3] * np.array([[2.0], [0.1], [7.0]], dtype=np.float32)
    idx.add(ids=[1, 2, 3], texts=["a", "b", "c"], timestamps=[0, 0, 0], namespaces=["n"] * 3, vectors=v)
    for i, row in zip([1, 2, 3], d.vectors[:3]):
        np.testing.assert_allclose(idx.get(i).vector, row, atol=1e-6)
    # The query is normalised too: a scaled query gives the same cosines.
    h = idx.search(vector=d.vectors[0] * 5, mode="vector", k=3)
    assert h.ids[0] == 1 and h.vector_scores[0] == pytest.approx(1.0, abs=1e-5)


FRACTIONS = [0.01, 0.1, 0.5]


@pytest.mark.parametrize("fraction", FRACTIONS)
@pytest.mark.parametrize("planner", ["default", "graph"])
def test_filtered_recall(clustered_20k, default_index, graph_index, brute, recall, fraction, planner) -> None:
    """Time windows keeping 1 %, 10 % and 50 % of 20k records: full k every time, recall >= 0.95,
    under the default planner (exact scan up to 1,000 matches) and with the graph forced."""
    d = clustered_20k
    idx = default_index if planner == "default" else graph_index
    lo, hi = time_window(d.timestamps, fraction, seed=3)
    rows = np.nonzero((d.timestamps >= lo) & (d.timestamps < hi))[0]
    assert abs(len(rows) - fraction * d.n) <= 2
    hits = vector_search(idx, d.queries, time_range=(lo, hi))
    plans: dict[str, int] = {}
    for h in hits:
        assert len(h) == K
        assert ((h.timestamps >= lo) & (h.timestamps < hi)).all()
        np.testing.assert_array_equal(h.timestamps, d.timestamps[h.ids.astype(np.int64)])
        plans[h.plan] = plans.get(h.plan, 0) + 1
    r = recall([h.ids.astype(np.int64) for h in hits], brute(d.queries, d.vectors, K, rows))
    print(f"filtered recall@10, window {fraction:.0%} ({len(rows)} records), planner={planner}: {r:.4f} plans={plans}")
    if planner == "graph":
        assert "exact" not in plans
    elif len(rows) <= 1000:
        assert set(plans) == {"exact"}
    else:
        assert set(plans) <= {"graph", "graph+exact"} and plans.get("graph", 0) > 0
    assert r >= 0.95


def test_sparse_window_is_scanned(clustered_20k, default_index, brute, recall) -> None:
    """A window of 6 % holds more than exact_threshold records but is too sparse for the two-hop
    walk (its recall fell to ~0.8 at 2–5 % on 100k records): the planner scans it exactly."""
    d = clustered_20k
    lo, hi = time_window(d.timestamps, 0.06, seed=5)
    rows = np.nonzero((d.timestamps >= lo) & (d.timestamps < hi))[0]
    assert len(rows) > 1000
    hits = vector_search(default_index, d.queries[:50], time_range=(lo, hi))
    assert {h.plan for h in hits} == {"exact"}
    assert recall([h.ids.astype(np.int64) for h in hits], brute(d.queries[:50], d.vectors, K, rows)) == 1.0


@pytest.mark.parametrize("planner", ["default", "graph"])
def test_filtered_recall_namespace_and_time(clustered_20k, default_index, graph_index, brute, recall, planner) -> None:
    d = clustered_20k
    idx = default_index if planner == "default" else graph_index
    ns = np.array(d.namespaces)
    for namespace, window in [("agent/alice", None), ("agent/bob", 0.3)]:
        keep = ns == namespace
        kw: dict = {"namespace": namespace}
        if window is not None:
            lo, hi = time_window(d.timestamps, window, seed=5)
            keep &= (d.timestamps >= lo) & (d.timestamps < hi)
            kw["time_range"] = (lo, hi)
        rows = np.nonzero(keep)[0]
        hits = vector_search(idx, d.queries[:100], **kw)
        for h in hits:
            assert len(h) == K
            assert set(h.ids.tolist()) <= set(rows.tolist())
        r = recall([h.ids.astype(np.int64) for h in hits], brute(d.queries[:100], d.vectors, K, rows))
        print(
            f"namespace {namespace!r} window {window} ({len(rows)} records), planner={planner}: recall {r:.4f}, "
            f"plans {sorted({h.plan for h in hits})}"
        )
        assert r >= 0.95


def test_delete_half_keeps_recall(clustered_20k, brute, recall) -> None:
    d = clustered_20k
    n = 10_000
    idx = build(d, rows=np.arange(n))
    rng = np.random.default_rng(8)
    gone = np.sort(rng.choice(n, size=n // 2, replace=False))
    live = np.setdiff1d(np.arange(n), gone)
    assert idx.delete(gone.astype(np.uint64)) == n // 2
    st = idx.stats()
    assert (st["records"], st["vectors"], st["tombstones"]) == (n // 2, n // 2, n // 2)
    assert len(idx) == n // 2
    gone_set = set(gone.tolist())
    for i in gone[:200].tolist():
        assert idx.get(i) is None and i not in idx
    assert idx.get_many(gone[:5].tolist()) == [None] * 5

    queries = np.concatenate([d.queries, d.vectors[gone[:100]]])  # also query at deleted points
    hits = vector_search(idx, queries)
    for h in hits:
        assert len(h) == K
        assert not set(h.ids.tolist()) & gone_set
    r = recall([h.ids.astype(np.int64) for h in hits], brute(queries, d.vectors, K, live))
    print(f"recall@10 after deleting half of 10k: {r:.4f}")
    assert r >= 0.95
    # Deleted records are gone from the BM25 leg and from filtered searches as well.
    assert not set(idx.search(text="record", mode="bm25", k=n).ids.tolist()) & gone_set
    lo, hi = time_window(d.timestamps[:n], 0.05, seed=1)
    for h in vector_search(idx, d.queries[:50], time_range=(lo, hi)):
        assert not set(h.ids.tolist()) & gone_set

    # New records fill the freed slots.
    new_rows = np.arange(n, n + 3000)
    idx.add(
        ids=new_rows.astype(np.uint64),
        texts=["new"] * len(new_rows),
        timestamps=d.timestamps[new_rows],
        namespaces=[d.namespaces[i] for i in new_rows],
        vectors=d.vectors[new_rows],
    )
    st = idx.stats()
    assert (st["records"], st["vectors"], st["tombstones"]) == (8000, 8000, 2000)
    # A deleted id can come back (without upsert) with a new vector.
    back = gone[:10]
    idx.add(
        ids=back.astype(np.uint64),
        texts=["back"] * 10,
        timestamps=d.timestamps[back],
        namespaces=[d.namespaces[i] for i in back],
        vectors=d.vectors[back + 15_000],
    )
    assert idx.stats()["tombstones"] == 1990
    live = np.concatenate([live, new_rows])
    vectors = d.vectors.copy()
    vectors[back] = d.vectors[back + 15_000]
    live = np.concatenate([live, back])
    hits = vector_search(idx, d.queries)
    r = recall([h.ids.astype(np.int64) for h in hits], brute(d.queries, vectors, K, live))
    print(f"recall@10 after refilling freed slots: {r:.4f}")
    assert r >= 0.95
    # Every re-added record is its own nearest neighbour.
    for i in np.concatenate([new_rows[:100], back]).tolist():
        h = idx.search(vector=vectors[i], mode="vector", k=1, ef=EF)
        assert h.ids.tolist() == [i]
        np.testing.assert_allclose(idx.get(i).vector, vectors[i], atol=1e-6)


def test_upsert_replaces(clustered_small) -> None:
    d = clustered_small
    idx = trimem.HybridIndex(dim=d.dim)
    n = 500
    idx.add(
        ids=np.arange(n, dtype=np.uint64),
        texts=[f"alpha {i}" for i in range(n)],
        timestamps=np.zeros(n, dtype=np.int64),
        namespaces=["a"] * n,
        vectors=d.vectors[:n],
        sessions=["s1"] * n,
        payloads=[b"old"] * n,
        importance=[0.5] * n,
    )
    assert idx.doc_freq("alpha") == n
    new_vec = d.vectors[1500:1502]
    # One existing id and one new id in the same batch.
    idx.add(
        ids=[7, 10_000],
        texts=["beta gamma", "delta"],
        timestamps=[99, 100],
        namespaces=["b", "b"],
        vectors=new_vec,
        sessions=[None, "s2"],
        payloads=[b"new", b"x"],
        importance=[0.9, 0.1],
        upsert=True,
    )
    assert len(idx) == n + 1
    r = idx.get(7)
    assert (r.text, r.namespace, r.session, r.timestamp, r.payload) == ("beta gamma", "b", None, 99, b"new")
    assert r.importance == pytest.approx(0.9)
    np.testing.assert_allclose(r.vector, new_vec[0], atol=1e-6)
    assert idx.doc_freq("alpha") == n - 1 and idx.doc_freq("beta") == 1
    assert 7 not in idx.search(text="alpha", mode="bm25", k=n + 1).ids.tolist()
    assert idx.search(text="beta", mode="bm25").ids.tolist() == [7]
    h = idx.search(vector=new_vec[0], mode="vector", k=1)
    assert h.ids.tolist() == [7] and h.vector_scores[0] == pytest.approx(1.0, abs=1e-5)
    # The old vector no longer leads to id 7 (unless 7 is also nearest to the new one).
    h = idx.search(vector=d.vectors[7], mode="vector", k=5)
    assert 7 not in h.ids.tolist()
    assert idx.search(vector=d.vectors[7], mode="vector", k=5, namespace="a").ids[0] != 7
    assert idx.search(vector=new_vec[0], mode="vector", k=5, namespace="a").ids.tolist().count(7) == 0
    assert idx.search(vector=new_vec[0], mode="vector", k=5, namespace="b").ids[0] == 7
    assert idx.stats()["vectors"] == n + 1


def test_records_without_vectors_never_in_vector_leg(clustered_small) -> None:
    d = clustered_small
    idx = trimem.HybridIndex(dim=d.dim)
    idx.add(
        ids=list(range(100)),
        texts=["with vector"] * 100,
        timestamps=[0] * 100,
        namespaces=["n"] * 100,
        vectors=d.vectors[:100],
    )
    idx.add(ids=list(range(100, 150)), texts=["no vector"] * 50, timestamps=[0] * 50, namespaces=["n"] * 50)
    st = idx.stats()
    assert (st["records"], st["vectors"]) == (150, 100)
    assert idx.get(120).vector is None
    h = idx.search(vector=d.vectors[0], mode="vector", k=150)
    assert len(h) == 100 and max(h.ids.tolist()) < 100
    h = idx.search(text="vector", vector=d.vectors[0], k=150)
    assert len(h) == 150
    no_vec = h.ids >= 100
    assert (h.vector_ranks[no_vec] == 0).all() and np.isnan(h.vector_scores[no_vec]).all()
    # Deleting a record with no vector leaves the vector count alone.
    idx.delete([120])
    assert idx.stats()["vectors"] == 100


def test_small_and_empty_indexes(clustered_small) -> None:
    d = clustered_small
    idx = trimem.HybridIndex(dim=d.dim)
    h = idx.search(vector=d.queries[0], mode="vector")
    assert len(h) == 0 and h.plan == "none"
    idx.add(ids=[5], texts=["only"], timestamps=[0], namespaces=["n"], vectors=d.vectors[:1])
    h = idx.search(vector=d.queries[0], mode="vector", k=10)
    assert h.ids.tolist() == [5]
    idx.delete([5])
    assert len(idx.search(vector=d.queries[0], mode="vector")) == 0
    assert idx.stats()["vectors"] == 0
    # The index recovers after becoming empty (the entry point is reset).
    idx.add(
        ids=list(range(300)), texts=["x"] * 300, timestamps=[0] * 300, namespaces=["n"] * 300, vectors=d.vectors[:300]
    )
    for i in range(0, 300, 37):
        assert idx.search(vector=d.vectors[i], mode="vector", k=1).ids.tolist() == [i]
    # k above the number of records returns them all.
    assert len(idx.search(vector=d.queries[0], mode="vector", k=1000)) == 300


@pytest.mark.slow
@pytest.mark.parametrize("fraction", [0.01, 0.1])
def test_filtered_graph_recall_not_below_hnswlib(clustered_20k, graph_index, brute, recall, fraction) -> None:
    """With the graph forced, filtered recall should match hnswlib's filtered search (its
    `filter=` callback, same M=16, ef_construction=200, ef=64) on the same data."""
    hnswlib = pytest.importorskip("hnswlib")
    d = clustered_20k
    lo, hi = time_window(d.timestamps, fraction, seed=3)
    keep = (d.timestamps >= lo) & (d.timestamps < hi)
    rows = np.nonzero(keep)[0]
    truth = brute(d.queries, d.vectors, K, rows)
    ref = hnswlib.Index(space="ip", dim=d.dim)
    ref.init_index(max_elements=d.n, M=16, ef_construction=200, random_seed=42)
    ref.add_items(d.vectors, np.arange(d.n), num_threads=2)
    ref.set_ef(EF)
    theirs = [ref.knn_query(q, k=K, filter=lambda i: bool(keep[i]))[0][0].astype(np.int64) for q in d.queries]
    ours = [h.ids.astype(np.int64) for h in vector_search(graph_index, d.queries, time_range=(lo, hi))]
    r_theirs, r_ours = recall(theirs, truth), recall(ours, truth)
    print(f"window {fraction:.0%}: forced-graph recall {r_ours:.4f}, hnswlib filtered recall {r_theirs:.4f}")
    assert r_ours >= r_theirs - 0.02
