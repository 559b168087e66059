"""Every default of trimem, in one place: the lifecycle :class:`Policy` (ranking, reinforcement,
retention, consolidation, dedup, working memory) and the limits and floors of the memory layers.

>>> p = Policy()
>>> p.effective_importance(0.5, uses=3)
0.8
>>> round(p.lifetime_days("episodic", importance=1.0), 1)  # important items live longer
90.0
>>> explain(score=0.0263, decay=0.5, importance=0.8, accesses=3, mentions=0, policy=p)
{'score': 0.0263, 'relevance': 0.02525, 'decay': 0.5, 'decay_term': 0.00025, 'importance': 0.8, 'importance_term': 0.0008, 'accesses': 3, 'mentions': 0}
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
import numpy as np

from trimem.errors import InvalidArgumentError

__all__ = [
    "AGREEMENT_WEIGHT",
    "CHECKPOINT_BYTES",
    "DAY_US",
    "FACET_WEIGHT",
    "FACT_QUESTION_SUPPORT",
    "FACT_VECTOR_WEIGHT",
    "ITEM_SEARCH_EF",
    "LAYERS",
    "MAX_BATCH",
    "MAX_TEXT_CHARS",
    "MIN_BM25_SHARE",
    "MIN_COSINE",
    "MIN_COSINE_ALONE",
    "MIN_WHOLE_SHARE",
    "NEIGHBOUR_POOL",
    "NEIGHBOUR_STEPS",
    "SUBJECT_FACET_WEIGHT",
    "Policy",
    "explain",
]

MAX_TEXT_CHARS: Final = 100_000
"""Longest text one episode, document or query may hold (split longer ones)."""
MAX_BATCH: Final = 1024
"""A retain batch lands as log records of at most this many episodes (written together, one
fsync): no single copy or encoding of a record's vectors holds the interpreter long enough to
stall an event loop beside it."""
CHECKPOINT_BYTES: Final = 64 << 20
"""Log size at which the embedded store writes a snapshot (a reopen replays at most this)."""
ITEM_SEARCH_EF: Final = 128
"""How wide an item search walks the vector graph (at least the items it returns): a store's
search is a top-k read whose caller expects the exact nearest, so it looks wider than recall,
which fuses several legs."""
MIN_BM25_SHARE: Final = 0.3
"""A confident keyword match scores this share of what an average document holding each query
term once scores. Floors rank, they do not cut: a hit under both confident floors is labelled
weak and ranked after the confident ones."""
MIN_WHOLE_SHARE: Final = 0.45
"""A keyword match that meaning does not support (its cosine under the embedder's unrelated
floor) is confident only from this share of what a document holding every word of the request
once scores, words no record holds included: a request about what was never said ("my blood
type?") shares one word with some record ("type rating")."""
FACT_QUESTION_SUPPORT: Final = 0.75
"""How far from the unrelated floor towards the confident-alone one (0: the unrelated floor, 1:
the alone floor) meaning must reach to support a keyword match under the whole-request floor, or
a hit both legs find, when the request asks for a fact of the asker's life ("when's Linda's
birthday again?"): a memory sharing only its subject ("Linda does the books") does not answer
it. Calibrated on requests about what was never said, against the share of LoCoMo's evidence
labelled weak and the profile suites' other probes."""
MIN_COSINE: Final = 0.3
"""Under this cosine a vector match counts for nothing: a hit that shares no keyword either is
unrelated and dropped."""
MIN_COSINE_ALONE: Final = 0.6
"""A confident match on similarity alone (no keyword needed) reaches this cosine."""

NEIGHBOUR_POOL: Final = 20
"""Candidates a recall weighs at least when it credits a turn with its neighbours' scores
(``Policy.neighbour_share``); twice ``k`` when that is more. Every recall of ``k`` ≤ 10 weighs the
same pool, so a short recall is the head of a longer one."""
NEIGHBOUR_STEPS: Final = 64
"""How many records of a user's episodes, in time order, the embedded store walks each way from
a turn to find the turns said just before and after it in its session."""

SAME_SUBJECT_COSINE: Final = 0.45
"""A note that states a change replaces the earlier note this close in meaning (or sharing a
word with it): "I drive in now" supersedes "I take the 7:40 express bus"."""
PROFILE_K: Final = 12
"""Facts and notes a recall finds by keywords and meaning in the fact index, besides the pinned
ones and those the request names by key."""
REORDER_POOL: Final = 1.5
"""How many times a search's ``k`` facts the legs that reorder a fact search (the request's
facets of life, agreement with the episodes) read before the best ``k`` are kept: a fact only
the part of life it is about ties to the request ("driving" and "a Ford Maverick") ranks low by
words and meaning alone. (Twice ``k`` finds no more on the phrasing suites, at twice the cost.)"""
FACT_VECTOR_WEIGHT: Final = 3.0
"""The vector leg's fusion weight in a search of the fact index, against the keywords' 1 (times
the embedder's weight for the request's language): a profile is a few dozen short statements
that share everyday words with any request ("my", "work", "week"), and a request names a fact
by what it means more often than by its words ("book a restaurant" for "I'm vegetarian")."""
FACET_WEIGHT: Final = 1.0
"""The fusion weight of the facet leg in a search of the fact index (:mod:`trimem.text.facets`):
the facts touching the facets of life a request touches ("get to the expo" and "I can't drive")
rank higher, against the keywords' 1 and the vector's ``FACT_VECTOR_WEIGHT``."""
SCENE_FACET_SHARE: Final = 0.5
"""What a facet of life only a request's scene touches weighs in the facet leg, against one of
the sentences that ask (:func:`trimem.text.focus.asked_part`): "My cousin's getting married in
Phoenix. What's the best way to get there?" needs the user's travel before their family."""
AGREEMENT_WEIGHT: Final = 0.5
"""The fusion weight, in a search of the fact index made for recall, of the leg that ranks a fact
by where the user's words it was read from rank among the episodes found for the same request:
two searches of different texts (the user's facts, everything said) agreeing tell more than
either."""

SUBJECT_FACET_WEIGHT: Final = 0.5
"""When reflect looks for the note a change replaces: what a facet of life shared with the change
(home, work, getting around; :mod:`trimem.text.facets`) weighs beside a word shared with it
(1, less for a word many notes share). It breaks ties of words: "Moved out of the Obs house!"
replaces "I live in a house share", not "we do a gig in Obs"."""

PROFILE_SHARE: Final = 0.6
"""The share of a rendered context the profile may fill: the rest is left to the events and
documents recalled."""

DAY_US = 86_400_000_000
LAYERS = ("working", "episodic", "semantic")


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    """Lifecycle settings. Defaults keep plain relevance dominant: the terms only reorder items
    of near-equal relevance. A first place in one search leg is worth 1/(rrf_k + 1) = 1/11; the
    most a fresh (`decay_weight` 0.0005) and fully important (`importance_weight` 0.001) memory
    gains, 0.0015, is the gap between ranks 15 and 16 of one leg. The search defaults (fusion,
    context of a turn's vector, analysis) were chosen on LoCoMo's conv-26 and conv-30 through
    `Memory.recall` (benches/RESULTS.md)."""

    # Ranking: fused relevance + decay_weight · 0.5^(age / half-life) + importance_weight · importance.
    half_life_days: dict[str, float] = msgspec.field(
        default_factory=lambda: {"working": 1.0, "episodic": 30.0, "semantic": 365.0}
    )
    decay_weight: float = 0.0005
    importance_weight: float = 0.001
    # Reinforcement: effective importance = base + min(reinforce_cap, reinforce_step · uses), ≤ 1.
    reinforce_step: float = 0.1
    reinforce_cap: float = 0.5
    # Retention: a layer keeps an item retention · (1 + life_boost · importance) after its last use.
    retention_days: dict[str, float] = msgspec.field(
        default_factory=lambda: {"working": 1.0, "episodic": 30.0, "semantic": 365.0}
    )
    life_boost: float = 2.0
    # Consolidation: working items at or above this importance become episodes.
    consolidate_importance: float = 0.7
    # Working memory: turns a session keeps before the oldest are consolidated or expire. A
    # turn also expires once older than retention_days["working"].
    working_bound: int = 30
    # Dedup at retain: token-set Jaccard and (when both have vectors) cosine thresholds.
    dedup: bool = True
    dedup_min_jaccard: float = 0.8
    dedup_min_cosine: float = 0.9
    # Recall hits are counted in memory at once and written to the log with the next write,
    # or when this many are pending.
    touch_flush: int = 512
    # Fusion: a hit scores weight / (rrf_k + rank) in each search leg (keywords, vector).
    rrf_k: float = 10.0
    weights: tuple[float, float] = (1.0, 1.0)
    # The vector of an episode retained in a session embeds this many turns before it in the
    # same session with its own text ("Yes, last weekend!" means little alone); keywords see the
    # turn alone.
    embed_context: int = 1
    # Recall credits a turn with this share of the fused score of the better of its neighbours
    # in its session (the turns said just before and after it): the request's words are often
    # in the turn an answer ("Yes, last weekend!") replies to, or in the reply to what a turn
    # says. 0 ranks each turn on its own.
    neighbour_share: float = 0.2
    # Keyword analysis of a new store's indexes: English stemming ("running" finds "ran"s
    # neighbour "run") and English stop words. A store keeps the analysis it was created with.
    stem: bool = True
    stopwords: bool = True

    def __post_init__(self) -> None:
        for name in ("half_life_days", "retention_days"):
            table = getattr(self, name)
            if set(table) != set(LAYERS) or not all(_positive(v) for v in table.values()):
                raise InvalidArgumentError(f"{name} needs a positive number of days for each of {LAYERS}")
        for name in ("decay_weight", "importance_weight", "reinforce_step", "reinforce_cap", "life_boost"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise InvalidArgumentError(f"{name} must be a finite number >= 0, got {v!r}")
        for name in ("consolidate_importance", "dedup_min_jaccard"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise InvalidArgumentError(f"{name} must be in [0, 1], got {v!r}")
        if not -1.0 <= self.dedup_min_cosine <= 1.0:
            raise InvalidArgumentError(f"dedup_min_cosine must be in [-1, 1], got {self.dedup_min_cosine!r}")
        if not (isinstance(self.rrf_k, (int, float)) and np.isfinite(self.rrf_k) and self.rrf_k >= 0):
            raise InvalidArgumentError(f"rrf_k must be a finite number >= 0, got {self.rrf_k!r}")
        if len(self.weights) != 2 or not all(np.isfinite(w) and w >= 0 for w in self.weights):
            raise InvalidArgumentError(f"weights must be two finite numbers >= 0, got {self.weights!r}")
        if not (isinstance(self.neighbour_share, (int, float)) and 0.0 <= self.neighbour_share <= 1.0):
            raise InvalidArgumentError(f"neighbour_share must be in [0, 1], got {self.neighbour_share!r}")
        if not 0 <= self.embed_context <= 8:
            raise InvalidArgumentError(f"embed_context must be in [0, 8], got {self.embed_context!r}")
        if self.working_bound < 1 or self.touch_flush < 1:
            raise InvalidArgumentError("working_bound and touch_flush must be at least 1")

    @property
    def working_ttl_seconds(self) -> float:
        """How long a working-memory turn lives (``retention_days["working"]``)."""
        return self.retention_days["working"] * 86_400.0

    def half_life_us(self, layer: str) -> float:
        return self.half_life_days[_layer(layer)] * DAY_US

    def effective_importance(self, base: float, uses: int) -> float:
        """Base importance grown by use (the same function the engine applies in search)."""
        return float(self.effective(np.asarray(base, np.float64), np.asarray(uses, np.float64)))

    def effective(self, base: np.ndarray, uses: np.ndarray) -> np.ndarray:
        """`effective_importance` over whole columns (an importance set at or above 1 is kept).
        Rounded to 6 places: the engine stores importance as float32, and 0.7 read back as
        0.69999999 must still reach a threshold of 0.7."""
        grown = np.minimum(1.0, base + np.minimum(self.reinforce_cap, self.reinforce_step * uses))
        return np.round(np.where(base >= 1.0, base, grown), 6)

    def effective_of(self, columns: dict[str, np.ndarray]) -> np.ndarray:
        """Effective importance of the records of `HybridIndex.columns`."""
        uses = columns["accesses"].astype(np.float64) + columns["mentions"]
        return self.effective(columns["importance"].astype(np.float64), uses)

    def lifetime_days(self, layer: str, *, importance: float) -> float:
        return self.retention_days[_layer(layer)] * (1.0 + self.life_boost * importance)

    def search_terms(self, layer: str, now: int) -> dict[str, Any]:
        """The keyword arguments of `HybridIndex.search` that apply this policy."""
        return dict(
            half_life=self.half_life_us(layer),
            now=now,
            decay_weight=self.decay_weight,
            importance_weight=self.importance_weight,
            reinforce_step=self.reinforce_step,
            reinforce_cap=self.reinforce_cap,
            rrf_k=self.rrf_k,
            weights=self.weights,
        )

    def expired(self, columns: dict[str, np.ndarray], layer: str, now: int) -> np.ndarray:
        """Ids (from `HybridIndex.columns`) whose lifetime ran out by `now`: age counts from
        the last use (or the timestamp if never used), lifetime grows with effective importance."""
        since = np.maximum(columns["timestamps"], columns["last_access"])
        lifetime = self.retention_days[_layer(layer)] * DAY_US * (1.0 + self.life_boost * self.effective_of(columns))
        expired: np.ndarray = columns["ids"][(now - since) > lifetime]
        return expired


def explain(
    *, score: float, decay: float, importance: float, accesses: int, mentions: int, policy: Policy
) -> dict[str, Any]:
    """Each term of a hit's score: fused relevance, the decay term and the importance term."""
    decay_term = policy.decay_weight * decay
    importance_term = policy.importance_weight * importance

    return {
        "score": round(score, 6),
        "relevance": round(score - decay_term - importance_term, 6),
        "decay": round(decay, 6),
        "decay_term": round(decay_term, 6),
        "importance": round(importance, 6),
        "importance_term": round(importance_term, 6),
        "accesses": int(accesses),
        "mentions": int(mentions),
    }


def _positive(v: object) -> bool:
    return isinstance(v, (int, float)) and bool(np.isfinite(v)) and v > 0


def _layer(layer: str) -> str:
    if layer not in LAYERS:
        raise InvalidArgumentError(f"unknown layer {layer!r}: use one of {LAYERS}")
    return layer
