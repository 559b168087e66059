"""Hybrid search on PostgreSQL in one statement: the keyword leg (BM25 over the posting table,
scored from the namespace's statistics exactly as the engine scores), the vector leg (pgvector
HNSW, cosine), both filtered by namespace, time range and session inside the leg, fused by
reciprocal rank with the policy's decay and importance terms — the engine's formula
(:mod:`trimem._core` ``fusion``), ranks from 1, equal scores sharing the better rank.

Every statement is composed from fixed SQL and identifiers; every value (the request's terms
included) is a parameter, but for the row limits: integers of our own, written into the SQL so
that a prepared statement's one generic plan knows them (with ``LIMIT $n`` the planner prices a
sort of every row above a walk of the HNSW index).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any, Final

import numpy as np
from psycopg import sql

from trimem._backend import Query, confident

__all__ = [
    "EXACT_SPAN",
    "K1",
    "B",
    "Candidate",
    "hybrid_statement",
    "label",
    "neighbours_statement",
    "span_statement",
    "vector_leg",
    "walk_window",
    "window",
]

K1: Final = 1.2
B: Final = 0.75
MAX_TERM_CHARS: Final = 200
"""A term is cut to this length where it is stored and where it is asked for (a B-tree entry
has a size limit; a token this long is no word)."""


EXACT_SPAN: Final = 2000
"""A time-filtered vector search compares every row of the period when it holds at most this
many of the tenant's rows (cheaper than a filtered graph walk, and exact), else walks the graph."""


def _csv(values: Iterable[int]) -> str:
    """Integers as one comma-separated text: hundreds of use counts may be pending, psycopg
    dumps a list element by element in Python, and the server splits a text at C speed."""
    return ",".join(map(str, values))


def window(k: int) -> int:
    """Candidates each leg contributes to the fusion (the engine's default window)."""
    return max(50, 5 * k)


def walk_window(q: Query) -> int:
    """Candidates a filtered HNSW walk looks for: the window of the hits the request goes on with
    (a pool wider than those, re-ordered above the backend, widens the fusion, not the walk)."""
    return window(q.k if q.depth is None else min(q.depth, q.k))


def _filters(alias: str, *, time_range: bool, session: bool) -> sql.Composable:
    parts: list[sql.Composable] = [sql.SQL("{}.namespace = %(ns)s").format(sql.Identifier(alias))]
    if time_range:
        parts.append(sql.SQL("{a}.ts >= %(lo)s AND {a}.ts < %(hi)s").format(a=sql.Identifier(alias)))
    if session:
        parts.append(sql.SQL("{}.session = %(session)s").format(sql.Identifier(alias)))
    return sql.SQL(" AND ").join(parts)


def vector_leg(q: Query) -> bool:
    """Whether a search has a vector leg (a vector, and a mode that reads it)."""
    return q.mode != "bm25" and q.vector is not None


def hybrid_statement(
    schema: str,
    collection: str,
    q: Query,
    terms: list[str],
    policy_terms: dict[str, Any],
    *,
    min_cosine: float,
    uses: Sequence[tuple[int, Sequence[int]]] = (),
    exact: bool = False,
) -> tuple[str, dict[str, Any]]:
    """The statement and its parameters: one row per fused candidate, best first (at most twice
    ``q.k``), with the signals the floors read and the BM25 statistics of the request's terms.
    `uses` are use counts not yet written (id, [accesses, mentions, last use]): the ranking
    counts them as the embedded engine counts a use at once. `exact`: the vector leg compares
    every row the filters keep instead of walking the HNSW graph (see :func:`span_statement`)."""
    use_bm25 = q.mode != "vector" and bool(terms)
    use_vector = vector_leg(q)
    weights = policy_terms["weights"]
    params: dict[str, Any] = dict(
        ns=q.namespace, use_ids=_csv(rid for rid, _ in uses), use_a=_csv(c[0] for _, c in uses),
        use_m=_csv(c[1] for _, c in uses), use_at=_csv(c[2] for _, c in uses),
        coll=collection, terms=terms, k1=K1, b=B, min_cos=min_cosine,
        rrf_k=float(policy_terms["rrf_k"]), wb=float(weights[0]), wv=float(weights[1]),
        now=int(policy_terms["now"]), half_life=float(policy_terms["half_life"]),
        decay_weight=float(policy_terms["decay_weight"]), importance_weight=float(policy_terms["importance_weight"]),
        step=float(policy_terms["reinforce_step"]), cap=float(policy_terms["reinforce_cap"]),
    )  # fmt: skip
    if q.time_range is not None:
        params["lo"], params["hi"] = q.time_range
    if q.session is not None:
        params["session"] = q.session
    if use_vector:
        params["v"] = np.asarray(q.vector, dtype=np.float32)
    text = _statement(
        schema, collection, 2 * q.k, use_bm25=use_bm25, use_vector=use_vector,
        time_range=q.time_range is not None, session=q.session is not None, exact=exact and use_vector,
        walk=walk_window(q),
    )  # fmt: skip
    return text, params


