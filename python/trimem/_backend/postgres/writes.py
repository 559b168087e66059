"""The PostgreSQL backend's writes: each op of a batch as statements of the caller's
transaction — records with their postings and statistics, near-duplicates (an exact token-set
overlap), document versions, fact versions, pins, aliases, forgetting, cursors and sessions."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from trimem._backend.embedded.facts import current_fact
from trimem._backend.entries import document_text, fact_entry
from trimem._backend.ops import OpAlias, OpCursor, OpFact, OpForget, OpKnowledge, OpPin, OpRetain, OpWorking
from trimem._backend.postgres.search import MAX_TERM_CHARS
from trimem._core import tokenize
from trimem.records import FactVersion, Mention, encode, indexed_time, replaced_value, search_text
from trimem.scope import knowledge_namespace
from trimem.text.keys import fact_text

__all__ = ["SMALL_BATCH", "Writes", "as_array", "lock_key", "terms_of"]


def terms_of(text: str, stem: bool, stopwords: bool) -> list[str]:
    """The index terms of `text`: the engine's tokenizer, each term cut to its stored length."""
    return [t[:MAX_TERM_CHARS] for t in tokenize(text, stem=stem, stopwords=stopwords)]


_TYPES = {"exact": "bytea", "agent_id": "text", "user_id": "text", "source": "text", "key": "text"}
"""The types of the columns some tables add to a searchable record (for binary COPY)."""


def _similar(mine: set[str], theirs: set[str], vector: Any, their_vector: Any, dedup: tuple[float, float]) -> bool:
    """The near-duplicate rule: token sets overlapping by ``min_jaccard`` and, when both have
    vectors, a cosine of at least ``min_cosine``."""
    min_jaccard, min_cosine = dedup
    union = mine | theirs
    if (1.0 if not union else len(mine & theirs) / len(union)) < min_jaccard:
        return False
    if vector is not None and their_vector is not None:
        norms = float(np.linalg.norm(vector) * np.linalg.norm(their_vector))
        if norms > 0 and float(vector @ their_vector) / norms < min_cosine:
            return False
    return True


def _prefix(terms: set[str], min_jaccard: float) -> int:
    """How many of a term set's terms a near-duplicate must share one of: a set overlapping by
    ``min_jaccard`` shares at least ``need`` terms, so it holds one of any ``len - need + 1``."""
    if not terms:
        return 0
    return len(terms) - max(1, math.ceil(min_jaccard * len(terms) - 1e-9)) + 1


class _New(NamedTuple):
    """A retained episode as the duplicate check reads it."""

    ns: str
    terms: list[str]  # in order, as indexed
    words: set[str]
    exact: bytes  # hash of the token sequence


