"""The main job: `python -m trimem demo` builds a store, then reopens it."""

from pathlib import Path

import pytest

from trimem.cli import main


def test_demo_builds_then_reopens_the_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(tmp_path / "demo")
    assert main(["demo", "--path", path, "--embedder", "hashing"]) == 0
    first = capsys.readouterr().out
    assert "ingested" in first and "primary_language history" in first
    assert "8080" in first  # the port question finds the Docker episode
    assert main(["demo", "--path", path, "--embedder", "hashing"]) == 0
    again = capsys.readouterr().out
    assert "reopened" in again and "ingested" not in again
