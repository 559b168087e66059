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
        hit = mem.recall("backups", user_id="u", now=NOW).episodes[0]
        assert "Backblaze" in hit.episode.text  # a recall counts a use


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
    with pytest.raises(InvalidArgumentError, match="not empty"):
        from trimem.migrate import migrate

        migrate(folder, dsn)
    assert main(["migrate", "--from", folder, "--to", dsn, "--reset"]) == 0  # re-runnable
    assert main(["migrate", "--from", dsn, "--to", back]) == 0
    with Memory(back, embedder="hashing") as mem:
        assert mem.facts.get("primary_language", user_id="u").value == "Rust"  # type: ignore[union-attr]
        assert len(mem.episodes(user_id="u")) == 3 and len(mem.episodes(user_id="v")) == 1
