"""README.md's Python examples run as scripts and print exactly what the README shows.

Convention: every ```python block in README.md is a complete script, and the fenced ```text
block right after it (only blank lines between) is exactly what it prints on stdout. Each
script runs with this interpreter in a fresh empty working directory (so relative paths such as
"./agent_memory" land there), must exit 0 and must write nothing to stderr (a warning or log
line would be output the README does not show).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import trimem

README = Path(__file__).resolve().parents[2] / "README.md"
TIMEOUT_S = 120


@dataclass(frozen=True)
class Example:
    line: int  # 1-based line of the ```python fence
    code: str
    output: str | None  # the following ```text block, None when there is none


def _fenced_blocks(text: str) -> list[tuple[int, int, str, str]]:
    """(first line, last line, info string, body) of each fenced block, lines 1-based."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start, info = i, lines[i][3:].strip()
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                i += 1
            if i == len(lines):
                raise AssertionError(f"README.md:{start + 1}: unclosed code fence")
            body = "".join(line + "\n" for line in lines[start + 1 : i])
            blocks.append((start + 1, i + 1, info, body))
        i += 1
    return blocks


def readme_examples(text: str) -> list[Example]:
    lines = text.splitlines()
    blocks = _fenced_blocks(text)
    examples = []
    for n, (start, end, info, body) in enumerate(blocks):
        if info != "python":
            continue
        output = None
        if n + 1 < len(blocks):
            nxt_start, _, nxt_info, nxt_body = blocks[n + 1]
            between = lines[end : nxt_start - 1]
            if nxt_info == "text" and all(not line.strip() for line in between):
                output = nxt_body
        examples.append(Example(start, body, output))
    return examples


EXAMPLES = readme_examples(README.read_text(encoding="utf-8"))


def test_readme_has_examples() -> None:
    assert EXAMPLES, "README.md has no ```python blocks"


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"README.md:{e.line}" for e in EXAMPLES])
def test_readme_example(example: Example, tmp_path: Path) -> None:
    assert example.output is not None, (
        f"README.md:{example.line}: a ```python block must be followed by a ```text block with its output"
    )
    script = tmp_path / "example.py"
    script.write_text(example.code, encoding="utf-8")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = dict(os.environ, PYTHONUTF8="1", PYTHONIOENCODING="utf-8")
    # The script imports the same trimem as this test, wherever it was imported from.
    package_root = str(Path(trimem.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )
    where = f"README.md:{example.line}"
    assert result.returncode == 0, f"{where} exited with {result.returncode}:\n{result.stderr}"
    assert result.stderr == "", f"{where} wrote to stderr:\n{result.stderr}"
    assert result.stdout == example.output, f"{where} printed other output than the ```text block shows"
