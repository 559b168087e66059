"""The embedded backend: three engine indexes (episodes, knowledge, the fact index), the fact
table and the lifecycle's counters and cursors in process, made durable by the journal in a
folder (or held in memory only, without a path).

Every change is an op; one handler per op type applies it, the same whether the op is live or
replayed from the log on open, so the two cannot differ.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from trimem._backend import Columns, Query, Stored
from trimem._backend import confident as confident_hits
from trimem._backend.embedded.facts import FactKey, FactTable
from trimem._backend.embedded.hits import scored_hits
from trimem._backend.embedded.items import ItemTable
from trimem._backend.embedded.journal import Journal
from trimem._backend.entries import document_text, fact_entry
from trimem._backend.ops import (
    MemoryState,
    Op,
    OpAlias,
    OpCursor,
    OpFact,
    OpForget,
    OpItemDelete,
    OpItemPut,
    OpItemRefresh,
    OpKnowledge,
    OpMeta,
    OpPerceptAdd,
    OpPerceptDelete,
    OpPerceptRegister,
    OpPin,
    OpRetain,
    OpTouch,
    OpWorking,
)
from trimem._checks import check_path
from trimem._core import Hits, HybridIndex
from trimem.config import CHECKPOINT_BYTES, NEIGHBOUR_STEPS
from trimem.errors import EmbedderMismatchError, StoreClosedError, StoreError
from trimem.records import (
    Durability,
    Episode,
    Fact,
    FactVersion,
    KnowledgeDoc,
    Mention,
    RecalledEpisode,
    RecalledKnowledge,
    Recovery,
    Scored,
    SearchMode,
    decode_knowledge,
    encode,
    episode_from_record,
    episode_payload,
    indexed_time,
    replaced_value,
    search_text,
)
from trimem.scope import knowledge_namespace
from trimem.text.keys import fact_text

if TYPE_CHECKING:
    from trimem.config import Policy

log = logging.getLogger("trimem")

EPISODES, KNOWLEDGE, FACTS, ITEMS = "episodes", "knowledge", "facts", "items"
# A log this large is folded into a snapshot on close, so the next open loads instead of replaying.
_CLOSE_CHECKPOINT_BYTES = 4 << 20


class PerceptualStore(Protocol):
    """What the backend needs of perceptual memory (which keeps its own engine indexes)."""

    def apply(self, op: Any) -> None: ...
    def indexes(self) -> list[tuple[str, HybridIndex]]: ...
    def state(self) -> bytes: ...
    def load(self, state: bytes, indexes: dict[str, HybridIndex]) -> None: ...
    def index_names(self, state: bytes) -> list[str]: ...
    def forget(self, op: OpForget) -> None: ...


class GraphStore(Protocol):
    """What the backend needs of the memory graph's persisted view."""

    cursor: int

    def encode(self) -> bytes | None: ...
    def fact_rows(self) -> list[tuple[str, str, str, str]]: ...
    def load(self, graph: bytes | None, cursor: int, facts: list[tuple[str, str, str, str]]) -> None: ...
    def forget(self, op: OpForget) -> None: ...


