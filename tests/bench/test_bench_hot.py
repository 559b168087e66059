"""benches/bench_hot.py (pytest-benchmark) is outside the default test path; here each of its
benchmarks runs once as a smoke test, in a child pytest with `--benchmark-disable` (from the
pytest options), so CI still checks what it asserts. No time is measured or asserted."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


@pytest.mark.slow  # ~8 s quiet, far more on a loaded machine: a nested pytest run
def test_hot_benchmarks_run_once_and_pass() -> None:
    bench = REPO_ROOT / "benches" / "bench_hot.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", str(bench), "-q", "-p", "no:cacheprovider", "--benchmark-disable"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    summary = out.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"=* ?\d+ passed in [\d.]+s( \([\d:]+\))? ?=*", summary), summary
    assert int(summary.strip("= ").split()[0]) >= 10, summary  # every benchmark in the file ran
