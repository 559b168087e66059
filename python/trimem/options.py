"""Keyword options of the :class:`trimem.Memory` verbs, as typed dictionaries: the verbs take
them as ``**options`` and type checkers check each keyword (PEP 692)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import tzinfo
from typing import Any, TypedDict

import numpy as np

from trimem.records import SearchMode, ToolCall, Turn
from trimem.timeutil import TimeLike

__all__ = ["EpisodeFields", "PerceptFields", "RecallOptions", "SearchOptions"]


class EpisodeFields(TypedDict, total=False):
    """What an episode holds besides its text and user (all optional)."""

    agent_id: str  # default "default"
    session_id: str | None
    role: str  # default "user"
    topic: str | None
    keywords: Sequence[str]
    timestamp: TimeLike | None  # default now
    importance: float  # in [0, 1], default 0.5
    metadata: Mapping[str, Any] | None
    tool: ToolCall | Mapping[str, Any] | None  # {"name", "args", "result"}
    # when the event happened; default: what a relative time in the text says ("yesterday"),
    # read against `timestamp`, else None (it happened when it was told)
    occurred_at: TimeLike | None


class PerceptFields(TypedDict, total=False):
    """What a perceptual record holds besides its modality, item and user (all optional)."""

    agent_id: str  # default "default"
    caption: str | None  # searchable by keyword
    ref: str | os.PathLike[str] | None  # the caller's URI or path of the original
    timestamp: TimeLike | None  # default now
    metadata: Mapping[str, Any] | None
    importance: float  # in [0, 1], default 0.5


class SearchOptions(TypedDict, total=False):
    """Options of an episode search."""

    agent_id: str
    k: int  # default 5
    time_range: tuple[TimeLike, TimeLike] | None  # [start, end)
    session_id: str | None
    vector: np.ndarray | None  # skips the embedder
    mode: SearchMode  # default "hybrid"
    now: TimeLike | None  # the time decay is measured from
    touch: bool  # count the hits as used (default False)


class RecallOptions(TypedDict, total=False):
    """Options of a recall (see :meth:`trimem.Memory.recall`)."""

    agent_id: str
    session_id: str | None
    k: int  # episodes, default 5
    k_knowledge: int  # documents, default 3
    now: TimeLike | None
    tz: tzinfo | None
    same_session: bool  # only the session's episodes
    n_turns: int  # working-memory turns, default 5
    layered: bool  # working memory first, long-term memory when that is not enough
    enough: Callable[[str, list[Turn]], bool] | None
    rerank: Callable[[str, list[str]], Sequence[float]] | None
    rerank_depth: int  # default 3
    touch: bool  # count what is returned as used (default True)
    as_of: TimeLike | None  # answer with what was known then
