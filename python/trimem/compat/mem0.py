"""A mem0-style API on trimem: :class:`Memory` and :class:`AsyncMemory` with mem0's verbs and the
shapes mem0ai 2.2.1 returns (``{"results": [{"id", "memory", "event", ...}]}``), on a
:class:`trimem.Memory` (embedded or PostgreSQL), with no LLM and no network needed.

>>> m = Memory(embedder="hashing")
>>> added = m.add("I prefer Vim for editing", user_id="alice", infer=False)
>>> [r["event"] for r in added["results"]]
['ADD']
>>> [r["memory"] for r in m.search("which editor?", filters={"user_id": "alice"})["results"]]
['I prefer Vim for editing']

* ``add(..., infer=False)``: each non-system message is one memory, as mem0 stores it.
* ``add(..., infer=True)`` (the default): the messages are retained as episodes of the user
  and ``reflect`` (trimem's rules for English and Chinese, or the memory's LLM extractor) turns
  their statements into facts; each fact it sets, updates or deletes is one memory (its text
  ``"key: value"``, its id stable per user and key) with mem0's event (``ADD``, ``UPDATE`` with
  ``previous_memory``, ``DELETE``), and its ``history`` is the fact's history.
* Memories are trimem items (one collection, filtered inside the search); ``search`` ranks by
  keywords and meaning. Its ``score`` is trimem's fused rank score scaled so that first in
  every search leg is 1.0; ``threshold`` applies to it.
* Filters: ``user_id``, ``agent_id``, ``run_id`` and metadata keys with a value or ``eq``,
  ``ne``, ``gt``, ``gte``, ``lt``, ``lte``; mem0's ``in``, ``nin``, ``contains``,
  ``icontains``, ``*``, ``AND``, ``OR``, ``NOT`` raise ``NotSupportedError``.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, Final

from trimem.aio import _Async, _coro
from trimem.errors import InvalidArgumentError, NotSupportedError, UnknownIdError
from trimem.layers.items import ItemPut
from trimem.memory import Memory as TrimemMemory
from trimem.records import Item
from trimem.scope import check_id

__all__ = ["AsyncMemory", "Memory"]

NAMESPACE: Final = ("mem0",)
RRF_TOP: Final = 1.0 / 61.0
"""The fused score of first place in one search leg (rank fusion with k = 60)."""
MAX_LIST: Final = 100_000
_SCOPES: Final = ("user_id", "agent_id", "run_id")
_OPERATORS: Final = {"eq": "$eq", "ne": "$ne", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
_IDS: Final = uuid.UUID("6f1d8a52-2f4e-4d2b-9b1e-7d3c0f6a9e11")  # the namespace of fact memories' ids


def _iso(micros: int) -> str:
    return datetime.fromtimestamp(micros / 1e6, UTC).isoformat()


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, str]:
    given = zip(_SCOPES, (user_id, agent_id, run_id), strict=True)
    # mem0 trims ids; what is left is checked as every trimem id is
    scope = {k: check_id(k, v.strip() if isinstance(v, str) else v) for k, v in given if v is not None}
    if not scope:
        raise InvalidArgumentError("at least one of user_id, agent_id, run_id is required")
    return scope


def _filter(filters: Mapping[str, Any] | None) -> dict[str, Any]:
    """mem0's filters as an item filter (scope keys at the top, metadata keys under metadata)."""
    if not filters or not any(k in filters for k in _SCOPES):
        raise InvalidArgumentError("filters must contain at least one of: user_id, agent_id, run_id")
    out: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    for key, cond in filters.items():
        if key in ("AND", "OR", "NOT") or cond == "*":
            raise NotSupportedError(f"the mem0 filter {key!r}: {cond!r} is not supported by trimem's mem0 API")
        if isinstance(cond, Mapping):
            unknown = [op for op in cond if op not in _OPERATORS]
            if unknown:
                raise NotSupportedError(f"mem0 filter operators {unknown} are not supported by trimem's mem0 API")
            cond = {_OPERATORS[op]: v for op, v in cond.items()}
        (out if key in _SCOPES else meta)[key] = cond
    if meta:
        out["metadata"] = meta
    return out