class EmbeddedBackend:
    """The Rust engine and its write-ahead store behind the :class:`trimem._backend.Backend`
    protocol. ``path=None`` keeps everything in process."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        dim: int,
        embedder_name: str | None,
        durability: Durability = "fsync",
        checkpoint_bytes: int = CHECKPOINT_BYTES,
        touch_flush: int = 512,
        stem: bool = False,
        stopwords: bool = False,
        perceptual: Callable[[EmbeddedBackend], PerceptualStore] | None = None,
        graph: Callable[[], GraphStore] | None = None,
    ) -> None:
        self._lock = threading.RLock()
        self._dim = dim
        self._meta = OpMeta(embedder=embedder_name, dim=dim)
        self.checkpoint_bytes = checkpoint_bytes
        self.touch_flush = touch_flush
        # One graph per user (namespace): every search is within one user's memory, so it walks
        # only that user's graph.
        self._episodes = HybridIndex(dim, partition_by_namespace=True, stem=stem, stopwords=stopwords)
        self._knowledge = HybridIndex(dim, partition_by_namespace=True, stem=stem, stopwords=stopwords)
        self._facts = FactTable()
        # Each current fact, searched by keywords and meaning (one entry per fact, keyed by a
        # hash of its scope and key; rebuilt from the fact table when a snapshot predates it).
        self._fact_index = HybridIndex(dim, partition_by_namespace=True, stem=stem, stopwords=stopwords)
        self.items = ItemTable(dim, stem=stem, stopwords=stopwords)
        self._by_source: dict[tuple[str, str | None, str], int] = {}
        self._user_last: dict[tuple[str, str], int] = {}  # newest episode id per (agent, user)
        self._cursors: dict[tuple[str, str], int] = {}
        self._saved_working: dict[str, OpWorking] = {}
        self._mentions: dict[int, list[Mention]] = {}  # stored episode → near-duplicates merged into it
        self._last_id = 0
        self._make_perceptual = perceptual
        self._make_graph = graph
        self._perceptual: PerceptualStore | None = None
        self._graph: GraphStore | None = None
        self._handlers: dict[type, Callable[[Any], dict[int, int] | None]] = {
            OpRetain: self._apply_retain,
            OpTouch: self._apply_touch,
            OpKnowledge: self._apply_knowledge,
            OpFact: self._apply_fact,
            OpAlias: self._facts.apply_alias,
            OpPin: self._facts.apply_pin,
            OpForget: self._apply_forget,
            OpCursor: self._apply_cursor,
            OpWorking: self._apply_working,
            OpMeta: self._check_meta,
            OpPerceptRegister: self._apply_percept,
            OpPerceptAdd: self._apply_percept,
            OpPerceptDelete: self._apply_percept,
            OpItemPut: self.items.apply_put,
            OpItemDelete: self.items.apply_delete,
            OpItemRefresh: self.items.apply_refresh,
        }
        self._journal: Journal | None = None
        self.path = None if path is None else check_path("path", path)
        if self.path is not None:
            if os.path.exists(self.path) and not os.path.isdir(self.path):
                raise StoreError(f"{self.path} exists and is not a folder")
            self._journal = Journal(self.path, durability)
            try:
                self._load(self._journal)
            except BaseException:
                self._journal.close()
                self._journal = None
                raise

    # -- protocol: identity -----------------------------------------------------------------------

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def scope_lock(self, namespaces: Sequence[str]) -> threading.RLock:
        """The process lock: the folder has one writer (its lock file keeps other processes out)."""
        return self._lock

    @property
    def concurrent_reads(self) -> bool:
        return False  # the engine's searches take microseconds: a thread hand-off would cost more

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def closed(self) -> bool:
        return self.path is not None and self._journal is None

    # -- opening ----------------------------------------------------------------------------------

    def _check_meta(self, meta: OpMeta) -> None:
        if meta != self._meta:
            err = EmbedderMismatchError(
                f"{self.path} was built with embedder {meta.embedder!r} (dim {meta.dim}), but this "
                f"Memory uses {self._meta.embedder!r} (dim {self._meta.dim}); pass embedder= matching the store"
            )
            err.recorded = meta.embedder
            raise err

    def _load(self, journal: Journal) -> None:
        """Restores the latest snapshot, then replays the log written after it."""
        st = journal.snapshot_state()
        if st is not None:
            self._check_meta(st.meta)
            self._last_id = st.last_id
            self._cursors = {(a, u): i for a, u, i in st.cursors}
            self._user_last = {(a, u): i for a, u, i in st.user_last}
            self._facts.load(st.facts)
            self._by_source = {(a, u, src): i for a, u, src, i in st.knowledge_sources}
            self._mentions = {i: list(ms) for i, ms in st.mentions}
            for w in st.working:
                self._apply_working(w)
            if st.graph is not None:
                self.graph().load(st.graph, st.graph_cursor, st.graph_facts)
            if st.perceptual is not None:
                self._load_perceptual(journal, st.perceptual)
            for name in (EPISODES, KNOWLEDGE):
                index = journal.snapshot_index(name)
                if index is None:
                    raise StoreError(f"{self.path}: the snapshot lacks the {name} index")
                if name == EPISODES:
                    self._episodes = index
                else:
                    self._knowledge = index
            self._load_fact_index(journal.snapshot_index(FACTS))
            self.items.load(journal.snapshot_index(ITEMS))
        seen_meta = st is not None
        for op in journal.replay():
            seen_meta = seen_meta or isinstance(op, OpMeta)
            self._apply(op)
        if not seen_meta:
            self.write([self._meta])

    def _load_fact_index(self, index: HybridIndex | None) -> None:
        """The snapshot's fact index, or (a snapshot written before there was one) an index of the
        current facts by keywords only: their vectors were never stored."""
        if index is not None:
            self._fact_index = index
            return
        for fk in self._facts.current:
            self._index_fact(fk, None)

    def _load_perceptual(self, journal: Journal, state: bytes) -> None:
        perceptual = self.perceptual()
        names = perceptual.index_names(state)
        restored = {n: journal.snapshot_index(n) for n in names}
        missing = [n for n, i in restored.items() if i is None]
        if missing:
            raise StoreError(f"{self.path}: the snapshot lacks the perceptual indexes {missing}")
        perceptual.load(state, {n: i for n, i in restored.items() if i is not None})

    # -- extensions -------------------------------------------------------------------------------

    def perceptual(self) -> PerceptualStore:
        """Perceptual memory, created on first use (it writes through this backend)."""
        with self._lock:
            if self._perceptual is None:
                if self._make_perceptual is None:
                    raise StoreError("this backend was opened without perceptual memory")
                self._perceptual = self._make_perceptual(self)
            return self._perceptual

    def graph(self) -> GraphStore:
        """The memory graph's persisted view, created on first use."""
        with self._lock:
            if self._graph is None:
                if self._make_graph is None:
                    raise StoreError("this backend was opened without a memory graph")
                self._graph = self._make_graph()
            return self._graph

    # -- protocol: writes -------------------------------------------------------------------------

    def reserve_ids(self, n: int) -> int:
        with self._lock:
            first = self._last_id + 1
            self._last_id += n
            return first

    def release_ids(self, first: int, n: int) -> None:
        with self._lock:
            if self._last_id == first + n - 1:
                self._last_id = first - 1

    def write(self, ops: Sequence[Op]) -> dict[int, int]:
        """Writes ops in one log write (one fsync; if it fails, none is written), then applies
        them. Returns, for retained episodes that duplicated one already stored, that one's id."""
        with self._lock:
            journal = self._writable()
            if journal is not None and ops and all(isinstance(op, OpRetain) for op in ops):
                duplicates = self._write_retains(journal, ops)
            else:
                if journal is not None:
                    journal.append(ops)
                duplicates = {}
                for op in ops:
                    duplicates.update(self._apply(op) or {})
            if journal is not None and journal.log_bytes >= self.checkpoint_bytes:
                try:
                    self.checkpoint()
                except StoreError as e:
                    # The write itself is in the log and applied: report the checkpoint, not the
                    # write. (If the store can no longer take writes, the next write says so.)
                    log.warning("automatic checkpoint failed, the log keeps growing: %s", e)
            return duplicates

    def _writable(self) -> Journal | None:
        if self.path is not None and self._journal is None:
            raise StoreClosedError(f"the memory at {self.path} is closed; open it again to go on")
        return self._journal

    def _write_retains(self, journal: Journal, ops: Sequence[Op]) -> dict[int, int]:
        """Retains are written to the log, then indexed while the store's fsync thread syncs
        them (indexing and fsync take about as long, so a durable retain costs one, not both).
        The call returns once the log is durable; if the fsync fails the log no longer holds
        them, and they are taken back out of the index before the error is raised. A duplicate's
        mention is counted only once the log is durable, so a failed write reinforces nothing."""
        ticket, touch = journal.append_deferred(ops)
        retains = [op for op in ops if isinstance(op, OpRetain)]
        users = {(e.agent_id, e.user_id) for op in retains for e in op.episodes}
        last = {u: self._user_last.get(u) for u in users}  # only what an undo must restore
        added: list[int] = []
        duplicates: dict[int, int] = {}
        try:
            for op in retains:
                duplicates.update(self._apply_retain(op, reinforce=False))
                added.extend(e.id for e in op.episodes)
        finally:
            try:
                journal.settle(ticket)
            except BaseException:
                journal.restore(touch)
                self._episodes.delete(added, missing_ok=True)
                for u, i in last.items():
                    if i is None:
                        self._user_last.pop(u, None)
                    else:
                        self._user_last[u] = i
                raise
        self._reinforce(retains, duplicates)
        return duplicates

    def _reinforce(self, retains: list[OpRetain], duplicates: dict[int, int]) -> None:
        """Counts a mention of each duplicated episode at its duplicate's time, as indexing
        with `reinforce=True` would have (replaying the log does exactly that)."""
        by_time: dict[int, list[int]] = {}
        for op in retains:
            for e in op.episodes:
                if e.id in duplicates:
                    by_time.setdefault(e.timestamp, []).append(duplicates[e.id])
        for at, ids in by_time.items():
            self._episodes.mention(ids, at)
        self._keep_mentions(retains, duplicates)

    def _keep_mentions(self, retains: Sequence[OpRetain], duplicates: dict[int, int]) -> None:
        for op in retains:
            for e in op.episodes:
                stored = duplicates.get(e.id)
                if stored is not None:
                    mention = Mention(at=e.timestamp, text=e.text, session_id=e.session_id, metadata=e.metadata)
                    self._mentions.setdefault(stored, []).append(mention)

    def touch(
        self, episode_ids: Sequence[int], knowledge_ids: Sequence[int], at: int, mentions: Sequence[int] = ()
    ) -> None:
        """Counts uses in the engine now, in the log with the next write (or once
        `touch_flush` are pending). A crash can lose the counts of the last few recalls."""
        with self._lock:
            self._apply_touch(
                OpTouch(
                    episode_ids=list(episode_ids),
                    knowledge_ids=list(knowledge_ids),
                    at=at,
                    episode_mentions=list(mentions),
                )
            )
            if self._journal is not None and (
                self._journal.count_uses(episode_ids, knowledge_ids, mentions, at) >= self.touch_flush
            ):
                self._journal.append([])

    def flush(self) -> None:
        with self._lock:
            if self._journal is not None:
                self._journal.append([])

    # -- applying ops -----------------------------------------------------------------------------

    def _apply(self, op: Op) -> dict[int, int] | None:
        return self._handlers[type(op)](op)

    def _apply_retain(self, op: OpRetain, *, reinforce: bool = True) -> dict[int, int]:
        """Indexes the episodes; returns {id: id of the stored episode it duplicated}. With
        `reinforce=False` the duplicated episodes' mentions are left to the caller."""
        eps = op.episodes
        texts = [search_text(e) for e in eps]
        dup_of = self._episodes.add(
            ids=np.fromiter((e.id for e in eps), dtype=np.uint64, count=len(eps)),
            texts=texts,
            timestamps=np.fromiter((indexed_time(e) for e in eps), dtype=np.int64, count=len(eps)),
            namespaces=[f"{e.agent_id}/{e.user_id}" for e in eps],
            vectors=self._vectors(op.vectors, len(eps)),
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
        if reinforce and duplicates:  # else the caller counts them once the write is durable
            self._keep_mentions([op], duplicates)
        return duplicates

    def _apply_fact(self, op: OpFact) -> None:
        self._facts.apply_fact(op)
        self._index_fact((op.agent_id, op.user_id, op.key), op.vector)

    def _index_fact(self, fk: FactKey, vector: bytes | None) -> None:
        """The fact index entry of `fk` as the fact now stands (none once it is deleted)."""
        entry = fact_entry(fk)
        self._fact_index.delete([entry], missing_ok=True)
        fact = self._facts.current.get(fk)
        if fact is None:
            return
        self._fact_index.add(
            ids=[entry],
            texts=[fact_text(fact.key, fact.value, replaced_value(self._facts.history.get(fk, [])[:-1]))],
            timestamps=[fact.updated_at],
            namespaces=[f"{fk[0]}/{fk[1]}"],
            vectors=None if vector is None or not self._dim else self._vectors(vector, 1),
            payloads=[fact.key.encode("utf-8")],  # the hit's key; its scope is the namespace
        )

    def _unindex_facts(self, keys: Sequence[FactKey]) -> None:
        self._fact_index.delete([fact_entry(fk) for fk in keys], missing_ok=True)

    def _apply_touch(self, op: OpTouch) -> None:
        if op.episode_ids:
            self._episodes.touch(op.episode_ids, op.at)
        if op.knowledge_ids:
            self._knowledge.touch(op.knowledge_ids, op.at)
        if op.episode_mentions:
            self._episodes.mention(op.episode_mentions, op.at)

    def _apply_knowledge(self, op: OpKnowledge) -> None:
        self._last_id = max([self._last_id, *(d.id for d in op.docs)])
        for old in op.replaces:
            self._knowledge.delete([old], missing_ok=True)
        for d in op.docs:
            if d.source is not None:
                self._by_source[(d.agent_id, d.user_id, d.source)] = d.id
        self._knowledge.add(
            ids=np.array([d.id for d in op.docs], dtype=np.uint64),
            texts=[document_text(d) for d in op.docs],
            timestamps=np.array([d.timestamp for d in op.docs], dtype=np.int64),
            namespaces=[knowledge_namespace(d.agent_id, d.user_id) for d in op.docs],
            vectors=self._vectors(op.vectors, len(op.docs)),
            payloads=[encode(d) for d in op.docs],
        )

    def _apply_forget(self, op: OpForget) -> None:
        self._episodes.delete(op.episode_ids, missing_ok=True)
        for i in op.episode_ids:
            self._mentions.pop(i, None)
        # The extensions forget with the rest, in the same op (live and on replay).
        for extension in (self._graph, self._perceptual):
            if extension is not None:
                extension.forget(op)
        gone = set(op.knowledge_ids)
        self._by_source = {k: i for k, i in self._by_source.items() if i not in gone}
        self._knowledge.delete(list(gone), missing_ok=True)
        self._facts.forget_sources(op.episode_ids)
        self._facts.remove_keys(op.facts)
        self._unindex_facts(op.facts)
        for agent_id, user_id in op.users:
            self._unindex_facts([fk for fk in self._facts.history if fk[0] == agent_id and fk[1] == user_id])
            self._facts.remove_user(agent_id, user_id)
            self._cursors.pop((agent_id, user_id), None)
            self._user_last.pop((agent_id, user_id), None)

    def _apply_cursor(self, op: OpCursor) -> None:
        self._cursors[(op.agent_id, op.user_id)] = op.episode_id

    def _apply_working(self, op: OpWorking) -> None:
        if op.turns is None:
            self._saved_working.pop(op.session_id, None)
        else:
            self._saved_working[op.session_id] = op

    def _apply_percept(self, op: OpPerceptRegister | OpPerceptAdd | OpPerceptDelete) -> None:
        self.perceptual().apply(op)

    def _vectors(self, data: bytes | None, n: int) -> np.ndarray | None:
        if data is None:
            return None
        return np.frombuffer(data, dtype=np.float32).reshape(n, self._dim)

    # -- protocol: episodes and knowledge ----------------------------------------------------------

    def episodes(self, ids: Sequence[int]) -> list[Episode | None]:
        return [None if r is None else episode_from_record(r) for r in self._episodes.get_many(list(ids))]

    def mentions(self, episode_id: int) -> list[Mention]:
        return list(self._mentions.get(episode_id, []))

    def episode_ids(
        self, namespace: str | None, *, session: str | None = None, time_range: tuple[int, int] | None = None
    ) -> list[int]:
        ids = self._episodes.ids(namespace=namespace, session=session, time_range=time_range)
        return [int(i) for i in ids]

    def session_neighbours(self, namespace: str, ids: Sequence[int]) -> list[tuple[int | None, int | None]]:
        # a session's turns lie close together in the namespace's time order: a bounded walk
        return self._episodes.session_neighbours(list(ids), steps=NEIGHBOUR_STEPS)

    def search_episodes(self, query: Query, policy: Policy) -> list[RecalledEpisode]:
        hits, order, weak = self._search(self._episodes, query, policy, "episodic")
        recs = self._episodes.get_many(hits.ids[order])
        return [
            RecalledEpisode(episode_from_record(r), s)
            for s, r in zip(scored_hits(hits, order, policy, weak), recs)
            if r is not None
        ]

    def document(self, doc_id: int) -> KnowledgeDoc | None:
        rec = self._knowledge.get(int(doc_id))
        return None if rec is None else decode_knowledge(rec.payload)

    def document_ids(self, namespace: str | None) -> list[int]:
        return [int(i) for i in self._knowledge.ids(namespace=namespace)]

    def document_by_source(self, agent_id: str, user_id: str | None, source: str) -> int | None:
        return self._by_source.get((agent_id, user_id, source))

    def search_knowledge(self, query: Query, policy: Policy) -> list[RecalledKnowledge]:
        if not len(self._knowledge):  # most memories hold no documents: no search to pay for
            return []
        hits, order, weak = self._search(self._knowledge, query, policy, "semantic")
        return [
            RecalledKnowledge(decode_knowledge(r.payload), s)
            for s, r in zip(scored_hits(hits, order, policy, weak), self._knowledge.get_many(hits.ids[order]))
            if r is not None
        ]

    def _search(
        self, index: HybridIndex, q: Query, policy: Policy, layer: str, *, every_fact: bool = False
    ) -> tuple[Hits, list[int], set[int]]:
        """The hits, the positions of the best ``q.k`` (confident ones first, weak ones after)
        and the positions of the weak. Twice ``k`` are fetched, so that a confident hit just past
        ``k`` in fused order takes the place of a weak one. With `every_fact`, no similarity
        floor drops a candidate and the keyword floor counts every word of the request."""
        mode: SearchMode = q.mode if q.vector is not None or q.mode == "bm25" else "bm25"
        floors = q.floors
        hits = index.search(
            text=q.text,
            vector=q.vector,
            k=2 * q.k,
            namespace=q.namespace,
            time_range=q.time_range,
            session=q.session,
            mode=mode,
            min_cosine=-1.0 if every_fact else floors.cosine,
            **self._terms(policy, layer, q),
        )
        vector = q.vector
        confident = confident_hits(
            hits.bm25_scores,
            hits.vector_scores,
            floors,
            keyword_floor=index.bm25_floor(q.text, floors.bm25_share, unseen=every_fact),
            whole_floor=None if vector is None else lambda: index.bm25_floor(q.text, floors.whole_share, unseen=True),
            support=lambda asked: self._supported(index, hits, vector, floors.support_cosine, asked),
        )
        order = np.concatenate([np.flatnonzero(confident), np.flatnonzero(~confident)])[: q.k].tolist()
        return hits, order, set(np.flatnonzero(~confident).tolist())

    @staticmethod
    def _terms(policy: Policy, layer: str, q: Query) -> dict[str, Any]:
        terms = policy.search_terms(layer, q.now)
        if q.vector_weight != 1.0:
            keywords, vector = terms["weights"]
            terms["weights"] = (keywords, vector * q.vector_weight)
        return terms

    @staticmethod
    def _supported(
        index: HybridIndex, hits: Hits, vector: np.ndarray | None, floor: float, asked: np.ndarray
    ) -> np.ndarray:
        """Which hits meaning supports (cosine at least `floor`); for the `asked` ones the vector
        leg did not reach (outside its candidates), the cosine of their stored vector."""
        with np.errstate(invalid="ignore"):
            support = hits.vector_scores >= floor
        unknown = np.flatnonzero(asked & np.isnan(hits.vector_scores))
        if len(unknown) and vector is not None:
            records = index.get_many(hits.ids[unknown])
            stored = [(i, r.vector) for i, r in zip(unknown, records) if r is not None and r.vector is not None]
            if stored:
                rows = np.asarray([v for _, v in stored], dtype=np.float32)
                q = vector / max(float(np.linalg.norm(vector)), 1e-12)
                cos = rows @ q / np.maximum(np.linalg.norm(rows, axis=1), 1e-12)
                support[[i for i, _ in stored]] = cos >= floor
        return support

    def columns(self, collection: str, namespace: str | None) -> Columns:
        return self._index(collection).columns(namespace=namespace)

    def stored(self, collection: str, ids: Sequence[int]) -> list[Stored]:
        out: list[Stored] = []
        for r in self._index(collection).get_many(list(ids)):
            if r is None:
                continue
            item: Episode | KnowledgeDoc = (
                episode_from_record(r) if collection == EPISODES else decode_knowledge(r.payload)
            )
            vector = None if r.vector is None else r.vector.astype(np.float32).tobytes()
            out.append(Stored(item, vector, r.accesses, r.mentions, r.last_access))
        return out

    def _index(self, collection: str) -> HybridIndex:
        return self._episodes if collection == EPISODES else self._knowledge

    # -- protocol: facts --------------------------------------------------------------------------

    def fact(self, agent_id: str, user_id: str, key: str) -> Fact | None:
        return self._facts.current.get((agent_id, user_id, key))

    def facts(self, agent_id: str | None = None, user_id: str | None = None) -> list[tuple[str, str, Fact]]:
        if agent_id is None or user_id is None:
            return [(a, u, f) for (a, u, _), f in self._facts.current.items()]
        return [(agent_id, user_id, f) for f in self._facts.of_user(agent_id, user_id)]

    def search_facts(self, query: Query, policy: Policy) -> list[tuple[Fact, Scored]]:
        # a profile is small: every fact is a candidate; and every word of the request counts, as
        # a user's facts share common words ("my", "I") with any request, and one about what was
        # never said ("my daughter's name") is mostly words no fact holds
        hits, order, weak = self._search(self._fact_index, query, policy, "semantic", every_fact=True)
        out: list[tuple[Fact, Scored]] = []
        for scored, rec in zip(scored_hits(hits, order, policy, weak), self._fact_index.get_many(hits.ids[order])):
            if rec is None:
                continue
            agent_id, user_id = rec.namespace.split("/", 1)
            fact = self._facts.current.get((agent_id, user_id, rec.payload.decode("utf-8")))
            if fact is not None:
                out.append((fact, scored))
        return out

    def fact_vectors(self, agent_id: str, user_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for key, rec in zip(keys, self._fact_index.get_many([fact_entry((agent_id, user_id, k)) for k in keys])):
            if rec is not None and rec.vector is not None:
                out[key] = np.asarray(rec.vector, dtype=np.float32)
        return out

    def fact_history(self, agent_id: str, user_id: str, key: str) -> list[FactVersion]:
        return list(self._facts.history.get((agent_id, user_id, key), []))

    def fact_histories(self) -> list[tuple[str, str, str, list[FactVersion], bool]]:
        return [
            (a, u, k, list(versions), (a, u, k) in self._facts.pinned)
            for (a, u, k), versions in sorted(self._facts.history.items())
        ]

    def aliases(self) -> dict[str, list[str]]:
        return self._facts.alias_view()

    def alias_table(self) -> dict[str, list[str]]:
        return {w: list(keys) for w, keys in self._facts.aliases.items()}

    # -- protocol: lifecycle bookkeeping ----------------------------------------------------------

    def cursor(self, agent_id: str, user_id: str) -> int:
        return self._cursors.get((agent_id, user_id), 0)

    def newest_episode(self, agent_id: str, user_id: str) -> int:
        return self._user_last.get((agent_id, user_id), 0)

    def users(self) -> list[tuple[str, str]]:
        return sorted(self._user_last)

    def saved_sessions(self) -> dict[str, OpWorking]:
        return dict(self._saved_working)

    # -- protocol: the store ----------------------------------------------------------------------

    def _state(self) -> MemoryState:
        graph = self._graph
        return MemoryState(
            meta=self._meta,
            last_id=self._last_id,
            cursors=[(a, u, i) for (a, u), i in self._cursors.items()],
            user_last=[(a, u, i) for (a, u), i in self._user_last.items()],
            facts=self._facts.state(),
            knowledge_sources=[(a, u, src, i) for (a, u, src), i in self._by_source.items()],
            working=list(self._saved_working.values()),
            perceptual=None if self._perceptual is None else self._perceptual.state(),
            graph=None if graph is None else graph.encode(),
            graph_cursor=0 if graph is None else graph.cursor,
            graph_facts=[] if graph is None else graph.fact_rows(),
            mentions=sorted(self._mentions.items()),
        )

    def checkpoint(self) -> None:
        """Writes a snapshot and starts an empty log, so a reopen loads instead of replaying.
        Searches continue while it runs; writes wait. A no-op in process."""
        with self._lock:
            journal = self._writable()
            if journal is not None:
                extra = [] if self._perceptual is None else self._perceptual.indexes()
                indexes = [(EPISODES, self._episodes), (KNOWLEDGE, self._knowledge), (FACTS, self._fact_index),
                           (ITEMS, self.items.index)]  # fmt: skip
                journal.checkpoint([*indexes, *extra], self._state())

    def purge(self) -> None:
        """A checkpoint: the new snapshot holds nothing forgotten, and the files that did go."""
        self.checkpoint()

    def recovery(self) -> Recovery | None:
        if self._journal is None:
            return None
        r = self._journal.store.recovery()
        return Recovery(
            generation=r["generation"],
            snapshot=r["snapshot"],
            log_records=r["log_records"],
            torn_bytes=r["torn_bytes"],
            removed_files=list(r["removed_files"]),
            seconds=r["seconds"],
        )

    def index_stats(self) -> dict[str, dict[str, int | float | str | None]]:
        return {
            "episode_index": self._episodes.stats(),
            "knowledge_index": self._knowledge.stats(),
            "fact_index": self._fact_index.stats(),
        }

    def close(self) -> None:
        """Flushes pending counts and closes the store (a log of more than a few MB is first
        folded into a snapshot so the next open is fast)."""
        with self._lock:
            journal = self._journal
            if journal is None:
                return
            try:
                journal.append([])
                if journal.log_bytes >= min(self.checkpoint_bytes, _CLOSE_CHECKPOINT_BYTES):
                    self.checkpoint()
            finally:
                journal.close()
                self._journal = None

    def new_episodes(self, after: int) -> Iterator[Episode]:
        """Episodes with an id above ``after``, ascending (the graph reads what it has not)."""
        if self._last_id <= after:  # ids only grow: nothing newer
            return iter(())
        ids = self._episodes.ids()
        new = np.sort(ids[ids > after])
        return (episode_from_record(r) for r in self._episodes.get_many(new) if r is not None)

    @property
    def last_id(self) -> int:
        return self._last_id
