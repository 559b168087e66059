"""`Memory`: the three layers — working, episodic, semantic — and the Recall → Retain → Reflect
lifecycle, over a backend (the embedded Rust engine and its folder store).

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

import os
from collections.abc import Iterable, Mapping
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np

from trimem.config import CHECKPOINT_BYTES, MIN_BM25_SHARE, Policy
from trimem.interop import stats as _stats
from trimem.interop import transfer
from trimem.interop.stats import Stats
from trimem.interop.transfer import Exported
from trimem.layers._shared import check_options
from trimem.layers.graph_view import GraphView
from trimem.layers.perceptual import PerceptualMemory
from trimem.layers.working import WorkingMemory
from trimem.options import EpisodeFields, RecallOptions, SearchOptions
from trimem.pipeline.assembly import assemble
from trimem.pipeline.bundle import RecallBundle
from trimem.pipeline.lifecycle import Consolidation, Expired
from trimem.pipeline.reflection import Reflector
from trimem.pipeline.routing import place
from trimem.records import Durability, Episode, FactChange, Mention, Placement, RecalledEpisode, Recovery, Turn
from trimem.reflect import Extractor
from trimem.rewrite import Rewriter
from trimem.telemetry import instrument
from trimem.timeutil import TimeLike, now_micros

if TYPE_CHECKING:
    from trimem.graph import MemoryGraph


@instrument
class Memory:
    """Three-layer agent memory: `Memory()` in process, `Memory("./folder")` an embedded store,
    `Memory("postgresql://…")` one shared on PostgreSQL (``?schema=name``; the postgres extra).

    `embedder`: "auto" (see `trimem.embedders.auto_embedder`), "bilingual", "hashing", "minilm", an
    object with `name`, `dim` and `__call__(list[str]) -> float32 (n, dim)`, or None (keywords
    only). `min_bm25_share`, `min_cosine_alone`: what a confident match reaches (the rest rank last,
    labelled weak); `min_cosine`: under it a keyword-less match is dropped (None: the embedder's).
    `durability`: "fsync" (a write returns once on disk) or "buffered" (on disk within a second).
    `checkpoint_bytes`: log size that triggers a snapshot. `rewriter`, `extractor`: your own query rewriter
    and fact extractor (an LLM, say). `tz` reads relative time. `policy`: decay, retention, dedup, ….
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, embedder: Any = "auto", durability: Durability = "fsync",
        rewriter: Rewriter | None = None, extractor: Extractor | None = None, tz: tzinfo = UTC,
        min_bm25_share: float = MIN_BM25_SHARE, min_cosine: float | None = None, min_cosine_alone: float | None = None,
        checkpoint_bytes: int = CHECKPOINT_BYTES, policy: Policy | None = None,
    ) -> None:  # fmt: skip
        p = assemble(
            path, embedder=embedder, durability=durability, rewriter=rewriter, extractor=extractor, tz=tz,
            floors=(min_bm25_share, min_cosine, min_cosine_alone), checkpoint_bytes=checkpoint_bytes, policy=policy,
        )  # fmt: skip
        self.policy, self.tz, self.facts, self.knowledge, self.items = p.policy, tz, p.facts, p.knowledge, p.items
        self._backend, self._embedding, self._episodic, self._sessions = p.backend, p.embedding, p.episodic, p.sessions
        self._recall, self._reflection, self._lifecycle = p.recall, p.reflection, p.lifecycle
        self._reflector: Reflector | None = None

    @property
    def embedder(self) -> Any:
        """The embedder the memory was built with (None: keywords only)."""
        return self._embedding.embedder

    @property
    def dim(self) -> int:
        """The embedder's dimension (0 without one)."""
        return self._embedding.dim

    @property
    def path(self) -> str | None:
        """The store's folder (None in process)."""
        return self._backend.path

    @property
    def on_server(self) -> bool:
        """Whether a database server holds the store (its calls wait on the network, not the CPU)."""
        return self._backend.concurrent_reads

    # -- retain -----------------------------------------------------------------------------------

    def retain(self, text: str, *, user_id: str, **fields: Unpack[EpisodeFields]) -> Episode:
        """Appends one event to episodic memory; visible to the next recall at once (see
        :class:`trimem.options.EpisodeFields` for what else it holds, :meth:`retain_many` for
        near-duplicates)."""
        return self._episodic.retain_many([dict(fields, text=text, user_id=user_id)])[0]

    def retain_many(self, items: Iterable[Mapping[str, Any]], *, vectors: np.ndarray | None = None) -> list[Episode]:
        """Appends many events in one batch (one log write, one fsync). `vectors` skips the
        embedder when the caller has them already (float32, one row per item).

        With `policy.dedup` (the default) an item that near-duplicates one of the user's
        episodes (same normalised text, or overlapping words and, with an embedder, a close
        vector) is not stored again: that episode is reinforced and returned in the item's place,
        its `mention` holding the item's time, words, session and metadata (see :meth:`mentions`)."""
        return self._episodic.retain_many(items, vectors=vectors)

    def mentions(self, episode_id: int) -> list[Mention]:
        """The near-duplicates merged into a stored episode, oldest first."""
        return self._episodic.mentions(episode_id)

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
        """Puts `content` in the layer it belongs to and says where and why (see
        :func:`trimem.pipeline.routing.place`).

        >>> Memory(embedder=None).add("我的邮箱是 a@b.com", user_id="u1").item.key
        'email'
        """
        return place(
            self, content, user_id=user_id, agent_id=agent_id, session_id=session_id, timestamp=timestamp,
            classifier=classifier, context=context,
        )  # fmt: skip

    # -- episodes ---------------------------------------------------------------------------------

    def get(self, episode_id: int) -> Episode | None:
        """The stored episode, or None (like ``facts.get`` and ``knowledge.get``)."""
        return self._episodic.get(episode_id)

    def episodes(
        self,
        *,
        user_id: str,
        agent_id: str = "default",
        session_id: str | None = None,
        time_range: tuple[TimeLike, TimeLike] | None = None,
    ) -> list[Episode]:
        """A user's episodes (optionally one session's, or those in `[start, end)`), oldest first."""
        return self._episodic.list(user_id=user_id, agent_id=agent_id, session_id=session_id, time_range=time_range)

    def search(self, query: str, *, user_id: str, **options: Unpack[SearchOptions]) -> list[RecalledEpisode]:
        """Hybrid search over one user's episodes (no query rewriting), ranked by relevance,
        time decay and effective importance (each hit's `explain` gives the terms); see
        :class:`trimem.options.SearchOptions`."""
        check_options(options, SearchOptions.__annotations__, "search")
        return self._episodic.search(query, user_id=user_id, **options)

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
        """Deletes a user's episodes by id, session and/or time range `[start, end)` — or, with
        `everything=True`, all the user holds (the right to be forgotten; :meth:`purge` then
        leaves no trace in the folder). Another user's id raises `UnknownIdError`, changing
        nothing. Returns how many episodes went."""
        return self._lifecycle.forget(
            episode_ids, user_id=user_id, agent_id=agent_id, session_id=session_id, time_range=time_range,
            everything=everything,
        )  # fmt: skip

    # -- working memory ---------------------------------------------------------------------------

    def working(self, session_id: str) -> WorkingMemory:
        """The session's working memory (created on first use; restored if saved)."""
        return self._sessions.get(session_id)

    def save_working(self, session_id: str) -> None:
        """Persists the session's turns and variables (plain data) so a reopened store restores them."""
        self._sessions.save(session_id)

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
        rules estimate one. When the session passes its bound (`policy.working_bound`), the
        turns pushed out are consolidated: the important ones become episodes, the rest expire."""
        from trimem.pipeline.routing import add_turn

        return add_turn(self, session_id, role, text, user_id=user_id, agent_id=agent_id, importance=importance,
                        timestamp=timestamp)  # fmt: skip

    def consolidate(
        self, session_id: str, *, user_id: str, agent_id: str = "default", everything: bool = True
    ) -> Consolidation:
        """Turns the session's important working items (all, or with `everything=False` those the
        bound pushed out) into episodes with their session and time; the rest expire."""
        return self._lifecycle.consolidate(session_id, user_id=user_id, agent_id=agent_id, everything=everything)

    def end_session(
        self, session_id: str, *, user_id: str | None = None, agent_id: str = "default"
    ) -> Consolidation | None:
        """Ends the session (its saved copy too); with `user_id`, consolidates it first."""
        result = None
        if user_id is not None and session_id in self._sessions:
            result = self.consolidate(session_id, user_id=user_id, agent_id=agent_id)
        self._sessions.end(session_id)
        return result

    def forget_expired(
        self, now: TimeLike | None = None, *, user_id: str | None = None, agent_id: str = "default"
    ) -> Expired:
        """Applies the retention policy (`policy.retention_days` per layer, longer for
        important or reinforced items, counted from the last use) through the same hard-delete
        path as :meth:`forget`; for one user, or everyone."""
        return self._lifecycle.forget_expired(now_micros(now), user_id=user_id, agent_id=agent_id)

    # -- recall and reflect -----------------------------------------------------------------------

    def recall(self, query: str, *, user_id: str, **options: Unpack[RecallOptions]) -> RecallBundle:
        """Reads touched and pinned facts, searches episodes (time-filtered by the question)
        and knowledge (never time-filtered), and gathers the session's working memory; what it
        returns counts as used unless `touch=False` (:class:`trimem.options.RecallOptions`)."""
        check_options(options, RecallOptions.__annotations__, "recall")
        return self._recall(query, user_id=user_id, **options)

    @property
    def rewriter(self) -> Rewriter:
        return self._recall.rewriter

    @property
    def extractor(self) -> Extractor | None:
        return self._reflection.extractor

    def reflect(
        self, *, user_id: str, agent_id: str = "default", extractor: Extractor | None = None
    ) -> list[FactChange]:
        """Extracts durable facts from the user's episodes not reflected on yet and applies them
        as versioned updates. Running it again without new episodes changes nothing."""
        return self._reflection(user_id=user_id, agent_id=agent_id, extractor=extractor)

    def start_reflector(self, *, interval: float = 5.0, extractor: Extractor | None = None) -> Reflector:
        """Runs `reflect` in a background thread for every user with new episodes."""
        with self._backend.lock:
            if self._reflector is None:
                self._reflector = Reflector(self._reflection, interval=interval, extractor=extractor)
            return self._reflector

    def stop_reflector(self) -> None:
        if self._reflector is not None:
            self._reflector.stop()
            self._reflector = None

    def pending_reflection(self) -> list[tuple[str, str]]:
        """(agent_id, user_id) pairs with episodes reflect has not read yet."""
        return self._reflection.pending()

    # -- other layers -----------------------------------------------------------------------------

    @property
    def perceptual(self) -> PerceptualMemory:
        """Perceptual memory: images, audio, … in their own vector spaces, each with your
        encoder (see :mod:`trimem.layers.perceptual`); written to this memory's log and
        snapshots. Encoders are code, not data: register them again after reopening."""
        perceptual = self._backend.perceptual()
        assert isinstance(perceptual, PerceptualMemory)
        return perceptual

    @property
    def graph(self) -> MemoryGraph:
        """The memory graph: entities and relations extracted (by rules) from episodes and facts,
        scoped per user; see :mod:`trimem.graph`. Brought up to date on each read; kept in
        snapshots."""
        with self._backend.lock:
            view = self._backend.graph()
            assert isinstance(view, GraphView)
            return view.sync(self._backend)

    # -- tools, statistics, sharing, export ---------------------------------------------------------

    def tools(self) -> list[dict[str, Any]]:
        """Function-calling schemas (OpenAI format) for the memory tools."""
        from trimem.interop.tools import TOOL_SCHEMAS

        return [dict(s) for s in TOOL_SCHEMAS]

    def execute(self, name: str, **args: Any) -> Any:
        """Runs a memory tool call after validating its arguments against the schema; fact writes
        go through the same guard as reflect."""
        from trimem.interop.tools import execute

        return execute(self, name, args)

    def stats(self, *, user_id: str | None = None, agent_id: str = "default", now: TimeLike | None = None) -> Stats:
        """Counts, bytes and ages (days) per layer — for one user of `agent_id`, or the whole
        store (then with episodes per user) — plus the index statistics."""
        return _stats.stats(self._backend, self._sessions, user_id=user_id, agent_id=agent_id, now=now_micros(now),
                            embedder=self._embedding.name)  # fmt: skip

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
        """Copies a user's episodes reaching `min_importance` (or exactly `episode_ids`) to another
        agent, with provenance in `metadata["shared_from"]` and importance × `decay`."""
        return self._lifecycle.share(from_agent=from_agent, to_agent=to_agent, user_id=user_id, episode_ids=episode_ids,
                                     min_importance=min_importance, decay=decay, now=now_micros(now))  # fmt: skip

    def export(
        self, path: str | os.PathLike[str], *, user_id: str | None = None, agent_id: str = "default",
        now: TimeLike | None = None,
    ) -> Exported:  # fmt: skip
        """Writes every layer — of one user of `agent_id`, or the whole store — to one msgspec
        file (atomically; no pickle)."""
        with self._backend.lock:
            return transfer.export(self._backend, path, user_id=user_id, agent_id=agent_id, now=now_micros(now),
                                   embedder=self._embedding.name)  # fmt: skip

    def import_from(self, path: str | os.PathLike[str]) -> Exported:
        """Adds an :meth:`export` file's memories under new ids (facts cite the new episodes)."""
        return transfer.import_export(self._backend, path, episodic=self._episodic, knowledge=self.knowledge,
                                      item_store=self.items, embedder=self._embedding.name,
                                      fact_vector=self.facts.embed_fact)  # fmt: skip

    # -- the store --------------------------------------------------------------------------------

    def checkpoint(self) -> None:
        """A snapshot and an empty log (a reopen loads, not replays); searches go on, writes wait."""
        self._backend.checkpoint()

    def purge(self) -> None:
        """Compacts the store so that nothing forgotten remains: in a folder, a fresh snapshot
        without it, the log and older snapshot deleted; on PostgreSQL, ``VACUUM FULL``."""
        self._backend.purge()

    def recovery(self) -> Recovery | None:
        """What opening the store found: whether a snapshot was loaded, the log records replayed
        after it and any torn tail cut from a crash (``None`` for an in-process memory).

        >>> Memory(embedder=None).recovery() is None
        True
        """
        return self._backend.recovery()

    def flush_touches(self) -> None:
        self._backend.flush()  # the pending use counts, to the log now

    def close(self) -> None:
        """Stops the reflector and closes the store (flushing buffered writes)."""
        self.stop_reflector()
        self._backend.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "in process" if self.path is None else repr(self.path)
        return f"Memory({where}, embedder={self._embedding.name!r})"


__all__ = ["Memory"]
