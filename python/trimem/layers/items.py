"""Items: JSON objects under keys in namespaces of labels, searched by keywords and meaning
inside a namespace prefix and a value filter — what a LangGraph store (and a session of the
OpenAI Agents SDK) keeps. A collection of its own, beside episodes and facts, on both backends.

>>> from trimem import Memory
>>> mem = Memory(embedder="hashing")
>>> _ = mem.items.put(("docs", "u1"), "a", {"text": "the deploy runs on port 8080", "stars": 4})
>>> _ = mem.items.put(("docs", "u1"), "b", {"text": "lunch is at noon", "stars": 2})
>>> [i.key for i, _ in mem.items.search(("docs",), query="which port?", filter={"stars": {"$gte": 3}})]
['a']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import numpy as np

from trimem._backend import Backend
from trimem._backend.items import ItemQuery, check_filter
from trimem._backend.ops import ItemKey, Op, OpItemDelete, OpItemPut, OpItemRefresh
from trimem._checks import check_int, check_plain, check_str
from trimem.errors import ArgumentTypeError, InvalidArgumentError
from trimem.layers._shared import Embedding
from trimem.records import Item
from trimem.timeutil import TimeLike, now_micros

__all__ = ["ItemPut", "ItemStore", "text_at"]

MAX_LABELS: Final = 32
MAX_LABEL_CHARS: Final = 256
MAX_KEY_CHARS: Final = 1024
RESTORE_BATCH: Final = 10_000
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]")


@dataclass(frozen=True)
class ItemPut:
    """One write: `value` None deletes; `index` None reads the store's default fields, False
    indexes nothing, a list names the fields (paths like ``"text"``, ``"a.b"``, ``"a[*].b"``,
    ``"$"`` for the whole value); `ttl` in minutes (None: never expires); `vector` given skips
    the embedder (the caller embedded the item's text itself)."""

    namespace: tuple[str, ...]
    key: str
    value: Mapping[str, Any] | None
    index: Sequence[str] | bool | None = None
    ttl: float | None = None
    vector: np.ndarray | None = None


def check_namespace(namespace: object, *, empty: bool = False) -> tuple[str, ...]:
    """A namespace: a tuple of non-empty labels (the empty tuple only as a prefix)."""
    if not isinstance(namespace, tuple) or not all(isinstance(x, str) for x in namespace):
        raise ArgumentTypeError(f"a namespace must be a tuple of strings, got {namespace!r}")
    if not namespace and not empty:
        raise InvalidArgumentError("a namespace needs at least one label")
    if len(namespace) > MAX_LABELS:
        raise InvalidArgumentError(f"a namespace has at most {MAX_LABELS} labels, got {len(namespace)}")
    for label in namespace:
        check_str("namespace label", label, limit=MAX_LABEL_CHARS, empty=False)
        if "\x00" in label or "\x1f" in label:  # NUL: no PostgreSQL text holds it; \x1f: the labels' separator
            raise InvalidArgumentError(f"a namespace label cannot hold \\x00 or \\x1f, got {label!r}")
    return namespace


def _check_key(key: object) -> str:
    if "\x00" in check_str("key", key, limit=MAX_KEY_CHARS):
        raise InvalidArgumentError(f"a key cannot hold \\x00, got {key!r}")
    return key  # type: ignore[return-value]


def _holds_nul(value: object) -> bool:
    """Whether a plain value has NUL in a string or a key (JSON on PostgreSQL cannot keep it)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        return any("\x00" in k or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def text_at(value: Mapping[str, Any], path: str) -> list[str]:
    """The texts at one field path of a value: strings as they are, other values as JSON."""
    if path == "$":
        return [json.dumps(value, ensure_ascii=False, sort_keys=True)]
    nodes: list[Any] = [value]
    for name, index in _PATH_PART.findall(path):
        step: list[Any] = []
        for node in nodes:
            if name:
                if isinstance(node, Mapping) and name in node:
                    step.append(node[name])
            elif isinstance(node, list):
                if index == "*":
                    step.extend(node)
                elif -len(node) <= int(index) < len(node):
                    step.append(node[int(index)])
        nodes = step
    return [n if isinstance(n, str) else json.dumps(n, ensure_ascii=False) for n in nodes if n is not None]


class ItemStore:
    """The items of a memory (``Memory.items``); `fields` are what an item is indexed by unless
    its put says otherwise."""

    def __init__(self, backend: Backend, embedding: Embedding, *, fields: Sequence[str] = ("$",)) -> None:
        self._backend = backend
        self._embed = embedding
        self.fields = tuple(check_str("field", f, empty=False) for f in fields)

    def using(self, *, embedder: Any = None, fields: Sequence[str] | None = None) -> ItemStore:
        """The same items, embedded by another model of the memory's width (a LangGraph
        ``IndexConfig``'s) and/or indexed by other default fields."""
        embedding = self._embed if embedder is None else Embedding(embedder)
        if embedding.dim not in (0, self._backend.dim):
            raise InvalidArgumentError(f"the items' embedder has dim {embedding.dim}, the memory {self._backend.dim}")
        return ItemStore(self._backend, embedding, fields=self.fields if fields is None else fields)

    # -- writes -----------------------------------------------------------------------------------

    def put(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any], *,
        index: Sequence[str] | bool | None = None, ttl: float | None = None, now: TimeLike | None = None,
    ) -> Item:  # fmt: skip
        """Stores `value` under `key` (replacing what was there, whose creation time it keeps)."""
        self.apply([ItemPut(namespace, key, value, index=index, ttl=ttl)], now=now)
        item = self._backend.items.get(namespace, key, now_micros(now))
        assert item is not None
        return item

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        self.apply([ItemPut(namespace, key, None)])

    def apply(self, puts: Sequence[ItemPut], *, now: TimeLike | None = None) -> None:
        """Writes and deletes in one atomic batch (the last write of a key wins)."""
        at = now_micros(now)
        last: dict[ItemKey, ItemPut] = {}
        for p in puts:
            last[(check_namespace(p.namespace), _check_key(p.key))] = p
        writes = [p for p in last.values() if p.value is not None]
        gone = [k for k, p in last.items() if p.value is None]
        ops: list[Op] = []
        if writes:
            ops.append(self._put_op(writes, at))
        if gone:
            ops.append(OpItemDelete(keys=gone))
        if ops:
            self._backend.write(ops)

    def _put_op(self, writes: list[ItemPut], at: int) -> OpItemPut:
        texts: list[str] = []
        for p in writes:
            if not isinstance(p.value, Mapping):
                raise ArgumentTypeError(f"an item's value must be a dict, got {type(p.value).__name__}")
            check_plain("value", dict(p.value))
            if _holds_nul(p.value):
                raise InvalidArgumentError("an item's value cannot hold \\x00 in a string (JSON on PostgreSQL cannot)")
            if p.ttl is not None and (isinstance(p.ttl, bool) or not isinstance(p.ttl, (int, float)) or not p.ttl > 0):
                raise InvalidArgumentError(f"ttl must be a positive number of minutes, got {p.ttl!r}")
            fields = self.fields if p.index is None or p.index is True else () if p.index is False else p.index
            texts.append("\n".join(t for f in fields for t in text_at(p.value, f)))
        vectors: list[bytes | None] = [None] * len(writes)
        need = [i for i, p in enumerate(writes) if texts[i] and p.vector is None]
        embedded = self._embed([texts[i] for i in need]) if need else None
        for j, i in enumerate(need):
            vectors[i] = None if embedded is None else embedded[j].tobytes()
        for i, p in enumerate(writes):
            if p.vector is not None and texts[i]:
                v = np.ascontiguousarray(p.vector, dtype=np.float32)
                if v.shape != (self._backend.dim,):
                    raise InvalidArgumentError(f"an item's vector must have {self._backend.dim} values, got {v.shape}")
                vectors[i] = v.tobytes()
        first = self._backend.reserve_ids(len(writes))
        items = [
            Item(
                id=first + i, namespace=p.namespace, key=p.key, value=dict(p.value or {}), created_at=at, updated_at=at,
                expires_at=None if p.ttl is None else at + int(p.ttl * 60e6), ttl=p.ttl,
            )
            for i, p in enumerate(writes)
        ]  # fmt: skip
        return OpItemPut(items=items, texts=texts, vectors=vectors)

    def restore(self, stored: Sequence[tuple[Item, str, bytes | None]], *, same_space: bool) -> int:
        """Adds items as an export holds them (new ids; times, expiry and searched text kept),
        with their vectors when they come from this memory's embedder (`same_space`), else
        their texts embedded again. Everything is checked before anything is written."""
        for item, text, _ in stored:
            check_namespace(item.namespace)
            _check_key(item.key)
            check_plain("value", item.value)
            check_str("text", text)
        for lo in range(0, len(stored), RESTORE_BATCH):
            part = stored[lo : lo + RESTORE_BATCH]
            texts = [text for _, text, _ in part]
            vectors = [v if same_space else None for _, _, v in part]
            need = [i for i, v in enumerate(vectors) if v is None and texts[i]]
            embedded = self._embed([texts[i] for i in need]) if need else None
            for j, i in enumerate(need):
                vectors[i] = None if embedded is None else embedded[j].tobytes()
            first = self._backend.reserve_ids(len(part))
            items = [msgspec.structs.replace(item, id=first + n) for n, (item, _, _) in enumerate(part)]
            self._backend.write([OpItemPut(items=items, texts=texts, vectors=vectors)])
        return len(stored)

    def refresh(self, items: Sequence[Item], *, now: TimeLike | None = None) -> None:
        """Restarts the time to live of these items (those that have one) from `now`."""
        at = now_micros(now)
        due = [(i.namespace, i.key, at + int(i.ttl * 60e6)) for i in items if i.ttl is not None]
        if due:
            self._backend.write([OpItemRefresh(keys=[(n, k) for n, k, _ in due], expires_at=[e for _, _, e in due])])

    def sweep(self, *, now: TimeLike | None = None) -> int:
        """Deletes every expired item; returns how many."""
        at = now_micros(now)
        keys = self._backend.items.expired(at)
        if keys:
            self._backend.write([OpItemDelete(keys=keys, expired_at=at)])
        return len(keys)

    # -- reads ------------------------------------------------------------------------------------

    def get(self, namespace: tuple[str, ...], key: str, *, now: TimeLike | None = None) -> Item | None:
        return self._backend.items.get(check_namespace(namespace), _check_key(key), now_micros(now))

    def search(
        self, prefix: tuple[str, ...] = (), *, query: str | None = None, filter: Mapping[str, Any] | None = None,
        limit: int = 10, offset: int = 0, vector: np.ndarray | None = None, now: TimeLike | None = None,
    ) -> list[tuple[Item, float | None]]:  # fmt: skip
        """Items under `prefix` passing `filter`: best first for a `query` (keywords and, with an
        embedder, meaning), else the most recently updated first; each with its score (None:
        unranked). `vector` is the query's, when the caller embedded it."""
        if query is not None:
            check_str("query", query)
        q_vec = vector
        if query and q_vec is None:
            q_vec = self._embed.query(query)
        return self._backend.items.search(
            ItemQuery(
                prefix=check_namespace(prefix, empty=True), filter=check_filter(filter), text=query or None,
                vector=None if q_vec is None else np.ascontiguousarray(q_vec, dtype=np.float32),
                limit=check_int("limit", limit, low=0), offset=check_int("offset", offset, low=0), now=now_micros(now),
            )
        )  # fmt: skip

    def list_namespaces(
        self, *, prefix: Sequence[str] | None = None, suffix: Sequence[str] | None = None,
        max_depth: int | None = None, limit: int = 100, offset: int = 0, now: TimeLike | None = None,
    ) -> list[tuple[str, ...]]:  # fmt: skip
        """Namespaces holding items, sorted; `prefix` / `suffix` may hold ``"*"`` for any label,
        `max_depth` cuts each to its first labels (duplicates merged)."""

        def fits(ns: tuple[str, ...], pattern: Sequence[str] | None, *, tail: bool) -> bool:
            if pattern is None:
                return True
            if len(ns) < len(pattern):
                return False
            part = ns[len(ns) - len(pattern) :] if tail else ns[: len(pattern)]
            return all(p == "*" or p == x for p, x in zip(pattern, part, strict=True))

        found = [
            ns for ns in self._backend.items.namespaces(now_micros(now))
            if fits(ns, prefix, tail=False) and fits(ns, suffix, tail=True)
        ]  # fmt: skip
        if max_depth is not None:
            found = list({ns[: check_int("max_depth", max_depth, low=1)] for ns in found})
        found.sort()
        start = check_int("offset", offset, low=0)
        return found[start : start + check_int("limit", limit, low=0)]
