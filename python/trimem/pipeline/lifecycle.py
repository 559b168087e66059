"""The memory lifecycle across layers: consolidation of working memory into episodes, forgetting
(by hand, the right to be forgotten, and retention running out) and sharing between agents.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.retain("Production database is PostgreSQL 16", user_id="u1", agent_id="ops", importance=0.9)
>>> [e.metadata["shared_from"]["agent_id"] for e in mem.share(from_agent="ops", to_agent="support", user_id="u1")]
['ops']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from trimem._backend.ops import OpForget
from trimem._checks import check_bool, check_index, shown
from trimem.config import DAY_US, MAX_TEXT_CHARS
from trimem.errors import InvalidArgumentError, UnknownIdError
from trimem.layers._shared import collector_paused
from trimem.records import Episode, retain_item
from trimem.scope import check_id, episode_namespace, knowledge_namespace
from trimem.timeutil import TimeLike

if TYPE_CHECKING:
    from trimem._backend import Backend
    from trimem.config import Policy
    from trimem.layers.episodic import EpisodicMemory
    from trimem.layers.working import Sessions


__all__ = ["Consolidation", "Expired", "Lifecycle"]


def _ids(name: str, values: object) -> list[int]:
    """Record ids as ints; one that no id can be becomes -1 (no such record)."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidArgumentError(f"{name} must be a list of integer ids, got {shown(values)}")
    out = []
    for v in values:
        i = check_index(f"an id of {name}", v)
        out.append(-1 if i is None else i)
    return out


class Consolidation(msgspec.Struct, frozen=True):
    """What consolidating a session's working memory did."""

    session_id: str
    kept: list[Episode]  # items that became episodes (or reinforced an existing one)
    expired: int  # items below the importance threshold, dropped


class Expired(msgspec.Struct, frozen=True):
    """What applying the retention policy deleted, per layer."""

    episodes: int
    knowledge: int
    facts: int
    working: int


