"""An MCP server on trimem, for desktop and IDE assistants: ``python -m trimem mcp --path DIR
[--user-id ID]`` (stdio), or :func:`create_server` in process. Needs ``pip install
'trimem[mcp]'`` (the official ``mcp`` SDK, 2.x: its server class is ``MCPServer``).

Tools: ``retain``, ``recall`` (the rendered context and the structured hits), ``reflect``,
``get_fact``, ``set_fact``, ``forget``, ``memory_stats``, and the tools of the MCP project's
reference knowledge-graph memory server with their names and input schemas
(``create_entities``, ``create_relations``, ``add_observations``, ``delete_entities``,
``delete_observations``, ``delete_relations``, ``read_graph``, ``search_nodes``,
``open_nodes``; see :mod:`trimem.integrations.knowledge_graph`).

With `user_id` the server is pinned to that user: no tool takes a ``user_id`` and a model cannot
reach another user's memory. Without it every tool requires one. Arguments are validated by
their schemas and sizes are capped; a refused call is an MCP tool error (the server goes on);
fact writes go through reflect's guard (no key about roles, permissions, prompts or rules). No
tool takes a file path.

>>> import asyncio
>>> from mcp import Client
>>> server = create_server(user_id="u1", embedder="hashing")
>>> async def demo() -> str:
...     async with Client(server) as client:
...         await client.call_tool("retain", {"text": "The deploy runs on port 8080"})
...         result = await client.call_tool("recall", {"query": "which port does the deploy use?"})
...         return result.structured_content["episodes"][0]["text"]
>>> asyncio.run(demo())
'The deploy runs on port 8080'
"""

# No `from __future__ import annotations`: the SDK reads the tools' parameter types from their
# signatures, and names local to this module would not resolve from strings there.
import functools
import inspect
import os
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Final

from trimem.config import MAX_TEXT_CHARS
from trimem.errors import DependencyError, TrimemError
from trimem.integrations.knowledge_graph import MAX_ITEMS_PER_CALL, KnowledgeGraph
from trimem.memory import Memory

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import BaseModel, Field
except ImportError as e:  # pragma: no cover - the extra is installed in CI
    raise DependencyError("the MCP server needs the mcp extra: pip install 'trimem[mcp]'") from e

__all__ = ["create_server", "serve_stdio"]

MAX_QUERY_CHARS: Final = 2_048
MAX_NAME_CHARS: Final = 256
MAX_K: Final = 50

Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Query = Annotated[str, Field(max_length=MAX_QUERY_CHARS)]
UserId = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="The user whose memory this is.")]


# -- the reference server's shapes -------------------------------------------------------------------


class Entity(BaseModel):
    name: Name = Field(description="The name of the entity")
    entityType: Name = Field(description="The type of the entity")
    observations: list[Text] = Field(
        description="An array of observation contents associated with the entity", max_length=MAX_ITEMS_PER_CALL
    )


class Relation(BaseModel):
    model_config = {"populate_by_name": True}

    from_: Name = Field(alias="from", description="The name of the entity where the relation starts")
    to: Name = Field(description="The name of the entity where the relation ends")
    relationType: Name = Field(description="The type of the relation")


class ObservationAdd(BaseModel):
    entityName: Name = Field(description="The name of the entity to add the observations to")
    contents: list[Text] = Field(description="An array of observation contents to add", max_length=MAX_ITEMS_PER_CALL)


class ObservationDelete(BaseModel):
    entityName: Name = Field(description="The name of the entity containing the observations")
    observations: list[Text] = Field(description="An array of observations to delete", max_length=MAX_ITEMS_PER_CALL)


class Graph(BaseModel):
    entities: list[Entity]
    relations: list[Relation]


class Outcome(BaseModel):
    success: bool
    message: str


def _relations(rs: list[Relation]) -> list[dict[str, str]]:
    return [{"from": r.from_, "to": r.to, "relationType": r.relationType} for r in rs]


def _graph(g: dict[str, list[Any]]) -> Graph:
    return Graph(entities=[Entity(**e) for e in g["entities"]], relations=[Relation(**r) for r in g["relations"]])


# -- the server ---------------------------------------------------------------------------------------


def _tool_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A refused call reaches the model as a tool error with trimem's message."""

    @functools.wraps(fn)
    def run(**kwargs: Any) -> Any:
        try:
            return fn(**kwargs)
        except TrimemError as e:
            raise ToolError(f"{type(e).__name__}: {e}") from e

    return run


