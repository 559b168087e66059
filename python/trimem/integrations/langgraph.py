"""A LangGraph store on trimem: ``TrimemStore`` implements ``langgraph.store.base.BaseStore``
over a :class:`trimem.Memory`'s items (their own collection, on either backend), so a graph's
long-term memory gets trimem's hybrid search (keywords and meaning fused), its durable folder or
PostgreSQL, and filters applied inside the search (``limit`` items come back whenever that many
match). Needs ``pip install 'trimem[langgraph]'``.

>>> from trimem.integrations.langgraph import TrimemStore
>>> store = TrimemStore()  # in process; TrimemStore("./folder") or TrimemStore(memory=Memory(...))
>>> store.put(("users", "u1"), "prefs", {"text": "prefers dark mode and short answers"})
>>> [i.key for i in store.search(("users", "u1"), query="dark mode")]
['prefs']

Differences from LangGraph's own stores, on purpose: a query without an ``index`` still ranks by
keywords (trimem's BM25) instead of being ignored; an item is embedded once, from its indexed
fields' texts joined (not once per field); scores are the fused rank score, not a cosine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from trimem.errors import DependencyError, InvalidArgumentError
from trimem.layers.items import ItemPut, ItemStore
from trimem.memory import Memory
from trimem.records import Item as StoredItem

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
    )
    from langgraph.store.base.embed import ensure_embeddings
except ImportError as e:  # pragma: no cover - the extra is installed in CI
    raise DependencyError("the LangGraph store needs the langgraph extra: pip install 'trimem[langgraph]'") from e

__all__ = ["TrimemStore"]


def _time(micros: int) -> datetime:
    return datetime.fromtimestamp(micros / 1e6, UTC)


def _item(it: StoredItem) -> Item:
    return Item(value=it.value, key=it.key, namespace=it.namespace, created_at=_time(it.created_at),
                updated_at=_time(it.updated_at))  # fmt: skip


def _json(value: Any) -> Any:
    """A value as JSON keeps it, as LangGraph's PostgresStore stores one: datetimes and dates as
    RFC 3339 text, UUIDs and decimals as text, sets and tuples as lists, dataclasses as dicts."""
    if value is None:
        return None
    try:
        return msgspec.json.decode(msgspec.json.encode(value))
    except (TypeError, ValueError, msgspec.EncodeError) as e:
        raise InvalidArgumentError(f"an item's value must be JSON data: {e}") from None


def _search_item(it: StoredItem, score: float | None) -> SearchItem:
    return SearchItem(namespace=it.namespace, key=it.key, value=it.value, created_at=_time(it.created_at),
                      updated_at=_time(it.updated_at), score=score)  # fmt: skip


class TrimemStore(BaseStore):
    """A LangGraph ``BaseStore`` over a trimem memory's items.

    `path`: a folder or a ``postgresql://`` DSN for a memory of its own (None: in process), or
    `memory`: one you have. `index`: LangGraph's ``IndexConfig`` — ``dims``, ``embed`` (a LangChain
    ``Embeddings`` or a function of a list of texts), ``fields`` (default ``["$"]``, the whole
    value); without one, items are searched by keywords (and the memory's own embedder, if it
    has one). `ttl`: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``,
    ``sweep_interval_minutes``)."""

    supports_ttl = True

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        memory: Memory | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if memory is not None and path is not None:
            raise InvalidArgumentError("pass a path or a memory, not both")
        self.index_config = index
        self.ttl_config = ttl
        embed = (index or {}).get("embed")
        embedder = None
        if embed is not None:
            from trimem.embedders import LangChainEmbedder

            dims = index.get("dims") if index else None
            embedder = LangChainEmbedder(ensure_embeddings(embed), dim=dims, name="langgraph-index")
        self._owned = memory is None
        self.memory = memory if memory is not None else Memory(path, embedder=embedder)
        fields = (index or {}).get("fields") or ["$"]
        self.items: ItemStore = self.memory.items.using(embedder=embedder if memory is not None else None,
                                                        fields=fields)  # fmt: skip
        self._sweeper: threading.Thread | None = None
        self._stop = threading.Event()

    # -- the one verb -----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs reads first, against the store as it was, then the writes in one atomic batch
        (the last write of a key wins) — as LangGraph's stores do."""
        ops = list(ops)
        results: list[Result] = [None] * len(ops)
        puts: list[PutOp] = []
        refresh: list[StoredItem] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                got = self.items.get(tuple(op.namespace), op.key)
                results[i] = None if got is None else _item(got)
                if got is not None and op.refresh_ttl:
                    refresh.append(got)
            elif isinstance(op, SearchOp):
                results[i] = self._search(op, refresh)
            elif isinstance(op, ListNamespacesOp):
                results[i] = self._list(op)
            elif isinstance(op, PutOp):
                puts.append(op)
            else:
                raise InvalidArgumentError(f"unknown operation {type(op).__name__}")
        if refresh:
            self.items.refresh(refresh)
        if puts:
            self.items.apply([self._put(op) for op in puts])
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` on a worker thread (the engine releases the GIL; the loop never waits)."""
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, list(ops))

    # -- ops --------------------------------------------------------------------------------------

    def _put(self, op: PutOp) -> ItemPut:
        index = op.index
        if self.index_config is None and isinstance(index, list):
            index = None  # LangGraph ignores fields when the store has no index
        return ItemPut(tuple(op.namespace), op.key, _json(op.value), index=index,
                       ttl=op.ttl if op.value is not None else None)  # fmt: skip

    def _search(self, op: SearchOp, refresh: list[StoredItem]) -> list[SearchItem]:
        found = self.items.search(tuple(op.namespace_prefix), query=op.query, filter=op.filter, limit=op.limit,
                                  offset=op.offset)  # fmt: skip
        if op.refresh_ttl:
            refresh.extend(it for it, _ in found)
        return [_search_item(it, score) for it, score in found]

    def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        prefix = next((tuple(c.path) for c in conditions if c.match_type == "prefix"), None)
        suffix = next((tuple(c.path) for c in conditions if c.match_type == "suffix"), None)
        return self.items.list_namespaces(prefix=prefix, suffix=suffix, max_depth=op.max_depth, limit=op.limit,
                                          offset=op.offset)  # fmt: skip

    # -- time to live -----------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Deletes expired items now; returns how many."""
        return self.items.sweep()

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> concurrent.futures.Future[None]:
        """Sweeps expired items every `sweep_interval_minutes` (the ``TTLConfig``'s, else 5) on a
        daemon thread until :meth:`stop_ttl_sweeper`; the future completes when it stops."""
        minutes = sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            done.set_result(None)
            return done
        self._stop.clear()

        def run() -> None:
            try:
                while not self._stop.wait(minutes * 60):
                    self.sweep_ttl()
            finally:
                done.set_result(None)

        self._sweeper = threading.Thread(target=run, name="trimem-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper; whether it stopped within `timeout` seconds."""
        self._stop.set()
        if self._sweeper is None:
            return True
        self._sweeper.join(timeout)
        return not self._sweeper.is_alive()

    def close(self) -> None:
        """Stops the sweeper and closes the memory this store opened (not one it was given)."""
        self.stop_ttl_sweeper()
        if self._owned:
            self.memory.close()

    def __enter__(self) -> TrimemStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
