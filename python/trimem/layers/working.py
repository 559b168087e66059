"""Working memory: the live, per-session context — recent turns and scratch variables — bounded
by item count and age, reset at session end. Everything is O(1) and in-process.

>>> wm = WorkingMemory("s1", capacity=3)
>>> for i in range(5):
...     _ = wm.add_turn("user", f"turn {i}")
>>> [t.text for t in wm.recent(2)]
['turn 3', 'turn 4']
>>> wm.vars["retry"] = 2
>>> wm.get("retry")
2
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from trimem._backend import Backend
from trimem._backend.ops import OpWorking, encode_op
from trimem._checks import check_int, check_plain, check_str, check_unit
from trimem._core import tokenize
from trimem.config import Policy
from trimem.errors import InvalidArgumentError
from trimem.records import Turn
from trimem.scope import check_id
from trimem.timeutil import to_micros

__all__ = ["Sessions", "WorkingMemory"]


class WorkingMemory:
    """Recent turns (at most `capacity`) and variables of one session; items older than `ttl`
    seconds expire. `clock` returns µs and is injectable for tests."""

    def __init__(
        self,
        session_id: str,
        *,
        capacity: int = 30,
        ttl: float | None = 24 * 3600.0,
        clock: Callable[[], int] | None = None,
    ) -> None:
        if capacity < 1:
            raise InvalidArgumentError(f"capacity must be at least 1, got {capacity}")
        if ttl is not None and ttl <= 0:
            raise InvalidArgumentError(f"ttl must be positive seconds or None, got {ttl}")
        self.session_id = check_id("session_id", session_id)
        self.capacity = capacity
        self.ttl = ttl
        self._clock = clock or (lambda: time.time_ns() // 1000)
        self._turns: deque[Turn] = deque(maxlen=capacity)
        self.vars: dict[str, Any] = {}
        self.evicted: list[Turn] = []  # turns pushed out by capacity, kept for consolidation

    def add_turn(self, role: str, text: str, *, importance: float = 0.0, timestamp: int | None = None) -> Turn:
        check_str("role", role, limit=64, empty=False)
        check_str("text", text)
        importance = check_unit("importance", importance)
        at = self._clock() if timestamp is None else to_micros(check_int("timestamp", timestamp))
        turn = Turn(role=role, text=text, timestamp=at, importance=importance)
        if len(self._turns) == self.capacity:
            self.evicted.append(self._turns[0])
        self._turns.append(turn)
        return turn

    def _expire(self) -> None:
        if self.ttl is None:
            return
        cutoff = self._clock() - int(self.ttl * 1_000_000)
        # Turns may carry caller-given timestamps out of order, so check them all.
        if any(t.timestamp < cutoff for t in self._turns):
            self._turns = deque((t for t in self._turns if t.timestamp >= cutoff), maxlen=self.capacity)

    def recent(self, n: int | None = None) -> list[Turn]:
        """The last `n` turns (all live turns when `n` is None), oldest first."""
        if n is not None:
            check_int("n", n, low=0)
        self._expire()
        turns = list(self._turns)
        return turns if n is None else turns[-n:] if n > 0 else []

    def matching(self, query: str) -> list[Turn]:
        """Live turns sharing a keyword with `query`, oldest first (layered recall reads them
        before it searches long-term memory)."""
        wanted = set(tokenize(query, stopwords=True))
        if not wanted:
            return []
        return [t for t in self.recent() if wanted.intersection(tokenize(t.text, stopwords=True))]

    def take_evicted(self) -> list[Turn]:
        """The turns the capacity bound pushed out since the last call (for consolidation)."""
        out, self.evicted = self.evicted, []
        return out

    def take_turns(self) -> list[Turn]:
        """Removes and returns the live turns (variables stay)."""
        out = list(self._turns)
        self._turns.clear()
        return out

    def expire_older(self, expired: Callable[[Turn], bool]) -> int:
        """Drops the turns `expired` selects; returns how many went."""
        before = len(self._turns)
        self._turns = deque((t for t in self._turns if not expired(t)), maxlen=self.capacity)
        return before - len(self._turns)

    def get(self, name: str, default: Any = None) -> Any:
        return self.vars.get(name, default)

    def set(self, name: str, value: Any) -> None:
        """Sets a scratch variable (plain data: it may be saved with the session)."""
        check_str("name", name, limit=256, empty=False)
        check_plain(name, value)
        self.vars[name] = value

    def __len__(self) -> int:
        self._expire()
        return len(self._turns)

    def __iter__(self) -> Iterator[Turn]:
        return iter(self.recent())

    def reset(self) -> None:
        """Ends the session: turns, variables and evicted items are gone."""
        self._turns.clear()
        self.vars.clear()
        self.evicted.clear()


class Sessions:
    """The working memory of every live session, bounded by the policy; a session the caller
    saved is restored from the backend on open."""

    def __init__(self, backend: Backend, policy: Policy) -> None:
        self._backend = backend
        self._policy = policy
        self._live: dict[str, WorkingMemory] = {}
        for op in backend.saved_sessions().values():
            self._restore(op)

    def __contains__(self, session_id: object) -> bool:
        return isinstance(session_id, str) and session_id in self._live

    def __len__(self) -> int:
        return len(self._live)

    def live(self) -> list[WorkingMemory]:
        return list(self._live.values())

    def peek(self, session_id: str) -> WorkingMemory | None:
        """The session's working memory if it exists (no session is created)."""
        return self._live.get(check_id("session_id", session_id))

    def get(self, session_id: str) -> WorkingMemory:
        """The session's working memory, created on first use."""
        wm = self._live.get(check_id("session_id", session_id))
        if wm is None:
            wm = self._live[session_id] = WorkingMemory(
                session_id, capacity=self._policy.working_bound, ttl=self._policy.working_ttl_seconds
            )
        return wm

    def save(self, session_id: str) -> None:
        """Persists the session's turns and variables (plain data only) through the backend."""
        wm = self.get(session_id)
        op = OpWorking(session_id=wm.session_id, turns=wm.recent(), vars=dict(wm.vars))
        try:
            encode_op(op)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"working memory of {session_id!r} holds a value that is not plain data: {e}"
            ) from None
        self._backend.write([op])

    def _restore(self, op: OpWorking) -> None:
        wm = self.get(op.session_id)
        wm.reset()
        for t in op.turns or []:
            wm.add_turn(t.role, t.text, importance=t.importance, timestamp=t.timestamp)
        wm.vars.update(op.vars)

    def end(self, session_id: str) -> None:
        """Resets the session and drops its saved copy."""
        check_id("session_id", session_id)
        if session_id in self._backend.saved_sessions():
            self._backend.write([OpWorking(session_id=session_id, turns=None)])
        wm = self._live.pop(session_id, None)
        if wm is not None:
            wm.reset()
