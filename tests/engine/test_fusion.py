"""Reciprocal rank fusion, weights, rrf_k, tie-breaking, the decay and importance terms, and
the mode checks."""

from __future__ import annotations

import numpy as np
import pytest

import trimem

f32 = np.float32
DAY_US = 86_400 * 1_000_000
T0 = 1_767_225_600_000_000

_WORDS = "docker node port server error timeout memory cache index search query vector graph token user agent".split()


@pytest.fixture(scope="module")
def fused_index(clustered_small) -> trimem.HybridIndex:
    """600 records with texts over a small vocabulary (many BM25 matches) and clustered vectors."""
    d = clustered_small
    rng = np.random.default_rng(21)
    n = 600
    texts = [" ".join(rng.choice(_WORDS, size=int(rng.integers(2, 12))).tolist()) for _ in range(n)]
    ids = (np.random.default_rng(22).permutation(n) * 3 + 5).astype(np.uint64)  # not in slot order
    idx = trimem.HybridIndex(dim=d.dim)
    idx.add(
        ids=ids,
        texts=texts,
        timestamps=T0 + rng.integers(0, 30 * DAY_US, size=n),
        namespaces=["n"] * n,
        vectors=d.vectors[:n],
        importance=rng.uniform(0, 1, size=n).astype(np.float32),
    )
    return idx


QUERIES = ["docker port", "error timeout memory", "graph vector search", "user agent token cache"]


def rrf(ranks: np.ndarray, w: float, rrf_k: float) -> np.ndarray:
    """w / (rrf_k + rank) in float32 as the engine computes it, 0 where rank is 0."""
    denom = f32(rrf_k) + np.maximum(ranks, 1).astype(np.float32)
    return np.where(ranks > 0, f32(w) / denom, f32(0)).astype(np.float32)


def expected_scores(h: trimem.Hits, weights=(1.0, 1.0), rrf_k=60.0, decay_weight=0.0, importance_weight=0.0):
    s = rrf(h.bm25_ranks, weights[0], rrf_k) + rrf(h.vector_ranks, weights[1], rrf_k)
    return s.astype(np.float32) + f32(decay_weight) * h.decay + f32(importance_weight) * h.importance


def assert_sorted_with_id_ties(h: trimem.Hits) -> None:
    s, ids = h.scores, h.ids
    for i in range(1, len(h)):
        assert s[i - 1] >= s[i]
        if s[i - 1] == s[i]:
            assert ids[i - 1] < ids[i], (ids[i - 1], ids[i], s[i])


def test_scores_equal_hand_computation_from_ranks(fused_index, clustered_small) -> None:
    for q, v in zip(QUERIES, clustered_small.queries):
        h = fused_index.search(text=q, vector=v, k=20)
        assert len(h) == 20
        assert ((h.bm25_ranks > 0) | (h.vector_ranks > 0)).all()
        np.testing.assert_allclose(h.scores, expected_scores(h), rtol=1e-6)
        assert_sorted_with_id_ties(h)
        # Per-leg values are reported only where the leg found the record.
        assert np.isnan(h.bm25_scores[h.bm25_ranks == 0]).all()
        assert not np.isnan(h.bm25_scores[h.bm25_ranks > 0]).any()
        assert np.isnan(h.vector_scores[h.vector_ranks == 0]).all()
        assert (h.decay == 1).all()


def competition_ranks(ids: list[int], scores: list[float]) -> dict[int, int]:
    """id → 1-based rank in a leg's list, equal scores sharing the better rank (1, 2, 2, 4)."""
    out: dict[int, int] = {}
    for pos, (i, s) in enumerate(zip(ids, scores)):
        out[i] = out[ids[pos - 1]] if pos and s == scores[pos - 1] else pos + 1
    return out


