"""Episodic memory: timestamped events of one user (what was said, decided, run), searched by
keywords, meaning and time.

>>> from trimem import Memory
>>> mem = Memory(embedder=None)
>>> ep = mem.retain("Started the Node service in Docker, port 8080", user_id="u1")
>>> [r.episode.id for r in mem.search("node port", user_id="u1")] == [ep.id]
True
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, tzinfo
from typing import Any

import msgspec
import numpy as np

from trimem._backend import Backend, Floors, Query
from trimem._backend.ops import Op, OpRetain
from trimem._checks import check_bool, check_index, check_plain, check_str, check_unit, shown
from trimem.config import MAX_BATCH, MAX_TEXT_CHARS, Policy
from trimem.errors import InvalidArgumentError, TextTooLongError
from trimem.layers._shared import Embedding, IndexedLayer, check_options, check_text, collector_paused
from trimem.options import EpisodeFields
from trimem.records import Episode, Mention, RecalledEpisode, SearchMode, ToolCall, search_text
from trimem.scope import check_id, episode_namespace
from trimem.text.time_expressions import event_time
from trimem.timeutil import TimeLike, now_micros, to_micros, to_micros_range

__all__ = ["EpisodicMemory"]

MAX_INDEXED_BYTES = 1 << 20  # what the engine indexes of one record (HybridIndex max_text_bytes)
MAX_ROLE_CHARS = 64  # a role ("user", "assistant", "tool") or a tool's name
_MAX_SESSIONS_REMEMBERED = 10_000  # sessions whose last turn ids retain keeps at hand
_ITEM_KEYS = frozenset(EpisodeFields.__annotations__) | {"text", "user_id"}


def _merged(stored: Episode, item: Episode) -> Episode:
    """What retain returns for an item that merged into `stored`: the stored episode, with the
    item's own time, words, session and metadata as its mention."""
    mention = Mention(at=item.timestamp, text=item.text, session_id=item.session_id, metadata=item.metadata)
    return msgspec.structs.replace(stored, mention=mention)


