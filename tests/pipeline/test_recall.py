"""Recall through `Memory`: scopes never cross, and the rendered bundle's sections and token budget."""

from __future__ import annotations

from datetime import UTC, datetime

from trimem import Memory

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


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
