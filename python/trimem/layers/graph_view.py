"""The memory graph of a `Memory`: entities and relations extracted from its episodes and facts
(see :mod:`trimem.graph`), built on first read and brought up to date on each read, so retain
never waits for extraction. The backend keeps it in snapshots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trimem._backend.ops import OpForget

if TYPE_CHECKING:
    from trimem._backend import Backend
    from trimem.graph import MemoryGraph


__all__ = ["GraphView"]
FactRow = tuple[str, str, str, str]  # (agent, user, key, value) the graph holds


class GraphView:
    """The graph with how far it has read: episodes up to ``cursor``, the facts it holds."""

    def __init__(self) -> None:
        from trimem.graph import MemoryGraph  # its rules take a moment to import: only when used

        self.graph: MemoryGraph = MemoryGraph()
        self.cursor = 0
        self._facts: dict[tuple[str, str, str], str] = {}

    # -- persisted by the backend -----------------------------------------------------------------

    def encode(self) -> bytes | None:
        return self.graph.encode()

    def fact_rows(self) -> list[FactRow]:
        return [(a, u, k, v) for (a, u, k), v in self._facts.items()]

    def load(self, graph: bytes | None, cursor: int, facts: list[FactRow]) -> None:
        from trimem.graph import MemoryGraph

        if graph is not None:
            self.graph = MemoryGraph.decode(graph)
        self.cursor = cursor
        self._facts = {(a, u, k): v for a, u, k, v in facts}

    def forget(self, op: OpForget) -> None:
        """Forgotten episodes leave the graph; a forgotten user's scope and facts go entirely."""
        g = self.graph
        g.remove_sources(op.episode_ids)
        for a, u in op.users:
            g.clear(user_id=u, agent_id=a)
        users, keys = set(map(tuple, op.users)), set(map(tuple, op.facts))
        for a, u, key in [fk for fk in self._facts if fk[:2] in users or fk in keys]:
            if (a, u) not in users:
                g.remove_fact(key, user_id=u, agent_id=a)
            del self._facts[(a, u, key)]

    # -- reading what is new ------------------------------------------------------------------------

    def sync(self, backend: Backend) -> MemoryGraph:
        """Adds the episodes and fact changes since the last read; returns the graph."""
        g = self.graph
        for e in backend.new_episodes(self.cursor):
            g.add_episode(e.id, e.text, e.timestamp, user_id=e.user_id, agent_id=e.agent_id, role=e.role, details=False)
        self.cursor = max(self.cursor, backend.last_id)
        current = {(a, u, f.key): f for a, u, f in backend.facts()}
        for (a, u, key), fact in current.items():
            if self._facts.get((a, u, key)) != fact.value:
                g.add_fact(key, fact.value, user_id=u, agent_id=a, timestamp=fact.updated_at)
        for a, u, key in set(self._facts) - set(current):
            g.remove_fact(key, user_id=u, agent_id=a)
        self._facts = {fk: f.value for fk, f in current.items()}
        return g
