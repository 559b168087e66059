"""The fact index: every current fact and profile note, searched by keywords (its key's phrases in
English and Chinese, its value) and meaning with every recall; kept in step with sets, deletes,
forgetting and purges, on replay and in snapshots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from trimem import Memory
from trimem._backend.embedded.backend import EPISODES, KNOWLEDGE
from trimem.config import FACT_VECTOR_WEIGHT

NOW = datetime(2026, 11, 20, 10, tzinfo=UTC)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def told(*said: tuple[str, float]) -> Memory:
    """A words-only memory where user "u" said each text that many days ago."""
    mem = Memory(embedder=None)
    for text, days in said:
        mem.retain(text, user_id="u", timestamp=ago(days))
    return mem


def keys(found: list) -> list[str]:  # type: ignore[type-arg]
    return [f.key for f, _ in found]


def test_a_request_in_either_language_finds_the_fact_its_key_phrases_name() -> None:
    mem = Memory(embedder=None)
    mem.facts.set("database", "PostgreSQL", user_id="u")
    mem.facts.set("editor", "Neovim", user_id="u")
    mem.facts.set("city", "Lisbon", user_id="u")
    assert keys(mem.facts.search("连接到我们定下来的数据库", user_id="u")) == ["database"]
    assert keys(mem.facts.search("open it in my code editor", user_id="u")) == ["editor"]
    assert keys(mem.facts.search("lisbon weather", user_id="u")) == ["city"]  # by value too
    assert mem.facts.search("连接到数据库", user_id="someone else") == []


def test_the_index_follows_updates_and_deletes() -> None:
    mem = Memory(embedder="hashing")
    mem.facts.set("database", "MySQL", user_id="u")
    mem.facts.set("database", "PostgreSQL", user_id="u")
    (fact, scored), *_ = mem.facts.search("which database", user_id="u")
    assert fact.value == "PostgreSQL" and scored.cosine is not None
    assert mem.facts.search("mysql", user_id="u", k=1)[0][0].value == "PostgreSQL"  # the key, not the old value
    mem.facts.delete("database", user_id="u")
    assert mem.facts.search("which database", user_id="u") == []


def test_facts_under_no_keyword_or_similarity_floor_are_ranked_and_labelled_weak() -> None:
    mem = Memory(embedder="hashing")
    mem.facts.set("note_cats", "I'm allergic to cats.", user_id="u")
    mem.facts.set("note_bike", "Most days I commute by bike.", user_id="u")
    found = mem.facts.search("should I stay at a place with animals", user_id="u")
    assert sorted(keys(found)) == ["note_bike", "note_cats"]  # nothing dropped: a profile is small
    assert all(s.weak for _, s in found)
    assert not mem.facts.search("which cats am I allergic to", user_id="u")[0][1].weak


@pytest.mark.parametrize("checkpoint", [False, True])
def test_reopening_restores_the_index_with_its_vectors(tmp_path: Path, checkpoint: bool) -> None:
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        mem.facts.set("database", "PostgreSQL", user_id="u")
        mem.facts.set("note_bike", "Most days I commute by bike.", user_id="u")
        mem.facts.delete("database", user_id="u")
        if checkpoint:
            mem.checkpoint()
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        found = mem.facts.search("how do I commute", user_id="u")
        assert keys(found) == ["note_bike"] and found[0][1].cosine is not None


def test_a_snapshot_older_than_the_index_is_indexed_again_by_keywords(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        mem.facts.set("database", "PostgreSQL", user_id="u")
        backend = mem._backend
        assert backend._journal is not None
        # a snapshot as written before there was a fact index: the two other indexes only
        backend._journal.checkpoint([(EPISODES, backend._episodes), (KNOWLEDGE, backend._knowledge)], backend._state())
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        found = mem.facts.search("连接到数据库", user_id="u")
        assert keys(found) == ["database"] and found[0][1].cosine is None


def test_forgetting_a_user_and_purging_leave_nothing_of_their_facts(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        mem.retain("Most days I commute by my Zorblatt bicycle.", user_id="u", timestamp=ago(3))
        mem.reflect(user_id="u")
        mem.retain("I also commute by bike every day.", user_id="v", timestamp=ago(3))
        mem.reflect(user_id="v")
        assert keys(mem.facts.search("zorblatt", user_id="u"))
        mem.checkpoint()
        mem.forget(user_id="u", everything=True)
        assert mem.facts.search("zorblatt commute", user_id="u") == []
        assert keys(mem.facts.search("commute", user_id="v"))  # another user's notes stay
        mem.purge()
    folder = b"".join(p.read_bytes() for p in (tmp_path / "m").iterdir() if p.is_file())
    assert b"Zorblatt" not in folder and "Zorblatt".lower().encode() not in folder
    with Memory(tmp_path / "m", embedder="hashing") as mem:
        assert mem.facts.search("zorblatt commute", user_id="u") == []


def test_a_note_that_states_a_change_supersedes_the_note_on_its_subject() -> None:
    mem = Memory(embedder=None)  # words only: "express" names the subject
    mem.retain("I take the 7:40 express bus downtown every morning.", user_id="u", timestamp=ago(200))
    mem.retain("I'm allergic to cats.", user_id="u", timestamp=ago(150))
    mem.retain("I'm not on the express anymore, they cut the route, so I drive in now.", user_id="u", timestamp=ago(80))
    changes = [(c.op, c.key) for c in mem.reflect(user_id="u")]
    assert changes == [
        ("set", "note_take_express_bus"),
        ("set", "note_allergic_cats"),
        ("update", "note_take_express_bus"),
    ]
    history = mem.facts.history("note_take_express_bus", user_id="u")
    assert [v.value for v in history] == [
        "I take the 7:40 express bus downtown every morning.",
        "I'm not on the express anymore, they cut the route, so I drive in now.",
    ]
    text = mem.recall("What time should I leave for the express downtown?", user_id="u", now=NOW).render(300)
    # the current note first, the stale one only as its history; the event is not repeated below
    assert text.index("drive in now") < text.index("7:40") and text.count("drive in now") == 1


class Topics:
    """An embedder of meaning by topic: each text's vector mixes the topics its words belong to."""

    name, dim, languages = "topics-test", 3, ("en",)
    words = ({"mum", "school"}, {"cats", "physio", "knee"}, {"cats", "vet"})  # family, health, pets

    def __call__(self, texts: list[str]):  # type: ignore[no-untyped-def]
        out = np.full((len(texts), self.dim), 1e-3, dtype=np.float32)
        for i, t in enumerate(texts):
            said = set(t.casefold().replace(".", " ").replace(",", " ").split())
            for topic, words in enumerate(self.words):
                out[i, topic] += len(said & words)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_a_change_replaces_no_note_it_shares_only_an_everyday_word_with() -> None:
    mem = Memory(embedder=Topics())
    mem.retain("My mum does the school run on Mondays.", user_id="u", timestamp=ago(200))
    mem.retain("I'm allergic to cats, the vet says.", user_id="u", timestamp=ago(150))
    # "run" is shared with the school run, but in meaning that note is unrelated and not the nearest
    mem.retain("Physio says no running for a while, my knee, so I swim now.", user_id="u", timestamp=ago(20))
    assert [c.op for c in mem.reflect(user_id="u")] == ["set", "set", "set"]
    assert len(mem.facts.list(user_id="u")) == 3
    # read by words alone, a word shared only outside the clause that tells the change ("so I
    # swim now") decides nothing; one inside it does
    for change, ops in [
        ("Physio says no running for a while, my knee, so I swim now.", ["set", "set"]),
        ("Physio says no more school runs for me, my knee, so my sister drives them now.", ["set", "update"]),
    ]:
        mem = Memory(embedder=None)
        mem.retain("My mum does the school run on Mondays.", user_id="u", timestamp=ago(200))
        mem.retain(change, user_id="u", timestamp=ago(20))
        assert [c.op for c in mem.reflect(user_id="u")] == ops


