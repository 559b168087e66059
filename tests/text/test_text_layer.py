"""The text layer's boundaries: only python/trimem/text/ reads language with regular expressions,
text/ imports nothing from trimem but the errors and itself, no module of the package is longer
than 800 lines, and every text module's examples run."""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import trimem.text
from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "python" / "trimem"
TEXT = PACKAGE / "text"
# Modules outside text/ that may use regular expressions, and why: neither reads language.
REGEX_ALLOWED = {
    "tokens.py": "the token-count estimate counts byte classes and runs of bytes; it reads no words",
    "_backend/items.py": "which item values are numeric strings (the pattern PostgreSQL applies too); no words",
    "layers/items.py": "parses an item's field paths (a.b[0].c); no words",
}
# The evaluation harness parses datasets and report formats, not what users say.
REGEX_ALLOWED_DIRS = {"bench"}


def modules(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def test_only_text_reads_language_with_regexes() -> None:
    offenders = []
    for path in modules(PACKAGE):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "text" or rel.parts[0] in REGEX_ALLOWED_DIRS or str(rel) in REGEX_ALLOWED:
            continue
        if {"re", "regex"} & imported_modules(path):
            offenders.append(str(rel))
    assert offenders == [], f"regular expressions outside trimem/text/: {offenders} (move the reading to text/)"


def test_the_regex_allow_list_is_still_needed() -> None:
    for name in REGEX_ALLOWED:
        assert "re" in imported_modules(PACKAGE / name), f"{name} no longer uses re: drop it from REGEX_ALLOWED"


def test_text_is_a_leaf() -> None:
    for path in modules(TEXT):
        inner = {m for m in imported_modules(path) if m == "trimem" or m.startswith("trimem.")}
        outside = {m for m in inner if m != "trimem.errors" and not m.startswith("trimem.text")}
        assert outside == set(), f"{path.name} imports {sorted(outside)}: text/ may import only trimem.errors"


TEXT_MODULES = sorted(m.name for m in pkgutil.iter_modules(trimem.text.__path__))


def test_every_text_module_is_tested_here() -> None:
    tested = {p.stem.removeprefix("test_") for p in Path(__file__).parent.glob("test_*.py")}
    assert set(TEXT_MODULES) - tested == set()


@pytest.mark.parametrize("name", ["", *TEXT_MODULES])
def test_examples_run_and_public_names_exist(name: str) -> None:
    module = importlib.import_module(f"trimem.text.{name}" if name else "trimem.text")
    assert module.__doc__, f"{module.__name__} says what it holds"
    result = doctest.testmod(module)
    assert result.attempted >= 1 and result.failed == 0
    for public in module.__all__:
        assert hasattr(module, public), f"{module.__name__}.__all__ names {public!r}, which it lacks"
