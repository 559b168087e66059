"""Semantic memory through `Memory`: the knowledge base's private documents and versions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from trimem import Memory

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


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
