"""``AsyncMemory``: :class:`trimem.Memory` for agent servers, every blocking verb a coroutine that
runs the sync call on a thread pool (the engine releases the GIL while it searches, embeds and
writes), so the event loop is never blocked by a memory call.

>>> import asyncio
>>> from trimem import AsyncMemory
>>> async def main() -> list[str]:
...     async with AsyncMemory(embedder="hashing") as mem:
...         await mem.retain("The deploy runs on port 8080", user_id="u1")
...         bundle = await mem.recall("which port?", user_id="u1")
...         return [r.episode.text for r in bundle.episodes]
>>> asyncio.run(main())
['The deploy runs on port 8080']

Cancelling a call never leaves half a batch written: a write runs to its end on its thread once
started (every batch is one atomic write), and one cancelled before it starts writes nothing.
Layers are there too: ``await mem.facts.get(...)``, ``await mem.knowledge.search(...)``,
``await mem.items.put(...)``.

The loop still needs the GIL to wake, and a call's Python parts (reading the request, building
a batch's records) hold it: while a worker runs Python, CPython makes the loop wait up to its
switch interval (5 ms by default) for each such worker. A server that needs the loop's waits
shorter sets a smaller one, ``sys.setswitchinterval(0.0005)``: a process-wide choice, so trimem
leaves it to the application (``benches/async_perf.py --switch-interval`` measures both).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

from trimem.layers.items import ItemStore
from trimem.layers.semantic import Facts, KnowledgeBase
from trimem.memory import Memory

__all__ = ["AsyncMemory"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


class _Async(Generic[T]):
    """An object's blocking methods as coroutines on a shared pool."""

    def __init__(self, sync: T, pool: ThreadPoolExecutor) -> None:
        self.sync = sync
        self._pool = pool

    async def _run(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        loop = asyncio.get_running_loop()
        # the caller's context goes along (as asyncio.to_thread does): its current span parents ours
        call = functools.partial(contextvars.copy_context().run, fn, self.sync, *args, **kwargs)
        return await loop.run_in_executor(self._pool, call)


def default_workers(memory: Memory) -> int:
    """The pool's default size. In process a call is CPU work (embedding, search, Python between
    them): threads past the cores only queue for the cores and the GIL, and the event loop, which
    needs both to wake, waits behind them. A server's calls mostly wait on the network."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(32, cores + 4 if memory.on_server else max(1, cores))


def _coro(method: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """The coroutine form of a sync method (same parameters, same docstring)."""

    @functools.wraps(method)
    async def run(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        target: _Async[Any] = self
        return await target._run(method, *args, **kwargs)

    return run


class AsyncFacts(_Async[Facts]):
    set = _coro(Facts.set)
    delete = _coro(Facts.delete)
    alias = _coro(Facts.alias)
    pin = _coro(Facts.pin)
    get = _coro(Facts.get)
    history = _coro(Facts.history)
    as_of = _coro(Facts.as_of)
    list = _coro(Facts.list)
    pinned = _coro(Facts.pinned)
    aliases = _coro(Facts.aliases)
    search = _coro(Facts.search)


class AsyncKnowledge(_Async[KnowledgeBase]):
    add = _coro(KnowledgeBase.add)
    add_many = _coro(KnowledgeBase.add_many)
    get = _coro(KnowledgeBase.get)
    list = _coro(KnowledgeBase.list)
    delete = _coro(KnowledgeBase.delete)
    search = _coro(KnowledgeBase.search)


class AsyncItems(_Async[ItemStore]):
    put = _coro(ItemStore.put)
    delete = _coro(ItemStore.delete)
    apply = _coro(ItemStore.apply)
    refresh = _coro(ItemStore.refresh)
    sweep = _coro(ItemStore.sweep)
    get = _coro(ItemStore.get)
    search = _coro(ItemStore.search)
    list_namespaces = _coro(ItemStore.list_namespaces)


class AsyncMemory(_Async[Memory]):
    """A :class:`trimem.Memory` whose verbs are coroutines. Takes `Memory`'s arguments (or
    `memory=`, one you have); `max_workers`: the pool's threads (default: one per core for a store
    in process or in a folder, cores + 4 on a server, at most 32). ``sync`` is the memory itself,
    for what needs no waiting."""

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, memory: Memory | None = None,
        max_workers: int | None = None, **options: Any,
    ) -> None:  # fmt: skip
        memory = memory if memory is not None else Memory(path, **options)
        workers = max_workers if max_workers is not None else default_workers(memory)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="trimem-async")
        super().__init__(memory, pool)
        self.facts = AsyncFacts(self.sync.facts, pool)
        self.knowledge = AsyncKnowledge(self.sync.knowledge, pool)
        self.items = AsyncItems(self.sync.items, pool)

    retain = _coro(Memory.retain)
    retain_many = _coro(Memory.retain_many)
    mentions = _coro(Memory.mentions)
    add = _coro(Memory.add)
    get = _coro(Memory.get)
    episodes = _coro(Memory.episodes)
    search = _coro(Memory.search)
    forget = _coro(Memory.forget)
    save_working = _coro(Memory.save_working)
    add_turn = _coro(Memory.add_turn)
    consolidate = _coro(Memory.consolidate)
    end_session = _coro(Memory.end_session)
    forget_expired = _coro(Memory.forget_expired)
    recall = _coro(Memory.recall)
    reflect = _coro(Memory.reflect)
    pending_reflection = _coro(Memory.pending_reflection)
    stats = _coro(Memory.stats)
    share = _coro(Memory.share)
    export = _coro(Memory.export)
    import_from = _coro(Memory.import_from)
    checkpoint = _coro(Memory.checkpoint)
    purge = _coro(Memory.purge)
    recovery = _coro(Memory.recovery)
    flush_touches = _coro(Memory.flush_touches)

    async def execute(self, name: str, **args: Any) -> Any:
        """Runs a memory tool call (see :meth:`trimem.Memory.execute`)."""
        return await self._run(Memory.execute, name, **args)

    def working(self, session_id: str) -> Any:
        """The session's working memory (in process: no waiting)."""
        return self.sync.working(session_id)

    def tools(self) -> list[dict[str, Any]]:
        return self.sync.tools()

    @property
    def embedder(self) -> Any:
        return self.sync.embedder

    @property
    def dim(self) -> int:
        return self.sync.dim

    async def close(self) -> None:
        """Closes the memory (after the calls under way) and the pool."""
        try:
            await self._run(Memory.close)
        finally:
            self._pool.shutdown(wait=False)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()
