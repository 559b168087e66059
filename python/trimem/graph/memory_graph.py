"""The memory graph: entities and relations per scope, with their provenance."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

import msgspec

from trimem._checks import shown
from trimem.errors import ArgumentTypeError, InvalidArgumentError, StoreCorruptedError, StoreVersionError
from trimem.graph.drawing import render
from trimem.graph.extraction import SPEAKERS, extract, fact_value_type, parse_extraction
from trimem.graph.records import (
    MAX_COOCCURRING,
    MENTIONED_WITH,
    SAME_EPISODE,
    SAME_SENTENCE,
    Entity,
    GraphExtractor,
    Relation,
    Subgraph,
    listing,
)
from trimem.graph.state import (
    DECODER,
    ENCODER,
    FORMAT_VERSION,
    GraphState,
    RKey,
    Scope,
    ScopeState,
    Support,
    sorted_rec,
)
from trimem.scope import episode_namespace
from trimem.text.mentions import MAX_NAME_CHARS, classify, display_name, entity_key
from trimem.text.products import canonical_name
from trimem.timeutil import TimeLike, to_micros

__all__ = ["MemoryGraph"]

_SELF_TYPES = {"user": "user", "assistant": "user", "team": "group"}


def _scope_of(user_id: object, agent_id: object) -> str:
    """The graph's key for one user of one agent (the memory's namespace, "agent/user")."""
    return episode_namespace(agent_id, user_id)  # type: ignore[arg-type]  # checked there


def _maybe_scope(user_id: object, agent_id: object) -> str | None:
    """One user's scope, or None (every scope) without a user."""
    return None if user_id is None else _scope_of(user_id, agent_id)


