"""The embedded fact table's per-user reads: a user's facts come from their own keys (never a scan
of every user's), in the order they were first set, after sets, deletes, removals and a reload."""

from __future__ import annotations

from trimem._backend.embedded.facts import FactTable
from trimem._backend.ops import OpFact


def table(*ops: tuple[str, str, str | None]) -> FactTable:
    t = FactTable()
    for at, (user, key, value) in enumerate(ops, 1):
        t.apply_fact(OpFact("a", user, key, value, at))
    return t


def keys(t: FactTable, user: str) -> list[str]:
    return [f.key for f in t.of_user("a", user)]


def test_a_users_facts_in_the_order_first_set_and_only_theirs() -> None:
    t = table(("u", "city", "Oslo"), ("v", "city", "Rome"), ("u", "editor", "Vim"), ("u", "city", "Bergen"))
    assert keys(t, "u") == ["city", "editor"] and t.of_user("a", "u")[0].value == "Bergen"
    assert keys(t, "v") == ["city"] and keys(t, "w") == []
    t.apply_fact(OpFact("a", "u", "city", None, 9))  # deleted, then set again: it comes last
    assert keys(t, "u") == ["editor"]
    t.apply_fact(OpFact("a", "u", "city", "Lima", 10))
    assert keys(t, "u") == ["editor", "city"]
    assert [f.key for f in t.of_user("a", "u")] == [k for (a, u, k) in t.current if u == "u"]


def test_removals_and_a_reload_keep_the_per_user_keys_in_step() -> None:
    t = table(("u", "city", "Oslo"), ("u", "editor", "Vim"), ("v", "city", "Rome"), ("u", "db", None))
    reloaded = FactTable()
    reloaded.load(t.state())
    assert keys(reloaded, "u") == keys(t, "u") == ["city", "editor"] and keys(reloaded, "v") == ["city"]
    t.remove_keys([("a", "u", "city")])
    assert keys(t, "u") == ["editor"]
    t.remove_user("a", "u")
    assert keys(t, "u") == [] and keys(t, "v") == ["city"]