@functools.lru_cache(maxsize=64)
def span_statement(schema: str, collection: str) -> str:
    """Whether a period holds at most :data:`EXACT_SPAN` of a tenant's rows (parameters ``ns``,
    ``lo``, ``hi``), counted on the (namespace, ts) index no further than that. Such a period is
    searched exactly, by a statement whose one prepared plan reads the rows through that index;
    a longer one is planned for its values, which walks the HNSW graph with the filter inside."""
    return (
        sql.SQL(
            "SELECT count(*) <= {few} FROM (SELECT FROM {s}.{t} r WHERE r.namespace = %(ns)s "
            "AND r.ts >= %(lo)s AND r.ts < %(hi)s LIMIT {few} + 1) rows"
        )
        .format(s=sql.Identifier(schema), t=sql.Identifier(collection), few=sql.Literal(EXACT_SPAN))
        .as_string(None)
    )


@functools.lru_cache(maxsize=256)
def _statement(
    schema: str,
    collection: str,
    k: int,
    *,
    use_bm25: bool,
    use_vector: bool,
    time_range: bool,
    session: bool,
    exact: bool,
    walk: int,
) -> str:
    """The statement's text for one shape of request: composed once, so a search pays neither
    the composition nor psycopg's conversion of a new text (it caches the conversion by text)."""
    s, table = sql.Identifier(schema), sql.Identifier(collection)
    postings = sql.Identifier(f"{collection}_terms")
    limit = sql.Literal(window(k))
    where_r = _filters("r", time_range=time_range, session=session)
    ctes: list[sql.Composable] = [
        sql.SQL(
            "st AS (SELECT coalesce(max(n_docs), 0)::float8 AS n, "
            "coalesce(max(total_len)::float8 / nullif(max(n_docs), 0), 1.0) AS avgdl "
            "FROM {s}.stats WHERE collection = %(coll)s AND namespace = %(ns)s)"
        ).format(s=s),
        sql.SQL(
            "df AS (SELECT term, count(*)::float8 AS df FROM {s}.{p} "
            "WHERE namespace = %(ns)s AND term = ANY(%(terms)s::text[]) GROUP BY term)"
        ).format(s=s, p=postings),
        sql.SQL(
            "mass AS (SELECT coalesce(sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5))), 0) AS seen, "
            "count(df.term) AS n_seen FROM st LEFT JOIN df ON true)"
        ),
    ]
    if use_bm25:
        # the postings hold the namespace; the record is read only for a time or session filter
        filtered = time_range or session
        ctes.append(
            sql.SQL(
                "bm AS (SELECT m.id, sum(ln(1 + (st.n - df.df + 0.5) / (df.df + 0.5)) * m.tf "
                "/ (m.tf + %(k1)s * (1 - %(b)s + %(b)s * m.dl / st.avgdl)))::float8 AS score "
                "FROM {s}.{p} m JOIN df USING (term) CROSS JOIN st{join} "
                "WHERE m.namespace = %(ns)s AND m.term = ANY(%(terms)s::text[]){where} "
                "GROUP BY m.id ORDER BY score DESC, m.id LIMIT {window})"
            ).format(
                s=s,
                window=limit,
                p=postings,
                join=sql.SQL(" JOIN {}.{} r ON r.namespace = m.namespace AND r.id = m.id").format(s, table)
                if filtered
                else sql.SQL(""),
                where=sql.SQL(" AND {}").format(where_r) if filtered else sql.SQL(""),
            )
        )
        ctes.append(sql.SQL("bmr AS (SELECT id, score, rank() OVER (ORDER BY score DESC) AS rk FROM bm)"))
    if use_vector:
        # exact: every row the filter keeps is compared (the added zero keeps the planner off the
        # HNSW index); else the graph is walked with the filter inside the walk, for the `walk`
        # window of the hits the request goes on with (`k` is twice a pool of at least those): a
        # filtered walk's cost grows with what it must find
        order = sql.SQL("(r.embedding <=> %(v)s) + 0" if exact else "r.embedding <=> %(v)s")
        ctes.append(
            sql.SQL(
                "vec AS (SELECT r.id, (1 - (r.embedding <=> %(v)s))::float8 AS cos FROM {s}.{t} r "
                "WHERE {where} AND r.embedding IS NOT NULL ORDER BY {order} LIMIT {window})"
            ).format(s=s, t=table, where=where_r, order=order, window=limit if exact else sql.Literal(walk))
        )
        ctes.append(
            sql.SQL("vr AS (SELECT id, cos, rank() OVER (ORDER BY cos DESC) AS rk FROM vec WHERE cos >= %(min_cos)s)")
        )
    # one row per candidate with both legs' signals: a hash full join, not a lookup per row
    if use_bm25 and use_vector:
        cand = "SELECT coalesce(b.id, v.id) AS id, b.score AS bm25, b.rk AS bm25_rank, v.cos AS cosine, " \
               "v.rk AS vector_rank FROM bmr b FULL JOIN vr v ON b.id = v.id"  # fmt: skip
    elif use_bm25:
        cand = "SELECT id, score AS bm25, rk AS bm25_rank, NULL::float8 AS cosine, NULL::bigint AS vector_rank FROM bmr"
    elif use_vector:
        cand = "SELECT id, NULL::float8 AS bm25, NULL::bigint AS bm25_rank, cos AS cosine, rk AS vector_rank FROM vr"
    else:
        cand = "SELECT NULL::bigint AS id, NULL::float8 AS bm25, NULL::bigint AS bm25_rank, NULL::float8 AS cosine, " \
               "NULL::bigint AS vector_rank WHERE false"  # fmt: skip
    ctes.append(sql.SQL("cand AS ({})").format(sql.SQL(cand)))
    stored_cos = (
        sql.SQL(
            "CASE WHEN c.cosine IS NOT NULL THEN c.cosine WHEN r.embedding IS NULL THEN NULL "
            "ELSE (1 - (r.embedding <=> %(v)s))::float8 END"
        )
        if use_vector
        else sql.SQL("NULL::float8")
    )
    body = sql.SQL(
        "WITH {ctes}, used AS ("
        "SELECT r.id, c.bm25, c.bm25_rank, c.cosine, c.vector_rank, {stored} AS stored_cos, r.importance, "
        "r.accesses + coalesce(u.a, 0) AS accesses, r.mentions + coalesce(u.m, 0) AS mentions, "
        "greatest(r.last_access, u.at) AS last_access, r.payload, r.namespace, r.ts "
        "FROM cand c JOIN {s}.{t} r ON r.namespace = %(ns)s AND r.id = c.id "
        "LEFT JOIN unnest(string_to_array(%(use_ids)s, ',')::bigint[], string_to_array(%(use_a)s, ',')::int[], "
        "string_to_array(%(use_m)s, ',')::int[], string_to_array(%(use_at)s, ',')::bigint[]) "
        "AS u(id, a, m, at) ON u.id = c.id), "
        "signals AS (SELECT used.*, "
        "power(0.5, greatest(%(now)s - greatest(ts, last_access), 0)::float8 / %(half_life)s) AS decay, "
        "CASE WHEN importance >= 1 THEN importance::float8 ELSE least(1.0, importance "
        "+ least(%(cap)s, %(step)s * (accesses + mentions))) END AS eff, "
        "coalesce(%(wb)s / (%(rrf_k)s + bm25_rank), 0) + coalesce(%(wv)s / (%(rrf_k)s + vector_rank), 0) "
        "AS relevance FROM used) "
        "SELECT signals.*, (relevance + %(decay_weight)s * decay + %(importance_weight)s * eff)::real AS score, "
        "mass.seen, mass.n_seen, (SELECT n FROM st) AS n "
        # a namespace with nothing in the collection (no documents; a new user's facts) is
        # answered by this one-time filter, before either leg runs
        "FROM signals CROSS JOIN mass WHERE (SELECT n FROM st) > 0 ORDER BY score DESC, id LIMIT {k}"
    ).format(ctes=sql.SQL(", ").join(ctes), stored=stored_cos, s=s, t=table, k=sql.Literal(k))
    return body.as_string(None)


