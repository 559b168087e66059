"""The backend contract (see :mod:`trimem._backend`), run against every backend: today the
embedded one, in process and on a folder. A new backend (PostgreSQL, say) joins the
``backend`` fixture's parameters and must pass the same tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from trimem._backend import Backend, Floors, Query
from trimem._backend.embedded import EmbeddedBackend
from trimem._backend.ops import OpAlias, OpCursor, OpFact, OpForget, OpKnowledge, OpPin, OpRetain, OpWorking
from trimem.config import Policy
from trimem.errors import StoreClosedError, StoreIOError
from trimem.records import Episode, KnowledgeDoc, Turn

DIM = 4
FLOORS = Floors(bm25_share=0.0, cosine=-1.0, cosine_alone=-1.0)
POLICY = Policy()


def _vec(i: int) -> np.ndarray:
    v = np.zeros(DIM, np.float32)
    v[i % DIM] = 1.0
    v[(i + 1) % DIM] = 0.1
    return v


def _episodes(first: int, texts: list[str], user: str = "u", t0: int = 1_000) -> tuple[list[Episode], bytes]:
    eps = [Episode(id=first + i, agent_id="a", user_id=user, text=t, timestamp=t0 + i) for i, t in enumerate(texts)]
    return eps, np.stack([_vec(e.id) for e in eps]).tobytes()


def _retain(
    b: Backend, texts: list[str], user: str = "u", dedup: tuple[float, float] | None = None, vectors: bool = True
) -> list[int]:
    first = b.reserve_ids(len(texts))
    eps, vecs = _episodes(first, texts, user)
    dups = b.write([OpRetain(episodes=eps, vectors=vecs if vectors else None, dedup=dedup)])
    return [dups.get(e.id, e.id) for e in eps]


def _query(text: str, namespace: str, k: int = 10, **kw: object) -> Query:
    return Query(text=text, vector=None, namespace=namespace, k=k, floors=FLOORS, now=10_000, **kw)  # type: ignore[arg-type]


@pytest.fixture(params=["in-process", "folder", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    b: Backend
    if request.param == "postgresql":
        from trimem._backend.postgres.backend import PostgresBackend

        dsn, schema = request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_schema")
        b = PostgresBackend(dsn, dim=DIM, embedder_name="test-4", schema=schema)
    else:
        path = None if request.param == "in-process" else tmp_path / "store"
        b = EmbeddedBackend(path, dim=DIM, embedder_name="test-4")
    yield b
    b.close()


def test_ids_grow_and_a_released_reservation_is_reused(backend: Backend) -> None:
    first = backend.reserve_ids(3)
    assert backend.reserve_ids(1) == first + 3
    backend.release_ids(first + 3, 1)
    assert backend.reserve_ids(2) == first + 3


def test_a_write_is_visible_to_every_read_at_once(backend: Backend) -> None:
    ids = _retain(backend, ["deploy the node service on 8080", "nginx proxy listens on 443"])
    assert [e.text for e in backend.episodes(ids) if e is not None] == [
        "deploy the node service on 8080",
        "nginx proxy listens on 443",
    ]
    assert backend.episode_ids("a/u") == ids
    hits = backend.search_episodes(_query("8080", "a/u"), POLICY)
    assert [h.episode.id for h in hits] == [ids[0]]
    assert backend.newest_episode("a", "u") == ids[1] and backend.users() == [("a", "u")]
    assert backend.columns("episodes", "a/u")["ids"].tolist() == ids


def test_no_read_crosses_a_namespace(backend: Backend) -> None:
    mine = _retain(backend, ["my database is postgres"], user="u")
    _retain(backend, ["their database is mysql"], user="v")
    assert [h.episode.id for h in backend.search_episodes(_query("database", "a/u"), POLICY)] == mine
    assert backend.episode_ids("a/u") == mine
    assert backend.search_episodes(_query("postgres", "a/v"), POLICY) == []


def test_time_range_and_session_filter_inside_the_search(backend: Backend) -> None:
    first = backend.reserve_ids(3)
    eps = [
        Episode(id=first, agent_id="a", user_id="u", text="port 8080 old", timestamp=100, session_id="s1"),
        Episode(id=first + 1, agent_id="a", user_id="u", text="port 8080 new", timestamp=200, session_id="s2"),
        Episode(id=first + 2, agent_id="a", user_id="u", text="port 8080 newer", timestamp=300, session_id="s2"),
    ]
    backend.write([OpRetain(episodes=eps)])
    in_range = backend.search_episodes(_query("8080", "a/u", time_range=(150, 250)), POLICY)
    assert [h.episode.id for h in in_range] == [first + 1]
    in_session = backend.search_episodes(_query("8080", "a/u", session="s2"), POLICY)
    assert sorted(h.episode.id for h in in_session) == [first + 1, first + 2]


def test_session_neighbours_are_the_turns_said_around_each(backend: Backend) -> None:
    """Against a brute force over what was written: interleaved sessions, a turn without a
    session, another user's turns between them, a forgotten turn, an unknown id."""
    rng = np.random.default_rng(3)
    first = backend.reserve_ids(60)
    eps = []
    for i in range(60):
        session = [None, "s1", "s2", "s3"][int(rng.integers(0, 4))]
        user = "v" if i % 7 == 3 else "u"
        eps.append(Episode(id=first + i, agent_id="a", user_id=user, text=f"turn {i}", timestamp=1_000 + i,
                           session_id=session))  # fmt: skip
    backend.write([OpRetain(episodes=eps)])
    gone = eps[20]
    backend.write([OpForget(episode_ids=[gone.id])])
    alive = [e for e in eps if e.id != gone.id]

    def oracle(e: Episode) -> tuple[int | None, int | None]:
        if e.session_id is None:
            return None, None
        same = [o.id for o in alive if (o.user_id, o.session_id) == (e.user_id, e.session_id)]
        before, after = [i for i in same if i < e.id], [i for i in same if i > e.id]
        return (before[-1] if before else None), (after[0] if after else None)

    mine = [e for e in alive if e.user_id == "u"]
    got = backend.session_neighbours("a/u", [e.id for e in mine] + [first + 10_000])
    assert got == [oracle(e) for e in mine] + [(None, None)]
    assert any(p is not None and n is not None for p, n in got)  # the case is not trivially empty
    assert backend.session_neighbours("a/u", []) == []


