"""The PostgreSQL backend's writes: each op of a batch as statements of the caller's
transaction — records with their postings and statistics, near-duplicates (an exact token-set
overlap), document versions, fact versions, pins, aliases, forgetting, cursors and sessions."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from trimem._backend.embedded.backend import document_text, fact_entry
from trimem._backend.embedded.facts import current_fact
from trimem._backend.ops import OpAlias, OpCursor, OpFact, OpForget, OpKnowledge, OpPin, OpRetain, OpWorking
from trimem._backend.postgres.search import MAX_TERM_CHARS
from trimem._core import tokenize
from trimem.records import FactVersion, Mention, encode, indexed_time, search_text
from trimem.scope import knowledge_namespace
from trimem.text.keys import fact_text

__all__ = ["Writes", "lock_key", "terms_of"]


def terms_of(text: str, stem: bool, stopwords: bool) -> list[str]:
    """The index terms of `text`: the engine's tokenizer, each term cut to its stored length."""
    return [t[:MAX_TERM_CHARS] for t in tokenize(text, stem=stem, stopwords=stopwords)]


_TYPES = {"exact": "bytea", "agent_id": "text", "user_id": "text", "source": "text", "key": "text"}
"""The types of the columns some tables add to a searchable record (for binary COPY)."""


def _near(
    rows: list[tuple[int, set[str], bytes, np.ndarray | None]],
    mine: set[str],
    exact: bytes,
    vector: np.ndarray | None,
    dedup: tuple[float, float],
) -> int | None:
    """The first of a batch's earlier rows (id, term set, exact hash, vector) this one
    near-duplicates, by the rule of the stored ones."""
    min_jaccard, min_cosine = dedup
    for rid, theirs, their_exact, their_vector in rows:
        union = mine | theirs
        jaccard = 1.0 if not union else len(mine & theirs) / len(union)
        if their_exact != exact and jaccard < min_jaccard:
            continue
        if vector is not None and their_vector is not None:
            norms = float(np.linalg.norm(vector) * np.linalg.norm(their_vector))
            if norms > 0 and float(vector @ their_vector) / norms < min_cosine:
                continue
        return rid
    return None