class _Kept:
    """One namespace's rows of this op so far (id, term set, vector), indexed by term and by
    exact hash, so that each new row is compared only with rows sharing one of its rarest terms."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, set[str], np.ndarray | None]] = []
        self.by_exact: dict[bytes, int] = {}
        self.postings: dict[str, list[int]] = {}

    def near(self, mine: set[str], exact: bytes, vector: np.ndarray | None, dedup: tuple[float, float]) -> int | None:
        """The first kept row this one near-duplicates, by the rule of the stored ones."""
        found = self.by_exact.get(exact)
        candidates = set() if found is None else {found}
        for term in sorted(mine, key=lambda t: (len(self.postings.get(t, ())), t))[: _prefix(mine, dedup[0])]:
            candidates.update(self.postings.get(term, ()))
        for at in sorted(candidates):
            rid, theirs, their_vector = self.rows[at]
            if _similar(mine, theirs, vector, their_vector, dedup):
                return rid
        return None

    def add(self, rid: int, mine: set[str], exact: bytes, vector: np.ndarray | None) -> None:
        self.by_exact.setdefault(exact, len(self.rows))
        for term in mine:
            self.postings.setdefault(term, []).append(len(self.rows))
        self.rows.append((rid, mine, vector))


_DF_CAP = 64
"""Postings counted per term to rank a new episode's terms by rarity for the duplicate check:
the rare ones are told apart exactly, the common ones (never asked for) cost no more than this."""


SMALL_BATCH = 32
"""Below this many records a write is small: its statements go in one pipeline (inserts, not a
COPY, which is a round trip of its own), and its duplicate check asks the postings which of its
terms are rare (a large batch's own term counts are guess enough)."""


def as_array(value: Any) -> np.ndarray:
    """A stored vector as float32 (pgvector hands back its own type or an array)."""
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


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
        rows: Sequence[tuple[int, str, int, str | None, float, list[str], bytes, dict[str, Any]]],
        vectors: np.ndarray | None,
    ) -> None:
        """Inserts searchable records (id, namespace, ts, session, importance, indexed terms,
        payload, extra columns) with their postings — a batch with one binary COPY each — and
        counts them in the statistics."""
        if not rows:
            return
        extra = list(rows[0][7])
        cols = ["id", "namespace", "ts", "session", "importance", "dl", "terms", "payload", *extra]
        with_vectors = vectors is not None and self._dim > 0
        if with_vectors:
            cols.append("embedding")
        grown: Counter[str] = Counter()
        docs: Counter[str] = Counter()
        postings: list[tuple[str, str, int, int, int]] = []
        records: list[list[Any]] = []
        for i, (rid, ns, ts, session, importance, terms, payload, more) in enumerate(rows):
            values: list[Any] = [rid, ns, ts, session, importance, len(terms), terms, payload, *more.values()]
            if with_vectors:
                assert vectors is not None
                values.append(np.asarray(vectors[i], dtype=np.float32))
            records.append(values)
            postings.extend((ns, t, rid, c, len(terms)) for t, c in Counter(terms).items())
            grown[ns] += len(terms)
            docs[ns] += 1
        if conn.pgconn.pipeline_status:  # a COPY cannot go in a pipeline; statements can
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO {self._t(table)} ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
                    records,
                )
            if postings:
                ns_, term_, id_, tf_, dl_ = (list(c) for c in zip(*postings, strict=True))
                conn.execute(
                    f"INSERT INTO {self._t(table + '_terms')} (namespace, term, id, tf, dl) "
                    "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::int[], %s::int[])",
                    (ns_, term_, id_, tf_, dl_),
                )
        else:
            types = ["int8", "text", "int8", "text", "float4", "int4", "text[]", "bytea", *(_TYPES[c] for c in extra)]
            with conn.cursor() as cur:
                with cur.copy(f"COPY {self._t(table)} ({', '.join(cols)}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types([*types, "vector"] if with_vectors else types)
                    for values in records:
                        copy.write_row(values)
                if postings:
                    statement = (
                        f"COPY {self._t(table + '_terms')} (namespace, term, id, tf, dl) FROM STDIN (FORMAT BINARY)"
                    )
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
        found: list[_New] = []
        for e in eps:
            terms = terms_of(search_text(e), self._stem, self._stopwords)
            exact = hashlib.blake2b("\x1f".join(terms).encode("utf-8"), digest_size=16).digest()
            found.append(_New(f"{e.agent_id}/{e.user_id}", terms, set(terms), exact))
        stored: dict[int, int] = {}
        if op.dedup is not None:  # the duplicate check and the insert, atomic per namespace
            for key in sorted({lock_key(self._schema, "retain", seen.ns) for seen in found}):
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
            stored = self._stored_duplicates(conn, found, vectors, op.dedup)
        rows: list[tuple[int, str, int, str | None, float, list[str], bytes, dict[str, Any]]] = []
        kept: list[int] = []  # positions of the rows inserted
        batch: dict[str, _Kept] = {}  # this op's rows, by namespace
        for i, (e, seen) in enumerate(zip(eps, found, strict=True)):
            vector = None if vectors is None else vectors[i]
            if op.dedup is not None:
                kept_here = batch.setdefault(seen.ns, _Kept())
                dup = kept_here.near(seen.words, seen.exact, vector, op.dedup)
                if dup is None:
                    dup = stored.get(i)
                if dup is not None:
                    duplicates[e.id] = dup
                    continue
                kept_here.add(e.id, seen.words, seen.exact, vector)
            rows.append((e.id, seen.ns, indexed_time(e), e.session_id, e.importance, seen.terms, encode(e),
                         {"exact": seen.exact}))  # fmt: skip
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

    def _stored_duplicates(
        self,
        conn: Any,
        found: list[_New],
        vectors: np.ndarray | None,
        dedup: tuple[float, float],
    ) -> dict[int, int]:
        """For each new episode (by its position in `found`) the first stored episode of its
        namespace it near-duplicates — the same token sequence, or token sets overlapping by
        ``min_jaccard`` with, when both have vectors, a cosine of at least ``min_cosine`` — in
        one statement for the whole batch.

        The overlap is exact (the sets themselves, not sketches); candidates are found by prefix
        filtering: a set overlapping by ``min_jaccard`` shares at least ``need`` of the new
        episode's terms, so it holds one of any ``len - need + 1`` of them (:func:`_prefix`); the
        rarest are asked for, whose postings are short however large the namespace grows."""
        pair_rows: list[int] = []
        pair_terms: list[str] = []
        # a large batch ranks its terms by how often the batch itself uses them (a fair guess of
        # the stored ones, asked of no index); a small one asks the postings (a few lookups)
        ask = len(found) < SMALL_BATCH
        in_batch = Counter((new.ns, t) for new in found for t in new.words)
        for i, new in enumerate(found):
            ns = new.ns
            if ask:  # every term: the statement ranks them
                terms = sorted(new.words)
            else:
                terms = sorted(new.words, key=lambda t: (in_batch[ns, t], t))[: _prefix(new.words, dedup[0])]
            pair_rows.extend([i] * len(terms))
            pair_terms.extend(terms)
        postings = self._t("episodes_terms")
        ranked = (
            f"""df AS (SELECT d.ns, d.term, (SELECT count(*) FROM (SELECT FROM {postings} t
                   WHERE t.namespace = d.ns AND t.term = d.term LIMIT {_DF_CAP}) capped) AS df
                   FROM (SELECT DISTINCT ns, term FROM pairs) d),
            ranked AS (SELECT pairs.i, pairs.ns, pairs.term FROM (SELECT pairs.*,
                       row_number() OVER (PARTITION BY pairs.i ORDER BY df.df, pairs.term) AS r
                       FROM pairs JOIN df USING (ns, term)) pairs JOIN b USING (i) WHERE pairs.r <= b.p)"""
            if ask
            else "ranked AS (SELECT * FROM pairs)"
        )
        got = conn.execute(
            f"""WITH b AS (SELECT * FROM unnest(%s::int[], %s::text[], %s::bytea[], %s::int[]) AS b(i, ns, exact, p)),
            pairs AS (SELECT p.i, b.ns, p.term FROM unnest(%s::int[], %s::text[]) AS p(i, term) JOIN b USING (i)),
            {ranked},
            cand AS (SELECT ranked.i, ranked.ns, t.id FROM ranked
                     JOIN {postings} t ON t.namespace = ranked.ns AND t.term = ranked.term
                     UNION SELECT b.i, b.ns, e.id FROM b JOIN {self._t("episodes")} e
                     ON e.namespace = b.ns AND e.exact = b.exact)
            SELECT cand.i, e.id, e.terms, {"e.embedding" if self._dim else "NULL::bytea"} FROM cand
            JOIN {self._t("episodes")} e ON e.namespace = cand.ns AND e.id = cand.id ORDER BY cand.i, e.id""",
            (
                list(range(len(found))),
                [new.ns for new in found],
                [new.exact for new in found],
                [_prefix(new.words, dedup[0]) for new in found],
                pair_rows,
                pair_terms,
            ),
            binary=True,  # vectors as bytes, not as text to parse
        ).fetchall()
        duplicates: dict[int, int] = {}
        for i, rid, stored, embedding in got:
            if i in duplicates:
                continue
            theirs = None if embedding is None else as_array(embedding)
            if _similar(found[i].words, set(stored), None if vectors is None else vectors[i], theirs, dedup):
                duplicates[i] = int(rid)
        return duplicates

    def knowledge(self, conn: Any, op: OpKnowledge) -> None:
        self._delete(conn, "knowledge", op.replaces)
        vectors = None if op.vectors is None else np.frombuffer(op.vectors, dtype=np.float32).reshape(len(op.docs), -1)
        rows = [
            (d.id, knowledge_namespace(d.agent_id, d.user_id), d.timestamp, None, 0.5,
             terms_of(document_text(d), self._stem, self._stopwords), encode(d),
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
            was = replaced_value(versions)
            terms = terms_of(fact_text(op.key, op.value, was), self._stem, self._stopwords)
            row = (
                entry,
                f"{op.agent_id}/{op.user_id}",
                op.at,
                None,
                0.5,
                terms,
                op.key.encode("utf-8"),
                {"key": op.key},
            )
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
