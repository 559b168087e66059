"""Floors rank, they do not cut (issue 16): a weak match is returned after every confident one
and labelled; only a hit with no keyword and a vector under ``min_cosine`` is dropped. And the
vector of a turn embeds the turn before it in its session (``Policy.embed_context``)."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import numpy as np
import pytest

from trimem import Memory, Policy
from trimem.errors import InvalidArgumentError
from trimem.pipeline.bundle import WEAK_PROFILE, RecallBundle
from trimem.records import Episode, Fact, FactVersion, RecalledEpisode, Scored
from trimem.rewrite import MemoryIntent

T = datetime(2026, 10, 1, tzinfo=UTC)


class Axis:
    """Each text's vector is fixed by the caller's table (unknown texts: the last axis)."""

    name, dim = "axis-4", 4

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.seen: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.seen.extend(texts)
        rows = [self.table.get(t, [0.0, 0.0, 0.0, 1.0]) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_a_weak_keyword_match_is_returned_last_and_labelled() -> None:
    mem = Memory(embedder=None)
    strong = mem.retain("the staging cluster runs kubernetes 1.31 on three nodes", user_id="u", timestamp=T)
    weak = mem.retain("three coffees before lunch again", user_id="u", timestamp=T)
    found = mem.search("staging cluster kubernetes version nodes three", user_id="u", k=5)
    assert [r.episode.id for r in found] == [strong.id, weak.id]
    assert [r.scored.weak for r in found] == [False, True]
    text = mem.recall("staging cluster kubernetes version nodes three", user_id="u").render()
    assert "> (weak match) [" in text and text.index("kubernetes") < text.index("coffees")


def test_an_unrelated_vector_only_hit_is_dropped_a_related_one_kept_weak() -> None:
    emb = Axis(
        {
            "alpha": [1.0, 0.0, 0.0, 0.0],
            "near": [0.8, 0.6, 0.0, 0.0],  # cosine 0.8 with the query: confident alone
            "related": [0.45, 0.893, 0.0, 0.0],  # cosine 0.45: between min_cosine and min_cosine_alone
            "unrelated": [0.1, 0.0, 0.995, 0.0],  # cosine 0.1: under min_cosine
        }
    )
    mem = Memory(embedder=emb, policy=Policy(embed_context=0, dedup=False))
    ids = {t: mem.retain(t, user_id="u", timestamp=T).id for t in ("near", "related", "unrelated")}
    found = mem.search("alpha", user_id="u", k=5)
    assert [(r.episode.id, r.scored.weak) for r in found] == [(ids["near"], False), (ids["related"], True)]


def test_a_confident_hit_past_k_takes_the_place_of_a_weak_one() -> None:
    mem = Memory(embedder=None)
    weak = mem.retain("release", user_id="u", timestamp=T)  # short: the best BM25 for "release"
    confident = mem.retain("release train of the payments service leaves thursday", user_id="u", timestamp=T)
    found = mem.search("payments service release train thursday", user_id="u", k=1)
    assert [r.episode.id for r in found] == [confident.id]
    assert weak.id not in [r.episode.id for r in found]


def test_a_fact_source_is_never_weak() -> None:
    mem = Memory(embedder=None)
    mem.retain("We decided to use PostgreSQL as the main database", user_id="u", timestamp=T)
    mem.retain("Started the Node service in Docker, port 8080", user_id="u", timestamp=T)
    mem.reflect(user_id="u")
    bundle = mem.recall("which port did node use, and on which database?", user_id="u")
    via = [r for r in bundle.episodes if r.via_fact == "database"]
    assert len(via) == 1 and via[0].scored.weak is False


def test_the_turn_before_is_embedded_with_a_turn_in_retain_and_retain_many_alike() -> None:
    one, many = Axis({}), Axis({})
    a = Memory(embedder=one)
    for text in ("Did you go hiking?", "Yes, last weekend!"):
        a.retain(text, user_id="u", session_id="s", timestamp=T)
    a.retain("unrelated session", user_id="u", session_id="t", timestamp=T)
    b = Memory(embedder=many)
    b.retain_many(
        [
            dict(text=text, user_id="u", session_id=s, timestamp=T)
            for text, s in (("Did you go hiking?", "s"), ("Yes, last weekend!", "s"), ("unrelated session", "t"))
        ]
    )
    assert (
        one.seen == many.seen == ["Did you go hiking?", "Did you go hiking?\nYes, last weekend!", "unrelated session"]
    )
    # What BM25 sees and what is stored is the turn alone.
    assert [e.text for e in a.episodes(user_id="u", session_id="s")] == ["Did you go hiking?", "Yes, last weekend!"]


def test_a_forgotten_turn_is_never_embedded_into_the_next() -> None:
    emb = Axis({})
    mem = Memory(embedder=emb)
    secret = mem.retain("my locker code is 4417", user_id="u", session_id="s", timestamp=T)
    mem.forget([secret.id], user_id="u")
    mem.retain("thanks", user_id="u", session_id="s", timestamp=T)
    assert emb.seen[-1] == "thanks"


def test_a_reopened_store_finds_the_turn_before(tmp_path) -> None:
    with Memory(tmp_path / "m", embedder=Axis({})) as mem:
        mem.retain("Did you go hiking?", user_id="u", session_id="s", timestamp=T)
    emb = Axis({})
    with Memory(tmp_path / "m", embedder=emb) as mem:
        mem.retain("Yes, last weekend!", user_id="u", session_id="s", timestamp=T)
    assert emb.seen == ["Did you go hiking?\nYes, last weekend!"]


@pytest.mark.parametrize(
    "bad", [dict(rrf_k=-1.0), dict(rrf_k=float("nan")), dict(weights=(1.0, -0.5)), dict(embed_context=9)]
)
def test_bad_search_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        Policy(**bad)  # type: ignore[arg-type]


def test_a_period_without_a_confident_match_is_followed_by_matches_from_other_times() -> None:
    now = datetime(2026, 11, 25, 10, tzinfo=UTC)
    mem = Memory(embedder=None)  # keywords only: a match is confident from the keyword floor
    renewed = mem.retain(
        "Renewed my passport at the consulate", user_id="u", timestamp=datetime(2026, 10, 10, tzinfo=UTC)
    )
    photos = mem.retain(
        "Passport photos taken at the pharmacy", user_id="u", timestamp=datetime(2026, 8, 1, tzinfo=UTC)
    )
    mem.retain("Bought groceries for the week", user_id="u", timestamp=datetime(2026, 10, 20, tzinfo=UTC))
    # October holds a confident match: nothing from other times
    b = mem.recall("passport last month", user_id="u", now=now)
    assert [r.episode.id for r in b.episodes] == [renewed.id] and not b.episodes[0].scored.weak
    # October holds no match: the August one follows, labelled weak, its date on show
    b = mem.recall("what did the pharmacy do last month", user_id="u", now=now)
    assert [(r.episode.id, r.scored.weak) for r in b.episodes] == [(photos.id, True)]
    assert "(weak match) [2026-08-01" in b.render(300)
    # no period asked: the pharmacy match is confident as ever
    assert not mem.recall("what did the pharmacy do", user_id="u", now=now).episodes[0].scored.weak


# ------------------------------------------------------------------ the rendered context's order


def _bundle(n_confident_facts: int, n_weak_facts: int, weak_episodes: list[bool]) -> RecallBundle:
    """A bundle of facts (``confident_i``, ``weak_i``) and one-word episodes (``event_i``)."""
    day = 1_790_000_000_000_000

    def fact(key: str) -> Fact:
        return Fact(key=key, value=f"{key}_value", updated_at=day, version=1)

    profile = [fact(f"confident_{i}") for i in range(n_confident_facts)]
    weak_facts = [fact(f"weak_{i}") for i in range(n_weak_facts)]
    episodes = [
        RecalledEpisode(Episode(id=i + 1, agent_id="a", user_id="u", text=f"event_{i}", timestamp=day),
                        Scored(score=1.0, weak=weak))
        for i, weak in enumerate(weak_episodes)
    ]  # fmt: skip
    intent = MemoryIntent(query="q", text="q", keywords=[], keys=[], time_range=None, time_expression=None,
                          language="en")  # fmt: skip
    return RecallBundle(
        query="q",
        intent=intent,
        profile=profile + weak_facts,
        profile_matches={f.key: Scored(score=0.1, weak=True) for f in weak_facts},
        episodes=episodes,
    )


def words(text: str) -> int:
    return len(text.split())


def test_the_profiles_weak_matches_share_one_heading_after_its_other_lines() -> None:
    text = _bundle(2, 3, []).render(1000, counter=words)
    lines = text.splitlines()
    assert lines[0] == "## Profile facts" and lines.count(WEAK_PROFILE) == 1
    heading = lines.index(WEAK_PROFILE)
    assert [ln.split(":")[0] for ln in lines[1:heading]] == ["- confident_0", "- confident_1"]
    assert [ln.split(":")[0] for ln in lines[heading + 1 :]] == ["- weak_0", "- weak_1", "- weak_2"]
    assert "(weak match)" not in text  # one heading, not a label per line
    assert _bundle(2, 0, []).render(1000, counter=words).count(WEAK_PROFILE) == 0


def test_weak_events_come_after_the_whole_profile_confident_ones_before_its_overflow() -> None:
    # a fact line costs 5 words, an event 5 (7 weak), the titles 3 and 6, the weak heading 14:
    # the profile's share (42) holds 2 confident and 3 weak facts, the confident event 11 more,
    # and the 3 facts over the share the next 15 of the 70
    b = _bundle(2, 6, [False, True, True])
    budget = 70
    text = b.render(budget, counter=words)
    assert words(text) <= budget
    assert "event_0" in text  # the confident event, though the profile's share overflowed
    assert "weak_5" in text  # every profile line fits before any weak event
    assert "event_1" not in text and "event_2" not in text
    # with room for more, weak events follow
    room = words(b.render(1000, counter=words))
    assert "event_2" in b.render(room, counter=words)


def test_a_users_request_matched_by_a_word_is_weak_a_statement_stays_confident() -> None:
    mem = Memory(embedder=None)
    asked = mem.retain("Can you suggest names for a cursed sword?", user_id="u", timestamp=T)
    told = mem.retain("Our dog's name is Biscuit and he hates thunder.", user_id="u", timestamp=T)
    zh = mem.retain("帮我查查无人机在景区飞要不要报备", user_id="u", timestamp=T)
    found = {r.episode.id: r.scored.weak for r in mem.recall("What's my dog's name?", user_id="u").episodes}
    assert found == {told.id: False, asked.id: True}
    (r,) = mem.recall("我的无人机是什么型号？", user_id="u").episodes
    assert (r.episode.id, r.scored.weak) == (zh.id, True)
    # the assistant's own words are not the user's requests
    said = mem.retain("Which names did you like for the sword?", user_id="u", role="assistant", timestamp=T)
    weak = {r.episode.id: r.scored.weak for r in mem.recall("sword names", user_id="u").episodes}
    assert (weak[asked.id], weak[said.id]) == (True, False)


def test_an_event_that_told_a_replaced_value_brings_the_current_value_first() -> None:
    """The request matches how the user once put it ("Haoran walks to Yaohua every morning"); the
    note that replaced it ("Haoran boards at Nankai now") is what the context must carry, before
    the old telling, which the note then shows as its history instead of repeating it."""
    day = 1_790_000_000_000_000
    old = Episode(id=1, agent_id="a", user_id="u", text="Haoran walks to Yaohua every morning", timestamp=day)
    history = [
        FactVersion(value=old.text, valid_from=day, valid_to=day + 10, source=[1]),
        FactVersion(value="Haoran boards at Nankai now", valid_from=day + 10, source=[2]),
    ]
    note = Fact(key="note_haoran", value="Haoran boards at Nankai now", updated_at=day + 10, version=2,
                history=history, source=[2])  # fmt: skip
    filler = [Fact(key=f"note_{i}", value=f"filler note number {i}", updated_at=day, version=1) for i in range(4)]
    intent = MemoryIntent(query="q", text="q", keywords=[], keys=[], time_range=None, time_expression=None,
                          language="en")  # fmt: skip
    b = RecallBundle(query="q", intent=intent, profile=[*filler, note],
                     profile_matches={f.key: Scored(score=0.1, weak=True) for f in [*filler, note]},
                     episodes=[RecalledEpisode(old, Scored(score=1.0, weak=False))])  # fmt: skip
    # the profile's share holds the fillers only; the old telling, recalled with confidence,
    # brings its replacement in before anything else of the budget is spent
    text = b.render(60, counter=words)
    assert "Haoran boards at Nankai now" in text and "## Recalled events" not in text
    assert text.count("Haoran walks to Yaohua") == 1  # once, as the note's history
    # with no replacement the event is shown as it is
    plain = msgspec.structs.replace(note, history=[], version=1)
    b2 = RecallBundle(query="q", intent=intent, profile=[*filler, plain], profile_matches=b.profile_matches,
                      episodes=b.episodes)  # fmt: skip
    assert "## Recalled events" in b2.render(60, counter=words)
