"""The item collection on PostgreSQL: one ``items`` table (the value as ``jsonb``, the namespace
as its labels and as one text for prefix ranges, the expiry), its postings for the keyword leg,
and one hybrid statement whose legs both apply the namespace prefix, the expiry and the value
filter — the filter compiled to ``jsonb`` conditions that mean what :func:`trimem._backend.items.matches`
means — fused by reciprocal rank as the embedded engine fuses items (k 60, equal weights).

A write takes a transaction-scoped advisory lock per (namespace, key), in order, so two
processes writing one key serialise and its row, postings and statistics stay in step.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Final

import numpy as np

from trimem._backend.items import NUMBER, ItemQuery
from trimem._backend.ops import ItemKey, OpItemDelete, OpItemPut, OpItemRefresh
from trimem._backend.postgres.search import K1, B
from trimem._backend.postgres.writes import as_array, lock_key, terms_of
from trimem.records import Item

__all__ = ["ItemRows", "ItemWrites", "item_tables", "ns_path"]

SEP: Final = "\x1f"
"""Joins a namespace's labels into one text (labels hold no control character)."""
RRF_K: Final = 60.0
_COLUMNS: Final = "id, namespace, key, value, created_at, updated_at, expires_at, ttl"


def ns_path(namespace: Sequence[str]) -> str:
    return SEP.join(namespace)


def item_tables(dim: int) -> list[str]:
    """The statements that make the item tables (``{s}`` is the schema)."""
    vector = f"embedding vector({dim})," if dim else ""
    return [
        f"""CREATE TABLE IF NOT EXISTS {{s}}.items (
            id bigint PRIMARY KEY,
            ns_path text COLLATE "C" NOT NULL,
            namespace text[] NOT NULL,
            key text NOT NULL,
            value jsonb NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            expires_at bigint,
            ttl float8,
            body text NOT NULL,
            dl integer NOT NULL,
            {vector}
            UNIQUE (ns_path, key)
        )""",
        "CREATE INDEX IF NOT EXISTS items_expiry ON {s}.items (expires_at) WHERE expires_at IS NOT NULL",
        *(
            ["CREATE INDEX IF NOT EXISTS items_hnsw ON {s}.items USING hnsw (embedding vector_cosine_ops)"]
            if dim
            else []
        ),
        """CREATE TABLE IF NOT EXISTS {s}.items_terms (
            term text NOT NULL,
            id bigint NOT NULL,
            tf integer NOT NULL,
            dl integer NOT NULL,
            PRIMARY KEY (term, id)
        )""",
        "CREATE INDEX IF NOT EXISTS items_terms_id ON {s}.items_terms (id)",
    ]


def _item(row: Sequence[Any]) -> Item:
    rid, namespace, key, value, created, updated, expires, ttl = row
    return Item(
        id=int(rid), namespace=tuple(namespace), key=key, value=value, created_at=int(created),
        updated_at=int(updated), expires_at=None if expires is None else int(expires), ttl=ttl,
    )  # fmt: skip


