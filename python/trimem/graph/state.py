"""The graph's state per scope — entities and relations with their provenance, and the indexes
that keep removal and traversal cheap — and its msgpack form."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from trimem.text.mentions import GENERIC_TYPES

__all__ = ["DECODER", "ENCODER", "FORMAT_VERSION", "GraphState", "RKey", "Scope", "ScopeState", "Support", "sorted_rec"]

FORMAT_VERSION: Final = 1


class Support(msgspec.Struct, array_like=True, gc=False):
    """What one source (an episode or a fact) adds to an entity or a relation."""

    count: float  # mentions of an entity, weight of a relation
    ts: int


class EntityRec(msgspec.Struct, array_like=True):
    """An entity as stored: display name, type, support per episode and per fact."""

    name: str
    type: str
    episodes: dict[int, Support] = {}  # in ascending id order (see Scope.support)
    facts: dict[str, Support] = {}


class RelationRec(msgspec.Struct, array_like=True):
    """A relation as stored, between entity keys."""

    subject: str  # entity keys
    predicate: str
    object: str
    episodes: dict[int, Support] = {}
    facts: dict[str, Support] = {}


class ScopeState(msgspec.Struct, array_like=True):
    """One scope in the msgpack form."""

    name: str
    entities: dict[str, EntityRec]  # by key
    relations: list[RelationRec]


class GraphState(msgspec.Struct):
    """The whole graph in the msgpack form, with its format version."""

    format: int
    scopes: list[ScopeState]


RKey = tuple[str, str, str]
ENCODER: Final = msgspec.msgpack.Encoder()
DECODER: Final = msgspec.msgpack.Decoder(GraphState)


class Scope:
    """One scope's entities and relations, with the indexes that keep removal and BFS cheap:
    relations by endpoint, and what each episode and fact supports."""

    __slots__ = ("adjacent", "by_episode", "by_fact", "entities", "ids", "relations", "totals")

    def __init__(self) -> None:
        self.entities: dict[str, EntityRec] = {}
        self.relations: dict[RKey, RelationRec] = {}
        self.adjacent: dict[str, set[RKey]] = {}
        self.by_episode: dict[int, tuple[set[str], set[RKey]]] = {}
        self.by_fact: dict[str, tuple[set[str], set[RKey]]] = {}
        # (mentions or weight, first seen, last seen) per entity or relation, kept up to date on
        # add and recomputed after a removal: an entity in thousands of episodes stays cheap.
        self.totals: dict[str | RKey, tuple[float, int, int]] = {}
        self.ids: dict[str | RKey, list[int]] = {}  # episode ids as a list, copied for snapshots

    def entity(self, key: str, name: str, type_: str) -> EntityRec:
        rec = self.entities.get(key)
        if rec is None:
            rec = self.entities[key] = EntityRec(name, type_)
        elif rec.type in GENERIC_TYPES and type_ not in GENERIC_TYPES:
            rec.type = type_  # a later, more specific sighting wins over "thing"
        return rec

    def relation(self, rk: RKey) -> RelationRec:
        rec = self.relations.get(rk)
        if rec is None:
            rec = self.relations[rk] = RelationRec(*rk)
            self.adjacent.setdefault(rk[0], set()).add(rk)
            self.adjacent.setdefault(rk[2], set()).add(rk)
        return rec

    def support(self, key: str | RKey, sup: Support, *, episode: int | None = None, fact: str | None = None) -> None:
        """Adds `sup` from one source to an entity (`key` a str) or a relation (a triple)."""
        rec: EntityRec | RelationRec = self.entities[key] if isinstance(key, str) else self.relations[key]
        total = self.totals.get(key)
        if total is not None and (episode is not None or fact not in rec.facts):
            self.totals[key] = (total[0] + sup.count, min(total[1], sup.ts), max(total[2], sup.ts))
        else:
            self.totals.pop(key, None)
        if episode is not None:
            eps = rec.episodes
            old = eps.get(episode)
            out_of_order = old is None and eps and episode < next(reversed(eps))
            eps[episode] = Support(sup.count + (old.count if old else 0.0), sup.ts)
            ids = self.ids.get(key)
            if out_of_order:  # provenance stays in id order, so listing it needs no sort
                rec.episodes = dict(sorted(eps.items()))
                self.ids.pop(key, None)
            elif old is None and ids is not None:
                ids.append(episode)
            ents, rels = self.by_episode.setdefault(episode, (set(), set()))
        else:
            assert fact is not None
            rec.facts[fact] = sup
            ents, rels = self.by_fact.setdefault(fact, (set(), set()))
        if isinstance(key, str):
            ents.add(key)
        else:
            rels.add(key)

    def reindex(self) -> None:
        for k, e in self.entities.items():
            for eid in e.episodes:
                self.by_episode.setdefault(eid, (set(), set()))[0].add(k)
            for fk in e.facts:
                self.by_fact.setdefault(fk, (set(), set()))[0].add(k)
        for rk, r in self.relations.items():
            self.adjacent.setdefault(rk[0], set()).add(rk)
            self.adjacent.setdefault(rk[2], set()).add(rk)
            for eid in r.episodes:
                self.by_episode.setdefault(eid, (set(), set()))[1].add(rk)
            for fk in r.facts:
                self.by_fact.setdefault(fk, (set(), set()))[1].add(rk)

    def drop(self, *, episode: int | None = None, fact: str | None = None) -> None:
        """Removes one source; what nothing else supports goes with it."""
        found = self.by_episode.pop(episode, None) if episode is not None else self.by_fact.pop(fact or "", None)
        if found is None:
            return
        ents, rels = found
        for rk in rels:
            self.totals.pop(rk, None)
            self.ids.pop(rk, None)
            r = self.relations[rk]
            if episode is not None:
                del r.episodes[episode]
            else:
                del r.facts[fact or ""]
            if not r.episodes and not r.facts:
                del self.relations[rk]
                for end in (rk[0], rk[2]):
                    adj = self.adjacent[end]
                    adj.discard(rk)
                    if not adj:
                        del self.adjacent[end]
        for k in ents:
            self.totals.pop(k, None)
            self.ids.pop(k, None)
            e = self.entities[k]
            if episode is not None:
                del e.episodes[episode]
            else:
                del e.facts[fact or ""]
            if not e.episodes and not e.facts:
                del self.entities[k]

    def total(self, key: str | RKey) -> tuple[float, int, int]:
        """(mentions or weight, first seen, last seen) of an entity or relation."""
        t = self.totals.get(key)
        if t is None:
            rec: EntityRec | RelationRec = self.entities[key] if isinstance(key, str) else self.relations[key]
            sups = [*rec.episodes.values(), *rec.facts.values()]
            t = self.totals[key] = (sum(s.count for s in sups), min(s.ts for s in sups), max(s.ts for s in sups))
        return t

    def weight(self, rk: RKey) -> float:
        return self.total(rk)[0]

    def sources(self, key: str | RKey) -> list[int]:
        """The episode ids of an entity or relation, ascending (a fresh list)."""
        ids = self.ids.get(key)
        if ids is None:
            rec: EntityRec | RelationRec = self.entities[key] if isinstance(key, str) else self.relations[key]
            ids = self.ids[key] = list(rec.episodes)
        return ids.copy()


def sorted_rec(rec: Any) -> Any:
    """A copy with its provenance in key order, so that equal graphs encode to equal bytes."""
    return msgspec.structs.replace(
        rec,
        episodes={k: rec.episodes[k] for k in sorted(rec.episodes)},
        facts={k: rec.facts[k] for k in sorted(rec.facts)},
    )