class Work(Topics):
    """Topics of work, family and a day out: a change that is mostly about the day out is near the
    job in meaning, but not near enough to be the same subject by meaning alone."""

    dim = 4
    words = ({"trains", "shifts", "desk"}, {"mum", "school"}, {"lake", "boat"}, {"cats"})


def test_the_one_note_on_the_part_of_life_a_change_is_about_and_nearest_in_meaning_is_its_subject() -> None:
    job, mum = "I drive trains on the Jubilee line, early shifts.", "My mum does the school run on Mondays."
    change = "Big change, a desk job now, and weekends at the lake and on the boat."
    embedder = Work()
    assert 0.3 < float(embedder([job])[0] @ embedder([change])[0]) < 0.45  # near, not the same by meaning
    mem = Memory(embedder=embedder)
    for i, text in enumerate([job, mum, change]):
        mem.retain(text, user_id="u", timestamp=ago(200 - 90 * i))
    assert [c.op for c in mem.reflect(user_id="u")] == ["set", "set", "update"]
    (updated,) = [f for f in mem.facts.list(user_id="u") if len(f.history) == 2]
    assert [v.value for v in updated.history] == [job, change]


def test_a_question_replaces_no_note() -> None:
    mem = told(("I run OTR mostly, out 2-3 weeks at a time.", 200), ("how much does a set of tires run these days", 5))
    mem.reflect(user_id="u")
    assert [len(f.history) for f in mem.facts.list(user_id="u")] == [1] * len(mem.facts.list(user_id="u"))


