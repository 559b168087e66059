"""Recall through `Memory`: scopes never cross, and the rendered bundle's sections and token budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

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


def _overlapping(mem: Memory, monkeypatch: Any, on: bool) -> None:
    """Makes this memory's backend say whether its reads may overlap (PostgreSQL's do)."""
    monkeypatch.setattr(type(mem._backend), "concurrent_reads", property(lambda self: on))


def test_overlapped_reads_give_the_same_bundle(monkeypatch: Any) -> None:
    """On a backend whose reads overlap, the episode and knowledge searches run while the facts
    are read: the bundle is the one the reads in turn give, including the fact sources put first
    and a time range's fallback to other times."""
    mem = Memory(embedder="hashing")
    mem.retain(
        "We decided on PostgreSQL as the main database", user_id="u1", timestamp=datetime(2026, 11, 1, tzinfo=UTC)
    )
    for i in range(12):
        mem.retain(
            f"the billing job {i} ran on the staging cluster",
            user_id="u1",
            timestamp=datetime(2026, 10, i + 1, tzinfo=UTC),
        )
    mem.facts.set("database", "PostgreSQL", user_id="u1", source=[1])
    mem.knowledge.add("Billing runbook: restart the billing job with make restart")
    mem.knowledge.add("Private note on the staging cluster", user_id="u1")

    def shown(on: bool) -> list[tuple[object, ...]]:
        _overlapping(mem, monkeypatch, on)
        out = []
        for q in ("connect to the database we decided on", "billing job on staging", "what ran last week on staging"):
            b = mem.recall(q, user_id="u1", now=NOW, touch=False)
            out.append((
                [f.key for f in b.profile],
                [(r.episode.id, r.scored.weak, r.via_fact) for r in b.episodes],
                [r.doc.id for r in b.knowledge],
                b.render(max_tokens=400),
            ))  # fmt: skip
        return out

    sequential = shown(False)
    assert sequential[0][1][0][2] == "database" and sequential[1][2]  # a fact source first; knowledge found
    assert shown(True) == sequential


@pytest.mark.parametrize("overlap", [True, False], ids=["overlapped", "in turn"])
@pytest.mark.parametrize("failing", ["facts", "rerank"])
def test_a_failed_recall_leaves_no_read_in_flight(monkeypatch: Any, failing: str, overlap: bool) -> None:
    """When reading the facts or the caller's reranker fails, the recall raises that error only
    after the searches it started have finished (none is left running against a memory that may
    be closed next); reads in turn are not run at all after the failure (the episodes' search,
    which the fact index reads, runs before the facts)."""
    import threading
    import time

    from trimem.layers.episodic import EpisodicMemory
    from trimem.layers.semantic import Facts, KnowledgeBase

    mem = Memory(embedder="hashing")
    mem.retain("the billing job ran on staging", user_id="u1")
    mem.knowledge.add("Billing runbook: restart the billing job")
    _overlapping(mem, monkeypatch, overlap)
    lock = threading.Lock()
    in_flight, ran = [0], []

    def slow(original: Any, name: str) -> Any:
        def read(self: Any, *a: Any, **kw: Any) -> Any:
            with lock:
                in_flight[0] += 1
            time.sleep(0.2)
            try:
                return original(self, *a, **kw)
            finally:
                with lock:
                    in_flight[0] -= 1
                    ran.append(name)

        return read

    def broken(*a: Any, **kw: Any) -> Any:
        raise RuntimeError(f"{failing} failed")

    monkeypatch.setattr(EpisodicMemory, "search", slow(EpisodicMemory.search, "episodes"))
    monkeypatch.setattr(KnowledgeBase, "search", slow(KnowledgeBase.search, "knowledge"))
    options: dict[str, Any] = {}
    if failing == "facts":
        monkeypatch.setattr(Facts, "search", broken)
    else:
        options["rerank"] = broken
    with pytest.raises(RuntimeError, match=f"{failing} failed"):
        mem.recall("billing job", user_id="u1", now=NOW, **options)
    assert in_flight == [0]
    if overlap:  # what had started finished before the error was raised; what had not, never ran
        assert set(ran) <= {"episodes", "knowledge"}
    else:
        assert ran == ["episodes"]  # searched first (the fact index reads its ranks); nothing after the failure
    mem.close()


