"""The PostgreSQL backend: the :class:`trimem._backend.Backend` contract on a shared database, so
that many processes and machines serve one memory.

Every ``write`` is one transaction (psycopg 3, a connection pool); ids come from a counter row
the database serialises; searches are one statement each (:mod:`.search`). ``durability``
maps to ``synchronous_commit``: "fsync" (on) returns once the commit is flushed to the server's
WAL, "buffered" (off) once the server has it in memory. Use counts are gathered in process and
written with the next write (or every ``touch_flush``), so recalls never wait on row locks.

What the embedded store does and this one does not: perceptual memory and the memory graph
(:class:`trimem.errors.NotSupportedError`); ``checkpoint`` is a no-op (the server keeps its own
WAL). ``purge`` cannot reach table files: deleted rows stay in them until ``VACUUM`` (run it on
the schema's tables; ``VACUUM FULL`` to return the space).
"""

from __future__ import annotations

import errno
import itertools
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Final

import msgspec
import numpy as np
from psycopg import sql

from trimem._backend import Columns, Query, Stored
from trimem._backend.embedded.facts import alias_view, current_fact
from trimem._backend.entries import fact_entry
from trimem._backend.ops import (
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
    OpPin,
    OpRetain,
    OpTouch,
    OpWorking,
)
from trimem._backend.postgres import redacted, search
from trimem._backend.postgres.items import ItemRows, ItemWrites
from trimem._backend.postgres.schema import COLLECTIONS, SCHEMA_VERSION, migrate
from trimem._backend.postgres.search import Candidate, hybrid_statement, label, span_statement, vector_leg
from trimem._backend.postgres.writes import SMALL_BATCH, Writes, as_array, lock_key, terms_of
from trimem.config import NEIGHBOUR_STEPS, explain
from trimem.errors import (
    DependencyError,
    EmbedderMismatchError,
    InvalidArgumentError,
    NotSupportedError,
    StoreClosedError,
    StoreError,
    StoreIOError,
    StoreVersionError,
)
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
)

if TYPE_CHECKING:
    from trimem.config import Policy

__all__ = ["PostgresBackend"]

_episode = msgspec.msgpack.Decoder(Episode)
_document = msgspec.msgpack.Decoder(KnowledgeDoc)
_mention = msgspec.msgpack.Decoder(Mention)
_working = msgspec.msgpack.Decoder(OpWorking)
_versions = msgspec.msgpack.Decoder(list[FactVersion])


_ROLLBACK_RETRIES: Final = 5
_RETRY_PAUSE: Final = 0.01
"""A write the server rolls back to break a deadlock is run again up to this many times, after a
random pause of up to this many seconds, doubling each time."""

_TRUSTED_FOR: Final = 1.0
"""Seconds a connection back from a successful use is taken to be alive without asking the
server (a connection idle longer is checked as it leaves the pool)."""


class _LockConnection:
    """The connection scope_lock's session locks live on (opened on first use)."""

    conn: Any = None

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()


def _close_all(pool: Any, locks: _LockConnection) -> None:
    """Returns a memory's connections (on close, or when a memory is dropped unclosed)."""
    try:
        pool.close()
    finally:
        locks.close()