def test_retain_many_finds_the_same_notes_as_retain_one_at_a_time() -> None:
    said = [
        ("I take the 7:40 express bus downtown every morning.", 200),
        ("Can you explain what a contextual inquiry is?", 190),
        ("我每天坐地铁十号线上下班", 150),
        ("I'm not on the express anymore, so I drive in now.", 80),
    ]
    one, many = Memory(embedder="hashing"), Memory(embedder="hashing")
    for text, days in said:
        one.retain(text, user_id="u", timestamp=ago(days))
    many.retain_many([{"text": t, "user_id": "u", "timestamp": ago(d)} for t, d in said])
    read = [[(c.op, c.key, c.value) for c in m.reflect(user_id="u")] for m in (one, many)]
    assert read[0] == read[1] and len(read[0]) == 3
    q = "how do I get downtown"
    assert one.recall(q, user_id="u", now=NOW).render(300) == many.recall(q, user_id="u", now=NOW).render(300)


def test_the_profile_takes_at_most_its_share_of_the_budget() -> None:
    mem = Memory(embedder="hashing")
    for i in range(12):
        mem.facts.set(f"note_{i}", f"I keep pet number {i}, a small grey cat who sleeps all day long.", user_id="u")
    mem.retain("Booked the vet for the cats next Tuesday.", user_id="u", timestamp=ago(1))
    b = mem.recall("what about the cats", user_id="u", now=NOW, k=3)
    assert len(b.profile) == 12 and all(k in b.profile_matches for k in (f.key for f in b.profile))
    text = b.render(max_tokens=120)
    assert "Booked the vet" in text  # the profile left room for the events
    shown = [f.key for f in b.profile if f.value in text]
    assert 1 <= len(shown) < 12 and shown == [f.key for f in b.profile][: len(shown)]


def test_the_room_events_leave_goes_back_to_the_profile_in_its_order() -> None:
    from trimem.tokens import estimate_tokens

    mem = Memory(embedder="hashing")
    for i in range(12):
        mem.facts.set(f"note_{i}", f"I keep pet number {i}, a small grey cat who sleeps all day long.", user_id="u")
    b = mem.recall("what about the cats", user_id="u", now=NOW, k=3)
    assert b.episodes == [] and b.knowledge == []
    per_line = estimate_tokens(f"- {b.profile[0].value} (2026-11-20)\n")
    budget = 8 * per_line  # over the profile's share (PROFILE_SHARE of it), under twelve lines
    text = b.render(max_tokens=budget, counter=estimate_tokens)
    shown = [f.key for f in b.profile if f.value in text]
    assert 6 <= len(shown) < 12  # more than its share: nothing else wanted the room
    assert shown == [f.key for f in b.profile][: len(shown)]  # best first, none skipped
    assert estimate_tokens(text) <= budget


class EnglishOnly:
    """An embedder that, like MiniLM, reads English only: every Chinese text gets one vector."""

    name, dim, languages = "english-only-test", 8, ("en",)

    def __call__(self, texts: list[str]):  # type: ignore[no-untyped-def]

        from trimem.text.script import has_han

        out = np.zeros((len(texts), 8), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, 0 if has_han(t) else 1 + len(t) % 7] = 1.0
        return out


