"""Semantic memory: (a) facts — key → value with full version history, O(1) reads; (b) a
knowledge base of general documents, searched like episodes but in its own collection so that
policies and anecdotes never crowd each other out.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> _ = mem.facts.set("primary_language", "TypeScript", user_id="u1", at=1)
>>> _ = mem.facts.set("primary_language", "Rust", user_id="u1", at=2)
>>> mem.facts.get("primary_language", user_id="u1").value
'Rust'
>>> mem.facts.as_of("primary_language", 1, user_id="u1")
'TypeScript'
>>> [v.value for v in mem.facts.history("primary_language", user_id="u1")]
['TypeScript', 'Rust']
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trimem._backend import Backend, Floors, Query
from trimem._backend.ops import OpAlias, OpFact, OpForget, OpKnowledge, OpPin
from trimem._checks import check_bool, check_index, check_int, check_plain, check_str, shown
from trimem.config import AGREEMENT_WEIGHT, FACET_WEIGHT, FACT_VECTOR_WEIGHT, REORDER_POOL, SCENE_FACET_SHARE
from trimem.errors import ArgumentTypeError, InvalidArgumentError, UnknownIdError
from trimem.layers._shared import Embedding, IndexedLayer, check_text, named_only
from trimem.records import Fact, FactChange, FactVersion, KnowledgeDoc, RecalledKnowledge, Scored
from trimem.scope import SHARED, Shared, check_id, episode_namespace, knowledge_namespace, knowledge_owner
from trimem.telemetry import instrument
from trimem.text.facets import facets, owned
from trimem.text.focus import asked_part
from trimem.text.keys import fact_text, is_note_key
from trimem.text.notes import tells_news
from trimem.timeutil import TimeLike, now_micros, to_micros

if TYPE_CHECKING:
    from trimem.config import Policy

MAX_KEY_CHARS = 128
MAX_VALUE_CHARS = 4096


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidArgumentError(f"a fact key must be a non-empty string, got {shown(key)}")
    if len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise InvalidArgumentError(f"invalid fact key {shown(key[:40])}: at most {MAX_KEY_CHARS} printable characters")
    return check_str("a fact key", key)


def _sources(source: Iterable[int]) -> list[int]:
    if isinstance(source, (str, bytes, Mapping)) or not isinstance(source, Iterable):
        raise InvalidArgumentError(f"source must be a list of episode ids, got {shown(source)}")
    out = []
    for s in source:
        i = check_index("a source episode id", s)
        if i is None:
            raise InvalidArgumentError(f"source must be a list of episode ids, got {shown(s)}")
        out.append(i)
    return out


def _with_leg(
    found: builtins.list[tuple[Fact, Scored]], gains: Sequence[float], leg: str
) -> builtins.list[tuple[Fact, Scored]]:
    """`found` with each fact's gain from one more fused leg added to its score (and named in its
    explanation), ordered again: the weak stay weak and after the confident."""
    out = list(found)
    for i, gain in enumerate(gains):
        if gain:
            fact, scored = found[i]
            explain = {**scored.explain, leg: round(gain, 6)}
            out[i] = (fact, msgspec.structs.replace(scored, score=scored.score + gain, explain=explain))
    out.sort(key=lambda fs: (fs[1].weak, -fs[1].score))
    return out


def _by_facets(
    found: builtins.list[tuple[Fact, Scored]], wanted: frozenset[str], rrf_k: float, asked: frozenset[str] = frozenset()
) -> builtins.list[tuple[Fact, Scored]]:
    """`found` with a facet leg fused in: for each of the request's facets a fact touches, it
    gains ``FACET_WEIGHT / (rrf_k + 1)`` times that facet's rarity among the found facts against
    one that fact alone touches (a facet most of a profile touches tells little); twice that for
    the facet of a thing the fact names as owned one at a time (:func:`trimem.text.facets.owned`)."""
    texts = [fact_text(f.key, f.value) for f, _ in found]
    touched = [wanted & facets(t) for t in texts]
    n = len(found)
    # a facet's rarity is positive (at most n of the n found touch it); the most a facet weighs
    # is the rarity of one that a single fact touches
    rarity = {name: math.log((n + 1) / (0.5 + sum(name in t for t in touched))) for name in wanted}
    most = math.log((n + 1) / 1.5)
    # ("开车…加油" is about the car one owns more than about any note that mentions driving)
    mine = [wanted & owned(t) for t in texts]
    # a facet of the scene only ("my cousin's wedding" in "…what's the best way to get there?")
    # weighs less than one of what is asked
    scene = wanted - asked if asked else frozenset()
    gains = [
        FACET_WEIGHT
        / (rrf_k + 1)
        * sum(rarity[x] * (2 if x in own else 1) * (SCENE_FACET_SHARE if x in scene else 1) for x in names)
        / most
        for names, own in zip(touched, mine)
    ]
    return _with_leg(found, gains, "facets")


def _named_only_is_weak(
    found: builtins.list[tuple[Fact, Scored]], request: str, floors: Floors
) -> builtins.list[tuple[Fact, Scored]]:
    """`found`, where a note that meets the request only in a name (:func:`named_only`) is
    labelled weak: "What's Tala's middle name?" is not answered by "Tala can't stand coconut"."""
    only = named_only(request)
    if only is None:
        return found
    out = [
        (f, msgspec.structs.replace(s, weak=True))
        if not s.weak and is_note_key(f.key) and (s.cosine or 0.0) < floors.cosine_alone and only(f.value)
        else (f, s)
        for f, s in found
    ]
    out.sort(key=lambda fs: (fs[1].weak, -fs[1].score))
    return out


def _by_agreement(
    found: builtins.list[tuple[Fact, Scored]], ranks: Mapping[int, int], rrf_k: float
) -> builtins.list[tuple[Fact, Scored]]:
    """`found` with an agreement leg fused in: a fact or note whose source (the user's words it was
    read from) ranks ``r``-th among the episodes found for the same request gains
    ``AGREEMENT_WEIGHT / (rrf_k + 1 + r)``; a keyed fact's words say more than its value ("my
    German is B2-ish, dreadful on the phone with the Finanzamt")."""
    # the words of a value since replaced name the subject as well as the current value's do
    told = [(*fact.source, *(s for v in fact.history for s in v.source)) for fact, _ in found]
    best = [min((ranks[s] for s in sources if s in ranks), default=None) for sources in told]
    return _with_leg(found, [0.0 if r is None else AGREEMENT_WEIGHT / (rrf_k + 1 + r) for r in best], "agreement")


