"""A keyword match that meaning does not support is confident only when it covers the request:
a request about what was never said shares a word with some memory, and that alone must not pose
as an answer (``Floors.whole_share``, ``MIN_WHOLE_SHARE``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from trimem import Memory
from trimem.config import MIN_WHOLE_SHARE

DIM = 8
TYPE_RATING = "Converted onto the 777 and finished the type rating."
OTHERS = ["The bakery opens at seven.", "Sister lives in Lyon.", "We ordered new flour from the mill."]
REQUEST = "What is the blood type?"


class _Planted:
    """Every text on its own axis, except those given a vector: cosines are planted exactly."""

    name = "planted"
    dim = DIM

    def __init__(self, planted: dict[str, list[float]]) -> None:
        self.planted = planted
        self.axis: dict[str, int] = {}

    def __call__(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), DIM), np.float32)
        for i, t in enumerate(texts):
            if t in self.planted:
                out[i] = self.planted[t]
            else:
                out[i, 4 + self.axis.setdefault(t, len(self.axis)) % 4] = 1.0
        return out


def _memory(planted: dict[str, list[float]]) -> Memory:
    mem = Memory(embedder=_Planted(planted))
    for i, text in enumerate([TYPE_RATING, *OTHERS]):
        mem.retain(text, user_id="u", session_id=f"s{i}")  # one session each: embedded alone
    return mem


def test_one_shared_word_without_support_of_meaning_is_weak() -> None:
    # the request and the memory are orthogonal: meaning does not support the match on "type"
    mem = _memory({TYPE_RATING: [1, 0, 0, 0, 0, 0, 0, 0], REQUEST: [0, 1, 0, 0, 0, 0, 0, 0]})
    hits = mem.search(REQUEST, user_id="u")
    assert [h.episode.text for h in hits] == [TYPE_RATING]
    assert hits[0].scored.weak and hits[0].scored.cosine is None


def test_the_same_word_supported_by_meaning_is_confident() -> None:
    # cosine 0.5: over the unrelated floor (0.3), under the alone floor (0.6)
    half = [math.sqrt(0.25), math.sqrt(0.75), 0, 0, 0, 0, 0, 0]
    mem = _memory({TYPE_RATING: [1, 0, 0, 0, 0, 0, 0, 0], REQUEST: half})
    (hit,) = mem.search(REQUEST, user_id="u")
    assert not hit.scored.weak and hit.scored.cosine is not None and abs(hit.scored.cosine - 0.5) < 1e-5


def test_a_match_on_the_whole_request_needs_no_support() -> None:
    mem = _memory({TYPE_RATING: [1, 0, 0, 0, 0, 0, 0, 0], "777 type rating": [0, 1, 0, 0, 0, 0, 0, 0]})
    (hit,) = mem.search("777 type rating", user_id="u")
    assert not hit.scored.weak and hit.scored.cosine is None


def test_support_is_read_from_the_stored_vector_when_the_vector_leg_did_not_reach_the_hit() -> None:
    """A hit outside the vector leg's candidates has no vector score: its stored vector says
    whether meaning supports it (here a keyword-only search, where no hit has one)."""
    from trimem import HybridIndex
    from trimem._backend.embedded.backend import EmbeddedBackend

    idx = HybridIndex(dim=DIM)
    vectors = np.zeros((3, DIM), np.float32)
    vectors[0, :2] = [math.sqrt(0.75), 0.5]  # cosine 0.5 with the request
    vectors[1, 2] = 1.0  # cosine 0
    vectors[2, :2] = [0.9, 0.2179]  # cosine about 0.236: under the floor
    vectors[2] /= np.linalg.norm(vectors[2])
    texts = ["finished the type rating", "a type of bread", "type A personality"]
    idx.add(ids=[1, 2, 3], texts=texts, timestamps=[0, 0, 0], namespaces=["u"] * 3, vectors=vectors)
    request = np.zeros(DIM, np.float32)
    request[1] = 2.0  # not of unit length: the cosine is taken, not the dot product
    hits = idx.search(text="blood type", k=3, mode="bm25")
    assert np.isnan(hits.vector_scores).all()
    support = EmbeddedBackend._supported(idx, hits, request, 0.3, np.ones(len(hits.ids), bool))
    cos = {1: 0.5, 2: 0.0, 3: float(vectors[2, 1])}
    assert cos[3] < 0.3
    assert dict(zip(hits.ids.tolist(), support.tolist(), strict=True)) == {i: c >= 0.3 for i, c in cos.items()}
    none_asked = EmbeddedBackend._supported(idx, hits, request, 0.3, np.zeros(len(hits.ids), bool))
    assert not none_asked.any()


def test_the_whole_request_floor_is_the_documented_default() -> None:
    from trimem._backend import Floors

    assert Floors(bm25_share=0.3, cosine=0.3, cosine_alone=0.6).whole_share == MIN_WHOLE_SHARE == 0.45


def test_without_a_vector_the_keyword_floor_alone_decides() -> None:
    mem = Memory(embedder=None)
    for text in [TYPE_RATING, *OTHERS]:
        mem.retain(text, user_id="u")
    (hit,) = mem.search(REQUEST, user_id="u")
    assert not hit.scored.weak  # no meaning to ask: a keyword-only memory keeps its floor


@pytest.mark.embedded_only  # reads the engine's floor
@pytest.mark.parametrize(("cosine", "weak"), [(0.5, False), (0.4, True)])
def test_a_match_both_legs_find_part_way_is_confident(cosine: float, weak: bool) -> None:
    """One keyword of six (under the keyword floor) and a cosine past halfway from the unrelated
    floor (0.3) to the alone floor (0.6), that is 0.45: confident; at 0.4: weak."""
    others = ["Blood bank visit on Monday.", "Pilot training schedule posted.", "Sim session was long.",
              "Crew roster published.", "Fuel prices went up."]  # fmt: skip
    request = "blood pilot sim crew fuel type"
    planted = {TYPE_RATING: [1, 0, 0, 0, 0, 0, 0, 0], request: [cosine, math.sqrt(1 - cosine**2), 0, 0, 0, 0, 0, 0]}
    mem = Memory(embedder=_Planted(planted))
    for i, text in enumerate([TYPE_RATING, *others]):
        mem.retain(text, user_id="u", session_id=f"s{i}")
    (hit,) = [h for h in mem.search(request, user_id="u", k=6) if h.episode.text == TYPE_RATING]
    assert hit.scored.bm25 is not None and hit.scored.bm25 < mem._backend._episodes.bm25_floor(request, 0.3)
    assert hit.scored.cosine == pytest.approx(cosine, abs=1e-6) and hit.scored.weak is weak


FACT_QUESTION = "What is the blood type again?"
TASK = "Note the blood type on the donor form."


@pytest.mark.parametrize(("request_text", "cosine", "weak"), [
    # a question for a fact: the support needed is three quarters of the way, 0.525, also
    # where both legs find the hit (0.45 would do for any other request)
    (FACT_QUESTION, 0.5, True),
    (FACT_QUESTION, 0.55, False),
    (TASK, 0.4, False),  # a task: the unrelated floor, 0.3, is support enough
    (TASK, 0.5, False),
])  # fmt: skip
def test_a_question_for_a_fact_needs_more_meaning_to_support_a_partial_match(
    request_text: str, cosine: float, weak: bool
) -> None:
    """A question asking for a fact ("when's Linda's birthday?") is not answered by a memory that
    shares only its subject; a task naming the same thing is helped by it."""
    from trimem.text.asking import asks_for_fact

    assert asks_for_fact(request_text) is (request_text == FACT_QUESTION)
    mem = _memory({TYPE_RATING: [1, 0, 0, 0, 0, 0, 0, 0],
                   request_text: [cosine, math.sqrt(1 - cosine**2), 0, 0, 0, 0, 0, 0]})  # fmt: skip
    hit = next(h for h in mem.search(request_text, user_id="u") if h.episode.text == TYPE_RATING)
    assert hit.scored.cosine == pytest.approx(cosine, abs=1e-6) and hit.scored.weak is weak


def test_the_support_of_meaning_defaults_to_the_unrelated_floor() -> None:
    from trimem._backend import Floors

    assert Floors(bm25_share=0.3, cosine=0.3, cosine_alone=0.6).support_cosine == 0.3
    assert Floors(bm25_share=0.3, cosine=0.3, cosine_alone=0.6, support=0.525).support_cosine == 0.525
