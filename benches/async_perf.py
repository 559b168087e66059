"""AsyncMemory, same run: eight recalls at once against eight in turn, and the longest stall of
the event loop while memory works:

    python benches/async_perf.py [--n 2000] [--rounds 15] [--switch-interval SECONDS]

* throughput: a memory holding ``--n`` episodes of one user; each round recalls 8 requests
  one after another (awaiting each) and then all 8 at once (``asyncio.gather``), order
  alternating between rounds; the figure is the median over rounds of sequential time /
  concurrent time. Twice: with the embedder limited to one thread per call (MiniLM,
  ``threads=1``) and with the default embedder at its default threads.
* loop stall: a task sleeping 1 ms in a loop records how late each wake-up is: with nothing
  else running (the machine's own noise), while ``--rounds`` rounds of 8 recalls at once run, and
  while ``retain_many`` of 10,000 episodes and 8 recalls run together; the longest lateness.
  Beside them, the floor CPython sets for any library whose worker threads run Python: the same
  lateness while one, then two, threads run a plain Python loop (no trimem in them), and the floor
  the cores set: two, then three, threads hashing with the GIL released (the loop then waits for a
  core, not for the GIL).
  ``--switch-interval`` sets CPython's (``sys.setswitchinterval``; an application's choice, 5 ms
  by default) for the whole run.
"""

import argparse
import asyncio
import hashlib
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable, Callable

from trimem import AsyncMemory
from trimem.bench.datasets import query_texts, texts
from trimem.embedders import MiniLMEmbedder

warnings.simplefilter("ignore")
ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=2_000)
ap.add_argument("--rounds", type=int, default=15)
ap.add_argument("--switch-interval", type=float, help="sys.setswitchinterval for the run (default: CPython's)")
args = ap.parse_args()
if args.switch_interval is not None:
    sys.setswitchinterval(args.switch_interval)
print(f"switch interval: {sys.getswitchinterval() * 1e3:g} ms\n")
corpus, questions = texts(args.n + 10_000), query_texts(8 * args.rounds)


async def throughput(embedder: object, label: str) -> None:
    mem = AsyncMemory(embedder=embedder)
    await mem.retain_many([{"text": t, "user_id": "u1"} for t in corpus[: args.n]])
    await mem.recall("warm up", user_id="u1")
    ratios = []
    for r in range(args.rounds):
        batch = questions[8 * r : 8 * r + 8]

        async def sequential(batch: list[str] = batch) -> float:
            t0 = time.perf_counter()
            for q in batch:
                await mem.recall(q, user_id="u1")
            return time.perf_counter() - t0

        async def concurrent(batch: list[str] = batch) -> float:
            t0 = time.perf_counter()
            await asyncio.gather(*(mem.recall(q, user_id="u1") for q in batch))
            return time.perf_counter() - t0

        if r % 2:
            c, s = await concurrent(), await sequential()
        else:
            s, c = await sequential(), await concurrent()
        ratios.append(s / c)
    print(f"| {label} | {statistics.median(ratios):.2f}× | {min(ratios):.2f}–{max(ratios):.2f} |")
    await mem.close()


async def watched(label: str, work: Callable[[], Awaitable[object]]) -> None:
    """Runs `work` while a task sleeping 1 ms at a time records how late each wake-up is."""
    late: list[float] = []
    done = False

    async def ticker() -> None:
        while not done:
            t0 = time.perf_counter()
            await asyncio.sleep(0.001)
            late.append(time.perf_counter() - t0 - 0.001)

    task = asyncio.create_task(ticker())
    t0 = time.perf_counter()
    await work()
    busy = time.perf_counter() - t0
    done = True
    await task
    late.sort()
    print(f"| {label} | {busy:.1f} s | {len(late)} | {late[-1] * 1e3:.2f} | {late[int(0.99 * (len(late) - 1))] * 1e3:.2f} "
          f"| {statistics.median(late) * 1e3:.2f} |")  # fmt: skip


def threads_repeating(n: int, seconds: float, step: Callable[[], object]) -> Callable[[], Awaitable[object]]:
    """Work for :func:`watched`: `n` threads calling `step` over and over for `seconds`."""

    def spin() -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            step()

    return lambda: asyncio.gather(*(asyncio.to_thread(spin) for _ in range(n)))


def python_loop() -> None:  # holds the GIL throughout
    x = 0
    for i in range(1_000):
        x += i


_BUFFER = bytes(8 << 20)


def hashing() -> None:  # the GIL released while it hashes
    hashlib.sha256(_BUFFER).digest()


async def stall() -> None:
    mem = AsyncMemory(embedder=MiniLMEmbedder(threads=1))
    await mem.retain_many([{"text": t, "user_id": "u1"} for t in corpus[: args.n]])
    await asyncio.gather(*(mem.recall(q, user_id="u1") for q in questions[:8]))  # every path warm
    print(
        "\n| loop stall while … ran (MiniLM, 1 thread a call; default pool) | busy | wake-ups | longest ms "
        "| p99 ms | median ms |\n|---|---:|---:|---:|---:|---:|"
    )

    async def rounds() -> None:
        for r in range(args.rounds):
            await asyncio.gather(*(mem.recall(q, user_id="u1") for q in questions[8 * r : 8 * r + 8]))

    items = [{"text": t, "user_id": "u2"} for t in corpus[args.n : args.n + 10_000]]
    await watched("nothing (the machine's own noise)", lambda: asyncio.sleep(1.0))
    await watched("control: 1 thread running a Python loop (no trimem)", threads_repeating(1, 2.0, python_loop))
    await watched("control: 2 threads running a Python loop (no trimem)", threads_repeating(2, 2.0, python_loop))
    await watched("control: 2 threads hashing, GIL released (no trimem)", threads_repeating(2, 2.0, hashing))
    await watched("control: 3 threads hashing, GIL released (no trimem)", threads_repeating(3, 2.0, hashing))
    await watched(f"8 recalls at once, {args.rounds} rounds", rounds)
    await watched("retain_many(10,000) + 8 recalls",
                  lambda: asyncio.gather(mem.retain_many(items), *(mem.recall(q, user_id="u1") for q in questions[:8])))  # fmt: skip
    await mem.close()


async def main() -> None:
    print("| embedder | 8 at once / 8 in turn (throughput, median) | range |\n|---|---:|---|")
    await throughput(MiniLMEmbedder(threads=1), "MiniLM, 1 thread a call")
    await throughput("auto", "default (bilingual, default threads)")
    await stall()


asyncio.run(main())
