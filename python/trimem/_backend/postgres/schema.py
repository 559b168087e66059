"""The PostgreSQL schema of a memory: its tables, their indexes and the migrations that build
them, run by the library on open (versioned, idempotent, and safe when two processes open the
same schema at once: a transaction-scoped advisory lock serialises them).

Index plan, one per question a search asks:

* episodes, documents, fact entries — hash-partitioned by ``namespace`` into
  :data:`PARTITIONS` tables, so that a tenant's vector search walks an HNSW graph
  (``vector_cosine_ops``) of a few tenants' rows, not everyone's: a filtered HNSW walk over a
  shared graph visits every other tenant's nearby vectors before it finds k of its own. Primary
  key ``(namespace, id)``, B-tree on ``id`` (the lookups by id), on ``(namespace, ts)`` (every
  read is one namespace's, most within a time range). pgvector ≥ 0.8 iterative scans keep a
  filtered search returning k. Vectors are stored in the row (``STORAGE MAIN``), not in a TOAST
  table an exact scan would have to visit row by row;
* ``*_terms`` — one row per (namespace, term, record) with its frequency and the record's
  length, primary key ``(namespace, term, id)``: the keyword leg reads the postings of the
  request's terms in one namespace (an index-only scan), made by the same tokenizer the embedded
  engine uses (Chinese bigrams, identifiers, numbers, stemming), so both backends match the same
  words and score them by the same BM25;
* ``items`` — a store's key-value entries (:mod:`trimem._backend.postgres.items`): unique
  (namespace path, key), the path in "C" order for namespace prefix ranges, HNSW on the vector,
  ``items_terms`` postings for the keyword leg;
* ``stats`` — per collection and namespace the document count and total length BM25 needs,
  kept in step by every write in the same transaction. Statistics are per tenant: one tenant's
  documents never move another's scores (nor tell of them).

Every table carries its tenant (``namespace`` or ``agent_id``/``user_id``); no query reads
without one, except the exports that read everything.
"""

from __future__ import annotations

from typing import Any, Final

from psycopg import sql

from trimem._backend.postgres.items import item_tables

