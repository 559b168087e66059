"""Searches from several threads while one thread adds and deletes."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import trimem

DIM = 32
N0 = 3000  # initial records
BATCH = 150
ROUNDS = 14
NAMESPACES = ["ns0", "ns1", "ns2"]
WORDS = "docker node port server error timeout memory cache index search query vector graph token".split()


def ts_of(i: int) -> int:
    return 1_000 + 10 * i


def ns_of(i: int) -> str:
    return NAMESPACES[i % 3]


_TEXT_WORDS = np.random.default_rng(7).integers(0, len(WORDS), size=(N0 + BATCH * ROUNDS, 6))


def text_of(i: int) -> str:
    """The text of record i, whatever batch it is added in."""
    return " ".join(WORDS[w] for w in _TEXT_WORDS[i % len(_TEXT_WORDS)]) + f" r{i}"


def make_records(ids: np.ndarray, space: np.ndarray) -> dict:
    return {
        "ids": ids.astype(np.uint64),
        "texts": [text_of(i) for i in ids.tolist()],
        "timestamps": np.array([ts_of(i) for i in ids.tolist()], dtype=np.int64),
        "namespaces": [ns_of(i) for i in ids.tolist()],
        "vectors": space[ids],
    }


@pytest.fixture(scope="module")
def space() -> np.ndarray:
    from trimem.bench.datasets import clustered_vectors

    return clustered_vectors(N0 + BATCH * ROUNDS, DIM, n_centers=60, seed=4)


def test_concurrent_searches_during_writes(space) -> None:
    idx = trimem.HybridIndex(dim=DIM)  # batch inserts link on all cores
    idx.add(**make_records(np.arange(N0), space))
    # Ids live in [deleted_hi, added_hi): the writer appends new ids and deletes the oldest.
    state = {"added_hi": N0, "deleted_hi": 0, "done": False}
    errors: list[BaseException] = []
    searches = [0]
    rng_q = np.random.default_rng(1)
    qvecs = space[rng_q.integers(0, len(space), size=64)] + 0.05 * rng_q.standard_normal((64, DIM)).astype(np.float32)
    qvecs = qvecs.astype(np.float32)

    def writer() -> None:
        try:
            for r in range(ROUNDS):
                new = np.arange(N0 + r * BATCH, N0 + (r + 1) * BATCH)
                state["added_hi"] = int(new[-1]) + 1  # published before the add can be seen
                idx.add(**make_records(new, space))
                old = np.arange(r * BATCH, (r + 1) * BATCH, dtype=np.uint64)
                assert idx.delete(old) == BATCH
                state["deleted_hi"] = (r + 1) * BATCH  # published after the delete returned
                time.sleep(0.005)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            state["done"] = True

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            while not state["done"]:
                lo_id = state["deleted_hi"]  # read before the search starts
                mode = ["hybrid", "bm25", "vector"][int(rng.integers(3))]
                kw: dict = {"k": int(rng.integers(1, 30)), "mode": mode}
                if mode != "vector":
                    kw["text"] = " ".join(rng.choice(WORDS, size=2).tolist())
                if mode != "bm25":
                    kw["vector"] = qvecs[int(rng.integers(len(qvecs)))]
                ns = None
                if rng.random() < 0.5:
                    ns = NAMESPACES[int(rng.integers(3))]
                    kw["namespace"] = ns
                tr = None
                if rng.random() < 0.5:
                    a = int(rng.integers(0, N0 + BATCH * ROUNDS))
                    tr = (ts_of(a), ts_of(a + int(rng.integers(1, 2000))))
                    kw["time_range"] = tr
                h = idx.search(**kw)
                hi_id = state["added_hi"]  # read after the search returned
                ids = h.ids.astype(np.int64)
                assert len(set(ids.tolist())) == len(ids)
                assert len(ids) <= kw["k"]
                assert ((ids >= lo_id) & (ids < hi_id)).all(), (ids.min(initial=-1), lo_id, hi_id)
                np.testing.assert_array_equal(h.timestamps, 1_000 + 10 * ids)
                if ns is not None:
                    assert all(ns_of(i) == ns for i in ids.tolist())
                if tr is not None:
                    assert ((h.timestamps >= tr[0]) & (h.timestamps < tr[1])).all()
                assert (np.diff(h.scores) <= 0).all()
                searches[0] += 1
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
            state["done"] = True

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(3)]
    threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    assert searches[0] > 50, searches[0]

    # Final content is exactly the live id range.
    live = np.arange(ROUNDS * BATCH, N0 + ROUNDS * BATCH)
    assert sorted(idx.ids().tolist()) == live.tolist()
    st = idx.stats()
    # Each round's adds reuse the slots freed by the round before; the last round's stay free.
    assert (st["records"], st["vectors"], st["tombstones"]) == (N0, N0, BATCH)

    # After the writer stops: BM25 results equal a fresh single-threaded build of the same
    # content, and the same index gives identical results from one thread or many.
    fresh = trimem.HybridIndex(dim=DIM, threads=1)
    fresh.add(**make_records(live, space))
    queries = [" ".join(np.random.default_rng(s).choice(WORDS, size=3).tolist()) for s in range(40)]
    for q in queries:
        a = idx.search(text=q, mode="bm25", k=20)
        b = fresh.search(text=q, mode="bm25", k=20)
        assert a.ids.tolist() == b.ids.tolist()
        np.testing.assert_allclose(a.bm25_scores, b.bm25_scores, rtol=1e-6)
        ns = idx.search(text=q, mode="bm25", k=20, namespace="ns1", time_range=(ts_of(3000), ts_of(4000)))
        nf = fresh.search(text=q, mode="bm25", k=20, namespace="ns1", time_range=(ts_of(3000), ts_of(4000)))
        assert ns.ids.tolist() == nf.ids.tolist()

    # Vector recall of both graphs against brute force over the live set.
    truth = np.argsort(-(qvecs / np.linalg.norm(qvecs, axis=1, keepdims=True)) @ space[live].T, axis=1, kind="stable")[
        :, :10
    ]
    truth = live[truth]
    for index in (idx, fresh):
        found = [index.search(vector=q, mode="vector", k=10).ids.astype(np.int64) for q in qvecs]
        r = np.mean([len(set(f.tolist()) & set(t.tolist())) / 10 for f, t in zip(found, truth)])
        assert r >= 0.95, r

    def run(kw: dict) -> tuple:
        h = idx.search(**kw)
        return h.ids.tolist(), h.scores.tolist(), h.plan

    probes = []
    for j, q in enumerate(queries):
        probes.append({"text": q, "vector": qvecs[j % len(qvecs)], "k": 15})
        probes.append({"vector": qvecs[j % len(qvecs)], "mode": "vector", "k": 10, "namespace": NAMESPACES[j % 3]})
        probes.append(
            {
                "vector": qvecs[j % len(qvecs)],
                "mode": "vector",
                "k": 10,
                "time_range": (ts_of(2500), ts_of(2500 + 10 * j + 10)),
            }
        )
    serial = [run(p) for p in probes]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(run, probes * 3))
    assert parallel == serial * 3


def test_concurrent_readers_see_consistent_batches(space) -> None:
    """A batch add is all-or-nothing for readers too: a search sees none or all of it."""
    idx = trimem.HybridIndex(dim=DIM, threads=1)
    idx.add(**make_records(np.arange(500), space))
    stop = threading.Event()
    errors: list[BaseException] = []
    seen_partial: list[int] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                h = idx.search(text="batchmarker", mode="bm25", k=1000)
                n = len(h)
                if n % 200 != 0:
                    seen_partial.append(n)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for r in range(5):
            ids = np.arange(10_000 + r * 200, 10_000 + (r + 1) * 200)
            rec = make_records(ids % len(space), space)
            rec["ids"] = ids.astype(np.uint64)
            rec["texts"] = ["batchmarker"] * 200
            idx.add(**rec)
        idx.delete(np.arange(10_000, 10_400, dtype=np.uint64))
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=60)
    if errors:
        raise errors[0]
    assert not seen_partial, seen_partial[:10]
    assert len(idx.search(text="batchmarker", mode="bm25", k=1000)) == 600