def _pinned(fn: Callable[..., Any], user_id: str | None) -> Callable[..., Any]:
    """`fn` with its ``user_id`` fixed (and gone from its schema) when the server is pinned."""
    if user_id is None:
        return fn
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def run(**kwargs: Any) -> Any:
        kwargs.pop("user_id", None)
        return fn(user_id=user_id, **kwargs)

    del run.__wrapped__
    run.__signature__ = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != "user_id"])  # type: ignore[attr-defined]
    return run


def create_server(
    path: str | os.PathLike[str] | None = None,
    user_id: str | None = None,
    *,
    memory: Memory | None = None,
    agent_id: str = "default",
    embedder: Any = "auto",
) -> MCPServer:
    """An MCP server over the memory at `path` (a folder or a ``postgresql://`` DSN; None: in
    process) or over `memory`; pinned to `user_id` when given."""
    mem = memory if memory is not None else Memory(path, embedder=embedder)
    graph = KnowledgeGraph(mem, agent_id=agent_id)
    server = MCPServer("trimem", instructions="Long-term memory: retain what happens, recall it, keep facts.",
                       log_level="WARNING")  # fmt: skip
    scope = {"agent_id": agent_id}

    def add(fn: Callable[..., Any], description: str, *, read_only: bool, destructive: bool = False) -> None:
        hints = ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, open_world_hint=False)
        server.add_tool(
            _pinned(_tool_errors(fn), user_id), name=fn.__name__, description=description, annotations=hints
        )

    def retain(text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)], user_id: UserId,
               session_id: Name | None = None, timestamp: datetime | None = None) -> dict[str, Any]:  # fmt: skip
        e = mem.retain(text, user_id=user_id, agent_id=agent_id, session_id=session_id, timestamp=timestamp)
        return {"id": e.id, "text": e.text, "timestamp": e.timestamp}

    def recall(query: Query, user_id: UserId, k: Annotated[int, Field(ge=1, le=MAX_K)] = 10,
               max_tokens: Annotated[int, Field(ge=50, le=32_000)] = 1_500) -> dict[str, Any]:  # fmt: skip
        bundle = mem.recall(query, user_id=user_id, agent_id=agent_id, k=k)
        return {
            "context": bundle.render(max_tokens=max_tokens),
            "episodes": [
                {"id": r.episode.id, "text": r.episode.text, "timestamp": r.episode.timestamp, "score": r.scored.score}
                for r in bundle.episodes
            ],
            "facts": [{"key": f.key, "value": f.value} for f in bundle.profile],
            "knowledge": [{"id": r.doc.id, "text": r.doc.text, "source": r.doc.source} for r in bundle.knowledge],
        }

    def reflect(user_id: UserId) -> dict[str, Any]:
        changes = mem.reflect(user_id=user_id, agent_id=agent_id)
        return {"changes": [{"op": c.op, "key": c.key, "value": c.value, "old_value": c.old_value} for c in changes]}

    def get_fact(key: Name, user_id: UserId) -> dict[str, Any]:
        return {"fact": mem.execute("get_fact", key=key, user_id=user_id, **scope)}

    def set_fact(key: Name, value: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)],
                 user_id: UserId) -> dict[str, Any]:  # fmt: skip
        return dict(mem.execute("set_fact", key=key, value=value, user_id=user_id, **scope))

    def forget(
        episode_ids: Annotated[list[int], Field(max_length=MAX_ITEMS_PER_CALL)], user_id: UserId
    ) -> dict[str, Any]:
        return dict(mem.execute("forget", episode_ids=episode_ids, user_id=user_id, **scope))

    def memory_stats(user_id: UserId) -> dict[str, Any]:
        s = mem.stats(user_id=user_id, agent_id=agent_id)
        return {"episodes": s.episodes, "facts": s.facts, "knowledge": s.knowledge}

    add(retain, "Remember one event or statement of the user (kept with its time).", read_only=False)
    add(recall, "Recall what memory holds for a request: a ready prompt context and the hits.", read_only=True)
    add(reflect, "Turn the user's new statements into versioned profile facts.", read_only=False)
    add(get_fact, "Read one profile fact by key (null when there is none).", read_only=True)
    add(set_fact, "Set or update one profile fact (its history is kept).", read_only=False)
    add(forget, "Delete episodes by id.", read_only=False, destructive=True)
    add(memory_stats, "Counts of what memory holds for the user.", read_only=True)

    # -- the reference knowledge-graph server's tools ---------------------------------------------------

    def create_entities(entities: Annotated[list[Entity], Field(max_length=MAX_ITEMS_PER_CALL)],
                        user_id: UserId) -> Graph:  # fmt: skip
        made = graph.create_entities(user_id, [e.model_dump() for e in entities])
        return Graph(entities=[Entity(**e) for e in made], relations=[])

    def create_relations(relations: Annotated[list[Relation], Field(max_length=MAX_ITEMS_PER_CALL)],
                         user_id: UserId) -> Graph:  # fmt: skip
        made = graph.create_relations(user_id, _relations(relations))
        return Graph(entities=[], relations=[Relation(**r) for r in made])

    def add_observations(observations: Annotated[list[ObservationAdd], Field(max_length=MAX_ITEMS_PER_CALL)],
                         user_id: UserId) -> dict[str, Any]:  # fmt: skip
        return {"results": graph.add_observations(user_id, [o.model_dump() for o in observations])}

    def delete_entities(entityNames: Annotated[list[Name], Field(max_length=MAX_ITEMS_PER_CALL)],
                        user_id: UserId) -> Outcome:  # fmt: skip
        deleted, missing = graph.delete_entities(user_id, entityNames)
        message = ("Entities deleted successfully" if not missing else
                   f"Deleted {len(deleted)} of {len(entityNames)} entities. Not found: {', '.join(missing)}")  # fmt: skip
        return Outcome(success=True, message=message)

    def delete_observations(deletions: Annotated[list[ObservationDelete], Field(max_length=MAX_ITEMS_PER_CALL)],
                            user_id: UserId) -> Outcome:  # fmt: skip
        count, missing = graph.delete_observations(user_id, [d.model_dump() for d in deletions])
        asked = sum(len(d.observations) for d in deletions)
        message = "Observations deleted successfully" if count == asked else f"Deleted {count} of {asked} observations."
        if missing:
            message += f" Entities not found: {', '.join(missing)}"
        return Outcome(success=True, message=message)

    def delete_relations(relations: Annotated[list[Relation], Field(max_length=MAX_ITEMS_PER_CALL)],
                         user_id: UserId) -> Outcome:  # fmt: skip
        count = graph.delete_relations(user_id, _relations(relations))
        message = ("Relations deleted successfully" if count == len(relations) else
                   f"Deleted {count} of {len(relations)} relations. The rest matched nothing.")  # fmt: skip
        return Outcome(success=True, message=message)

    def read_graph(user_id: UserId) -> Graph:
        return _graph(graph.read_graph(user_id))

    def search_nodes(query: Annotated[str, Field(max_length=MAX_QUERY_CHARS,
                     description="The search query to match against entity names, types, and observation content")],
                     user_id: UserId) -> Graph:  # fmt: skip
        return _graph(graph.search_nodes(user_id, query))

    def open_nodes(names: Annotated[list[Name], Field(max_length=MAX_ITEMS_PER_CALL,
                   description="An array of entity names to retrieve")], user_id: UserId) -> Graph:  # fmt: skip
        return _graph(graph.open_nodes(user_id, names))

    add(create_entities, "Create multiple new entities in the knowledge graph", read_only=False)
    add(create_relations, "Create multiple new relations between entities in the knowledge graph. "
        "Relations should be in active voice", read_only=False)  # fmt: skip
    add(add_observations, "Add new observations to existing entities in the knowledge graph", read_only=False)
    add(delete_entities, "Delete multiple entities and their associated relations from the knowledge graph",
        read_only=False, destructive=True)  # fmt: skip
    add(delete_observations, "Delete specific observations from entities in the knowledge graph", read_only=False,
        destructive=True)  # fmt: skip
    add(delete_relations, "Delete multiple relations from the knowledge graph", read_only=False, destructive=True)
    add(read_graph, "Read the entire knowledge graph", read_only=True)
    add(search_nodes, "Search for nodes in the knowledge graph based on a query", read_only=True)
    add(open_nodes, "Open specific nodes in the knowledge graph by their names", read_only=True)
    return server


def serve_stdio(path: str | os.PathLike[str], user_id: str | None = None, *, embedder: Any = "auto") -> None:
    """Runs the server on stdin/stdout until the client closes them (``python -m trimem mcp``)."""
    import anyio

    with Memory(path, embedder=embedder) as mem:
        anyio.run(create_server(memory=mem, user_id=user_id).run_stdio_async)
