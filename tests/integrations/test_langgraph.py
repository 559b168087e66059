"""TrimemStore against LangGraph's store contract, on every backend: a conformance suite modelled
on LangGraph's own store tests (it ships none to import), and a differential test that runs
random operation sequences on TrimemStore and on LangGraph's ``InMemoryStore`` side by side and
compares what each returns (scores aside)."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from trimem import Memory
from trimem.embedders import HashingEmbedder
from trimem.errors import InvalidArgumentError
from trimem.integrations.langgraph import TrimemStore

DIMS = 64
_hashing = HashingEmbedder(dim=DIMS)


def embed(texts: list[str]) -> list[list[float]]:
    """Bag-of-words vectors: texts sharing words are near (what the tests rank by)."""
    return [[float(x) for x in row] for row in _hashing(list(texts))]


INDEX: Any = {"dims": DIMS, "embed": embed, "fields": ["text"]}


@pytest.fixture
def store(where: Any) -> Iterator[TrimemStore]:
    s = TrimemStore(where, index=INDEX)
    yield s
    s.close()


# -- get, put, delete --------------------------------------------------------------------------------


def test_put_get_replace_and_delete(store: TrimemStore) -> None:
    assert store.get(("a",), "k") is None
    store.put(("a", "b"), "k", {"text": "first", "n": 1})
    first = store.get(("a", "b"), "k")
    assert first is not None and first.value == {"text": "first", "n": 1} and first.namespace == ("a", "b")
    time.sleep(0.002)
    store.put(("a", "b"), "k", {"text": "second"})
    second = store.get(("a", "b"), "k")
    assert second is not None and second.value == {"text": "second"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    store.delete(("a", "b"), "k")
    assert store.get(("a", "b"), "k") is None
    assert store.search(("a",)) == []


def test_a_batch_reads_before_it_writes_and_the_last_write_of_a_key_wins(store: TrimemStore) -> None:
    store.put(("n",), "k", {"text": "old"})
    got, _, _, after = store.batch(
        [GetOp(("n",), "k"), PutOp(("n",), "k", {"text": "mid"}), PutOp(("n",), "k", {"text": "new"}),
         GetOp(("n",), "k")]
    )  # fmt: skip
    assert got is not None and got.value == {"text": "old"}
    assert after is not None and after.value == {"text": "old"}  # reads see the store before the batch
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"text": "new"}
    store.batch([PutOp(("n",), "k", None)])  # value None deletes
    assert store.get(("n",), "k") is None


def test_namespaces_are_refused_as_langgraph_refuses_them(store: TrimemStore) -> None:
    for bad in [(), ("",), ("a.b",), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"text": "x"})
    for label in ["a\x00b", "a\x1fb"]:  # a label trimem's stores cannot keep, refused by its own check
        with pytest.raises(InvalidArgumentError):
            store.items.put((label,), "k", {"text": "x"})
    with pytest.raises(InvalidArgumentError):
        store.items.put(("a",), "k\x00", {"text": "x"})
    with pytest.raises(InvalidArgumentError):
        store.put(("a",), "k", {"text": ["x", {"y": "nul \x00 inside"}]})
    with pytest.raises(InvalidArgumentError):
        store.put(("a",), "k", {"blob": object()})  # type: ignore[dict-item]
    assert store.list_namespaces() == []


@pytest.mark.parametrize(
    "label",
    ["it's", 'a"b', "100%", "a_b", "back\\slash", "x) OR (1=1", "*", "a&b|!c:*", "内存", "'; DROP TABLE items; --"],
)
def test_labels_and_keys_with_quotes_wildcards_and_operators_are_plain_text(store: TrimemStore, label: str) -> None:
    store.put((label, "u"), label, {"text": f"note {label}"})
    store.put(("other", "u"), "k", {"text": "note other"})
    item = store.get((label, "u"), label)
    assert item is not None and item.key == label
    assert [(i.namespace, i.key) for i in store.search((label,))] == [((label, "u"), label)]
    assert store.list_namespaces(suffix=("u",)) == sorted([(label, "u"), ("other", "u")])
    # "*" in a match condition is LangGraph's wildcard, any label; every other label is itself
    expected = sorted([(label, "u"), ("other", "u")]) if label == "*" else [(label, "u")]
    assert store.list_namespaces(prefix=(label,)) == expected


def test_put_keeps_what_postgres_store_keeps_of_json_like_values(store: TrimemStore) -> None:
    import datetime as dt
    import uuid

    when, uid = dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.UTC), uuid.UUID(int=7)
    store.put(("j",), "k", {"at": when, "id": uid, "tags": {"a"}, "pair": (1, 2), "day": dt.date(2026, 12, 1)})
    item = store.get(("j",), "k")
    assert item is not None and item.value == {"at": "2026-12-01T09:30:00Z", "id": str(uid), "tags": ["a"],
                                               "pair": [1, 2], "day": "2026-12-01"}  # fmt: skip


# -- search ------------------------------------------------------------------------------------------


def _fill(store: TrimemStore) -> None:
    store.put(("docs", "u1"), "a", {"text": "the deploy runs on port 8080", "stars": 5, "tag": {"kind": "ops"}})
    store.put(("docs", "u1"), "b", {"text": "lunch with the team at noon", "stars": 2, "tag": {"kind": "life"}})
    store.put(("docs", "u2"), "c", {"text": "port 3000 for the node script", "stars": 4, "tags": ["x", "y"]})
    store.put(("docs", "u2"), "d", {"text": "buy milk", "stars": "3"})
    store.put(("mail", "u1"), "e", {"text": "port forwarding request", "stars": 1})


def test_search_ranks_by_query_within_a_prefix(store: TrimemStore) -> None:
    _fill(store)
    hits = store.search(("docs",), query="which port does the deploy use")
    assert [h.key for h in hits][:2] == ["a", "c"]
    assert {h.key for h in hits} == {"a", "b", "c", "d"}  # every item under the prefix, ranked
    assert all(h.score is not None for h in hits[:2])
    assert [h.key for h in store.search(("docs", "u2"), query="port")] == ["c", "d"]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"stars": 5}, {"a"}),
        ({"stars": {"$eq": 2}}, {"b"}),
        ({"stars": {"$ne": 2}}, {"a", "c", "d"}),
        ({"stars": {"$gt": 3}}, {"a", "c"}),
        ({"stars": {"$gte": 3}}, {"a", "c", "d"}),  # "3" reads as a number, as PostgreSQL's ::float does
        ({"stars": {"$lt": 3}}, {"b"}),
        ({"stars": {"$lte": 4, "$gt": 2}}, {"c", "d"}),
        ({"tag": {"kind": "ops"}}, {"a"}),
        ({"tags": ["x", "y"]}, {"c"}),
        ({"tags": ["y", "x"]}, set()),
        ({"missing": {"$ne": 1}}, {"a", "b", "c", "d"}),
        ({"stars": 5, "tag": {"kind": "life"}}, set()),
    ],
)
def test_filters_apply_inside_the_search(store: TrimemStore, flt: dict[str, Any], expected: set[str]) -> None:
    _fill(store)
    assert {h.key for h in store.search(("docs",), filter=flt)} == expected
    assert {h.key for h in store.search(("docs",), query="port", filter=flt)} == expected


def test_an_unknown_operator_is_a_typed_error(store: TrimemStore) -> None:
    _fill(store)
    with pytest.raises(InvalidArgumentError, match=r"\$regex"):
        store.search(("docs",), filter={"stars": {"$regex": "5"}})


def test_limit_items_come_back_whenever_that_many_match(store: TrimemStore) -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "port", "deploy", "lunch", "milk"]
    store.batch(
        [PutOp(("bulk", f"u{i % 7}"), f"k{i}", {"text": " ".join(rng.choices(words, k=5)), "rare": i % 25 == 0})
         for i in range(600)]
    )  # fmt: skip
    rare = store.search(("bulk",), query="port deploy", filter={"rare": True}, limit=10)
    assert len(rare) == 10 and all(h.value["rare"] is True for h in rare)
    assert len(store.search(("bulk",), query="port deploy", filter={"rare": True}, limit=50)) == 24
    page1 = store.search(("bulk",), query="lunch milk", limit=5)
    page2 = store.search(("bulk",), query="lunch milk", limit=5, offset=5)
    both = store.search(("bulk",), query="lunch milk", limit=10)
    assert [h.key for h in page1 + page2] == [h.key for h in both]
    newest = store.search(("bulk", "u3"), limit=3)
    assert (
        [h.key for h in newest]
        == sorted(
            (h.key for h in store.search(("bulk", "u3"), limit=1000)),
            key=lambda k: -store.get(("bulk", "u3"), k).updated_at.timestamp(),  # type: ignore[union-attr]
        )[:3]
    )


def test_an_item_put_with_index_false_is_listed_but_not_ranked(store: TrimemStore) -> None:
    store.put(("n",), "ranked", {"text": "port 8080"})
    store.put(("n",), "plain", {"text": "port 8080"}, index=False)
    hits = store.search(("n",), query="port 8080")
    assert [(h.key, h.score is None) for h in hits] == [("ranked", False), ("plain", True)]


def test_list_namespaces_with_wildcards_depth_and_pages(store: TrimemStore) -> None:
    for ns in [("a", "x", "1"), ("a", "y", "1"), ("a", "y", "2"), ("b", "x", "1"), ("b",)]:
        store.put(ns, "k", {"text": "t"})
    assert store.list_namespaces() == [("a", "x", "1"), ("a", "y", "1"), ("a", "y", "2"), ("b",), ("b", "x", "1")]
    assert store.list_namespaces(prefix=("a", "*", "1")) == [("a", "x", "1"), ("a", "y", "1")]
    assert store.list_namespaces(suffix=("x", "1")) == [("a", "x", "1"), ("b", "x", "1")]
    assert store.list_namespaces(max_depth=2) == [("a", "x"), ("a", "y"), ("b",), ("b", "x")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "y", "1"), ("a", "y", "2")]


# -- time to live ---------------------------------------------------------------------------------------


def test_items_expire_refresh_on_read_and_are_swept(where: Any) -> None:
    # 0.6 s to live, read every 0.3 s: a loaded machine has 0.3 s of slack per read (at 60 ms
    # and 30 ms, one slow PostgreSQL round trip let the item expire between two reads)
    store = TrimemStore(where, index=INDEX, ttl={"default_ttl": 0.01, "refresh_on_read": True})
    try:
        store.put(("t",), "short", {"text": "gone soon"})
        store.put(("t",), "kept", {"text": "stays"}, ttl=None)
        assert store.get(("t",), "short") is not None
        for _ in range(3):  # each read restarts its 0.6 s: 0.9 s after the put, it is still there
            time.sleep(0.3)
            assert store.get(("t",), "short") is not None
        time.sleep(1.0)
        assert store.get(("t",), "short") is None
        assert [h.key for h in store.search(("t",), query="gone soon")] == ["kept"]
        assert store.list_namespaces() == [("t",)]
        assert store.sweep_ttl() == 1
        assert store.sweep_ttl() == 0
        stopped = store.start_ttl_sweeper(sweep_interval_minutes=1)
        assert store.stop_ttl_sweeper(timeout=5)
        stopped.result(timeout=5)
    finally:
        store.close()


# -- durability, async, a memory of one's own ------------------------------------------------------------


def test_items_survive_a_reopen_from_the_log_and_from_a_snapshot(tmp_path: Path) -> None:
    with TrimemStore(tmp_path / "s", index=INDEX) as store:
        store.put(("a",), "k1", {"text": "port 8080"})
        store.put(("a",), "k2", {"text": "lunch"}, ttl=60)
        store.delete(("a",), "k2")
        store.put(("a",), "k3", {"text": "port 3000"})
    for _ in range(2):
        with TrimemStore(tmp_path / "s", index=INDEX) as store:
            assert [h.key for h in store.search(("a",), query="port 8080")] == ["k1", "k3"]
            assert store.get(("a",), "k2") is None
            store.memory.checkpoint()


def test_abatch_runs_off_the_event_loop(store: TrimemStore) -> None:
    async def go() -> Any:
        await store.aput(("x",), "k", {"text": "async port"})
        return await store.asearch(("x",), query="port")

    assert [h.key for h in asyncio.run(go())] == ["k"]


def test_a_store_on_a_memory_one_has_leaves_its_episodes_alone() -> None:
    mem = Memory(embedder=HashingEmbedder(dim=DIMS))
    mem.retain("the deploy runs on port 8080", user_id="u1")
    store = TrimemStore(memory=mem, index=INDEX)
    store.put(("u1",), "k", {"text": "a store item about port 8080"})
    assert [r.episode.text for r in mem.recall("port 8080", user_id="u1").episodes] == ["the deploy runs on port 8080"]
    with pytest.raises(InvalidArgumentError, match="dim"):
        TrimemStore(memory=mem, index={"dims": 8, "embed": lambda texts: [[1.0] * 8 for _ in texts]})
    store.close()
    assert mem.items.get(("u1",), "k") is not None  # closing the store leaves a given memory open


# -- LangMem's memory tools ------------------------------------------------------------------------


def test_langmems_memory_tools_keep_and_find_memories_in_the_store(where: Any) -> None:
    pytest.importorskip("langmem")
    from langgraph.func import entrypoint
    from langmem import create_manage_memory_tool, create_search_memory_tool

    store = TrimemStore(where, index={"dims": DIMS, "embed": embed})  # the whole value indexed, as LangMem's docs do
    manage = create_manage_memory_tool(namespace=("memories", "{langgraph_user_id}"))
    search = create_search_memory_tool(namespace=("memories", "{langgraph_user_id}"))

    @entrypoint(store=store)
    def agent(call: dict[str, Any]) -> Any:  # an agent's tool call, the store given by the graph
        return (manage if call["tool"] == "manage" else search).invoke(call["args"])

    def call(user: str, tool: str, **args: Any) -> Any:
        return agent.invoke({"tool": tool, "args": args}, {"configurable": {"langgraph_user_id": user}})

    try:
        created = call("u1", "manage", content="User prefers dark mode")
        assert created.startswith("created memory ")
        dark = created.split()[-1]
        call("u1", "manage", content="Deploys run on port 8080")
        call("u2", "manage", content="User prefers the light theme")
        found = json.loads(call("u1", "search", query="dark mode"))
        assert found[0]["key"] == dark and found[0]["value"] == {"content": "User prefers dark mode"}
        assert {tuple(f["namespace"]) for f in found} == {("memories", "u1")}  # never another user's
        assert call("u1", "manage", id=dark, content="User prefers dark mode, high contrast", action="update")
        item = store.get(("memories", "u1"), dark)
        assert item is not None and item.value == {"content": "User prefers dark mode, high contrast"}
        call("u1", "manage", id=dark, action="delete")
        assert store.get(("memories", "u1"), dark) is None
        assert [f["key"] for f in json.loads(call("u1", "search", query="dark mode"))] != [dark]
    finally:
        store.close()


# -- against LangGraph's own store ----------------------------------------------------------------------


def _strip(results: list[Any]) -> list[Any]:
    """What both stores must agree on: items' namespace, key and value (times and scores differ)."""
    out: list[Any] = []
    for r in results:
        if r is None:
            out.append(None)
        elif isinstance(r, list) and r and isinstance(r[0], tuple):
            out.append(sorted(r))
        elif isinstance(r, list):
            out.append(sorted((i.namespace, i.key, repr(sorted(i.value.items()))) for i in r))
        else:
            out.append((r.namespace, r.key, r.value))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_give_what_langgraphs_in_memory_store_gives(where: Any, seed: int) -> None:
    rng = random.Random(seed)
    ours = TrimemStore(where, index=INDEX)
    theirs = InMemoryStore(index=INDEX)
    labels = ["a", "b", "c", "内", "x y"]
    words = ["port", "deploy", "lunch", "milk", "node", "docker", "team"]
    try:
        for step in range(60):
            ops: list[Any] = []
            for _ in range(rng.randint(1, 4)):
                ns = tuple(rng.choices(labels, k=rng.randint(1, 3)))
                key = f"k{rng.randint(0, 8)}"
                kind = rng.random()
                if kind < 0.45:
                    # each text its own (InMemoryStore fails a batch embedding one text twice)
                    value = {"text": " ".join(rng.choices(words, k=3)) + f" s{step}{len(ops)}", "n": rng.randint(0, 5),
                             "tag": rng.choice(["x", "y"])}  # fmt: skip
                    ops.append(PutOp(ns, key, value if rng.random() > 0.1 else None))
                elif kind < 0.6:
                    ops.append(GetOp(ns, key))
                else:
                    flt = rng.choice([None, {"tag": "x"}, {"n": {"$gte": 3}}, {"n": {"$ne": 2}, "tag": "y"}])
                    # every match returned (the two stores rank differently; the sets must agree)
                    query = rng.choice([None, " ".join(rng.choices(words, k=2))])
                    ops.append(SearchOp(ns[: rng.randint(0, len(ns))], filter=flt, limit=1000, query=query))
            assert _strip(ours.batch(ops)) == _strip(theirs.batch(ops))
            prefix = (rng.choice(labels),) if rng.random() < 0.5 else None
            depth = rng.choice([None, 1, 2])
            # InMemoryStore keeps listing a namespace once its last item is gone (or once a get
            # asked for it); LangGraph's PostgresStore, like trimem, lists those holding items
            held = [ns for ns, items in theirs._data.items() if items and ns[: len(prefix or ())] == (prefix or ())]
            expected = sorted({ns[:depth] if depth else ns for ns in held})
            assert ours.list_namespaces(prefix=prefix, max_depth=depth) == expected
    finally:
        ours.close()


