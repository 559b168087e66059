"""The item collection of the embedded backend: every item in one engine index (one graph, so a
search under a namespace prefix spans its namespaces), its record's time the item's expiry (a
search keeps what expires after now, inside both legs), and a map of the live items by
namespace and key for the reads and the filters.

The value filter is read here, in Python, into the set of ids the engine may return: the engine
applies that set inside both legs, so a filtered search returns as many items as pass it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import msgspec
import numpy as np

from trimem._backend.items import NEVER, ItemQuery, item_namespace, matches
from trimem._backend.ops import ItemKey, OpItemDelete, OpItemPut, OpItemRefresh
from trimem._core import HybridIndex
from trimem.config import ITEM_SEARCH_EF
from trimem.records import Item

__all__ = ["ItemTable"]

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(Item).decode


class ItemTable:
    """Live items, by namespace and key and by id, over their engine index."""

    def __init__(self, dim: int, *, stem: bool, stopwords: bool) -> None:
        self.index = HybridIndex(dim, stem=stem, stopwords=stopwords)
        self._by_ns: dict[tuple[str, ...], dict[str, Item]] = {}
        self._by_id: dict[int, Item] = {}

    def load(self, index: HybridIndex | None) -> None:
        """Restores the items from a snapshot's index (None: the snapshot predates items)."""
        if index is None:
            return
        self.index = index
        self._by_ns, self._by_id = {}, {}
        for rec in index.get_many(index.ids()):
            if rec is not None:
                self._keep(_decode(rec.payload))

    def _keep(self, item: Item) -> None:
        self._by_ns.setdefault(item.namespace, {})[item.key] = item
        self._by_id[item.id] = item

    def _drop(self, item: Item) -> None:
        keys = self._by_ns.get(item.namespace)
        if keys is not None and keys.get(item.key) is item:
            del keys[item.key]
            if not keys:
                del self._by_ns[item.namespace]
        self._by_id.pop(item.id, None)

    # -- ops --------------------------------------------------------------------------------------

    def apply_put(self, op: OpItemPut) -> None:
        rows: list[tuple[Item, str, np.ndarray | None]] = []
        for item, text, vector in zip(op.items, op.texts, op.vectors, strict=True):
            old = self._by_ns.get(item.namespace, {}).get(item.key)
            if old is not None:
                item = msgspec.structs.replace(item, id=old.id, created_at=old.created_at)
                self._drop(old)
            rows.append((item, text, None if vector is None else np.frombuffer(vector, dtype=np.float32)))
        self._add(rows)

    def _add(self, rows: list[tuple[Item, str, np.ndarray | None]]) -> None:
        """Adds (or replaces) items in at most two engine calls: those with a vector, the rest."""
        for part in ([r for r in rows if r[2] is not None], [r for r in rows if r[2] is None]):
            if not part:
                continue
            items = [item for item, _, _ in part]
            self.index.add(
                ids=np.array([i.id for i in items], dtype=np.uint64), texts=[text for _, text, _ in part],
                timestamps=np.array([NEVER if i.expires_at is None else i.expires_at for i in items], dtype=np.int64),
                namespaces=[item_namespace(i.namespace) for i in items],
                vectors=np.stack([v for _, _, v in part]) if part[0][2] is not None else None,  # type: ignore[misc]
                payloads=[_encode(i) for i in items], upsert=True,
            )  # fmt: skip
            for item in items:
                self._keep(item)

    def _find(self, keys: list[ItemKey]) -> list[Item]:
        found = (self._by_ns.get(ns, {}).get(key) for ns, key in keys)
        return [i for i in found if i is not None]

    def apply_delete(self, op: OpItemDelete) -> None:
        gone = [i for i in self._find(op.keys) if op.expired_at is None or _expired(i, op.expired_at)]
        for item in gone:
            self._drop(item)
        if gone:
            self.index.delete(np.array([i.id for i in gone], dtype=np.uint64), missing_ok=True)

    def apply_refresh(self, op: OpItemRefresh) -> None:
        rows: list[tuple[Item, str, np.ndarray | None]] = []
        for (ns, key), at in zip(op.keys, op.expires_at, strict=True):
            item = self._by_ns.get(ns, {}).get(key)
            rec = None if item is None else self.index.get(item.id)
            if item is None or rec is None:
                continue
            self._drop(item)
            rows.append((msgspec.structs.replace(item, expires_at=at), rec.text, rec.vector))
        self._add(rows)

    # -- reads ------------------------------------------------------------------------------------

    def get(self, namespace: tuple[str, ...], key: str, now: int) -> Item | None:
        item = self._by_ns.get(namespace, {}).get(key)
        return None if item is None or _expired(item, now) else item

    def namespaces(self, now: int) -> list[tuple[str, ...]]:
        return [ns for ns, keys in self._by_ns.items() if any(not _expired(i, now) for i in keys.values())]

    def expired(self, now: int) -> list[ItemKey]:
        return [(i.namespace, i.key) for i in self._by_id.values() if _expired(i, now)]

    def stored(self) -> Iterator[tuple[Item, str, bytes | None]]:
        items = list(self._by_id.values())
        records = self.index.get_many(np.array([i.id for i in items], dtype=np.uint64)) if items else []
        for item, rec in zip(items, records, strict=True):
            if rec is not None:
                yield item, rec.text, None if rec.vector is None else np.asarray(rec.vector, dtype=np.float32).tobytes()

    def search(self, q: ItemQuery) -> list[tuple[Item, float | None]]:
        """The items `q` asks for, best first, with their fused score (None: unranked)."""
        n = len(q.prefix)
        spaces = [ns for ns in self._by_ns if ns[:n] == q.prefix]
        want = q.offset + q.limit
        if want <= 0 or not spaces:
            return []

        passing: list[Item] | None = None

        def live() -> list[Item]:
            """The live items under the prefix that pass the filter (read once, on first need)."""
            nonlocal passing
            if passing is None:
                found = (i for ns in spaces for i in self._by_ns[ns].values() if not _expired(i, q.now))
                passing = [i for i in found if q.filter is None or matches(i.value, q.filter)]
            return passing

        if q.text is None and q.vector is None:
            return [(i, None) for i in _newest_first(live())[q.offset : want]]
        # the engine keeps what expires after now; a filter or a part of the namespaces is a
        # list of the ids it may return
        restrict: dict[str, Any] = {"time_range": (q.now + 1, NEVER + 1)}
        if q.filter is None and len(spaces) == 1:
            restrict["namespace"] = item_namespace(spaces[0])
        elif q.filter is not None or len(spaces) < len(self._by_ns):
            allowed = live()
            if not allowed:
                return []
            restrict["ids"] = np.fromiter((i.id for i in allowed), dtype=np.uint64, count=len(allowed))
        mode: Literal["hybrid", "bm25", "vector"] = (
            "hybrid" if q.vector is not None and q.text else "vector" if q.vector is not None else "bm25"
        )
        hits = self.index.search(
            q.text or None, q.vector, k=want, mode=mode, ef=max(ITEM_SEARCH_EF, want), decay_weight=0.0,
            importance_weight=0.0, **restrict,
        )  # fmt: skip
        ranked: list[tuple[Item, float | None]] = [
            (self._by_id[int(i)], float(s)) for i, s in zip(hits.ids, hits.scores, strict=True)
        ]
        if len(ranked) < want:
            # what neither leg ranks (no vector, no shared word) follows, newest first, as a
            # store without an index would list it
            seen = {i.id for i, _ in ranked}
            rest = _newest_first([i for i in live() if i.id not in seen])
            ranked += [(i, None) for i in rest[: want - len(ranked)]]
        return ranked[q.offset : want]


def _newest_first(items: list[Item]) -> list[Item]:
    return sorted(items, key=lambda i: (-i.updated_at, i.namespace, i.key))


def _expired(item: Item, now: int) -> bool:
    return item.expires_at is not None and item.expires_at <= now
