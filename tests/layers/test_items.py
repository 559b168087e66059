"""Items through `Memory.items` (on PostgreSQL too with TRIMEM_TEST_BACKEND=postgresql): the
value filter inside the search, field paths, refused writes that change nothing, export/import."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from trimem import Memory
from trimem.errors import ArgumentTypeError, InvalidArgumentError
from trimem.layers.items import ItemPut, text_at

NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


def test_a_filtered_search_returns_limit_items_whenever_that_many_pass() -> None:
    """Hundreds of better keyword matches fail the filter: a search that filtered after ranking
    a window would come back short."""
    mem = Memory(embedder="hashing")
    mem.items.apply(
        [ItemPut(("docs", "u1"), f"noise{i}", {"text": "port 8080 port mapping port", "stars": 1}) for i in range(300)]
        + [ItemPut(("docs", "u1"), f"good{i}", {"text": f"the port is {i}", "stars": 5}) for i in range(3)]
        + [ItemPut(("docs", "u2"), "other", {"text": "port", "stars": 5})]
    )
    found = mem.items.search(("docs", "u1"), query="port", filter={"stars": {"$gte": 5}}, limit=3)
    assert sorted(i.key for i, _ in found) == ["good0", "good1", "good2"]
    assert all(score is not None for _, score in found)
    found = mem.items.search(("docs",), query="port", filter={"stars": 5}, limit=10)
    assert sorted(i.key for i, _ in found) == ["good0", "good1", "good2", "other"]
    # offset pages through one ranking: page two continues page one
    ranked = [i.key for i, _ in mem.items.search(("docs",), query="port", limit=304)]
    assert len(ranked) == 304 and len(set(ranked)) == 304
    assert [i.key for i, _ in mem.items.search(("docs",), query="port", limit=4, offset=300)] == ranked[300:]


@pytest.mark.parametrize(
    ("path", "texts"),
    [
        ("$", ['{"a": {"b": "x"}, "l": [{"b": "y"}, {"b": 2}], "n": null}']),
        ("a.b", ["x"]),
        ("l[*].b", ["y", "2"]),
        ("l[0].b", ["y"]),
        ("l[-1].b", ["2"]),
        ("l[5].b", []),
        ("n", []),
        ("missing.path", []),
    ],
)
def test_field_paths_read_what_they_name(path: str, texts: list[str]) -> None:
    assert text_at({"a": {"b": "x"}, "l": [{"b": "y"}, {"b": 2}], "n": None}, path) == texts


def test_an_item_is_searched_by_its_indexed_fields_only() -> None:
    mem = Memory(embedder=None)  # keywords alone: a vector leg ranks every item with a vector
    mem.items.put(("n",), "a", {"title": "kafka retention", "body": "compacted topics"}, index=["title"])
    mem.items.put(("n",), "b", {"title": "lunch", "body": "kafka"}, index=False)
    assert [i.key for i, s in mem.items.search(("n",), query="kafka") if s is not None] == ["a"]
    assert [i.key for i, s in mem.items.search(("n",), query="compacted") if s is not None] == []
    assert [i.key for i, _ in mem.items.search(("n",), query="compacted")] == ["b", "a"]  # unranked: newest first


def test_bad_writes_are_refused_and_change_nothing() -> None:
    mem = Memory(embedder="hashing")
    mem.items.put(("n",), "k", {"text": "kept"})
    bad: list[ItemPut] = [
        ItemPut(("n",), "k2", {"text": object()}),
        ItemPut(("n",), "k2", {1: "int key"}),  # type: ignore[dict-item]
        ItemPut(("n",), "k2", {"text": "nul \x00"}),
        ItemPut(("n",), "k2", {"text": "x"}, ttl=0),
        ItemPut(("n",), "k2", {"text": "x"}, ttl=True),
        ItemPut(("n",), "k2\x00", {"text": "x"}),
        ItemPut((), "k2", {"text": "x"}),
        ItemPut(("",), "k2", {"text": "x"}),
        ItemPut(("a\x1fb",), "k2", {"text": "x"}),
        ItemPut(("n",), "k2", ["not", "a", "dict"]),  # type: ignore[arg-type]
    ]
    for put in bad:
        with pytest.raises((InvalidArgumentError, ArgumentTypeError)):
            mem.items.apply([ItemPut(("n",), "k", {"text": "replaced"}), put])  # the good write is refused too
    with pytest.raises(ArgumentTypeError):
        mem.items.apply([ItemPut(["n"], "k2", {"text": "x"})])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        mem.items.search(("n",), filter={"n": {"$regex": "x"}})
    kept = mem.items.get(("n",), "k")
    assert kept is not None and kept.value == {"text": "kept"}
    assert mem.items.list_namespaces() == [("n",)]


def test_items_expire_and_a_sweep_deletes_them() -> None:
    mem = Memory(embedder="hashing")
    mem.items.put(("t",), "short", {"text": "expires soon"}, ttl=10, now=NOW)
    mem.items.put(("t",), "long", {"text": "expires later"}, ttl=60, now=NOW)
    later = NOW + timedelta(minutes=30)
    assert [i.key for i, _ in mem.items.search(("t",), query="expires", now=later)] == ["long"]
    assert mem.items.get(("t",), "short", now=later) is None
    mem.items.refresh([mem.items.get(("t",), "long", now=later)], now=later)  # type: ignore[list-item]
    assert mem.items.sweep(now=NOW + timedelta(minutes=80)) == 1  # short; long was refreshed to 90
    assert [i.key for i, _ in mem.items.search(("t",), now=NOW)] == ["long"]


def test_a_whole_store_export_carries_the_items(tmp_path: Path) -> None:
    src = Memory(embedder="hashing")
    src.items.put(("docs", "u1"), "a", {"text": "the deploy runs on port 8080", "n": 1}, now=NOW)
    src.items.put(("docs", "u1"), "b", {"text": "lunch at noon"}, ttl=5, now=NOW)
    src.retain("an episode", user_id="u1")
    assert src.export(tmp_path / "one.trimem", user_id="u1").items == 0  # items belong to no user
    assert src.export(tmp_path / "all.trimem").items == 2
    dst = Memory(embedder="hashing")
    assert dst.import_from(tmp_path / "all.trimem").items == 2
    a = dst.items.get(("docs", "u1"), "a", now=NOW)
    assert a is not None and a.value == {"text": "the deploy runs on port 8080", "n": 1}
    assert dst.items.get(("docs", "u1"), "b", now=NOW + timedelta(minutes=6)) is None  # the expiry came along
    assert dst.items.search(("docs",), query="which port?", now=NOW)[0][0].key == "a"
