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

import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import timezone, tzinfo
from typing import Any

import numpy as np

from trimem._core import HybridIndex, Hits, tokenize
from trimem.errors import InvalidArgumentError, UnknownIdError
from trimem.ops import (
    Op,
    OpAlias,
    OpCursor,
    OpFact,
    OpForget,
    OpKnowledge,
    OpMeta,
    OpPin,
    OpRetain,
    decode_op,
    encode_op,
)
from trimem.recall import RecallBundle
from trimem.records import (
    Episode,
    FactChange,
    KnowledgeDoc,
    RecalledEpisode,
    RecalledKnowledge,
    Scored,
    ToolCall,
    decode_episode,
    decode_knowledge,
    encode,
)
from trimem.reflect import Extractor, RuleExtractor
from trimem.rewrite import MemoryIntent, Rewriter, RuleRewriter
from trimem.scope import check_id, episode_namespace, knowledge_namespace
from trimem.semantic import Facts, KnowledgeBase
from trimem.store import OpLog, StoreError
from trimem.timeutil import TimeLike, as_datetime, now_micros, to_micros
from trimem.working import WorkingMemory

log = logging.getLogger("trimem")

MAX_TEXT_CHARS = 100_000
BM25_K1 = 1.2
LOG_NAME = "trimem.log"


class EmbedderMismatchError(StoreError):
    """The store was built with another embedder; vectors from two models do not mix."""


