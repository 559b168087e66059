"""The gates that keep the house clean, each at zero findings: the stubs match the compiled
module (stubtest), the package type-checks strictly, ruff finds nothing and the code is
formatted, and the Rust side passes rustfmt and clippy with warnings as errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# Methods the stub leaves out on purpose: test hooks compiled only with the fault-injection
# feature, so a release build does not have them.
ALLOWLIST = REPO_ROOT / "tests" / "api" / "stubtest_allowlist.txt"


def _run(cmd: list[str], tmp_path: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy-cache")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO_ROOT)


def test_stubs_match_compiled_module(tmp_path: Path) -> None:
    out = _run(
        [sys.executable, "-m", "mypy.stubtest", "trimem._core", "--mypy-config-file", "/dev/null",
         "--allowlist", str(ALLOWLIST)],
        tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


@pytest.mark.slow  # ~10-30 s: mypy over the package
def test_package_type_checks_strictly(tmp_path: Path) -> None:
    """mypy --strict with the project's configuration (pyproject.toml) over python/trimem."""
    out = _run([sys.executable, "-m", "mypy"], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_finds_nothing_and_the_code_is_formatted(tmp_path: Path) -> None:
    check = _run([sys.executable, "-m", "ruff", "check", "python", "tests", "benches"], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = _run([sys.executable, "-m", "ruff", "format", "--check", "python", "tests", "benches"], tmp_path)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def _cargo() -> str:
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("cargo is not on PATH")
    return cargo


def test_rust_is_formatted(tmp_path: Path) -> None:
    out = _run([_cargo(), "fmt", "--all", "--check"], tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.slow  # a check build of the crates: a minute or two
def test_clippy_finds_nothing(tmp_path: Path) -> None:
    cmd = [_cargo(), "clippy", "--workspace", "--all-targets", "--features", "fault-injection", "--", "-D", "warnings"]
    out = _run(cmd, tmp_path, timeout=1500)
    assert out.returncode == 0, out.stdout[-5000:] + out.stderr[-5000:]
