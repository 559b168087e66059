"""The OpenAI Agents SDK on trimem: :class:`TrimemSession` keeps a conversation's items (the
SDK's ``Session`` protocol), and :func:`memory_tools` gives an agent function tools over a
user's memory. Needs ``pip install 'trimem[agents]'``.

>>> import asyncio
>>> session = TrimemSession("chat-1")  # in process; memory=Memory("./folder") to keep it
>>> asyncio.run(session.add_items([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
>>> [i["content"] for i in asyncio.run(session.get_items())]
['hi', 'hello']

Session items are kept whole and in order in the memory's items (on either backend), not in
working memory: no bound, no expiry. With ``retain_as`` (a user id) each message with text is
also retained as an episode of that user in the session (its role kept: ``Episode.role``), so
``recall`` finds what was said in it.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Final

from trimem.errors import DependencyError, TrimemError
from trimem.layers.items import ItemPut, check_namespace
from trimem.memory import Memory

try:
    from agents import FunctionTool, function_tool
    from agents.memory import SessionSettings
except ImportError as e:  # pragma: no cover - the extra is installed in CI
    raise DependencyError("the OpenAI Agents integration needs the agents extra: pip install 'trimem[agents]'") from e

__all__ = ["TrimemSession", "memory_tools"]

NAMESPACE: Final = "agents-session"
MAX_SESSION: Final = 1_000_000
"""Most items one session keeps."""


def _text(item: dict[str, Any]) -> str | None:
    """The text of a message item (a string, or its text parts joined), else None."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return " ".join(t for t in parts if t) or None
    return None


class TrimemSession:
    """A conversation's items for the OpenAI Agents SDK (``Runner.run(agent, input,
    session=TrimemSession("chat-1", memory=mem))``).

    `memory`: where the items live (None: a memory in process); `retain_as`: a user id to also
    retain each message as an episode of; `agent_id`: the scope of those episodes."""

    def __init__(
        self,
        session_id: str,
        *,
        memory: Memory | None = None,
        retain_as: str | None = None,
        agent_id: str = "default",
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings
        self.memory = memory if memory is not None else Memory(embedder=None)
        self._namespace = check_namespace((NAMESPACE, agent_id, session_id))
        self._items = self.memory.items
        self._retain_as, self._agent_id = retain_as, agent_id
        self._lock = threading.Lock()

    def _stored(self) -> list[tuple[int, dict[str, Any]]]:
        found = self._items.search(self._namespace, limit=MAX_SESSION)
        return sorted((int(it.key), dict(it.value["item"])) for it, _ in found)

    # -- the Session protocol, each verb on a worker thread ----------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The session's items in order; with `limit`, its latest `limit` of them."""
        items = [item for _, item in await asyncio.to_thread(self._stored)]
        return items if limit is None else items[max(0, len(items) - limit) :] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Appends `items` (in one atomic write)."""
        await asyncio.to_thread(self._add, [dict(i) for i in items])

    def _add(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        with self._lock:
            stored = self._stored()
            first = stored[-1][0] + 1 if stored else 0
            self._items.apply(
                [
                    ItemPut(self._namespace, f"{first + n:012d}", {"item": item}, index=False)
                    for n, item in enumerate(items)
                ]
            )
        if self._retain_as is not None:
            said = [(i.get("role"), _text(i)) for i in items]
            episodes = [
                {"text": text, "role": role, "user_id": self._retain_as, "agent_id": self._agent_id,
                 "session_id": self.session_id}
                for role, text in said if isinstance(role, str) and role and text
            ]  # fmt: skip  # fmt: skip
            if episodes:
                self.memory.retain_many(episodes)

    async def pop_item(self) -> Any | None:
        """Removes and returns the latest item (None when the session is empty)."""
        return await asyncio.to_thread(self._pop)

    def _pop(self) -> dict[str, Any] | None:
        with self._lock:
            stored = self._stored()
            if not stored:
                return None
            seq, item = stored[-1]
            self._items.delete(self._namespace, f"{seq:012d}")
            return item

    async def clear_session(self) -> None:
        """Removes every item of the session (episodes it retained stay: forget those by session)."""
        await asyncio.to_thread(self._clear)

    def _clear(self) -> None:
        with self._lock:
            self._items.apply([ItemPut(self._namespace, f"{seq:012d}", None) for seq, _ in self._stored()])


def memory_tools(memory: Memory, *, user_id: str, agent_id: str = "default") -> list[FunctionTool]:
    """Function tools over one user's memory for an OpenAI Agents SDK agent: ``search_memory``,
    ``get_fact``, ``set_fact`` (reflect's guard applies), ``forget``. The user is fixed here, not
    an argument the model chooses; a refused call comes back to the model as an error message."""
    scope = {"user_id": user_id, "agent_id": agent_id}

    def run(name: str, **args: Any) -> str:
        """The call's result as JSON, what the model reads (a refusal: {"error": ...})."""
        try:
            result = memory.execute(name, **args, **scope)
        except TrimemError as e:
            result = {"error": f"{type(e).__name__}: {e}"}
        return json.dumps(result, ensure_ascii=False)

    @function_tool
    def search_memory(query: str, k: int = 5) -> str:
        """Search the user's past events, profile facts and the agent's knowledge.

        Args:
            query: What to look for.
            k: How many events at most (1 to 50).
        """
        return run("search_memory", query=query, k=k)

    @function_tool
    def get_fact(key: str) -> str:
        """Read one of the user's profile facts by key (null when there is none).

        Args:
            key: The fact's key, e.g. "editor".
        """
        return run("get_fact", key=key)

    @function_tool
    def set_fact(key: str, value: str) -> str:
        """Set or update one of the user's profile facts (its history is kept).

        Args:
            key: The fact's key, e.g. "editor".
            value: Its new value.
        """
        return run("set_fact", key=key, value=value)

    @function_tool
    def forget(episode_ids: list[int]) -> str:
        """Delete the user's episodes by id.

        Args:
            episode_ids: The ids, as search_memory returned them.
        """
        return run("forget", episode_ids=episode_ids)

    return [search_memory, get_fact, set_fact, forget]
