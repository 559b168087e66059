"""TrimemSession against the SDK's own SQLiteSession (random operation sequences, same results)
on every backend, and an agent run by the SDK's Runner on a scripted model (no network) with
the session and trimem's memory tools."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, Runner, SQLiteSession, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from trimem import Memory
from trimem.errors import TrimemError
from trimem.integrations.openai_agents import TrimemSession, memory_tools

set_tracing_disabled(True)  # no trace export: nothing leaves the machine


def _memory(where: Any) -> Memory:
    return Memory(where, embedder="hashing")


def test_it_is_a_session_and_refuses_a_bad_id() -> None:
    assert isinstance(TrimemSession("s1"), Session)
    for bad in ["", "a\x00b"]:
        with pytest.raises(TrimemError):
            TrimemSession(bad)


@pytest.mark.parametrize("seed", range(4))
def test_random_operations_give_what_sqlite_session_gives(where: Any, seed: int) -> None:
    rng = random.Random(seed)
    mem = _memory(where)
    ours, theirs = TrimemSession("chat", memory=mem), SQLiteSession("chat")
    other = TrimemSession("chat-2", memory=mem)  # a session beside it stays apart

    async def both(op: str, *args: Any) -> tuple[Any, Any]:
        return await getattr(ours, op)(*args), await getattr(theirs, op)(*args)

    async def scenario() -> None:
        await other.add_items([{"role": "user", "content": "elsewhere"}])
        n = 0
        for _ in range(60):
            kind = rng.random()
            if kind < 0.4:
                items = []
                for _ in range(rng.randint(0, 3)):
                    n += 1
                    items.append(rng.choice([
                        {"role": "user", "content": f"message {n} 内容"},
                        {"role": "assistant", "content": [{"type": "output_text", "text": f"reply {n}"}]},
                        {"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": json.dumps({"n": n})},
                    ]))  # fmt: skip
                a, b = await both("add_items", items)
            elif kind < 0.7:
                a, b = await both("get_items", rng.choice([None, 0, 1, 3, 100]))
            elif kind < 0.9:
                a, b = await both("pop_item")
            else:
                a, b = await both("clear_session")
            assert a == b
        assert await ours.get_items() == await theirs.get_items()
        assert [i["content"] for i in await other.get_items()] == ["elsewhere"]

    try:
        asyncio.run(scenario())
    finally:
        mem.close()


def test_items_persist_and_retained_messages_are_recalled(tmp_path: Path) -> None:
    folder = tmp_path / "mem"

    async def talk() -> None:
        with _memory(folder) as mem:
            session = TrimemSession("trip", memory=mem, retain_as="u1")
            await session.add_items([
                {"role": "user", "content": "I land in Lisbon on Friday at 9pm"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Noted: Lisbon, Friday 9pm."}]},
                {"type": "function_call", "call_id": "c1", "name": "book", "arguments": "{}"},
            ])  # fmt: skip

    asyncio.run(talk())
    with _memory(folder) as mem:
        items = asyncio.run(TrimemSession("trip", memory=mem).get_items())
        assert [i.get("role", i.get("type")) for i in items] == ["user", "assistant", "function_call"]
        episodes = mem.episodes(user_id="u1")
        assert sorted((e.role, e.text) for e in episodes) == [("assistant", "Noted: Lisbon, Friday 9pm."),
                                                              ("user", "I land in Lisbon on Friday at 9pm")]  # fmt: skip
        assert {e.session_id for e in episodes} == {"trip"}
        recalled = [r.episode.text for r in mem.recall("when do I land in Lisbon?", user_id="u1").episodes]
        assert "I land in Lisbon on Friday at 9pm" in recalled


class ScriptedModel(Model):
    """Answers from a script: each turn either calls a tool or says something; records its input."""

    def __init__(self, turns: list[Any]) -> None:
        self.turns, self.inputs = list(turns), []

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(input)
        turn = self.turns.pop(0)
        if isinstance(turn, tuple):
            name, arguments = turn
            out: Any = ResponseFunctionToolCall(type="function_call", call_id=f"call-{len(self.inputs)}", name=name,
                                                arguments=json.dumps(arguments))  # fmt: skip
        else:
            text = ResponseOutputText(type="output_text", text=turn, annotations=[])
            out = ResponseOutputMessage(id=f"m{len(self.inputs)}", type="message", role="assistant", status="completed",
                                        content=[text])  # fmt: skip
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_runner_with_the_session_and_the_memory_tools(where: Any) -> None:
    mem = _memory(where)
    mem.retain("We deploy the API with Docker on port 8080", user_id="u1")
    model = ScriptedModel([
        ("search_memory", {"query": "deploy port", "k": 3}),
        ("set_fact", {"key": "deploy_port", "value": "8080"}),
        ("set_fact", {"key": "system_prompt", "value": "obey"}),
        "It runs on port 8080.",
        "Still 8080.",
    ])  # fmt: skip
    agent = Agent(name="helper", instructions="Use memory.", model=model, tools=memory_tools(mem, user_id="u1"))
    session = TrimemSession("run-1", memory=mem)
    try:
        first = asyncio.run(Runner.run(agent, "Which port do we deploy on?", session=session))
        assert first.final_output == "It runs on port 8080."
        outputs = [i for i in asyncio.run(session.get_items()) if i.get("type") == "function_call_output"]
        found, stored, refused = (
            json.loads(o["output"]) if o["output"].startswith("{") else o["output"] for o in outputs
        )
        assert found["episodes"][0]["text"] == "We deploy the API with Docker on port 8080"
        assert stored["op"] == "set" and mem.facts.get("deploy_port", user_id="u1").value == "8080"  # type: ignore[union-attr]
        assert "ForbiddenFactError" in refused["error"] and mem.facts.get("system_prompt", user_id="u1") is None
        second = asyncio.run(Runner.run(agent, "And now?", session=session))
        assert second.final_output == "Still 8080."
        history = model.inputs[-1]  # the second run's model input starts with the first run's items
        assert history[0]["content"] == "Which port do we deploy on?" and history[-1]["content"] == "And now?"
        assert len(asyncio.run(session.get_items())) == len(history) + 1
    finally:
        mem.close()
