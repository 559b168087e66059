"""The Memory API: layers, scopes, validation, persistence, tools."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import trimem
from trimem import Memory
from trimem.errors import EmbedderMismatchError, StoreCorruptedError, StoreLockedError

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


def test_retain_get_and_timestamps() -> None:
    mem = Memory(embedder="hashing")
    naive = mem.retain("ran the tests", user_id="u1", timestamp=datetime(2026, 1, 1))
    aware = mem.retain(
        "ran them again", user_id="u1", timestamp=datetime(2026, 1, 1, 8, tzinfo=timezone(timedelta(hours=8)))
    )
    assert naive.timestamp == aware.timestamp == 1_767_225_600_000_000
    ep = mem.retain(
        "called a tool",
        user_id="u1",
        session_id="s1",
        role="assistant",
        topic="devops",
        importance=0.9,
        metadata={"k": 1},
        tool={"name": "docker", "args": {"cmd": "ps"}, "result": "ok"},
    )
    assert mem.get(ep.id) == ep
    assert ep.tool is not None and ep.tool.name == "docker"
    with pytest.raises(trimem.UnknownIdError):
        mem.get(10_000)
    # The tool call is searchable.
    assert mem.search("docker ps", user_id="u1")[0].episode.id == ep.id


@pytest.mark.parametrize(
    "kwargs,err",
    [
        (dict(text=""), trimem.InvalidArgumentError),
        (dict(text="x" * 200_001), trimem.InvalidArgumentError),
        (dict(text="ok", user_id=""), trimem.InvalidNameError),
        (dict(text="ok", user_id="a/b"), trimem.InvalidNameError),
        (dict(text="ok", agent_id="x\n"), trimem.InvalidNameError),
        (dict(text="ok", importance=1.5), trimem.InvalidArgumentError),
        (dict(text="ok", timestamp="yesterday"), trimem.InvalidArgumentError),
        (dict(text="ok", tool={"args": {}}), trimem.InvalidArgumentError),
    ],
)
def test_bad_input_changes_nothing(kwargs: dict, err: type) -> None:
    mem = Memory(embedder="hashing")
    mem.retain("keep me", user_id="u1")
    before = mem.stats()["episodes"]
    args = {"user_id": "u1", **kwargs}
    with pytest.raises(err):
        mem.retain(**args)
    assert mem.stats()["episodes"] == before
    # A bad item fails the whole batch.
    with pytest.raises(err):
        mem.retain_many([{"text": "fine", "user_id": "u1"}, args])
    assert mem.stats()["episodes"] == before


def test_scopes_never_cross() -> None:
    mem = Memory(embedder="hashing")
    mem.retain("secret project alpha uses port 9999", user_id="u1")
    mem.retain("secret project alpha uses port 9999", user_id="u1", agent_id="other")
    mem.facts.set("editor", "vim", user_id="u1")
    assert mem.search("project alpha port", user_id="u2") == []
    assert [r.episode.agent_id for r in mem.search("project alpha port", user_id="u1")] == ["default"]
    assert mem.facts.get("editor", user_id="u2") is None
    b = mem.recall("project alpha", user_id="u2", now=NOW)
    assert b.episodes == [] and b.profile == []


def test_knowledge_private_and_versions() -> None:
    mem = Memory(embedder="hashing")
    v1 = mem.knowledge.add(
        "Expense limit for hotels is 500 per night", source="hotel.md", timestamp=NOW - timedelta(days=60)
    )
    v2 = mem.knowledge.add("Expense limit for hotels is 650 per night", source="hotel.md", timestamp=NOW)
    assert v2.version == 2
    mem.knowledge.add("My private note: hotel loyalty number 12345", user_id="u1")
    hits = mem.knowledge.search("hotel expense limit", user_id="u2")
    assert [h.doc.id for h in hits] == [v2.id]  # newest version wins, the private note stays private
    assert v1.id not in [h.doc.id for h in mem.knowledge.search("hotel expense limit 500")]
    assert any("loyalty" in h.doc.text for h in mem.knowledge.search("hotel loyalty number", user_id="u1"))


def test_working_memory_capacity_ttl_and_reset() -> None:
    mem = Memory(embedder=None, working_capacity=3, working_ttl=10.0)
    wm = mem.working("s1")
    assert mem.working("s1") is wm
    for i in range(5):
        wm.add_turn("user", f"t{i}")
    assert [t.text for t in wm.recent()] == ["t2", "t3", "t4"]
    assert [t.text for t in wm.evicted] == ["t0", "t1"]
    wm.set("retry", 1)
    b = mem.recall("anything", user_id="u1", session_id="s1", now=NOW)
    assert [t.text for t in b.working][-1] == "t4" and b.working_vars == {"retry": 1}
    old = wm.add_turn("user", "stale", timestamp=time.time_ns() // 1000 - 60_000_000)
    assert old not in wm.recent()
    mem.end_session("s1")
    assert len(mem.working("s1")) == 0 and mem.working("s1").vars == {}


def test_render_sections_and_budget() -> None:
    mem = Memory(embedder="hashing")
    mem.facts.set("database", "PostgreSQL", user_id="u1")
    mem.facts.pin("database", user_id="u1")
    for i in range(30):
        mem.retain(f"deployment number {i} of the billing service went fine " * 3, user_id="u1")
    mem.knowledge.add("Billing service runbook: restart with make restart")
    b = mem.recall("billing service deployment", user_id="u1", k=10, now=NOW)
    full = b.render(max_tokens=10_000)
    assert full.index("## Profile facts") < full.index("## Recalled events") < full.index("## Knowledge")
    from trimem.tokens import default_counter

    count = default_counter()
    for budget in (20, 60, 150, 400):
        text = b.render(max_tokens=budget)
        assert count(text) <= budget
    # Under a tight budget the profile (filled before events) is what survives; the estimate is
    # the counter every install has.
    from trimem.tokens import estimate_tokens

    tight = b.render(max_tokens=40, counter=estimate_tokens)
    assert "database: PostgreSQL" in tight and "Recalled events" not in tight
    assert estimate_tokens(tight) <= 40


def test_tools_validate_and_dispatch() -> None:
    mem = Memory(embedder="hashing")
    ep = mem.retain("rotated the API keys on Friday", user_id="u1")
    names = [t["function"]["name"] for t in mem.tools()]
    assert names == ["search_memory", "get_fact", "set_fact", "forget", "memory_stats"]
    assert mem.execute("search_memory", query="API keys", user_id="u1")["episodes"][0]["id"] == ep.id
    with pytest.raises(trimem.InvalidArgumentError):
        mem.execute("search_memory", query="x")  # user_id required
    with pytest.raises(trimem.InvalidArgumentError):
        mem.execute("search_memory", query="x", user_id="u1", k="5")
    with pytest.raises(trimem.InvalidArgumentError):
        mem.execute("drop_tables", user_id="u1")
    with pytest.raises(trimem.InvalidArgumentError):
        mem.execute("forget", episode_ids=[ep.id], user_id="u2")  # not theirs
    assert mem.execute("forget", episode_ids=[ep.id], user_id="u1") == {"forgotten": 1}
    assert mem.execute("memory_stats")["episodes"] == 0


def test_store_reopens_with_everything(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Memory(path, embedder="hashing") as mem:
        ep = mem.retain("my main language is TypeScript", user_id="u1", timestamp=NOW - timedelta(days=3))
        mem.reflect(user_id="u1")
        mem.facts.alias("primary_language", ["编程语言"])
        mem.knowledge.add("Policy: code review within 24h", source="review.md")
        gone = mem.retain("delete me", user_id="u1")
        mem.forget([gone.id], user_id="u1")
    with Memory(path, embedder="hashing") as mem:
        assert mem.get(ep.id) == ep
        with pytest.raises(trimem.UnknownIdError):
            mem.get(gone.id)
        assert mem.facts.get("primary_language", user_id="u1").value == "TypeScript"  # type: ignore[union-attr]
        assert mem.facts.aliases()["编程语言"] == ["primary_language"]
        assert mem.reflect(user_id="u1") == []  # the cursor survived
        assert mem.knowledge.search("code review policy")[0].doc.source == "review.md"
        new = mem.retain("another one", user_id="u1")
        assert new.id > gone.id  # ids are never reused


def test_store_refuses_other_embedder_and_second_writer(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    mem = Memory(path, embedder="hashing")
    with pytest.raises(StoreLockedError):
        Memory(path, embedder="hashing")
    mem.close()
    with pytest.raises(EmbedderMismatchError, match="embedder="):
        Memory(path, embedder=None)


def test_store_cuts_torn_tail_and_reports_corruption(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with Memory(path, embedder=None) as mem:
        for i in range(5):
            mem.retain(f"event {i}", user_id="u1")
        end = mem._store.log_bytes  # the log's zero-filled space runs on after this
    log = path / "wal-0000000000000000.log"
    data = log.read_bytes()
    log.write_bytes(data[: end - 3])  # a crash mid-append
    with Memory(path, embedder=None) as mem:
        assert mem.stats()["episodes"] == 4
        mem.retain("after the crash", user_id="u1")
    with Memory(path, embedder=None) as mem:
        assert mem.stats()["episodes"] == 5
    data = bytearray(log.read_bytes())
    data[40] ^= 0xFF  # a bit flip inside committed data
    log.write_bytes(bytes(data))
    with pytest.raises(StoreCorruptedError):
        Memory(path, embedder=None)


def test_forget_user_removes_episodes_and_facts(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        mem.retain("u1 likes tea", user_id="u1")
        mem.retain("u2 likes coffee", user_id="u2")
        mem.facts.set("drink", "tea", user_id="u1")
        with pytest.raises(trimem.InvalidArgumentError, match="everything=True"):
            mem.forget(user_id="u1")
        assert mem.forget(user_id="u1", everything=True) == 1
        assert mem.episodes(user_id="u1") == [] and mem.facts.list(user_id="u1") == []
        assert len(mem.episodes(user_id="u2")) == 1
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        assert mem.episodes(user_id="u1") == [] and mem.facts.history("drink", user_id="u1") == []


def test_background_reflector() -> None:
    mem = Memory(embedder=None)
    r = mem.start_reflector(interval=0.05)
    mem.retain("we decided to use Redis as the cache", user_id="u1")
    deadline = time.time() + 10
    while mem.facts.get("cache", user_id="u1") is None and time.time() < deadline:
        time.sleep(0.02)
    mem.stop_reflector()
    assert mem.facts.get("cache", user_id="u1").value == "Redis"  # type: ignore[union-attr]
    assert r.errors == []


def test_retain_many_with_precomputed_vectors() -> None:
    mem = Memory(embedder="hashing")
    v = mem.embedder(["a", "b"])  # type: ignore[misc]
    eps = mem.retain_many([{"text": "alpha", "user_id": "u1"}, {"text": "beta", "user_id": "u1"}], vectors=v)
    assert [e.id for e in eps] == [1, 2]
    with pytest.raises(trimem.InvalidArgumentError):
        mem.retain_many([{"text": "gamma", "user_id": "u1"}], vectors=np.zeros((1, 3), np.float32))
    assert mem.stats()["episodes"] == 2


def test_keyword_only_memory(tmp_path: Path) -> None:
    mem = Memory(os.fspath(tmp_path / "kw"), embedder=None)
    ep = mem.retain("ERR_CONNECTION_REFUSED from node.js on 8080", user_id="u1")
    assert mem.search("connection refused 8080", user_id="u1")[0].episode.id == ep.id
    mem.close()


def test_saved_working_memory_survives_reopen_until_the_session_ends(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=None) as mem:
        wm = mem.working("s1")
        wm.add_turn("user", "deploy the node service")
        wm.vars["todo"] = ["build", "push"]
        mem.working("s2").vars["unsaved"] = 1
        mem.save_working("s1")
        wm.vars["bad"] = object()
        with pytest.raises(trimem.InvalidArgumentError, match="plain data"):
            mem.save_working("s1")
    with Memory(tmp_path / "m", embedder=None) as mem:
        assert [t.text for t in mem.working("s1").recent()] == ["deploy the node service"]
        assert mem.working("s1").vars == {"todo": ["build", "push"]}
        assert mem.working("s2").vars == {}  # never saved: in-process only
        mem.checkpoint()
    with Memory(tmp_path / "m", embedder=None) as mem:
        assert mem.working("s1").vars == {"todo": ["build", "push"]}
        mem.end_session("s1")
    with Memory(tmp_path / "m", embedder=None) as mem:
        assert mem.working("s1").vars == {} and mem.working("s1").recent() == []
