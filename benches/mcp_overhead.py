"""The MCP server's ``recall`` tool through the SDK's own client (in process) against the same
recall called directly on the memory, same run:

    python benches/mcp_overhead.py [--n 2000] [--queries 100]

A memory with the default embedder holds ``--n`` episodes of one user; each query is recalled
through the tool (``recall``: the rendered context and the hits, as JSON over the client session)
and directly (``Memory.recall(...).render(1500)``, what the tool returns the model), calls
alternated; the figure is the median of the paired ratios. Also the directly called recall
without ``render``.
"""

import argparse
import asyncio
import statistics
import time
import warnings

from mcp import Client

from trimem import Memory
from trimem.bench.datasets import query_texts, texts
from trimem.integrations.mcp import create_server

warnings.simplefilter("ignore")
ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=2_000)
ap.add_argument("--queries", type=int, default=100)
args = ap.parse_args()

mem = Memory()
mem.retain_many([{"text": t, "user_id": "u1"} for t in texts(args.n)])
questions = query_texts(args.queries)
server = create_server(memory=mem, user_id="u1")


async def main() -> None:
    ratios, bare, tool_ms, direct_ms = [], [], [], []
    async with Client(server) as client:
        await client.call_tool("recall", {"query": questions[0]})  # warm: the model, the session
        for q in questions:
            t0 = time.perf_counter()
            result = await client.call_tool("recall", {"query": q})
            t1 = time.perf_counter()
            mem.recall(q, user_id="u1", k=10).render(max_tokens=1500)
            t2 = time.perf_counter()
            mem.recall(q, user_id="u1", k=10)
            t3 = time.perf_counter()
            assert not result.is_error
            ratios.append((t1 - t0) / (t2 - t1))
            bare.append((t1 - t0) / (t3 - t2))
            tool_ms.append((t1 - t0) * 1e3)
            direct_ms.append((t2 - t1) * 1e3)
    print(f"## MCP recall tool vs direct call, {args.n:,} episodes, default embedder ({mem.embedder})")
    print("| call | p50 ms |\n|---|---:|")
    print(f"| tool `recall` (in-process client) | {statistics.median(tool_ms):.2f} |")
    print(f"| `Memory.recall(...).render(1500)` | {statistics.median(direct_ms):.2f} |")
    print(f"tool / direct recall + render (median of paired ratios): {statistics.median(ratios):.3f}")
    print(f"tool / direct recall without render: {statistics.median(bare):.3f}")


asyncio.run(main())