def independent_fusion(idx, text, vector, window, k, weights=(1.0, 1.0), rrf_k=60.0):
    """Fuse the single-leg result lists in Python: returns [(score, id)] best first."""
    b = idx.search(text=text, mode="bm25", k=window)
    v = idx.search(vector=vector, mode="vector", k=window)
    score: dict[int, np.float32] = {}
    for i, r in competition_ranks(b.ids.tolist(), b.bm25_scores.tolist()).items():
        score[i] = score.get(i, f32(0)) + f32(weights[0]) / (f32(rrf_k) + f32(r))
    for i, r in competition_ranks(v.ids.tolist(), v.vector_scores.tolist()).items():
        score[i] = f32(score.get(i, f32(0)) + f32(weights[1]) / (f32(rrf_k) + f32(r)))
    fused = sorted(((float(s), i) for i, s in score.items()), key=lambda t: (-t[0], t[1]))
    return fused[:k], b, v


@pytest.mark.parametrize("window", [None, 15, 80])
@pytest.mark.parametrize(
    ("weights", "rrf_k"), [((1.0, 1.0), 60.0), ((2.0, 0.5), 60.0), ((1.0, 1.0), 0.0), ((0.3, 1.7), 5.0)]
)
def test_hybrid_equals_fusing_single_leg_lists(fused_index, clustered_small, window, weights, rrf_k) -> None:
    k = 10
    w = window if window is not None else max(50, 5 * k)
    for q, v in zip(QUERIES, clustered_small.queries):
        want, b, vec = independent_fusion(fused_index, q, v, w, k, weights, rrf_k)
        h = fused_index.search(text=q, vector=v, k=k, window=window, weights=weights, rrf_k=rrf_k)
        assert h.ids.tolist() == [i for _, i in want]
        np.testing.assert_allclose(h.scores, [s for s, _ in want], rtol=1e-6)
        np.testing.assert_allclose(h.scores, expected_scores(h, weights, rrf_k), rtol=1e-6)
        # Each hit's rank and raw score in a leg are those of the single-leg list.
        b_rank = competition_ranks(b.ids.tolist(), b.bm25_scores.tolist())
        v_rank = competition_ranks(vec.ids.tolist(), vec.vector_scores.tolist())
        b_pos = {i: p for p, i in enumerate(b.ids.tolist())}
        v_pos = {i: p for p, i in enumerate(vec.ids.tolist())}
        for j, i in enumerate(h.ids.tolist()):
            assert h.bm25_ranks[j] == b_rank.get(i, 0)
            assert h.vector_ranks[j] == v_rank.get(i, 0)
            if i in b_pos:
                assert h.bm25_scores[j] == b.bm25_scores[b_pos[i]]
            if i in v_pos:
                assert h.vector_scores[j] == vec.vector_scores[v_pos[i]]


def test_default_window(fused_index, clustered_small) -> None:
    q, v = QUERIES[0], clustered_small.queries[0]
    # Both legs: max(50, 5k).
    for k in (3, 10, 20, 40):
        h = fused_index.search(text=q, vector=v, k=k)
        h2 = fused_index.search(text=q, vector=v, k=k, window=max(50, 5 * k))
        assert h.ids.tolist() == h2.ids.tolist()
        np.testing.assert_array_equal(h.bm25_ranks, h2.bm25_ranks)
        np.testing.assert_array_equal(h.vector_ranks, h2.vector_ranks)
    # A window of 1 keeps only each leg's best.
    h = fused_index.search(text=q, vector=v, k=10, window=1)
    assert len(h) <= 2 and set(h.bm25_ranks.tolist()) | set(h.vector_ranks.tolist()) <= {0, 1}


def test_weights_zero_removes_a_leg(fused_index, clustered_small) -> None:
    q, v = QUERIES[1], clustered_small.queries[1]
    only_vec = fused_index.search(text=q, vector=v, k=10, weights=(0.0, 1.0))
    plain_vec = fused_index.search(vector=v, mode="vector", k=10)
    assert only_vec.ids.tolist() == plain_vec.ids.tolist()
    only_bm25 = fused_index.search(text=q, vector=v, k=10, weights=(1.0, 0.0))
    plain_bm25 = fused_index.search(text=q, mode="bm25", k=10)
    assert only_bm25.ids.tolist() == plain_bm25.ids.tolist()
    # Raising one weight pulls the ranking toward that leg.
    heavy = fused_index.search(text=q, vector=v, k=10, weights=(10.0, 1.0))
    light = fused_index.search(text=q, vector=v, k=10, weights=(1.0, 10.0))
    assert len(set(heavy.ids.tolist()) & set(plain_bm25.ids.tolist())) > len(
        set(light.ids.tolist()) & set(plain_bm25.ids.tolist())
    )


