"""The memory graph: rule extraction (English and Chinese golden lists), relations from patterns,
co-occurrence weights, provenance and removal, scopes, neighbourhoods, persistence, the text
listing, drawing, and the LLM extractor's validation."""

from __future__ import annotations

import doctest
import importlib
import json
import pkgutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trimem import graph as graph_module
from trimem.errors import InvalidArgumentError, StoreCorruptedError, StoreVersionError
from trimem.graph import (
    MENTIONED_WITH,
    Entity,
    GraphExtractionError,
    MemoryGraph,
    Relation,
    extract,
    parse_extraction,
)

S = {"user_id": "u1"}  # one user of the default agent: the scope "default/u1"
Triple = tuple[str, str, str]


def ents(text: str, **kw: Any) -> list[tuple[str, str]]:
    return [(e.name, e.type) for e in extract(text, **kw).entities]


def rels(text: str, **kw: Any) -> list[Triple]:
    return [(r.subject, r.predicate, r.object) for r in extract(text, **kw).relations]


def stated(relations: list[Relation]) -> list[Triple]:
    return [(r.subject, r.predicate, r.object) for r in relations if r.predicate != MENTIONED_WITH]


def by_name(entities: list[Entity]) -> dict[str, Entity]:
    return {e.name: e for e in entities}


def test_doctests() -> None:
    """The package's examples and its modules' (the graph is a package: testmod reads one module)."""
    modules = [
        graph_module,
        *(importlib.import_module(f"trimem.graph.{m.name}") for m in pkgutil.iter_modules(graph_module.__path__)),
    ]
    results = [doctest.testmod(m, optionflags=doctest.ELLIPSIS) for m in modules]
    assert sum(r.attempted for r in results) >= 15 and sum(r.failed for r in results) == 0


# ------------------------------------------------------------------------------ extraction: English

ENGLISH: list[tuple[str, list[tuple[str, str]], list[Triple]]] = [
    (
        "Alice works at Acme Corp in Berlin.",
        [("Alice", "person"), ("Acme Corp", "org"), ("Berlin", "place")],
        [("Alice", "works_at", "Acme Corp")],
    ),
    (
        "We use Redis for caching and PostgreSQL as the main database.",
        [
            ("team", "group"),
            ("Redis", "tech"),
            ("caching", "concept"),
            ("PostgreSQL", "tech"),
            ("main database", "concept"),
            ("user", "user"),
        ],
        [
            ("team", "uses", "Redis"),
            ("user", "database", "PostgreSQL"),  # the fact reflect reads from it, not "team uses"
            ("Redis", "used_for", "caching"),
            ("PostgreSQL", "used_for", "main database"),
        ],
    ),
    (
        # "Started" only starts the sentence; "Node" (capitalised) is Node.js
        "Started the Node service in Docker, port 8080",
        [("Node.js", "tech"), ("Docker", "tech"), ("8080", "port")],
        [],
    ),
    (
        "Our API runs on Kubernetes and depends on Node.js v18.2.0.",
        [("API", "thing"), ("Kubernetes", "tech"), ("Node.js", "tech"), ("v18.2.0", "version")],
        [("API", "runs_on", "Kubernetes"), ("API", "depends_on", "Node.js"), ("Node.js", "has_version", "v18.2.0")],
    ),
    (
        "I prefer Vim over Emacs.",
        [("user", "user"), ("Vim", "tech"), ("Emacs", "tech")],
        [("user", "editor", "Vim")],
    ),
    ("Bob likes coffee.", [("Bob", "person"), ("coffee", "concept")], [("Bob", "likes", "coffee")]),
    (
        "Carol lives in San Francisco and works for Initech.",
        [("Carol", "person"), ("San Francisco", "place"), ("Initech", "org")],
        [("Carol", "lives_in", "San Francisco"), ("Carol", "works_at", "Initech")],
    ),
    (
        "Call `get_user_by_id()` in users.py before config.yaml loads.",
        [("get_user_by_id", "code"), ("users.py", "file"), ("config.yaml", "file")],
        [],
    ),
    ('The project is codenamed "Phoenix".', [("Phoenix", "thing")], []),
    (
        "PostgreSQL is our main database.",
        [("PostgreSQL", "tech"), ("main database", "concept"), ("user", "user")],
        [("PostgreSQL", "is", "main database"), ("user", "database", "PostgreSQL")],
    ),
    (
        "Connect to db.internal:5432 from Python 3.12.",
        [("db.internal", "host"), ("5432", "port"), ("Python", "tech"), ("3.12", "version")],
        [("Python", "has_version", "3.12")],
    ),
    (
        "Alice and Bob use Docker, but Carol prefers Podman.",
        [("Alice", "person"), ("Bob", "person"), ("Docker", "tech"), ("Carol", "person"), ("Podman", "tech")],
        [("Alice", "uses", "Docker"), ("Bob", "uses", "Docker"), ("Carol", "prefers", "Podman")],
    ),
    (
        # Bob starts a new clause: he is not a second thing "I" use, and Vim prefers nothing
        "I use Vim and Bob prefers Emacs.",
        [("user", "user"), ("Vim", "tech"), ("Bob", "person"), ("Emacs", "tech")],
        [("user", "editor", "Vim"), ("Bob", "prefers", "Emacs")],
    ),
    (
        "Mallory is responsible for the billing service.",
        [("Mallory", "person"), ("billing service", "concept")],
        [("Mallory", "responsible_for", "billing service")],
    ),
    (
        "I like coffee, tea and juice.",
        [("user", "user"), ("coffee", "concept"), ("tea", "concept"), ("juice", "concept")],
        [("user", "likes", "coffee"), ("user", "likes", "tea"), ("user", "likes", "juice")],
    ),
]


