"""Explicit tool mode (MemGPT style): the model calls memory tools itself through
function-calling schemas; `execute` validates arguments against them before dispatching.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> [t["function"]["name"] for t in mem.tools()]
['search_memory', 'get_fact', 'set_fact', 'forget', 'memory_stats']
>>> mem.execute("set_fact", key="editor", value="Vim", user_id="u1")["op"]
'set'
>>> mem.execute("get_fact", key="editor", user_id="u1")["value"]
'Vim'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from trimem._checks import shown
from trimem.errors import ForbiddenFactError, InvalidArgumentError, UnknownIdError
from trimem.reflect import is_denied_key, is_injection

if TYPE_CHECKING:
    from trimem.memory import Memory


__all__ = ["TOOL_SCHEMAS", "execute"]


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_USER = {
    "user_id": {"type": "string", "description": "The user whose memory this is."},
    "agent_id": {"type": "string", "description": "The agent (default 'default')."},
}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    _fn(
        "search_memory",
        "Search the user's past events and the agent's knowledge.",
        {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": 50}, **_USER},
        ["query", "user_id"],
    ),
    _fn("get_fact", "Read one profile fact by key.", {"key": {"type": "string"}, **_USER}, ["key", "user_id"]),
    _fn(
        "set_fact",
        "Set or update one profile fact (its history is kept).",
        {"key": {"type": "string"}, "value": {"type": "string"}, **_USER},
        ["key", "value", "user_id"],
    ),
    _fn(
        "forget",
        "Delete episodes by id.",
        {"episode_ids": {"type": "array", "items": {"type": "integer"}}, **_USER},
        ["episode_ids", "user_id"],
    ),
    _fn("memory_stats", "Counts of what memory holds.", {}, []),
]
_BY_NAME = {s["function"]["name"]: s["function"]["parameters"] for s in TOOL_SCHEMAS}
_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int, "array": list, "object": dict}


def _validate(name: str, args: dict[str, Any]) -> None:
    if not isinstance(name, str):
        raise InvalidArgumentError(f"a memory tool's name is a string, got {type(name).__name__}")
    schema = _BY_NAME.get(name)
    if schema is None:
        raise InvalidArgumentError(f"unknown memory tool {name!r}; known: {sorted(_BY_NAME)}")
    props = schema["properties"]
    for req in schema["required"]:
        if req not in args:
            raise InvalidArgumentError(f"{name}: missing required argument {req!r}")
    for key, value in args.items():
        if key not in props:
            raise InvalidArgumentError(f"{name}: unexpected argument {key!r}")
        want = props[key]["type"]
        if not isinstance(value, _TYPES[want]) or isinstance(value, bool):
            raise InvalidArgumentError(f"{name}: argument {key!r} must be {want}, got {type(value).__name__}")
        if want == "array" and not all(isinstance(v, int) and not isinstance(v, bool) for v in cast(list[Any], value)):
            raise InvalidArgumentError(f"{name}: {key!r} must be a list of integers")
        if want == "integer" and not props[key].get("minimum", value) <= value <= props[key].get("maximum", value):
            raise InvalidArgumentError(f"{name}: {key!r}={shown(value)} is out of range")


def _guard_fact(key: str, value: str) -> None:
    """A model writes facts under the same rules as reflect: stored text is data, so no key about
    roles, permissions, prompts or rules, and no value that reads as an injected instruction."""
    if is_denied_key(key):
        raise ForbiddenFactError(
            f"set_fact: key {key!r} is about roles, permissions, prompts or rules; memory holds data, "
            "not instructions, so a tool call cannot write it"
        )
    if is_injection(value):
        raise ForbiddenFactError("set_fact: the value reads as an instruction to the model; it was not stored")


def execute(memory: Memory, name: str, args: dict[str, Any]) -> Any:
    """Validates and runs one tool call; returns JSON-ready data."""
    _validate(name, args)
    scope = {"user_id": args.get("user_id"), "agent_id": args.get("agent_id", "default")}
    if name == "search_memory":
        bundle = memory.recall(args["query"], k=args.get("k", 5), **scope)
        return {
            "episodes": [
                {"id": r.episode.id, "text": r.episode.text, "timestamp": r.episode.timestamp, "score": r.scored.score}
                for r in bundle.episodes
            ],
            "knowledge": [{"id": r.doc.id, "text": r.doc.text, "source": r.doc.source} for r in bundle.knowledge],
            "facts": {f.key: f.value for f in bundle.profile},
        }
    if name == "get_fact":
        fact = memory.facts.get(args["key"], **scope)
        return (
            None
            if fact is None
            else {"key": fact.key, "value": fact.value, "version": fact.version, "updated_at": fact.updated_at}
        )
    if name == "set_fact":
        _guard_fact(args["key"], args["value"])
        ch = memory.facts.set(args["key"], args["value"], **scope)
        return {"op": ch.op, "key": ch.key, "value": ch.value, "old_value": ch.old_value}
    if name == "forget":
        try:
            return {"forgotten": memory.forget(args["episode_ids"], **scope)}
        except UnknownIdError as e:
            raise InvalidArgumentError(f"forget: {e}") from None
    stats = memory.stats()
    return {"episodes": stats.episodes, "knowledge": stats.knowledge, "facts": stats.facts, "users": stats.users}