def lock_key(schema: str, purpose: str, namespace: str) -> int:
    """The advisory lock (a signed 64-bit key) of one namespace of a schema, for one purpose (a
    retain's duplicate check, a read-modify-write): other schemas and purposes never contend."""
    digest = hashlib.blake2b("\x1f".join((schema, purpose, namespace)).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


class Writes:
    """The statements of each op, in a schema; every value a parameter."""

    def __init__(self, schema: str, dim: int, *, stem: bool, stopwords: bool) -> None:
        self._schema, self._dim, self._stem, self._stopwords = schema, dim, stem, stopwords

    def _t(self, table: str) -> str:
        return f"{self._schema}.{table}"

    def _insert(
        self,
        conn: Any,
        table: str,
        rows: Sequence[tuple[int, str, int, str | None, float, str, bytes, dict[str, Any]]],
        vectors: np.ndarray | None,
    ) -> None:
        """Inserts searchable records (id, namespace, ts, session, importance, indexed text,
        payload, extra columns) with their postings — each with one binary COPY — and counts them
        in the statistics."""
        if not rows:
            return
        extra = list(rows[0][7])
        cols = ["id", "namespace", "ts", "session", "importance", "dl", "terms", "payload", *extra]
        types = ["int8", "text", "int8", "text", "float4", "int4", "text[]", "bytea", *(_TYPES[c] for c in extra)]
        with_vectors = vectors is not None and self._dim > 0
        if with_vectors:
            cols.append("embedding")
            types.append("vector")
        grown: Counter[str] = Counter()
        docs: Counter[str] = Counter()
        postings: list[tuple[str, str, int, int, int]] = []
        with conn.cursor() as cur:
            with cur.copy(f"COPY {self._t(table)} ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(types)
                for i, (rid, ns, ts, session, importance, text, payload, more) in enumerate(rows):
                    terms = terms_of(text, self._stem, self._stopwords)
                    values: list[Any] = [rid, ns, ts, session, importance, len(terms), terms, payload, *more.values()]
                    if with_vectors:
                        assert vectors is not None
                        values.append(np.asarray(vectors[i], dtype=np.float32))
                    copy.write_row(values)
                    postings.extend((ns, t, rid, c, len(terms)) for t, c in Counter(terms).items())
                    grown[ns] += len(terms)
                    docs[ns] += 1
            if postings:
                statement = f"COPY {self._t(table + '_terms')} (namespace, term, id, tf, dl) FROM STDIN (FORMAT BINARY)"
                with cur.copy(statement) as copy:
                    copy.set_types(["text", "text", "int8", "int4", "int4"])
                    for posting in postings:
                        copy.write_row(posting)
        self._count(conn, table, docs, grown)

    def _count(self, conn: Any, table: str, docs: Counter[str], lengths: Counter[str]) -> None:
        for ns in docs:
            conn.execute(
                f"INSERT INTO {self._t('stats')} (collection, namespace, n_docs, total_len) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (collection, namespace) DO UPDATE SET n_docs = stats.n_docs + excluded.n_docs, "
                "total_len = stats.total_len + excluded.total_len",
                (table, ns, docs[ns], lengths[ns]),
            )

    def _delete(self, conn: Any, table: str, ids: Sequence[int]) -> list[int]:
        """Deletes searchable records with their postings; returns the ids that were there."""
        if not ids:
            return []
        gone = conn.execute(
            f"DELETE FROM {self._t(table)} WHERE id = ANY(%s) RETURNING id, namespace, dl, terms", (list(ids),)
        ).fetchall()
        docs: Counter[str] = Counter()
        lengths: Counter[str] = Counter()
        for rid, ns, dl, terms in gone:
            if terms:
                conn.execute(
                    f"DELETE FROM {self._t(table + '_terms')} WHERE namespace = %s AND term = ANY(%s) AND id = %s",
                    (ns, list(set(terms)), rid),
                )
            docs[ns] -= 1
            lengths[ns] -= dl
        self._count(conn, table, docs, lengths)
        return [int(r[0]) for r in gone]

    def retain(self, conn: Any, op: OpRetain) -> dict[int, int]:
        eps = op.episodes
        vectors = None if op.vectors is None else np.frombuffer(op.vectors, dtype=np.float32).reshape(len(eps), -1)
        duplicates: dict[int, int] = {}
        if op.dedup is not None:  # the duplicate check and the insert, atomic per namespace
            for key in sorted({lock_key(self._schema, "retain", f"{e.agent_id}/{e.user_id}") for e in eps}):
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
        rows: list[tuple[int, str, int, str | None, float, str, bytes, dict[str, Any]]] = []
        kept: list[int] = []  # positions of the rows inserted
        batch: dict[str, list[tuple[int, set[str], bytes, np.ndarray | None]]] = {}  # this op's rows, by namespace
        for i, e in enumerate(eps):
            ns = f"{e.agent_id}/{e.user_id}"
            text = search_text(e)
            terms = terms_of(text, self._stem, self._stopwords)
            exact = hashlib.blake2b("\x1f".join(terms).encode("utf-8"), digest_size=16).digest()
            vector = None if vectors is None else vectors[i]
            if op.dedup is not None:
                dup = _near(batch.get(ns, []), set(terms), exact, vector, op.dedup)
                if dup is None:
                    dup = self._duplicate_of(conn, ns, terms, exact, vector, op.dedup)
                if dup is not None:
                    duplicates[e.id] = dup
                    continue
                batch.setdefault(ns, []).append((e.id, set(terms), exact, vector))
            rows.append((e.id, ns, indexed_time(e), e.session_id, e.importance, text, encode(e), {"exact": exact}))
            kept.append(i)
        self._insert(conn, "episodes", rows, None if vectors is None else vectors[kept])
        by_id = {e.id: e for e in eps}
        for new, dup in duplicates.items():  # after the insert: a duplicate of this op's own rows too
            e = by_id[new]
            conn.execute(
                f"UPDATE {self._t('episodes')} SET mentions = mentions + 1, "
                "last_access = greatest(last_access, %s) WHERE id = %s",
                (e.timestamp, dup),
            )
            mention = Mention(at=e.timestamp, text=e.text, session_id=e.session_id, metadata=e.metadata)
            conn.execute(
                f"INSERT INTO {self._t('mentions')} (episode_id, payload) VALUES (%s, %s)", (dup, encode(mention))
            )
        return duplicates

    def _duplicate_of(
        self,
        conn: Any,
        ns: str,
        terms: list[str],
        exact: bytes,
        vector: np.ndarray | None,
        dedup: tuple[float, float],
    ) -> int | None:
        """The stored episode of `ns` this one near-duplicates: the same token sequence, or a
        token set overlapping by ``min_jaccard`` — with, when both have vectors, a cosine of at
        least ``min_cosine``. The overlap is exact (the sets themselves, not sketches)."""
        min_jaccard, min_cosine = dedup
        mine = set(terms)
        need = max(1, int(np.ceil(min_jaccard * len(mine)))) if mine else 0
        cos = "NULL::float8"
        params: list[Any] = []
        if vector is not None and self._dim:
            cos = "CASE WHEN e.embedding IS NULL THEN NULL ELSE 1 - (e.embedding <=> %s) END"
            params.append(np.asarray(vector, dtype=np.float32))
        rows = conn.execute(
            f"SELECT e.id, e.terms, {cos} FROM {self._t('episodes')} e WHERE e.namespace = %s AND (e.exact = %s "
            f"OR e.id IN (SELECT id FROM {self._t('episodes_terms')} WHERE namespace = %s AND term = ANY(%s) "
            "GROUP BY id HAVING count(*) >= %s)) ORDER BY e.id",
            (*params, ns, exact, ns, list(mine), need),
        ).fetchall()
        for rid, stored, cosine in rows:
            theirs = set(stored)
            union = mine | theirs
            jaccard = 1.0 if not union else len(mine & theirs) / len(union)
            if jaccard >= min_jaccard and (cosine is None or cosine >= min_cosine):
                return int(rid)
        return None

    def knowledge(self, conn: Any, op: OpKnowledge) -> None:
        self._delete(conn, "knowledge", op.replaces)
        vectors = None if op.vectors is None else np.frombuffer(op.vectors, dtype=np.float32).reshape(len(op.docs), -1)
        rows = [
            (d.id, knowledge_namespace(d.agent_id, d.user_id), d.timestamp, None, 0.5, document_text(d), encode(d),
             {"agent_id": d.agent_id, "user_id": d.user_id, "source": d.source})
            for d in op.docs
        ]  # fmt: skip
        self._insert(conn, "knowledge", rows, vectors)

    def fact(self, conn: Any, op: OpFact) -> None:
        fk = (op.agent_id, op.user_id, op.key)
        versions = self.history(conn, *fk)
        if versions and versions[-1].valid_to is None:
            conn.execute(
                f"UPDATE {self._t('fact_versions')} SET valid_to = %s WHERE agent_id = %s AND user_id = %s "
                "AND key = %s AND valid_to IS NULL",
                (op.at, *fk),
            )
        had = current_fact(op.key, versions, pinned=False) is not None
        kind = "delete" if op.value is None else ("update" if had else "set")
        conn.execute(
            f"INSERT INTO {self._t('fact_versions')} (agent_id, user_id, key, seq, value, valid_from, valid_to, "
            "source, op) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (*fk, len(versions), op.value, op.at, op.at if op.value is None else None, list(op.source), kind),
        )
        conn.execute(f"INSERT INTO {self._t('key_names')} (key) VALUES (%s) ON CONFLICT DO NOTHING", (op.key,))
        entry = fact_entry(fk)
        self._delete(conn, "fact_index", [entry])
        if op.value is not None:
            vector = None if op.vector is None else np.frombuffer(op.vector, dtype=np.float32)[None, :]
            row = (entry, f"{op.agent_id}/{op.user_id}", op.at, None, 0.5, fact_text(op.key, op.value),
                   op.key.encode("utf-8"), {"key": op.key})  # fmt: skip
            self._insert(conn, "fact_index", [row], vector)

    def alias(self, conn: Any, op: OpAlias) -> None:
        for w in op.words:
            for key in op.keys:
                conn.execute(
                    f"INSERT INTO {self._t('aliases')} (word, key) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (w.lower(), key),
                )

    def pin(self, conn: Any, op: OpPin) -> None:
        if op.pinned:
            conn.execute(
                f"INSERT INTO {self._t('pins')} (agent_id, user_id, key) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (op.agent_id, op.user_id, op.key),
            )
        else:
            conn.execute(
                f"DELETE FROM {self._t('pins')} WHERE agent_id = %s AND user_id = %s AND key = %s",
                (op.agent_id, op.user_id, op.key),
            )

    def forget(self, conn: Any, op: OpForget) -> None:
        gone = self._delete(conn, "episodes", op.episode_ids)
        if gone:
            conn.execute(f"DELETE FROM {self._t('mentions')} WHERE episode_id = ANY(%s)", (gone,))
            # forgotten episodes leave every fact's provenance
            conn.execute(
                f"UPDATE {self._t('fact_versions')} SET source = ARRAY(SELECT x FROM unnest(source) AS x "
                "WHERE x <> ALL(%s)) WHERE source && %s::bigint[]",
                (list(op.episode_ids), list(op.episode_ids)),
            )
        self._delete(conn, "knowledge", op.knowledge_ids)
        for agent_id, user_id, key in op.facts:
            self._drop_facts(conn, "agent_id = %s AND user_id = %s AND key = %s", (agent_id, user_id, key))
        for agent_id, user_id in op.users:
            self._drop_facts(conn, "agent_id = %s AND user_id = %s", (agent_id, user_id))
            conn.execute(f"DELETE FROM {self._t('cursors')} WHERE agent_id = %s AND user_id = %s", (agent_id, user_id))

    def _drop_facts(self, conn: Any, where: str, params: tuple[str, ...]) -> None:
        keys = conn.execute(
            f"SELECT DISTINCT agent_id, user_id, key FROM {self._t('fact_versions')} WHERE {where}", params
        ).fetchall()
        self._delete(conn, "fact_index", [fact_entry((a, u, k)) for a, u, k in keys])
        for table in ("fact_versions", "pins"):
            conn.execute(f"DELETE FROM {self._t(table)} WHERE {where}", params)

    def cursor(self, conn: Any, op: OpCursor) -> None:
        conn.execute(
            f"INSERT INTO {self._t('cursors')} (agent_id, user_id, episode_id) VALUES (%s, %s, %s) "
            "ON CONFLICT (agent_id, user_id) DO UPDATE SET episode_id = excluded.episode_id",
            (op.agent_id, op.user_id, op.episode_id),
        )

    def save_working(self, conn: Any, op: OpWorking) -> None:
        if op.turns is None:
            conn.execute(f"DELETE FROM {self._t('working')} WHERE session_id = %s", (op.session_id,))
        else:
            conn.execute(
                f"INSERT INTO {self._t('working')} (session_id, payload) VALUES (%s, %s) "
                "ON CONFLICT (session_id) DO UPDATE SET payload = excluded.payload",
                (op.session_id, encode(op)),
            )

    def history(self, conn: Any, agent_id: str, user_id: str, key: str) -> list[FactVersion]:
        rows = conn.execute(
            f"SELECT value, valid_from, valid_to, source, op FROM {self._t('fact_versions')} "
            "WHERE agent_id = %s AND user_id = %s AND key = %s ORDER BY seq",
            (agent_id, user_id, key),
        ).fetchall()
        return [FactVersion(v, f, t, list(s), o) for v, f, t, s, o in rows]