def _name(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a string, got {shown(value)}")
    return value


def _optional_name(what: str, value: object) -> str | None:
    return None if value is None else _name(what, value)


class MemoryGraph:
    """Entities and relations of a memory, per scope, with provenance. Thread-safe.

    ``extractor``: None for the rule extractor (:func:`extract`), or a
    ``callable(text) -> JSON | mapping`` (an LLM) validated by :func:`parse_extraction`;
    an exception it raises propagates, malformed output raises :class:`GraphExtractionError`.
    """

    def __init__(self, *, extractor: GraphExtractor | None = None) -> None:
        self.extractor = extractor
        self._scopes: dict[str, Scope] = {}
        self._episode_scopes: dict[int, set[str]] = {}
        self._lock = threading.RLock()

    # -- writes -------------------------------------------------------------------------------

    def add_episode(
        self,
        episode_id: int,
        text: str,
        timestamp: TimeLike,
        *,
        user_id: str,
        agent_id: str = "default",
        role: str = "user",
        details: bool = True,
    ) -> tuple[list[Entity], list[Relation]]:
        """Adds what episode `episode_id` mentions and states; returns the entities and relations
        it touched as they now stand (in text order, ``mentioned_with`` last). Adding an id again
        replaces it. `role` says who "I" is ("user" or "assistant").

        A returned entity lists all its sources, so the result costs time in proportion to the
        provenance of what the episode touched; ``details=False`` returns ``([], [])`` instead —
        for bulk loads and log replay, where an entity in thousands of episodes is touched often."""
        if isinstance(episode_id, bool) or not isinstance(episode_id, int):
            raise InvalidArgumentError(f"episode_id must be an int, got {shown(episode_id)}")
        scope = _scope_of(user_id, agent_id)
        ts = to_micros(timestamp)
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
        found = extract(text, role=role) if self.extractor is None else parse_extraction(self.extractor(text), text)
        with self._lock:
            self._forget_episode(episode_id)
            sc = self._scopes.setdefault(scope, Scope())
            touched_e: dict[str, None] = {}
            touched_r: dict[RKey, None] = {}
            sentences: dict[str, set[int]] = {}
            for fe in found.entities:
                k = entity_key(fe.name)
                if not k:
                    continue
                sc.entity(k, display_name(fe.name)[:MAX_NAME_CHARS], fe.type)
                sc.support(k, Support(float(fe.mentions), ts), episode=episode_id)
                touched_e[k] = None
                if k not in SPEAKERS:
                    sentences.setdefault(k, set()).update(fe.sentences)
            for fr in found.relations:
                ks, ko = entity_key(fr.subject), entity_key(fr.object)
                if ks == ko or ks not in sc.entities or ko not in sc.entities:
                    continue
                self._support(sc, (ks, fr.predicate, ko), episode_id, 1.0, ts, touched_r)
            keys = list(sentences)[:MAX_COOCCURRING]
            for i, a in enumerate(keys):
                for b in keys[i + 1 :]:
                    w = SAME_SENTENCE if sentences[a] & sentences[b] else SAME_EPISODE
                    lo, hi = sorted((a, b))
                    self._support(sc, (lo, MENTIONED_WITH, hi), episode_id, w, ts, touched_r)
            if touched_e:
                self._episode_scopes.setdefault(episode_id, set()).add(scope)
            self._prune(scope)  # an episode that names nothing leaves no empty scope behind
            if not details:
                return [], []
            ents = [self._entity(scope, sc, k) for k in touched_e]
            rels = [self._relation(scope, sc, rk) for rk in touched_r]
            rels.sort(key=lambda r: r.predicate == MENTIONED_WITH)
            return ents, rels

    @staticmethod
    def _support(sc: Scope, rk: RKey, episode_id: int, w: float, ts: int, touched: dict[RKey, None]) -> None:
        sc.relation(rk)
        sc.support(rk, Support(w, ts), episode=episode_id)
        touched[rk] = None

    def add_fact(
        self,
        key: str,
        value: str,
        *,
        user_id: str,
        agent_id: str = "default",
        timestamp: TimeLike,
        subject: str = "user",
    ) -> None:
        """Records fact ``key → value`` as the relation ``(subject, key, value)``; a key set again
        replaces its previous value (only the newest value of a fact is in the graph). A known
        product is named canonically ("postgres" → PostgreSQL); names are cut at 80 characters."""
        scope = _scope_of(user_id, agent_id)
        ts = to_micros(timestamp)
        for what, v in (("key", key), ("value", value), ("subject", subject)):
            if not isinstance(v, str) or not display_name(v):
                raise InvalidArgumentError(f"a fact {what} must be a non-empty string, got {shown(v)}")
        pred = display_name(key)
        subj, obj = (
            canonical_name(display_name(subject))[:MAX_NAME_CHARS],
            canonical_name(display_name(value))[:MAX_NAME_CHARS],
        )
        ks, ko = entity_key(subj), entity_key(obj)
        with self._lock:
            sc = self._scopes.setdefault(scope, Scope())
            sc.drop(fact=pred)
            if ks != ko:
                sc.entity(ks, subj, _SELF_TYPES.get(ks) or classify(subj))
                sc.entity(ko, obj, fact_value_type(pred, obj))
                sc.relation((ks, pred, ko))
                for k in (ks, ko, (ks, pred, ko)):
                    sc.support(k, Support(1.0, ts), fact=pred)
            self._prune(scope)

    def remove_fact(self, key: str, *, user_id: str, agent_id: str = "default") -> None:
        """Drops what fact `key` alone supported (the fact was deleted)."""
        scope = _scope_of(user_id, agent_id)
        key = _name("key", key)
        with self._lock:
            sc = self._scopes.get(scope)
            if sc is not None:
                sc.drop(fact=display_name(key))
                self._prune(scope)

    def remove_sources(
        self, episode_ids: Iterable[int], *, user_id: str | None = None, agent_id: str = "default"
    ) -> None:
        """Forgets episodes: entities and relations only they supported go, shared ones lose
        their mentions and weight. ``user_id`` limits the removal to that user's scope."""
        scope = _maybe_scope(user_id, agent_id)
        ids = [episode_ids] if isinstance(episode_ids, int) else list(episode_ids)
        with self._lock:
            for eid in ids:
                if scope is None:
                    self._forget_episode(eid)
                elif scope in self._episode_scopes.get(eid, ()):
                    self._scopes[scope].drop(episode=eid)
                    self._episode_scopes[eid].discard(scope)
                    if not self._episode_scopes[eid]:
                        del self._episode_scopes[eid]
                    self._prune(scope)

    def _forget_episode(self, eid: int) -> None:
        for name in self._episode_scopes.pop(eid, ()):
            self._scopes[name].drop(episode=eid)
            self._prune(name)

    def _prune(self, name: str) -> None:
        sc = self._scopes.get(name)
        if sc is not None and not sc.entities:
            del self._scopes[name]

    def clear(self, *, user_id: str | None = None, agent_id: str = "default") -> None:
        """Forgets one user's scope, or (without a user) everything."""
        scope = _maybe_scope(user_id, agent_id)
        with self._lock:
            if scope is None:
                self._scopes.clear()
                self._episode_scopes.clear()
                return
            sc = self._scopes.pop(scope, None)
            for eid in sc.by_episode if sc else ():
                self._episode_scopes[eid].discard(scope)
                if not self._episode_scopes[eid]:
                    del self._episode_scopes[eid]

    # -- reads --------------------------------------------------------------------------------

    def scopes(self) -> list[str]:
        with self._lock:
            return sorted(self._scopes)

    def _selected(self, scope: str | None) -> list[tuple[str, Scope]]:
        if scope is None:
            return sorted(self._scopes.items())
        sc = self._scopes.get(scope)
        return [(scope, sc)] if sc is not None else []

    def _entity(self, name: str, sc: Scope, key: str) -> Entity:
        rec = sc.entities[key]
        total, first, last = sc.total(key)
        facts = sorted(rec.facts)
        return Entity(rec.name, rec.type, round(total), sc.sources(key), first, last, name, facts)

    def _relation(self, name: str, sc: Scope, rk: RKey) -> Relation:
        rec = sc.relations[rk]
        total, first, last = sc.total(rk)
        s, o = sc.entities[rk[0]].name, sc.entities[rk[2]].name
        return Relation(s, rk[1], o, total, sc.sources(rk), first, last, name, sorted(rec.facts))

    def _resolve(self, sc: Scope, name: str) -> str | None:
        k = entity_key(name)
        if k in sc.entities:
            return k
        alias = entity_key(canonical_name(display_name(name)))
        return alias if alias in sc.entities else None

    def entity(self, name: str, *, user_id: str, agent_id: str = "default") -> Entity | None:
        """One entity of a user by name (any case, or a product alias such as "postgres"), or None."""
        scope = _scope_of(user_id, agent_id)
        name = _name("name", name)
        with self._lock:
            sc = self._scopes.get(scope)
            k = self._resolve(sc, name) if sc else None
            return self._entity(scope, sc, k) if sc and k else None

    def entities(
        self, *, user_id: str | None = None, agent_id: str = "default", type: str | None = None
    ) -> list[Entity]:
        """A user's entities (everyone's without a user), most mentioned first, then by name."""
        return self._entities(_maybe_scope(user_id, agent_id), _optional_name("type", type))

    def _entities(self, scope: str | None, type: str | None) -> list[Entity]:
        with self._lock:
            # Sorted by the stored keys: re-keying every display name would cost more than the rest.
            out = [
                (name, k, self._entity(name, sc, k))
                for name, sc in self._selected(scope)
                for k, rec in sc.entities.items()
                if type is None or rec.type == type
            ]
        out.sort(key=lambda t: (t[0], -t[2].mentions, t[1]))
        return [e for _, _, e in out]

    def relations(
        self,
        *,
        user_id: str | None = None,
        agent_id: str = "default",
        entity: str | None = None,
        predicate: str | None = None,
    ) -> list[Relation]:
        """A user's relations (everyone's without a user), statements before co-occurrence,
        heaviest first; `entity` keeps those touching it (as subject or object)."""
        scope = _maybe_scope(user_id, agent_id)
        return self._relations(scope, _optional_name("entity", entity), _optional_name("predicate", predicate))

    def _relations(self, scope: str | None, entity: str | None, predicate: str | None) -> list[Relation]:
        with self._lock:
            found: list[tuple[str, Scope, RKey]] = []
            for name, sc in self._selected(scope):
                if entity is not None:
                    k = self._resolve(sc, entity)
                    keys: Iterable[RKey] = sc.adjacent.get(k, ()) if k else ()
                else:
                    keys = sc.relations
                found += [(name, sc, rk) for rk in keys if predicate is None or rk[1] == predicate]
            return self._ordered(found)

    def _ordered(self, found: Iterable[tuple[str, Scope, RKey]]) -> list[Relation]:
        """Relations by scope, statements before co-occurrence, heaviest first, then by their
        keys (already folded: no name is keyed again)."""
        rels = [(name, rk, self._relation(name, sc, rk)) for name, sc, rk in found]
        rels.sort(key=lambda t: (t[0], t[1][1] == MENTIONED_WITH, -t[2].weight, t[1]))
        return [r for _, _, r in rels]

    def neighbours(
        self, entity: str, *, user_id: str, agent_id: str = "default", depth: int = 1, limit: int = 50
    ) -> Subgraph:
        """The entities within `depth` hops of `entity` in a user's graph (BFS; at each step the
        heaviest links first, then by name) — at most `limit`, the entity included — and their
        relations."""
        scope = _scope_of(user_id, agent_id)
        entity = _name("entity", entity)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise InvalidArgumentError(f"depth must be an int >= 0, got {shown(depth)}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgumentError(f"limit must be an int >= 1, got {shown(limit)}")
        with self._lock:
            sc = self._scopes.get(scope)
            start = self._resolve(sc, entity) if sc else None
            if sc is None or start is None:
                return Subgraph(entity, scope, depth, [], [])
            order = [start]
            seen = {start}
            frontier = [start]
            for _ in range(min(depth, len(sc.entities))):  # no walk is longer than the graph
                if not frontier:
                    break
                nxt: list[str] = []
                for k in frontier:
                    weights: dict[str, float] = {}
                    for rk in sc.adjacent.get(k, ()):
                        other = rk[2] if rk[0] == k else rk[0]
                        weights[other] = weights.get(other, 0.0) + sc.weight(rk)
                    for other in sorted(weights, key=lambda o: (-weights[o], o)):
                        if other not in seen and len(order) < limit:
                            seen.add(other)
                            order.append(other)
                            nxt.append(other)
                frontier = nxt
            rels = {rk for k in order for rk in sc.adjacent.get(k, ()) if rk[0] in seen and rk[2] in seen}
            return Subgraph(
                sc.entities[start].name,
                scope,
                depth,
                [self._entity(scope, sc, k) for k in order],
                self._ordered((scope, sc, rk) for rk in rels),
            )

    def to_text(self, *, user_id: str | None = None, agent_id: str = "default") -> str:
        """A readable listing: per scope (a user's, or everyone's) its entities, then its relations."""
        scope = _maybe_scope(user_id, agent_id)
        with self._lock:
            selected = self._selected(scope)
            if not selected:
                return "(the memory graph is empty)" if scope is None else f"[{scope}] (empty)"
            lines = []
            for name, _sc in selected:
                ents, rels = self._entities(name, None), self._relations(name, None, None)
                lines.append(f"[{name}] {len(ents)} entities, {len(rels)} relations")
                lines += listing(ents, rels)
            return "\n".join(lines)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(sc.entities) for sc in self._scopes.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryGraph):
            return NotImplemented
        return self._state() == other._state()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n_rel = sum(len(sc.relations) for sc in self._scopes.values())
        return f"MemoryGraph({len(self._scopes)} scopes, {len(self)} entities, {n_rel} relations)"

    # -- persistence --------------------------------------------------------------------------

    def _state(self) -> GraphState:
        with self._lock:
            scopes = [
                ScopeState(
                    name,
                    {k: sorted_rec(sc.entities[k]) for k in sorted(sc.entities)},
                    [sorted_rec(sc.relations[rk]) for rk in sorted(sc.relations)],
                )
                for name, sc in sorted(self._scopes.items())
            ]
            return GraphState(FORMAT_VERSION, scopes)

    def encode(self) -> bytes:
        """The graph as msgpack (deterministic: equal graphs give equal bytes; no pickle)."""
        return ENCODER.encode(self._state())

    @classmethod
    def decode(cls, data: bytes, *, extractor: GraphExtractor | None = None) -> MemoryGraph:
        """A graph from :meth:`encode` bytes; :class:`StoreCorruptedError` when they are not one."""
        try:
            state = DECODER.decode(data)
        except (msgspec.DecodeError, TypeError) as e:
            raise StoreCorruptedError(f"not an encoded memory graph: {e}") from None
        if state.format != FORMAT_VERSION:
            raise StoreVersionError(f"memory graph format {state.format}; this trimem reads {FORMAT_VERSION}")
        g = cls(extractor=extractor)
        for st in state.scopes:
            sc = Scope()
            sc.entities = {k: sorted_rec(e) for k, e in st.entities.items()}
            for r in map(sorted_rec, st.relations):
                rk = (r.subject, r.predicate, r.object)
                if rk[0] not in sc.entities or rk[2] not in sc.entities:
                    raise StoreCorruptedError(f"relation {rk} names an entity the graph does not hold")
                sc.relations[rk] = r
            sc.reindex()
            if sc.entities:
                g._scopes[st.name] = sc
                for eid in sc.by_episode:
                    g._episode_scopes.setdefault(eid, set()).add(st.name)
        return g

    # -- drawing ------------------------------------------------------------------------------

    def draw(
        self,
        path: str | Path,
        *,
        user_id: str | None = None,
        agent_id: str = "default",
        entity: str | None = None,
        depth: int = 1,
        limit: int = 200,
    ) -> None:
        """Draws a user's graph (everyone's without a user; the neighbourhood of `entity`, which
        needs the user) to a PNG or SVG file, by suffix. Needs networkx and matplotlib:
        ``pip install 'trimem[graph]'``."""
        target = Path(path)
        fmt = target.suffix.casefold().lstrip(".")
        if fmt not in ("png", "svg"):
            raise InvalidArgumentError(f"draw writes .png or .svg files, got {str(path)!r}")
        if entity is not None:
            if user_id is None:
                raise InvalidArgumentError("draw(entity=...) needs a user_id")
            sub = self.neighbours(entity, user_id=user_id, agent_id=agent_id, depth=depth, limit=limit)
            ents, rels = sub.entities, sub.relations
        else:
            ents = self.entities(user_id=user_id, agent_id=agent_id)[:limit]
            rels = self.relations(user_id=user_id, agent_id=agent_id)
        render(target, fmt, ents, rels)