class Candidate:
    """One row of :func:`hybrid_statement`, by column position."""

    __slots__ = ()
    ID, BM25, BM25_RANK, COSINE, VECTOR_RANK, STORED_COSINE = 0, 1, 2, 3, 4, 5
    IMPORTANCE, ACCESSES, MENTIONS, LAST_ACCESS, PAYLOAD, NAMESPACE, TS = range(6, 13)
    DECAY, EFFECTIVE, RELEVANCE, SCORE, SEEN_MASS, N_SEEN, N_DOCS = range(13, 20)


def label(rows: list[tuple[Any, ...]], q: Query, n_terms: int, *, every_fact: bool) -> list[bool]:
    """Which rows are weak (under the floors of a confident match), by the rule the embedded
    backend applies (:func:`trimem._backend.confident`)."""
    if not rows:
        return []
    floors = q.floors
    seen, n_seen, n_docs = (float(rows[0][Candidate.SEEN_MASS]), int(rows[0][Candidate.N_SEEN]),
                            float(rows[0][Candidate.N_DOCS]))  # fmt: skip
    unseen_idf = math.log(1.0 + (n_docs + 0.5) / 0.5) * max(0, n_terms - n_seen)

    def floor(share: float, unseen: bool) -> float:
        if n_docs <= 0 or not math.isfinite(share) or share <= 0.0:
            return 0.0
        return share * (seen + (unseen_idf if unseen else 0.0)) / (1.0 + K1)

    nan = float("nan")
    bm25 = np.array([nan if r[Candidate.BM25] is None else r[Candidate.BM25] for r in rows], dtype=np.float64)
    cosine = np.array([nan if r[Candidate.COSINE] is None else r[Candidate.COSINE] for r in rows], dtype=np.float64)
    stored = np.array(
        [nan if r[Candidate.STORED_COSINE] is None else r[Candidate.STORED_COSINE] for r in rows], dtype=np.float64
    )
    keyword_floor = floor(floors.bm25_share, every_fact)
    with np.errstate(invalid="ignore"):
        support = stored >= floors.support_cosine
    ok = confident(
        bm25,
        cosine,
        floors,
        keyword_floor=keyword_floor,
        whole_floor=None if q.vector is None else lambda: floor(floors.whole_share, True),
        support=lambda asked: support,
    )
    return [not bool(x) for x in ok]


@functools.cache
def neighbours_statement(table: str, steps: int) -> str:
    """For the episodes ``ANY(%s)`` of namespace ``%s``: each id with the nearest ids of its session
    among the `steps` nearest of the namespace on either side (a bounded walk of the primary key,
    as the embedded store walks its time order); NULL where none is."""
    near = (
        "SELECT {agg}(w.id) FROM (SELECT e.id, e.session FROM {t} e WHERE e.namespace = c.namespace "
        "AND e.id {op} c.id ORDER BY e.id {dir} LIMIT {steps}) w WHERE w.session = c.session"
    )
    before = near.format(agg="max", t=table, op="<", dir="DESC", steps=int(steps))
    after = near.format(agg="min", t=table, op=">", dir="ASC", steps=int(steps))
    return f"SELECT c.id, ({before}), ({after}) FROM {table} c WHERE c.namespace = %s AND c.id = ANY(%s::bigint[])"