@pytest.mark.parametrize(("text", "entities", "relations"), ENGLISH, ids=[t[0][:30] for t in ENGLISH])
def test_english_golden(text: str, entities: list[tuple[str, str]], relations: list[Triple]) -> None:
    assert ents(text) == entities
    assert rels(text) == relations


# ------------------------------------------------------------------------------ extraction: Chinese

CHINESE: list[tuple[str, list[tuple[str, str]], list[Triple]]] = [
    (
        "我们用 Redis 做缓存",
        [("team", "group"), ("Redis", "tech"), ("缓存", "concept")],
        [("team", "uses", "Redis"), ("Redis", "used_for", "缓存")],
    ),
    ("张三负责后端", [("张三", "person"), ("后端", "concept")], [("张三", "responsible_for", "后端")]),
    ("李四住在北京", [("李四", "person"), ("北京", "place")], [("李四", "lives_in", "北京")]),
    ("王五喜欢喝咖啡", [("王五", "person"), ("咖啡", "concept")], [("王五", "likes", "咖啡")]),
    ("赵六在阿里巴巴工作", [("赵六", "person"), ("阿里巴巴", "org")], [("赵六", "works_at", "阿里巴巴")]),
    (
        "订单服务依赖 PostgreSQL 和 Kafka",
        [("订单服务", "concept"), ("PostgreSQL", "tech"), ("Kafka", "tech")],
        [("订单服务", "depends_on", "PostgreSQL"), ("订单服务", "depends_on", "Kafka")],
    ),
    (
        "小王和老李负责前端",
        [("小王", "person"), ("老李", "person"), ("前端", "concept")],
        [("小王", "responsible_for", "前端"), ("老李", "responsible_for", "前端")],
    ),
    (
        "项目依赖 Node.js v18.2.0",
        [("项目", "concept"), ("Node.js", "tech"), ("v18.2.0", "version")],
        [("项目", "depends_on", "Node.js"), ("Node.js", "has_version", "v18.2.0")],
    ),
    ("我喜欢《三体》", [("user", "user"), ("三体", "thing")], [("user", "likes", "三体")]),
    ("王经理说下周上线", [("王经理", "person")], []),
    # a compound names the thing: 后端工程师, not 后端
    ("张三是后端工程师", [("张三", "person"), ("后端工程师", "concept")], [("张三", "is", "后端工程师")]),
    (
        "服务部署在 Docker 上，监听 8080 端口",
        [("服务", "concept"), ("Docker", "tech"), ("8080", "port")],
        [("服务", "runs_on", "Docker")],
    ),
    (
        "我们团队主要使用 Python 和 TypeScript，部署在阿里云上。",
        [("team", "group"), ("Python", "tech"), ("TypeScript", "tech"), ("阿里云", "org")],
        [("team", "uses", "Python"), ("team", "uses", "TypeScript"), ("team", "runs_on", "阿里云")],
    ),
    # full-width letters and punctuation fold (NFKC): Ｒｅｄｉｓ is Redis
    (
        "昨天张三也负责运维，Ｒｅｄｉｓ 用于缓存。",
        [("张三", "person"), ("运维", "concept"), ("Redis", "tech"), ("缓存", "concept")],
        [("张三", "responsible_for", "运维"), ("Redis", "used_for", "缓存")],
    ),
]