def test_rrf_k_zero_gives_reciprocal_ranks(fused_index, clustered_small) -> None:
    h = fused_index.search(text=QUERIES[2], mode="bm25", k=5, rrf_k=0.0)
    np.testing.assert_allclose(h.scores, [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], rtol=1e-6)
    h = fused_index.search(vector=clustered_small.queries[2], mode="vector", k=3, rrf_k=100.0, weights=(1.0, 2.0))
    np.testing.assert_allclose(h.scores, [2 / 101, 2 / 102, 2 / 103], rtol=1e-6)


def test_fused_ties_broken_by_smaller_id() -> None:
    e = np.eye(4, dtype=np.float32)
    for text_id, vec_id in [(9, 4), (4, 9)]:
        idx = trimem.HybridIndex(dim=4)
        # One record found only by BM25 (no vector), one only by the vector leg (no query term).
        idx.add(ids=[text_id], texts=["alpha"], timestamps=[0], namespaces=["n"])
        idx.add(ids=[vec_id], texts=["beta"], timestamps=[0], namespaces=["n"], vectors=e[1:2])
        h = idx.search(text="alpha", vector=e[1], k=2)
        assert h.scores[0] == h.scores[1] == pytest.approx(1 / 61)
        assert h.ids.tolist() == [4, 9]


def test_equal_fused_scores_from_different_ranks() -> None:
    # bm25 rank 1 + vector rank 3 ties with bm25 rank 3 + vector rank 1 (rrf_k=0: 1 + 1/3).
    idx = trimem.HybridIndex(dim=4)
    v = np.array([[1, 0, 0, 0], [0.9, 0.1, 0, 0], [0.8, 0.2, 0, 0]], dtype=np.float32)
    idx.add(ids=[3, 2, 1], texts=["x x x x", "x x o o", "x o o o"], timestamps=[0] * 3, namespaces=["n"] * 3, vectors=v)
    assert idx.search(text="x", mode="bm25").ids.tolist() == [3, 2, 1]
    assert idx.search(vector=v[2], mode="vector").ids.tolist() == [1, 2, 3]
    h = idx.search(text="x", vector=v[2], k=3, rrf_k=0.0)
    assert h.ids.tolist() == [1, 3, 2]
    assert h.scores[0] == h.scores[1] > h.scores[2]


def _identical_records() -> trimem.HybridIndex:
    """Three records with the same text and vector, inserted in the order 50, 7, 30."""
    e = np.eye(4, dtype=np.float32)
    idx = trimem.HybridIndex(dim=4)
    idx.add(
        ids=[50, 7, 30, 8],
        texts=["same words", "same words", "same words", "other"],
        timestamps=[0] * 4,
        namespaces=["n"] * 4,
        vectors=np.stack([e[0], e[0], e[0], e[2]]),
    )
    return idx


def test_bm25_leg_ties_broken_by_smaller_id() -> None:
    h = _identical_records().search(text="same words", mode="bm25")
    assert h.ids.tolist() == [7, 30, 50]
    assert h.bm25_scores[0] == h.bm25_scores[1] == h.bm25_scores[2]


@pytest.mark.parametrize("filtered", [False, True])
def test_vector_leg_ties_broken_by_smaller_id(filtered: bool) -> None:
    """Equal similarities rank the smaller id first, as in the BM25 leg, whatever the insertion
    order (and whether the graph or the exact scan ran)."""
    idx = _identical_records()
    kw = {"namespace": "n"} if filtered else {}
    h = idx.search(vector=np.eye(4, dtype=np.float32)[0], mode="vector", k=3, **kw)
    assert h.plan == ("exact" if filtered else "graph")
    assert h.vector_scores[0] == h.vector_scores[1] == h.vector_scores[2]
    assert h.ids.tolist() == [7, 30, 50]


