"""The memory lifecycle policy: how use reinforces importance, how time decays relevance, how
long each layer keeps what it holds, when working memory is consolidated and how duplicates
are caught. One :class:`Policy` configures all of it; the ranking terms run inside the
engine's search call, the retention arithmetic over whole columns at once.

>>> p = Policy()
>>> p.effective_importance(0.5, uses=3)
0.8
>>> round(p.lifetime_days("episodic", importance=1.0), 1)  # important items live longer
90.0
>>> explain(score=0.0263, decay=0.5, importance=0.8, accesses=3, mentions=0, policy=p)
{'score': 0.0263, 'relevance': 0.02525, 'decay': 0.5, 'decay_term': 0.00025, 'importance': 0.8, 'importance_term': 0.0008, 'accesses': 3, 'mentions': 0}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trimem.errors import InvalidArgumentError
from trimem.ops import OpForget
from trimem.records import Episode
from trimem.scope import check_id, episode_namespace, knowledge_namespace

if TYPE_CHECKING:
    from trimem.memory import Memory

DAY_US = 86_400_000_000
LAYERS = ("working", "episodic", "semantic")


class Policy(msgspec.Struct, frozen=True, kw_only=True):
    """Lifecycle settings. Defaults keep plain relevance dominant: the terms only reorder items
    of near-equal relevance. A first place in one search leg is worth 1/61 ≈ 0.0164, the most a
    fresh (`decay_weight` 0.0005) and fully important (`importance_weight` 0.001) memory gains
    is 0.0015 — the gap between ranks 1 and 7 of one leg."""

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
    working_bound: int = 30
    # Dedup at retain: token-set Jaccard and (when both have vectors) cosine thresholds.
    dedup: bool = True
    dedup_min_jaccard: float = 0.8
    dedup_min_cosine: float = 0.9
    # Recall hits are counted in memory at once and written to the log with the next write,
    # or when this many are pending.
    touch_flush: int = 512

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
        if self.working_bound < 1 or self.touch_flush < 1:
            raise InvalidArgumentError("working_bound and touch_flush must be at least 1")

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

    def r(x: float) -> float:
        return round(float(x), 6)

    return {
        "score": r(score),
        "relevance": r(score - decay_term - importance_term),
        "decay": r(decay),
        "decay_term": r(decay_term),
        "importance": r(importance),
        "importance_term": r(importance_term),
        "accesses": int(accesses),
        "mentions": int(mentions),
    }


def _positive(v: object) -> bool:
    return isinstance(v, (int, float)) and bool(np.isfinite(v)) and v > 0


def _layer(layer: str) -> str:
    if layer not in LAYERS:
        raise InvalidArgumentError(f"unknown layer {layer!r}: use one of {LAYERS}")
    return layer


# -- operations on a Memory (its methods call these) ------------------------------------------


class Consolidation(msgspec.Struct, frozen=True):
    """What consolidating a session's working memory did."""

    session_id: str
    kept: list[Episode]  # items that became episodes (or reinforced an existing one)
    expired: int  # items below the importance threshold, dropped


def consolidate(mem: Memory, session_id: str, *, user_id: str, agent_id: str, everything: bool) -> Consolidation:
    """Working items at or above `policy.consolidate_importance` become episodes (with their
    session, role and time), the rest expire. `everything` takes the live turns too (session
    end or on demand); otherwise only those the capacity bound pushed out."""
    wm = mem.working(session_id)
    items = wm.take_evicted()
    if everything:
        items += wm.take_turns()
    from trimem.memory import MAX_TEXT_CHARS, _collector_paused

    threshold = mem.policy.consolidate_importance
    # Empty or over-long turns expire instead of failing the whole consolidation. The ids are
    # checked once, through retain's own validation, for all the turns (they share them); each
    # draft gets its own keywords list and metadata dict. The cyclic collector waits, as in
    # retain_many: the batch is many small new objects and no cycles.
    with _collector_paused():
        keep = [t for t in items if t.importance >= threshold and t.text.strip() and len(t.text) <= MAX_TEXT_CHARS]
        shared = mem._episode_fields(".", user_id=user_id, agent_id=agent_id, session_id=session_id) if keep else {}
        drafts = [
            {
                **shared,
                "text": t.text,
                "role": str(t.role),
                "timestamp": int(t.timestamp),
                "importance": min(1.0, float(t.importance)),
                "keywords": [],
                "metadata": {},
            }
            for t in keep
        ]
        kept = mem._retain_drafts(drafts, None)
    return Consolidation(session_id=session_id, kept=kept, expired=len(items) - len(kept))


def forget_expired(mem: Memory, now: int, *, user_id: str | None, agent_id: str) -> dict[str, int]:
    """Applies the retention policy through the hard-delete path of `forget`: episodes and
    knowledge documents whose lifetime (from their last use, longer for important or
    reinforced ones) ran out, facts not set for the semantic lifetime (pinned facts stay; a
    fact counts as of middling importance, 0.5), and working turns past the working retention."""
    policy = mem.policy
    # One pass over the columns of the user's records (or everyone's): the policy is vectorised.
    mine = None if user_id is None else episode_namespace(agent_id, check_id("user_id", user_id))
    episode_ids = policy.expired(mem._episode_index.columns(namespace=mine), "episodic", now).tolist()
    private = None if user_id is None else knowledge_namespace(agent_id, user_id)
    knowledge_ids = policy.expired(mem._knowledge_index.columns(namespace=private), "semantic", now).tolist()
    fact_life = policy.lifetime_days("semantic", importance=0.5) * DAY_US
    facts = sorted(
        fk
        for fk, f in mem.facts._current.items()
        if (user_id is None or fk[:2] == (agent_id, user_id))
        and fk not in mem.facts._pinned
        and now - f.updated_at > fact_life
    )
    if episode_ids or knowledge_ids or facts:
        mem._commit(OpForget(episode_ids=sorted(episode_ids), knowledge_ids=sorted(knowledge_ids), facts=facts))
    turns = 0
    for wm in list(mem._working.values()):
        turns += wm.expire_older(
            lambda t: now - t.timestamp > policy.lifetime_days("working", importance=t.importance) * DAY_US
        )
    return {"episodes": len(episode_ids), "knowledge": len(knowledge_ids), "facts": len(facts), "working": turns}
