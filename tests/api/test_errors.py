"""Every bad input raises the right typed error with a helpful message and leaves the index
exactly as it was."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import trimem

DIM = 8
N = 40


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


@pytest.fixture()
def idx() -> trimem.HybridIndex:
    i = trimem.HybridIndex(dim=DIM, max_text_bytes=100)
    i.add(
        ids=np.arange(N, dtype=np.uint64),
        texts=[f"note {k} about docker port {8000 + k}" for k in range(N)],
        timestamps=np.arange(N, dtype=np.int64) * 10,
        namespaces=["u1" if k % 2 else "u2" for k in range(N)],
        vectors=_vectors(N),
        sessions=["s1" if k % 3 else None for k in range(N)],
        payloads=[bytes([k]) for k in range(N)],
        importance=[k / N for k in range(N)],
    )
    return i


QUERY_VEC = np.random.default_rng(99).standard_normal(DIM).astype(np.float32)
PROBES = [
    {"text": "docker port 8003", "k": 10},
    {"vector": QUERY_VEC, "mode": "vector", "k": 10},
    {"text": "note about", "vector": QUERY_VEC, "k": 15, "namespace": "u1"},
    {"vector": QUERY_VEC, "mode": "vector", "k": 5, "time_range": (50, 200), "session": "s1"},
]


def good_batch(n: int = 2, start: int = 1000, **over: Any) -> dict:
    b = {
        "ids": list(range(start, start + n)),
        "texts": ["fresh text"] * n,
        "timestamps": [5] * n,
        "namespaces": ["u3"] * n,
        "vectors": _vectors(n, seed=start),
    }
    b.update(over)
    return b


def assert_rejected(
    idx: trimem.HybridIndex, take_snapshot: Callable, call: Callable[[], Any], error: type[Exception], match: str
) -> Exception:
    before = take_snapshot(idx, PROBES)
    with pytest.raises(error, match=match) as e:
        call()
    assert type(e.value) is error, f"expected exactly {error.__name__}, got {type(e.value).__name__}: {e.value}"
    assert isinstance(e.value, trimem.TrimemError)
    assert len(str(e.value)) > 15  # a sentence, not a bare code
    after = take_snapshot(idx, PROBES)
    assert after == before
    return e.value


def test_hierarchy() -> None:
    argument_errors = [
        trimem.DimensionError,
        trimem.DTypeError,
        trimem.InvalidVectorError,
        trimem.InvalidTimeRangeError,
        trimem.InvalidNameError,
        trimem.TextTooLongError,
        trimem.DuplicateIdError,
    ]
    for cls in argument_errors:
        assert issubclass(cls, trimem.InvalidArgumentError) and issubclass(cls, ValueError)
        assert issubclass(cls, trimem.TrimemError)
    assert issubclass(trimem.InvalidArgumentError, ValueError)
    assert issubclass(trimem.UnknownIdError, LookupError) and issubclass(trimem.UnknownIdError, trimem.TrimemError)
    assert not issubclass(trimem.UnknownIdError, ValueError)
    assert trimem.errors.DimensionError is trimem.DimensionError


# ------------------------------------------------------------------------------ add: vectors


@pytest.mark.parametrize(
    ("over", "error", "match"),
    [
        ({"vectors": _vectors(2)[:, :7].copy()}, trimem.DimensionError, "expects 8 values per vector, got 7"),
        ({"vectors": np.zeros((2, 9), dtype=np.float32) + 1}, trimem.DimensionError, "expects 8 .* got 9"),
        ({"vectors": _vectors(2).astype(np.float64)}, trimem.DTypeError, "float32"),
        ({"vectors": _vectors(2).astype(np.float16)}, trimem.DTypeError, "float32"),
        ({"vectors": _vectors(2).tolist()}, trimem.DTypeError, "float32"),
        ({"vectors": _vectors(1)[0]}, trimem.DTypeError, "2-D"),
        ({"vectors": _vectors(2)[None]}, trimem.DTypeError, "2-D"),
        (
            {"vectors": np.array([[np.nan] + [1.0] * 7, [1.0] * 8], dtype=np.float32)},
            trimem.InvalidVectorError,
            "row 0.*NaN",
        ),
        (
            {"vectors": np.array([[1.0] * 8, [np.inf] + [1.0] * 7], dtype=np.float32)},
            trimem.InvalidVectorError,
            "row 1.*infinity",
        ),
        ({"vectors": np.array([[1.0] * 8, [-np.inf] * 8], dtype=np.float32)}, trimem.InvalidVectorError, "row 1"),
        ({"vectors": np.zeros((2, 8), dtype=np.float32)}, trimem.InvalidVectorError, "row 0.*zeros.*cosine"),
        ({"vectors": _vectors(3)}, trimem.InvalidArgumentError, "vectors has 3 rows but ids has 2"),
    ],
    ids=["dim7", "dim9", "float64", "float16", "list", "1-D", "3-D", "nan", "inf", "-inf", "zero-cosine", "rows"],
)
def test_bad_vectors(idx, take_snapshot, over, error, match) -> None:
    assert_rejected(idx, take_snapshot, lambda: idx.add(**good_batch(**over)), error, match)


def test_tiny_vector_norm_is_rejected_not_nan(idx, take_snapshot) -> None:
    """A vector whose norm underflows must not be stored as NaN."""
    tiny = np.full((1, DIM), 1e-30, dtype=np.float32)
    try:
        idx.add(**good_batch(n=1, vectors=tiny))
    except trimem.InvalidVectorError:
        return
    v = idx.get(1000).vector
    assert np.isfinite(v).all() and np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)


def test_zero_vector_allowed_under_ip() -> None:
    i = trimem.HybridIndex(dim=DIM, metric="ip")
    i.add(ids=[1], texts=["z"], timestamps=[0], namespaces=["n"], vectors=np.zeros((1, DIM), dtype=np.float32))
    h = i.search(vector=np.ones(DIM, dtype=np.float32), mode="vector")
    assert h.ids.tolist() == [1] and h.vector_scores[0] == 0.0


def test_non_contiguous_vectors_are_accepted(idx) -> None:
    big = _vectors(4, seed=5)
    strided = np.asfortranarray(big)[::2]
    idx.add(**good_batch(n=2, vectors=strided))
    unit = big[::2] / np.linalg.norm(big[::2], axis=1, keepdims=True)
    np.testing.assert_allclose(idx.get(1000).vector, unit[0], atol=1e-6)
    np.testing.assert_allclose(idx.get(1001).vector, unit[1], atol=1e-6)


# ------------------------------------------------------------------------------ add: lengths


@pytest.mark.parametrize(
    ("over", "what"),
    [
        ({"texts": ["only one"]}, "texts"),
        ({"timestamps": [1, 2, 3]}, "timestamps"),
        ({"namespaces": ["u"]}, "namespaces"),
        ({"sessions": ["s"]}, "sessions"),
        ({"payloads": [b"a", b"b", b"c"]}, "payloads"),
        ({"importance": [0.5]}, "importance"),
    ],
)
def test_length_mismatch(idx, take_snapshot, over, what) -> None:
    err = assert_rejected(idx, take_snapshot, lambda: idx.add(**good_batch(**over)), trimem.InvalidArgumentError, what)
    assert "length mismatch" in str(err)


# ------------------------------------------------------------------------------ add: ids


def test_duplicate_id_in_batch(idx, take_snapshot) -> None:
    err = assert_rejected(
        idx, take_snapshot, lambda: idx.add(**good_batch(n=3, ids=[1000, 1001, 1000])), trimem.DuplicateIdError, "1000"
    )
    assert "twice" in str(err) or "duplicate" in str(err).lower()


def test_duplicate_id_in_batch_with_upsert(idx, take_snapshot) -> None:
    assert_rejected(
        idx, take_snapshot, lambda: idx.add(**good_batch(n=2, ids=[3, 3]), upsert=True), trimem.DuplicateIdError, "3"
    )


def test_existing_id_without_upsert(idx, take_snapshot) -> None:
    # The new id in the same batch must not land either: all or nothing.
    err = assert_rejected(
        idx,
        take_snapshot,
        lambda: idx.add(**good_batch(n=2, ids=[5000, 7])),
        trimem.DuplicateIdError,
        r"id 7 already exists.*upsert=True",
    )
    assert 5000 not in idx
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    "ids",
    [
        [1.5, 2.0],
        ["a", "b"],
        "12",
        [-1, 2],
        [2**64, 1],
        np.array([1.0, 2.0]),
        np.array([[1, 2]], dtype=np.uint64),
        [None, 1],
    ],
    ids=["floats", "strings", "string", "negative", "too-big", "float-array", "2-D", "none"],
)
def test_non_integer_ids(idx, take_snapshot, ids) -> None:
    assert_rejected(idx, take_snapshot, lambda: idx.add(**good_batch(n=2, ids=ids)), trimem.DTypeError, "ids")


def test_integer_id_arrays_of_other_dtypes_are_accepted(idx) -> None:
    idx.add(**good_batch(n=2, ids=np.array([2000, 2001], dtype=np.int64)))
    idx.add(**good_batch(n=2, ids=np.array([2002, 2003], dtype=np.uint32)))
    idx.add(**good_batch(n=1, ids=[2**64 - 1]))
    assert all(i in idx for i in (2000, 2001, 2002, 2003, 2**64 - 1))
    assert idx.search(text="fresh", mode="bm25", k=10).ids.dtype == np.uint64


@pytest.mark.parametrize(
    ("over", "error", "match"),
    [
        ({"timestamps": [1.5, 2.5]}, trimem.DTypeError, "timestamps"),
        ({"timestamps": np.array([1.0, 2.0])}, trimem.DTypeError, "timestamps"),
        ({"timestamps": ["now", "later"]}, trimem.DTypeError, "timestamps"),
        ({"timestamps": [2**63, 0]}, trimem.DTypeError, "timestamps"),
        ({"texts": "a single string"}, trimem.InvalidArgumentError, "texts must be a list of strings"),
        ({"texts": ["ok", 3]}, trimem.InvalidArgumentError, "texts"),
        ({"texts": ["ok", None]}, trimem.InvalidArgumentError, "texts"),
        ({"namespaces": "u3"}, trimem.InvalidArgumentError, "namespaces"),
        ({"importance": [0.5, float("nan")]}, trimem.InvalidArgumentError, "importance"),
        ({"importance": [0.5, float("inf")]}, trimem.InvalidArgumentError, "importance"),
        ({"importance": ["high", "low"]}, trimem.InvalidArgumentError, "importance"),
    ],
    ids=[
        "ts-float",
        "ts-float-array",
        "ts-str",
        "ts-overflow",
        "texts-str",
        "texts-int",
        "texts-none",
        "ns-str",
        "imp-nan",
        "imp-inf",
        "imp-str",
    ],
)
def test_bad_columns(idx, take_snapshot, over, error, match) -> None:
    assert_rejected(idx, take_snapshot, lambda: idx.add(**good_batch(**over)), error, match)


# ------------------------------------------------------------------------------ add: names, text


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        ("x" * 513, "513 bytes"),
        ("é" * 257, "514 bytes"),
        ("a\nb", "control"),
        ("tab\there", "control"),
        ("nul\x00", "control"),
        ("del\x7f", "control"),
    ],
    ids=["empty", "long-ascii", "long-utf8", "newline", "tab", "nul", "del"],
)
def test_bad_namespace(idx, take_snapshot, name, reason) -> None:
    err = assert_rejected(
        idx, take_snapshot, lambda: idx.add(**good_batch(namespaces=["ok", name])), trimem.InvalidNameError, "namespace"
    )
    assert reason in str(err)


def test_bad_session(idx, take_snapshot) -> None:
    assert_rejected(
        idx, take_snapshot, lambda: idx.add(**good_batch(sessions=[None, ""])), trimem.InvalidNameError, "session"
    )
    assert_rejected(
        idx, take_snapshot, lambda: idx.add(**good_batch(sessions=["s\r", None])), trimem.InvalidNameError, "session"
    )


def test_names_at_the_limit_are_accepted(idx) -> None:
    idx.add(**good_batch(namespaces=["x" * 512, "名" * 170], sessions=["s" * 512, None]))
    assert idx.get(1000).namespace == "x" * 512
    assert idx.search(text="fresh", namespace="名" * 170).ids.tolist() == [1001]


def test_text_over_max_text_bytes(idx, take_snapshot) -> None:
    err = assert_rejected(
        idx,
        take_snapshot,
        lambda: idx.add(**good_batch(texts=["ok", "x" * 101])),
        trimem.TextTooLongError,
        r"row 1 has 101 bytes, over the limit of 100",
    )
    assert isinstance(err, ValueError)
    # The limit counts UTF-8 bytes, not characters: 51 x "é" is 102 bytes.
    assert_rejected(
        idx, take_snapshot, lambda: idx.add(**good_batch(texts=["é" * 51, "ok"])), trimem.TextTooLongError, "102 bytes"
    )
    # Exactly at the limit is fine.
    idx.add(**good_batch(texts=["y" * 100, "é" * 50]))
    assert idx.get(1000).text == "y" * 100


# ------------------------------------------------------------------------------ delete, importance


def test_unknown_id_on_delete(idx, take_snapshot) -> None:
    err = assert_rejected(idx, take_snapshot, lambda: idx.delete([3, 12345, 4]), trimem.UnknownIdError, "12345")
    assert isinstance(err, LookupError)
    assert 3 in idx and 4 in idx
    assert idx.delete([3, 12345, 4], missing_ok=True) == 2
    assert 3 not in idx and 4 not in idx
    assert idx.delete([3], missing_ok=True) == 0


def test_bad_ids_on_delete(idx, take_snapshot) -> None:
    assert_rejected(idx, take_snapshot, lambda: idx.delete(["3"]), trimem.DTypeError, "ids")
    assert_rejected(idx, take_snapshot, lambda: idx.delete([-3]), trimem.DTypeError, "ids")


def test_set_importance_errors(idx, take_snapshot) -> None:
    assert_rejected(idx, take_snapshot, lambda: idx.set_importance([1, 777], [0.1, 0.2]), trimem.UnknownIdError, "777")
    assert_rejected(
        idx, take_snapshot, lambda: idx.set_importance([1, 2], [0.1]), trimem.InvalidArgumentError, "values"
    )
    assert_rejected(
        idx,
        take_snapshot,
        lambda: idx.set_importance([1, 2], [0.1, float("nan")]),
        trimem.InvalidArgumentError,
        "finite",
    )


def test_bm25_score_unknown_id(idx) -> None:
    with pytest.raises(trimem.UnknownIdError, match="999"):
        idx.bm25_score("docker", 999)


# ------------------------------------------------------------------------------ search


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"text": "docker", "k": 0}, trimem.InvalidArgumentError, "k must be at least 1"),
        ({"text": "docker", "k": -3}, trimem.InvalidArgumentError, "k must be at least 1, got -3"),
        ({"text": "docker", "mode": "fuzzy"}, trimem.InvalidArgumentError, "unknown mode"),
        ({"vector": np.ones(7, dtype=np.float32)}, trimem.DimensionError, "expects 8 .* got 7"),
        ({"vector": np.ones(DIM)}, trimem.DTypeError, "float32"),
        ({"vector": [1.0] * DIM}, trimem.DTypeError, "float32"),
        ({"vector": np.ones((2, DIM), dtype=np.float32)}, trimem.DTypeError, "1-D"),
        ({"vector": np.full(DIM, np.nan, dtype=np.float32)}, trimem.InvalidVectorError, "NaN"),
        ({"vector": np.zeros(DIM, dtype=np.float32)}, trimem.InvalidVectorError, "zeros"),
        ({"text": "docker", "namespace": ""}, trimem.InvalidNameError, "namespace"),
        ({"text": "docker", "namespace": "a\x01"}, trimem.InvalidNameError, "control"),
        ({"text": "docker", "session": "x" * 600}, trimem.InvalidNameError, "session"),
        ({"text": "docker", "time_range": (10, 5)}, trimem.InvalidTimeRangeError, "start 10 is after end 5"),
    ],
    ids=[
        "k0",
        "k-neg",
        "mode",
        "qdim",
        "qfloat64",
        "qlist",
        "q2d",
        "qnan",
        "qzero",
        "ns-empty",
        "ns-ctrl",
        "session-long",
        "time",
    ],
)
def test_bad_search(idx, take_snapshot, kwargs, error, match) -> None:
    assert_rejected(idx, take_snapshot, lambda: idx.search(**kwargs), error, match)


def test_single_row_2d_query_vector_is_accepted(idx) -> None:
    a = idx.search(vector=QUERY_VEC, mode="vector")
    b = idx.search(vector=QUERY_VEC[None, :], mode="vector")
    assert a.ids.tolist() == b.ids.tolist()


# ------------------------------------------------------------------------------ constructor


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metric": "euclidean"}, "unknown metric"),
        ({"metric": "COSINE"}, "unknown metric"),
        ({"m": 1}, "m=1"),
        ({"m": 1000}, "m=1000"),
        ({"ef_construction": 0}, "ef_construction"),
        ({"k1": -1.0}, "k1"),
        ({"k1": float("nan")}, "k1"),
        ({"b": 1.5}, "b=1.5"),
        ({"max_text_bytes": 0}, "max_text_bytes"),
        ({"dim": 10**6}, "dim"),
    ],
)
def test_bad_constructor(kwargs, match) -> None:
    kwargs = {"dim": 4, **kwargs}
    with pytest.raises(trimem.InvalidArgumentError, match=match):
        trimem.HybridIndex(**kwargs)


def test_keyword_only_index_refuses_vectors() -> None:
    i = trimem.HybridIndex(dim=0)
    i.add(ids=[1], texts=["a"], timestamps=[0], namespaces=["n"])
    with pytest.raises(trimem.InvalidArgumentError, match="dim=0"):
        i.add(ids=[2], texts=["b"], timestamps=[0], namespaces=["n"], vectors=np.ones((1, 0), dtype=np.float32))
    assert len(i) == 1