class ItemWrites:
    """The statements of the item ops, in a transaction the caller holds."""

    def __init__(self, schema: str, dim: int, *, stem: bool, stopwords: bool) -> None:
        self._s, self._dim, self._stem, self._stopwords = schema, dim, stem, stopwords

    def _lock(self, conn: Any, keys: Sequence[ItemKey]) -> None:
        for k in sorted({lock_key(self._s, "item", ns_path(ns) + "\x1e" + key) for ns, key in keys}):
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (k,))

    def _count(self, conn: Any, docs: int, length: int) -> None:
        if docs or length:
            conn.execute(
                f"INSERT INTO {self._s}.stats (collection, namespace, n_docs, total_len) VALUES ('items', '', %s, %s) "
                "ON CONFLICT (collection, namespace) DO UPDATE SET n_docs = stats.n_docs + excluded.n_docs, "
                "total_len = stats.total_len + excluded.total_len",
                (docs, length),
            )

    def put(self, conn: Any, op: OpItemPut) -> None:
        from psycopg.types.json import Jsonb

        self._lock(conn, [(i.namespace, i.key) for i in op.items])
        docs = length = 0
        for item, text, vector in zip(op.items, op.texts, op.vectors, strict=True):
            terms = terms_of(text, self._stem, self._stopwords) if text else []
            path = ns_path(item.namespace)
            old = conn.execute(
                f"SELECT id, dl FROM {self._s}.items WHERE ns_path = %s AND key = %s", (path, item.key)
            ).fetchone()
            emb = None if vector is None or not self._dim else np.frombuffer(vector, dtype=np.float32)
            values = (Jsonb(item.value), item.updated_at, item.expires_at, item.ttl, text, len(terms))
            vec_set = ", embedding = %s" if self._dim else ""
            if old is not None:
                rid = int(old[0])
                conn.execute(
                    f"UPDATE {self._s}.items SET value = %s, updated_at = %s, expires_at = %s, ttl = %s, body = %s, "
                    f"dl = %s{vec_set} WHERE id = %s",
                    (*values, *((emb,) if self._dim else ()), rid),
                )
                conn.execute(f"DELETE FROM {self._s}.items_terms WHERE id = %s", (rid,))
                length += len(terms) - int(old[1])
            else:
                rid = item.id
                cols = "id, ns_path, namespace, key, created_at, value, updated_at, expires_at, ttl, body, dl"
                conn.execute(
                    f"INSERT INTO {self._s}.items ({cols}{', embedding' if self._dim else ''}) "
                    f"VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s{', %s' if self._dim else ''})",
                    (rid, path, list(item.namespace), item.key, item.created_at, *values,
                     *((emb,) if self._dim else ())),
                )  # fmt: skip
                docs, length = docs + 1, length + len(terms)
            if terms:
                counts = Counter(terms)
                conn.execute(
                    f"INSERT INTO {self._s}.items_terms (term, id, tf, dl) "
                    "SELECT t, %s, c, %s FROM unnest(%s::text[], %s::int[]) AS u(t, c)",
                    (rid, len(terms), list(counts), list(counts.values())),
                )
        self._count(conn, docs, length)

    def delete(self, conn: Any, op: OpItemDelete) -> None:
        self._lock(conn, op.keys)
        docs = length = 0
        for ns, key in op.keys:
            expired = "" if op.expired_at is None else " AND expires_at <= %s"
            gone = conn.execute(
                f"DELETE FROM {self._s}.items WHERE ns_path = %s AND key = %s{expired} RETURNING id, dl",
                (ns_path(ns), key, *(() if op.expired_at is None else (op.expired_at,))),
            ).fetchone()
            if gone is not None:
                conn.execute(f"DELETE FROM {self._s}.items_terms WHERE id = %s", (gone[0],))
                docs, length = docs - 1, length - int(gone[1])
        self._count(conn, docs, length)

    def refresh(self, conn: Any, op: OpItemRefresh) -> None:
        for (ns, key), at in zip(op.keys, op.expires_at, strict=True):
            conn.execute(
                f"UPDATE {self._s}.items SET expires_at = %s WHERE ns_path = %s AND key = %s AND ttl IS NOT NULL",
                (at, ns_path(ns), key),
            )


