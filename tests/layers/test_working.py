"""Working memory through `Memory`: capacity, TTL and reset at session end; saved working memory
across reopen."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

import trimem
from trimem import Memory, Policy

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


def test_working_memory_capacity_ttl_and_reset() -> None:
    days = 10 / 86_400  # a 10-second working retention
    mem = Memory(
        embedder=None,
        policy=Policy(working_bound=3, retention_days={"working": days, "episodic": 30.0, "semantic": 365.0}),
    )
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