def test_both_stores_put_the_nearest_item_first() -> None:
    ours, theirs = TrimemStore(index=INDEX), InMemoryStore(index=INDEX)
    texts = ["docker port mapping 8080", "lunch at noon with the team", "buy milk and eggs", "deploy the node app"]
    for s in (ours, theirs):
        for i, t in enumerate(texts):
            s.put(("d",), f"k{i}", {"text": t})
    for q in ["docker port", "team lunch", "milk", "node deploy"]:
        assert ours.search(("d",), query=q, limit=1)[0].key == theirs.search(("d",), query=q, limit=1)[0].key


def test_the_search_is_the_engines_exact_top_k_at_scale() -> None:
    """Vectors alone: the store's top 10 against brute force over 5,000 items (HNSW recall)."""
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((5000, DIMS)).astype(np.float32)
    table = {f"item {i}": v for i, v in enumerate(vecs)}
    queries = rng.standard_normal((20, DIMS)).astype(np.float32)
    probes = [f"probe {c}zz" for c in "abcdefghijklmnopqrst"]  # no word shared with an item
    table.update(dict(zip(probes, queries, strict=True)))

    def lookup(texts: list[str]) -> list[list[float]]:
        return [table[t].tolist() for t in texts]

    store = TrimemStore(index={"dims": DIMS, "embed": lookup, "fields": ["text"]})
    store.batch([PutOp(("v",), str(i), {"text": f"item {i}"}) for i in range(5000)])
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    found = 0
    for j, q in enumerate(queries):
        truth = set(np.argsort(-(unit @ (q / np.linalg.norm(q))))[:10].astype(str))
        got = {h.key for h in store.search(("v",), query=probes[j], limit=10)}
        found += len(truth & got)
    assert found / 200 >= 0.95
