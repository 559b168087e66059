"""The house rules of the package, checked on its source: imports point down the declared layer
order and never form a cycle (imports inside functions count; those under ``TYPE_CHECKING``
do not run and do not count), modules stay small, and the facade stays thin."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "python" / "trimem"

# Lowest first. A module may import its own rank or below, never above. Leaves (rank 0) import
# nothing of ours but other leaves.
RANKS: list[tuple[str, ...]] = [
    (
        "trimem._core",
        "trimem.errors",
        "trimem._checks",
        "trimem.records",
        "trimem.config",
        "trimem.scope",
        "trimem.timeutil",
        "trimem.options",
        "trimem.tokens",
        "trimem.telemetry",
        "trimem._vendor",
        "trimem.text",
        "trimem.embedders",
        "trimem._embed",
        "trimem.graph",
        "trimem.rewrite",
        "trimem.reflect",
        "trimem.router",
    ),
    ("trimem._backend",),
    ("trimem.layers",),
    ("trimem.pipeline",),
    ("trimem.interop",),
    ("trimem.memory",),
    (
        "trimem",
        "trimem.__main__",
        "trimem.cli",
        "trimem._usage",
        "trimem.demo",
        "trimem.migrate",
        "trimem.bench",
        "trimem.integrations",
        "trimem.compat",
        "trimem.aio",
    ),
]


def _rank(module: str) -> int:
    best = -1, -1  # (prefix length, rank)
    for rank, prefixes in enumerate(RANKS):
        for p in prefixes:
            # The package itself ranks only its __init__, not everything under it.
            inside = p != "trimem" and module.startswith(p + ".")
            if (module == p or inside) and len(p) > best[0]:
                best = len(p), rank
    if best[1] < 0:
        raise AssertionError(f"{module} has no declared rank: add it to RANKS in {__file__}")
    return best[1]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """Modules of ours that `tree` imports when it runs (any depth, but not under TYPE_CHECKING)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: set[str] = set()
    base = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "trimem")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                target = f"{parent}.{node.module}" if node.module else parent
            else:
                target = node.module or ""
            if target.split(".")[0] != "trimem":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if _exists(sub) else target)
    found.discard(module)
    return found


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_vendor" in path.parts:
            continue
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = _runtime_imports(tree, module, path.name == "__init__.py")
    return graph


def test_imports_point_down_the_layer_order() -> None:
    wrong = []
    for module, imports in _graph().items():
        for target in imports:
            # A package's __init__ may re-export its own submodules.
            if target.startswith(module + "."):
                continue
            if _rank(target) > _rank(module):
                wrong.append(f"{module} (rank {_rank(module)}) imports {target} (rank {_rank(target)})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles() -> None:
    graph = _graph()
    # Edges into a package's own submodules from its __init__ are re-exports, not cycles.
    edges = {m: {t for t in ts if t in graph and not t.startswith(m + ".")} for m, ts in graph.items()}
    seen: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        seen[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if seen.get(t) == 1:
                cycles.append([*stack[stack.index(t) :], t])
            elif t not in seen:
                visit(t)
        stack.pop()
        seen[m] = 2

    for m in sorted(edges):
        if m not in seen:
            visit(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_checks_can_fail() -> None:
    tree = ast.parse("from trimem.memory import Memory\nif TYPE_CHECKING:\n    from trimem.cli import main\n")
    assert _runtime_imports(tree, "trimem.layers.episodic", False) == {"trimem.memory"}
    assert _rank("trimem.memory") > _rank("trimem.layers.episodic")
    with pytest.raises(AssertionError, match="no declared rank"):
        _rank("trimem.somewhere_new")


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    limit = 399 if path == PACKAGE / "memory.py" else 800  # the facade stays under 400
    assert lines <= limit, f"{path.relative_to(PACKAGE)} has {lines} lines (at most {limit}): split it by job"
