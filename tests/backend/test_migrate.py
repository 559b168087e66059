"""`python -m trimem migrate`: a whole memory from a folder to PostgreSQL and back, compared."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trimem import Memory
from trimem.cli import main
from trimem.errors import InvalidArgumentError

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

NOW = datetime(2026, 11, 25, tzinfo=UTC)


def _fill(path: str) -> None:
    with Memory(path, embedder="hashing") as mem:
        for i, text in enumerate(
            ["我本地主力语言是 TypeScript，开发环境为 macOS", "Our backups go to Backblaze B2 every night."]
        ):
            mem.retain(text, user_id="u", timestamp=NOW - timedelta(days=90 - i))
        mem.retain("把我的主力语言改成 Rust 吧", user_id="u", timestamp=NOW)
        mem.retain("Booked the dentist for Friday", user_id="v", timestamp=NOW)
        mem.reflect(user_id="u")
        mem.facts.pin("primary_language", user_id="u")
        mem.facts.alias("primary_language", ["main tongue"])
        mem.knowledge.add("Taxi rides are refunded up to 100 a day", source="policy.md")
        mem.knowledge.add("Private note for u", user_id="u")
        mem.items.put(("prefs", "u"), "ui", {"text": "dark mode, large fonts", "stars": 5}, now=NOW)
        mem.items.put(("prefs", "u"), "tmp", {"text": "a reminder that expires"}, ttl=60 * 24 * 365, now=NOW)
        mem.items.put(("prefs", "v"), "ui", {"text": "light theme"}, index=False, now=NOW)
        hit = mem.recall("backups", user_id="u", now=NOW).episodes[0]
        assert "Backblaze" in hit.episode.text  # a recall counts a use


def _check_items(mem: Memory) -> None:
    """Items come along whole: values, times, expiry, what they are searched by, their vectors."""
    ui = mem.items.get(("prefs", "u"), "ui", now=NOW)
    assert ui is not None and ui.value == {"text": "dark mode, large fonts", "stars": 5}
    assert ui.created_at == int(NOW.timestamp() * 1e6) and ui.expires_at is None
    tmp = mem.items.get(("prefs", "u"), "tmp", now=NOW)
    assert tmp is not None and tmp.ttl == 60 * 24 * 365 and tmp.expires_at == ui.created_at + 365 * 86_400_000_000
    assert mem.items.get(("prefs", "u"), "tmp", now=NOW + timedelta(days=366)) is None
    found = mem.items.search(("prefs",), query="dark mode", filter={"stars": {"$gte": 5}}, now=NOW)
    assert [(i.key, s is not None) for i, s in found] == [("ui", True)]
    vec = mem.embedder(["dark mode, large fonts"])[0]  # found by its vector alone too
    assert mem.items.search(("prefs",), vector=vec, query="zzz", limit=1, now=NOW)[0][0].key == "ui"
    assert mem.items.list_namespaces(now=NOW) == [("prefs", "u"), ("prefs", "v")]


def test_a_folder_moves_to_postgresql_and_back(tmp_path: Path, pg_dsn: str, pg_schema: str) -> None:
    folder, back = str(tmp_path / "src"), str(tmp_path / "back")
    dsn = f"{pg_dsn}&schema={pg_schema}"
    _fill(folder)
    assert main(["migrate", "--from", folder, "--to", dsn]) == 0
    with Memory(dsn, embedder="hashing") as mem:
        fact = mem.facts.get("primary_language", user_id="u")
        assert fact is not None and fact.value == "Rust" and fact.pinned
        assert [v.value for v in mem.facts.history("primary_language", user_id="u")] == ["TypeScript", "Rust"]
        assert [f.key for f, _ in mem.facts.search("main tongue", user_id="u")][:1] == ["primary_language"]
        found = mem.facts.search("which language do I code in", user_id="u")
        assert any(s.cosine is not None for _, s in found)  # facts keep their vectors
        assert [d.text for d in mem.knowledge.list()] == ["Taxi rides are refunded up to 100 a day"]
        backups = mem.search("backups", user_id="u")[0]
        assert backups.scored.accesses == 1  # use counts come along
        _check_items(mem)
    with pytest.raises(InvalidArgumentError, match="not empty"):
        from trimem.migrate import migrate

        migrate(folder, dsn)
    assert main(["migrate", "--from", folder, "--to", dsn, "--reset"]) == 0  # re-runnable
    assert main(["migrate", "--from", dsn, "--to", back]) == 0
    with Memory(back, embedder="hashing") as mem:
        assert mem.facts.get("primary_language", user_id="u").value == "Rust"  # type: ignore[union-attr]
        assert len(mem.episodes(user_id="u")) == 3 and len(mem.episodes(user_id="v")) == 1
        _check_items(mem)
