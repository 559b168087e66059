"""The knowledge graph of the MCP project's reference memory server (entities with a type and
observations, relations between them), kept in a trimem memory so that it drops in for people
using that server and what it holds reaches ``Memory.recall``.

Entities and relations are items of the memory (a collection on both backends): an entity under
its name in ``("mcp-graph", agent_id, user_id, "entities")``, searched by its name, type and
observations; a relation in ``(..., "relations")``. Each observation is also retained as an
episode of the user ("Alice (person): works at Acme"), so a recall finds it; deleting the
observation or its entity forgets that episode.

>>> from trimem import Memory
>>> graph = KnowledgeGraph(Memory(embedder="hashing"))
>>> _ = graph.create_entities("u1", [{"name": "Alice", "entityType": "person", "observations": ["works at Acme"]}])
>>> [e["name"] for e in graph.search_nodes("u1", "acme")["entities"]]
['Alice']
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from trimem.errors import InvalidArgumentError, UnknownIdError
from trimem.layers.items import ItemPut
from trimem.memory import Memory

__all__ = ["MAX_ITEMS_PER_CALL", "KnowledgeGraph"]

MAX_ITEMS_PER_CALL: Final = 1_000
"""Most entities, relations, observations or names one call may carry."""
MAX_GRAPH: Final = 100_000
"""Most entities (and relations) one user's graph may hold: a read returns them all."""
SEARCH_NEAREST: Final = 5
"""A search that finds fewer entities holding the query adds the nearest by keywords and meaning
up to this many."""
_FIELDS: Final = ["name", "entityType", "observations[*]"]


