"""`Memory`: the three layers — working, episodic, semantic — and the Recall → Retain → Reflect
lifecycle, over the Rust engine.

>>> from datetime import datetime, timezone
>>> from trimem import Memory
>>> mem = Memory(embedder="hashing")
>>> t = datetime(2026, 10, 14, 9, 0, tzinfo=timezone.utc)
>>> ep = mem.retain("Started the Node service in Docker, port 8080", user_id="u1", timestamp=t)
>>> _ = mem.retain("My main language is TypeScript", user_id="u1", timestamp=t)
>>> [c.op for c in mem.reflect(user_id="u1")]
['set']
>>> bundle = mem.recall("which port did node use last month?", user_id="u1",
...                     now=datetime(2026, 11, 20, tzinfo=timezone.utc))
>>> bundle.episodes[0].episode.id == ep.id
True
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from trimem import lifecycle, transfer
from trimem._core import Hits, HybridIndex, Store, tokenize
from trimem.errors import EmbedderMismatchError, InvalidArgumentError, StoreError, UnknownIdError
from trimem.lifecycle import Consolidation, Policy, explain
from trimem.ops import (
    MemoryState,
    Op,
    OpAlias,
    OpCursor,
    OpFact,
    OpForget,
    OpKnowledge,
    OpMeta,
    OpPin,
    OpRetain,
    OpTouch,
    OpWorking,
    decode_op,
    decode_state,
    encode_op,
    encode_state,
)
from trimem.perceptual import OpPerceptAdd, OpPerceptDelete, OpPerceptRegister, PerceptualMemory
from trimem.recall import RecallBundle
from trimem.records import (
    Durability,
    Episode,
    FactChange,
    KnowledgeDoc,
    Placement,
    RecalledEpisode,
    RecalledKnowledge,
    Recovery,
    Scored,
    SearchMode,
    ToolCall,
    decode_knowledge,
    episode_from_record,
    episode_payload,
)
from trimem.reflect import Extractor, RuleExtractor
from trimem.rewrite import MemoryIntent, Rewriter, RuleRewriter
from trimem.scope import check_id, episode_namespace, knowledge_namespace
from trimem.semantic import Facts, KnowledgeBase
from trimem.timeutil import TimeLike, as_datetime, now_micros, to_micros, to_micros_range
from trimem.working import Turn, WorkingMemory

if TYPE_CHECKING:
    from trimem.graph import MemoryGraph

log = logging.getLogger("trimem")

MAX_TEXT_CHARS = 100_000
BM25_K1 = 1.2
EPISODES, KNOWLEDGE = "episodes", "knowledge"
# A retain batch beyond this lands as several log records (each atomic on its own).
MAX_BATCH = 20_000


class Memory:
    """Three-layer agent memory. `Memory()` lives in process; `Memory("./folder")` is an
    embedded store that replays its log on open.

    Parameters: `embedder` — "auto" (MiniLM when the `minilm` extra is installed, else the
    hashing embedder), "hashing", "minilm", an object with `name`, `dim` and
    `__call__(list[str]) -> float32 (n, dim)`, or None for a keyword-only memory;
    `min_bm25_share`, `min_cosine` and `min_cosine_alone` (for hits no keyword matched) are the
    floors that keep weak matches (greetings, rants, logs sharing one word with the question)
    out of recall; `durability` —
    "fsync" (a write returns once on disk) or "buffered" (on disk within a second; a process
    crash loses nothing, a power cut may lose the last second); `checkpoint_bytes` — the log
    size at which a snapshot is written (reopening replays at most this much);
    `rewriter` and `extractor` plug in your own query rewriter and fact extractor (an LLM,
    say); `tz` reads relative time; `policy` (:class:`trimem.lifecycle.Policy`) sets decay,
    reinforcement, retention, consolidation and dedup.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Any = "auto",
        durability: Durability = "fsync",
        rewriter: Rewriter | None = None,
        extractor: Extractor | None = None,
        tz: tzinfo = UTC,
        working_capacity: int = 30,
        working_ttl: float | None = 24 * 3600.0,
        min_bm25_share: float = 0.3,
        min_cosine: float | None = None,
        min_cosine_alone: float | None = None,
        checkpoint_bytes: int = 64 << 20,
        policy: Policy | None = None,
    ) -> None:
        from trimem.embedders import resolve_embedder

        self._lock = threading.RLock()
        self.policy = policy if policy is not None else Policy()
        # Recall hits counted in the engine at once, logged with the next write (OpTouch).
        self._touched: tuple[list[int], list[int], list[int]] = ([], [], [])  # episodes, knowledge, mentions
        self._touched_at = 0
        self.embedder = resolve_embedder(embedder)
        self.dim = self.embedder.dim if self.embedder is not None else 0
        self.tz = tz
        self.rewriter: Rewriter = rewriter or RuleRewriter()
        self.extractor: Extractor | None = extractor
        self.min_bm25_share = min_bm25_share
        self.min_cosine = min_cosine if min_cosine is not None else 0.3
        # A hit that shares no keyword with the question rests on similarity alone; it must be
        # close (a greeting is never "a bit similar" enough to stand in for an answer).
        self.min_cosine_alone = min_cosine_alone if min_cosine_alone is not None else 0.6
        self._working_capacity = working_capacity
        self._working_ttl = working_ttl
        # One graph per user (namespace): every search is within one user's memory, so it walks
        # only that user's graph.
        self._episode_index = HybridIndex(self.dim, partition_by_namespace=True)
        self._knowledge_index = HybridIndex(self.dim, partition_by_namespace=True)
        self._user_last: dict[tuple[str, str], int] = {}  # newest episode id per (agent, user)
        self._cursors: dict[tuple[str, str], int] = {}
        self._working: dict[str, WorkingMemory] = {}
        self._saved_working: dict[str, OpWorking] = {}  # sessions the caller persisted
        self._last_id = 0
        self.facts = Facts(self)
        self.knowledge = KnowledgeBase(self)
        self._reflector: Reflector | None = None
        self._perceptual: PerceptualMemory | None = None
        self._graph: MemoryGraph | None = None
        self._graph_cursor = 0
        self._graph_facts: dict[tuple[str, str, str], str] = {}
        self._store: Store | None = None
        self.checkpoint_bytes = checkpoint_bytes
        self.path = None if path is None else os.fspath(path)
        if self.path is not None:
            self._open(self.path, durability)

    # -- store ------------------------------------------------------------------------------------

    def _open(self, path: str, durability: Durability) -> None:
        if os.path.exists(path) and not os.path.isdir(path):
            raise StoreError(f"{path} exists and is not a folder")
        self._store = Store(path, durability=durability)
        try:
            self._load(path)
        except BaseException:
            self._store.close()
            self._store = None
            raise

    def _meta(self) -> OpMeta:
        return OpMeta(embedder=self.embedder.name if self.embedder is not None else None, dim=self.dim)

    def _check_meta(self, meta: OpMeta, path: str) -> None:
        mine = self._meta()
        if meta != mine:
            raise EmbedderMismatchError(
                f"{path} was built with embedder {meta.embedder!r} (dim {meta.dim}), but this "
                f"Memory uses {mine.embedder!r} (dim {mine.dim}); pass embedder= matching the store"
            )

    def _load(self, path: str) -> None:
        """Restores the latest snapshot, then replays the log written after it."""
        assert self._store is not None
        blob = self._store.take_state()
        if blob is not None:
            st = decode_state(blob)
            self._check_meta(st.meta, path)
            self._last_id = st.last_id
            self._cursors = {(a, u): i for a, u, i in st.cursors}
            self._user_last = {(a, u): i for a, u, i in st.user_last}
            self.facts._load_state(st.facts)
            self.knowledge._load_state(st.knowledge_sources)
            for w in st.working:
                self._apply(w)
            if st.graph is not None:
                from trimem.graph import MemoryGraph  # ~0.1 s of regexes: only for stores that use it

                self._graph = MemoryGraph.decode(st.graph)
                self._graph_cursor = st.graph_cursor
                self._graph_facts = {(a, u, k): v for a, u, k, v in st.graph_facts}
            if st.perceptual is not None:
                names = PerceptualMemory.index_names(st.perceptual)
                restored = {n: self._store.take_index(n) for n in names}
                missing = [n for n, i in restored.items() if i is None]
                if missing:
                    raise StoreError(f"{path}: the snapshot lacks the perceptual indexes {missing}")
                self.perceptual.load(st.perceptual, {n: i for n, i in restored.items() if i is not None})
            for name in (EPISODES, KNOWLEDGE):
                index = self._store.take_index(name)
                if index is None:
                    raise StoreError(f"{path}: the snapshot lacks the {name} index")
                setattr(self, f"_{name[:-1] if name == EPISODES else name}_index", index)
        seen_meta = blob is not None
        for payload in self._store.take_log():
            op = decode_op(payload)
            if isinstance(op, OpMeta):
                self._check_meta(op, path)
                seen_meta = True
            else:
                self._apply(op)
        if not seen_meta:
            self._commit(self._meta())

    def _state(self) -> MemoryState:
        return MemoryState(
            meta=self._meta(),
            last_id=self._last_id,
            cursors=[(a, u, i) for (a, u), i in self._cursors.items()],
            user_last=[(a, u, i) for (a, u), i in self._user_last.items()],
            facts=self.facts._state(),
            knowledge_sources=self.knowledge._state(),
            working=list(self._saved_working.values()),
            perceptual=None if self._perceptual is None else self._perceptual.state(),
            graph=None if self._graph is None else self._graph.encode(),
            graph_cursor=self._graph_cursor,
            graph_facts=[(a, u, k, v) for (a, u, k), v in self._graph_facts.items()],
        )

    def checkpoint(self) -> None:
        """Writes a snapshot and starts an empty log, so a reopen loads instead of replaying.
        Searches continue while it runs; writes wait. A no-op for an in-process memory."""
        with self._lock:
            if self._store is not None:
                extra = [] if self._perceptual is None else self._perceptual.indexes()
                self._store.checkpoint(
                    [(EPISODES, self._episode_index), (KNOWLEDGE, self._knowledge_index), *extra],
                    encode_state(self._state()),
                )
                self._touched = ([], [], [])  # the snapshot holds the counts

    def recovery(self) -> Recovery | None:
        """What opening the store found: the snapshot loaded, the log records replayed after it and
        any torn tail cut from a crash (``None`` for an in-process memory).

        >>> Memory(embedder=None).recovery() is None
        True
        """
        if self._store is None:
            return None
        return msgspec.convert(self._store.recovery(), Recovery)

    def purge(self) -> None:
        """Compacts the store so that nothing forgotten remains in the folder: a fresh snapshot
        without it, and the log and older snapshot that held it deleted."""
        self.checkpoint()

    def _commit(self, op: Op) -> None:
        """Writes `op` to the log (when there is one), then applies it."""
        self._commit_many([op])

    def _commit_many(self, ops: list[Op]) -> dict[int, int]:
        """Writes ops in one log write (one fsync; if it fails, none is written), then applies
        them. Returns, for retained episodes that duplicated one already stored, that one's id."""
        with self._lock:
            if self._store is not None and ops and all(isinstance(op, OpRetain) for op in ops):
                duplicates = self._commit_retains(ops)
            else:
                if self._store is not None:
                    self._log(ops)
                duplicates = self._apply_all(ops)
            if self._store is not None and self._store.log_bytes >= self.checkpoint_bytes:
                try:
                    self.checkpoint()
                except StoreError as e:
                    # The write itself is in the log and applied: report the checkpoint, not the
                    # write. (If the store can no longer take writes, the next write says so.)
                    log.warning("automatic checkpoint failed, the log keeps growing: %s", e)
            return duplicates

    def _apply_all(self, ops: list[Op]) -> dict[int, int]:
        duplicates: dict[int, int] = {}
        for op in ops:
            if isinstance(op, OpRetain):
                duplicates.update(self._apply_retain(op))
            else:
                self._apply(op)
        return duplicates

    def _log(self, ops: list[Op], *, deferred: bool = False) -> tuple[int | None, OpTouch | None]:
        """Writes the pending use counts and `ops` in one log write (with `deferred`, handed to
        the fsync thread: returns its ticket). Returns the counts it took; if the write fails
        they stay pending for the next one."""
        assert self._store is not None
        touch = self._take_touches()
        payloads = ([] if touch is None else [encode_op(touch)]) + [encode_op(op) for op in ops]
        try:
            if deferred:
                return self._store.append_deferred(payloads), touch
            if payloads:
                self._store.append_many(payloads)
            return None, touch
        except BaseException:
            self._restore_touches(touch)
            raise

    def _commit_retains(self, ops: list[Op]) -> dict[int, int]:
        """Retains are written to the log, then indexed while the store's fsync thread syncs
        them (indexing and fsync take about as long, so a durable retain costs one, not both).
        The call returns once the log is durable; if the fsync fails the log no longer holds
        them, and they are taken back out of the index before the error is raised. A duplicate's
        mention is counted only once the log is durable, so a failed write reinforces nothing."""
        assert self._store is not None
        ticket, touch = self._log(ops, deferred=True)
        assert ticket is not None
        users = {(e.agent_id, e.user_id) for op in ops if isinstance(op, OpRetain) for e in op.episodes}
        last = {u: self._user_last.get(u) for u in users}  # only what an undo must restore
        added: list[int] = []
        duplicates: dict[int, int] = {}
        try:
            for op in ops:
                assert isinstance(op, OpRetain)
                duplicates.update(self._apply_retain(op, reinforce=False))
                added.extend(e.id for e in op.episodes)
        finally:
            try:
                self._store.settle_deferred(ticket)
            except BaseException:
                self._restore_touches(touch)
                self._episode_index.delete(added, missing_ok=True)
                for u, i in last.items():
                    if i is None:
                        self._user_last.pop(u, None)
                    else:
                        self._user_last[u] = i
                raise
        self._reinforce(ops, duplicates)
        return duplicates

    def _reinforce(self, ops: list[Op], duplicates: dict[int, int]) -> None:
        """Counts a mention of each duplicated episode at its duplicate's time, as indexing
        with `reinforce=True` would have (replaying the log does exactly that)."""
        if not duplicates:
            return
        by_time: dict[int, list[int]] = {}
        for op in ops:
            assert isinstance(op, OpRetain)
            for e in op.episodes:
                if e.id in duplicates:
                    by_time.setdefault(e.timestamp, []).append(duplicates[e.id])
        for at, ids in by_time.items():
            self._episode_index.mention(ids, at)

    def _take_touches(self) -> OpTouch | None:
        """The pending use counts as one op (or none), handed to the next write."""
        eps, kn, mentioned = self._touched
        if not eps and not kn and not mentioned:
            return None
        self._touched = ([], [], [])
        return OpTouch(episode_ids=eps, knowledge_ids=kn, at=self._touched_at, episode_mentions=mentioned)

    def _restore_touches(self, touch: OpTouch | None) -> None:
        if touch is not None:
            self._touched[0].extend(touch.episode_ids)
            self._touched[1].extend(touch.knowledge_ids)
            self._touched[2].extend(touch.episode_mentions)

    def _touch(
        self, episode_ids: list[int], knowledge_ids: list[int], at: int, episode_mentions: list[int] | None = None
    ) -> None:
        """Counts one use of each recalled item (and one mention of each of `episode_mentions`):
        in the engine now, in the log with the next write (or once `policy.touch_flush` are
        pending). A crash can lose the counts of the last few recalls, never a write."""
        mentioned = episode_mentions or []
        with self._lock:
            self._apply_touch(
                OpTouch(episode_ids=episode_ids, knowledge_ids=knowledge_ids, at=at, episode_mentions=mentioned)
            )
            if self._store is None:
                return
            self._touched[0].extend(episode_ids)
            self._touched[1].extend(knowledge_ids)
            self._touched[2].extend(mentioned)
            self._touched_at = max(self._touched_at, at)
            if sum(map(len, self._touched)) >= self.policy.touch_flush:
                self.flush_touches()

    def flush_touches(self) -> None:
        """Writes the pending use counts to the log now."""
        with self._lock:
            if self._store is not None:
                self._log([])

    def _apply_touch(self, op: OpTouch) -> None:
        if op.episode_ids:
            self._episode_index.touch(op.episode_ids, op.at)
        if op.knowledge_ids:
            self._knowledge_index.touch(op.knowledge_ids, op.at)
        if op.episode_mentions:
            self._episode_index.mention(op.episode_mentions, op.at)

    def _apply(self, op: Op) -> None:
        if isinstance(op, OpRetain):
            self._apply_retain(op)
        elif isinstance(op, OpTouch):
            self._apply_touch(op)
        elif isinstance(op, (OpPerceptRegister, OpPerceptAdd, OpPerceptDelete)):
            self.perceptual.apply(op)
        elif isinstance(op, OpKnowledge):
            self._last_id = max([self._last_id, *(d.id for d in op.docs)])
            self.knowledge._apply(op)
        elif isinstance(op, OpFact):
            self.facts._apply_fact(op)
        elif isinstance(op, OpAlias):
            self.facts._apply_alias(op)
        elif isinstance(op, OpPin):
            self.facts._apply_pin(op)
        elif isinstance(op, OpForget):
            self._apply_forget(op)
        elif isinstance(op, OpCursor):
            self._cursors[(op.agent_id, op.user_id)] = op.episode_id
        elif isinstance(op, OpWorking):
            self._apply_working(op)

    @property
    def perceptual(self) -> PerceptualMemory:
        """Perceptual memory: images, audio, … in their own vector spaces, each with your
        encoder (see :mod:`trimem.perceptual`); written to this memory's log and snapshots.
        Encoders are code, not data: register them again after reopening."""
        if self._perceptual is None:
            with self._lock:
                if self._perceptual is None:
                    self._perceptual = PerceptualMemory(lock=self._lock, commit=self._commit)
        return self._perceptual

    @property
    def graph(self) -> MemoryGraph:
        """The memory graph: entities and relations extracted (by rules) from episodes and
        facts, scoped per user ("agent/user"); see :mod:`trimem.graph`. Built on first read and
        brought up to date with new episodes and facts on each read (extraction costs about
        0.3 ms an episode, so retain never waits for it); kept in snapshots."""
        with self._lock:
            if self._graph is None:
                from trimem.graph import MemoryGraph  # ~0.1 s of regexes to import: only when used

                self._graph = MemoryGraph()
            self._sync_graph(self._graph)
            return self._graph

    def _sync_graph(self, g: MemoryGraph) -> None:
        if self._last_id > self._graph_cursor:  # ids only grow: nothing newer, nothing to read
            ids = self._episode_index.ids()
            new = np.sort(ids[ids > self._graph_cursor])
            for r in self._episode_index.get_many(new):
                if r is not None:
                    e = episode_from_record(r)
                    g.add_episode(e.id, e.text, e.timestamp, scope=r.namespace, role=e.role, details=False)
            self._graph_cursor = self._last_id
        current = {fk: f.value for fk, f in self.facts._current.items()}
        for (a, u, key), fact in self.facts._current.items():
            if self._graph_facts.get((a, u, key)) != fact.value:
                g.add_fact(key, fact.value, scope=f"{a}/{u}", timestamp=fact.updated_at)
        for a, u, key in set(self._graph_facts) - set(current):
            g.remove_fact(key, scope=f"{a}/{u}")
        self._graph_facts = current

    def close(self) -> None:
        """Stops the reflector and closes the store (flushing buffered writes; a log of more
        than a few MB is first folded into a snapshot so the next open is fast)."""
        self.stop_reflector()
        if self._store is not None:
            with self._lock:
                try:
                    self.flush_touches()
                    if self._store.log_bytes >= min(self.checkpoint_bytes, 4 << 20):
                        self.checkpoint()
                finally:
                    self._store.close()
                    self._store = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------------------------------

    def _next_id(self) -> int:
        self._last_id += 1
        return self._last_id

    @staticmethod
    def _check_text(text: object) -> str:
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a string, got {type(text).__name__}")
        if not text or text.isspace():
            raise InvalidArgumentError("text is empty; there is nothing to remember")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidArgumentError(f"text has {len(text)} characters, over the limit of {MAX_TEXT_CHARS}; split it")
        return text

    def _embed(self, texts: list[str]) -> np.ndarray | None:
        if self.embedder is None or not texts:
            return None
        vecs = np.ascontiguousarray(self.embedder(texts), dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise InvalidArgumentError(
                f"embedder {self.embedder.name!r} returned shape {vecs.shape}, expected ({len(texts)}, {self.dim})"
            )
        return vecs

    def _vectors_from(self, data: bytes | None, n: int) -> np.ndarray | None:
        if data is None:
            return None
        return np.frombuffer(data, dtype=np.float32).reshape(n, self.dim)

    def _knowledge_doc(self, doc_id: int) -> KnowledgeDoc | None:
        rec = self._knowledge_index.get(doc_id)
        return None if rec is None else decode_knowledge(rec.payload)

    # -- retain -----------------------------------------------------------------------------------

    @staticmethod
    def _search_text(e: Episode) -> str:
        """What the indexes see of an episode: its text plus topic, keywords and tool call."""
        if not e.topic and not e.keywords and e.tool is None:
            return e.text
        parts = [e.text]
        if e.topic:
            parts.append(e.topic)
        parts.extend(e.keywords)
        if e.tool is not None:
            parts.append(f"{e.tool.name} {' '.join(f'{k} {v}' for k, v in e.tool.args.items())}")
            parts.append(e.tool.result[:2000])
        return "\n".join(parts)

    def _episode_fields(
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
    ) -> dict[str, Any]:
        """Validates one item and returns the fields of its Episode (all but the id)."""
        check_id("agent_id", agent_id)
        check_id("user_id", user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        if not (isinstance(importance, (int, float)) and 0.0 <= importance <= 1.0):
            raise InvalidArgumentError(f"importance must be a number in [0, 1], got {importance!r}")
        if isinstance(keywords, str):
            raise InvalidArgumentError("keywords must be a list of strings")
        if tool is not None and not isinstance(tool, ToolCall):
            if not isinstance(tool, Mapping) or "name" not in tool:
                raise InvalidArgumentError("tool must be a mapping with 'name' (and optional 'args', 'result')")
            tool = ToolCall(
                name=str(tool["name"]), args=dict(tool.get("args") or {}), result=str(tool.get("result") or "")
            )
        return dict(
            agent_id=agent_id,
            user_id=user_id,
            text=self._check_text(text),
            timestamp=now_micros(timestamp),
            session_id=session_id,
            role=str(role),
            topic=topic,
            keywords=[str(k) for k in keywords] if keywords else [],
            importance=float(importance),
            metadata=dict(metadata) if metadata else {},
            tool=tool,
        )

    def retain(
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
    ) -> Episode:
        """Appends one event to episodic memory; visible to the next recall at once."""
        return self.retain_many(
            [
                dict(
                    text=text,
                    user_id=user_id,
                    agent_id=agent_id,
                    session_id=session_id,
                    role=role,
                    topic=topic,
                    keywords=keywords,
                    timestamp=timestamp,
                    importance=importance,
                    metadata=metadata,
                    tool=tool,
                )
            ]
        )[0]

    def retain_many(self, items: Iterable[Mapping[str, Any]], *, vectors: np.ndarray | None = None) -> list[Episode]:
        """Appends many events in one batch (one log write, one fsync). `vectors` skips the
        embedder when the caller has them already (float32, one row per item).

        With `policy.dedup` (the default) an item that near-duplicates one of the user's
        episodes (same normalised text, or overlapping words and — with an embedder — a close
        vector) is not stored again: that episode is reinforced (one more mention, last use
        now) and returned in the item's place."""
        with _collector_paused():
            return self._retain_drafts([self._episode_fields(**it) for it in items], vectors)

    def _retain_drafts(self, drafts: list[dict[str, Any]], vectors: np.ndarray | None) -> list[Episode]:
        """`retain_many` of validated fields (consolidation, whose items are checked already,
        starts here)."""
        if not drafts:
            return []
        if vectors is not None:
            if self.embedder is None:
                raise InvalidArgumentError("this memory has no embedder (embedder=None) and takes no vectors")
            vectors = np.ascontiguousarray(vectors)
            if vectors.dtype != np.float32 or vectors.shape != (len(drafts), self.dim):
                raise InvalidArgumentError(
                    f"vectors must be float32 of shape ({len(drafts)}, {self.dim}), got {vectors.dtype} {vectors.shape}"
                )
        elif self.embedder is not None:
            vectors = self._embed([self._search_text(Episode(id=0, **f)) for f in drafts])
        with self._lock:
            first = self._last_id + 1
            episodes = [Episode(id=first + i, **f) for i, f in enumerate(drafts)]
            self._last_id += len(episodes)
            p = self.policy
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
                dups = self._commit_many(ops)
            except BaseException:
                self._last_id -= len(episodes)
                raise
        if dups:
            found = {
                r.id: episode_from_record(r)
                for r in self._episode_index.get_many(sorted(set(dups.values())))
                if r is not None
            }
            episodes = [found.get(dups[e.id], e) if e.id in dups else e for e in episodes]
        return episodes

    def add(
        self,
        content: str,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        timestamp: TimeLike | None = None,
        classifier: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Placement:
        """Puts `content` in the layer it belongs to and says where and why: conceptual
        knowledge → semantic (a fact when key-value shaped, else a knowledge document private
        to the user), a dated experience → episodic, transient state → working (needs
        `session_id`; without one it becomes an episode). The router's rules read English and
        Chinese; `classifier` plugs in your own (an LLM through :class:`trimem.router.LLMRouter`);
        `context={"layer": ...}` forces a layer.

        >>> mem = Memory(embedder=None)
        >>> mem.add("我的邮箱是 a@b.com", user_id="u1").item.key
        'email'
        """
        from trimem.router import route

        check_id("user_id", user_id)
        r = route(self._check_text(content), classifier=classifier, context=context)
        item: Any
        if r.layer == "semantic" and r.kind == "fact" and r.key and r.value:
            item = self.facts.set(r.key, r.value, user_id=user_id, agent_id=agent_id, at=timestamp)
        elif r.layer == "semantic":
            item = self.knowledge.add(
                content, agent_id=agent_id, user_id=user_id, timestamp=timestamp, metadata={"importance": r.importance}
            )
        elif r.layer == "working" and session_id is not None:
            item = self.add_turn(
                session_id,
                "user",
                content,
                user_id=user_id,
                agent_id=agent_id,
                importance=r.importance,
                timestamp=timestamp,
            )
        else:
            if r.layer == "working":
                r = msgspec.structs.replace(
                    r, layer="episodic", kind="episode", reason=r.reason + "; no session to hold it, kept as an episode"
                )
            item = self.retain(
                content,
                user_id=user_id,
                agent_id=agent_id,
                session_id=session_id,
                timestamp=timestamp,
                importance=r.importance,
            )
        return Placement(layer=r.layer, kind=r.kind, importance=r.importance, reason=r.reason, item=item)

    def _apply_retain(self, op: OpRetain, *, reinforce: bool = True) -> dict[int, int]:
        """Indexes the episodes; returns {id: id of the stored episode it duplicated}. With
        `reinforce=False` the duplicated episodes' mentions are left to the caller."""
        eps = op.episodes
        texts = [self._search_text(e) for e in eps]
        dup_of = self._episode_index.add(
            ids=np.fromiter((e.id for e in eps), dtype=np.uint64, count=len(eps)),
            texts=texts,
            timestamps=np.fromiter((e.timestamp for e in eps), dtype=np.int64, count=len(eps)),
            namespaces=[f"{e.agent_id}/{e.user_id}" for e in eps],
            vectors=self._vectors_from(op.vectors, len(eps)),
            sessions=[e.session_id for e in eps],
            payloads=[episode_payload(e, t) for e, t in zip(eps, texts)],
            importance=[e.importance for e in eps],
            dedup=op.dedup,
            reinforce=reinforce,
        )
        duplicates: dict[int, int] = {}
        for e, d in zip(eps, dup_of or itertools.repeat(None)):
            if d is None:
                self._user_last[(e.agent_id, e.user_id)] = e.id
            else:
                duplicates[e.id] = d
        self._last_id = max(self._last_id, max(e.id for e in eps))
        return duplicates

    def get(self, episode_id: int) -> Episode:
        """The stored episode; raises UnknownIdError when there is none."""
        rec = self._episode_index.get(int(episode_id))
        if rec is None:
            raise UnknownIdError(f"no episode with id {episode_id}")
        return episode_from_record(rec)

    def _episode_ids(
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
        ids = self._episode_index.ids(namespace=episode_namespace(agent_id, user_id), session=session_id, time_range=tr)
        return [int(i) for i in ids]

    def episodes(
        self,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
    ) -> list[Episode]:
        """A user's episodes (optionally one session's, or those in `[start, end)`), oldest first."""
        ids = self._episode_ids(agent_id, user_id, session_id=session_id, time_range=time_range)
        eps = [episode_from_record(r) for r in self._episode_index.get_many(ids) if r is not None]
        return sorted(eps, key=lambda e: (e.timestamp, e.id))

    # -- forget -----------------------------------------------------------------------------------

    def forget(
        self,
        episode_ids: Iterable[int] = (),
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
        everything: bool = False,
    ) -> int:
        """Deletes some of a user's episodes — by id, by session, by time range `[start, end)`
        (session and range together select their intersection) — or, with `everything=True`,
        all of the user's episodes, facts with their history, private knowledge and reflect
        cursor (the right to be forgotten). Ids of other users raise `UnknownIdError` and
        nothing changes. Returns how many episodes went. Facts learnt from a forgotten episode
        keep their value but no longer cite it. Call :meth:`purge` afterwards to remove every
        trace from the folder.
        """
        ns = episode_namespace(agent_id, user_id)
        ids = [int(i) for i in episode_ids]
        for i in ids:
            rec = self._episode_index.get(i)
            if rec is None or rec.namespace != ns:
                raise UnknownIdError(f"no episode with id {i} for user {user_id!r} of agent {agent_id!r}")
        if everything:
            ids += self._episode_ids(agent_id, user_id)
        elif session_id is not None or time_range is not None:
            ids += self._episode_ids(agent_id, user_id, session_id=session_id, time_range=time_range)
        elif not ids:
            raise InvalidArgumentError(
                "forget needs episode ids, session_id, time_range or everything=True (nothing was deleted)"
            )
        ids = sorted(set(ids))
        knowledge = self.knowledge._private_ids(agent_id, user_id) if everything else []
        ops: list[Op] = []
        if everything and self._perceptual is not None:
            percepts = self._perceptual.forget_user_op(ns)  # in the same log write as the rest
            if percepts is not None:
                ops.append(percepts)
        if ids or everything:
            ops.append(
                OpForget(episode_ids=ids, knowledge_ids=knowledge, users=[(agent_id, user_id)] if everything else [])
            )
            self._commit_many(ops)
        return len(ids)

    def _apply_forget(self, op: OpForget) -> None:
        self._episode_index.delete(op.episode_ids, missing_ok=True)
        if self._graph is not None:
            self._graph.remove_sources(op.episode_ids)
            for a, u in op.users:
                self._graph.clear(scope=f"{a}/{u}")
        # The graph's copy of the facts goes with them (it is saved with every checkpoint).
        users, keys = set(map(tuple, op.users)), set(map(tuple, op.facts))
        for a, u, key in [fk for fk in self._graph_facts if fk[:2] in users or fk in keys]:
            if self._graph is not None and (a, u) not in users:
                self._graph.remove_fact(key, scope=f"{a}/{u}")
            del self._graph_facts[(a, u, key)]
        self.knowledge._drop(op.knowledge_ids)
        self.facts._forget_sources(op.episode_ids)
        self.facts._remove_keys(op.facts)
        for agent_id, user_id in op.users:
            self.facts._remove_user(agent_id, user_id)
            self._cursors.pop((agent_id, user_id), None)
            self._user_last.pop((agent_id, user_id), None)

    # -- working memory ---------------------------------------------------------------------------

    def working(self, session_id: str) -> WorkingMemory:
        """The session's working memory (created on first use; restored from the store if it
        was saved with :meth:`save_working`)."""
        wm = self._working.get(session_id)
        if wm is None:
            wm = self._working[session_id] = WorkingMemory(
                session_id, capacity=self._working_capacity, ttl=self._working_ttl
            )
        return wm

    def save_working(self, session_id: str) -> None:
        """Persists the session's working memory (turns and variables, which must be plain data:
        str, numbers, bools, None, lists and dicts) so a reopened store restores it. Working
        memory is in-process by default; call this where your agent wants it to survive."""
        wm = self.working(session_id)
        op = OpWorking(session_id=wm.session_id, turns=wm.recent(), vars=dict(wm.vars))
        try:
            encode_op(op)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"working memory of {session_id!r} holds a value that is not plain data: {e}"
            ) from None
        self._commit(op)

    def _apply_working(self, op: OpWorking) -> None:
        if op.turns is None:
            self._saved_working.pop(op.session_id, None)
            wm = self._working.pop(op.session_id, None)
            if wm is not None:
                wm.reset()
            return
        self._saved_working[op.session_id] = op
        wm = self.working(op.session_id)
        wm.reset()
        for t in op.turns:
            wm.add_turn(t.role, t.text, importance=t.importance, timestamp=t.timestamp)
        wm.vars.update(op.vars)

    def add_turn(
        self,
        session_id: str,
        role: str,
        text: str,
        *,
        user_id: str,
        agent_id: str = "default",
        importance: float | None = None,
        timestamp: TimeLike | None = None,
    ) -> Turn:
        """Adds a turn to the session's working memory. Without an `importance` the router's
        rules estimate one. When the session passes its bound (`working_capacity`), the turns
        pushed out are consolidated: the important ones become episodes, the rest expire."""
        check_id("user_id", user_id)
        text = self._check_text(text)
        if importance is None:
            from trimem.router import route

            importance = route(text).importance  # the rules' estimate (one shared router)
        elif not (isinstance(importance, (int, float)) and 0.0 <= importance <= 1.0):
            raise InvalidArgumentError(f"importance must be a number in [0, 1], got {importance!r}")
        wm = self.working(session_id)
        turn = wm.add_turn(role, text, importance=float(importance), timestamp=now_micros(timestamp))
        if wm.evicted:
            self.consolidate(session_id, user_id=user_id, agent_id=agent_id, everything=False)
        return turn

    def consolidate(
        self, session_id: str, *, user_id: str, agent_id: str = "default", everything: bool = True
    ) -> Consolidation:
        """Turns the session's important working items (importance ≥
        `policy.consolidate_importance`) into episodes with their session and time; the rest
        expire. By default all of them (as at session end); `everything=False` only those the
        capacity bound pushed out. Variables stay."""
        check_id("user_id", user_id)
        return lifecycle.consolidate(self, session_id, user_id=user_id, agent_id=agent_id, everything=everything)

    def forget_expired(
        self, now: TimeLike | None = None, *, user_id: str | None = None, agent_id: str = "default"
    ) -> dict[str, int]:
        """Applies the retention policy (`policy.retention_days` per layer, longer for
        important or reinforced items, counted from the last use) through the same hard-delete
        path as :meth:`forget`; for one user, or everyone. Returns how many items went per layer."""
        return lifecycle.forget_expired(self, now_micros(now), user_id=user_id, agent_id=agent_id)

    def end_session(
        self, session_id: str, *, user_id: str | None = None, agent_id: str = "default"
    ) -> Consolidation | None:
        """Ends the session: with `user_id`, its important working items are consolidated into
        episodes first; then its working memory is reset (and its saved copy dropped)."""
        result = None
        if user_id is not None and session_id in self._working:
            result = self.consolidate(session_id, user_id=user_id, agent_id=agent_id)
        if session_id in self._saved_working:
            self._commit(OpWorking(session_id=session_id, turns=None))
        wm = self._working.pop(session_id, None)
        if wm is not None:
            wm.reset()
        return result

    # -- recall -----------------------------------------------------------------------------------

    def _bm25_floor(self, index: HybridIndex, text: str) -> float:
        """The least BM25 score a hit needs: `min_bm25_share` of what a document of average
        length holding each known query term once would score. Relative to the query's own idf
        mass, so it means the same in a tiny store and a huge one."""
        n = len(index)
        if n == 0 or self.min_bm25_share <= 0:
            return 0.0
        mass = 0.0
        for term in set(tokenize(text)):
            df = index.doc_freq(term)
            if df:
                mass += math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return self.min_bm25_share * mass / (1.0 + BM25_K1)

    def _strong(self, hits: Hits) -> list[int]:
        """Positions of hits that pass the floor for vector-only matches."""
        return [i for i in range(len(hits)) if hits.bm25_ranks[i] > 0 or hits.vector_scores[i] >= self.min_cosine_alone]

    def _scored(self, hits: Hits, i: int) -> Scored:
        b, v = float(hits.bm25_scores[i]), float(hits.vector_scores[i])
        score, decay, imp = float(hits.scores[i]), float(hits.decay[i]), float(hits.importance[i])
        acc, men = int(hits.accesses[i]), int(hits.mentions[i])
        return Scored(
            score=score,
            bm25=None if b != b else b,
            cosine=None if v != v else v,
            bm25_rank=int(hits.bm25_ranks[i]),
            vector_rank=int(hits.vector_ranks[i]),
            decay=decay,
            importance=imp,
            base_importance=float(hits.base_importance[i]),
            accesses=acc,
            mentions=men,
            explain=explain(score=score, decay=decay, importance=imp, accesses=acc, mentions=men, policy=self.policy),
        )

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
    ) -> list[RecalledEpisode]:
        """Hybrid search over one user's episodes (no query rewriting), ranked by relevance,
        time decay and effective importance (see `policy`; each hit's `explain` gives the
        terms). `touch=True` counts the hits as used (recall does)."""
        ns = episode_namespace(agent_id, user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        if k < 1:
            raise InvalidArgumentError(f"k must be at least 1, got {k}")
        tr = to_micros_range(time_range)
        if vector is None and mode != "bm25":
            vecs = self._embed([query])
            vector = None if vecs is None else vecs[0]
        use_mode: SearchMode = mode if vector is not None or mode == "bm25" else "bm25"
        at = now_micros(now)
        hits = self._episode_index.search(
            text=query,
            vector=vector,
            k=k,
            namespace=ns,
            time_range=tr,
            session=session_id,
            mode=use_mode,
            min_bm25=self._bm25_floor(self._episode_index, query),
            min_cosine=self.min_cosine,
            **self.policy.search_terms("episodic", at),
        )
        keep = self._strong(hits)
        recs = self._episode_index.get_many(hits.ids[keep])
        found = [
            RecalledEpisode(episode_from_record(r), self._scored(hits, i)) for i, r in zip(keep, recs) if r is not None
        ]
        if touch and found:
            self._touch([r.episode.id for r in found], [], at)
        return found

    def _search_knowledge(
        self,
        query: str,
        vector: np.ndarray | None,
        *,
        agent_id: str,
        user_id: str | None,
        k: int,
        now: int,
        before: int | None = None,
    ) -> list[RecalledKnowledge]:
        if vector is None:
            vecs = self._embed([query])
            vector = None if vecs is None else vecs[0]
        found: list[RecalledKnowledge] = []
        spaces = [knowledge_namespace(agent_id, None)]
        if user_id is not None:
            spaces.append(knowledge_namespace(agent_id, user_id))
        for ns in spaces:
            hits = self._knowledge_index.search(
                text=query,
                vector=vector,
                k=k,
                namespace=ns,
                mode="hybrid" if vector is not None else "bm25",
                min_bm25=self._bm25_floor(self._knowledge_index, query),
                min_cosine=self.min_cosine,
                time_range=None if before is None else (-(2**63), before),
                **self.policy.search_terms("semantic", now),
            )
            keep = self._strong(hits)
            for i, r in zip(keep, self._knowledge_index.get_many(hits.ids[keep])):
                if r is not None:
                    found.append(RecalledKnowledge(decode_knowledge(r.payload), self._scored(hits, i)))
        found.sort(key=lambda r: (-r.scored.score, r.doc.id))
        return found[:k]

    def _with_fact_sources(
        self, episodes: list[RecalledEpisode], profile: list[Any], intent: MemoryIntent, k: int, namespace: str
    ) -> list[RecalledEpisode]:
        """Puts first the episodes that are the provenance of the facts the question touches:
        "the database we decided on" means the decision, whatever else shares its words."""
        touched = [f for f in profile if f.key in intent.keys]
        first: list[RecalledEpisode] = []
        found = {r.episode.id: r for r in episodes}
        for fact in touched:
            for sid in reversed(fact.source):
                r = found.pop(sid, None)
                if r is None:
                    rec = self._episode_index.get(sid)
                    if rec is None or rec.namespace != namespace:  # a source never crosses scopes
                        continue
                    ep = episode_from_record(rec)
                    lo, hi = intent.time_range or (ep.timestamp, ep.timestamp + 1)
                    if not lo <= ep.timestamp < hi:
                        continue
                    r = RecalledEpisode(ep, Scored(score=0.0))
                first.append(RecalledEpisode(r.episode, r.scored, via_fact=fact.key))
        if not first:
            return episodes
        rest = [r for r in episodes if r.episode.id in found]
        return (first + rest)[:k]

    def recall(
        self,
        query: str,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        k: int = 5,
        k_knowledge: int = 3,
        now: TimeLike | None = None,
        tz: tzinfo | None = None,
        same_session: bool = False,
        n_turns: int = 5,
        layered: bool = False,
        enough: Callable[[str, list[Turn]], bool] | None = None,
        rerank: Callable[[str, list[str]], Sequence[float]] | None = None,
        rerank_depth: int = 3,
        touch: bool = True,
        as_of: TimeLike | None = None,
    ) -> RecallBundle:
        """Reads touched and pinned facts, searches episodes (time-filtered by the question)
        and knowledge (never time-filtered), and gathers the session's working memory. What
        it returns counts as used (reinforcing it, see `policy`) unless `touch=False` (for
        evaluations and other read-only looks).

        `layered=True` consults the session's working memory first and long-term memory only
        when that is not enough: by default, when the session's turns do not contain every
        keyword of the question (`enough(query, matching_turns)` decides otherwise).
        `rerank(query, texts) -> scores` (a cross-encoder, say) reorders the best
        `rerank_depth · k` fused episode candidates; its score lands in each hit's `explain`.
        `as_of=T` answers with what the agent knew at T: episodes and documents from before T,
        facts with the values they held then (nothing is counted as used).
        """
        t0 = time.perf_counter()
        tz = tz or self.tz
        query = self._check_text(query)
        episode_namespace(agent_id, user_id)
        if rerank_depth < 1:
            raise InvalidArgumentError(f"rerank_depth must be at least 1, got {rerank_depth}")
        at = now_micros(now)
        cutoff = None if as_of is None else to_micros(as_of)
        if cutoff is not None:
            touch = False
            if now is None:
                at, now = cutoff, cutoff  # "last week" means the week before T
        intent: MemoryIntent = self.rewriter(query, now=as_datetime(now, tz), tz=tz, aliases=self.facts.aliases())
        text = intent.text or query
        time_range = intent.time_range
        if cutoff is not None:
            lo, hi = time_range if time_range is not None else (-(2**63), cutoff)
            time_range = (lo, min(hi, cutoff))
        working, wvars = [], {}
        wm = self._working.get(session_id) if session_id is not None else None
        if wm is not None:
            working, wvars = wm.recent(n_turns), dict(wm.vars)
        layers = ["working"] if wm is not None else []
        if layered and wm is not None:
            matched = wm.matching(text)
            done = enough(query, matched) if enough is not None else _covers(text, matched)
            if done:
                working = matched[-n_turns:] if n_turns > 0 else []
                ms0 = (time.perf_counter() - t0) * 1e3
                return RecallBundle(
                    query=query,
                    intent=intent,
                    working=working,
                    working_vars=wvars,
                    timings={"working": ms0, "total": ms0},
                    tz=tz,
                    layers=layers,
                )
        t1 = time.perf_counter()
        seen: set[str] = set()
        profile = []
        for f in self.facts.pinned(user_id=user_id, agent_id=agent_id):
            profile.append(f)
            seen.add(f.key)
        for key in intent.keys:
            fact = self.facts.get(key, user_id=user_id, agent_id=agent_id)
            if fact is not None and key not in seen:
                profile.append(fact)
                seen.add(key)
        if cutoff is not None:
            profile = self.facts._as_of_many(profile, cutoff, intent.keys, user_id=user_id, agent_id=agent_id)
        t2 = time.perf_counter()
        vecs = self._embed([text])
        vector = None if vecs is None else vecs[0]
        t3 = time.perf_counter()
        depth = k * rerank_depth if rerank is not None else k
        episodes = self.search(
            text,
            user_id=user_id,
            agent_id=agent_id,
            k=depth,
            time_range=time_range,
            session_id=session_id if same_session else None,
            vector=vector,
            now=at,
        )
        if rerank is not None:
            episodes = _reranked(rerank, query, episodes, k)
        episodes = self._with_fact_sources(episodes, profile, intent, k, episode_namespace(agent_id, user_id))
        t4 = time.perf_counter()
        knowledge = self._search_knowledge(
            text, vector, agent_id=agent_id, user_id=user_id, k=k_knowledge, now=at, before=cutoff
        )
        t5 = time.perf_counter()
        if touch and (episodes or knowledge):
            self._touch([r.episode.id for r in episodes], [r.doc.id for r in knowledge], at)

        def ms(a: float, b: float) -> float:
            return (b - a) * 1e3

        timings = {
            "rewrite": ms(t0, t1),
            "facts": ms(t1, t2),
            "embed": ms(t2, t3),
            "episodes": ms(t3, t4),
            "knowledge": ms(t4, t5),
            "total": ms(t0, time.perf_counter()),
        }
        return RecallBundle(
            query=query,
            intent=intent,
            profile=profile,
            episodes=episodes,
            knowledge=knowledge,
            working=working,
            working_vars=wvars,
            timings=timings,
            tz=tz,
            layers=[*layers, "semantic", "episodic"],
        )

    # -- reflect ----------------------------------------------------------------------------------

    def reflect(
        self, *, user_id: str, agent_id: str = "default", extractor: Extractor | None = None
    ) -> list[FactChange]:
        """Extracts durable facts from the user's episodes not reflected on yet and applies them
        as versioned updates. Running it again without new episodes changes nothing."""
        scope = (check_id("agent_id", agent_id), check_id("user_id", user_id))
        with self._lock:
            cursor = self._cursors.get(scope, 0)
            if self._user_last.get(scope, 0) <= cursor:
                return []
            new_ids = [i for i in self._episode_ids(agent_id, user_id) if i > cursor]
            if not new_ids:
                return []
            eps = [episode_from_record(r) for r in self._episode_index.get_many(new_ids) if r is not None]
            eps.sort(key=lambda e: (e.timestamp, e.id))
            current = {f.key: f.value for f in self.facts.list(user_id=user_id, agent_id=agent_id)}
            ex = extractor or self.extractor or RuleExtractor(aliases=_phrase_aliases(self.facts.aliases()))
            when = {e.id: e.timestamp for e in eps}
            changes: list[FactChange] = []
            for p in ex(eps, current):
                at = max((when[s] for s in p.source if s in when), default=None)
                if p.op == "delete":
                    ch = self.facts.delete(p.key, user_id=user_id, agent_id=agent_id, source=p.source, at=at)
                else:
                    assert p.value is not None
                    ch = self.facts.set(p.key, p.value, user_id=user_id, agent_id=agent_id, source=p.source, at=at)
                changes.append(
                    FactChange(
                        op=ch.op,
                        key=ch.key,
                        value=ch.value,
                        old_value=ch.old_value,
                        source=ch.source,
                        evidence=p.evidence,
                    )
                )
            self._commit(OpCursor(agent_id, user_id, max(new_ids)))
            return changes

    def start_reflector(self, *, interval: float = 5.0, extractor: Extractor | None = None) -> Reflector:
        """Runs `reflect` in a background thread for every user with new episodes."""
        with self._lock:
            if self._reflector is None:
                self._reflector = Reflector(self, interval=interval, extractor=extractor)
            return self._reflector

    def stop_reflector(self) -> None:
        if self._reflector is not None:
            self._reflector.stop()
            self._reflector = None

    def pending_reflection(self) -> list[tuple[str, str]]:
        """(agent_id, user_id) pairs with episodes reflect has not read yet."""
        return [s for s, last in self._user_last.items() if last > self._cursors.get(s, 0)]

    # -- explicit tool mode -----------------------------------------------------------------------

    def tools(self) -> list[dict[str, Any]]:
        """Function-calling schemas (OpenAI format) for the memory tools."""
        from trimem.tools import TOOL_SCHEMAS

        return [dict(s) for s in TOOL_SCHEMAS]

    def execute(self, name: str, **args: Any) -> Any:
        """Runs a memory tool call after validating its arguments against the schema."""
        from trimem.tools import execute

        return execute(self, name, args)

    def stats(
        self, *, user_id: str | None = None, agent_id: str = "default", now: TimeLike | None = None
    ) -> dict[str, Any]:
        """Counts, bytes and ages (days) per layer — for one user of `agent_id`, or the whole
        store (then with episodes per user) — plus the index statistics."""
        e, k = self._episode_index.stats(), self._knowledge_index.stats()
        out = transfer.stats(self, user_id=user_id, agent_id=agent_id, now=now_micros(now))
        out.update(
            {
                "episodes": out["episodic"]["count"],
                "knowledge": out["semantic"]["knowledge"]["count"],
                "facts": out["semantic"]["facts"],
                "sessions": len(self._working),
                "episode_index": e,
                "knowledge_index": k,
                "embedder": None if self.embedder is None else self.embedder.name,
            }
        )
        return out

    # -- sharing and export -------------------------------------------------------------------------

    def share(
        self,
        *,
        from_agent: str,
        to_agent: str,
        user_id: str,
        episode_ids: Iterable[int] | None = None,
        min_importance: float = 0.7,
        decay: float = 0.8,
        now: TimeLike | None = None,
    ) -> list[Episode]:
        """Copies a user's memories from one agent to another: episodes whose effective
        importance reaches `min_importance` (or exactly `episode_ids`), with provenance in
        `metadata["shared_from"]` and importance × `decay`. Nothing else crosses."""
        return transfer.share(
            self,
            from_agent=from_agent,
            to_agent=to_agent,
            user_id=user_id,
            episode_ids=episode_ids,
            min_importance=min_importance,
            decay=decay,
            now=now_micros(now),
        )

    def export(
        self,
        path: str | os.PathLike[str],
        *,
        user_id: str | None = None,
        agent_id: str = "default",
        now: TimeLike | None = None,
    ) -> dict[str, int]:
        """Writes every layer — of one user of `agent_id`, or the whole store — to one msgspec
        file (atomically; no pickle). Returns what it wrote."""
        with self._lock:
            return transfer.export(self, path, user_id=user_id, agent_id=agent_id, now=now_micros(now))

    def import_from(self, path: str | os.PathLike[str]) -> dict[str, int]:
        """Adds the memories of an :meth:`export` file (new ids; facts keep their history and
        cite the new episodes)."""
        return transfer.import_export(self, path)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pauses Python's cyclic garbage collector around a bulk write: a batch allocates a few
    objects per item (none in cycles), and the collector would otherwise walk every live
    object several times over a 100k batch (~10 % of its time). Restored on exit, also on error."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _covers(text: str, turns: list[Turn]) -> bool:
    """Whether the turns contain every keyword of the question (working memory is enough)."""
    wanted = set(tokenize(text, stopwords=True))
    if not turns or not wanted:
        return False
    have: set[str] = set()
    for t in turns:
        have.update(tokenize(t.text, stopwords=True))
    return wanted <= have


def _reranked(
    rerank: Callable[[str, list[str]], Sequence[float]], query: str, found: list[RecalledEpisode], k: int
) -> list[RecalledEpisode]:
    """Reorders fused candidates by a caller's reranker (ties keep the fused order)."""
    if not found:
        return found
    scores = [float(x) for x in rerank(query, [r.episode.text for r in found])]
    if len(scores) != len(found) or any(x != x for x in scores):
        raise InvalidArgumentError(
            f"rerank returned {len(scores)} scores (NaN not allowed) for {len(found)} candidates"
        )
    order = sorted(range(len(found)), key=lambda i: -scores[i])[:k]
    out = []
    for i in order:
        r = found[i]
        scored = msgspec.structs.replace(r.scored, explain={**r.scored.explain, "rerank": scores[i]})
        out.append(RecalledEpisode(r.episode, scored, r.via_fact))
    return out


def _phrase_aliases(aliases: Mapping[str, list[str]]) -> dict[str, str]:
    """Phrase → key for the extractor: aliases that name exactly one key."""
    return {w: keys[0] for w, keys in aliases.items() if len(keys) == 1}


class Reflector:
    """A background thread that reflects for every user with new episodes, every `interval` s."""

    def __init__(self, memory: Memory, *, interval: float, extractor: Extractor | None) -> None:
        if interval <= 0:
            raise InvalidArgumentError(f"interval must be positive seconds, got {interval}")
        self._memory, self._interval, self._extractor = memory, interval, extractor
        self._stop = threading.Event()
        self.runs = 0
        self.errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._loop, name="trimem-reflector", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self._interval)

    def run_once(self) -> int:
        changed = 0
        for agent_id, user_id in self._memory.pending_reflection():
            try:
                changed += len(self._memory.reflect(user_id=user_id, agent_id=agent_id, extractor=self._extractor))
            except Exception as e:  # keep reflecting for other users; the error is kept
                log.exception("reflect failed for %s/%s", agent_id, user_id)
                self.errors.append(e)
        self.runs += 1
        return changed

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
