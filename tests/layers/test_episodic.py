"""Episodic memory through `Memory`: retain and get, timestamps, input validation that changes
nothing, precomputed vectors, keyword-only memory."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import trimem
from trimem import Memory


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
    assert mem.get(10_000) is None
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
    before = mem.stats().episodes
    args = {"user_id": "u1", **kwargs}
    with pytest.raises(err):
        mem.retain(**args)
    assert mem.stats().episodes == before
    # A bad item fails the whole batch.
    with pytest.raises(err):
        mem.retain_many([{"text": "fine", "user_id": "u1"}, args])
    assert mem.stats().episodes == before


def test_retain_many_with_precomputed_vectors() -> None:
    mem = Memory(embedder="hashing")
    v = mem.embedder(["a", "b"])  # type: ignore[misc]
    eps = mem.retain_many([{"text": "alpha", "user_id": "u1"}, {"text": "beta", "user_id": "u1"}], vectors=v)
    assert [e.id for e in eps] == [1, 2]
    with pytest.raises(trimem.InvalidArgumentError):
        mem.retain_many([{"text": "gamma", "user_id": "u1"}], vectors=np.zeros((1, 3), np.float32))
    assert mem.stats().episodes == 2


def test_keyword_only_memory(tmp_path: Path) -> None:
    mem = Memory(os.fspath(tmp_path / "kw"), embedder=None)
    ep = mem.retain("ERR_CONNECTION_REFUSED from node.js on 8080", user_id="u1")
    assert mem.search("connection refused 8080", user_id="u1")[0].episode.id == ep.id
    mem.close()
