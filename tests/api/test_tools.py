"""Explicit tool mode: `Memory.tools()` schemas and `Memory.execute` validation and dispatch."""

from __future__ import annotations

import pytest

import trimem
from trimem import Memory


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