class _Where:
    """Conditions on the items row ``i``, their values collected as named parameters."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.params: dict[str, Any] = {}

    def param(self, value: Any) -> str:
        name = f"w{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    def prefix(self, prefix: tuple[str, ...]) -> None:
        if prefix:
            p = ns_path(prefix)
            # the namespace itself, or one under it: a range of the "C"-ordered path
            self.parts.append(
                f"(i.ns_path = {self.param(p)} OR (i.ns_path > {self.param(p + SEP)} "
                f"AND i.ns_path < {self.param(p + chr(ord(SEP) + 1))}))"
            )

    def filter(self, f: Mapping[str, Any] | None) -> None:
        for k, cond in (f or {}).items():
            self._holds([k], cond)

    def _at(self, path: list[str]) -> str:
        return f"coalesce(i.value #> {self.param(path)}::text[], 'null'::jsonb)"

    def _holds(self, path: list[str], cond: Any) -> None:
        from psycopg.types.json import Jsonb

        if isinstance(cond, Mapping):
            ops = {k: v for k, v in cond.items() if isinstance(k, str) and k.startswith("$")}
            if ops:
                for op, operand in ops.items():
                    self._operator(path, op, operand)
                return
            self.parts.append(f"jsonb_typeof({self._at(path)}) = 'object'")
            for k, c in cond.items():
                self._holds([*path, k], c)
        elif isinstance(cond, (list, tuple)):
            at = self._at(path)
            self.parts.append(f"(jsonb_typeof({at}) = 'array' AND jsonb_array_length({at}) = {self.param(len(cond))})")
            for n, c in enumerate(cond):
                self._holds([*path, str(n)], c)
        else:
            self.parts.append(f"{self._at(path)} = {self.param(Jsonb(cond))}")

    def _operator(self, path: list[str], op: str, operand: Any) -> None:
        from psycopg.types.json import Jsonb

        at = self._at(path)
        if op in ("$eq", "$ne"):
            self.parts.append(f"{at} {'=' if op == '$eq' else '<>'} {self.param(Jsonb(operand))}")
            return
        sign = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
        # a number, or a string that reads as one (as :func:`trimem._backend.items.matches` reads it)
        as_number = (
            f"(CASE WHEN jsonb_typeof({at}) = 'number' THEN ({at} #>> '{{}}')::float8 "
            f"WHEN jsonb_typeof({at}) = 'string' AND ({at} #>> '{{}}') ~ {self.param(NUMBER.pattern)} "
            f"THEN ({at} #>> '{{}}')::float8 END)"
        )
        self.parts.append(f"{as_number} {sign} {self.param(float(operand))}")

    def sql(self) -> str:
        return " AND ".join(self.parts) if self.parts else "true"


class ItemRows:
    """The backend's :class:`trimem._backend.items.ItemReads` on PostgreSQL."""

    def __init__(self, schema: str, dim: int, conn: Callable[[], AbstractContextManager[Any]], *, stem: bool,
                 stopwords: bool) -> None:  # fmt: skip
        self._s, self._dim, self._conn, self._stem, self._stopwords = schema, dim, conn, stem, stopwords

    def get(self, namespace: tuple[str, ...], key: str, now: int) -> Item | None:
        with self._conn() as c:
            row = c.execute(
                f"SELECT {_COLUMNS} FROM {self._s}.items WHERE ns_path = %s AND key = %s "
                "AND (expires_at IS NULL OR expires_at > %s)",
                (ns_path(namespace), key, now),
            ).fetchone()
        return None if row is None else _item(row)

    def namespaces(self, now: int) -> list[tuple[str, ...]]:
        with self._conn() as c:
            rows = c.execute(
                f"SELECT DISTINCT namespace FROM {self._s}.items WHERE expires_at IS NULL OR expires_at > %s", (now,)
            ).fetchall()
        return [tuple(r[0]) for r in rows]

    def expired(self, now: int) -> list[ItemKey]:
        with self._conn() as c:
            rows = c.execute(f"SELECT namespace, key FROM {self._s}.items WHERE expires_at <= %s", (now,)).fetchall()
        return [(tuple(ns), key) for ns, key in rows]

    def stored(self) -> Iterator[tuple[Item, str, bytes | None]]:
        vector = "embedding" if self._dim else "NULL"
        with self._conn() as c:
            rows = c.execute(f"SELECT {_COLUMNS}, body, {vector} FROM {self._s}.items ORDER BY id").fetchall()
        for r in rows:
            yield _item(r[:8]), r[8], None if r[9] is None else as_array(r[9]).tobytes()

    def search(self, q: ItemQuery) -> list[tuple[Item, float | None]]:
        want = q.offset + q.limit
        if want <= 0:
            return []
        where = _Where()
        where.prefix(q.prefix)
        where.parts.append(f"(i.expires_at IS NULL OR i.expires_at > {where.param(q.now)})")
        where.filter(q.filter)
        terms = sorted(set(terms_of(q.text, self._stem, self._stopwords))) if q.text else []
        use_vector = q.vector is not None and self._dim > 0
        if not terms and not use_vector:
            statement = f"SELECT {_cols('i')}, NULL::float8 FROM {self._s}.items i WHERE {where.sql()} {_newest(want)}"
            with self._conn() as c:
                rows = c.execute(statement, where.params).fetchall()
            unranked: list[tuple[Item, float | None]] = [(_item(r[:8]), None) for r in rows]
            return unranked[q.offset :]
        statement = self._hybrid(where.sql(), bool(terms), use_vector, want)
        params = dict(where.params, terms=terms, k1=K1, b=B, rrf=RRF_K)
        if use_vector:
            params["v"] = np.asarray(q.vector, dtype=np.float32)
        with self._conn() as c:
            rows = c.execute(statement, params).fetchall()
            ranked: list[tuple[Item, float | None]] = [(_item(r[:8]), float(r[8])) for r in rows]
            if len(ranked) < want:  # what neither leg ranks follows, newest first
                seen = [i.id for i, _ in ranked]
                rest = c.execute(
                    f"SELECT {_cols('i')} FROM {self._s}.items i WHERE {where.sql()} "
                    f"AND NOT (i.id = ANY(%(seen)s)) {_newest(want - len(ranked))}",
                    dict(where.params, seen=seen),
                ).fetchall()
                ranked += [(_item(r), None) for r in rest]
        return ranked[q.offset :]

    def _hybrid(self, where: str, keywords: bool, vector: bool, want: int) -> str:
        window = max(50, 5 * want)
        s = self._s
        ctes = []
        if keywords:
            ctes += [
                f"st AS (SELECT coalesce(max(n_docs), 0)::float8 AS n, coalesce(max(total_len)::float8 / "
                f"nullif(max(n_docs), 0), 1.0) AS avgdl FROM {s}.stats WHERE collection = 'items' AND namespace = '')",
                f"df AS (SELECT term, count(*)::float8 AS df FROM {s}.items_terms WHERE term = ANY(%(terms)s::text[]) "
                "GROUP BY term)",
                f"bm AS (SELECT m.id, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf / (m.tf + %(k1)s * "
                f"(1 - %(b)s + %(b)s * m.dl / st.avgdl)))::float8 AS score FROM {s}.items_terms m JOIN df USING (term) "
                f"CROSS JOIN st JOIN {s}.items i ON i.id = m.id WHERE m.term = ANY(%(terms)s::text[]) AND {where} "
                f"GROUP BY m.id ORDER BY score DESC, m.id LIMIT {window})",
                "bmr AS (SELECT id, rank() OVER (ORDER BY score DESC) AS rk FROM bm)",
            ]
        if vector:
            ctes += [
                f"vec AS (SELECT i.id, i.embedding <=> %(v)s AS d FROM {s}.items i WHERE {where} "
                f"AND i.embedding IS NOT NULL ORDER BY i.embedding <=> %(v)s LIMIT {window})",
                "vr AS (SELECT id, rank() OVER (ORDER BY d) AS rk FROM vec)",
            ]
        if keywords and vector:
            cand = (
                "SELECT coalesce(b.id, v.id) AS id, b.rk AS brk, v.rk AS vrk FROM bmr b FULL JOIN vr v ON b.id = v.id"
            )
        elif keywords:
            cand = "SELECT id, rk AS brk, NULL::bigint AS vrk FROM bmr"
        else:
            cand = "SELECT id, NULL::bigint AS brk, rk AS vrk FROM vr"
        ctes.append(
            f"fused AS (SELECT id, coalesce(1 / (%(rrf)s + brk), 0) + coalesce(1 / (%(rrf)s + vrk), 0) AS score "
            f"FROM ({cand}) c)"
        )
        return (
            f"WITH {', '.join(ctes)} SELECT {_cols('i')}, f.score FROM fused f JOIN {s}.items i ON i.id = f.id "
            f"ORDER BY f.score DESC, i.id LIMIT {int(want)}"
        )


def _newest(n: int) -> str:
    return f"ORDER BY i.updated_at DESC, i.ns_path, i.key LIMIT {int(n)}"


def _cols(alias: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in _COLUMNS.split(","))
