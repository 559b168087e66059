"""AsyncMemory: every blocking verb of Memory (and of its layers) as a coroutine with the same
signature, the same results as the sync calls, a loop that keeps running while memory works,
and cancellation that never leaves half a batch."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from trimem import AsyncMemory, Memory, aio
from trimem.aio import AsyncFacts, AsyncItems, AsyncKnowledge
from trimem.errors import InvalidArgumentError
from trimem.layers.items import ItemStore
from trimem.layers.semantic import Facts, KnowledgeBase

# Calls that do not wait on the store (or hand back a live object), kept sync on AsyncMemory.
NOT_COROUTINES = {"working", "tools", "start_reflector", "stop_reflector", "close", "embedder", "dim", "path",
                  "rewriter", "extractor", "perceptual", "graph"}  # fmt: skip
LAYER_SYNC = {"embed_fact", "as_of_many", "same_subject_cosine", "reads", "vectors", "using", "restore"}


def _public(cls: type) -> set[str]:
    return {n for n in vars(cls) if not n.startswith("_")}


@pytest.mark.parametrize(
    ("sync", "coros", "skip"),
    [
        (Memory, AsyncMemory, NOT_COROUTINES),
        (Facts, AsyncFacts, LAYER_SYNC),
        (KnowledgeBase, AsyncKnowledge, LAYER_SYNC),
        (ItemStore, AsyncItems, LAYER_SYNC | {"fields"}),
    ],
)
def test_every_blocking_verb_is_a_coroutine_with_the_same_signature(sync: type, coros: type, skip: set[str]) -> None:
    for name in sorted(_public(sync) - skip):
        if isinstance(inspect.getattr_static(sync, name), property):
            continue
        method = getattr(coros, name, None)
        assert method is not None and inspect.iscoroutinefunction(method), f"{coros.__name__}.{name}"
        assert inspect.signature(method) == inspect.signature(getattr(sync, name)), name


def test_async_calls_give_what_sync_calls_give() -> None:
    async def run() -> None:
        async with AsyncMemory(embedder="hashing") as mem:
            ep = await mem.retain("My editor is Helix", user_id="u1")
            await mem.retain_many([{"text": f"note {i} about kafka", "user_id": "u1"} for i in range(50)])
            assert [c.key for c in await mem.reflect(user_id="u1")] == ["editor"]
            fact = await mem.facts.get("editor", user_id="u1")
            assert fact is not None and fact.value == "Helix"
            bundle = await mem.recall("kafka notes", user_id="u1", k=5)
            assert [r.episode.id for r in bundle.episodes] == [
                r.episode.id for r in mem.sync.recall("kafka notes", user_id="u1", k=5).episodes
            ]
            await mem.items.put(("n",), "k", {"text": "an item"})
            assert (await mem.items.get(("n",), "k")) is not None
            assert (await mem.get(ep.id)) == mem.sync.get(ep.id)
            assert (await mem.execute("get_fact", key="editor", user_id="u1"))["value"] == "Helix"
            with pytest.raises(InvalidArgumentError):
                await mem.retain("", user_id="")

    asyncio.run(run())


def test_the_loop_keeps_running_while_memory_works() -> None:
    """A ticker keeps ticking through a 10,000-episode retain_many and eight recalls (a blocking
    call would hold every tick until it returned)."""

    async def run() -> tuple[int, int]:
        mem = AsyncMemory(embedder="hashing")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        items = [{"text": f"event {i} on host {i % 97} port {8000 + i % 50}", "user_id": "u1"} for i in range(10_000)]
        before = ticks
        await asyncio.gather(mem.retain_many(items), *(mem.recall(f"host {i} port", user_id="u1") for i in range(8)))
        during = ticks - before
        task.cancel()
        await mem.close()
        return during, len(mem.sync.episodes(user_id="u1"))

    during, stored = asyncio.run(run())
    assert stored == 10_000 and during >= 5


def test_a_cancelled_batch_is_written_whole_or_not_at_all() -> None:
    async def run() -> list[int]:
        counts = []
        for delay in (0.0, 0.002, 0.02):
            mem = AsyncMemory(embedder="hashing", max_workers=1)
            call = asyncio.ensure_future(
                mem.retain_many([{"text": f"alpha{i} beta{i} gamma{i}", "user_id": "u"} for i in range(5_000)])
            )
            await asyncio.sleep(delay)
            call.cancel()
            # on the one worker this read runs after the batch, if the batch started at all
            counts.append(len(await mem.episodes(user_id="u")))
            await mem.close()
        return counts

    counts = asyncio.run(run())
    assert all(n in (0, 5_000) for n in counts), counts


class _OnServer:
    on_server = True


def test_the_pool_has_a_thread_per_core_in_process_and_more_on_a_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """In process every call is CPU work: threads past the cores would only queue for the cores
    and the GIL (and the loop behind them); a server's calls wait on the network."""
    monkeypatch.setattr(aio.os, "sched_getaffinity", lambda _pid: {0, 1, 2}, raising=False)
    with Memory(embedder=None) as mem:
        assert mem.on_server is False and aio.default_workers(mem) == 3
    assert aio.default_workers(_OnServer()) == 7  # type: ignore[arg-type]
    monkeypatch.setattr(aio.os, "sched_getaffinity", lambda _pid: set(range(64)), raising=False)
    assert aio.default_workers(_OnServer()) == 32  # type: ignore[arg-type]

    async def run() -> tuple[int, int]:
        a, b = AsyncMemory(embedder=None), AsyncMemory(embedder=None, max_workers=5)
        sizes = a._pool._max_workers, b._pool._max_workers
        await a.close()
        await b.close()
        return sizes

    assert asyncio.run(run()) == (32, 5)
