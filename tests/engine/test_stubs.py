"""The `_core.pyi` stubs must match the compiled module, so they cannot drift."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def test_stubs_match_compiled_module(tmp_path: Path) -> None:
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache")}
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "trimem._core", "--mypy-config-file", "/dev/null"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


@pytest.mark.slow  # ~10 s: mypy over the package
def test_package_type_checks(tmp_path: Path) -> None:
    """The Python package type-checks against the stubs (they are what users' checkers see)."""
    package = REPO_ROOT / "python" / "trimem"
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache")}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", str(package), "--ignore-missing-imports", "--config-file", "/dev/null"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