@pytest.mark.parametrize(("text", "entities", "relations"), CHINESE, ids=[t[0][:12] for t in CHINESE])
def test_chinese_golden(text: str, entities: list[tuple[str, str]], relations: list[Triple]) -> None:
    assert ents(text) == entities
    assert rels(text) == relations


@pytest.mark.parametrize(
    "text",
    [
        "Dave doesn't use Java.",
        "Eve does not really like Kafka.",
        "I no longer use Emacs.",
        "我不用 Docker，也不喜欢 Java",
        "张三没有使用 Redis",
        "李四并不负责后端",
    ],
)
def test_negation_states_no_relation(text: str) -> None:
    x = extract(text)
    assert x.relations == []
    assert any(e.type in ("tech", "concept") for e in x.entities)  # the names are still entities


def test_words_that_are_only_names_when_capitalised() -> None:
    assert ents("go to the store and rust never sleeps") == []
    assert ents("We go with Go and Rust") == [("Go", "tech"), ("Rust", "tech")]
    assert rels("Redis is fast.") == []  # "is" needs a name or a determiner after it
    assert rels("Bob is like Alice.") == []  # a comparison, not a liking
    assert rels("Alice is also using Docker and I have used Vim.") == [
        ("Alice", "uses", "Docker"),
        ("user", "uses", "Vim"),
    ]
    assert ents("用户喜欢应用的费用") == [("用户", "concept"), ("应用", "concept")]  # 用 inside words


def test_speaker_and_role() -> None:
    # the speaker's own facts relate as reflect reads them; another speaker's are theirs
    assert rels("I use Neovim") == [("user", "editor", "Neovim")]
    assert rels("I use Neovim", role="assistant") == [("assistant", "uses", "Neovim")]
    assert rels("I use Neovim", role="tool") == []  # no speaker to attribute it to
    assert rels("The user prefers dark mode.") == [("user", "prefers", "dark mode")]
    assert rels("我喜欢用 Vim") == [("user", "editor", "Vim")]
    assert rels("I like using Vim") == [("user", "editor", "Vim")]
    assert rels("I like coffee") == [("user", "likes", "coffee")]  # no fact key: the verb stays


def test_more_entity_kinds() -> None:
    x = ents("See https://example.com/docs and /etc/nginx/nginx.conf; ping 10.0.0.5 or mail ops@example.com")
    assert x == [
        ("https://example.com/docs", "url"),
        ("/etc/nginx/nginx.conf", "path"),
        ("10.0.0.5", "host"),
        ("ops@example.com", "email"),
    ]
    assert ents("The job reads DATABASE_URL and calls fetchUser()") == [("DATABASE_URL", "code"), ("fetchUser", "code")]
    assert ents("Release 1.4.3-rc1 ships 「凤凰」 on port:443") == [
        ("1.4.3-rc1", "version"),
        ("凤凰", "thing"),
        ("443", "port"),
    ]
    assert ents("Meet Alice at the Tokyo office") == [("Alice", "person"), ("Tokyo", "place")]
    assert ents("postgres and K8S and nodejs") == [("PostgreSQL", "tech"), ("Kubernetes", "tech"), ("Node.js", "tech")]


def test_mentions_and_sentences() -> None:
    x = extract("Docker is slow. I restarted docker. Kafka too.")
    d = {e.name: e for e in x.entities}
    assert d["Docker"].mentions == 2 and d["Docker"].sentences == [0, 1]
    assert d["Kafka"].sentences == [2]


def test_extract_rejects_non_text() -> None:
    with pytest.raises(InvalidArgumentError):
        extract(b"bytes")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the graph


def test_add_episode_returns_touched_items_and_keys_case_insensitively() -> None:
    g = MemoryGraph()
    e1, r1 = g.add_episode(1, 'Deploy "Phoenix" with docker', 10, **S)
    assert [(e.name, e.type) for e in e1] == [("Phoenix", "thing"), ("Docker", "tech")]
    assert [(r.subject, r.predicate, r.object, r.weight) for r in r1] == [("Docker", MENTIONED_WITH, "Phoenix", 1.0)]
    e2, _ = g.add_episode(2, 'Is "PHOENIX" on DOCKER?', 20, **S)
    assert [e.name for e in e2] == ["Phoenix", "Docker"]  # the display form of the first sighting
    assert len(g) == 2
    phoenix = g.entity("phoenix", **S)
    assert phoenix is not None and phoenix.mentions == 2 and phoenix.sources == [1, 2]
    assert g.entity("postgres", **S) is None
    g.add_episode(3, "Postgres is our main database.", 30, **S)
    pg = g.entity("postgres", **S)  # an alias finds the product
    assert pg is not None and pg.name == "PostgreSQL"