def test_a_near_duplicate_maps_to_the_stored_episode(backend: Backend) -> None:
    (kept,) = _retain(backend, ["We moved billing to Fly.io after the outage"], dedup=(0.8, 0.9), vectors=False)
    (again,) = _retain(backend, ["we moved billing to fly.io after the outage!"], dedup=(0.8, 0.9), vectors=False)
    assert again == kept and backend.episode_ids("a/u") == [kept]
    assert int(backend.columns("episodes", "a/u")["mentions"][0]) == 1


def test_a_failed_write_changes_nothing(tmp_path: Path) -> None:
    b = EmbeddedBackend(tmp_path / "store", dim=DIM, embedder_name="test-4")
    store = b._journal.store  # type: ignore[union-attr]
    if not hasattr(store, "inject_fault"):
        pytest.skip("built without the fault-injection feature")
    kept = _retain(b, ["kept episode about redis"])
    store.inject_fault("disk_full")
    first = b.reserve_ids(1)
    eps, vecs = _episodes(first, ["lost episode about kafka"])
    with pytest.raises(StoreIOError):
        b.write([OpRetain(episodes=eps, vectors=vecs), OpFact("a", "u", "db", "kafka", 5)])
    b.release_ids(first, 1)
    store.clear_faults()
    assert b.episode_ids("a/u") == kept and b.fact("a", "u", "db") is None
    assert b.search_episodes(_query("kafka", "a/u"), POLICY) == []
    b.close()
    reopened = EmbeddedBackend(tmp_path / "store", dim=DIM, embedder_name="test-4")
    assert reopened.episode_ids("a/u") == kept and reopened.fact("a", "u", "db") is None
    reopened.close()


def test_facts_keep_their_history_pins_and_aliases(backend: Backend) -> None:
    backend.write([OpFact("a", "u", "primary_language", "TypeScript", 10, [1])])
    backend.write([OpFact("a", "u", "primary_language", "Rust", 20, [2]), OpPin("a", "u", "primary_language", True)])
    backend.write([OpAlias(words=["主力语言"], keys=["primary_language"])])
    fact = backend.fact("a", "u", "primary_language")
    assert fact is not None and (fact.value, fact.version, fact.pinned, fact.source) == ("Rust", 2, True, [2])
    assert [v.value for v in backend.fact_history("a", "u", "primary_language")] == ["TypeScript", "Rust"]
    assert backend.aliases()["主力语言"] == ["primary_language"]
    assert backend.facts("a", "u") == [("a", "u", fact)] and backend.fact("a", "v", "primary_language") is None
    backend.write([OpFact("a", "u", "primary_language", None, 30)])
    assert backend.fact("a", "u", "primary_language") is None
    assert [v.op for v in backend.fact_history("a", "u", "primary_language")] == ["set", "update", "delete"]