def test_a_vector_that_cannot_read_the_request_never_vouches_for_a_match() -> None:
    mem = Memory(embedder=EnglishOnly())
    assert mem._embedding.languages == ("en",)  # declared through the checked wrapper
    mem.retain("出口退税一般多久能到账？", user_id="u", timestamp=ago(30))
    mem.facts.set("note_x", "我每天坐地铁十号线上下班", user_id="u")
    b = mem.recall("帮我查一下我车子的保养记录", user_id="u", now=NOW)
    # cosine 1.0 between any two Chinese texts: no confident match, and no event found by it
    assert b.episodes == [] and all(s.weak for s in b.profile_matches.values())
    assert mem.search("出口退税", user_id="u")[0].scored.cosine is None  # keywords alone


def test_a_change_supersedes_a_fact_keyed_by_the_users_own_phrase_but_not_by_a_common_word() -> None:
    mem = Memory(embedder="hashing")
    mem.retain("My desk at the office is on the 4th floor, by the windows.", user_id="u", timestamp=ago(300))
    mem.retain("我们公司每年都参加广交会，春秋两季都去。", user_id="u", timestamp=ago(290))
    mem.retain("我住回龙观，到公司单程一个多小时。", user_id="u", timestamp=ago(280))
    mem.retain("公司的打印机总是卡纸，烦死了。", user_id="u", timestamp=ago(270))
    mem.retain("They reshuffled seating, my desk is on the second floor now.", user_id="u", timestamp=ago(40))
    mem.retain("搬家了，现在住亦庄，离公司反而近了点。", user_id="u", timestamp=ago(30))
    mem.reflect(user_id="u")
    desk = mem.facts.get("desk_at_the_office", user_id="u")
    assert desk is not None and "second floor" in desk.value
    assert desk.history[0].value == "on the 4th floor"
    moved = [f for f in mem.facts.list(user_id="u") if "亦庄" in f.value]
    # "公司" is in three of the user's notes: it names no subject, and the move, sharing nothing
    # else with any note, replaces none of them (a word-overlap embedder has nothing more to say)
    assert len(moved) == 1 and len(moved[0].history) == 1
    assert all(len(f.history) == 1 for f in mem.facts.list(user_id="u") if f.key != "desk_at_the_office")


def test_a_change_that_shares_words_equally_with_two_notes_replaces_neither() -> None:
    mem = Memory(embedder=None)  # words only, and no part of life shared: nothing breaks the tie
    mem.retain("我们公司每年都参加广交会，春秋两季都去。", user_id="u", timestamp=ago(290))
    mem.retain("我们公司的年会每年都在一月。", user_id="u", timestamp=ago(280))
    mem.retain("公司搬到亦庄了，离家近了点。", user_id="u", timestamp=ago(30))
    mem.reflect(user_id="u")
    assert sorted(len(f.history) for f in mem.facts.list(user_id="u")) == [1, 1, 1]


def test_a_tie_of_words_is_broken_by_the_part_of_life_a_move_is_about() -> None:
    mem = Memory(embedder=None)
    mem.retain("我们公司每年都参加广交会，春秋两季都去。", user_id="u", timestamp=ago(290))
    mem.retain("我住回龙观，到公司单程一个多小时。", user_id="u", timestamp=ago(280))
    mem.retain("搬家了，现在住亦庄，离公司反而近了点。", user_id="u", timestamp=ago(30))
    mem.reflect(user_id="u")
    (moved,) = [f for f in mem.facts.list(user_id="u") if "亦庄" in f.value]
    assert "回龙观" in (moved.history[0].value or "")
    assert sorted(len(f.history) for f in mem.facts.list(user_id="u")) == [1, 2]


