"""Semantic memory: (a) facts — key → value with full version history, O(1) reads from an
in-process map; (b) a knowledge base of general documents, searched like episodes but in its own
index so that policies and anecdotes never crowd each other out.

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
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trimem.errors import InvalidArgumentError, UnknownIdError
from trimem.ops import FactsState, OpAlias, OpFact, OpKnowledge, OpPin
from trimem.records import Fact, FactChange, FactVersion, KnowledgeDoc, RecalledKnowledge, encode
from trimem.scope import check_id, knowledge_namespace
from trimem.timeutil import TimeLike, now_micros, to_micros

if TYPE_CHECKING:
    from trimem.memory import Memory

MAX_KEY_CHARS = 128
MAX_VALUE_CHARS = 4096

_FactKey = tuple[str, str, str]  # (agent_id, user_id, key)


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidArgumentError(f"a fact key must be a non-empty string, got {key!r}")
    if len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise InvalidArgumentError(f"invalid fact key {key[:40]!r}: at most {MAX_KEY_CHARS} printable characters")
    return key


class Facts:
    """Key → value facts per (agent, user), each with its full history and provenance."""

    def __init__(self, memory: Memory) -> None:
        self._m = memory
        self._current: dict[_FactKey, Fact] = {}
        self._history: dict[_FactKey, list[FactVersion]] = {}
        self._pinned: set[_FactKey] = set()
        self._aliases: dict[str, list[str]] = {}
        self._key_names: set[str] = set()
        self._alias_view: dict[str, list[str]] | None = None  # rebuilt only when keys or aliases change
        self._checked: set[tuple[str, str]] = set()

    def _scope(self, user_id: str, agent_id: str) -> tuple[str, str]:
        # Validated pairs are remembered: `get` must stay O(1) and cheap.
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
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgumentError(f"a fact value must be a non-empty string, got {value!r}")
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidArgumentError(f"a fact value has {len(value)} characters, over {MAX_VALUE_CHARS}")
        old = self._current.get((agent_id, user_id, key))
        if old is not None and old.value == value:
            return FactChange(op="noop", key=key, value=value, old_value=value, source=list(source))
        op = OpFact(agent_id, user_id, key, value, now_micros(at), [int(s) for s in source])
        self._m._commit(op)
        return FactChange(
            op="update" if old else "set", key=key, value=value, old_value=old.value if old else None, source=op.source
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
        agent_id, user_id = self._scope(user_id, agent_id)
        old = self._current.get((agent_id, user_id, check_key(key)))
        if old is None:
            return FactChange(op="noop", key=key, value=None, source=list(source))
        op = OpFact(agent_id, user_id, key, None, now_micros(at), [int(s) for s in source])
        self._m._commit(op)
        return FactChange(op="delete", key=key, value=None, old_value=old.value, source=op.source)

    def alias(self, keys: str | Sequence[str], words: Sequence[str]) -> None:
        """Words (any language) that stand for one key or several: recall reads those facts
        whenever a question uses one of the words."""
        key_list = [keys] if isinstance(keys, str) else list(keys)
        if isinstance(words, str):
            raise InvalidArgumentError("words must be a list of strings")
        for k in key_list:
            check_key(k)
        for w in words:
            check_key(w)
        self._m._commit(OpAlias(words=list(words), keys=key_list))

    def pin(self, key: str, *, user_id: str, agent_id: str = "default", pinned: bool = True) -> None:
        """A pinned fact is always in the profile section of a recall."""
        agent_id, user_id = self._scope(user_id, agent_id)
        self._m._commit(OpPin(agent_id, user_id, check_key(key), pinned))

    # -- applied from the log -------------------------------------------------------------------

    def _apply_fact(self, op: OpFact) -> None:
        fk = (op.agent_id, op.user_id, op.key)
        if op.key not in self._key_names:
            self._key_names.add(op.key)
            self._alias_view = None
        versions = self._history.setdefault(fk, [])
        if versions and versions[-1].valid_to is None:
            last = versions[-1]
            versions[-1] = FactVersion(last.value, last.valid_from, op.at, last.source, last.op)
        old = self._current.get(fk)
        if op.value is None:
            versions.append(FactVersion(None, op.at, op.at, op.source, "delete"))
            self._current.pop(fk, None)
            return
        versions.append(FactVersion(op.value, op.at, None, op.source, "update" if old else "set"))
        # The Fact gets its own copy of the history: what a caller holds never changes later,
        # and nothing a caller does to it reaches the memory.
        self._current[fk] = Fact(
            key=op.key,
            value=op.value,
            updated_at=op.at,
            version=(old.version + 1) if old else 1,
            history=list(versions),
            source=op.source,
            pinned=fk in self._pinned,
        )

    def _apply_alias(self, op: OpAlias) -> None:
        self._alias_view = None
        for w in op.words:
            keys = self._aliases.setdefault(w.lower(), [])
            keys.extend(k for k in op.keys if k not in keys)

    def _apply_pin(self, op: OpPin) -> None:
        fk = (op.agent_id, op.user_id, op.key)
        (self._pinned.add if op.pinned else self._pinned.discard)(fk)
        fact = self._current.get(fk)
        if fact is not None:
            self._current[fk] = Fact(
                fact.key, fact.value, fact.updated_at, fact.version, fact.history, fact.source, op.pinned
            )

    # -- reads ------------------------------------------------------------------------------------

    def get(self, key: str, *, user_id: str, agent_id: str = "default") -> Fact | None:
        """The current fact, or None. O(1)."""
        self._scope(user_id, agent_id)
        return self._current.get((agent_id, user_id, key))

    def history(self, key: str, *, user_id: str, agent_id: str = "default") -> list[FactVersion]:
        """Every value the key held, oldest first (deletions included, with value None)."""
        self._scope(user_id, agent_id)
        return list(self._history.get((agent_id, user_id, key), []))

    def as_of(self, key: str, t: TimeLike, *, user_id: str, agent_id: str = "default") -> str | None:
        """The value the key held at time `t` (None if unset or deleted then)."""
        us = to_micros(t)
        for v in reversed(self.history(key, user_id=user_id, agent_id=agent_id)):
            if v.valid_from <= us and (v.valid_to is None or us < v.valid_to):
                return v.value
        return None

    def _as_of_many(
        self, current: list[Fact], t: int, keys: Iterable[str], *, user_id: str, agent_id: str
    ) -> list[Fact]:
        """The facts of `current` and `keys` as they stood at time `t` (a point-in-time recall):
        each with the value it held then, none that was unset or deleted then."""
        out: list[Fact] = []
        for key in dict.fromkeys([*(f.key for f in current), *keys]):
            history = self._history.get((agent_id, user_id, key), [])
            held = [v for v in history if v.valid_from <= t]
            v = held[-1] if held else None
            if v is None or v.op == "delete" or v.value is None:
                continue
            out.append(
                Fact(
                    key=key,
                    value=v.value,
                    updated_at=v.valid_from,
                    version=len(held),
                    history=list(held),
                    source=v.source,
                    pinned=(agent_id, user_id, key) in self._pinned,
                )
            )
        return out

    def list(self, *, user_id: str, agent_id: str = "default") -> list[Fact]:
        self._scope(user_id, agent_id)
        return sorted(
            (f for (a, u, _), f in self._current.items() if a == agent_id and u == user_id), key=lambda f: f.key
        )

    def pinned(self, *, user_id: str, agent_id: str = "default") -> builtins.list[Fact]:
        return [f for f in self.list(user_id=user_id, agent_id=agent_id) if f.pinned]

    def aliases(self) -> dict[str, builtins.list[str]]:
        """Word → keys, including each known key's own name (with spaces for underscores).
        Recall reads this on every call, so it is cached until a key or an alias is added."""
        if self._alias_view is None:
            out: dict[str, list[str]] = {}
            for key in sorted(self._key_names):
                for word in {key.lower(), key.replace("_", " ").lower()}:
                    out.setdefault(word, [key])
            for w, keys in self._aliases.items():
                out[w] = list(keys)
            self._alias_view = out
        return {w: list(keys) for w, keys in self._alias_view.items()}

    # -- snapshots -----------------------------------------------------------------------------

    def _state(self) -> FactsState:
        return FactsState(
            history=[(a, u, k, v) for (a, u, k), v in self._history.items()],
            pinned=sorted(self._pinned),
            aliases=self._aliases,
        )

    def _load_state(self, st: FactsState) -> None:
        """Restores facts from a snapshot: histories as saved, current values replayed from them
        exactly as `_apply_fact` built them."""
        self._pinned = set(st.pinned)
        self._aliases = {w: list(keys) for w, keys in st.aliases.items()}
        self._alias_view = None
        for a, u, key, versions in st.history:
            fk = (a, u, key)
            history = list(versions)
            self._history[fk] = history
            self._key_names.add(key)
            current: Fact | None = None
            for v in history:
                if v.op == "delete":
                    current = None
                else:
                    current = Fact(
                        key=key,
                        value=v.value or "",
                        updated_at=v.valid_from,
                        version=current.version + 1 if current else 1,
                        history=history,
                        source=v.source,
                        pinned=fk in self._pinned,
                    )
            if current is not None:
                self._current[fk] = msgspec.structs.replace(current, history=list(history))

    def _forget_sources(self, episode_ids: Iterable[int]) -> None:
        """Drops forgotten episodes from every fact's provenance."""
        gone = set(episode_ids)
        if not gone:
            return
        for fk, versions in self._history.items():
            if any(gone.intersection(v.source) for v in versions):
                versions[:] = [
                    msgspec.structs.replace(v, source=[i for i in v.source if i not in gone]) for v in versions
                ]
                fact = self._current.get(fk)
                if fact is not None:
                    self._current[fk] = msgspec.structs.replace(
                        fact, history=list(versions), source=[i for i in fact.source if i not in gone]
                    )

    def _remove_keys(self, keys: Iterable[tuple[str, str, str]]) -> None:
        """Hard-deletes facts with their history (retention ran out)."""
        for fk in keys:
            self._current.pop(fk, None)
            self._history.pop(fk, None)
            self._pinned.discard(fk)

    def _remove_user(self, agent_id: str, user_id: str) -> None:
        for store in (self._current, self._history):
            for fk in [fk for fk in store if fk[0] == agent_id and fk[1] == user_id]:
                del store[fk]
        self._pinned = {fk for fk in self._pinned if not (fk[0] == agent_id and fk[1] == user_id)}


