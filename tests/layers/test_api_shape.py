"""The shape of the public API: reads agree (a missing record is None everywhere), knowledge
can be listed and deleted by scope, unknown keyword options are refused with a typed error, and
the results of statistics, export and retention are typed records."""

from __future__ import annotations

from pathlib import Path

import pytest

import trimem
from trimem import Memory
from trimem.interop.stats import Stats
from trimem.interop.transfer import Exported


def test_a_missing_record_reads_as_none_everywhere() -> None:
    mem = Memory(embedder=None)
    assert mem.get(12345) is None
    assert mem.knowledge.get(12345) is None
    assert mem.facts.get("nothing", user_id="u") is None


def test_knowledge_is_listed_and_deleted_by_scope() -> None:
    mem = Memory(embedder=None)
    shared = mem.knowledge.add("Travel policy: taxi up to 100 per day", source="policy.md")
    private = mem.knowledge.add("My own runbook", user_id="u1")
    assert [d.id for d in mem.knowledge.list()] == [shared.id]
    assert [d.id for d in mem.knowledge.list(user_id="u1")] == [private.id]
    with pytest.raises(trimem.UnknownIdError):
        mem.knowledge.delete([private.id])  # not among the shared documents: nothing changes
    assert mem.knowledge.get(private.id) == private
    assert mem.knowledge.delete([private.id], user_id="u1") == 1
    assert mem.knowledge.get(private.id) is None and mem.knowledge.list(user_id="u1") == []
    assert [r.doc.id for r in mem.knowledge.search("taxi policy")] == [shared.id]


def test_a_new_version_of_a_source_supersedes_the_old_one() -> None:
    mem = Memory(embedder=None)
    v1 = mem.knowledge.add("taxi up to 100 per day", source="policy.md")
    v2 = mem.knowledge.add("taxi up to 120 per day", source="policy.md")
    assert v2.version == 2 and mem.knowledge.get(v1.id) is None
    assert [d.text for d in mem.knowledge.list()] == ["taxi up to 120 per day"]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.retain("x", user_id="u", sesion_id="typo"),
        lambda m: m.retain_many([{"text": "x", "user_id": "u", "colour": "red"}]),
        lambda m: m.search("x", user_id="u", kk=3),
        lambda m: m.recall("x", user_id="u", top_k=3),
        lambda m: m.retain_many(["not a mapping"]),
    ],
)
def test_unknown_options_are_refused_with_a_typed_error(call) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(embedder=None)
    with pytest.raises(trimem.InvalidArgumentError):
        call(mem)
    assert mem.stats().episodes == 0


def test_results_are_typed_records(tmp_path: Path) -> None:
    mem = Memory(embedder=None)
    mem.retain("the release train leaves on thursdays", user_id="u")
    mem.facts.set("editor", "vim", user_id="u")
    stats = mem.stats(user_id="u")
    assert isinstance(stats, Stats) and (stats.episodes, stats.facts, stats.knowledge) == (1, 1, 0)
    assert stats.episodic.count == 1 and stats.users is None and mem.stats().users == {"default/u": 1}
    written = mem.export(tmp_path / "u.trimem", user_id="u")
    assert isinstance(written, Exported) and (written.episodes, written.facts) == (1, 1)
    assert mem.forget_expired().episodes == 0


def test_a_second_open_of_one_folder_in_one_process_says_so(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=None):
        with pytest.raises(trimem.StoreLockedError, match="already open in this process"):
            Memory(tmp_path / "m", embedder=None)
    with Memory(tmp_path / "m", embedder=None) as again:  # closed: free to open
        assert again.recovery() is not None


def test_a_merged_retain_says_so_and_keeps_the_callers_details(tmp_path: Path) -> None:
    with Memory(tmp_path / "m", embedder=None) as mem:
        first = mem.retain("We moved billing to Fly.io after the outage", user_id="u", session_id="s1")
        assert first.mention is None
        again = mem.retain(
            "we moved billing to fly.io after the outage!", user_id="u", session_id="s2", metadata={"via": "slack"},
            timestamp=1_800_000_000_000_000,
        )  # fmt: skip
        assert again.id == first.id and again.mention is not None
        assert (again.mention.session_id, again.mention.metadata, again.mention.at) == (
            "s2", {"via": "slack"}, 1_800_000_000_000_000,
        )  # fmt: skip
        assert again.text == first.text and mem.get(first.id) == first  # the stored episode is unchanged
        assert mem.mentions(first.id) == [again.mention]
    for checkpoint in (False, True):
        with Memory(tmp_path / "m", embedder=None) as mem:
            assert [m.session_id for m in mem.mentions(first.id)] == ["s2"]
            if checkpoint:
                mem.checkpoint()
    with Memory(tmp_path / "m", embedder=None) as mem:
        assert [m.text for m in mem.mentions(first.id)] == ["we moved billing to fly.io after the outage!"]
        mem.forget([first.id], user_id="u")
        assert mem.mentions(first.id) == []