@pytest.mark.parametrize(
    ("held", "change"),
    [
        # "已经" says how long, not that anything changed
        ("我每天晚上十点以后不看手机。", "我每周五晚上去练书法，已经练了三年了。"),
        # the only pair the two share holds a character of grammar ("不去")
        ("鼓浪屿周末人太多了，再也不去了。", "公司今年不去广州那个展了，改去德国科隆的园林展。"),
        # who said it is not what changed
        ("我们单位领导姓杜，是个老实人。", "领导说了，月报以后统一每月三号前交上去。"),
        ("Our boss Maria is a stickler for detail.", "Our boss says the reports move to Fridays now."),
    ],
)
def test_a_change_replaces_no_note_it_shares_only_grammar_or_a_speaker_with(held: str, change: str) -> None:
    mem = told((held, 200), (change, 20))
    assert [c.op for c in mem.reflect(user_id="u")] == ["set", "set"]
    assert [len(f.history) for f in mem.facts.list(user_id="u")] == [1, 1]


def test_a_change_is_found_by_the_words_of_the_note_it_replaced() -> None:
    mem = told(
        ("我们公司客户管理用的是小满 CRM，询盘进来都在里面跟。", 300),
        ("公司换系统了，客户资料都迁到 Salesforce 上了。", 30),
        ("I take the 7:40 express bus downtown every morning.", 200),
        ("No more express bus for me, I drive in now.", 10),
    )
    mem.reflect(user_id="u")
    (crm,) = [f for f, _ in mem.facts.search("新来的询盘怎么跟进", user_id="u")][:1]
    assert "Salesforce" in crm.value and len(crm.history) == 2
    (bus,) = [f for f, _ in mem.facts.search("leaving downtown in the morning", user_id="u")][:1]
    assert bus.value == "No more express bus for me, I drive in now."
    # a set from outside counts the value it replaced too
    mem.facts.set("note_desk", "My desk moved to the second floor.", user_id="u")
    mem.facts.set("note_desk", "Hot-desking from now on.", user_id="u")
    assert [f.key for f, _ in mem.facts.search("second floor", user_id="u")][:1] == ["note_desk"]


class HighCosines(EnglishOnly):
    """An embedder whose cosines sit high, and that says so."""

    name, languages, cosine_floors = "high-cosines-test", None, (0.6, 0.95, 0.85)


def test_an_embedder_brings_its_own_scale_of_similarity_unless_the_caller_sets_one() -> None:
    mem = Memory(embedder=HighCosines())
    assert (mem.facts.floors.cosine, mem.facts.floors.cosine_alone) == (0.6, 0.95)
    assert mem.facts.same_subject_cosine == 0.85
    mem = Memory(embedder=HighCosines(), min_cosine=0.5)
    assert (mem.facts.floors.cosine, mem.facts.floors.cosine_alone) == (0.5, 0.95)
    mem = Memory(embedder="hashing")  # declares nothing: the defaults
    assert (mem.facts.floors.cosine, mem.facts.floors.cosine_alone, mem.facts.same_subject_cosine) == (0.3, 0.6, 0.45)


def test_a_bad_declared_scale_is_refused() -> None:
    from trimem.errors import InvalidArgumentError

    class Bad(EnglishOnly):
        cosine_floors = (0.6, 2.0)

    with pytest.raises(InvalidArgumentError, match="cosine_floors"):
        Memory(embedder=Bad())


def test_a_change_is_compared_on_the_whole_message_it_was_told_in() -> None:
    mem = Memory(embedder=None)  # words only
    mem.retain("I work the line at a steakhouse called Copper Grill.", user_id="u", timestamp=ago(300))
    mem.retain("Our till runs on Square.", user_id="u", timestamp=ago(200))
    mem.retain("My girlfriend Marisol is a vet tech.", user_id="u", timestamp=ago(150))
    # the note keeps the lasting state only (the moment before it is no part of it); that moment
    # says what it replaces
    mem.retain(
        "Quit the steakhouse today. I'm at Bacanora now, a Sonoran spot downtown.", user_id="u", timestamp=ago(20)
    )
    mem.retain("We switched the till over to Lightspeed last week.", user_id="u", timestamp=ago(10))
    mem.reflect(user_id="u")
    by_value = {f.value: f for f in mem.facts.list(user_id="u")}
    assert set(by_value) == {
        "I'm at Bacanora now, a Sonoran spot downtown.",
        "We switched the till over to Lightspeed last week.",
        "My girlfriend Marisol is a vet tech.",
    }
    was = {v: [h.value for h in f.history if h.valid_to is not None] for v, f in by_value.items()}
    assert was["I'm at Bacanora now, a Sonoran spot downtown."] == [
        "I work the line at a steakhouse called Copper Grill."
    ]
    assert was["We switched the till over to Lightspeed last week."] == ["Our till runs on Square."]
    assert was["My girlfriend Marisol is a vet tech."] == []


