"""Scopes: every episode and fact belongs to an agent and a user; knowledge to an agent (or, when
private, to one of its users). In the engine a scope is a namespace string that every search
filters on, so no query can cross it.

>>> episode_namespace("default", "u1")
'default/u1'
>>> check_id("user_id", "a/b")
Traceback (most recent call last):
...
trimem.errors.InvalidNameError: invalid user_id 'a/b': it must not contain '/'
"""

from __future__ import annotations

import enum
import functools
from typing import Final, Literal

from trimem.errors import InvalidArgumentError, InvalidNameError

__all__ = [
    "MAX_ID_CHARS",
    "SHARED",
    "Shared",
    "check_id",
    "episode_namespace",
    "knowledge_namespace",
    "knowledge_owner",
]

MAX_ID_CHARS = 128


class _Shared(enum.Enum):
    SHARED = "shared"

    def __repr__(self) -> str:
        return "trimem.SHARED"

    __str__ = __repr__


SHARED: Final = _Shared.SHARED
"""The scope of an agent's knowledge that all its users share (``user_id=SHARED``, the default
of the knowledge base), spelled out so that ``None`` never means two things."""

Shared = Literal[_Shared.SHARED]


def check_id(what: str, value: object) -> str:
    """Validates an agent, user or session id and returns it."""
    if isinstance(value, str) and _seen_valid(value):
        return value
    return _check_id(what, value)


@functools.lru_cache(maxsize=65_536)
def _seen_valid(value: str) -> bool:
    # Ids repeat on every call of a busy agent; validating each once keeps writes cheap.
    try:
        _check_id("id", value)
    except InvalidNameError:
        return False
    return True


def _check_id(what: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidNameError(f"{what} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidNameError(f"invalid {what}: it is empty ({what} is required)")
    if len(value) > MAX_ID_CHARS:
        raise InvalidNameError(f"invalid {what}: {len(value)} characters, over {MAX_ID_CHARS}")
    if "/" in value:
        raise InvalidNameError(f"invalid {what} {value!r}: it must not contain '/'")
    if not value.isprintable():  # control characters, line breaks, tabs, odd separators
        raise InvalidNameError(f"invalid {what} {value!r}: it contains control characters")
    return value


def episode_namespace(agent_id: str, user_id: str) -> str:
    return f"{check_id('agent_id', agent_id)}/{check_id('user_id', user_id)}"


def knowledge_namespace(agent_id: str, user_id: str | None) -> str:
    """Shared knowledge (stored with user None) lives in the agent's namespace, private
    knowledge in the user's."""
    if user_id is None:
        return check_id("agent_id", agent_id)
    return episode_namespace(agent_id, user_id)


def knowledge_owner(user_id: str | Shared) -> str | None:
    """The stored owner of a document: None for :data:`SHARED`, else the (valid) user id."""
    if user_id is SHARED:
        return None
    if user_id is None:
        raise InvalidArgumentError(
            "user_id=None is ambiguous for knowledge: pass trimem.SHARED for the agent's shared "
            "documents, or a user id for that user's private ones"
        )
    return check_id("user_id", user_id)