def test_cooccurrence_weights() -> None:
    g = MemoryGraph()
    g.add_episode(1, "Alice uses Docker. Bob likes Kafka.", 100, **S)
    weights = {(r.subject, r.object): r.weight for r in g.relations(**S, predicate=MENTIONED_WITH)}
    assert weights == {
        ("Alice", "Docker"): 1.0,
        ("Bob", "Kafka"): 1.0,  # one sentence
        ("Alice", "Bob"): 0.5,
        ("Alice", "Kafka"): 0.5,
        ("Bob", "Docker"): 0.5,
        ("Docker", "Kafka"): 0.5,
    }
    g.add_episode(2, "Alice restarted Docker.", 200, **S)
    g.add_episode(3, "Docker, as Alice said, is down. Alice is out.", 300, **S)
    r = g.relations(**S, entity="Alice", predicate=MENTIONED_WITH)[0]
    assert (r.subject, r.object, r.weight, r.sources) == ("Alice", "Docker", 3.0, [1, 2, 3])
    assert (r.first_seen, r.last_seen) == (100, 300)
    # the speaker and the team relate through statements only, never by co-occurrence
    g.add_episode(4, "We use Redis and I like Kafka.", 400, **S)
    assert all(
        "team" not in (r.subject, r.object) and "user" not in (r.subject, r.object)
        for r in g.relations(**S, predicate=MENTIONED_WITH)
    )
    assert ("team", "uses", "Redis") in stated(g.relations(**S, entity="team"))


def test_cooccurrence_is_bounded() -> None:
    g = MemoryGraph()
    names = " ".join(f"`fn_{i}`" for i in range(60))
    g.add_episode(1, names, 0, **S)
    assert len(g.entities(**S)) == 60
    assert len(g.relations(**S)) == 30 * 29 // 2


def test_provenance_and_removal() -> None:
    g = MemoryGraph()
    g.add_episode(1, "Alice uses Docker and Kafka.", 100, **S)
    g.add_episode(2, "Alice restarted Docker twice, Docker is flaky.", 200, **S)
    d = by_name(g.entities(**S))
    docker = d["Docker"]
    assert (docker.mentions, docker.sources, docker.first_seen, docker.last_seen) == (3, [1, 2], 100, 200)
    assert d["Kafka"].sources == [1]

    g.remove_sources([1])
    d = by_name(g.entities(**S))
    assert "Kafka" not in d  # its only source is gone
    assert (d["Docker"].mentions, d["Docker"].sources, d["Docker"].first_seen) == (2, [2], 200)
    assert (d["Alice"].mentions, d["Alice"].sources) == (1, [2])
    assert stated(g.relations(**S)) == []  # "Alice uses Docker" was only in episode 1
    assert [(r.subject, r.object, r.weight) for r in g.relations(**S)] == [("Alice", "Docker", 1.0)]
    assert g.relations(**S, entity="Kafka") == []

    g.remove_sources([2, 99])  # unknown ids are ignored
    assert len(g) == 0 and g.scopes() == [] and g.to_text() == "(the memory graph is empty)"


def test_adding_an_episode_again_replaces_it() -> None:
    g = MemoryGraph()
    g.add_episode(1, "Alice uses Docker.", 100, **S)
    before = g.encode()
    g.add_episode(1, "Alice uses Docker.", 100, **S)
    assert g.encode() == before
    g.add_episode(1, "Bob uses Podman.", 150, **S)
    assert sorted(e.name for e in g.entities(**S)) == ["Bob", "Podman"]


def test_scopes_never_mix() -> None:
    g = MemoryGraph()
    g.add_episode(1, "Alice uses Docker.", 1, agent_id="a", user_id="u1")
    g.add_episode(2, "Alice uses Podman.", 2, agent_id="a", user_id="u2")
    g.add_fact("editor", "Vim", agent_id="a", user_id="u2", timestamp=3)
    assert g.scopes() == ["a/u1", "a/u2"]
    assert [e.name for e in g.entities(agent_id="a", user_id="u1")] == ["Alice", "Docker"]
    assert {e.scope for e in g.entities()} == {"a/u1", "a/u2"}
    alice = [e for e in g.entities() if e.name == "Alice"]
    assert sorted((e.scope, e.sources) for e in alice) == [("a/u1", [1]), ("a/u2", [2])]
    assert stated(g.relations(agent_id="a", user_id="u1", entity="Alice")) == [("Alice", "uses", "Docker")]
    assert sorted(stated(g.relations(entity="Alice"))) == [("Alice", "uses", "Docker"), ("Alice", "uses", "Podman")]
    assert [e.name for e in g.neighbours("Alice", agent_id="a", user_id="u1", depth=3).entities] == ["Alice", "Docker"]
    assert g.neighbours("Podman", agent_id="a", user_id="u1").entities == []
    assert g.entity("Vim", agent_id="a", user_id="u1") is None
    g.remove_sources([1, 2], agent_id="a", user_id="u1")  # only a/u1's part of these ids
    assert g.scopes() == ["a/u2"] and g.entity("Podman", agent_id="a", user_id="u2") is not None
    g.clear(agent_id="a", user_id="u2")
    assert len(g) == 0