__all__ = ["COLLECTIONS", "SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION: Final = 3
COLLECTIONS: Final = ("episodes", "knowledge", "fact_index")
"""The searchable tables: each has a ``<name>_terms`` posting table and a row in ``stats``."""
PARTITIONS: Final = 16
"""Hash partitions of each searchable table (fixed when the schema is made)."""
_EXTRA: Final = {
    "episodes": "exact bytea NOT NULL,",
    "knowledge": "agent_id text NOT NULL, user_id text, source text,",
    "fact_index": "key text NOT NULL,",
}

_LOCK_KEY: Final = 0x7472696D656D  # "trimem": the advisory lock migrations take


def _searchable(name: str, dim: int) -> list[str]:
    vector = f"embedding vector({dim})," if dim else ""
    return [
        f"""CREATE TABLE {{s}}.{name} (
            id bigint NOT NULL,
            namespace text NOT NULL,
            ts bigint NOT NULL,
            session text,
            {_EXTRA[name]}
            {vector}
            importance real NOT NULL DEFAULT 0.5,
            accesses integer NOT NULL DEFAULT 0,
            mentions integer NOT NULL DEFAULT 0,
            last_access bigint NOT NULL DEFAULT 0,
            dl integer NOT NULL,
            terms text[] NOT NULL,
            payload bytea NOT NULL,
            PRIMARY KEY (namespace, id)
        ) PARTITION BY HASH (namespace)""",
        *(
            f"CREATE TABLE {{s}}.{name}_p{i} PARTITION OF {{s}}.{name} FOR VALUES WITH (MODULUS {PARTITIONS}, "
            f"REMAINDER {i})"
            for i in range(PARTITIONS)
        ),
        *([f"ALTER TABLE {{s}}.{name} ALTER COLUMN embedding SET STORAGE MAIN"] if dim else []),
        f"CREATE INDEX {name}_id ON {{s}}.{name} (id)",
        f"CREATE INDEX {name}_ns_ts ON {{s}}.{name} (namespace, ts)",
        *([f"CREATE INDEX {name}_hnsw ON {{s}}.{name} USING hnsw (embedding vector_cosine_ops)"] if dim else []),
        f"""CREATE TABLE IF NOT EXISTS {{s}}.{name}_terms (
            namespace text NOT NULL,
            term text NOT NULL,
            id bigint NOT NULL,
            tf integer NOT NULL,
            dl integer NOT NULL,
            PRIMARY KEY (namespace, term, id)
        )""",
    ]


def _collections(dim: int) -> list[str]:
    return [
        *_searchable("episodes", dim),
        "CREATE INDEX episodes_exact ON {s}.episodes (namespace, exact)",
        *_searchable("knowledge", dim),
        "CREATE INDEX knowledge_source ON {s}.knowledge (agent_id, source)",
        *_searchable("fact_index", dim),
    ]


def _version_2_from_1() -> list[str]:
    """Version 1's searchable tables were not partitioned: set aside (with the names of their
    indexes), rebuilt partitioned, filled from the old ones, dropped."""
    moves = []
    for name in COLLECTIONS:
        moves += [
            f"ALTER TABLE {{s}}.{name} RENAME TO {name}_v1",
            f"ALTER INDEX {{s}}.{name}_pkey RENAME TO {name}_v1_pkey",
            f"DROP INDEX IF EXISTS {{s}}.{name}_ns_ts",
            f"DROP INDEX IF EXISTS {{s}}.{name}_hnsw",
        ]
    return [*moves, "DROP INDEX IF EXISTS {s}.episodes_exact", "DROP INDEX IF EXISTS {s}.knowledge_source"]


def _version_2_fill() -> list[str]:
    return [
        stmt
        for name in COLLECTIONS
        for stmt in (f"INSERT INTO {{s}}.{name} SELECT * FROM {{s}}.{name}_v1", f"DROP TABLE {{s}}.{name}_v1")
    ]


def _tables() -> list[str]:
    """The tables every version has had, unchanged since version 1."""
    return [
        "CREATE TABLE IF NOT EXISTS {s}.meta (name text PRIMARY KEY, value text NOT NULL)",
        "CREATE TABLE IF NOT EXISTS {s}.counters (name text PRIMARY KEY, value bigint NOT NULL)",
        "INSERT INTO {s}.counters (name, value) VALUES ('last_id', 0) ON CONFLICT DO NOTHING",
        "CREATE TABLE IF NOT EXISTS {s}.stats (collection text NOT NULL, namespace text NOT NULL, "
        "n_docs bigint NOT NULL, total_len bigint NOT NULL, PRIMARY KEY (collection, namespace))",
        """CREATE TABLE IF NOT EXISTS {s}.fact_versions (
            agent_id text NOT NULL, user_id text NOT NULL, key text NOT NULL, seq integer NOT NULL,
            value text, valid_from bigint NOT NULL, valid_to bigint, source bigint[] NOT NULL,
            op text NOT NULL,
            PRIMARY KEY (agent_id, user_id, key, seq)
        )""",
        """CREATE TABLE IF NOT EXISTS {s}.pins (
            agent_id text NOT NULL, user_id text NOT NULL, key text NOT NULL,
            PRIMARY KEY (agent_id, user_id, key)
        )""",
        """CREATE TABLE IF NOT EXISTS {s}.aliases (
            word text NOT NULL, key text NOT NULL, seq bigserial,
            PRIMARY KEY (word, key)
        )""",
        "CREATE TABLE IF NOT EXISTS {s}.key_names (key text PRIMARY KEY)",
        """CREATE TABLE IF NOT EXISTS {s}.cursors (
            agent_id text NOT NULL, user_id text NOT NULL, episode_id bigint NOT NULL,
            PRIMARY KEY (agent_id, user_id)
        )""",
        """CREATE TABLE IF NOT EXISTS {s}.mentions (
            episode_id bigint NOT NULL, seq bigserial, payload bytea NOT NULL,
            PRIMARY KEY (episode_id, seq)
        )""",
        "CREATE TABLE IF NOT EXISTS {s}.working (session_id text PRIMARY KEY, payload bytea NOT NULL)",
    ]


def migrate(conn: Any, schema: str, dim: int) -> int:
    """Brings `schema` to :data:`SCHEMA_VERSION` in one transaction (creating it, and the
    ``vector`` extension's use, when needed); returns the version it found (0: new)."""
    ident = sql.Identifier(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
        found = 0
        exists = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'meta'", (schema,)
        ).fetchone()
        if exists:
            row = conn.execute(
                sql.SQL("SELECT value FROM {}.meta WHERE name = 'schema_version'").format(ident)
            ).fetchone()
            found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            return found
        if found == 0:
            steps = [*_tables(), *_collections(dim)]
        elif found == 1:
            steps = [*_version_2_from_1(), *_collections(dim), *_version_2_fill()]
        else:
            steps = []
        if found < 3:  # version 3 added the items (a store's key-value entries)
            steps += item_tables(dim)
        for statement in steps:
            conn.execute(sql.SQL(statement.replace("{s}", "{schema}")).format(schema=ident))
        if found < SCHEMA_VERSION:
            conn.execute(
                sql.SQL(
                    "INSERT INTO {}.meta (name, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
                ).format(ident),
                (str(SCHEMA_VERSION),),
            )
        return found