class KnowledgeBase:
    """General documents of an agent (shared by its users) or private to one user. Adding a
    document with the `source` of an existing one in the same scope supersedes it."""

    def __init__(self, memory: Memory) -> None:
        self._m = memory
        self._by_source: dict[tuple[str, str | None, str], int] = {}

    def add(
        self,
        text: str,
        *,
        agent_id: str = "default",
        user_id: str | None = None,
        source: str | None = None,
        title: str | None = None,
        timestamp: TimeLike | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> KnowledgeDoc:
        return self.add_many(
            [
                dict(
                    text=text,
                    agent_id=agent_id,
                    user_id=user_id,
                    source=source,
                    title=title,
                    timestamp=timestamp,
                    metadata=metadata,
                )
            ]
        )[0]

    def add_many(self, items: Sequence[dict[str, Any]]) -> list[KnowledgeDoc]:
        """Adds documents in one batch (bulk preload)."""
        m = self._m
        with m._lock:
            docs: list[KnowledgeDoc] = []
            replaces: list[int] = []
            for it in items:
                text = m._check_text(it.get("text"))
                agent_id = check_id("agent_id", it.get("agent_id") or "default")
                user_id = it.get("user_id")
                if user_id is not None:
                    check_id("user_id", user_id)
                source = it.get("source")
                version = 1
                if source is not None:
                    prev_id = self._by_source.get((agent_id, user_id, source))
                    if prev_id is not None:
                        prev = m._knowledge_doc(prev_id)
                        replaces.append(prev_id)
                        version = (prev.version + 1) if prev else 2
                docs.append(
                    KnowledgeDoc(
                        id=m._next_id(),
                        agent_id=agent_id,
                        text=text,
                        timestamp=now_micros(it.get("timestamp")),
                        source=source,
                        user_id=user_id,
                        title=it.get("title"),
                        version=version,
                        metadata=dict(it.get("metadata") or {}),
                    )
                )
            vectors = m._embed([d.text if not d.title else f"{d.title}\n{d.text}" for d in docs])
            m._commit(OpKnowledge(docs=docs, vectors=None if vectors is None else vectors.tobytes(), replaces=replaces))
            return docs

    def get(self, doc_id: int) -> KnowledgeDoc:
        doc = self._m._knowledge_doc(doc_id)
        if doc is None:
            raise UnknownIdError(f"no knowledge document with id {doc_id}")
        return doc

    def search(
        self,
        query: str,
        *,
        agent_id: str = "default",
        user_id: str | None = None,
        k: int = 5,
        vector: np.ndarray | None = None,
    ) -> list[RecalledKnowledge]:
        """Hybrid search over the agent's shared documents and, with `user_id`, that user's
        private ones. Never time-filtered: the latest policy applies to any question."""
        return self._m._search_knowledge(query, vector, agent_id=agent_id, user_id=user_id, k=k, now=now_micros(None))

    def _state(self) -> list[tuple[str, str | None, str, int]]:
        return [(a, u, src, i) for (a, u, src), i in self._by_source.items()]

    def _load_state(self, sources: list[tuple[str, str | None, str, int]]) -> None:
        self._by_source = {(a, u, src): i for a, u, src, i in sources}

    def _private_ids(self, agent_id: str, user_id: str) -> list[int]:
        """Ids of the user's private documents."""
        return [int(i) for i in self._m._knowledge_index.ids(namespace=knowledge_namespace(agent_id, user_id))]

    def _drop(self, doc_ids: Iterable[int]) -> None:
        gone = set(doc_ids)
        self._by_source = {k: i for k, i in self._by_source.items() if i not in gone}
        self._m._knowledge_index.delete(list(gone), missing_ok=True)

    def _apply(self, op: OpKnowledge) -> None:
        for old in op.replaces:
            self._m._knowledge_index.delete([old], missing_ok=True)
        for d in op.docs:
            if d.source is not None:
                self._by_source[(d.agent_id, d.user_id, d.source)] = d.id
        m = self._m
        m._knowledge_index.add(
            ids=np.array([d.id for d in op.docs], dtype=np.uint64),
            texts=[d.text if not d.title else f"{d.title}\n{d.text}" for d in op.docs],
            timestamps=np.array([d.timestamp for d in op.docs], dtype=np.int64),
            namespaces=[knowledge_namespace(d.agent_id, d.user_id) for d in op.docs],
            vectors=m._vectors_from(op.vectors, len(op.docs)),
            payloads=[encode(d) for d in op.docs],
        )