class EpisodicMemory(IndexedLayer):
    """A memory's episodes, over its backend."""

    def __init__(
        self, backend: Backend, embedding: Embedding, policy: Policy, floors: Floors, *, tz: tzinfo = UTC
    ) -> None:
        super().__init__(backend, embedding, policy, floors)
        self._tz = tz  # reads a relative time in a text ("yesterday") against when it was told
        # (namespace, session) -> ids of its last turns: what a new turn is embedded with.
        self._recent: dict[tuple[str, str], builtins.list[int]] = {}

    # -- writes -----------------------------------------------------------------------------------

    def fields(
        self,
        text: str,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        role: str = "user",
        topic: str | None = None,
        keywords: Sequence[str] = (),
        timestamp: TimeLike | None = None,
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        tool: ToolCall | Mapping[str, Any] | None = None,
        occurred_at: TimeLike | None = None,
    ) -> dict[str, Any]:
        """Validates one item and returns the fields of its Episode (all but the id)."""
        check_id("agent_id", agent_id)
        check_id("user_id", user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        importance = check_unit("importance", importance)
        if not (type(role) is str and role == "user"):  # the default needs no check
            check_str("role", role, limit=MAX_ROLE_CHARS, empty=False)
        if topic is not None:
            check_str("topic", topic, limit=MAX_TEXT_CHARS)
        if type(keywords) is not tuple or keywords:  # the default () needs no check
            if isinstance(keywords, (str, bytes)) or not isinstance(keywords, (list, tuple)):
                raise InvalidArgumentError(f"keywords must be a list of strings, got {shown(keywords)}")
            for k in keywords:
                check_str("a keyword", k, limit=MAX_TEXT_CHARS)
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise InvalidArgumentError(f"metadata must be a mapping, got {shown(metadata)}")
            check_plain("metadata", dict(metadata))
        if tool is not None and not isinstance(tool, ToolCall):
            if not isinstance(tool, Mapping) or "name" not in tool:
                raise InvalidArgumentError("tool must be a mapping with 'name' (and optional 'args', 'result')")
            tool = ToolCall(
                name=str(tool["name"]), args=dict(tool.get("args") or {}), result=str(tool.get("result") or "")
            )
        if tool is not None:
            check_str("tool name", tool.name, limit=MAX_ROLE_CHARS)
            check_plain("tool args", tool.args)
            check_str("tool result", tool.result)
        told = now_micros(timestamp)
        text = check_text(text)
        if occurred_at is not None:
            occurred: int | None = to_micros(occurred_at)
        else:  # "Yesterday I deployed v2": the event's own time, read against when it was told
            occurred = event_time(text, told=told, tz=self._tz)
        fields: dict[str, Any] = dict(
            agent_id=agent_id,
            user_id=user_id,
            text=text,
            timestamp=told,
            occurred_at=occurred,
            session_id=session_id,
            role=role,
            topic=topic,
            keywords=tuple(keywords),
            importance=importance,
            metadata=dict(metadata) if metadata else {},
            tool=tool,
        )
        if (topic or keywords or tool) and len(search_text(Episode(id=0, **fields)).encode()) > MAX_INDEXED_BYTES:
            raise TextTooLongError(
                f"text, topic, keywords and tool call together are over {MAX_INDEXED_BYTES} bytes; shorten them"
            )
        return fields

    def retain_many(self, items: Iterable[Mapping[str, Any]], *, vectors: np.ndarray | None = None) -> list[Episode]:
        """Appends many events in one batch (see :meth:`trimem.Memory.retain_many`)."""
        if isinstance(items, (str, bytes, Mapping)):
            raise InvalidArgumentError("retain_many takes a list of items (mappings with text, user_id, ...)")
        drafts = []
        with collector_paused():
            for it in items:
                if not isinstance(it, Mapping):
                    raise InvalidArgumentError(f"each item is a mapping with text and user_id, got {type(it).__name__}")
                if not _ITEM_KEYS.issuperset(it):
                    check_options(it, _ITEM_KEYS, "an episode")
                drafts.append(self.fields(**it))
            episodes = self.retain_drafts(drafts, vectors)
            del drafts  # freed before the collector wakes: its first pass would walk them all
        return episodes

    def retain_drafts(self, drafts: list[dict[str, Any]], vectors: np.ndarray | None) -> list[Episode]:
        """`retain_many` of validated fields (consolidation, whose items are checked already,
        starts here)."""
        if not drafts:
            return []
        dim = self._embed.dim
        if vectors is not None:
            if self._embed.embedder is None:
                raise InvalidArgumentError("this memory has no embedder (embedder=None) and takes no vectors")
            vectors = np.ascontiguousarray(vectors)
            if vectors.dtype != np.float32 or vectors.shape != (len(drafts), dim):
                raise InvalidArgumentError(
                    f"vectors must be float32 of shape ({len(drafts)}, {dim}), got {vectors.dtype} {vectors.shape}"
                )
        elif self._embed.embedder is not None:
            texts = [search_text(Episode(id=0, **f)) for f in drafts]
            vectors = self._embed(self._in_context(drafts, texts) if self._policy.embed_context else texts)
        backend = self._backend
        with backend.lock:
            first = backend.reserve_ids(len(drafts))
            episodes = [Episode(id=first + i, **f) for i, f in enumerate(drafts)]
            p = self._policy
            dedup = (p.dedup_min_jaccard, p.dedup_min_cosine) if p.dedup else None
            ops: list[Op] = [
                OpRetain(
                    episodes=episodes[at : at + MAX_BATCH],
                    vectors=None if vectors is None else vectors[at : at + MAX_BATCH].tobytes(),
                    dedup=dedup,
                )
                for at in range(0, len(episodes), MAX_BATCH)
            ]
            try:
                dups = backend.write(ops)
            except BaseException:
                backend.release_ids(first, len(drafts))
                raise
        if dups:
            wanted = sorted(set(dups.values()))
            found = {e.id: e for e in backend.episodes(wanted) if e is not None}
            episodes = [_merged(found[dups[e.id]], e) if dups.get(e.id) in found else e for e in episodes]
        if self._policy.embed_context and self._embed.embedder is not None:  # only a vector needs them
            for e in episodes:
                if e.session_id is not None:
                    self._note_turn(f"{e.agent_id}/{e.user_id}", e.session_id, e.id)
        return episodes

    def _in_context(self, drafts: builtins.list[dict[str, Any]], texts: builtins.list[str]) -> builtins.list[str]:
        """What the embedder sees of each draft: the turns before it in its session (stored, or
        earlier in the batch), oldest first, then its own text — ``policy.embed_context`` of them."""
        n = self._policy.embed_context
        batch: dict[tuple[str, str], builtins.list[str]] = {}
        out = []
        for f, text in zip(drafts, texts):
            session = f["session_id"]
            if session is None:
                out.append(text)
                continue
            key = (f"{f['agent_id']}/{f['user_id']}", session)
            before = batch.get(key)
            if before is None:
                before = [e.text for e in self._backend.episodes(self._last_turns(*key)) if e is not None]
            out.append("\n".join([*before[-n:], text]))
            batch[key] = [*before[-n:], f["text"]]
        return out

    def _last_turns(self, namespace: str, session: str) -> builtins.list[int]:
        """Ids of the session's last turns: remembered as they are retained, read from the store
        for a session this process has not seen. Forgotten ids read back as None."""
        key = (namespace, session)
        ids = self._recent.get(key)
        if ids is None:
            ids = self._backend.episode_ids(namespace, session=session)[-self._policy.embed_context :]
            self._recent[key] = ids
        return ids

    def _note_turn(self, namespace: str, session: str, episode_id: int) -> None:
        if len(self._recent) > _MAX_SESSIONS_REMEMBERED:
            self._recent.clear()
        key = (namespace, session)
        ids = self._last_turns(namespace, session)
        if episode_id not in ids:
            self._recent[key] = [*ids, episode_id][-self._policy.embed_context :]

    def mentions(self, episode_id: int) -> builtins.list[Mention]:
        """The near-duplicates merged into a stored episode, oldest first: each one's time,
        words, session and metadata."""
        i = check_index("episode_id", episode_id)
        return [] if i is None else self._backend.mentions(i)

    # -- reads ------------------------------------------------------------------------------------

    def get(self, episode_id: int) -> Episode | None:
        """The stored episode, or None."""
        i = check_index("episode_id", episode_id)
        return None if i is None else self._backend.episodes([i])[0]

    def ids(
        self,
        agent_id: str,
        user_id: str,
        *,
        session_id: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
    ) -> list[int]:
        tr = to_micros_range(time_range)
        if session_id is not None:
            check_id("session_id", session_id)
        return self._backend.episode_ids(episode_namespace(agent_id, user_id), session=session_id, time_range=tr)

    def list(
        self,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
    ) -> list[Episode]:
        """A user's episodes (optionally one session's, or those in `[start, end)`), oldest first."""
        ids = self.ids(agent_id, user_id, session_id=session_id, time_range=time_range)
        eps = [e for e in self._backend.episodes(ids) if e is not None]
        return sorted(eps, key=lambda e: (e.timestamp, e.id))

    def search(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str = "default",
        k: int = 5,
        time_range: tuple[TimeLike, TimeLike] | None = None,
        session_id: str | None = None,
        vector: np.ndarray | None = None,
        mode: SearchMode = "hybrid",
        now: TimeLike | None = None,
        touch: bool = False,
        request: str | None = None,
        depth: int | None = None,
    ) -> builtins.list[RecalledEpisode]:
        """Hybrid search over one user's episodes (see :meth:`trimem.Memory.search`); `request`
        is the request as asked when `query` is a reading of it (it sets the floors); `depth`, the
        hits of the `k` the caller goes on with when it re-orders a wider pool."""
        ns = episode_namespace(agent_id, user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidArgumentError(f"k must be an integer of at least 1, got {shown(k)}")
        check_text(query)
        check_bool("touch", touch)
        if not isinstance(mode, str) or mode not in ("hybrid", "bm25", "vector"):
            raise InvalidArgumentError(f'mode must be "hybrid", "bm25" or "vector", got {shown(mode)}')
        tr = to_micros_range(time_range)
        if mode == "hybrid" and not self._embed.vouches(query):
            mode = "bm25"  # a blind vector leg would only drag the fused ranking down
        if vector is None and mode != "bm25":
            vector = self._embed.query(query)
        at = now_micros(now)
        found = self._backend.search_episodes(
            Query(
                text=query,
                vector=vector,
                namespace=ns,
                k=k,
                depth=depth,
                floors=self._embed.floors(self.floors, query, request=request),
                vector_weight=self._embed.vector_weight(query),
                now=at,
                time_range=tr,
                session=session_id,
                mode=mode,
            ),
            self._policy,
        )
        if touch and found:
            self._backend.touch([r.episode.id for r in found], [], at)
        return found
