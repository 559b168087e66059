"""Tests for benches.datasets: determinism, shapes, calibration, caching."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import trimem.bench.datasets as ds
from trimem.bench.datasets import (
    START_2026_US,
    ClusteredSpace,
    clustered_vectors,
    make_dataset,
    mean_nn_cosine,
    namespaces,
    query_texts,
    query_vectors,
    real_sentences,
    texts,
    time_window,
    timestamps,
)


@pytest.fixture(scope="module", autouse=True)
def small_corpus(tmp_path_factory: pytest.TempPathFactory):
    """Shrink the docstring budget and isolate the cache so tests stay fast.

    The budgets are part of the cache key, so nothing here can leak into the
    real (full-size) cache or in-process memo.
    """
    mp = pytest.MonkeyPatch()
    mp.setenv("TRIMEM_BENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
    mp.setattr(ds, "_MAX_TOTAL_BYTES", 900_000)
    mp.setattr(ds, "_MAX_STDLIB_BYTES", 600_000)
    yield
    mp.undo()


# ----------------------------------------------------------------- vectors


def test_vectors_shape_dtype_norm_determinism() -> None:
    a = clustered_vectors(3000, 64, n_centers=30, seed=7)
    b = clustered_vectors(3000, 64, n_centers=30, seed=7)
    c = clustered_vectors(3000, 64, n_centers=30, seed=8)
    assert a.shape == (3000, 64) and a.dtype == np.float32 and a.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_vectors_prefix_stable_across_chunks() -> None:
    n = ds._CHUNK + 500  # spans two generation chunks
    big = clustered_vectors(n, 16, n_centers=10, seed=1)
    assert np.array_equal(clustered_vectors(1000, 16, n_centers=10, seed=1), big[:1000])


def test_queries_share_centres_but_not_points() -> None:
    data = clustered_vectors(4000, 128, n_centers=20, seed=3)
    q = query_vectors(50, 128, n_centers=20, seed=3)
    q_other = query_vectors(50, 128, n_centers=20, seed=4)
    assert q.shape == (50, 128) and q.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-5)
    nn_same = (q @ data.T).max(axis=1)
    assert nn_same.max() < 0.9999  # queries are fresh points, not copies
    assert nn_same.mean() > 0.6  # ...but they land in the data's clusters
    assert (q_other @ data.T).max(axis=1).mean() < 0.4  # other seed: other centres
    assert np.array_equal(q, ClusteredSpace(128, 20, 3).sample(50, seed=1))


def test_nn_cosine_calibration() -> None:
    # 100 points per centre, as at n=100k with 1000 centres: the NN statistics
    # depend on points-per-centre, so this checks the calibration cheaply.
    x = clustered_vectors(10_000, 384, n_centers=100, seed=0)
    assert 0.70 < mean_nn_cosine(x, 200) < 0.80


def test_default_noise_formula() -> None:
    s = ds.default_noise(384)
    assert 0.55 < s < 0.75
    assert ds.default_noise(384, target_nn_cosine=0.85) < s


# ------------------------------------------------------------ timestamps


def test_timestamps() -> None:
    t = timestamps(20_000, seed=5)
    assert t.dtype == np.int64 and t.shape == (20_000,)
    end = START_2026_US + 365 * 86_400 * 10**6
    assert t.min() >= START_2026_US and t.max() < end
    assert t.max() - t.min() > 0.99 * (end - START_2026_US)  # covers the span
    assert not np.all(np.diff(t) >= 0)  # random order, not sorted
    assert np.array_equal(t, timestamps(20_000, seed=5))
    t2 = timestamps(100, seed=0, start_us=0, span_days=1)
    assert t2.min() >= 0 and t2.max() < 86_400 * 10**6


@pytest.mark.parametrize("fraction", [0.01, 0.1, 0.25, 0.5, 0.9])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_time_window_fraction(fraction: float, seed: int) -> None:
    t = timestamps(50_000, seed=seed)
    lo, hi = time_window(t, fraction, seed=seed)
    assert isinstance(lo, int) and isinstance(hi, int) and lo <= hi
    kept = np.count_nonzero((t >= lo) & (t < hi)) / len(t)
    assert abs(kept - fraction) <= 0.02
    assert time_window(t, fraction, seed=seed) == (lo, hi)


def test_time_window_edges() -> None:
    t = timestamps(1000, seed=0)
    lo, hi = time_window(t, 1.0, seed=0)
    assert np.count_nonzero((t >= lo) & (t < hi)) == 1000
    lo, hi = time_window(t, 0.0, seed=0)
    assert np.count_nonzero((t >= lo) & (t < hi)) == 0


# ------------------------------------------------------------ namespaces


def test_namespaces() -> None:
    ns = namespaces(20_000, n_namespaces=300, seed=2)
    assert len(ns) == 20_000
    assert all(re.fullmatch(r"agent\d+/user\d+", x) for x in set(ns))
    counts = sorted((ns.count(x) for x in set(ns)), reverse=True)
    assert len(counts) <= 300
    assert counts[0] > 5 * 20_000 / 300  # skewed, not uniform
    assert ns == namespaces(20_000, n_namespaces=300, seed=2)
    assert ns != namespaces(20_000, n_namespaces=300, seed=3)


# -------------------------------------------------------------- sentences

_FAKE_CODE = ["Return the sum of two integer values.", "Open the file for reading only."]


def _stub_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    # Cache/scifact plumbing tests don't need the (slow) docstring scan.
    monkeypatch.setattr(ds, "_MEMO", {})
    monkeypatch.setattr(ds, "_code_sentences", lambda: iter(_FAKE_CODE))


def test_real_sentences_basic() -> None:
    s = real_sentences(None)
    assert len(s) > 200
    assert len(set(s)) == len(s)
    assert all(4 <= len(x.split()) <= 40 for x in s)
    assert s == real_sentences(None)


def test_real_sentences_cache_roundtrip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIMEM_BENCH_CACHE", str(tmp_path))
    _stub_extraction(monkeypatch)
    first = real_sentences(None)
    assert first == _FAKE_CODE
    files = list(tmp_path.glob("sentences-v1-*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text(encoding="utf-8"))["sentences"] == first
    monkeypatch.setattr(ds, "_MEMO", {})
    monkeypatch.setattr(ds, "_code_sentences", lambda: iter(()))  # must not re-extract
    assert real_sentences(None) == first


def test_real_sentences_unwritable_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("TRIMEM_BENCH_CACHE", str(blocker / "cache"))  # mkdir fails
    _stub_extraction(monkeypatch)
    assert real_sentences(None) == _FAKE_CODE


def test_real_sentences_scifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIMEM_BENCH_CACHE", str(tmp_path / "cache"))
    _stub_extraction(monkeypatch)
    corpus = tmp_path / "scifact" / "corpus.jsonl"
    corpus.parent.mkdir()
    rows = [
        {"_id": "1", "title": "Zebrafish fins regenerate after amputation.", "text": "We study "
         "regeneration in adult zebrafish. Blastema cells proliferate within two days."},
        {"_id": "2", "title": "Short.", "text": ""},
    ]  # fmt: skip
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    s = real_sentences(tmp_path)
    assert s[:2] == _FAKE_CODE  # code docstrings first, then SciFact
    assert "Zebrafish fins regenerate after amputation." in s
    assert "Blastema cells proliferate within two days." in s
    assert "Short." not in s  # under 4 words
    assert real_sentences(tmp_path / "missing") == _FAKE_CODE  # skipped silently


# ------------------------------------------------------------------ texts


def test_texts_real_then_synthetic() -> None:
    real = real_sentences(None)
    n = len(real) + 700
    t = texts(n, seed=1, data_dir=None)
    assert len(t) == n
    assert sorted(t[: len(real)]) == sorted(real)  # all real ones first, shuffled
    assert t[: len(real)] != real
    synth = t[len(real) :]
    assert all(5 <= len(x.split()) <= 25 and x.endswith(".") for x in synth)
    vocab = {w.lower() for s in real for w in ds._WORD.findall(s)}
    assert {w.strip(".").lower() for x in synth for w in x.split()} <= vocab
    assert t == texts(n, seed=1, data_dir=None)
    assert texts(len(real) + 10, seed=1, data_dir=None) == t[: len(real) + 10]  # prefix
    assert texts(n, seed=2, data_dir=None) != t
    assert texts(5, seed=1, data_dir=None) == t[:5]


def test_query_texts() -> None:
    q = query_texts(100, seed=3, data_dir=None)
    assert len(q) == 100
    assert all(2 <= len(x.split()) <= 6 for x in q)
    assert not any(w in ds._STOP_WORDS for x in q for w in x.split())
    assert q == query_texts(100, seed=3, data_dir=None)
    assert q != query_texts(100, seed=4, data_dir=None)


# ---------------------------------------------------------------- dataset


def test_make_dataset() -> None:
    d = make_dataset(2000, 32, seed=4, n_queries=20, data_dir=None)
    assert len(d) == 2000 and d.dim == 32
    assert d.ids.dtype == np.uint64 and np.array_equal(d.ids, np.arange(2000, dtype=np.uint64))
    assert len(d.texts) == len(d.namespaces) == 2000
    assert d.vectors.shape == (2000, 32) and d.vectors.dtype == np.float32
    assert d.timestamps.shape == (2000,) and d.timestamps.dtype == np.int64
    assert len(d.query_texts) == 20 and d.query_vectors.shape == (20, 32)
    e = make_dataset(2000, 32, seed=4, n_queries=20, data_dir=None)
    assert np.array_equal(d.vectors, e.vectors) and d.texts == e.texts
    assert np.array_equal(d.query_vectors, e.query_vectors)
