"""The PostgreSQL backend (``pip install 'trimem[postgres]'``): :class:`.backend.PostgresBackend`.
Importing this package needs nothing beyond trimem; the backend module needs psycopg."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["is_dsn", "redacted", "split_schema"]


def is_dsn(path: object) -> bool:
    """Whether `path` names a PostgreSQL database (``postgresql://…`` or ``postgres://…``)."""
    return isinstance(path, str) and path.startswith(("postgresql://", "postgres://"))


def split_schema(dsn: str, default: str = "trimem") -> tuple[str, str]:
    """The DSN without trimem's ``schema`` parameter, and that schema (`default` without one):
    ``postgresql://host/db?schema=agents`` → (``postgresql://host/db``, ``"agents"``)."""
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k == "schema" for k, _ in query):
        return dsn, default
    schema = next(v for k, v in query if k == "schema")
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def redacted(dsn: str) -> str:
    """The DSN with its password masked (for reprs and messages)."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