@instrument
class Facts(IndexedLayer):
    """Key → value facts per (agent, user), each with its full history and provenance; the
    current ones are indexed by keywords and meaning (:meth:`search`)."""

    def __init__(self, backend: Backend, embedding: Embedding, policy: Policy, floors: Floors) -> None:
        super().__init__(backend, embedding, policy, floors)
        self._checked: set[tuple[str, str]] = set()

    def _scope(self, user_id: str, agent_id: str) -> tuple[str, str]:
        # Validated pairs are remembered: `get` must stay O(1) and cheap.
        if not (isinstance(user_id, str) and isinstance(agent_id, str)):
            check_id("agent_id", agent_id)
            check_id("user_id", user_id)
        pair = (agent_id, user_id)
        if pair not in self._checked:
            check_id("agent_id", agent_id)
            check_id("user_id", user_id)
            self._checked.add(pair)
        return pair

    # -- writes -------------------------------------------------------------------------------

    def set(
        self,
        key: str,
        value: str,
        *,
        user_id: str,
        agent_id: str = "default",
        source: Iterable[int] = (),
        at: TimeLike | None = None,
    ) -> FactChange:
        """Sets a fact; an existing value is closed into the history (never silently lost)."""
        agent_id, user_id = self._scope(user_id, agent_id)
        check_key(key)
        check_str("a fact value", value, limit=MAX_VALUE_CHARS, empty=False)
        src = _sources(source)
        with self._backend.scope_lock([f"{agent_id}/{user_id}"]):
            old = self._backend.fact(agent_id, user_id, key)
            if old is not None and old.value == value:
                return FactChange(op="noop", key=key, value=value, old_value=value, source=src)
            vector = self.embed_fact(key, value, was=None if old is None else old.value)
            data = None if vector is None else vector.astype(np.float32).tobytes()
            self._backend.write([OpFact(agent_id, user_id, key, value, now_micros(at), src, data)])
        return FactChange(
            op="update" if old else "set", key=key, value=value, old_value=old.value if old else None, source=src
        )

    def delete(
        self,
        key: str,
        *,
        user_id: str,
        agent_id: str = "default",
        source: Iterable[int] = (),
        at: TimeLike | None = None,
    ) -> FactChange:
        """Deletes a fact; its history keeps the deletion."""
        agent_id, user_id = self._scope(user_id, agent_id)
        src = _sources(source)
        with self._backend.scope_lock([f"{agent_id}/{user_id}"]):
            old = self._backend.fact(agent_id, user_id, check_key(key))
            if old is None:
                return FactChange(op="noop", key=key, value=None, source=src)
            self._backend.write([OpFact(agent_id, user_id, key, None, now_micros(at), src)])
        return FactChange(op="delete", key=key, value=None, old_value=old.value, source=src)

    def embed_fact(self, key: str, value: str, was: str | None = None) -> np.ndarray | None:
        """The vector the fact index keeps of a fact: a note's text with the note it replaced
        (`was`), as :func:`~trimem.text.keys.fact_text` reads it; else "key words: value"."""
        return self._embed.one(fact_text(key, value, was) if is_note_key(key) else f"{key.replace('_', ' ')}: {value}")

    def alias(self, keys: str | Sequence[str], words: Sequence[str]) -> None:
        """Words (any language) that stand for one key or several: recall reads those facts
        whenever a question uses one of the words."""
        if not isinstance(keys, (str, list, tuple)):
            raise InvalidArgumentError(f"keys must be a key or a list of keys, got {shown(keys)}")
        key_list = [keys] if isinstance(keys, str) else list(keys)
        if isinstance(words, str) or not isinstance(words, (list, tuple)):
            raise InvalidArgumentError(f"words must be a list of strings, got {shown(words)}")
        for k in key_list:
            check_key(k)
        for w in words:
            check_key(w)
        self._backend.write([OpAlias(words=list(words), keys=key_list)])

    def pin(self, key: str, *, user_id: str, agent_id: str = "default", pinned: bool = True) -> None:
        """A pinned fact is always in the profile section of a recall."""
        agent_id, user_id = self._scope(user_id, agent_id)
        self._backend.write([OpPin(agent_id, user_id, check_key(key), check_bool("pinned", pinned))])

    # -- reads ------------------------------------------------------------------------------------

    def get(self, key: str, *, user_id: str, agent_id: str = "default") -> Fact | None:
        """The current fact, or None. O(1)."""
        try:  # the hot path: a pair seen before and a hashable key (anything else is checked below)
            if (agent_id, user_id) in self._checked and isinstance(key, str):
                return self._backend.fact(agent_id, user_id, key)
        except TypeError:
            pass
        self._scope(user_id, agent_id)
        if not isinstance(key, str):
            raise ArgumentTypeError(f"a fact key must be a string, got {shown(key)}")
        return self._backend.fact(agent_id, user_id, key)

    def history(self, key: str, *, user_id: str, agent_id: str = "default") -> builtins.list[FactVersion]:
        """Every value the key held, oldest first (deletions included, with value None)."""
        self._scope(user_id, agent_id)
        if not isinstance(key, str):
            raise ArgumentTypeError(f"a fact key must be a string, got {shown(key)}")
        return self._backend.fact_history(agent_id, user_id, key)

    def as_of(self, key: str, t: TimeLike, *, user_id: str, agent_id: str = "default") -> str | None:
        """The value the key held at time `t` (None if unset or deleted then)."""
        us = to_micros(t)
        for v in reversed(self.history(key, user_id=user_id, agent_id=agent_id)):
            if v.valid_from <= us and (v.valid_to is None or us < v.valid_to):
                return v.value
        return None

    def as_of_many(self, keys: Iterable[str], t: int, *, user_id: str, agent_id: str) -> builtins.list[Fact]:
        """The facts of `keys` as they stood at time `t` (a point-in-time recall): each with the
        value it held then, none that was unset or deleted then."""
        out: list[Fact] = []
        for key in dict.fromkeys(keys):
            history = self._backend.fact_history(agent_id, user_id, key)
            held = [v for v in history if v.valid_from <= t]
            v = held[-1] if held else None
            if v is None or v.op == "delete" or v.value is None:
                continue
            current = self._backend.fact(agent_id, user_id, key)
            out.append(
                Fact(
                    key=key,
                    value=v.value,
                    updated_at=v.valid_from,
                    version=len(held),
                    history=list(held),
                    source=v.source,
                    pinned=current is not None and current.pinned,
                )
            )
        return out

    def list(self, *, user_id: str, agent_id: str = "default") -> builtins.list[Fact]:
        """The user's current facts, by key."""
        self._scope(user_id, agent_id)
        return sorted((f for _, _, f in self._backend.facts(agent_id, user_id)), key=lambda f: f.key)

    def pinned(self, *, user_id: str, agent_id: str = "default") -> builtins.list[Fact]:
        return [f for f in self.list(user_id=user_id, agent_id=agent_id) if f.pinned]

    def aliases(self) -> dict[str, builtins.list[str]]:
        """Word → keys, including each known key's own name (with spaces for underscores)."""
        return self._backend.aliases()

    def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str = "default",
        k: int = 5,
        vector: np.ndarray | None = None,
        now: TimeLike | None = None,
        request: str | None = None,
        episode_ranks: Callable[[], Mapping[int, int]] | None = None,
    ) -> builtins.list[tuple[Fact, Scored]]:
        """The user's current facts and notes nearest to `query` by keywords and meaning, best
        first (those under the floors of a confident match labelled weak, after the others).
        The facets of life the `request` as asked (default: `query`) touches add a leg that
        ranks the facts touching them (:mod:`trimem.text.facets`); `episode_ranks`, when given,
        is called once for the rank of each episode in a search of the episodes for the same
        request, and adds a leg that ranks a fact by where its source words rank there. These legs
        reorder, never make a match confident. A newer note telling news comes before the older
        fact it is not unrelated to (:meth:`_newer_first`).

        >>> from trimem import Memory
        >>> mem = Memory(embedder=None)
        >>> _ = mem.facts.set("database", "PostgreSQL", user_id="u1")
        >>> [(f.key, f.value) for f, _ in mem.facts.search("连接到数据库", user_id="u1")]
        [('database', 'PostgreSQL')]
        """
        agent_id, user_id = self._scope(user_id, agent_id)
        check_text(query)
        if request is not None:
            check_text(request)
        check_int("k", k, low=1)
        if vector is None:
            vector = self._embed.query(query)
        # Every fact of the user is a candidate (the backend drops none by similarity: a request
        # names a fact only indirectly more often than not); the floors only label the weak.
        asking = query if request is None else request
        wanted = facets(asking)
        pool = int(k * REORDER_POOL) if wanted or episode_ranks is not None else k
        q = Query(text=query, vector=vector, namespace=episode_namespace(agent_id, user_id), k=pool,
                  floors=self._embed.floors(self.floors, query, request=request), now=now_micros(now),
                  vector_weight=FACT_VECTOR_WEIGHT * self._embed.vector_weight(query))  # fmt: skip
        found = _named_only_is_weak(self._backend.search_facts(q, self._policy), request or query, q.floors)
        if len(found) < 2:  # nothing to reorder
            return found
        if wanted:
            found = _by_facets(found, wanted, self._policy.rrf_k, wanted & facets(asked_part(asking)))
        if episode_ranks is not None:
            found = _by_agreement(found, episode_ranks(), self._policy.rrf_k)
        return self._newer_first(found[:k], agent_id, user_id)

    def _newer_first(
        self, found: builtins.list[tuple[Fact, Scored]], agent_id: str, user_id: str
    ) -> builtins.list[tuple[Fact, Scored]]:
        """`found`, where a newer note that tells of a change or of something new ("quit the café
        job, I'm TAing now"), has replaced nothing, and is ranked under an older fact it is not
        unrelated to in meaning (by the embedder's floor) moves up to just before the first such
        fact, as confident as it: reflect links the two only when sure, and when it was not, the
        request still gets the newer first."""
        # a note that already replaced an earlier one was linked to its subject by reflect
        news = [
            f.key
            for f, _ in found
            if is_note_key(f.key) and len(f.history) < 2 and tells_news(f.value) and self.reads(f.value)
        ]
        if not news:
            return found
        vectors = self._backend.fact_vectors(agent_id, user_id, [f.key for f, _ in found])
        out = list(found)
        for key in news:
            v = vectors.get(key)
            if v is None:
                continue
            at = next(i for i, (f, _) in enumerate(out) if f.key == key)
            when = out[at][0].updated_at
            # what it may stand for was said before it: a later note is no candidate
            near = {i: float(vectors[f.key] @ v) for i, (f, _) in enumerate(out)
                    if i != at and f.key in vectors and f.updated_at < when}  # fmt: skip
            # the first-ranked of the older ones it is not unrelated to
            to = min((i for i, c in near.items() if c >= self.unrelated_cosine), default=-1)
            if 0 <= to < at:
                fact, scored = out.pop(at)
                out.insert(to, (fact, msgspec.structs.replace(scored, weak=out[to][1].weak)))
        return out

    @property
    def same_subject_cosine(self) -> float:
        """The cosine from which two notes' vectors are about one subject (the embedder's scale)."""
        return self._embed.cosine_floors[2]

    @property
    def unrelated_cosine(self) -> float:
        """The cosine under which two texts' vectors are unrelated (the embedder's scale)."""
        return self._embed.cosine_floors[0]

    def reads(self, text: str) -> bool:
        """Whether the embedder's vectors mean something for `text`'s language (MiniLM: not for
        Chinese), so that a cosine may stand for sameness of subject."""
        return self._embed.embedder is not None and self._embed.vouches(text)

    def vectors(self, keys: Sequence[str], *, user_id: str, agent_id: str = "default") -> dict[str, np.ndarray]:
        """The fact index's vectors of the user's `keys` (those it has)."""
        agent_id, user_id = self._scope(user_id, agent_id)
        return self._backend.fact_vectors(agent_id, user_id, keys)