def test_hybrid_ties_on_identical_records_follow_ids() -> None:
    # Identical records share rank 1 in both legs (a leg that cannot tell them apart must not
    # let their order decide), so their fused scores are equal and the order follows ids.
    h = _identical_records().search(text="same words", vector=np.eye(4, dtype=np.float32)[0], k=3)
    assert h.ids.tolist() == [7, 30, 50]
    assert h.bm25_ranks.tolist() == h.vector_ranks.tolist() == [1, 1, 1]
    assert h.scores[0] == h.scores[1] == h.scores[2]


def test_decay_term_with_injected_now() -> None:
    e = np.eye(4, dtype=np.float32)
    idx = trimem.HybridIndex(dim=4)
    ts = [T0, T0 - DAY_US, T0 - 7 * DAY_US, T0 + DAY_US]  # the last one is in the future
    idx.add(ids=[1, 2, 3, 4], texts=["note"] * 4, timestamps=ts, namespaces=["n"] * 4, vectors=np.tile(e[0], (4, 1)))
    half_life = 2.0 * DAY_US
    h = idx.search(text="note", mode="bm25", k=4, half_life=half_life, now=T0, decay_weight=0.1)
    got = dict(zip(h.ids.tolist(), h.decay.tolist()))
    want = {1: 1.0, 2: 0.5**0.5, 3: 0.5**3.5, 4: 1.0}
    for i in want:
        assert got[i] == pytest.approx(want[i], rel=1e-6), i
    np.testing.assert_allclose(h.scores, expected_scores(h, decay_weight=0.1), rtol=1e-6)
    # A strong decay puts recent records first (equal BM25 scores, so ranks follow ids).
    assert h.ids.tolist()[:2] == [1, 4] and h.ids.tolist()[2:] == [2, 3]
    np.testing.assert_array_equal(h.timestamps, np.array(ts)[h.ids.astype(np.int64) - 1])
    # Without half_life there is no decay term and decay reports 1.
    h = idx.search(text="note", mode="bm25", k=4, now=T0, decay_weight=0.1)
    assert (h.decay == 1).all() and h.ids.tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(h.scores, expected_scores(h), rtol=1e-6)
    # decay_weight scales the term.
    h = idx.search(vector=e[0], mode="vector", k=4, half_life=half_life, now=T0 + 2 * DAY_US, decay_weight=0.5)
    got = dict(zip(h.ids.tolist(), h.decay.tolist()))
    assert got[4] == pytest.approx(0.5**0.5, rel=1e-6) and got[1] == pytest.approx(0.5, rel=1e-6)
    np.testing.assert_allclose(h.scores, expected_scores(h, decay_weight=0.5), rtol=1e-6)
    assert h.ids.tolist() == [4, 1, 2, 3]


def test_decay_uses_current_time_by_default() -> None:
    import time

    idx = trimem.HybridIndex(dim=0)
    now = int(time.time() * 1e6)
    idx.add(
        ids=[1, 2],
        texts=["note", "note"],
        timestamps=[now - 3600 * 10**6, now - 10 * 3600 * 10**6],
        namespaces=["n"] * 2,
    )
    h = idx.search(text="note", mode="bm25", half_life=3600 * 1e6, decay_weight=1.0)
    d = dict(zip(h.ids.tolist(), h.decay.tolist()))
    assert d[1] == pytest.approx(0.5, rel=1e-3) and d[2] == pytest.approx(0.5**10, rel=1e-2)


def test_importance_term(fused_index, clustered_small) -> None:
    q, v = QUERIES[3], clustered_small.queries[3]
    base = fused_index.search(text=q, vector=v, k=30)
    boosted = fused_index.search(text=q, vector=v, k=30, importance_weight=0.05)
    np.testing.assert_allclose(boosted.scores, expected_scores(boosted, importance_weight=0.05), rtol=1e-6)
    for i, imp in zip(boosted.ids.tolist(), boosted.importance.tolist()):
        assert imp == pytest.approx(fused_index.get(i).importance)
    # The importance column is reported even when its weight is 0.
    for i, imp in zip(base.ids.tolist(), base.importance.tolist()):
        assert imp == pytest.approx(fused_index.get(i).importance)