_FORK_SCRIPT = """
import os, sys
from datetime import UTC, datetime
from trimem import Memory
from trimem._backend.embedded.backend import EmbeddedBackend
EmbeddedBackend.concurrent_reads = property(lambda self: True)  # reads on reader threads
now = datetime(2026, 11, 25, 10, tzinfo=UTC)
path = sys.argv[1]
mem = Memory(path, embedder="hashing")
mem.retain("the billing job ran on staging", user_id="u1")
assert mem.recall("billing job", user_id="u1", now=now).episodes  # the parent's reader threads exist now
mem.close()
pid = os.fork()
if pid == 0:
    import threading
    from trimem.layers.episodic import EpisodicMemory
    search, threads = EpisodicMemory.search, []
    def recorded(self, *a, **kw):
        threads.append(threading.current_thread().name)
        return search(self, *a, **kw)
    EpisodicMemory.search = recorded
    mem = Memory(path, embedder="hashing")
    texts = [r.episode.text for r in mem.recall("billing job", user_id="u1", now=now).episodes]
    mem.close()
    ok = texts == ["the billing job ran on staging"] and threads[0].startswith("trimem-recall")
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_overlaps_its_reads_on_threads_of_its_own(tmp_path: Any) -> None:
    """The reader threads are the parent's: a child forked after a recall makes its own and its
    searches run on them (an inherited executor would queue them for threads it does not have,
    and each would end up run in turn on the child's own thread). Run in a
    fresh interpreter: forking this test process, with every thread earlier tests left running,
    is not safe whatever trimem does."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(tmp_path / "m")], timeout=120, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


def test_a_keyed_fact_is_shown_in_the_users_words_when_they_say_more() -> None:
    from datetime import timedelta

    mem = Memory(embedder=None)
    mem.retain("I live in East Van, just off Commercial Drive.", user_id="u", timestamp=NOW - timedelta(days=30))
    mem.retain("My favourite editor is Vim.", user_id="u", timestamp=NOW - timedelta(days=20))
    mem.reflect(user_id="u")
    assert mem.facts.get("city", user_id="u").value == "East Van"  # type: ignore[union-attr]
    bundle = mem.recall("Which city do I live in, and my editor?", user_id="u", now=NOW)
    assert bundle.profile_evidence == {"city": "I live in East Van, just off Commercial Drive."}
    text = bundle.render(300)
    assert "- city: I live in East Van, just off Commercial Drive. (since" in text
    assert "- editor: Vim (since" in text  # nothing more was said: the value alone
    assert text.count("Commercial Drive") == 1  # the evidence is not repeated as an event
    # a fact set by hand has no words of the user; another scope's episode is never quoted
    (city,) = [f for f in bundle.profile if f.key == "city"]
    mem.facts.set("city", "East Van", user_id="v", source=[city.source[-1]])
    assert mem.recall("Which city do I live in?", user_id="v", now=NOW).profile_evidence == {}


class _Meanings:
    """An embedder whose vectors are set per text (a unit vector for any other text)."""

    name, dim, languages = "meanings-test", 4, ("en",)

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def __call__(self, texts: list[str]):  # type: ignore[no-untyped-def]
        import numpy as np

        rows = [self.table.get(t.split("\n")[-1].strip(), [0.0, 0.0, 0.0, 1.0]) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


_NOW = datetime(2026, 11, 20, tzinfo=UTC)
_BARISTA = "I work part time as a barista at Balzac's, Fri and Sun shifts"
_QUIT_JOB = "quit the café job! I'm TAing BME101 now, 10 hrs a week"
_STUDY = "help me plan study time around work this week"


def _profile_order(
    table: dict[str, list[float]], notes: dict[str, tuple[str, int]], request: str = _STUDY
) -> list[str]:
    """The keys of the profile recall shows for `request`, with `notes` (key → text, days ago)
    set and the embedder's vectors set per text by `table`."""
    mem = Memory(embedder=_Meanings(table))
    for key, (text, days) in notes.items():
        mem.facts.set(key, text, user_id="u", at=_NOW - timedelta(days=days))
    return [f.key for f in mem.recall(request, user_id="u", now=_NOW).profile]


def test_a_newer_note_that_tells_news_comes_before_the_older_fact_nearest_to_it() -> None:
    pets = "We got a new kitten, Miso"  # news too, but nearest to nothing older above it
    table = {_BARISTA: [1.0, 0.2, 0.0, 0.0], _QUIT_JOB: [0.4, 0.9, 0.0, 0.0], pets: [0.0, 0.1, 1.0, 0.0],
             _STUDY: [1.0, 0.0, 0.2, 0.0]}  # fmt: skip
    barista, quit_job = ("note_barista", (_BARISTA, 300)), ("note_quit", (_QUIT_JOB, 20))
    order = _profile_order(table, dict([barista, quit_job, ("note_kitten", (pets, 10))]))
    assert order.index("note_quit") < order.index("note_barista") < order.index("note_kitten")
    # the same notes, the newer one telling no news: the ranking stands
    plain = "I TA BME101, 10 hrs a week"
    order = _profile_order({**table, plain: table[_QUIT_JOB]}, dict([barista, ("note_quit", (plain, 20))]))
    assert order.index("note_barista") < order.index("note_quit")
    # a later note nearer to the news is not what the news stands for: the older one still is
    later = "I TA in the Hatch building on Tuesdays"
    order = _profile_order(
        {**table, later: [0.3, 1.0, 0.0, 0.0]}, dict([barista, quit_job, ("note_hatch", (later, 5))])
    )
    assert order.index("note_quit") < order.index("note_barista")


def test_a_newer_note_that_tells_news_comes_before_the_first_older_fact_it_bears_on() -> None:
    """Not only before the nearest: a request that ranks an older fact of the same subject first
    gets the news before it, whichever older fact the news is nearest to."""
    tutoring = "Tutoring pays better than coffee, my roommate keeps saying"
    table = {_BARISTA: [1.0, 0.5, 0.0, 0.0], tutoring: [0.5, 1.0, 0.0, 0.0], _QUIT_JOB: [0.3, 1.0, 0.0, 0.0],
             _STUDY: [1.0, 0.0, 0.0, 0.0]}  # fmt: skip
    notes = {"note_barista": (_BARISTA, 300), "note_tutoring": (tutoring, 200), "note_quit": (_QUIT_JOB, 20)}
    assert _profile_order(table, notes) == ["note_quit", "note_barista", "note_tutoring"]


@pytest.mark.parametrize("overlap", [False, True])
def test_a_read_runs_once_however_often_its_result_is_asked_for(overlap: bool) -> None:
    """The fact index's search asks for the episodes found before recall collects them: the
    search must not run twice, on a reader thread or not."""
    from trimem.pipeline._overlap import Read

    calls: list[int] = []

    def search(k: int) -> list[int]:
        calls.append(k)
        return list(range(k))

    read = Read(overlap, search, 3)
    assert read.result() == [0, 1, 2] and read.result() is read.result()
    assert calls == [3]


def test_a_day_the_request_names_meets_the_habit_on_that_day() -> None:
    """A weekday in a request is a time range for the events, and a word for the habits: "a
    Thursday" meets "I volunteer Thursdays" though the search of events drops the word."""
    mem = Memory(embedder="hashing")
    for days, text in [
        (90, "I volunteer Thursdays at the food bank on Carver Street."),
        (80, "My sister Jean lives in Tenby and I visit her in September."),
        (70, "I sing in a choir and rehearsals are in the church hall."),
        (60, "My granddaughter Elsie is five and she loves dinosaurs."),
    ]:
        mem.retain(text, user_id="u1", timestamp=NOW - timedelta(days=days))
    mem.reflect(user_id="u1")
    b = mem.recall("Could the family come up on a Thursday in December?", user_id="u1", now=NOW)
    assert "Thursdays" in b.profile[0].value


def test_a_replaced_value_is_dated_once_when_it_ended_the_day_the_new_one_began() -> None:
    mem = Memory(embedder="hashing")
    mem.facts.set("city", "Leeds", user_id="u1", at=NOW - timedelta(days=90))
    mem.facts.set("city", "York", user_id="u1", at=NOW - timedelta(days=10))
    line = next(x for x in mem.recall("which city", user_id="u1", now=NOW).render().splitlines() if "York" in x)
    assert line == "- city: York (since 2026-11-15; was: Leeds)"


def test_a_replaced_value_is_shown_as_long_as_its_tokens_allow_in_any_script() -> None:
    """A superseded value is cut at ``_HISTORY_CHARS`` letters' worth, a Han character worth what
    it costs in tokens beside a letter: 120 letters of English, 15 characters of Chinese."""
    from trimem.pipeline.bundle import _HAN_ROOM, _HISTORY_CHARS

    old_zh = "俺在栖霞种了一辈子苹果，十二亩红富士，今年六十六了，儿子叫俺别干了"
    old_en = "I grew apples in Qixia all my life, twelve mu of Red Fuji, sixty-six this year, and my son says stop."
    mem = Memory(embedder="hashing")
    for key, old, new in [("farm_zh", old_zh, "地包出去了"), ("farm_en", old_en, "Leased the land out")]:
        mem.facts.set(key, old, user_id="u1", at=NOW - timedelta(days=90))
        mem.facts.set(key, new, user_id="u1", at=NOW - timedelta(days=10))
    lines = mem.recall("苹果 apples", user_id="u1", now=NOW).render().splitlines()
    zh = next(x for x in lines if x.startswith("- farm_zh"))
    en = next(x for x in lines if x.startswith("- farm_en"))
    shown_zh = zh.split("was: ")[1]
    assert shown_zh.startswith(old_zh[:10]) and shown_zh.endswith("…)")
    assert len(shown_zh) - 2 == _HISTORY_CHARS // _HAN_ROOM - 1
    assert f"was: {old_en})" in en  # under the room: whole


def test_a_lasting_note_is_shown_without_a_date_and_a_change_with_one() -> None:
    """When a change happened tells the newer of two notes; a lasting state's date spends the
    budget on nothing."""
    mem = Memory(embedder="hashing")
    mem.retain("I'm allergic to latex, gloves and balloons included.", user_id="u1", timestamp=NOW - timedelta(days=40))
    mem.retain("We moved to Gentilly, the new place has central air.", user_id="u1", timestamp=NOW - timedelta(days=9))
    mem.reflect(user_id="u1")
    lines = mem.recall("latex gloves, and the place in Gentilly", user_id="u1", now=NOW).render().splitlines()
    assert "- I'm allergic to latex, gloves and balloons included." in lines
    assert "- We moved to Gentilly, the new place has central air. (2026-11-16)" in lines


def test_a_note_that_meets_the_request_only_in_a_name_is_a_weak_match() -> None:
    """ "What's Tala's middle name?" is not answered by what the user said of Tala's tastes (the
    shared name lifts the cosine over the floor of a confident match); what they said of her
    name is, and a note meaning alone vouches for stays confident."""
    ask, coconut, name = "What's Tala's middle name?", "Tala can't stand coconut.", "Tala's middle name is Marie."
    close = "Tala is a nurse."  # as near in meaning as meaning alone vouches for
    table = {ask: [1.0, 0.0, 0.0, 0.0], coconut: [0.45, 0.89, 0.0, 0.0], name: [0.9, 0.43, 0.0, 0.0],
             close: [0.8, 0.6, 0.0, 0.0]}  # fmt: skip
    mem = Memory(embedder=_Meanings(table))
    for key, text in (("note_coconut", coconut), ("note_name", name), ("note_close", close)):
        mem.facts.set(key, text, user_id="u", at=_NOW - timedelta(days=9))
    weak = {f.key: s.weak for f, s in mem.facts.search(ask, user_id="u", k=5)}
    assert weak == {"note_coconut": True, "note_name": False, "note_close": False}


def test_a_note_that_meets_the_request_in_a_name_and_a_word_of_time_is_a_weak_match() -> None:
    """ "What year did Dagny and I get married?" shares "Dagny" and "year" with "22 years sober
    this March. Dagny still likes a glass of wine": a span of time says nothing of what is asked;
    the note of the wedding stays confident."""
    ask = "What year did Dagny and I get married?"
    sober = "22 years sober this March. Dagny still likes a glass of wine."
    wed = "Dagny and I got married in Duluth."
    table = {ask: [1.0, 0.0, 0.0, 0.0], sober: [0.55, 0.835, 0.0, 0.0], wed: [0.9, 0.43, 0.0, 0.0]}
    mem = Memory(embedder=_Meanings(table))
    mem.facts.set("note_sober", sober, user_id="u", at=_NOW - timedelta(days=9))
    mem.facts.set("note_wed", wed, user_id="u", at=_NOW - timedelta(days=9))
    weak = {f.key: s.weak for f, s in mem.facts.search(ask, user_id="u", k=5)}
    assert weak == {"note_sober": True, "note_wed": False}


def test_a_question_for_one_piece_of_someones_information_is_not_met_by_a_text_without_them() -> None:
    """ "How old is Gareth?" shares "old" with "Mot, the old dog, is fourteen": a question for one
    piece of information of someone named is not answered by a note that names no one of them;
    a request that asks for no such piece keeps the match confident."""
    ask, dog = "How old is Gareth?", "Mot, the old dog, is fourteen."
    advice = "Gareth wants an old-school present, what should I get?"
    table = {ask: [1.0, 0.0, 0.0, 0.0], advice: [1.0, 0.0, 0.0, 0.0], dog: [0.45, 0.89, 0.0, 0.0]}
    mem = Memory(embedder=_Meanings(table))
    mem.facts.set("note_dog", dog, user_id="u", at=_NOW - timedelta(days=9))
    mem.facts.set("note_swim", "I swim on Tuesdays.", user_id="u", at=_NOW - timedelta(days=9))
    weak = {f.key: s.weak for f, s in mem.facts.search(ask, user_id="u", k=5)}
    assert weak["note_dog"] is True
    assert {f.key: s.weak for f, s in mem.facts.search(advice, user_id="u", k=5)}["note_dog"] is False
