"""`Memory` over a folder store: everything survives a reopen, a second writer and another embedder
are refused, a torn tail is cut and corruption reported, forgetting a user persists."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import trimem
from tests.conftest import store_of
from trimem import Memory
from trimem.errors import EmbedderMismatchError, StoreCorruptedError, StoreLockedError

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


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
        assert mem.get(gone.id) is None
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
        end = store_of(mem).log_bytes  # the log's zero-filled space runs on after this
    log = path / "wal-0000000000000000.log"
    data = log.read_bytes()
    log.write_bytes(data[: end - 3])  # a crash mid-append
    with Memory(path, embedder=None) as mem:
        assert mem.stats().episodes == 4
        mem.retain("after the crash", user_id="u1")
    with Memory(path, embedder=None) as mem:
        assert mem.stats().episodes == 5
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