class PostgresBackend:
    """A memory in one schema of a PostgreSQL database (pgvector ≥ 0.8 for vectors)."""

    def __init__(
        self,
        dsn: str,
        *,
        dim: int,
        embedder_name: str | None,
        schema: str = "trimem",
        durability: Durability = "fsync",
        touch_flush: int = 512,
        stem: bool = False,
        stopwords: bool = False,
        pool_size: int = 4,
        timeout: float = 30.0,
    ) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as e:  # pragma: no cover - the extra is installed in CI
            raise DependencyError("PostgreSQL needs the postgres extra: pip install 'trimem[postgres]'") from e
        if not isinstance(schema, str) or not schema.isidentifier() or len(schema) > 63:
            raise InvalidArgumentError(f"schema must be a plain identifier of at most 63 characters, got {schema!r}")
        self._psycopg = psycopg
        self._lock = threading.RLock()
        self._dim, self._schema = dim, schema
        self._stem, self._stopwords = stem, stopwords
        self._meta = OpMeta(embedder=embedder_name, dim=dim)
        self._writes = Writes(schema, dim, stem=stem, stopwords=stopwords)
        w, iw = self._writes, ItemWrites(schema, dim, stem=stem, stopwords=stopwords)
        self._handlers: dict[type, Callable[[Any, Any], dict[int, int] | None]] = {
            OpRetain: w.retain, OpKnowledge: w.knowledge, OpFact: w.fact, OpAlias: w.alias, OpPin: w.pin,
            OpForget: w.forget, OpCursor: w.cursor, OpWorking: w.save_working, OpTouch: self._touch_op,
            OpMeta: self._meta_op, OpItemPut: iw.put, OpItemDelete: iw.delete, OpItemRefresh: iw.refresh,
        }  # fmt: skip
        self.items = ItemRows(schema, dim, self._conn, stem=stem, stopwords=stopwords)
        self.touch_flush = touch_flush
        self.path = redacted(dsn)  # shown in reprs and messages: never the password
        self._dsn = dsn
        self._locks = _LockConnection()  # holds scope_lock's advisory locks
        self._held: dict[int, int] = {}  # advisory lock key → re-entries held by this process
        self._pending: dict[tuple[str, int], list[int]] = {}  # (table, id) → [accesses, mentions, last use]
        self._n_pending = 0
        commit = "on" if durability == "fsync" else "off"
        self._pool: Any = None
        try:
            first = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as e:
            raise StoreIOError(errno.ECONNREFUSED, f"cannot connect to PostgreSQL: {e}") from e
        with first:
            self._ensure_vector(first)
            found = migrate(first, schema, dim)
            if found > SCHEMA_VERSION:
                raise StoreVersionError(f"schema {schema!r} was written by a newer trimem (version {found})")
            self._check_meta(first)

        def configure(conn: Any) -> None:
            conn.execute(f"SET synchronous_commit = {commit}")
            # a prepared statement keeps one plan: partitions are chosen as it runs, not planned
            # for again on every call (most of a short statement's time)
            conn.execute("SET plan_cache_mode = force_generic_plan")
            if dim:
                from pgvector.psycopg import register_vector

                register_vector(conn)
                conn.execute("SET hnsw.iterative_scan = relaxed_order")
                conn.execute("SET hnsw.ef_search = 100")

        def check(conn: Any) -> None:
            if time.monotonic() - getattr(conn, "trimem_returned", float("-inf")) > _TRUSTED_FOR:
                ConnectionPool.check_connection(conn)

        # a connection idle for a while is checked as it leaves the pool: after a server restart
        # the first call reconnects instead of failing on a dead socket (one back from use just
        # now is not asked: a round trip per statement is most of a short statement's cost)
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=pool_size, kwargs={"autocommit": True}, configure=configure, open=True,
            check=check, timeout=timeout,
        )  # fmt: skip
        # a memory dropped without close() still returns its connections (not in the collector's
        # thread, where the pool cannot join its workers)
        self._release = weakref.finalize(self, _close_all, self._pool, self._locks)

    # -- opening ----------------------------------------------------------------------------------

    def _ensure_vector(self, conn: Any) -> None:
        if not self._dim:
            return
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except self._psycopg.Error as e:
            raise DependencyError(
                "the database lacks the pgvector extension and this role may not create it: an "
                "administrator runs CREATE EXTENSION vector once (pgvector >= 0.8)"
            ) from e

    def _check_meta(self, conn: Any) -> None:
        want = {
            "embedder": self._meta.embedder or "",
            "dim": str(self._dim),
            "analysis": f"stem={self._stem} stopwords={self._stopwords}",
        }
        s = self._schema
        with conn.transaction():
            rows = dict(
                conn.execute(f"SELECT name, value FROM {s}.meta WHERE name = ANY(%s)", (list(want),)).fetchall()
            )
            if not rows:
                for name, value in want.items():
                    conn.execute(
                        f"INSERT INTO {s}.meta (name, value) VALUES (%s, %s) ON CONFLICT DO NOTHING", (name, value)
                    )
                return
        if rows.get("embedder") != want["embedder"] or rows.get("dim") != want["dim"]:
            err = EmbedderMismatchError(
                f"schema {s!r} was built with embedder {rows.get('embedder')!r} (dim {rows.get('dim')}), but this "
                f"Memory uses {self._meta.embedder!r} (dim {self._dim}); pass embedder= matching the store"
            )
            err.recorded = rows.get("embedder") or None
            raise err
        if rows.get("analysis") != want["analysis"]:
            raise StoreError(
                f"schema {s!r} was built with keyword analysis {rows.get('analysis')}, not {want['analysis']}"
            )

    # -- connections ------------------------------------------------------------------------------

    @contextmanager
    def _conn(self, *, write: bool = False, pipeline: bool = False) -> Iterator[Any]:
        """A pooled connection (in one transaction when `write`, its statements sent in a
        pipeline when asked); database errors become store errors: a lost connection a
        :class:`StoreIOError`, and the transaction rolls back."""
        if self._pool is None:
            raise StoreClosedError(f"the memory at {self.path} is closed; open it again to go on")
        psycopg = self._psycopg
        try:
            with self._pool.connection() as conn:
                if write:
                    with conn.pipeline() if pipeline else nullcontext(), conn.transaction():
                        yield conn
                else:
                    yield conn
                # stamped here, not by a pool reset hook: a hook makes the pool hand every
                # returned connection to its worker thread, a thread switch per statement
                conn.trimem_returned = time.monotonic()
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            raise StoreIOError(errno.EIO, f"PostgreSQL: {e}") from e
        except psycopg.Error as e:
            raise StoreError(f"PostgreSQL: {e}") from e

    def _t(self, table: str) -> str:
        return f"{self._schema}.{table}"

    # -- protocol: identity -----------------------------------------------------------------------

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @contextmanager
    def scope_lock(self, namespaces: Sequence[str]) -> Iterator[None]:
        """The process lock, then a session advisory lock per namespace (in one order, on a
        connection kept for locks), so that no other process runs a read-modify-write of these
        namespaces meanwhile. The process lock lets one thread at a time in, so one connection
        serves; re-entry takes nothing new."""
        keys = sorted({lock_key(self._schema, "scope", ns) for ns in namespaces})
        with self._lock:
            new = [k for k in keys if not self._held.get(k)]
            if new:
                self._advisory("SELECT pg_advisory_lock(%s)", new)
            for k in keys:
                self._held[k] = self._held.get(k, 0) + 1
            try:
                yield
            finally:
                for k in keys:
                    self._held[k] -= 1
                if new:
                    self._advisory("SELECT pg_advisory_unlock(%s)", new)

    def _advisory(self, statement: str, keys: list[int]) -> None:
        psycopg = self._psycopg
        try:
            if self._locks.conn is None or self._locks.conn.closed:
                self._locks.conn = psycopg.connect(self._dsn, autocommit=True)
            for k in keys:
                self._locks.conn.execute(statement, (k,))
        except psycopg.Error as e:
            # a lost connection lost its locks with it: the next call connects again
            self._locks.close()
            self._held.clear()
            raise StoreIOError(errno.EIO, f"PostgreSQL (advisory lock): {e}") from e

    @property
    def concurrent_reads(self) -> bool:
        return True

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def closed(self) -> bool:
        return self._pool is None

    # -- protocol: writes -------------------------------------------------------------------------

    def reserve_ids(self, n: int) -> int:
        # committed without waiting for the flush: the write that uses these ids waits for its
        # own, which (the log being sequential) covers this one; ids of a write never made may
        # be handed out again after a crash, harmlessly
        with self._conn() as conn:
            row = conn.execute(
                "WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true)) "
                f"UPDATE {self._t('counters')} SET value = value + %s FROM unflushed WHERE name = 'last_id' "
                "RETURNING value",
                (n,),
            ).fetchone()
        return int(row[0]) - n + 1

    def release_ids(self, first: int, n: int) -> None:
        with self._conn() as conn:
            conn.execute(
                f"UPDATE {self._t('counters')} SET value = %s WHERE name = 'last_id' AND value = %s",
                (first - 1, first + n - 1),
            )

    def write(self, ops: Sequence[Op]) -> dict[int, int]:
        """Applies `ops` in one transaction (with the pending use counts); returns, for retained
        episodes that duplicated one already stored, that one's id."""
        with self._lock:
            for attempt in itertools.count():
                try:
                    duplicates = self._write_once(ops)
                    break
                except StoreError as e:
                    # the server rolled the transaction back to break a deadlock (or a
                    # serialization conflict) with another writer: nothing of it was kept, so
                    # it is run again, after a pause that lets the other one finish
                    if attempt == _ROLLBACK_RETRIES or not str(getattr(e.__cause__, "sqlstate", "")).startswith("40"):
                        raise
                    time.sleep(random.uniform(0, _RETRY_PAUSE * 2**attempt))
            self._pending.clear()
            self._n_pending = 0
            return duplicates

    def _write_once(self, ops: Sequence[Op]) -> dict[int, int]:
        duplicates: dict[int, int] = {}
        # a small write's statements go in one pipeline (a round trip for the duplicate check,
        # one for the rest and the commit); a large one copies its rows
        small = all(len(getattr(op, "episodes", getattr(op, "docs", ()))) < SMALL_BATCH for op in ops)
        with self._conn(write=True, pipeline=small) as conn:
            self._flush_touches(conn)
            for op in ops:
                duplicates.update(self._apply(conn, op) or {})
        return duplicates

    def _apply(self, conn: Any, op: Op) -> dict[int, int] | None:
        handler = self._handlers.get(type(op))
        if handler is None:
            raise NotSupportedError(f"{type(op).__name__}: perceptual memory is not stored on PostgreSQL yet")
        return handler(conn, op)

    def _meta_op(self, conn: Any, op: OpMeta) -> None:
        if op != self._meta:
            raise EmbedderMismatchError(f"embedder {op.embedder!r} (dim {op.dim}) is not this store's")

    def _touch_op(self, conn: Any, op: OpTouch) -> None:
        self._count_uses(op.episode_ids, op.knowledge_ids, op.at, op.episode_mentions)
        self._flush_touches(conn)

    # -- use counts -------------------------------------------------------------------------------

    def _count_uses(self, episode_ids: Sequence[int], knowledge_ids: Sequence[int], at: int,
                    mentions: Sequence[int] = ()) -> None:  # fmt: skip
        for table, ids, column in (("episodes", episode_ids, 0), ("knowledge", knowledge_ids, 0),
                                   ("episodes", mentions, 1)):  # fmt: skip
            for i in ids:
                entry = self._pending.setdefault((table, int(i)), [0, 0, 0])
                entry[column] += 1
                entry[2] = max(entry[2], at)
                self._n_pending += 1

    def _flush_touches(self, conn: Any) -> None:
        by_table: dict[str, list[tuple[int, list[int]]]] = {}
        for (table, rid), counts in self._pending.items():
            by_table.setdefault(table, []).append((rid, counts))
        for table, rows in by_table.items():
            rows.sort()  # one lock order for every writer, taken first: a joined UPDATE locks in plan order
            ids = [r for r, _ in rows]
            conn.execute(f"SELECT FROM {self._t(table)} WHERE id = ANY(%s::bigint[]) ORDER BY id FOR UPDATE", (ids,))
            conn.execute(
                f"UPDATE {self._t(table)} r SET accesses = r.accesses + u.a, mentions = r.mentions + u.m, "
                "last_access = greatest(r.last_access, u.at) FROM unnest(%s::bigint[], %s::int[], %s::int[], "
                "%s::bigint[]) AS u(id, a, m, at) WHERE r.id = u.id",
                (ids, [c[0] for _, c in rows], [c[1] for _, c in rows], [c[2] for _, c in rows]),
            )

    def touch(
        self, episode_ids: Sequence[int], knowledge_ids: Sequence[int], at: int, mentions: Sequence[int] = ()
    ) -> None:
        """Counts uses in process; they reach the database with the next write, or once
        `touch_flush` are pending. A crash can lose the counts of the last few recalls."""
        with self._lock:
            self._count_uses(episode_ids, knowledge_ids, at, mentions)
            if self._n_pending >= self.touch_flush:
                self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self.write([])

    # -- protocol: episodes and knowledge ---------------------------------------------------------

    def _pending_counts(self, table: str, rid: int) -> tuple[int, int, int]:
        p = self._pending.get((table, rid))
        return (0, 0, 0) if p is None else (p[0], p[1], p[2])

    def episodes(self, ids: Sequence[int]) -> list[Episode | None]:
        with self._conn() as conn:
            rows = dict(
                conn.execute(
                    f"SELECT id, payload FROM {self._t('episodes')} WHERE id = ANY(%s)", (list(ids),)
                ).fetchall()
            )
        return [None if rows.get(i) is None else _episode.decode(rows[i]) for i in ids]

    def mentions(self, episode_id: int) -> list[Mention]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT payload FROM {self._t('mentions')} WHERE episode_id = %s ORDER BY seq", (episode_id,)
            ).fetchall()
        return [_mention.decode(r[0]) for r in rows]

    def episode_ids(
        self, namespace: str | None, *, session: str | None = None, time_range: tuple[int, int] | None = None
    ) -> list[int]:
        where: list[str] = ["true"]
        params: list[Any] = []
        for cond, value in (("namespace = %s", namespace), ("session = %s", session)):
            if value is not None:
                where.append(cond)
                params.append(value)
        if time_range is not None:
            where.append("ts >= %s AND ts < %s")
            params.extend(time_range)
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT id FROM {self._t('episodes')} WHERE {' AND '.join(where)} ORDER BY id", params
            ).fetchall()
        return [int(r[0]) for r in rows]

    def session_neighbours(self, namespace: str, ids: Sequence[int]) -> list[tuple[int | None, int | None]]:
        with self._conn() as conn:
            rows = conn.execute(
                search.neighbours_statement(self._t("episodes"), NEIGHBOUR_STEPS), (namespace, list(ids))
            )
            found = {i: (before, after) for i, before, after in rows.fetchall()}
        return [found.get(i, (None, None)) for i in ids]

    def _search(self, table: str, q: Query, policy: Policy, layer: str, *, every_fact: bool = False
                ) -> list[tuple[tuple[Any, ...], Scored]]:  # fmt: skip
        terms = sorted(set(terms_of(q.text, self._stem, self._stopwords))) if q.mode != "vector" else []
        policy_terms = policy.search_terms(layer, q.now)
        if q.vector_weight != 1.0:
            keywords, vector = policy_terms["weights"]
            policy_terms["weights"] = (keywords, vector * q.vector_weight)
        # a copy made in one step (a search may run on a reader thread while another thread
        # counts uses; iterating the live dict could see it change size)
        uses = sorted((rid, c) for (t, rid), c in list(self._pending.items()) if t == table)
        with self._conn() as conn:
            # a statement run often is prepared with one generic plan (no planning per search); a
            # short period is searched exactly by such a statement; a long one, or a session, is
            # planned for its values, whose selectivity picks the scan
            exact = self._short_period(conn, table, q)
            statement, params = hybrid_statement(
                self._schema, table, q, terms, policy_terms, min_cosine=-1.0 if every_fact else q.floors.cosine,
                uses=uses, exact=exact,
            )  # fmt: skip
            custom = (q.time_range is not None or q.session is not None) and not exact
            rows = conn.execute(statement, params, prepare=False if custom else None).fetchall()
        weak = label(rows, q, len(terms), every_fact=every_fact)
        order = [i for i, w in enumerate(weak) if not w] + [i for i, w in enumerate(weak) if w]
        return [(rows[i], _scored(rows[i], policy, weak=weak[i])) for i in order[: q.k]]

    def _short_period(self, conn: Any, table: str, q: Query) -> bool:
        """Whether the request's vector leg is over a period holding few of the tenant's rows."""
        if q.time_range is None or q.session is not None or not vector_leg(q):
            return False
        lo, hi = q.time_range
        return bool(conn.execute(span_statement(self._schema, table), {"ns": q.namespace, "lo": lo, "hi": hi})
                    .fetchone()[0])  # fmt: skip

    def search_episodes(self, query: Query, policy: Policy) -> list[RecalledEpisode]:
        return [RecalledEpisode(_episode.decode(r[Candidate.PAYLOAD]), s)
                for r, s in self._search("episodes", query, policy, "episodic")]  # fmt: skip

    def document(self, doc_id: int) -> KnowledgeDoc | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT payload FROM {self._t('knowledge')} WHERE id = %s", (doc_id,)).fetchone()
        return None if row is None else _document.decode(row[0])

    def document_ids(self, namespace: str | None) -> list[int]:
        with self._conn() as conn:
            if namespace is None:
                rows = conn.execute(f"SELECT id FROM {self._t('knowledge')} ORDER BY id").fetchall()
            else:
                rows = conn.execute(
                    f"SELECT id FROM {self._t('knowledge')} WHERE namespace = %s ORDER BY id", (namespace,)
                ).fetchall()
        return [int(r[0]) for r in rows]

    def document_by_source(self, agent_id: str, user_id: str | None, source: str) -> int | None:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT max(id) FROM {self._t('knowledge')} WHERE agent_id = %s AND user_id IS NOT DISTINCT FROM %s "
                "AND source = %s",
                (agent_id, user_id, source),
            ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def search_knowledge(self, query: Query, policy: Policy) -> list[RecalledKnowledge]:
        return [RecalledKnowledge(_document.decode(r[Candidate.PAYLOAD]), s)
                for r, s in self._search("knowledge", query, policy, "semantic")]  # fmt: skip

    def columns(self, collection: str, namespace: str | None) -> Columns:
        table = "episodes" if collection == "episodes" else "knowledge"
        where, params = ("WHERE namespace = %s", (namespace,)) if namespace is not None else ("", ())
        width = 4 * self._dim
        vec = f"CASE WHEN embedding IS NULL THEN 0 ELSE {width} END" if self._dim else "0"
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT id, ts, last_access, accesses, mentions, importance, "
                f"octet_length(payload) + {vec} FROM {self._t(table)} {where} ORDER BY id",
                params,
            ).fetchall()
        cols: list[Sequence[Any]] = list(zip(*rows)) if rows else [[] for _ in range(7)]
        out: Columns = {
            "ids": np.asarray(cols[0], dtype=np.uint64),
            "timestamps": np.asarray(cols[1], dtype=np.int64),
            "last_access": np.asarray(cols[2], dtype=np.int64),
            "accesses": np.asarray(cols[3], dtype=np.uint32),
            "mentions": np.asarray(cols[4], dtype=np.uint32),
            "importance": np.asarray(cols[5], dtype=np.float32),
            "bytes": np.asarray(cols[6], dtype=np.uint64),
        }
        if self._pending:
            for i, rid in enumerate(out["ids"].tolist()):
                a, m, at = self._pending_counts(table, rid)
                out["accesses"][i] += a
                out["mentions"][i] += m
                out["last_access"][i] = max(int(out["last_access"][i]), at)
        return out

    def stored(self, collection: str, ids: Sequence[int]) -> list[Stored]:
        table = "episodes" if collection == "episodes" else "knowledge"
        vec = "embedding" if self._dim else "NULL"
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT id, payload, {vec}, accesses, mentions, last_access FROM {self._t(table)} WHERE id = ANY(%s)",
                (list(ids),),
            ).fetchall()
        by_id = {int(r[0]): r for r in rows}
        out: list[Stored] = []
        for i in ids:
            r = by_id.get(int(i))
            if r is None:
                continue
            item: Episode | KnowledgeDoc = _episode.decode(r[1]) if table == "episodes" else _document.decode(r[1])
            vector = None if r[2] is None else as_array(r[2]).tobytes()
            a, m, at = self._pending_counts(table, int(i))
            out.append(Stored(item, vector, r[3] + a, r[4] + m, max(r[5], at)))
        return out

    # -- protocol: facts --------------------------------------------------------------------------

    def _versions(
        self, where: str, params: tuple[Any, ...]
    ) -> dict[tuple[str, str, str], tuple[list[FactVersion], bool]]:
        """(agent, user, key) → (its versions in order, pinned), for the facts `where` selects."""
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT v.agent_id, v.user_id, v.key, v.value, v.valid_from, v.valid_to, v.source, v.op, "
                f"p.key IS NOT NULL FROM {self._t('fact_versions')} v LEFT JOIN {self._t('pins')} p "
                "ON (p.agent_id, p.user_id, p.key) = (v.agent_id, v.user_id, v.key) "
                f"WHERE {where} ORDER BY v.agent_id, v.user_id, v.key, v.seq",
                params,
            ).fetchall()
        out: dict[tuple[str, str, str], tuple[list[FactVersion], bool]] = {}
        for a, u, k, v, f, t, s, o, pinned in rows:
            out.setdefault((a, u, k), ([], bool(pinned)))[0].append(FactVersion(v, f, t, list(s), o))
        return out

    def _facts_where(self, where: str, params: tuple[Any, ...]) -> list[tuple[str, str, Fact]]:
        out = []
        for (a, u, k), (versions, pinned) in self._versions(where, params).items():
            fact = current_fact(k, versions, pinned=pinned)
            if fact is not None:
                out.append((a, u, fact))
        return out

    def fact(self, agent_id: str, user_id: str, key: str) -> Fact | None:
        found = self._facts_where("v.agent_id = %s AND v.user_id = %s AND v.key = %s", (agent_id, user_id, key))
        return found[0][2] if found else None

    def facts(self, agent_id: str | None = None, user_id: str | None = None) -> list[tuple[str, str, Fact]]:
        if agent_id is None or user_id is None:
            return self._facts_where("true", ())
        return self._facts_where("v.agent_id = %s AND v.user_id = %s", (agent_id, user_id))

    def fact_history(self, agent_id: str, user_id: str, key: str) -> list[FactVersion]:
        with self._conn() as conn:
            return self._writes.history(conn, agent_id, user_id, key)

    def search_facts(self, query: Query, policy: Policy) -> list[tuple[Fact, Scored]]:
        found = self._search("fact_index", query, policy, "semantic", every_fact=True)
        if not found:
            return []
        agent_id, user_id = query.namespace.split("/", 1)
        current = {f.key: f for _, _, f in self.facts(agent_id, user_id)}
        out = []
        for row, scored in found:
            fact = current.get(bytes(row[Candidate.PAYLOAD]).decode("utf-8"))
            if fact is not None:
                out.append((fact, scored))
        return out

    def fact_vectors(self, agent_id: str, user_id: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        if not self._dim:
            return {}
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT key, embedding FROM {self._t('fact_index')} WHERE namespace = %s AND id = ANY(%s) "
                "AND embedding IS NOT NULL",
                (f"{agent_id}/{user_id}", [fact_entry((agent_id, user_id, k)) for k in keys]),
            ).fetchall()
        return {k: as_array(v) for k, v in rows}

    def fact_histories(self) -> list[tuple[str, str, str, list[FactVersion], bool]]:
        return [(a, u, k, versions, pinned) for (a, u, k), (versions, pinned) in self._versions("true", ()).items()]

    def aliases(self) -> dict[str, list[str]]:
        # one round trip (every recall reads them): the key names first, then the alias rows
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT NULL::text AS word, key, 0 AS seq FROM {self._t('key_names')} UNION ALL "
                f"SELECT word, key, seq FROM {self._t('aliases')} ORDER BY word NULLS FIRST, seq, key"
            ).fetchall()
        return alias_view(
            [k for w, k, _ in rows if w is None], _alias_rows([(w, k) for w, k, _ in rows if w is not None])
        )

    def alias_table(self) -> dict[str, list[str]]:
        with self._conn() as conn:
            return _alias_rows(
                conn.execute(f"SELECT word, key FROM {self._t('aliases')} ORDER BY word, seq").fetchall()
            )

    # -- protocol: lifecycle bookkeeping ----------------------------------------------------------

    def cursor(self, agent_id: str, user_id: str) -> int:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT episode_id FROM {self._t('cursors')} WHERE agent_id = %s AND user_id = %s",
                (agent_id, user_id),
            ).fetchone()
        return 0 if row is None else int(row[0])

    def newest_episode(self, agent_id: str, user_id: str) -> int:
        with self._conn() as conn:
            row = conn.execute(
                f"SELECT max(id) FROM {self._t('episodes')} WHERE namespace = %s", (f"{agent_id}/{user_id}",)
            ).fetchone()
        return 0 if row is None or row[0] is None else int(row[0])

    def users(self) -> list[tuple[str, str]]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT DISTINCT namespace FROM {self._t('episodes')}").fetchall()
        pairs = [r[0].split("/", 1) for r in rows]
        return sorted((a, u) for a, u in pairs)

    def saved_sessions(self) -> dict[str, OpWorking]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT session_id, payload FROM {self._t('working')}").fetchall()
        return {s: _working.decode(p) for s, p in rows}

    # -- protocol: the store ----------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Nothing to do: the server keeps its own write-ahead log (pending use counts are written)."""
        self.flush()

    def purge(self) -> None:
        """``VACUUM FULL`` of every table of the schema: each is rewritten without its deleted
        rows (and locked while it is). The server's WAL and backups keep what they keep."""
        self.flush()
        with self._lock, self._conn() as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY tablename", (self._schema,)
            ).fetchall()
            for (table,) in tables:
                conn.execute(sql.SQL("VACUUM FULL {}.{}").format(sql.Identifier(self._schema), sql.Identifier(table)))

    def recovery(self) -> Recovery | None:
        return None

    def index_stats(self) -> dict[str, dict[str, int | float | str | None]]:
        out: dict[str, dict[str, int | float | str | None]] = {}
        with self._conn() as conn:
            for table, name in zip(COLLECTIONS, ("episode_index", "knowledge_index", "fact_index")):
                n, total = conn.execute(
                    f"SELECT coalesce(sum(n_docs), 0)::bigint, coalesce(sum(total_len), 0)::float8 FROM {self._t('stats')} "
                    "WHERE collection = %s",
                    (table,),
                ).fetchone()
                out[name] = {"records": int(n), "avgdl": float(total) / n if n else 0.0, "dim": self._dim,
                             "backend": "postgresql"}  # fmt: skip
        return out

    def new_episodes(self, after: int) -> Iterator[Episode]:
        with self._conn() as conn:
            rows = conn.execute(
                f"SELECT payload FROM {self._t('episodes')} WHERE id > %s ORDER BY id", (after,)
            ).fetchall()
        return (_episode.decode(r[0]) for r in rows)

    @property
    def last_id(self) -> int:
        with self._conn() as conn:
            row = conn.execute(f"SELECT value FROM {self._t('counters')} WHERE name = 'last_id'").fetchone()
        return int(row[0])

    def perceptual(self) -> Any:
        raise NotSupportedError("perceptual memory is not stored on PostgreSQL yet: use the embedded store")

    def graph(self) -> Any:
        raise NotSupportedError("the memory graph is not stored on PostgreSQL yet: use the embedded store")

    def close(self) -> None:
        """Writes pending use counts and closes the pool."""
        with self._lock:
            if self._pool is None:
                return
            try:
                self.flush()
            finally:
                self._release()
                self._pool = None


def _alias_rows(rows: list[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for word, key in rows:
        out.setdefault(word, []).append(key)
    return out


def _scored(row: tuple[Any, ...], policy: Policy, *, weak: bool) -> Scored:
    score, decay, imp = float(row[Candidate.SCORE]), float(row[Candidate.DECAY]), float(row[Candidate.EFFECTIVE])
    acc, men = int(row[Candidate.ACCESSES]), int(row[Candidate.MENTIONS])
    bm25, cosine = row[Candidate.BM25], row[Candidate.COSINE]
    return Scored(
        score=score,
        bm25=None if bm25 is None else float(bm25),
        cosine=None if cosine is None else float(cosine),
        bm25_rank=int(row[Candidate.BM25_RANK] or 0),
        vector_rank=int(row[Candidate.VECTOR_RANK] or 0),
        decay=decay,
        importance=imp,
        base_importance=float(row[Candidate.IMPORTANCE]),
        accesses=acc,
        mentions=men,
        explain=explain(score=score, decay=decay, importance=imp, accesses=acc, mentions=men, policy=policy),
        weak=weak,
    )
