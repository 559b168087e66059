"""Every adapter runs on every backend: `where` is the memory an adapter test opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(params=["in-process", "folder", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Where the memory lives: None (in process), a folder, or a schema on the test server."""
    if request.param == "in-process":
        return None
    if request.param == "folder":
        return tmp_path / "memory"
    return f"{request.getfixturevalue('pg_dsn')}&schema={request.getfixturevalue('pg_schema')}"
