"""Episodic memory through `Memory`: retain and get, timestamps, input validation that changes
nothing, precomputed vectors, keyword-only memory."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta, timezone
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


# ---------------------------------------------------------------------------- the event's own time

_TOLD = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)


def _day(us: int | None) -> str | None:
    return None if us is None else datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%d")


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("Yesterday I deployed v2 to prod", "2026-11-19"),
        ("I went to a support group two days ago", "2026-11-18"),
        ("我上周在上海出差，打车花了 85 元", "2026-11-09"),
        ("We shipped the beta last month", "2026-10-01"),
        ("I deploy on Fridays", None),  # no time before the telling: it happened when told
        ("Next week I fly to Lisbon", None),  # not past
        ("Started the Node service in Docker, port 8080", None),
    ],
)
def test_a_relative_time_in_the_text_dates_the_event(text: str, day: str | None) -> None:
    mem = Memory(embedder=None)
    for e in (
        mem.retain(text, user_id="u", timestamp=_TOLD),
        mem.retain_many([{"text": text, "user_id": "v", "timestamp": _TOLD}])[0],
        mem.add(text, user_id="w", timestamp=_TOLD).item,
    ):
        if not hasattr(e, "occurred_at"):
            continue  # add filed it elsewhere (a fact), not as an event
        assert e.timestamp == int(_TOLD.timestamp() * 1e6)  # when it was told stays
        assert _day(e.occurred_at) == day
        assert mem.get(e.id) == e  # stored and read back


def test_time_filters_read_when_it_happened(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=None) as mem:
        deployed = mem.retain("Yesterday I deployed v2 to prod", user_id="u", timestamp=_TOLD)
        mem.retain("Today I wrote the release notes", user_id="u", timestamp=_TOLD)
        later = datetime(2026, 11, 20, 18, 0, tzinfo=UTC)
        b = mem.recall("what did I deploy yesterday?", user_id="u", now=later)
        assert [r.episode.id for r in b.episodes] == [deployed.id]
        assert "(on 2026-11-19)" in b.render()
        # today holds no deploy: yesterday's follows, labelled weak, the day it happened on show
        today = mem.recall("what did I deploy today?", user_id="u", now=later)
        assert [(r.episode.id, r.scored.weak) for r in today.episodes] == [(deployed.id, True)]
        assert "(weak match) [" in today.render() and "(on 2026-11-19)" in today.render()
        start = datetime(2026, 11, 19, tzinfo=UTC)
        assert [e.id for e in mem.episodes(user_id="u", time_range=(start, start + timedelta(days=1)))] == [deployed.id]
        mem.checkpoint()
    with Memory(tmp_path / "m", embedder=None) as mem:
        again = mem.get(deployed.id)
        assert again is not None and again.occurred_at == deployed.occurred_at and again.timestamp == deployed.timestamp


def test_a_caller_may_say_when_it_happened() -> None:
    mem = Memory(embedder=None)
    at = datetime(2026, 1, 2, tzinfo=UTC)
    e = mem.retain("Yesterday I deployed v2", user_id="u", timestamp=_TOLD, occurred_at=at)
    assert e.occurred_at == int(at.timestamp() * 1e6)
    shared = mem.share(from_agent="default", to_agent="other", user_id="u", episode_ids=[e.id])[0]
    assert shared.occurred_at == e.occurred_at