@instrument
class KnowledgeBase(IndexedLayer):
    """General documents of an agent (shared by its users) or private to one user. Adding a
    document with the `source` of an existing one in the same scope supersedes it."""

    def add(
        self,
        text: str,
        *,
        agent_id: str = "default",
        user_id: str | Shared = SHARED,
        source: str | None = None,
        title: str | None = None,
        timestamp: TimeLike | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> KnowledgeDoc:
        """Adds one document: shared by the agent's users (``user_id=SHARED``, the default), or
        private to ``user_id``."""
        item = dict(
            text=text,
            agent_id=agent_id,
            user_id=user_id,
            source=source,
            title=title,
            timestamp=timestamp,
            metadata=metadata,
        )
        return self.add_many([item])[0]

    def add_many(self, items: Sequence[Mapping[str, Any]]) -> builtins.list[KnowledgeDoc]:
        """Adds documents in one batch (bulk preload)."""
        backend = self._backend
        drafts: list[dict[str, Any]] = []
        for it in items:
            user_id = knowledge_owner(it.get("user_id", SHARED))
            source, title, metadata = it.get("source"), it.get("title"), it.get("metadata")
            if source is not None:
                check_str("source", source, limit=MAX_KEY_CHARS * 8, empty=False)
            if title is not None:
                check_str("title", title, limit=MAX_VALUE_CHARS)
            if metadata is not None:
                if not isinstance(metadata, Mapping):
                    raise InvalidArgumentError(f"metadata must be a mapping, got {shown(metadata)}")
                check_plain("metadata", dict(metadata))
            drafts.append(
                dict(
                    agent_id=check_id("agent_id", it.get("agent_id") or "default"),
                    user_id=user_id,
                    text=check_text(it.get("text")),
                    timestamp=now_micros(it.get("timestamp")),
                    source=source,
                    title=title,
                    metadata=dict(metadata or {}),
                )
            )
        if not drafts:
            return []
        vectors = self._embed([d["text"] if not d["title"] else f"{d['title']}\n{d['text']}" for d in drafts])
        with backend.scope_lock(sorted({knowledge_namespace(d["agent_id"], d["user_id"]) for d in drafts})):
            first = backend.reserve_ids(len(drafts))
            docs: list[KnowledgeDoc] = []
            replaces: list[int] = []
            for i, d in enumerate(drafts):
                version = 1
                if d["source"] is not None:
                    prev_id = backend.document_by_source(d["agent_id"], d["user_id"], d["source"])
                    if prev_id is not None:
                        prev = backend.document(prev_id)
                        replaces.append(prev_id)
                        version = (prev.version + 1) if prev else 2
                docs.append(KnowledgeDoc(id=first + i, version=version, **d))
            op = OpKnowledge(docs=docs, vectors=None if vectors is None else vectors.tobytes(), replaces=replaces)
            try:
                backend.write([op])
            except BaseException:
                backend.release_ids(first, len(drafts))
                raise
            return docs

    def get(self, doc_id: int) -> KnowledgeDoc | None:
        """The document, or None."""
        i = check_index("doc_id", doc_id)
        return None if i is None else self._backend.document(i)

    def list(self, *, agent_id: str = "default", user_id: str | Shared = SHARED) -> builtins.list[KnowledgeDoc]:
        """The agent's shared documents, or with ``user_id`` that user's private ones, by id."""
        ns = knowledge_namespace(agent_id, knowledge_owner(user_id))
        docs = (self._backend.document(i) for i in self._backend.document_ids(ns))
        return [d for d in docs if d is not None]

    def delete(self, doc_ids: Iterable[int], *, agent_id: str = "default", user_id: str | Shared = SHARED) -> int:
        """Deletes documents of one scope (the agent's shared ones, or a user's private ones) by
        id; an id of another scope raises `UnknownIdError` and nothing changes."""
        ns = knowledge_namespace(agent_id, knowledge_owner(user_id))
        if isinstance(doc_ids, (str, bytes, Mapping)) or not isinstance(doc_ids, Iterable):
            raise InvalidArgumentError(f"doc_ids must be a list of ids, got {shown(doc_ids)}")
        checked = [check_index("a document id", i) for i in doc_ids]
        ids = sorted({i if i is not None else -1 for i in checked})
        with self._backend.lock:
            mine = set(self._backend.document_ids(ns))
            missing = [i for i in ids if i not in mine]
            if missing:
                raise UnknownIdError(f"no knowledge documents {missing} in scope {ns!r}")
            if ids:
                self._backend.write([OpForget(knowledge_ids=ids)])
        return len(ids)

    def search(
        self,
        query: str,
        *,
        agent_id: str = "default",
        user_id: str | Shared = SHARED,
        k: int = 5,
        vector: np.ndarray | None = None,
        now: TimeLike | None = None,
        before: int | None = None,
    ) -> builtins.list[RecalledKnowledge]:
        """Hybrid search over the agent's shared documents and, with a `user_id`, that user's
        private ones too. Never time-filtered by a question: the latest policy applies to any
        question (``before`` answers with what was known then)."""
        check_text(query)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidArgumentError(f"k must be an integer of at least 1, got {shown(k)}")
        if not self._embed.vouches(query):
            vector = None  # keywords only: a blind vector leg would drag the fused ranking down
        elif vector is None:
            vector = self._embed.query(query)
        owner = knowledge_owner(user_id)
        spaces = [knowledge_namespace(agent_id, None)]
        if owner is not None:
            spaces.append(knowledge_namespace(agent_id, owner))
        at = now_micros(now)
        found: list[RecalledKnowledge] = []
        for ns in spaces:
            found += self._backend.search_knowledge(
                Query(
                    text=query,
                    vector=vector,
                    namespace=ns,
                    k=k,
                    floors=self._embed.floors(self.floors, query),
                    vector_weight=self._embed.vector_weight(query),
                    now=at,
                    time_range=None if before is None else (-(2**63), before),
                ),
                self._policy,
            )
        found.sort(key=lambda r: (-r.scored.score, r.doc.id))
        return found[:k]


__all__ = ["MAX_KEY_CHARS", "MAX_VALUE_CHARS", "Facts", "KnowledgeBase", "check_key"]