def test_neighbours_depth_limit_and_order() -> None:
    g = MemoryGraph()
    g.add_episode(1, "Alice uses Docker.", 1, **S)
    g.add_episode(2, "Docker runs on Ubuntu.", 2, **S)
    g.add_episode(3, "Ubuntu runs on Raspberry Pi.", 3, **S)
    g.add_episode(4, "Bob uses Docker. Docker depends on containerd_shim.", 4, **S)
    names = lambda sub: [e.name for e in sub.entities]  # noqa: E731
    assert names(g.neighbours("alice", **S, depth=0)) == ["Alice"]
    assert names(g.neighbours("alice", **S)) == ["Alice", "Docker"]
    # depth 2: Docker's neighbours, heaviest link first, then by name
    assert names(g.neighbours("alice", **S, depth=2)) == ["Alice", "Docker", "Bob", "containerd_shim", "Ubuntu"]
    assert names(g.neighbours("alice", **S, depth=3)) == [
        "Alice",
        "Docker",
        "Bob",
        "containerd_shim",
        "Ubuntu",
        "Raspberry Pi",
    ]
    assert names(g.neighbours("alice", **S, depth=3, limit=3)) == ["Alice", "Docker", "Bob"]
    sub = g.neighbours("docker", **S)
    assert sub.center == "Docker" and sub.depth == 1
    assert ("Docker", "runs_on", "Ubuntu") in stated(sub.relations)
    assert all(r.subject in names(sub) and r.object in names(sub) for r in sub.relations)
    assert g.neighbours("docker", **S) == sub  # deterministic
    assert g.neighbours("nobody", **S).entities == []
    assert "not in the graph" in g.neighbours("nobody", **S).to_text()
    for bad in ({"depth": -1}, {"limit": 0}, {"depth": True}):
        with pytest.raises(InvalidArgumentError):
            g.neighbours("alice", **S, **bad)


def test_facts_become_relations_from_the_user() -> None:
    g = MemoryGraph()
    g.add_episode(1, "I use Vim every day.", 100, **S)
    g.add_fact("editor", "vim", **S, timestamp=200)
    g.add_fact("city", "Berlin", **S, timestamp=200)
    g.add_fact("最喜欢的颜色", "蓝色", **S, timestamp=200)
    vim = g.entity("Vim", **S)
    assert vim is not None and (vim.name, vim.sources, vim.facts, vim.mentions) == ("Vim", [1], ["editor"], 2)
    assert (vim.first_seen, vim.last_seen) == (100, 200)
    user = g.entity("user", **S)
    assert user is not None and user.type == "user" and user.facts == ["city", "editor", "最喜欢的颜色"]
    assert sorted(stated(g.relations(**S, entity="user"))) == [
        ("user", "city", "Berlin"),
        ("user", "editor", "Vim"),  # the episode's reading and the fact are one relation
        ("user", "最喜欢的颜色", "蓝色"),
    ]
    berlin = g.entity("berlin", **S)
    assert berlin is not None and berlin.type == "place"
    fact_rel = g.relations(**S, predicate="editor")[0]
    assert (fact_rel.weight, fact_rel.sources, fact_rel.facts) == (2.0, [1], ["editor"])

    g.add_fact("city", "Paris", **S, timestamp=300)  # a new value replaces the old one
    assert g.entity("Berlin", **S) is None
    assert stated(g.relations(**S, predicate="city")) == [("user", "city", "Paris")]
    g.remove_fact("editor", **S)
    vim = g.entity("Vim", **S)
    assert vim is not None and vim.facts == [] and vim.mentions == 1
    g.remove_sources([1])
    assert g.entity("Vim", **S) is None
    assert g.entity("user", **S) is not None  # still named by the other facts
    g.add_fact("manager", "Grace", **S, timestamp=1, subject="Alice")
    assert ("Alice", "manager", "Grace") in stated(g.relations(**S, entity="Grace"))
    with pytest.raises(InvalidArgumentError):
        g.add_fact("", "x", **S, timestamp=1)
    with pytest.raises(InvalidArgumentError):
        g.add_fact("k", "  ", **S, timestamp=1)


