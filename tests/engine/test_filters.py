"""Namespace, session, time and allowed-id filters: applied inside both legs, never leaking records."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trimem
from trimem import tokenize

NAMESPACES = ["agent/a", "agent/b", "team x", "ünï/ç", "a"]
SESSIONS = [None, "s1", "s2", "会话"]
WORDS = ["alpha", "beta", "gamma", "delta", "node.js", "8080", "容器", "服务"]
DIM = 8


@st.composite
def stores(draw):
    n = draw(st.integers(1, 70))
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(NAMESPACES),
                st.sampled_from(SESSIONS),
                st.integers(0, 50),  # timestamps collide often
                st.lists(st.sampled_from(WORDS), min_size=0, max_size=5),
            ),
            min_size=n,
            max_size=n,
        )
    )
    seed = draw(st.integers(0, 2**32 - 1))
    exact_threshold = draw(st.sampled_from([0, 5, 2000]))  # force graph, mixed, exact
    return rows, seed, exact_threshold


@st.composite
def queries(draw):
    return {
        "namespace": draw(st.sampled_from([*NAMESPACES, None, "missing"])),
        "session": draw(st.sampled_from([*SESSIONS, "nope"])),
        "time_range": draw(
            st.one_of(st.none(), st.tuples(st.integers(-5, 55), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])))
        ),
        "text": draw(
            st.one_of(st.none(), st.lists(st.sampled_from([*WORDS, "zzz"]), min_size=1, max_size=3).map(" ".join))
        ),
        "allow": draw(st.one_of(st.none(), st.floats(0.0, 1.0))),  # share of the ids allowed
        "use_vector": draw(st.booleans()),
        "mode": draw(st.sampled_from(["hybrid", "bm25", "vector"])),
        "k": draw(st.integers(1, 25)),
    }


@settings(max_examples=75, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(store=stores(), qs=st.lists(queries(), min_size=1, max_size=8))
def test_filters_property(store, qs) -> None:
    rows, seed, exact_threshold = store
    rng = np.random.default_rng(seed)
    n = len(rows)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    ids = rng.choice(10_000, size=n, replace=False).astype(np.uint64)
    idx = trimem.HybridIndex(dim=DIM, exact_threshold=exact_threshold)
    idx.add(
        ids=ids,
        texts=[" ".join(r[3]) for r in rows],
        timestamps=[r[2] for r in rows],
        namespaces=[r[0] for r in rows],
        sessions=[r[1] for r in rows],
        vectors=vectors,
    )
    by_id = {int(i): r for i, r in zip(ids, rows)}
    row_of = {int(i): j for j, i in enumerate(ids)}
    doc_terms = {int(i): set(tokenize(" ".join(r[3]))) for i, r in zip(ids, rows)}

    for q in qs:
        mode, text = q["mode"], q["text"]
        vector = rng.standard_normal(DIM).astype(np.float32) if q["use_vector"] else None
        if (
            (mode == "bm25" and text is None)
            or (mode == "vector" and vector is None)
            or (text is None and vector is None)
        ):
            with pytest.raises(trimem.InvalidArgumentError):
                idx.search(text=text, vector=vector, mode=mode, k=q["k"])
            continue
        allowed = None
        if q["allow"] is not None:  # a share of the store's ids, and one no record has
            allowed = {int(i) for i in ids if rng.random() < q["allow"]} | {99_999}
        h = idx.search(
            text=text,
            vector=vector,
            mode=mode,
            k=q["k"],
            namespace=q["namespace"],
            session=q["session"],
            time_range=q["time_range"],
            ids=None if allowed is None else sorted(allowed),
        )

        def matches(i: int, q: dict = q, allowed: set[int] | None = allowed) -> bool:
            ns, sess, ts, _ = by_id[i]
            if allowed is not None and i not in allowed:
                return False
            if q["namespace"] is not None and ns != q["namespace"]:
                return False
            if q["session"] is not None and sess != q["session"]:
                return False
            if q["time_range"] is not None and not (q["time_range"][0] <= ts < q["time_range"][1]):
                return False
            return True

        got = h.ids.tolist()
        assert len(got) == len(set(got)) <= q["k"]
        for j, i in enumerate(got):
            assert matches(i), (i, by_id[i], q)
            assert h.timestamps[j] == by_id[i][2]
        matching = [i for i in by_id if matches(i)]
        use_text = text is not None and mode != "vector"
        use_vec = vector is not None and mode != "bm25"
        terms = set(tokenize(text)) if use_text else set()
        text_matching = [i for i in matching if doc_terms[i] & terms]
        if use_vec:
            # Every record has a vector, and the vector leg must fill k from the matching ones
            # (the default window covers these small stores when both legs run).
            assert len(got) == min(q["k"], len(matching)), (q, len(matching), h.plan)
        elif use_text:
            assert len(got) == min(q["k"], len(text_matching))
            assert set(got) <= set(text_matching)
        if use_vec and not use_text and h.plan == "exact":
            # The exact scan returns exactly the nearest matching records.
            unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            sims = {i: float(unit[row_of[i]] @ vector) / float(np.linalg.norm(vector)) for i in matching}
            if got:
                kth = sorted(sims.values(), reverse=True)[len(got) - 1]
                assert min(sims[i] for i in got) >= kth - 1e-5
        if not matching:
            assert len(got) == 0


@pytest.fixture(scope="module")
def store() -> trimem.HybridIndex:
    e = np.eye(4, dtype=np.float32)
    idx = trimem.HybridIndex(dim=4)
    idx.add(
        ids=[1, 2, 3, 4, 5, 6],
        texts=["deploy notes"] * 6,
        timestamps=[100, 200, 300, 300, 400, 500],
        namespaces=["u1", "u1", "u1", "u2", "u2", "u1"],
        sessions=["s1", "s2", None, "s1", "s1", "s1"],
        vectors=np.stack([e[0], e[0], e[1], e[0], e[2], e[3]]),
    )
    return idx


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_namespace_and_session(store, mode) -> None:
    kw = {"text": "deploy", "vector": np.ones(4, dtype=np.float32), "mode": mode, "k": 10}
    assert sorted(store.search(namespace="u1", **kw).ids.tolist()) == [1, 2, 3, 6]
    assert sorted(store.search(namespace="u2", **kw).ids.tolist()) == [4, 5]
    assert sorted(store.search(session="s1", **kw).ids.tolist()) == [1, 4, 5, 6]
    assert sorted(store.search(namespace="u1", session="s1", **kw).ids.tolist()) == [1, 6]
    assert sorted(store.search(namespace="u2", session="s2", **kw).ids.tolist()) == []
    assert sorted(store.search(**kw).ids.tolist()) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_unknown_namespace_or_session_is_empty(store, mode) -> None:
    kw = {"text": "deploy", "vector": np.ones(4, dtype=np.float32), "mode": mode}
    for f in ({"namespace": "nobody"}, {"session": "nothing"}, {"namespace": "U1"}, {"namespace": "u1 "}):
        h = store.search(**kw, **f)
        assert len(h) == 0 and h.plan == "none", f


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid"])
def test_time_range_is_half_open(store, mode) -> None:
    kw = {"text": "deploy", "vector": np.ones(4, dtype=np.float32), "mode": mode, "k": 10}
    assert sorted(store.search(time_range=(200, 400), **kw).ids.tolist()) == [2, 3, 4]
    assert sorted(store.search(time_range=(100, 101), **kw).ids.tolist()) == [1]
    assert sorted(store.search(time_range=(99, 100), **kw).ids.tolist()) == []
    assert sorted(store.search(time_range=(300, 301), **kw).ids.tolist()) == [3, 4]
    assert sorted(store.search(time_range=(501, 10**18), **kw).ids.tolist()) == []
    assert sorted(store.search(time_range=(-(2**63), 2**63 - 1), **kw).ids.tolist()) == [1, 2, 3, 4, 5, 6]
    # lo == hi is an empty range, not an error.
    assert len(store.search(time_range=(300, 300), **kw)) == 0
    assert sorted(store.search(time_range=(300, 501), namespace="u1", session="s1", **kw).ids.tolist()) == [6]


def test_inverted_time_range_raises(store) -> None:
    with pytest.raises(trimem.InvalidTimeRangeError, match="start 500 is after end 100") as e:
        store.search(text="deploy", time_range=(500, 100))
    assert isinstance(e.value, ValueError) and isinstance(e.value, trimem.InvalidArgumentError)
    with pytest.raises(trimem.InvalidTimeRangeError):
        store.search(vector=np.ones(4, dtype=np.float32), mode="vector", time_range=(1, 0))


@pytest.mark.parametrize("bad", ["", "a\nb", "x\x00", "é" * 300])
def test_invalid_filter_names_raise(store, bad) -> None:
    with pytest.raises(trimem.InvalidNameError):
        store.search(text="deploy", namespace=bad)
    with pytest.raises(trimem.InvalidNameError):
        store.search(text="deploy", session=bad)


def test_filters_follow_deletes_and_upserts() -> None:
    idx = trimem.HybridIndex(dim=0)
    idx.add(ids=[1, 2], texts=["memo", "memo"], timestamps=[10, 20], namespaces=["a", "a"], sessions=["s", None])
    idx.delete([1])
    # The last record of session "s" is gone, so the session is unknown now.
    assert len(idx.search(text="memo", session="s")) == 0
    # Moving a record to another namespace by upsert moves it in the filter too.
    idx.add(ids=[2], texts=["memo"], timestamps=[30], namespaces=["b"], sessions=["t"], upsert=True)
    assert len(idx.search(text="memo", namespace="a")) == 0
    assert idx.search(text="memo", namespace="b", session="t", time_range=(30, 31)).ids.tolist() == [2]
    assert len(idx.search(text="memo", time_range=(20, 30))) == 0
    assert idx.stats()["namespaces"] == 1
