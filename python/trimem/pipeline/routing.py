"""Routing: a new item goes to the layer it belongs to — conceptual knowledge to semantic memory
(a fact when key-value shaped, else a document private to the user), a dated experience to
episodic memory, transient state to working memory — with an importance and a reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from trimem._checks import check_unit
from trimem.errors import InvalidArgumentError
from trimem.layers._shared import check_text
from trimem.records import Placement, Turn
from trimem.scope import check_id
from trimem.timeutil import TimeLike, now_micros

if TYPE_CHECKING:
    from trimem.memory import Memory


__all__ = ["add_turn", "place"]


def place(
    memory: Memory,
    content: str,
    *,
    user_id: str,
    agent_id: str,
    session_id: str | None,
    timestamp: TimeLike | None,
    classifier: Any,
    context: Mapping[str, Any] | None,
) -> Placement:
    """Routes `content` (the router's rules read English and Chinese; `classifier` plugs in your
    own, an LLM through :class:`trimem.router.LLMRouter`; `context={"layer": ...}` forces a
    layer) and stores it there. Working memory needs `session_id`; without one the item becomes
    an episode."""
    from trimem.router import route

    check_id("user_id", user_id)
    r = route(check_text(content), classifier=classifier, context=context)
    item: Any
    if r.layer == "semantic" and r.kind == "fact" and r.key and r.value:
        item = memory.facts.set(r.key, r.value, user_id=user_id, agent_id=agent_id, at=timestamp)
    elif r.layer == "semantic":
        item = memory.knowledge.add(
            content, agent_id=agent_id, user_id=user_id, timestamp=timestamp, metadata={"importance": r.importance}
        )
    elif r.layer == "working" and session_id is not None:
        item = add_turn(
            memory, session_id, "user", content, user_id=user_id, agent_id=agent_id, importance=r.importance,
            timestamp=timestamp,
        )  # fmt: skip
    else:
        if r.layer == "working":
            reason = r.reason + "; no session to hold it, kept as an episode"
            r = msgspec.structs.replace(r, layer="episodic", kind="episode", reason=reason)
        item = memory.retain(
            content, user_id=user_id, agent_id=agent_id, session_id=session_id, timestamp=timestamp,
            importance=r.importance,
        )  # fmt: skip
    return Placement(layer=r.layer, kind=r.kind, importance=r.importance, reason=r.reason, item=item)


def add_turn(
    memory: Memory,
    session_id: str,
    role: str,
    text: str,
    *,
    user_id: str,
    agent_id: str,
    importance: float | None,
    timestamp: TimeLike | None,
) -> Turn:
    """Adds a turn to the session's working memory (importance estimated by the router's rules
    when not given); turns the capacity bound pushed out are consolidated."""
    check_id("user_id", user_id)
    check_id("agent_id", agent_id)
    text = check_text(text)
    if not isinstance(role, str) or not role:
        raise InvalidArgumentError(f"role must be a non-empty string, got {role!r}")
    if importance is None:
        from trimem.router import route

        importance = route(text).importance  # the rules' estimate (one shared router)
    else:
        importance = check_unit("importance", importance)
    wm = memory.working(session_id)
    turn = wm.add_turn(role, text, importance=float(importance), timestamp=now_micros(timestamp))
    if wm.evicted:
        memory.consolidate(session_id, user_id=user_id, agent_id=agent_id, everything=False)
    return turn