def test_set_importance_changes_ranking() -> None:
    e = np.eye(4, dtype=np.float32)
    idx = trimem.HybridIndex(dim=4)
    idx.add(ids=[1, 2, 3], texts=["memo"] * 3, timestamps=[0] * 3, namespaces=["n"] * 3, vectors=np.tile(e[0], (3, 1)))
    assert idx.search(text="memo", mode="bm25", importance_weight=1.0).ids.tolist() == [1, 2, 3]
    idx.set_importance([3, 2], [0.9, 0.2])
    assert idx.get(3).importance == pytest.approx(0.9)
    h = idx.search(text="memo", mode="bm25", importance_weight=1.0)
    assert h.ids.tolist() == [3, 2, 1]
    np.testing.assert_allclose(h.importance, [0.9, 0.2, 0.0], rtol=1e-6)
    np.testing.assert_allclose(h.scores, expected_scores(h, importance_weight=1.0), rtol=1e-6)
    # Negative weight pushes important records down.
    assert idx.search(text="memo", mode="bm25", importance_weight=-1.0).ids.tolist()[0] == 1
    # All terms together.
    h = idx.search(text="memo", vector=e[0], half_life=1e6, now=5 * 10**6, decay_weight=0.2, importance_weight=0.3)
    np.testing.assert_allclose(h.scores, expected_scores(h, decay_weight=0.2, importance_weight=0.3), rtol=1e-6)


def test_modes(fused_index, clustered_small) -> None:
    q, v = QUERIES[0], clustered_small.queries[0]
    # mode="bm25" ignores a vector; mode="vector" ignores a text.
    b = fused_index.search(text=q, vector=v, mode="bm25")
    assert b.plan == "none" and (b.vector_ranks == 0).all()
    assert b.ids.tolist() == fused_index.search(text=q, mode="bm25").ids.tolist()
    vv = fused_index.search(text=q, vector=v, mode="vector")
    assert vv.plan == "graph" and (vv.bm25_ranks == 0).all()
    assert vv.ids.tolist() == fused_index.search(vector=v, mode="vector").ids.tolist()
    # Hybrid with one input is that leg alone.
    assert fused_index.search(text=q).ids.tolist() == b.ids.tolist()
    assert fused_index.search(vector=v).ids.tolist() == vv.ids.tolist()
    # A query with no known term gives an empty BM25 leg, and hybrid falls back on vectors.
    assert len(fused_index.search(text="zzzz qqqq", mode="bm25")) == 0
    h = fused_index.search(text="zzzz qqqq", vector=v)
    assert (h.bm25_ranks == 0).all() and len(h) == 10


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"vector": "V", "mode": "bm25"}, "bm25.*text"),
        ({"text": "docker", "mode": "vector"}, "vector.*vector"),
        ({}, "text, a vector or both"),
        ({"text": "docker", "mode": "BM25"}, "unknown mode"),
        ({"text": "docker", "mode": "keyword"}, "unknown mode"),
        ({"text": "docker", "rrf_k": -1.0}, "rrf_k"),
        ({"text": "docker", "rrf_k": float("nan")}, "rrf_k"),
        ({"text": "docker", "weights": (float("inf"), 1.0)}, "weights"),
        ({"text": "docker", "half_life": 0.0}, "half_life"),
        ({"text": "docker", "half_life": -5.0}, "half_life"),
        ({"text": "docker", "window": 0}, "window"),
        ({"text": "docker", "ef": 0}, "ef"),
    ],
)
def test_invalid_search_arguments(fused_index, clustered_small, kwargs, match) -> None:
    kwargs = {k: (clustered_small.queries[0] if v == "V" else v) for k, v in kwargs.items()}
    with pytest.raises(trimem.InvalidArgumentError, match=match):
        fused_index.search(**kwargs)
