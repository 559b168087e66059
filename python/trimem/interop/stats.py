"""Statistics of a memory per layer, for one user or the whole store.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.retain("Production database is PostgreSQL 16", user_id="u1")
>>> mem.stats(user_id="u1").episodic.count
1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trimem.config import DAY_US
from trimem.scope import check_id, episode_namespace, knowledge_namespace

if TYPE_CHECKING:
    from trimem._backend import Backend, Columns
    from trimem.layers.working import Sessions


__all__ = ["CollectionStats", "SemanticStats", "Stats", "WorkingStats", "stats"]


class CollectionStats(msgspec.Struct, frozen=True):
    """Counts, bytes, ages (days) and uses of the records of one collection."""

    count: int
    bytes: int = 0
    oldest_days: float | None = None
    newest_days: float | None = None
    median_age_days: float | None = None
    accesses: int = 0
    mentions: int = 0


class SemanticStats(msgspec.Struct, frozen=True):
    facts: int
    fact_versions: int
    knowledge: CollectionStats


class WorkingStats(msgspec.Struct, frozen=True):
    sessions: int
    turns: int


class Stats(msgspec.Struct, frozen=True):
    """What a memory holds, per layer; ``users`` (episodes per "agent/user") for the whole
    store only; the engine's own index statistics."""

    episodic: CollectionStats
    semantic: SemanticStats
    working: WorkingStats
    embedder: str | None
    indexes: dict[str, dict[str, Any]]
    users: dict[str, int] | None = None

    @property
    def episodes(self) -> int:
        return self.episodic.count

    @property
    def knowledge(self) -> int:
        return self.semantic.knowledge.count

    @property
    def facts(self) -> int:
        return self.semantic.facts


def _summary(cols: Columns, now: int) -> CollectionStats:
    n = len(cols["ids"])
    if not n:
        return CollectionStats(count=0)
    ages = (now - cols["timestamps"].astype(np.int64)) / DAY_US
    return CollectionStats(
        count=n,
        bytes=int(cols["bytes"].sum()),
        oldest_days=round(float(ages.max()), 3),
        newest_days=round(float(ages.min()), 3),
        median_age_days=round(float(np.median(ages)), 3),
        accesses=int(cols["accesses"].sum()),
        mentions=int(cols["mentions"].sum()),
    )


def stats(
    backend: Backend, sessions: Sessions, *, user_id: str | None, agent_id: str, now: int, embedder: str | None
) -> Stats:
    """Per layer (and for one user when given): counts, bytes and ages in days."""
    if user_id is not None:
        ep = backend.columns("episodes", episode_namespace(agent_id, check_id("user_id", user_id)))
        kn = backend.columns("knowledge", knowledge_namespace(agent_id, user_id))
        facts = [f for _, _, f in backend.facts(agent_id, user_id)]
        users = None
    else:
        check_id("agent_id", agent_id)
        ep, kn = backend.columns("episodes", None), backend.columns("knowledge", None)
        facts = [f for _, _, f in backend.facts()]
        users = {f"{a}/{u}": len(backend.episode_ids(episode_namespace(a, u))) for a, u in backend.users()}
    live = sessions.live()
    return Stats(
        episodic=_summary(ep, now),
        semantic=SemanticStats(
            facts=len(facts), fact_versions=sum(len(f.history) for f in facts), knowledge=_summary(kn, now)
        ),
        working=WorkingStats(sessions=len(live), turns=sum(len(w) for w in live)),
        embedder=embedder,
        indexes=backend.index_stats(),
        users=users,
    )