def test_knowledge_versions_by_source_and_forgetting_a_user(backend: Backend) -> None:
    first = backend.reserve_ids(1)
    doc = KnowledgeDoc(id=first, agent_id="a", text="taxi up to 100 a day", timestamp=5, source="policy.md")
    backend.write([OpKnowledge(docs=[doc], vectors=_vec(first)[None, :].tobytes())])
    assert backend.document_by_source("a", None, "policy.md") == first
    hits = backend.search_knowledge(_query("taxi", "a"), POLICY)
    assert [h.doc.id for h in hits] == [first] and backend.document(first) == doc
    newer = KnowledgeDoc(id=first + 1, agent_id="a", text="taxi up to 120 a day", timestamp=6, source="policy.md")
    backend.reserve_ids(1)
    backend.write([OpKnowledge(docs=[newer], replaces=[first])])
    assert backend.document(first) is None and backend.document_by_source("a", None, "policy.md") == first + 1
    ids = _retain(backend, ["user u said something"])
    backend.write([OpFact("a", "u", "city", "Lisbon", 7, ids), OpCursor("a", "u", ids[0])])
    backend.write([OpForget(episode_ids=ids, users=[("a", "u")])])
    assert backend.episode_ids("a/u") == [] and backend.fact("a", "u", "city") is None
    assert backend.cursor("a", "u") == 0 and backend.newest_episode("a", "u") == 0
    assert backend.document(first + 1) is not None  # shared knowledge is not the user's


def test_use_counts_and_saved_sessions(backend: Backend) -> None:
    ids = _retain(backend, ["one", "two"])
    backend.touch([ids[0], ids[0]], [], at=50, mentions=[ids[1]])
    cols = backend.columns("episodes", "a/u")
    assert cols["accesses"].tolist() == [2, 0] and cols["mentions"].tolist() == [0, 1]
    assert [s.accesses for s in backend.stored("episodes", ids)] == [2, 0]
    turn = Turn(role="user", text="hello", timestamp=1)
    backend.write([OpWorking(session_id="s", turns=[turn], vars={"retry": 1})])
    assert backend.saved_sessions()["s"].vars == {"retry": 1}
    backend.write([OpWorking(session_id="s", turns=None)])
    assert backend.saved_sessions() == {}


def test_a_search_counts_uses_not_yet_written(backend: Backend) -> None:
    """Uses recorded by touch and not yet flushed raise a hit's effective importance in the very
    next search (as the engine counts a use at once), on every backend."""
    ids = _retain(backend, ["the kafka broker restarted", "the kafka broker restarted again"])
    before = {h.episode.id: h.scored for h in backend.search_episodes(_query("kafka broker", "a/u"), POLICY)}
    backend.touch([ids[1]] * 3, [], at=9_000, mentions=[ids[1]])
    after = {h.episode.id: h.scored for h in backend.search_episodes(_query("kafka broker", "a/u"), POLICY)}
    assert (after[ids[1]].accesses, after[ids[1]].mentions) == (3, 1)
    assert (after[ids[0]].accesses, after[ids[0]].mentions) == (0, 0)
    assert after[ids[1]].importance > before[ids[1]].importance
    assert after[ids[0]].importance == pytest.approx(before[ids[0]].importance)


def test_everything_survives_a_reopen(tmp_path: Path) -> None:
    b = EmbeddedBackend(tmp_path / "store", dim=DIM, embedder_name="test-4")
    ids = _retain(b, ["the release train leaves on thursdays"])
    b.write([OpFact("a", "u", "editor", "vim", 3, ids), OpCursor("a", "u", ids[0])])
    b.touch(ids, [], at=99)
    b.close()
    for checkpoint in (False, True):
        r = EmbeddedBackend(tmp_path / "store", dim=DIM, embedder_name="test-4")
        assert r.episode_ids("a/u") == ids and r.cursor("a", "u") == ids[0]
        assert r.fact("a", "u", "editor") is not None and r.columns("episodes", "a/u")["accesses"].tolist() == [1]
        assert r.reserve_ids(1) > ids[0]
        if checkpoint:
            r.checkpoint()
        r.close()


def test_a_closed_backend_refuses_writes(tmp_path: Path) -> None:
    b = EmbeddedBackend(tmp_path / "store", dim=DIM, embedder_name="test-4")
    b.close()
    with pytest.raises(StoreClosedError):
        b.write([OpFact("a", "u", "k", "v", 1)])