def test_timestamps_accept_datetimes() -> None:
    g = MemoryGraph()
    t = datetime(2026, 10, 14, 9, 0, tzinfo=UTC)
    e, _ = g.add_episode(7, "Alice uses Docker", t, **S)
    assert e[0].first_seen == 1_791_968_400_000_000
    assert "2026-10-14 09:00" in g.to_text()


@pytest.mark.parametrize(
    "call",
    [
        lambda g: g.add_episode(True, "x", 0, **S),
        lambda g: g.add_episode("1", "x", 0, **S),
        lambda g: g.add_episode(1, None, 0, **S),
        lambda g: g.add_episode(1, "x", 0, user_id=""),
        lambda g: g.add_episode(1, "x", 0, user_id="a\nb"),
        lambda g: g.add_episode(1, "x", "yesterday", **S),
        lambda g: g.entities(user_id=3),
    ],
)
def test_invalid_arguments(call: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        call(MemoryGraph())


# ------------------------------------------------------------------------------ persistence and text


def _sample() -> MemoryGraph:
    g = MemoryGraph()
    g.add_episode(1, "Alice works at Acme Corp and uses Docker, port 8080.", 100, agent_id="a", user_id="u1")
    g.add_episode(2, "我们用 Redis 做缓存，张三负责后端。", 200, agent_id="a", user_id="u1")
    g.add_episode(3, "Bob prefers Podman.", 300, agent_id="a", user_id="u2")
    g.add_fact("database", "PostgreSQL", agent_id="a", user_id="u1", timestamp=400)
    return g


def test_encode_decode_round_trip() -> None:
    g = _sample()
    data = g.encode()
    h = MemoryGraph.decode(data)
    assert h == g and h.encode() == data
    assert h.entities() == g.entities() and h.relations() == g.relations()
    assert h.neighbours("redis", agent_id="a", user_id="u1") == g.neighbours("redis", agent_id="a", user_id="u1")
    assert h.to_text() == g.to_text()
    # the indexes are rebuilt: removal and replacement behave as on the original
    g.remove_sources([2])
    h.remove_sources([2])
    assert h == g and h.entity("张三", agent_id="a", user_id="u1") is None
    g.add_fact("database", "MySQL", agent_id="a", user_id="u1", timestamp=500)
    h.add_fact("database", "MySQL", agent_id="a", user_id="u1", timestamp=500)
    assert h.encode() == g.encode()
    assert h != MemoryGraph() and MemoryGraph.decode(MemoryGraph().encode()) == MemoryGraph()


def test_encoding_is_plain_msgpack() -> None:
    data = _sample().encode()
    assert b"pickle" not in data and not data.startswith(b"\x80")  # no pickle protocol header
    raw = msgspec.msgpack.decode(data)
    assert raw["format"] == 1 and [s[0] for s in raw["scopes"]] == ["a/u1", "a/u2"]


def test_decode_rejects_bad_bytes() -> None:
    with pytest.raises(StoreCorruptedError):
        MemoryGraph.decode(b"\x00garbage")
    with pytest.raises(StoreCorruptedError):
        MemoryGraph.decode(msgspec.msgpack.encode({"format": 1, "scopes": [["s", {}, [["x", "p", "y", {}, {}]]]]}))
    with pytest.raises(StoreVersionError):
        MemoryGraph.decode(msgspec.msgpack.encode({"format": 99, "scopes": []}))


def test_to_text_lists_entities_and_relations() -> None:
    g = _sample()
    text = g.to_text(agent_id="a", user_id="u1")
    assert text.startswith("[a/u1] ")
    assert "a/u2" not in text and "Podman" not in text
    assert "Alice (person) x1, episodes 1" in text
    assert "Alice -[works_at]-> Acme Corp (weight 1; episodes 1)" in text
    assert "team -[uses]-> Redis" in text and "张三 -[responsible_for]-> 后端" in text
    assert "user -[database]-> PostgreSQL (weight 1; facts database)" in text
    assert text.index("-[works_at]->") < text.index("-[mentioned_with]->")  # statements first
    everything = g.to_text()
    assert "[a/u1]" in everything and "[a/u2]" in everything and "Bob -[prefers]-> Podman" in everything
    assert g.to_text(agent_id="nobody", user_id="here") == "[nobody/here] (empty)"
    sub = g.neighbours("Alice", agent_id="a", user_id="u1").to_text()
    assert sub.startswith("[a/u1] around Alice (depth 1)") and "Acme Corp" in sub


# ------------------------------------------------------------------------------ drawing


def test_draw_png(tmp_path: Path) -> None:
    pytest.importorskip("networkx")
    pytest.importorskip("matplotlib")
    g = _sample()
    out = tmp_path / "graph.png"
    g.draw(out, agent_id="a", user_id="u1")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    near = tmp_path / "near.png"
    g.draw(near, agent_id="a", user_id="u1", entity="Redis", depth=1)
    assert near.read_bytes()[:4] == b"\x89PNG"
    empty = tmp_path / "empty.png"
    MemoryGraph().draw(empty)
    assert empty.read_bytes()[:4] == b"\x89PNG"


def test_draw_svg(tmp_path: Path) -> None:
    pytest.importorskip("networkx")
    pytest.importorskip("matplotlib")
    out = tmp_path / "graph.svg"
    _sample().draw(str(out))  # every scope
    text = out.read_text()
    assert "<svg" in text and "</svg>" in text


def test_draw_arguments_and_missing_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    g = _sample()
    with pytest.raises(InvalidArgumentError):
        g.draw(tmp_path / "graph.jpg")
    monkeypatch.setitem(sys.modules, "networkx", None)  # as if not installed
    with pytest.raises(ImportError, match=r"trimem\[graph\]"):
        g.draw(tmp_path / "graph.png")
    assert not (tmp_path / "graph.png").exists()


# ------------------------------------------------------------------------------ LLM extractor


def test_llm_extractor_valid_json() -> None:
    seen: list[str] = []

    def fake(text: str) -> str:
        seen.append(text)
        return (
            "```json\n"
            + json.dumps(
                {
                    "entities": [
                        {"name": "Alice", "type": "person"},
                        "Acme",
                        {"name": "Rust", "type": "Programming Language"},
                    ],
                    "relations": [
                        {"subject": "Alice", "predicate": "works for", "object": "Acme"},
                        ["Alice", "负责", "Rust"],
                        ["Acme", "funds", "OpenBSD"],  # an endpoint not listed becomes an entity
                    ],
                }
            )
            + "\n```"
        )

    g = MemoryGraph(extractor=fake)
    e, r = g.add_episode(1, "Alice works for Acme. Rust everywhere.", 5, **S)
    assert seen == ["Alice works for Acme. Rust everywhere."]
    assert [(x.name, x.type) for x in e] == [
        ("Alice", "person"),
        ("Acme", "thing"),
        ("Rust", "programming_language"),
        ("OpenBSD", "thing"),
    ]
    assert stated(r) == [
        ("Alice", "works_at", "Acme"),
        ("Alice", "responsible_for", "Rust"),
        ("Acme", "funds", "OpenBSD"),
    ]
    weights = {(x.subject, x.object): x.weight for x in r if x.predicate == MENTIONED_WITH}
    assert weights[("Acme", "Alice")] == 1.0 and weights[("Alice", "Rust")] == 0.5
    assert weights[("Acme", "OpenBSD")] == 0.5  # not found in the text: same episode only


def test_llm_extractor_mapping_reply() -> None:
    g = MemoryGraph(extractor=lambda text: {"entities": ["张三", "后端"], "relations": [["张三", "负责", "后端"]]})
    g.add_episode(1, "张三负责后端", 0, **S)
    assert stated(g.relations(**S)) == [("张三", "responsible_for", "后端")]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("not json at all", "not JSON"),
        ("[1, 2]", "must return an object"),
        (42, "must return an object"),
        ('{"relations": []}', "'entities' must be a list"),
        ('{"entities": "Alice"}', "'entities' must be a list"),
        ('{"entities": [], "relations": {}}', "'relations' must be a list"),
        ('{"entities": [42]}', r"entities\[0\]: a name must be a string"),
        ('{"entities": [{"name": ""}]}', r"entities\[0\]: invalid name"),
        ('{"entities": [{"name": "x", "type": "a type!"}]}', r"entities\[0\]: invalid type"),
        ('{"entities": ["' + "x" * 81 + '"]}', r"entities\[0\]: invalid name"),
        ('{"entities": ["a\\u0007b"]}', r"entities\[0\]: invalid name"),
        ('{"entities": ["a"], "relations": [["a", "b"]]}', r"relations\[0\]"),
        (
            '{"entities": ["a"], "relations": [{"subject": "a", "predicate": "x y z!", "object": "b"}]}',
            r"relations\[0\]: invalid predicate",
        ),
        (
            '{"entities": ["a"], "relations": [{"subject": "a", "predicate": 3, "object": "b"}]}',
            r"relations\[0\]: predicate must be a string",
        ),
        ('{"entities": [' + ",".join(f'"e{i}"' for i in range(501)) + "]}", "at most 500"),
    ],
)
def test_llm_extractor_malformed_output(reply: object, message: str) -> None:
    g = MemoryGraph(extractor=lambda text: reply)
    with pytest.raises(GraphExtractionError, match=message) as info:
        g.add_episode(1, "Alice", 0, **S)
    assert isinstance(info.value, InvalidArgumentError) and isinstance(info.value, ValueError)
    assert len(g) == 0  # nothing half-added