class Memory:
    """Three-layer agent memory. `Memory()` lives in process; `Memory("./folder")` is an
    embedded store that replays its log on open.

    Parameters: `embedder` — "auto" (MiniLM when the `minilm` extra is installed, else the
    hashing embedder), "hashing", "minilm", an object with `name`, `dim` and
    `__call__(list[str]) -> float32 (n, dim)`, or None for a keyword-only memory;
    `min_bm25_share`, `min_cosine` and `min_cosine_alone` (for hits no keyword matched) are the
    floors that keep weak matches (greetings, rants, logs sharing one word with the question)
    out of recall; `durability` —
    "fsync" (a write returns once on disk) or "buffered"; `rewriter` and `extractor` plug in
    your own query rewriter and fact extractor (an LLM, say); `tz` reads relative time.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        embedder: Any = "auto",
        durability: str = "fsync",
        rewriter: Rewriter | None = None,
        extractor: Extractor | None = None,
        tz: tzinfo = timezone.utc,
        working_capacity: int = 30,
        working_ttl: float | None = 24 * 3600.0,
        min_bm25_share: float = 0.3,
        min_cosine: float | None = None,
        min_cosine_alone: float | None = None,
    ) -> None:
        from trimem.embedders import resolve_embedder

        self._lock = threading.RLock()
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
        self._episode_index = HybridIndex(self.dim)
        self._knowledge_index = HybridIndex(self.dim)
        self._user_episodes: dict[tuple[str, str], list[int]] = {}
        self._cursors: dict[tuple[str, str], int] = {}
        self._working: dict[str, WorkingMemory] = {}
        self._last_id = 0
        self.facts = Facts(self)
        self.knowledge = KnowledgeBase(self)
        self._reflector: Reflector | None = None
        self._log: OpLog | None = None
        self.path = None if path is None else os.fspath(path)
        if self.path is not None:
            self._open(self.path, durability)

    # -- store ------------------------------------------------------------------------------------

    def _open(self, path: str, durability: str) -> None:
        if os.path.exists(path) and not os.path.isdir(path):
            raise StoreError(f"{path} exists and is not a folder")
        os.makedirs(path, exist_ok=True)
        self._log = OpLog(os.path.join(path, LOG_NAME), durability=durability)
        try:
            self._replay(path)
        except BaseException:
            self._log.close()
            self._log = None
            raise

    def _replay(self, path: str) -> None:
        assert self._log is not None
        name = self.embedder.name if self.embedder is not None else None
        seen_meta = False
        for payload in self._log.replay():
            op = decode_op(payload)
            if isinstance(op, OpMeta):
                if (op.embedder, op.dim) != (name, self.dim):
                    raise EmbedderMismatchError(
                        f"{path} was built with embedder {op.embedder!r} (dim {op.dim}), but this "
                        f"Memory uses {name!r} (dim {self.dim}); pass embedder= matching the store"
                    )
                seen_meta = True
                continue
            self._apply(op)
        if not seen_meta:
            self._commit(OpMeta(embedder=name, dim=self.dim))

    def _commit(self, op: Op) -> None:
        """Writes `op` to the log (when there is one), then applies it."""
        with self._lock:
            if self._log is not None:
                self._log.append(encode_op(op))
            self._apply(op)

    def _apply(self, op: Op) -> None:
        if isinstance(op, OpRetain):
            self._apply_retain(op)
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

    def close(self) -> None:
        """Stops the reflector and closes the store (flushing buffered writes)."""
        self.stop_reflector()
        if self._log is not None:
            self._log.close()
            self._log = None

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
        if not text.strip():
            raise InvalidArgumentError("text is empty; there is nothing to remember")
        if len(text) > MAX_TEXT_CHARS:
            raise InvalidArgumentError(
                f"text has {len(text)} characters, over the limit of {MAX_TEXT_CHARS}; split it"
            )
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
        parts = [e.text]
        if e.topic:
            parts.append(e.topic)
        parts.extend(e.keywords)
        if e.tool is not None:
            parts.append(f"{e.tool.name} {' '.join(f'{k} {v}' for k, v in e.tool.args.items())}")
            parts.append(e.tool.result[:2000])
        return "\n".join(parts)

    def _make_episode(self, text: str, *, user_id: str, agent_id: str = "default",
                      session_id: str | None = None, role: str = "user", topic: str | None = None,
                      keywords: Sequence[str] = (), timestamp: TimeLike | None = None,
                      importance: float = 0.5, metadata: Mapping[str, Any] | None = None,
                      tool: ToolCall | Mapping[str, Any] | None = None) -> Episode:
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
            tool = ToolCall(name=str(tool["name"]), args=dict(tool.get("args") or {}),
                            result=str(tool.get("result") or ""))
        return Episode(
            id=0, agent_id=agent_id, user_id=user_id, text=self._check_text(text),
            timestamp=now_micros(timestamp), session_id=session_id, role=str(role), topic=topic,
            keywords=[str(k) for k in keywords], importance=float(importance),
            metadata=dict(metadata or {}), tool=tool,
        )

    def retain(self, text: str, *, user_id: str, agent_id: str = "default", session_id: str | None = None,
               role: str = "user", topic: str | None = None, keywords: Sequence[str] = (),
               timestamp: TimeLike | None = None, importance: float = 0.5,
               metadata: Mapping[str, Any] | None = None,
               tool: ToolCall | Mapping[str, Any] | None = None) -> Episode:
        """Appends one event to episodic memory; visible to the next recall at once."""
        return self.retain_many([dict(text=text, user_id=user_id, agent_id=agent_id, session_id=session_id,
                                      role=role, topic=topic, keywords=keywords, timestamp=timestamp,
                                      importance=importance, metadata=metadata, tool=tool)])[0]

    def retain_many(self, items: Iterable[Mapping[str, Any]], *, vectors: np.ndarray | None = None) -> list[Episode]:
        """Appends many events in one batch (one log write, one fsync). `vectors` skips the
        embedder when the caller has them already (float32, one row per item)."""
        drafts = [self._make_episode(**dict(it)) for it in items]
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
        else:
            vectors = self._embed([self._search_text(e) for e in drafts])
        with self._lock:
            episodes = [_with_id(e, self._next_id()) for e in drafts]
            try:
                self._commit(OpRetain(episodes=episodes, vectors=None if vectors is None else vectors.tobytes()))
            except BaseException:
                self._last_id -= len(episodes)
                raise
        return episodes

    def _apply_retain(self, op: OpRetain) -> None:
        eps = op.episodes
        self._episode_index.add(
            ids=np.fromiter((e.id for e in eps), dtype=np.uint64, count=len(eps)),
            texts=[self._search_text(e) for e in eps],
            timestamps=np.fromiter((e.timestamp for e in eps), dtype=np.int64, count=len(eps)),
            namespaces=[f"{e.agent_id}/{e.user_id}" for e in eps],
            vectors=self._vectors_from(op.vectors, len(eps)),
            sessions=[e.session_id for e in eps],
            payloads=[encode(e) for e in eps],
            importance=[e.importance for e in eps],
        )
        for e in eps:
            self._user_episodes.setdefault((e.agent_id, e.user_id), []).append(e.id)
        self._last_id = max(self._last_id, max(e.id for e in eps))

    def get(self, episode_id: int) -> Episode:
        """The stored episode; raises UnknownIdError when there is none."""
        rec = self._episode_index.get(int(episode_id))
        if rec is None:
            raise UnknownIdError(f"no episode with id {episode_id}")
        return decode_episode(rec.payload)

    def episodes(self, *, user_id: str, agent_id: str = "default") -> list[Episode]:
        """All of a user's episodes, oldest first."""
        ids = self._user_episodes.get((check_id("agent_id", agent_id), check_id("user_id", user_id)), [])
        eps = [decode_episode(r.payload) for r in self._episode_index.get_many(ids) if r is not None]
        return sorted(eps, key=lambda e: (e.timestamp, e.id))

    # -- forget -----------------------------------------------------------------------------------

    def forget(self, episode_ids: Iterable[int] = (), *, user_id: str | None = None, agent_id: str = "default") -> int:
        """Deletes episodes by id, or every episode and fact of `user_id` (the right to be
        forgotten). Returns how many episodes went."""
        ids = [int(i) for i in episode_ids]
        if user_id is not None:
            ids += self._user_episodes.get((check_id("agent_id", agent_id), check_id("user_id", user_id)), [])
        missing = [i for i in ids if i not in self._episode_index]
        if missing:
            raise UnknownIdError(f"no episode with id {missing[0]}")
        users = [(agent_id, user_id)] if user_id is not None else []
        if ids or users:
            self._commit(OpForget(episode_ids=sorted(set(ids)), users=users))
        return len(set(ids))

    def _apply_forget(self, op: OpForget) -> None:
        gone = set(op.episode_ids)
        for rec in self._episode_index.get_many(op.episode_ids):
            if rec is not None:
                agent_id, user_id = rec.namespace.split("/", 1)
                ids = self._user_episodes.get((agent_id, user_id), [])
                ids[:] = [i for i in ids if i not in gone]
        self._episode_index.delete(op.episode_ids, missing_ok=True)
        self._knowledge_index.delete(op.knowledge_ids, missing_ok=True)
        for agent_id, user_id in op.users:
            self.facts._remove_user(agent_id, user_id)
            self._cursors.pop((agent_id, user_id), None)

    # -- working memory ---------------------------------------------------------------------------

    def working(self, session_id: str) -> WorkingMemory:
        """The session's working memory (created on first use)."""
        wm = self._working.get(session_id)
        if wm is None:
            wm = self._working[session_id] = WorkingMemory(
                session_id, capacity=self._working_capacity, ttl=self._working_ttl)
        return wm

    def end_session(self, session_id: str) -> None:
        wm = self._working.pop(session_id, None)
        if wm is not None:
            wm.reset()

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
        return [i for i in range(len(hits))
                if hits.bm25_ranks[i] > 0 or hits.vector_scores[i] >= self.min_cosine_alone]

    def _scored(self, hits: Hits, i: int) -> Scored:
        b, v = float(hits.bm25_scores[i]), float(hits.vector_scores[i])
        return Scored(score=float(hits.scores[i]), bm25=None if b != b else b, cosine=None if v != v else v,
                      bm25_rank=int(hits.bm25_ranks[i]), vector_rank=int(hits.vector_ranks[i]),
                      decay=float(hits.decay[i]), importance=float(hits.importance[i]))

    def search(self, query: str, *, user_id: str, agent_id: str = "default", k: int = 5,
               time_range: tuple[TimeLike, TimeLike] | None = None, session_id: str | None = None,
               vector: np.ndarray | None = None, mode: str = "hybrid") -> list[RecalledEpisode]:
        """Hybrid search over one user's episodes (no query rewriting)."""
        ns = episode_namespace(agent_id, user_id)
        if session_id is not None:
            check_id("session_id", session_id)
        if k < 1:
            raise InvalidArgumentError(f"k must be at least 1, got {k}")
        tr = None if time_range is None else (to_micros(time_range[0]), to_micros(time_range[1]))
        if vector is None and mode != "bm25":
            vecs = self._embed([query])
            vector = None if vecs is None else vecs[0]
        use_mode = mode if vector is not None or mode == "bm25" else "bm25"
        hits = self._episode_index.search(
            text=query, vector=vector, k=k, namespace=ns, time_range=tr, session=session_id, mode=use_mode,
            min_bm25=self._bm25_floor(self._episode_index, query), min_cosine=self.min_cosine)
        keep = self._strong(hits)
        recs = self._episode_index.get_many(hits.ids[keep])
        return [RecalledEpisode(decode_episode(r.payload), self._scored(hits, i))
                for i, r in zip(keep, recs) if r is not None]

    def _search_knowledge(self, query: str, vector: np.ndarray | None, *, agent_id: str, user_id: str | None,
                          k: int) -> list[RecalledKnowledge]:
        if vector is None:
            vecs = self._embed([query])
            vector = None if vecs is None else vecs[0]
        found: list[RecalledKnowledge] = []
        spaces = [knowledge_namespace(agent_id, None)]
        if user_id is not None:
            spaces.append(knowledge_namespace(agent_id, user_id))
        for ns in spaces:
            hits = self._knowledge_index.search(
                text=query, vector=vector, k=k, namespace=ns, mode="hybrid" if vector is not None else "bm25",
                min_bm25=self._bm25_floor(self._knowledge_index, query), min_cosine=self.min_cosine)
            keep = self._strong(hits)
            for i, r in zip(keep, self._knowledge_index.get_many(hits.ids[keep])):
                if r is not None:
                    found.append(RecalledKnowledge(decode_knowledge(r.payload), self._scored(hits, i)))
        found.sort(key=lambda r: (-r.scored.score, r.doc.id))
        return found[:k]

    def _with_fact_sources(self, episodes: list[RecalledEpisode], profile: list[Any], intent: MemoryIntent,
                           k: int, namespace: str) -> list[RecalledEpisode]:
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
                    ep = decode_episode(rec.payload)
                    lo, hi = intent.time_range or (ep.timestamp, ep.timestamp + 1)
                    if not lo <= ep.timestamp < hi:
                        continue
                    r = RecalledEpisode(ep, Scored(score=0.0))
                first.append(RecalledEpisode(r.episode, r.scored, via_fact=fact.key))
        if not first:
            return episodes
        rest = [r for r in episodes if r.episode.id in found]
        return (first + rest)[:k]

    def recall(self, query: str, *, user_id: str, agent_id: str = "default", session_id: str | None = None,
               k: int = 5, k_knowledge: int = 3, now: TimeLike | None = None, tz: tzinfo | None = None,
               same_session: bool = False, n_turns: int = 5) -> RecallBundle:
        """Reads touched and pinned facts, searches episodes (time-filtered by the question)
        and knowledge (never time-filtered), and gathers the session's working memory."""
        t0 = time.perf_counter()
        tz = tz or self.tz
        query = self._check_text(query)
        episode_namespace(agent_id, user_id)
        intent: MemoryIntent = self.rewriter(query, now=as_datetime(now, tz), tz=tz, aliases=self.facts.aliases())
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
        t2 = time.perf_counter()
        text = intent.text or query
        vecs = self._embed([text])
        vector = None if vecs is None else vecs[0]
        t3 = time.perf_counter()
        episodes = self.search(text, user_id=user_id, agent_id=agent_id, k=k, time_range=intent.time_range,
                               session_id=session_id if same_session else None, vector=vector)
        episodes = self._with_fact_sources(episodes, profile, intent, k, episode_namespace(agent_id, user_id))
        t4 = time.perf_counter()
        knowledge = self._search_knowledge(text, vector, agent_id=agent_id, user_id=user_id, k=k_knowledge)
        t5 = time.perf_counter()
        working, wvars = [], {}
        if session_id is not None and session_id in self._working:
            wm = self._working[session_id]
            working, wvars = wm.recent(n_turns), dict(wm.vars)
        ms = lambda a, b: (b - a) * 1e3  # noqa: E731
        timings = {"rewrite": ms(t0, t1), "facts": ms(t1, t2), "embed": ms(t2, t3), "episodes": ms(t3, t4),
                   "knowledge": ms(t4, t5), "total": ms(t0, time.perf_counter())}
        return RecallBundle(query=query, intent=intent, profile=profile, episodes=episodes, knowledge=knowledge,
                            working=working, working_vars=wvars, timings=timings, tz=tz)

    # -- reflect ----------------------------------------------------------------------------------

    def reflect(self, *, user_id: str, agent_id: str = "default", extractor: Extractor | None = None) -> list[FactChange]:
        """Extracts durable facts from the user's episodes not reflected on yet and applies them
        as versioned updates. Running it again without new episodes changes nothing."""
        scope = (check_id("agent_id", agent_id), check_id("user_id", user_id))
        with self._lock:
            cursor = self._cursors.get(scope, 0)
            new_ids = [i for i in self._user_episodes.get(scope, []) if i > cursor]
            if not new_ids:
                return []
            eps = [decode_episode(r.payload) for r in self._episode_index.get_many(new_ids) if r is not None]
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
                changes.append(FactChange(op=ch.op, key=ch.key, value=ch.value, old_value=ch.old_value,
                                          source=ch.source, evidence=p.evidence))
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
        return [s for s, ids in self._user_episodes.items() if ids and ids[-1] > self._cursors.get(s, 0)]

    # -- explicit tool mode -----------------------------------------------------------------------

    def tools(self) -> list[dict[str, Any]]:
        """Function-calling schemas (OpenAI format) for the memory tools."""
        from trimem.tools import TOOL_SCHEMAS

        return [dict(s) for s in TOOL_SCHEMAS]

    def execute(self, name: str, **args: Any) -> Any:
        """Runs a memory tool call after validating its arguments against the schema."""
        from trimem.tools import execute

        return execute(self, name, args)

    def stats(self) -> dict[str, Any]:
        e, k = self._episode_index.stats(), self._knowledge_index.stats()
        return {"episodes": e["records"], "knowledge": k["records"], "facts": len(self.facts._current),
                "users": len(self._user_episodes), "sessions": len(self._working),
                "episode_index": e, "knowledge_index": k,
                "embedder": None if self.embedder is None else self.embedder.name}


def _with_id(e: Episode, new_id: int) -> Episode:
    import msgspec

    return msgspec.structs.replace(e, id=new_id)


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
