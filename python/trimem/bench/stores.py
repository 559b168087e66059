"""Where an evaluation's memories live: in process (the default) or, with ``--store DSN``, each in
a fresh schema of a PostgreSQL database, so one run measures what the product path gives on
either backend.

>>> on = SchemaPerMemory("postgresql://me@db/evals")
>>> on.next_dsn()
'postgresql://me@db/evals?schema=trimem_eval_1'
"""

from __future__ import annotations

import itertools
from typing import Any

from trimem._backend.postgres import is_dsn, split_schema

__all__ = ["SchemaPerMemory"]


class SchemaPerMemory:
    """A memory factory (embedder → a new `Memory`): each memory a schema ``trimem_eval_<n>`` of
    `dsn`, emptied first; :meth:`drop` removes them after the run."""

    def __init__(self, dsn: str) -> None:
        if not is_dsn(dsn):
            raise ValueError(f"--store takes a postgresql:// DSN, got {dsn!r}")
        self.dsn = dsn
        self.schemas: list[str] = []
        self._n = itertools.count(1)

    def next_dsn(self) -> str:
        self.schemas.append(f"trimem_eval_{next(self._n)}")
        sep = "&" if "?" in self.dsn else "?"
        return f"{self.dsn}{sep}schema={self.schemas[-1]}"

    def __call__(self, embedder: Any) -> Any:
        from trimem import Memory

        dsn = self.next_dsn()
        self._drop([self.schemas[-1]])  # a schema left by an earlier run starts empty
        return Memory(dsn, embedder=embedder)

    def drop(self) -> None:
        self._drop(self.schemas)

    def _drop(self, schemas: list[str]) -> None:
        import psycopg

        with psycopg.connect(split_schema(self.dsn)[0], autocommit=True) as c:
            for name in schemas:
                c.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")  # our own names: identifiers, not input
