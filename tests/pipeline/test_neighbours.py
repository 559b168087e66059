"""A recalled turn is credited with a share of its session neighbours' scores (``Policy.neighbour_share``):
checked against a hand computation from the same recall without the credit, with weak labels kept,
confident turns first, and a short recall the head of a long one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from trimem import Memory, Policy
from trimem.errors import InvalidArgumentError

T0 = datetime(2026, 6, 1, tzinfo=UTC)
TURNS = [
    ("s1", "Ana: Did you finally go to the lake house this summer?"),
    ("s1", "Ben: Yes, last weekend! The water was freezing."),
    ("s2", "Ana: My sister visited and we baked bread all weekend."),
    ("s2", "Ben: Sounds lovely, what kind of bread?"),
    ("s3", "Ana: The house next door is for sale again."),
    ("s3", "Ben: Summer is almost over, sadly."),
    (None, "Ben: Weekend plans: nothing, finally."),
]
QUESTION = "When did Ben go to the lake house?"


def _memory(share: float) -> Memory:
    mem = Memory(embedder="hashing", policy=Policy(neighbour_share=share))
    for i, (session, text) in enumerate(TURNS):
        mem.retain(text, user_id="u", session_id=session, timestamp=T0 + timedelta(days=i))
    return mem


def _recall(mem: Memory, k: int = 7) -> list[tuple[str, float, bool, float | None]]:
    bundle = mem.recall(QUESTION, user_id="u", k=k, now=T0 + timedelta(days=30), touch=False)
    return [(r.episode.text, r.scored.score, r.scored.weak, r.scored.explain.get("context")) for r in bundle.episodes]


def test_the_credit_is_the_share_of_the_better_neighbour() -> None:
    base = {text: (score, weak) for text, score, weak, context in _recall(_memory(0.0))}
    assert all(context is None for *_, context in _recall(_memory(0.0)))
    got = _recall(_memory(0.2))
    assert {text for text, *_ in got} == set(base)
    for text, score, weak, context in got:
        i = next(n for n, (_, t) in enumerate(TURNS) if t == text)
        session = TURNS[i][0]
        around = [TURNS[j][1] for j in (i - 1, i + 1) if 0 <= j < len(TURNS) and session and TURNS[j][0] == session]
        want = 0.2 * max((base[t][0] for t in around if t in base), default=0.0)
        assert score == pytest.approx(base[text][0] + want, abs=1e-6)
        assert (context or 0.0) == pytest.approx(want, abs=1e-6)
        assert weak == base[text][1]  # the credit moves ranks, never labels
    assert any(context for *_, context in got)
    weak_flags = [weak for _, _, weak, _ in got]
    assert weak_flags == sorted(weak_flags)  # confident turns first
    for group in (False, True):
        scores = [score for _, score, weak, _ in got if weak is group]
        assert scores == sorted(scores, reverse=True)


def test_a_short_recall_is_the_head_of_a_long_one() -> None:
    mem = _memory(0.2)
    assert _recall(mem, k=2) == _recall(mem, k=7)[:2]


def test_the_share_is_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="neighbour_share"):
        Policy(neighbour_share=1.5)


def test_only_turns_of_a_session_are_looked_up_and_none_when_no_turn_has_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn told outside a session has no neighbours: the read (a round trip on a server) is
    asked for the found turns that have a session only, and not made when none has."""
    mem = _memory(0.2)
    backend = mem._backend
    asked: list[list[int]] = []
    original = backend.session_neighbours

    def spy(namespace: str, ids: list[int]) -> list[tuple[int | None, int | None]]:
        asked.append(list(ids))
        return original(namespace, ids)

    monkeypatch.setattr(backend, "session_neighbours", spy)
    _recall(mem)
    in_session = {e.id for e in mem.episodes(user_id="u") if e.session_id is not None}
    assert asked and set(asked[0]) <= in_session
    outside = Memory(embedder="hashing", policy=Policy(neighbour_share=0.2))
    for i, (_, text) in enumerate(TURNS):
        outside.retain(text, user_id="u", timestamp=T0 + timedelta(days=i))
    monkeypatch.setattr(outside._backend, "session_neighbours", spy)
    asked.clear()
    assert _recall(outside)
    assert asked == []