def test_llm_extractor_errors_propagate_and_keep_the_old_episode() -> None:
    g = MemoryGraph()
    g.add_episode(1, "Alice uses Docker", 0, **S)

    def broken(text: str) -> str:
        raise TimeoutError("model timed out")

    g.extractor = broken
    with pytest.raises(TimeoutError):
        g.add_episode(1, "Bob uses Podman", 1, **S)
    assert [e.name for e in g.entities(**S)] == ["Alice", "Docker"]


def test_parse_extraction_counts_mentions() -> None:
    text = "docker, Docker and DOCKER. Later docker in Google 用缓存."
    x = parse_extraction({"entities": ["Docker", "Go", "缓存"]}, text)
    assert [(e.mentions, e.sentences) for e in x.entities] == [(4, [0, 1]), (1, []), (1, [1])]
    assert parse_extraction({"entities": ["Docker"], "relations": [["Docker", "is", "docker"]]}, "").relations == []


# ------------------------------------------------------------------------------ forgetting, as a property

POOL = [
    "Alice uses Docker and Kafka.",
    "Bob prefers Podman over Docker.",
    "Carol works at Initech and likes Kafka.",
    "我们用 Redis 做缓存，张三负责后端。",
    "张三喜欢 Docker",
    "Docker runs on Ubuntu, port 8080.",
    "The `deploy_app` job depends on Terraform v1.6.0.",
    "I use Vim.",
]