class Memory:
    """mem0's ``Memory`` over a trimem memory: `path` a folder or a ``postgresql://`` DSN (None:
    in process), or `memory` one you have."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, memory: TrimemMemory | None = None, embedder: Any = "auto"
    ) -> None:
        self.memory = memory if memory is not None else TrimemMemory(path, embedder=embedder)
        self._items = self.memory.items.using(fields=["data"])
        self._top = RRF_TOP * (2 if self.memory.dim else 1)

    # -- writes --------------------------------------------------------------------------------------------

    def add(self, /, messages: Any, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
            metadata: dict[str, Any] | None = None, infer: bool = True, **kwargs: Any) -> dict[str, Any]:  # fmt: skip
        """Adds memories from `messages` (a string, a message dict, or a list of them)."""
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise NotSupportedError(f"mem0's {unsupported} are not supported by trimem's mem0 API")
        scope = _scope(user_id, agent_id, run_id)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        elif isinstance(messages, Mapping):
            messages = [messages]
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            raise InvalidArgumentError("messages must be a str, a dict, or a list of dicts")
        said = [m for m in messages if m.get("role") not in (None, "system") and isinstance(m.get("content"), str)]
        if not infer:
            return {"results": self._add_raw(said, scope, dict(metadata or {}))}
        if "user_id" not in scope:
            raise InvalidArgumentError("add(infer=True) needs a user_id: trimem reflects on a user's statements")
        return {"results": self._add_inferred(said, scope, dict(metadata or {}))}

    def _add_raw(self, said: list[Mapping[str, Any]], scope: dict[str, str], metadata: dict[str, Any]) -> list[Any]:
        now = datetime.now(UTC)
        puts, results = [], []
        for m in said:
            mid = str(uuid.uuid4())
            value = self._value(m["content"], scope, metadata, role=m["role"], actor=m.get("name"))
            value["history"] = [self._event(mid, None, m["content"], "ADD", now)]
            puts.append(ItemPut(NAMESPACE, mid, value))
            results.append({"id": mid, "memory": m["content"], "event": "ADD", "actor_id": m.get("name"),
                            "role": m["role"]})  # fmt: skip
        self._items.apply(puts, now=now)
        return results

    def _add_inferred(
        self, said: list[Mapping[str, Any]], scope: dict[str, str], metadata: dict[str, Any]
    ) -> list[Any]:
        user, agent = scope["user_id"], scope.get("agent_id", "default")
        if said:
            self.memory.retain_many([{"text": m["content"], "role": m["role"], "user_id": user, "agent_id": agent,
                                      **({"session_id": scope["run_id"]} if "run_id" in scope else {})} for m in said])  # fmt: skip
        results = []
        now = datetime.now(UTC)
        for change in self.memory.reflect(user_id=user, agent_id=agent):
            if change.op == "noop":
                continue
            mid = str(uuid.uuid5(_IDS, f"{agent}\x1f{user}\x1f{change.key}"))
            text = None if change.value is None else f"{change.key}: {change.value}"
            old = None if change.old_value is None else f"{change.key}: {change.old_value}"
            if change.op == "delete" or text is None:
                self._items.delete(NAMESPACE, mid)
                results.append({"id": mid, "memory": old, "event": "DELETE"})
                continue
            value = self._value(text, scope, metadata, role="user", actor=None)
            value["fact"] = {"key": change.key, "agent_id": agent, "user_id": user}
            self._items.put(NAMESPACE, mid, value, now=now)
            event = "UPDATE" if old is not None else "ADD"
            results.append({"id": mid, "memory": text, "event": event, **({"previous_memory": old} if old else {})})
        return results

    def _value(self, text: str, scope: dict[str, str], metadata: dict[str, Any], *, role: str,
               actor: str | None) -> dict[str, Any]:  # fmt: skip
        value: dict[str, Any] = {"data": text, "hash": hashlib.md5(text.encode()).hexdigest(), "role": role,
                                 "metadata": metadata, **scope}  # fmt: skip
        if actor:
            value["actor_id"] = actor
        return value

    @staticmethod
    def _event(mid: str, old: str | None, new: str | None, event: str, at: datetime) -> dict[str, Any]:
        return {"id": str(uuid.uuid4()), "memory_id": mid, "old_memory": old, "new_memory": new, "event": event,
                "created_at": at.isoformat(), "updated_at": None, "is_deleted": int(event == "DELETE"),
                "actor_id": None, "role": None}  # fmt: skip

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               data: str | None = None) -> dict[str, str]:  # fmt: skip
        """Replaces a memory's text and/or metadata (a fact memory's text sets the fact)."""
        text = text if text is not None else data
        if text is None and metadata is None:
            raise InvalidArgumentError("at least one of text or metadata must be provided")
        item = self._get_item(memory_id)
        value = dict(item.value)
        now = datetime.now(UTC)
        if text is not None:
            fact = value.get("fact")
            if fact is not None:
                prefix = f"{fact['key']}: "
                new = text[len(prefix) :] if text.startswith(prefix) else text
                # through the tool path: a fact written from outside passes reflect's guard
                self.memory.execute("set_fact", key=fact["key"], value=new, user_id=fact["user_id"],
                                    agent_id=fact["agent_id"])  # fmt: skip
                text = prefix + new
            else:
                value["history"] = [
                    *value.get("history", []),
                    self._event(memory_id, value["data"], text, "UPDATE", now),
                ]
            value.update(data=text, hash=hashlib.md5(text.encode()).hexdigest())
        if metadata is not None:
            value["metadata"] = {k: v for k, v in metadata.items() if k not in (*_SCOPES, "actor_id")}
        self._items.put(NAMESPACE, memory_id, value, now=now)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        self._delete([self._get_item(memory_id)])
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:  # fmt: skip
        self._delete(self._list(_scope(user_id, agent_id, run_id), MAX_LIST))
        return {"message": "Memories deleted successfully!"}

    def reset(self) -> None:
        """Deletes every mem0 memory (and the facts behind them)."""
        self._delete([item for item, _ in self._items.search(NAMESPACE, limit=MAX_LIST)])

    def _delete(self, items: list[Item]) -> None:
        """Deletes memories (the facts behind fact memories, then every item in one write)."""
        for item in items:
            fact = item.value.get("fact")
            if fact is not None:
                self.memory.facts.delete(fact["key"], user_id=fact["user_id"], agent_id=fact["agent_id"])
        self._items.apply([ItemPut(NAMESPACE, item.key, None) for item in items])

    # -- reads ---------------------------------------------------------------------------------------------

    def _get_item(self, memory_id: str) -> Item:
        item = self._items.get(NAMESPACE, memory_id) if isinstance(memory_id, str) and memory_id else None
        if item is None:
            raise UnknownIdError(f"Memory with id {memory_id} not found")
        return item

    def _list(self, filters: Mapping[str, Any], limit: int) -> list[Item]:
        found = self._items.search(NAMESPACE, filter=_filter(filters), limit=limit)
        return [item for item, _ in found]

    def _shape(self, item: Item, score: float | None = None) -> dict[str, Any]:
        v = item.value
        out: dict[str, Any] = {
            "id": item.key, "memory": v["data"], "hash": v["hash"], "metadata": v["metadata"] or None,
            "created_at": _iso(item.created_at),
            "updated_at": _iso(item.updated_at) if item.updated_at != item.created_at else None,
        }  # fmt: skip
        if score is not None:
            out["score"] = score
        for key in (*_SCOPES, "actor_id", "role"):
            if key in v:
                out[key] = v[key]
        return out

    def get(self, memory_id: str) -> dict[str, Any] | None:
        item = self._items.get(NAMESPACE, memory_id) if isinstance(memory_id, str) and memory_id else None
        return None if item is None else self._shape(item)

    def get_all(self, /, *, filters: dict[str, Any] | None = None, top_k: int = 20, **kwargs: Any) -> dict[str, Any]:
        if kwargs:
            raise InvalidArgumentError(f"get_all takes the scope in filters=, not {sorted(kwargs)}")
        return {"results": [self._shape(i) for i in self._list(filters or {}, top_k)]}

    def search(self, /, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None, threshold: float = 0.1,
               **kwargs: Any) -> dict[str, Any]:  # fmt: skip
        """Memories matching `query` by keywords and meaning within `filters`, best first."""
        if kwargs:
            raise InvalidArgumentError(f"search takes the scope in filters=, not {sorted(kwargs)}")
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgumentError("query must be a non-empty string")
        found = self._items.search(NAMESPACE, query=query, filter=_filter(filters or {}), limit=top_k)
        scored = [(item, min(1.0, s / self._top)) for item, s in found if s is not None]
        return {"results": [self._shape(item, round(s, 6)) for item, s in scored if s >= threshold]}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The memory's changes, oldest first (a fact memory's: its fact's history)."""
        item = self._get_item(memory_id)
        fact = item.value.get("fact")
        if fact is None:
            return list(item.value.get("history", []))
        versions = self.memory.facts.history(fact["key"], user_id=fact["user_id"], agent_id=fact["agent_id"])
        rows, old = [], None
        for v in versions:
            new = None if v.value is None else f"{fact['key']}: {v.value}"
            event = "DELETE" if v.value is None else "ADD" if old is None else "UPDATE"
            rows.append(self._event(memory_id, old, new, event, datetime.fromtimestamp(v.valid_from / 1e6, UTC)))
            old = new
        return rows


class AsyncMemory(_Async[Memory]):
    """:class:`Memory` with every verb a coroutine (run on a worker thread: the engine releases
    the GIL, the event loop never waits)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, memory: TrimemMemory | None = None,
                 embedder: Any = "auto", max_workers: int | None = None) -> None:  # fmt: skip
        pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="trimem-mem0")
        super().__init__(Memory(path, memory=memory, embedder=embedder), pool)

    add = _coro(Memory.add)
    search = _coro(Memory.search)
    get = _coro(Memory.get)
    get_all = _coro(Memory.get_all)
    update = _coro(Memory.update)
    delete = _coro(Memory.delete)
    delete_all = _coro(Memory.delete_all)
    history = _coro(Memory.history)
    reset = _coro(Memory.reset)