def _entity(value: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": value["name"], "entityType": value["entityType"], "observations": list(value["observations"])}


def _relation(value: Mapping[str, Any]) -> dict[str, str]:
    return {"from": value["from"], "to": value["to"], "relationType": value["relationType"]}


def _relation_key(r: Mapping[str, str]) -> str:
    return json.dumps([r["from"], r["relationType"], r["to"]], ensure_ascii=False)


def _capped(what: str, xs: Sequence[Any]) -> Sequence[Any]:
    if len(xs) > MAX_ITEMS_PER_CALL:
        raise InvalidArgumentError(f"at most {MAX_ITEMS_PER_CALL} {what} a call, got {len(xs)}")
    return xs


class KnowledgeGraph:
    """One knowledge graph per user of `agent_id`, in `memory` (see the module docstring)."""

    def __init__(self, memory: Memory, *, agent_id: str = "default") -> None:
        self.memory = memory
        self.agent_id = agent_id
        self._items = memory.items.using(fields=_FIELDS)
        self._lock = threading.Lock()  # read-modify-writes of one process; several processes: one writer

    def _ns(self, user_id: str, kind: str) -> tuple[str, ...]:
        return ("mcp-graph", self.agent_id, user_id, kind)

    def _entities(self, user_id: str) -> dict[str, dict[str, Any]]:
        found = self._items.search(self._ns(user_id, "entities"), limit=MAX_GRAPH)
        return {item.key: dict(item.value) for item, _ in sorted(found, key=lambda f: (f[0].created_at, f[0].id))}

    def _relations(self, user_id: str) -> list[dict[str, str]]:
        found = self._items.search(self._ns(user_id, "relations"), limit=MAX_GRAPH)
        return [_relation(item.value) for item, _ in sorted(found, key=lambda f: (f[0].created_at, f[0].id))]

    def _remember(self, user_id: str, name: str, kind: str, observations: Iterable[str]) -> list[int]:
        """Retains each observation as an episode; returns their ids."""
        texts = [f"{name} ({kind}): {o}" for o in observations]
        if not texts:
            return []
        episodes = self.memory.retain_many([{"text": t, "user_id": user_id, "agent_id": self.agent_id} for t in texts])
        return [e.id for e in episodes]

    def _forget(self, user_id: str, ids: Iterable[int], keep: set[int]) -> None:
        """Forgets the episodes of deleted observations (not those another observation shares)."""
        for i in sorted(set(ids) - keep):
            try:
                self.memory.forget([i], user_id=user_id, agent_id=self.agent_id)
            except UnknownIdError:
                pass  # forgotten already, by a forget of the user's own

    def _put(self, user_id: str, entities: Iterable[dict[str, Any]]) -> None:
        ns = self._ns(user_id, "entities")
        self._items.apply([ItemPut(ns, e["name"], e) for e in entities])

    # -- the reference server's operations -----------------------------------------------------------

    def create_entities(self, user_id: str, entities: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Adds the entities whose names are new (to the graph and to this call); returns them."""
        with self._lock:
            have = self._entities(user_id)
            new: dict[str, dict[str, Any]] = {}
            for e in _capped("entities", entities):
                if e["name"] not in have and e["name"] not in new:
                    observations = list(dict.fromkeys(e["observations"]))
                    new[e["name"]] = {"name": e["name"], "entityType": e["entityType"], "observations": observations}
            for e in new.values():
                e["episodes"] = self._remember(user_id, e["name"], e["entityType"], e["observations"])
            self._put(user_id, new.values())
            return [_entity(e) for e in new.values()]

    def create_relations(self, user_id: str, relations: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
        """Adds the relations not already there, between entities that exist; returns them."""
        with self._lock:
            have = self._entities(user_id)
            for r in _capped("relations", relations):
                for end in (r["from"], r["to"]):
                    if end not in have:
                        raise InvalidArgumentError(f"Entity with name {end} not found")
            old = {_relation_key(r) for r in self._relations(user_id)}
            new = {_relation_key(r): _relation(r) for r in relations if _relation_key(r) not in old}
            ns = self._ns(user_id, "relations")
            self._items.apply([ItemPut(ns, k, r, index=False) for k, r in new.items()])
            return list(new.values())

    def add_observations(self, user_id: str, observations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Adds the new observations of existing entities; per entity, those it added."""
        with self._lock:
            have = self._entities(user_id)
            for o in _capped("observation lists", observations):
                if o["entityName"] not in have:
                    raise InvalidArgumentError(f"Entity with name {o['entityName']} not found")
            results: list[dict[str, Any]] = []
            changed: dict[str, dict[str, Any]] = {}
            for o in observations:
                e = changed.setdefault(o["entityName"], have[o["entityName"]])
                added = [c for c in dict.fromkeys(o["contents"]) if c not in e["observations"]]
                e["observations"] = [*e["observations"], *added]
                e["episodes"] = [*e.get("episodes", []), *self._remember(user_id, e["name"], e["entityType"], added)]
                results.append({"entityName": o["entityName"], "addedObservations": added})
            self._put(user_id, changed.values())
            return results

    def delete_entities(self, user_id: str, names: Sequence[str]) -> tuple[list[str], list[str]]:
        """Deletes the entities and every relation touching them; (deleted, not found)."""
        with self._lock:
            have = self._entities(user_id)
            gone = set(_capped("names", names))
            deleted = [n for n in names if n in have]
            ns = self._ns(user_id, "entities")
            puts = [ItemPut(ns, n, None) for n in dict.fromkeys(deleted)]
            rel = self._ns(user_id, "relations")
            puts += [
                ItemPut(rel, _relation_key(r), None) for r in self._relations(user_id) if {r["from"], r["to"]} & gone
            ]
            self._items.apply(puts)
            keep = {i for n, e in have.items() if n not in gone for i in e.get("episodes", [])}
            self._forget(user_id, (i for n in deleted for i in have[n].get("episodes", [])), keep)
            return deleted, [n for n in names if n not in have]

    def delete_observations(self, user_id: str, deletions: Sequence[Mapping[str, Any]]) -> tuple[int, list[str]]:
        """Deletes observations from entities; (how many went, entities not found)."""
        with self._lock:
            have = self._entities(user_id)
            count, missing, dropped, changed = 0, [], [], {}
            for d in _capped("deletions", deletions):
                e = have.get(d["entityName"])
                if e is None:
                    missing.append(d["entityName"])
                    continue
                changed[e["name"]] = e
                pairs = list(zip(e["observations"], e.get("episodes", [None] * len(e["observations"])), strict=False))
                kept = [(o, i) for o, i in pairs if o not in d["observations"]]
                count += len(pairs) - len(kept)
                dropped += [i for o, i in pairs if o in d["observations"] and i is not None]
                e["observations"] = [o for o, _ in kept]
                e["episodes"] = [i for _, i in kept if i is not None]
            self._put(user_id, changed.values())
            self._forget(user_id, dropped, {i for e in have.values() for i in e.get("episodes", [])})
            return count, missing

    def delete_relations(self, user_id: str, relations: Sequence[Mapping[str, str]]) -> int:
        """Deletes these relations; how many there were."""
        with self._lock:
            old = {_relation_key(r) for r in self._relations(user_id)}
            gone = {_relation_key(r) for r in _capped("relations", relations)} & old
            self._items.apply([ItemPut(self._ns(user_id, "relations"), k, None) for k in gone])
            return len(gone)

    def read_graph(self, user_id: str) -> dict[str, list[Any]]:
        return {"entities": [_entity(e) for e in self._entities(user_id).values()],
                "relations": self._relations(user_id)}  # fmt: skip

    def search_nodes(self, user_id: str, query: str) -> dict[str, list[Any]]:
        """The entities whose name, type or an observation holds `query` (as the reference server
        finds them, case-insensitively), then, up to five in all, the nearest others by keywords
        and meaning; with the relations touching any of them."""
        entities = self._entities(user_id)
        q = query.lower()
        names = [n for n, e in entities.items()
                 if q in n.lower() or q in e["entityType"].lower() or any(q in o.lower() for o in e["observations"])]  # fmt: skip
        if query.strip() and len(names) < SEARCH_NEAREST:
            nearest = self._items.search(self._ns(user_id, "entities"), query=query, limit=SEARCH_NEAREST)
            more = [item.key for item, score in nearest if score is not None and item.key not in names]
            names += more[: SEARCH_NEAREST - len(names)]
        return self._subgraph(user_id, entities, names)

    def open_nodes(self, user_id: str, names: Sequence[str]) -> dict[str, list[Any]]:
        """These entities (those that exist) and the relations touching them."""
        entities = self._entities(user_id)
        return self._subgraph(user_id, entities, [n for n in dict.fromkeys(_capped("names", names)) if n in entities])

    def _subgraph(self, user_id: str, entities: dict[str, dict[str, Any]], names: list[str]) -> dict[str, list[Any]]:
        chosen = set(names)
        relations = [r for r in self._relations(user_id) if r["from"] in chosen or r["to"] in chosen]
        return {"entities": [_entity(entities[n]) for n in names], "relations": relations}
