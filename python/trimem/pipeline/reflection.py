"""Reflect: distil durable facts from a user's new episodes into versioned fact updates, with
provenance; by hand or in a background thread.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.retain("My main language is TypeScript", user_id="u1")
>>> [(c.op, c.key, c.value) for c in mem.reflect(user_id="u1")]
[('set', 'primary_language', 'TypeScript')]
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from trimem._backend.ops import OpCursor
from trimem._checks import check_callable, shown
from trimem.errors import InvalidArgumentError
from trimem.records import FactChange
from trimem.reflect import Extractor, RuleExtractor
from trimem.scope import check_id, episode_namespace

if TYPE_CHECKING:
    from trimem._backend import Backend
    from trimem.layers.semantic import Facts


__all__ = ["Reflection", "Reflector", "phrase_aliases"]
log = logging.getLogger("trimem")


class Reflection:
    """Reflect over one memory's backend and facts."""

    def __init__(self, backend: Backend, facts: Facts, extractor: Extractor | None) -> None:
        self._backend = backend
        self._facts = facts
        self.extractor = extractor

    def __call__(
        self, *, user_id: str, agent_id: str = "default", extractor: Extractor | None = None
    ) -> list[FactChange]:
        """Extracts durable facts from the user's episodes not reflected on yet and applies them
        as versioned updates. Running it again without new episodes changes nothing."""
        check_id("agent_id", agent_id)
        check_id("user_id", user_id)
        if extractor is not None:
            check_callable("extractor", extractor)
        backend = self._backend
        with backend.lock:
            cursor = backend.cursor(agent_id, user_id)
            if backend.newest_episode(agent_id, user_id) <= cursor:
                return []
            new_ids = [i for i in backend.episode_ids(episode_namespace(agent_id, user_id)) if i > cursor]
            if not new_ids:
                return []
            eps = [e for e in backend.episodes(new_ids) if e is not None]
            eps.sort(key=lambda e: (e.timestamp, e.id))
            current = {f.key: f.value for f in self._facts.list(user_id=user_id, agent_id=agent_id)}
            ex = extractor or self.extractor or RuleExtractor(aliases=phrase_aliases(self._facts.aliases()))
            when = {e.id: e.timestamp for e in eps}
            changes: list[FactChange] = []
            for p in ex(eps, current):
                at = max((when[s] for s in p.source if s in when), default=None)
                if p.op == "delete":
                    ch = self._facts.delete(p.key, user_id=user_id, agent_id=agent_id, source=p.source, at=at)
                else:
                    assert p.value is not None
                    ch = self._facts.set(p.key, p.value, user_id=user_id, agent_id=agent_id, source=p.source, at=at)
                changes.append(
                    FactChange(
                        op=ch.op,
                        key=ch.key,
                        value=ch.value,
                        old_value=ch.old_value,
                        source=ch.source,
                        evidence=p.evidence,
                    )
                )
            backend.write([OpCursor(agent_id, user_id, max(new_ids))])
            return changes

    def pending(self) -> list[tuple[str, str]]:
        """(agent_id, user_id) pairs with episodes reflect has not read yet."""
        b = self._backend
        return [(a, u) for a, u in b.users() if b.newest_episode(a, u) > b.cursor(a, u)]


def phrase_aliases(aliases: Mapping[str, list[str]]) -> dict[str, str]:
    """Phrase → key for the extractor: aliases that name exactly one key."""
    return {w: keys[0] for w, keys in aliases.items() if len(keys) == 1}


class Reflector:
    """A background thread that reflects for every user with new episodes, every `interval` s."""

    def __init__(self, reflection: Reflection, *, interval: float, extractor: Extractor | None) -> None:
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not 0 < interval < 1e9:
            raise InvalidArgumentError(f"interval must be positive seconds, got {shown(interval)}")
        if extractor is not None:
            check_callable("extractor", extractor)
        self._reflect, self._interval, self._extractor = reflection, float(interval), extractor
        self._stop = threading.Event()
        self.runs = 0
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._loop, name="trimem-reflector", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self._interval)

    def run_once(self) -> int:
        changed = 0
        for agent_id, user_id in self._reflect.pending():
            try:
                changed += len(self._reflect(user_id=user_id, agent_id=agent_id, extractor=self._extractor))
            except Exception as e:  # keep reflecting for other users; the error is kept
                log.exception("reflect failed for %s/%s", agent_id, user_id)
                self.errors.append(e)
        self.runs += 1
        return changed

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