def test_a_change_told_as_a_keyed_fact_closes_the_note_it_replaces() -> None:
    mem = told(
        ("Every Tuesday I teach pottery classes at the community centre.", 100),
        ("Our research team meets every Monday.", 90),
        ("I've moved my pottery classes to Thursday evenings.", 5),
        ("We moved our research repository to Condens.", 4),
    )
    changes = [(c.op, c.key) for c in mem.reflect(user_id="u")]
    # two subject words shared ("pottery", "class") close the old note; one ("research") does not
    assert ("delete", "note_tuesday_teach_pottery") in changes
    assert {f.key for f in mem.facts.list(user_id="u")} == {
        "pottery_classes", "note_research_team_meets", "research_repository",
    }  # fmt: skip
    history = mem.facts.history("note_tuesday_teach_pottery", user_id="u")
    assert [v.op for v in history] == ["set", "delete"] and history[0].value is not None
    text = mem.recall("When do I teach pottery?", user_id="u", now=NOW).render(300)
    assert "Thursday evenings" in text and "Tuesday" not in text.split("## Recalled events")[0]


def test_the_fact_index_weighs_meaning_over_shared_words(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.layers.test_language_weights import _Weighted

    mem = Memory(embedder=_Weighted({"zh": 0.5}))
    mem.facts.set("note_vegetarian", "I'm vegetarian.", user_id="u")
    asked: list[float] = []
    search = mem.facts._backend.search_facts
    monkeypatch.setattr(mem.facts._backend, "search_facts", lambda q, p: asked.append(q.vector_weight) or search(q, p))
    mem.facts.search("book a restaurant for the team", user_id="u")
    mem.facts.search("帮我订个餐厅", user_id="u")
    assert asked == [FACT_VECTOR_WEIGHT, FACT_VECTOR_WEIGHT * 0.5] and FACT_VECTOR_WEIGHT > 1.0


def test_facts_touching_the_requests_facets_rank_higher_by_a_hand_computed_gain() -> None:
    import math

    from trimem.config import FACET_WEIGHT, Policy

    mem = Memory(embedder="hashing")  # every fact is a candidate when there are vectors
    notes = {
        "note_licence": "I can't drive, never got my licence.",  # travel
        "note_lfs": "Big assets go through Git LFS on GitHub.",
        "note_savings": "I'm living off savings these days.",  # money
        "note_bus": "The 99 bus is my lifeline.",  # travel
    }
    for key, text in notes.items():
        mem.facts.set(key, text, user_id="u")
    plain = mem.facts.search("expo in Seattle", user_id="u", k=4)
    found = mem.facts.search("expo in Seattle", user_id="u", k=4, request="How should I get to the expo in Seattle?")
    # two of the four touch "travel": each gains its rarity over that of a facet one fact touches
    gain = FACET_WEIGHT / (Policy().rrf_k + 1) * math.log(5 / 2.5) / math.log(5 / 1.5)
    assert {f.key: s.explain.get("facets") for f, s in found} == {
        "note_licence": round(gain, 6), "note_bus": round(gain, 6), "note_lfs": None, "note_savings": None,
    }  # fmt: skip
    assert set(keys(found)[:2]) == {"note_licence", "note_bus"}
    before = {f.key: s for f, s in plain}
    for fact, scored in found:  # a facet reorders: it never makes a match confident
        assert scored.weak == before[fact.key].weak
        assert scored.score == pytest.approx(before[fact.key].score + (scored.explain.get("facets") or 0.0), abs=1e-6)
    # the request defaults to the query; one naming no facet leaves the order as the index found it
    assert keys(mem.facts.search("Seattle expo", user_id="u", k=4)) == keys(plain)


def test_the_thing_one_owns_that_a_request_is_about_counts_its_facet_twice() -> None:
    """ "I'm driving to Toledo" touches the car and getting around: the car one owns (a Ford)
    counts the vehicle facet twice, by the same hand computation as any facet."""
    import math

    from trimem.config import FACET_WEIGHT, Policy

    mem = Memory(embedder="hashing")
    notes = {
        "note_car": "We have a Ford Maverick.",  # vehicle, owned
        "note_licence": "My son can't drive yet, no licence.",  # vehicle, travel, family
        "note_lfs": "Big assets go through Git LFS.",
        "note_choir": "I sing in a choir.",  # arts
    }
    for key, text in notes.items():
        mem.facts.set(key, text, user_id="u")
    found = mem.facts.search("Toledo", user_id="u", k=4, request="I'm driving to Toledo tomorrow")
    unit = FACET_WEIGHT / (Policy().rrf_k + 1) / math.log(5 / 1.5)
    vehicle, travel = math.log(5 / 2.5), math.log(5 / 1.5)  # two of four touch vehicle, one travel
    assert {f.key: s.explain.get("facets") for f, s in found} == {
        "note_car": round(unit * 2 * vehicle, 6), "note_licence": round(unit * (vehicle + travel), 6),
        "note_lfs": None, "note_choir": None,
    }  # fmt: skip


def test_a_facet_only_the_requests_scene_touches_weighs_less() -> None:
    """ "My daughter is in a play in Leeds. How should I get there?" asks about getting around; the
    daughter is its scene: the family facet weighs SCENE_FACET_SHARE of the travel facet."""
    import math

    from trimem.config import FACET_WEIGHT, SCENE_FACET_SHARE, Policy

    mem = Memory(embedder="hashing")
    notes = {
        "note_licence": "I can't drive, never got my licence.",  # travel, vehicle
        "note_daughter": "My daughter is seven.",  # family
        "note_lfs": "Big assets go through Git LFS.",
        "note_choir": "I sing in a choir.",
    }
    for key, text in notes.items():
        mem.facts.set(key, text, user_id="u")
    request = "My daughter is in a play in Leeds on Friday. How should I get there?"
    found = mem.facts.search("Leeds", user_id="u", k=4, request=request)
    unit = FACET_WEIGHT / (Policy().rrf_k + 1) / math.log(5 / 1.5)
    one = math.log(5 / 1.5)  # one fact of four touches each facet
    assert {f.key: s.explain.get("facets") for f, s in found} == {
        "note_licence": round(unit * one, 6), "note_daughter": round(unit * one * SCENE_FACET_SHARE, 6),
        "note_lfs": None, "note_choir": None,
    }  # fmt: skip
    assert SCENE_FACET_SHARE < 1 and keys(found)[0] == "note_licence"


def test_the_facets_leg_reads_beyond_the_k_best_by_words() -> None:
    """A car note shares only an everyday word with a driving request, and fourteen notes share
    it more tightly: it ranks last by words, and only the request's facets of life (driving, a
    Ford) lift it, so the leg must read more than the ``k`` best by words to find it."""
    mem = Memory(embedder=None)
    said = [
        "We have a Ford Maverick hybrid, best purchase in years.",
        "I collect stamps, have done for years.",
        "My sister has been in Perth for years.",
        "We've had the same dentist for years.",
        "I've sung in the choir for years.",
        "Our cat is fourteen years old.",
        "I've been vegetarian for years.",
        "My dad has kept bees for years.",
        "I've taught piano for years.",
        "I've grown roses for years.",
        "I've known Priya for twenty years.",
        "We've rented this flat for years.",
        "I've played club chess for years.",
        "My nan knitted for years.",
        "I've kept a diary for years.",
    ]
    t0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
    for i, text in enumerate(said):
        mem.retain(text, user_id="u", timestamp=t0 + timedelta(days=i))
    mem.reflect(user_id="u")
    assert len(mem.facts.list(user_id="u")) == len(said)
    found = [f.value for f, _ in mem.facts.search("Driving to Toledo, it's been years", user_id="u", k=10)]
    assert len(found) == 10 and found[0] == said[0]


@pytest.mark.parametrize("bad", [5, "", "   ", None.__class__])
def test_a_bad_request_is_refused_before_anything_is_read(bad: object) -> None:
    from trimem.errors import TrimemError

    mem = Memory(embedder="hashing")
    mem.facts.set("note_drive", "I can't drive.", user_id="u")
    with pytest.raises(TrimemError):
        mem.facts.search("expo", user_id="u", request=bad)  # type: ignore[arg-type]
    assert keys(mem.facts.search("expo", user_id="u", request="How do I get to the expo?")) == ["note_drive"]


def test_a_note_whose_own_words_rank_among_the_episodes_found_gains_a_hand_computed_leg() -> None:
    from trimem.config import AGREEMENT_WEIGHT, Policy

    mem = Memory(embedder="hashing")
    said = {
        "note_tabla": "I play tabla, brought mine from home.",
        "note_pune": "My parents are in Pune.",
        "note_owl": "Night owl forever, never asleep before 2am.",
    }
    source = {key: mem.retain(text, user_id="u").id for key, text in said.items()}
    for key, text in said.items():
        mem.facts.set(key, text, user_id="u", source=[source[key]])
    mem.facts.set("instrument", "tabla", user_id="u", source=[source["note_tabla"]])  # keyed: its words rank too
    plain = {f.key: s for f, s in mem.facts.search("culture night acts", user_id="u", k=4)}
    asked: list[int] = []

    def ranks() -> dict[int, int]:
        asked.append(1)
        return {source["note_owl"]: 2, source["note_tabla"]: 0, 999_999: 1}

    found = mem.facts.search("culture night acts", user_id="u", k=4, episode_ranks=ranks)
    assert asked == [1]  # called once, after the index was searched
    rrf_k = Policy().rrf_k
    assert {f.key: s.explain.get("agreement") for f, s in found} == {
        "note_tabla": round(AGREEMENT_WEIGHT / (rrf_k + 1), 6),
        "note_owl": round(AGREEMENT_WEIGHT / (rrf_k + 3), 6),
        "note_pune": None,
        "instrument": round(AGREEMENT_WEIGHT / (rrf_k + 1), 6),
    }
    for fact, scored in found:  # the leg reorders: it never makes a match confident
        assert scored.weak == plain[fact.key].weak
        extra = scored.explain.get("agreement") or 0.0
        assert scored.score == pytest.approx(plain[fact.key].score + extra, abs=1e-6)
    assert [f.key for f, s in found] == [f.key for f, s in sorted(found, key=lambda fs: (fs[1].weak, -fs[1].score))]


def test_the_words_of_a_replaced_value_rank_for_the_note_that_replaced_them() -> None:
    """ "My parents are in Pune", since replaced by "My parents moved to Goa": a request the old
    words meet is about the note that holds the current value."""
    from trimem.config import AGREEMENT_WEIGHT, Policy

    mem = Memory(embedder="hashing")
    old = mem.retain("My parents are in Pune.", user_id="u").id
    new = mem.retain("My parents moved to Goa.", user_id="u").id
    mem.facts.set("note_parents", "My parents are in Pune.", user_id="u", source=[old])
    mem.facts.set("note_parents", "My parents moved to Goa.", user_id="u", source=[new])
    mem.facts.set("note_sister", "My sister visits my parents in winter.", user_id="u")
    found = mem.facts.search("parents", user_id="u", k=2, episode_ranks=lambda: {old: 0, new: 4})
    rrf_k = Policy().rrf_k
    assert {f.key: s.explain.get("agreement") for f, s in found} == {
        "note_parents": round(AGREEMENT_WEIGHT / (rrf_k + 1), 6),
        "note_sister": None,
    }


def test_recall_ranks_the_profile_by_the_episodes_it_found_for_the_same_request() -> None:
    mem = Memory(embedder="hashing")
    for text in ["I play tabla, brought mine from home.", "My parents are in Pune.", "Culture night is in March."]:
        mem.retain(text, user_id="u", timestamp=ago(30))
    mem.reflect(user_id="u")
    bundle = mem.recall("what could I play at culture night? tabla maybe", user_id="u", now=NOW)
    played = [k for k, s in bundle.profile_matches.items() if "agreement" in s.explain]
    assert any(k.startswith("note_") for k in played)
    tabla = next(f for f in bundle.profile if "tabla" in f.value)
    assert tabla.source and tabla.source[0] in {r.episode.id for r in bundle.episodes}