class Lifecycle:
    """Consolidation, forgetting and sharing over one memory's layers."""

    def __init__(
        self,
        backend: Backend,
        *,
        episodic: EpisodicMemory,
        sessions: Sessions,
        policy: Policy,
    ) -> None:
        self._backend = backend
        self._episodic = episodic
        self._sessions = sessions
        self._policy = policy

    def consolidate(self, session_id: str, *, user_id: str, agent_id: str, everything: bool) -> Consolidation:
        """Working items at or above `policy.consolidate_importance` become episodes (with their
        session, role and time), the rest expire. `everything` takes the live turns too (session
        end or on demand); otherwise only those the capacity bound pushed out."""
        episode_namespace(agent_id, user_id)
        check_bool("everything", everything)
        wm = self._sessions.get(session_id)
        items = wm.take_evicted()
        if everything:
            items += wm.take_turns()
        threshold = self._policy.consolidate_importance
        # Empty or over-long turns expire instead of failing the whole consolidation. The ids are
        # checked once, through retain's own validation, for all the turns (they share them).
        with collector_paused():
            keep = [t for t in items if t.importance >= threshold and t.text.strip() and len(t.text) <= MAX_TEXT_CHARS]
            shared = (
                self._episodic.fields(".", user_id=user_id, agent_id=agent_id, session_id=session_id) if keep else {}
            )
            drafts = [
                {
                    **shared,
                    "text": t.text,
                    "role": str(t.role),
                    "timestamp": int(t.timestamp),
                    "importance": min(1.0, float(t.importance)),
                    "keywords": (),
                    "metadata": {},
                }
                for t in keep
            ]
            kept = self._episodic.retain_drafts(drafts, None)
        return Consolidation(session_id=session_id, kept=kept, expired=len(items) - len(kept))

    def forget(
        self,
        episode_ids: Iterable[int],
        *,
        user_id: str,
        agent_id: str,
        session_id: str | None,
        time_range: tuple[TimeLike, TimeLike] | None,
        everything: bool,
    ) -> int:
        """See :meth:`trimem.Memory.forget`."""
        ns = episode_namespace(agent_id, user_id)
        check_bool("everything", everything)
        if session_id is not None:
            check_id("session_id", session_id)
        ids = _ids("episode_ids", episode_ids)
        for e, i in zip(self._backend.episodes([max(i, 0) for i in ids]), ids):
            if i < 0 or e is None or f"{e.agent_id}/{e.user_id}" != ns:
                raise UnknownIdError(f"no episode with id {shown(i)} for user {user_id!r} of agent {agent_id!r}")
        if everything:
            ids += self._episodic.ids(agent_id, user_id)
        elif session_id is not None or time_range is not None:
            ids += self._episodic.ids(agent_id, user_id, session_id=session_id, time_range=time_range)
        elif not ids:
            raise InvalidArgumentError(
                "forget needs episode ids, session_id, time_range or everything=True (nothing was deleted)"
            )
        ids = sorted(set(ids))
        knowledge = self._backend.document_ids(knowledge_namespace(agent_id, user_id)) if everything else []
        if ids or everything:
            users = [(agent_id, user_id)] if everything else []
            self._backend.write([OpForget(episode_ids=ids, knowledge_ids=knowledge, users=users)])
        return len(ids)

    def forget_expired(self, now: int, *, user_id: str | None, agent_id: str) -> Expired:
        """Applies the retention policy through the hard-delete path of `forget`: episodes and
        knowledge documents whose lifetime (from their last use, longer for important or
        reinforced ones) ran out, facts not set for the semantic lifetime (pinned facts stay; a
        fact counts as of middling importance, 0.5), and working turns past the working retention."""
        policy, backend = self._policy, self._backend
        # One pass over the columns of the user's records (or everyone's): the policy is vectorised.
        mine = None if user_id is None else episode_namespace(agent_id, check_id("user_id", user_id))
        episode_ids = policy.expired(backend.columns("episodes", mine), "episodic", now).tolist()
        private = None if user_id is None else knowledge_namespace(agent_id, user_id)
        knowledge_ids = policy.expired(backend.columns("knowledge", private), "semantic", now).tolist()
        fact_life = policy.lifetime_days("semantic", importance=0.5) * DAY_US
        facts = sorted(
            (a, u, f.key)
            for a, u, f in backend.facts(None if user_id is None else agent_id, user_id)
            if not f.pinned and now - f.updated_at > fact_life
        )
        if episode_ids or knowledge_ids or facts:
            backend.write([OpForget(episode_ids=sorted(episode_ids), knowledge_ids=sorted(knowledge_ids), facts=facts)])
        turns = 0
        for wm in self._sessions.live():
            turns += wm.expire_older(
                lambda t: now - t.timestamp > policy.lifetime_days("working", importance=t.importance) * DAY_US
            )
        return Expired(episodes=len(episode_ids), knowledge=len(knowledge_ids), facts=len(facts), working=turns)

    def share(
        self,
        *,
        from_agent: str,
        to_agent: str,
        user_id: str,
        episode_ids: Iterable[int] | None,
        min_importance: float,
        decay: float,
        now: int,
    ) -> list[Episode]:
        """Copies the user's episodes of `from_agent` whose effective importance (base plus
        reinforcement) reaches `min_importance` — or exactly `episode_ids` — to `to_agent`, each
        with `metadata["shared_from"]` (agent, episode id, time) and importance × `decay`. Their
        vectors are copied, not re-embedded. Nothing else crosses: no facts, no documents."""
        check_id("agent_id", from_agent)
        check_id("agent_id", to_agent)
        check_id("user_id", user_id)
        if from_agent == to_agent:
            raise InvalidArgumentError("from_agent and to_agent are the same agent")
        for name, v in (("min_importance", min_importance), ("decay", decay)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise InvalidArgumentError(f"{name} must be a number in [0, 1], got {v!r}")
        cols = self._backend.columns("episodes", episode_namespace(from_agent, user_id))
        effective = dict(zip(cols["ids"].tolist(), self._policy.effective_of(cols).tolist()))
        if episode_ids is not None:
            wanted = sorted(set(_ids("episode_ids", episode_ids)))  # an id named twice is shared once
            missing = [i for i in wanted if i not in effective]
            if missing:
                raise UnknownIdError(f"no episodes {missing} for user {user_id!r} of agent {from_agent!r}")
        else:
            wanted = [i for i, v in effective.items() if v >= min_importance]
        if not wanted:
            return []
        items, vectors = [], []
        for s in self._backend.stored("episodes", sorted(wanted)):
            e = s.item
            assert isinstance(e, Episode)
            shared_from = {"agent_id": from_agent, "episode_id": e.id, "at": now}
            item = {**retain_item(e), "agent_id": to_agent, "metadata": {**e.metadata, "shared_from": shared_from}}
            items.append({**item, "importance": round(min(1.0, effective[e.id] * decay), 6)})
            vectors.append(s.vector)
        present = [v for v in vectors if v is not None]
        if self._backend.dim and len(present) == len(vectors):
            stacked = np.frombuffer(b"".join(present), dtype=np.float32).reshape(len(present), self._backend.dim)
            return self._episodic.retain_many(items, vectors=stacked.copy())
        return self._episodic.retain_many(items)
