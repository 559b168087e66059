"""pytest-benchmark benchmarks of the hot functions: `HybridIndex.search` per mode (and with a
time window), `HybridIndex.add`, `trimem.tokenize`, `Memory.facts.get`, `Memory.recall`,
`RecallBundle.render` and `Memory.retain`.

In the test suite (and so in CI) each runs once as a smoke test: `--benchmark-disable` is in the
pytest options. Time them for real, save a baseline and compare a later build with it:

    python -m pytest benches/bench_hot.py --benchmark-enable --benchmark-autosave    # save
    python -m pytest benches/bench_hot.py --benchmark-enable --benchmark-compare     # vs latest
    python -m pytest benches/bench_hot.py --benchmark-enable --benchmark-compare=0001 \
        --benchmark-compare-fail=median:25%                                         # fail if slower

Baselines go to `.benchmarks/` (git-ignored; `--benchmark-storage=PATH` moves them) and hold
absolute times, so compare only runs from the same machine, ideally back to back. The CI
regression check is the ratio gate instead (`python -m trimem bench --gate`, see
trimem.bench.gate), which times trimem against peers in one process and needs no baseline.

Sizes are small enough for CI; `python -m trimem bench` does the 100k comparison with peers.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import trimem
from trimem import Memory
from trimem.bench.datasets import make_dataset, time_window

N = 20_000
DIM = 128
NOW = datetime(2026, 11, 25, tzinfo=UTC)


@pytest.fixture(scope="module")
def data():  # type: ignore[no-untyped-def]
    return make_dataset(N, DIM, seed=1, n_queries=50, data_dir=None)


@pytest.fixture(scope="module")
def index(data):  # type: ignore[no-untyped-def]
    idx = trimem.HybridIndex(DIM)
    idx.add(data.ids, data.texts, data.timestamps, data.namespaces, data.vectors)
    return idx


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector"])
def test_search(benchmark, index, data, mode: str) -> None:  # type: ignore[no-untyped-def]
    q, t = data.query_vectors[0], data.query_texts[0]
    hits = benchmark(index.search, text=t, vector=q, mode=mode, k=10)
    assert len(hits) == 10


def test_search_time_window(benchmark, index, data) -> None:  # type: ignore[no-untyped-def]
    lo, hi = time_window(data.timestamps, 0.1, seed=2)
    hits = benchmark(index.search, text=data.query_texts[1], vector=data.query_vectors[1], k=10, time_range=(lo, hi))
    assert len(hits) == 10 and ((hits.timestamps >= lo) & (hits.timestamps < hi)).all()


def test_add_batch(benchmark, data) -> None:  # type: ignore[no-untyped-def]
    def build() -> trimem.HybridIndex:
        idx = trimem.HybridIndex(DIM)
        idx.add(data.ids[:2000], data.texts[:2000], data.timestamps[:2000], data.namespaces[:2000], data.vectors[:2000])
        return idx

    assert len(benchmark.pedantic(build, rounds=3, iterations=1)) == 2000


def test_tokenize(benchmark, data) -> None:  # type: ignore[no-untyped-def]
    text = " ".join(data.texts[:20])
    assert len(benchmark(trimem.tokenize, text)) > 50


@pytest.fixture(scope="module")
def memory(data):  # type: ignore[no-untyped-def]
    mem = Memory(embedder="hashing")
    mem.retain_many(
        [
            dict(text=t, user_id=f"u{i % 10}", timestamp=int(ts))
            for i, (t, ts) in enumerate(zip(data.texts[:5000], data.timestamps[:5000]))
        ]
    )
    mem.facts.set("database", "PostgreSQL", user_id="u1")
    return mem


def test_fact_get(benchmark, memory) -> None:  # type: ignore[no-untyped-def]
    fact = benchmark(memory.facts.get, "database", user_id="u1")
    assert fact is not None and fact.value == "PostgreSQL"


def test_recall(benchmark, memory, data) -> None:  # type: ignore[no-untyped-def]
    bundle = benchmark(memory.recall, data.query_texts[2] + " last month", user_id="u1", now=NOW)
    assert bundle.intent.time_range is not None


def test_render(benchmark, memory, data) -> None:  # type: ignore[no-untyped-def]
    from trimem.tokens import default_counter

    bundle = memory.recall(data.query_texts[3], user_id="u1", now=NOW, k=10)
    text = benchmark(bundle.render, max_tokens=300)
    assert default_counter()(text) <= 300


def test_retain(benchmark, memory) -> None:  # type: ignore[no-untyped-def]
    before = memory.stats().episodes
    benchmark.pedantic(
        memory.retain, args=("deployed build 42 to staging",), kwargs={"user_id": "u2"}, rounds=5, iterations=1
    )
    assert memory.stats().episodes > before  # one call when benchmarks are disabled, five when timed