@settings(max_examples=60, deadline=None)
@given(
    adds=st.lists(st.tuples(st.integers(1, 6), st.integers(0, len(POOL) - 1), st.integers(0, 1000)), max_size=12),
    removed=st.sets(st.integers(1, 6)),
)
def test_removal_equals_never_having_added(adds: list[tuple[int, int, int]], removed: set[int]) -> None:
    """Adding episodes then forgetting some leaves what adding only the others would: the same
    entities, mentions, provenance, first/last sighting and relation weights."""
    g = MemoryGraph()
    last: dict[int, tuple[int, int]] = {}
    for eid, text, ts in adds:
        g.add_episode(eid, POOL[text], ts, **S)
        last[eid] = (text, ts)
    g.remove_sources(removed)
    fresh = MemoryGraph()
    for eid, (text, ts) in last.items():
        if eid not in removed:
            fresh.add_episode(eid, POOL[text], ts, **S)

    def view(m: MemoryGraph) -> tuple[Any, Any]:
        es = sorted((e.name.casefold(), e.mentions, e.sources, e.first_seen, e.last_seen) for e in m.entities())
        rs = sorted(
            (r.subject.casefold(), r.predicate, r.object.casefold(), r.weight, r.sources, r.first_seen, r.last_seen)
            for r in m.relations()
        )
        return es, rs

    assert view(g) == view(fresh)


def test_details_false_and_out_of_order_ids() -> None:
    """``details=False`` skips the snapshots, not the work; provenance stays in id order."""
    full, bare = MemoryGraph(), MemoryGraph()
    for eid in (5, 2, 9, 1):
        full.add_episode(eid, "Alice uses Docker", eid * 10, **S)
        assert bare.add_episode(eid, "Alice uses Docker", eid * 10, **S, details=False) == ([], [])
    assert full == bare
    docker = bare.entity("docker", **S)
    assert docker is not None and (docker.sources, docker.first_seen, docker.last_seen) == ([1, 2, 5, 9], 10, 90)
    # an episode that names nothing adds no scope
    bare.add_episode(10, "ok, thanks", 0, agent_id="other", user_id="u")
    assert bare.scopes() == ["default/u1"]
