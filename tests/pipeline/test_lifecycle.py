"""The memory lifecycle on `Memory`: reinforcement and decay in ranking (with explain),
dedup, consolidation, retention, routing, layered recall, sharing, stats, export/import,
point-in-time recall and perceptual memory — English and Chinese where text matters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import ClassVar

import numpy as np
import pytest

from tests.conftest import REPO_ROOT, backend_of, store_of
from trimem import Memory, Policy
from trimem.errors import InvalidArgumentError, StoreCorruptedError, UnknownIdError
from trimem.pipeline.lifecycle import Expired

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def plain(**kw: object) -> Memory:
    """Keyword-only memory without dedup, so equal texts stay two records."""
    return Memory(embedder=None, policy=Policy(dedup=False), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text,query",
    [
        ("Deploy checklist: run the database migrations first", "deploy checklist migrations"),
        ("部署清单：先运行数据库迁移", "部署清单 数据库迁移"),
    ],
)
def test_a_reinforced_memory_overtakes_an_equally_relevant_unused_one(text: str, query: str) -> None:
    mem = plain()
    a = mem.retain(text, user_id="u", session_id="s1", timestamp=NOW - DAY)
    b = mem.retain(text, user_id="u", session_id="s2", timestamp=NOW - DAY)
    first = mem.search(query, user_id="u", now=NOW)
    assert [r.episode.id for r in first] == [a.id, b.id]  # equal: the tie goes to the older id
    for _ in range(3):  # three recalls that return only b (same_session limits them to s2)
        bundle = mem.recall(query, user_id="u", session_id="s2", same_session=True, now=NOW)
        assert [r.episode.id for r in bundle.episodes] == [b.id]
    after = mem.search(query, user_id="u", now=NOW)
    assert [r.episode.id for r in after] == [b.id, a.id]
    eb, ea = after[0].explain, after[1].explain
    assert (eb["accesses"], ea["accesses"]) == (3, 0)
    assert eb["importance"] == pytest.approx(0.8) and ea["importance"] == pytest.approx(0.5)
    assert eb["importance_term"] - ea["importance_term"] == pytest.approx(Policy().importance_weight * 0.3)
    # Each explain adds up to the score.
    for e in (ea, eb):
        assert e["relevance"] + e["decay_term"] + e["importance_term"] == pytest.approx(e["score"], abs=1e-6)


def test_a_stale_memory_fades_and_use_refreshes_it() -> None:
    mem = plain()
    old = mem.retain(
        "The staging VPN password rotates monthly", user_id="u", session_id="old", timestamp=NOW - 300 * DAY
    )
    new = mem.retain("The staging VPN password rotates monthly", user_id="u", timestamp=NOW - DAY)
    hits = mem.search("staging vpn password", user_id="u", now=NOW)
    assert [r.episode.id for r in hits] == [new.id, old.id]  # the older id loses despite the tie rule
    half_life = Policy().half_life_days["episodic"]
    assert hits[0].explain["decay"] == pytest.approx(0.5 ** (1 / half_life), rel=1e-4)
    assert hits[1].explain["decay"] == pytest.approx(0.5 ** (300 / half_life), rel=1e-3)
    # Recalling the old one counts as a use: its age now runs from that use.
    mem.recall("staging vpn password", user_id="u", session_id="old", same_session=True, now=NOW)
    hits = mem.search("staging vpn password", user_id="u", now=NOW)
    assert [r.episode.id for r in hits] == [old.id, new.id]
    assert hits[0].explain["decay"] == pytest.approx(1.0)


def test_defaults_keep_relevance_dominant() -> None:
    """A fresh, fully important memory gains at most 0.0015 over old unimportant ones: it passes
    those of near-equal relevance, never one more relevant by more than that."""
    mem = plain()
    old = [
        mem.retain(
            f"kafka consumer lag alert number {i} on the payments topic {'kafka ' * (6 - i)}",
            user_id="u",
            timestamp=NOW - 300 * DAY,
            importance=0.0,
        )
        for i in range(6)
    ]
    fresh = mem.retain("kafka lag seen on the payments topic", user_id="u", timestamp=NOW, importance=1.0)
    hits = mem.search("kafka consumer lag", user_id="u", k=10, now=NOW)
    assert len(hits) == len(old) + 1
    ex = {r.episode.id: r.explain for r in hits}
    gain = ex[fresh.id]["decay_term"] + ex[fresh.id]["importance_term"]
    assert gain == pytest.approx(0.0015, rel=1e-3)
    order = [r.episode.id for r in hits]
    for other in (e.id for e in old):
        lead = ex[other]["relevance"] - ex[fresh.id]["relevance"]
        if lead > 0.0015:
            assert order.index(other) < order.index(fresh.id)
    # Among equally fresh and important items, the order is relevance alone.
    rest = [i for i in order if i != fresh.id]
    assert rest == sorted(rest, key=lambda i: -ex[i]["relevance"])


@pytest.mark.parametrize("embedder", [None, "hashing"])
@pytest.mark.parametrize(
    "first,again",
    [
        (
            "We moved the billing service from Heroku to Fly.io after the outage",
            "we moved the billing service from heroku to fly.io, after the outage!",
        ),
        ("我们在故障之后把计费服务从 Heroku 迁移到了 Fly.io", "我们在故障之后把计费服务从Heroku迁移到了Fly.io。"),
    ],
)
def test_a_duplicate_reinforces_instead_of_piling_up(tmp_path, embedder: str | None, first: str, again: str) -> None:
    with Memory(tmp_path / "m", embedder=embedder) as mem:
        a = mem.retain(first, user_id="u", timestamp=NOW - DAY)
        b = mem.retain(again, user_id="u", timestamp=NOW)
        other = mem.retain("My favourite editor is Vim", user_id="u", timestamp=NOW)
        assert b.id == a.id and other.id != a.id
        assert mem.stats(user_id="u").episodic == mem.stats(user_id="u").episodic
        assert mem.stats(user_id="u").episodes == 2
        assert mem.retain(first, user_id="v").id != a.id  # another user's memory is separate
    with Memory(tmp_path / "m", embedder=embedder) as mem:  # replayed from the log: same decisions
        assert mem.stats(user_id="u").episodes == 2
        hit = mem.search(first, user_id="u", now=NOW)[0]
        assert hit.episode.id == a.id and hit.explain["mentions"] == 1
        mem.checkpoint()
    with Memory(tmp_path / "m", embedder=embedder) as mem:  # from the snapshot
        assert mem.retain(again, user_id="u").id == a.id
        assert mem.search(first, user_id="u", now=NOW)[0].explain["mentions"] == 2


def test_texts_that_differ_in_one_token_are_not_duplicates() -> None:
    # Each pair's token sets share a bit of the engine's 256-bit sketch, which reads them as equal;
    # the exact check on the stored text keeps both (no memory is lost to a merge).
    mem = Memory(embedder=None)
    for older, newer in [
        ("allocated space episode 9", "allocated space episode 12"),
        ("I collect fossils, have done for years.", "I collect kites, have done for years."),
    ]:
        first = mem.retain(older, user_id="u")
        second = mem.retain(newer, user_id="u")
        assert second.id != first.id and second.mention is None
        assert {e.text for e in mem.episodes(user_id="u")} >= {older, newer}


def test_dedup_can_be_turned_off() -> None:
    mem = plain()
    assert mem.retain("same words here", user_id="u").id != mem.retain("same words here", user_id="u").id


def test_consolidation_at_the_bound_on_demand_and_at_session_end() -> None:
    mem = Memory(embedder=None, policy=Policy(working_bound=5))
    t = datetime.now(UTC) - timedelta(hours=1)  # working memory lives 24 h by the clock
    for i in range(7):  # 2 pushed out: turn 0 (important) and turn 1 (not)
        mem.add_turn(
            "s",
            "user",
            f"turn {i} about the kafka cluster",
            user_id="u",
            importance=0.9 if i % 2 == 0 else 0.1,
            timestamp=t + i * timedelta(minutes=1),
        )
    eps = mem.episodes(user_id="u")
    assert [e.text for e in eps] == ["turn 0 about the kafka cluster"]
    assert eps[0].session_id == "s" and eps[0].timestamp == int((t.timestamp()) * 1e6)
    assert len(mem.working("s")) == 5
    res = mem.consolidate("s", user_id="u")  # on demand: every live item
    assert [e.text.split()[1] for e in res.kept] == ["2", "4", "6"] and res.expired == 2
    assert len(mem.working("s")) == 0
    mem.add_turn("s", "user", "Remember: the on-call rota changes every Monday", user_id="u")  # router importance
    mem.add_turn("s", "user", "ok", user_id="u")
    ended = mem.end_session("s", user_id="u")
    assert ended is not None and [e.text for e in ended.kept] == ["Remember: the on-call rota changes every Monday"]
    assert ended.expired == 1 and "s" not in mem._sessions


def test_forget_expired_applies_retention_per_layer(tmp_path) -> None:
    with Memory(tmp_path / "m", embedder=None, policy=Policy(dedup=False)) as mem:
        stale = mem.retain("old unimportant note about parking", user_id="u", timestamp=NOW - 40 * DAY, importance=0.0)
        kept_important = mem.retain(
            "old but important: prod db is in eu-west-1", user_id="u", timestamp=NOW - 60 * DAY, importance=0.9
        )  # lives 30·(1+1.8) days
        used = mem.retain("old note about the lunch menu", user_id="u", timestamp=NOW - 40 * DAY, importance=0.0)
        mem.recall("lunch menu", user_id="u", now=NOW - 2 * DAY)  # a use two days ago keeps it
        fresh = mem.retain("new note", user_id="u", timestamp=NOW - DAY, importance=0.0)
        doc = mem.knowledge.add("Holiday policy 2024", timestamp=NOW - 400 * DAY)
        mem.add_turn("s", "user", "scratch", user_id="u", importance=0.0, timestamp=NOW - 3 * DAY)
        mem.facts.set("old_laptop", "thinkpad", user_id="u", at=NOW - 800 * DAY)  # lives 365·2 days
        mem.facts.set("os", "linux", user_id="u", at=NOW - 800 * DAY)
        mem.facts.pin("os", user_id="u")  # pinned: stays
        mem.facts.set("editor", "vim", user_id="u", at=NOW - 100 * DAY)
        gone = mem.forget_expired(now=NOW)
        assert gone == Expired(episodes=1, knowledge=1, facts=1, working=1)
        assert mem.facts.get("old_laptop", user_id="u") is None and mem.facts.history("old_laptop", user_id="u") == []
        assert mem.facts.get("os", user_id="u") is not None and mem.facts.get("editor", user_id="u") is not None
        ids = {e.id for e in mem.episodes(user_id="u")}
        assert stale.id not in ids and {kept_important.id, used.id, fresh.id} <= ids
        assert mem.knowledge.get(doc.id) is None
        assert mem.forget_expired(now=NOW) == Expired(episodes=0, knowledge=0, facts=0, working=0)
    with Memory(tmp_path / "m", embedder=None) as mem:
        assert stale.id not in {e.id for e in mem.episodes(user_id="u")}
        assert mem.facts.history("old_laptop", user_id="u") == []


@pytest.mark.parametrize(
    "text,layer,kind",
    [
        ("My favourite editor is Vim", "semantic", "fact"),
        ("我的邮箱是 a@b.com", "semantic", "fact"),
        ("PostgreSQL uses MVCC for concurrency", "semantic", "knowledge"),
        ("Python 的 GIL 限制了多线程并行", "semantic", "knowledge"),
        ("Yesterday I deployed v2 to prod", "episodic", "episode"),
        ("昨天我把服务部署到了生产环境", "episodic", "episode"),
        ("wait a second", "working", "turn"),
        ("稍等", "working", "turn"),
    ],
)
def test_add_routes_each_item_to_its_layer(text: str, layer: str, kind: str) -> None:
    mem = Memory(embedder=None)
    placed = mem.add(text, user_id="u", session_id="s")
    assert (placed.layer, placed.kind) == (layer, kind) and placed.reason
    if kind == "fact":
        assert mem.facts.get(placed.item.key, user_id="u").value == placed.item.value
    elif kind == "knowledge":
        assert mem.knowledge.get(placed.item.id).user_id == "u"
    elif kind == "episode":
        assert mem.get(placed.item.id).text == text
    else:
        assert [t.text for t in mem.working("s").recent()] == [text]


def test_add_without_a_session_keeps_transient_items_as_episodes() -> None:
    placed = Memory(embedder=None).add("wait a second", user_id="u")
    assert placed.layer == "episodic" and "no session" in placed.reason


def test_layered_recall_reads_working_memory_first() -> None:
    mem = Memory(embedder=None)
    mem.retain("The staging cluster runs Kubernetes 1.29", user_id="u", timestamp=NOW - DAY)
    mem.add_turn("s", "user", "the staging cluster is down right now", user_id="u", importance=0.2)
    enough = mem.recall("is the staging cluster down?", user_id="u", session_id="s", layered=True, now=NOW)
    assert enough.layers == ["working"] and not enough.episodes
    assert [t.text for t in enough.working] == ["the staging cluster is down right now"]
    more = mem.recall("which kubernetes version does staging run?", user_id="u", session_id="s", layered=True, now=NOW)
    assert more.layers == ["working", "semantic", "episodic"] and more.episodes
    forced = mem.recall(
        "is the staging cluster down?",
        user_id="u",
        session_id="s",
        layered=True,
        now=NOW,
        enough=lambda q, turns: False,
    )
    assert "episodic" in forced.layers


def test_rerank_hook_reorders_fused_candidates() -> None:
    mem = Memory(embedder=None)
    for i, t in enumerate(["redis cache eviction policy", "redis cache sizing for sessions", "redis cache tls"]):
        mem.retain(t, user_id="u", timestamp=NOW - (i + 1) * DAY)
    calls: list[int] = []

    def prefer_tls(query: str, texts: list[str]) -> list[float]:
        calls.append(len(texts))
        return [1.0 if "tls" in t else 0.0 for t in texts]

    b = mem.recall("redis cache", user_id="u", k=2, rerank=prefer_tls, now=NOW)
    assert b.episodes[0].episode.text == "redis cache tls" and b.episodes[0].explain["rerank"] == 1.0
    assert len(b.episodes) == 2 and calls == [3]
    with pytest.raises(InvalidArgumentError):
        mem.recall("redis cache", user_id="u", rerank=lambda q, t: [0.0], now=NOW)


def test_share_copies_selected_memories_with_provenance_and_decay() -> None:
    mem = Memory(embedder="hashing")
    keep = mem.retain("Customer prefers email over phone", user_id="u", agent_id="sales", importance=0.9)
    mem.retain("Small talk about the weather", user_id="u", agent_id="sales", importance=0.2)
    mem.retain("Another user's secret", user_id="v", agent_id="sales", importance=1.0)
    shared = mem.share(from_agent="sales", to_agent="support", user_id="u", now=NOW)
    assert [e.text for e in shared] == [keep.text]
    e = shared[0]
    assert e.agent_id == "support" and e.importance == pytest.approx(0.9 * 0.8)
    assert e.metadata["shared_from"]["agent_id"] == "sales" and e.metadata["shared_from"]["episode_id"] == keep.id
    assert [r.episode.id for r in mem.search("email or phone", user_id="u", agent_id="support")] == [e.id]
    assert mem.search("secret", user_id="v", agent_id="support") == []
    assert len(mem.episodes(user_id="u", agent_id="sales")) == 2  # the source is unchanged
    with pytest.raises(UnknownIdError):
        mem.share(from_agent="sales", to_agent="support", user_id="u", episode_ids=[10_000])
    with pytest.raises(InvalidArgumentError):
        mem.share(from_agent="sales", to_agent="sales", user_id="u")


def test_stats_per_layer_and_user() -> None:
    mem = Memory(embedder=None)
    mem.retain("a", user_id="u", timestamp=NOW - 10 * DAY)
    mem.retain("b", user_id="u", timestamp=NOW - 2 * DAY)
    mem.retain("c", user_id="v", timestamp=NOW)
    mem.facts.set("editor", "vim", user_id="u")
    mem.facts.set("editor", "helix", user_id="u")
    s = mem.stats(user_id="u", now=NOW)
    assert s.episodic.count == 2 and s.episodic.bytes > 0
    assert s.episodic.oldest_days == pytest.approx(10) and s.episodic.newest_days == pytest.approx(2)
    assert s.semantic.facts == 1 and s.semantic.fact_versions == 2
    everyone = mem.stats(now=NOW)
    assert everyone.episodes == 3 and everyone.users == {"default/u": 2, "default/v": 1}


def test_export_and_import_round_trip(tmp_path) -> None:
    src = Memory(embedder="hashing")
    e1 = src.retain("Moved billing to Fly.io", user_id="u", timestamp=NOW - 3 * DAY, importance=0.8)
    src.retain("用户喜欢深色模式", user_id="u", timestamp=NOW - DAY)
    src.facts.set("host", "fly.io", user_id="u", source=[e1.id], at=NOW - 3 * DAY)
    src.facts.set("host", "render", user_id="u", at=NOW - DAY)
    src.knowledge.add("Private runbook for u", user_id="u")
    src.recall("billing fly.io", user_id="u", now=NOW)
    src.retain("someone else", user_id="v")
    written = src.export(tmp_path / "u.tmx", user_id="u")
    assert (written.episodes, written.facts, written.knowledge) == (2, 1, 1) and written.bytes > 0
    dst = Memory(embedder="hashing")
    dst.retain("already here", user_id="w")
    got = dst.import_from(tmp_path / "u.tmx")
    assert (got.episodes, got.facts, got.knowledge) == (2, 1, 1)
    assert sorted(e.text for e in dst.episodes(user_id="u")) == sorted(e.text for e in src.episodes(user_id="u"))
    assert [v.value for v in dst.facts.history("host", user_id="u")] == ["fly.io", "render"]
    new_e1 = next(e for e in dst.episodes(user_id="u") if e.text == e1.text)
    assert dst.facts.history("host", user_id="u")[0].source == [new_e1.id]
    assert dst.episodes(user_id="v") == []
    a = [(r.episode.text, round(r.scored.cosine or 0, 5)) for r in src.search("billing", user_id="u", now=NOW)]
    b = [(r.episode.text, round(r.scored.cosine or 0, 5)) for r in dst.search("billing", user_id="u", now=NOW)]
    assert a == b and dst.search("billing", user_id="u", now=NOW)[0].explain["accesses"] >= 1
    (tmp_path / "bad.tmx").write_bytes(b"\x93not an export")
    with pytest.raises(StoreCorruptedError):
        dst.import_from(tmp_path / "bad.tmx")


def test_import_restores_use_counts_durably(tmp_path) -> None:
    src = Memory(embedder=None)
    first = src.retain("The staging database is Postgres 16", user_id="u", timestamp=NOW - DAY)
    src.retain("The staging database is Postgres 16", user_id="u", timestamp=NOW)  # a mention
    src.recall("staging database", user_id="u", now=NOW)  # an access
    before = src.search("staging database", user_id="u", now=NOW)[0].explain
    assert (before["accesses"], before["mentions"]) == (1, 1)
    src.export(tmp_path / "u.tmx", user_id="u")
    with Memory(tmp_path / "dst", embedder=None) as dst:
        dst.import_from(tmp_path / "u.tmx")
    with Memory(tmp_path / "dst", embedder=None) as reopened:
        [hit] = reopened.search("staging database", user_id="u", now=NOW)
        assert hit.episode.text == first.text
        assert (hit.explain["accesses"], hit.explain["mentions"]) == (1, 1)


def test_recall_as_of_answers_with_what_was_known_then() -> None:
    mem = Memory(embedder=None)
    mem.facts.set("database", "mysql", user_id="u", at=NOW - 30 * DAY)
    mem.facts.set("database", "postgres", user_id="u", at=NOW - 5 * DAY)
    old = mem.retain("We chose MySQL for the database", user_id="u", timestamp=NOW - 30 * DAY)
    mem.retain("We migrated the database to Postgres", user_id="u", timestamp=NOW - 5 * DAY)
    then = mem.recall("which database do we use?", user_id="u", as_of=NOW - 10 * DAY)
    assert [f.value for f in then.profile] == ["mysql"]
    assert [r.episode.id for r in then.episodes] == [old.id]
    assert then.episodes[0].explain["accesses"] == 0  # a look into the past counts no use
    today = mem.recall("which database do we use?", user_id="u", now=NOW)
    assert [f.value for f in today.profile] == ["postgres"] and len(today.episodes) == 2


class Colour:
    """A tiny image encoder: mean RGB of an (h, w, 3) array, padded to 4-d."""

    name, dim = "mean-rgb", 4

    def __call__(self, items: list[np.ndarray]) -> np.ndarray:
        return np.array([[*np.asarray(x, np.float32).reshape(-1, 3).mean(axis=0), 0.01] for x in items], np.float32)


class ColourWords:
    name, dim = "colour-words", 4
    table: ClassVar[dict[str, list[float]]] = {
        "red": [1, 0, 0, 0.01],
        "green": [0, 1, 0, 0.01],
        "blue": [0, 0, 1, 0.01],
    }

    def __call__(self, items: list[str]) -> np.ndarray:
        return np.array([self.table.get(t, [0.3, 0.3, 0.3, 1]) for t in items], np.float32)


def test_perceptual_memory_is_durable_through_the_memory_log(tmp_path) -> None:
    red, blue = np.zeros((2, 2, 3)), np.zeros((2, 2, 3))
    red[..., 0], blue[..., 2] = 1, 1
    with Memory(tmp_path / "m", embedder=None) as mem:
        mem.perceptual.register("image", Colour(), space="rgb")
        mem.perceptual.register("text", ColourWords(), space="rgb")
        r = mem.perceptual.add("image", red, user_id="u", caption="a red square")
        mem.perceptual.add("image", blue, user_id="u")
        kept = mem.perceptual.add("image", blue, user_id="v")
    with Memory(tmp_path / "m", embedder=None) as mem:  # replayed from the log
        mem.perceptual.register("text", ColourWords(), space="rgb")
        hits = mem.perceptual.search("red", modality="text", target="image", user_id="u")
        assert hits[0].record.id == r.id
        mem.checkpoint()
    with Memory(tmp_path / "m", embedder=None) as mem:  # from the snapshot
        mem.perceptual.register("text", ColourWords(), space="rgb")
        assert mem.perceptual.search("blue", modality="text", user_id="u")[0].record.id == r.id + 1
        mem.forget(user_id="u", everything=True)  # the user's percepts go with the rest, in one write
        assert len(mem.perceptual) == 1 and mem.perceptual.records(user_id="u") == []
    with Memory(tmp_path / "m", embedder=None) as mem:  # the forget replayed from the log
        assert [r.id for r in mem.perceptual.records(user_id="v")] == [kept.id]
        assert mem.perceptual.records(user_id="u") == []


def test_use_counts_survive_a_reopen(tmp_path) -> None:
    with Memory(tmp_path / "m", embedder=None) as mem:
        e = mem.retain("the release train leaves on thursdays", user_id="u")
        for _ in range(3):
            mem.recall("release train", user_id="u")
    with Memory(tmp_path / "m", embedder=None) as mem:
        assert mem.search("release train", user_id="u")[0].explain["accesses"] == 3
        assert mem.search("release train", user_id="u")[0].episode.id == e.id


def test_policy_validation() -> None:
    with pytest.raises(InvalidArgumentError):
        Policy(decay_weight=-1)
    with pytest.raises(InvalidArgumentError):
        Policy(half_life_days={"working": 1, "episodic": 0, "semantic": 1})
    with pytest.raises(InvalidArgumentError):
        Policy(consolidate_importance=2)


def test_memory_graph_follows_episodes_facts_and_forgets(tmp_path) -> None:
    with Memory(tmp_path / "m", embedder=None) as mem:
        a = mem.retain("Alice uses PostgreSQL for the billing service", user_id="u")
        mem.retain("我们用 Redis 做缓存", user_id="u")
        mem.retain("Bob uses MongoDB", user_id="v")
        mem.facts.set("editor", "vim", user_id="u")
        g = mem.graph
        names = {e.name for e in g.entities(user_id="u")}
        assert {"Alice", "PostgreSQL", "Redis", "Vim"} <= names and "Bob" not in names
        assert ("Alice", "uses", "PostgreSQL") in {(r.subject, r.predicate, r.object) for r in g.relations(user_id="u")}
        mem.retain("Alice prefers Grafana dashboards", user_id="u")  # picked up on the next read
        mem.facts.set("editor", "helix", user_id="u")
        names = {e.name for e in mem.graph.entities(user_id="u")}
        assert "Grafana" in names and "Helix" in {n.title() for n in names} and "Vim" not in names
        mem.forget([a.id], user_id="u")
        assert "PostgreSQL" not in {e.name for e in mem.graph.entities(user_id="u")}
        mem.checkpoint()
    with Memory(tmp_path / "m", embedder=None) as mem:
        names = {e.name for e in mem.graph.entities(user_id="u")}
        assert "Grafana" in names and "PostgreSQL" not in names
        mem.forget(user_id="v", everything=True)
        assert "default/v" not in mem.graph.scopes()


def test_lifecycle_benchmark_runs_and_reports_ratios() -> None:
    """The benchmark behind the issue's cost targets runs (tiny sizes; no time is asserted)."""
    import subprocess
    import sys

    script = REPO_ROOT / "benches" / "lifecycle_perf.py"
    out = subprocess.run(
        [sys.executable, str(script), "--n", "2000", "--rounds", "1"], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("-> ratio") == 5


def test_bad_input_to_the_lifecycle_api_is_refused_and_changes_nothing(tmp_path) -> None:
    from trimem.errors import InvalidNameError, TrimemError

    mem = Memory(embedder=None)
    mem.retain("keep me", user_id="u")
    before = mem.stats().episodes
    bad_calls = [
        lambda: mem.add("", user_id="u"),
        lambda: mem.add("   ", user_id="u"),
        lambda: mem.add(42, user_id="u"),  # type: ignore[arg-type]
        lambda: mem.add("x" * 100_001, user_id="u"),
        lambda: mem.add("fine", user_id="a/b"),
        lambda: mem.add("fine", user_id="u", context={"layer": "attic"}),
        lambda: mem.add_turn("s", "user", "", user_id="u"),
        lambda: mem.add_turn("s", "user", "fine", user_id="u", importance=1.5),
        lambda: mem.consolidate("s", user_id="bad/user"),
        lambda: mem.forget_expired(user_id="bad/user"),
        lambda: mem.share(from_agent="a", to_agent="b", user_id="u", decay=2.0),
        lambda: mem.share(from_agent="a/x", to_agent="b", user_id="u"),
        lambda: mem.recall("q", user_id="u", rerank_depth=0),
        lambda: mem.stats(user_id="bad/user"),
    ]
    for call in bad_calls:
        with pytest.raises((TrimemError, InvalidNameError, InvalidArgumentError)):
            call()
    assert mem.stats().episodes == before and len(mem.working("s")) == 0
    with pytest.raises(OSError):
        mem.import_from(tmp_path / "missing.tmx")
    with pytest.raises(OSError):
        mem.export(tmp_path / "no" / "such" / "folder" / "x.tmx")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("kind", ["disk_full", "short_write", "sync_fails"])
@pytest.mark.parametrize("write", ["retain", "fact"])
def test_use_counts_survive_a_failed_write(tmp_path, kind: str, write: str) -> None:
    """Pending use counts ride on the next write; when that write fails they are kept for the
    one after (a failed write must not lose what the memory acknowledged before it)."""
    from trimem.errors import StoreIOError

    with Memory(tmp_path / "m", embedder=None) as mem:
        e = mem.retain("the release train leaves on thursdays", user_id="u")
        mem.recall("release train", user_id="u")  # one use, pending for the log
        store_of(mem).inject_fault(kind)
        with pytest.raises(StoreIOError):
            if write == "retain":
                mem.retain("another note about lunch", user_id="u")
            else:
                mem.facts.set("city", "Faro", user_id="u")
        store_of(mem).clear_faults()
        assert mem.search("release train", user_id="u")[0].explain["accesses"] == 1
        mem.facts.set("editor", "vim", user_id="u")  # carries the pending count to the log
        assert backend_of(mem)._journal.pending_uses == 0
    with Memory(tmp_path / "m", embedder=None) as mem:
        hit = mem.search("release train", user_id="u")[0]
        assert hit.episode.id == e.id and hit.explain["accesses"] == 1
        assert mem.facts.get("city", user_id="u") is None


def test_purge_leaves_no_forgotten_fact_in_the_graph(tmp_path) -> None:
    with Memory(tmp_path / "m", embedder=None) as mem:
        mem.retain("Dana started at a new company", user_id="u")
        mem.facts.set("employer", "Zorblatt Industries", user_id="u")
        assert mem.graph is not None  # built, with the fact in it
        mem.forget(user_id="u", everything=True)
        mem.purge()
    folder = b"".join(p.read_bytes() for p in (tmp_path / "m").iterdir() if p.is_file())
    assert b"Zorblatt" not in folder


def test_consolidation_validates_like_retain() -> None:
    mem = Memory(embedder=None)
    with pytest.raises(InvalidArgumentError):  # refused before the turn lands, not at consolidation
        mem.add_turn("s", "user", "Remember: deploys happen on Fridays", user_id="u", agent_id="x/y", importance=0.9)
    with pytest.raises(InvalidArgumentError):
        mem.consolidate("s", user_id="u", agent_id="x/y")
    assert mem.episodes(user_id="u") == [] and len(mem.working("s")) == 0
    for text in ("Remember: deploys happen on Fridays", "Remember: the VPN needs a token"):
        mem.add_turn("t", "user", text, user_id="u", importance=0.9)
    kept = mem.consolidate("t", user_id="u").kept
    assert len(kept) == 2 and kept[0].metadata is not kept[1].metadata and kept[0].keywords == kept[1].keywords == ()


def test_share_reaches_a_threshold_equal_to_the_stored_importance() -> None:
    mem = Memory(embedder=None)
    mem.retain("Prefers dark mode", user_id="u", importance=0.7)  # stored as float32 0.69999999
    assert len(mem.share(from_agent="default", to_agent="b", user_id="u", min_importance=0.7)) == 1


def test_every_hit_of_a_search_is_explained_by_its_own_terms() -> None:
    from trimem.config import explain

    policy = Policy(decay_weight=0.01, importance_weight=0.02)
    mem = Memory(embedder="hashing", policy=policy)
    places = "Oslo Lima Quito Accra Hanoi Dakar Perth Cork Bern Riga Kyiv Baku".split()
    for i, place in enumerate(places):
        mem.retain(f"the release train to {place} leaves at gate {i}", user_id="u", importance=(i % 5) / 5)
    hits = mem.search("release train gate", user_id="u", k=10)
    assert len(hits) == 10 and len({h.scored.score for h in hits}) > 1
    for h in hits:
        s = h.scored
        assert h.explain == explain(
            score=s.score,
            decay=s.decay,
            importance=s.importance,
            accesses=s.accesses,
            mentions=s.mentions,
            policy=policy,
        )
        x = h.explain
        assert x["relevance"] + x["decay_term"] + x["importance_term"] == pytest.approx(x["score"], abs=2e-6)
