"""The public surface: what ``import trimem`` exports, ``__all__`` in every public module (and
only names that exist), private modules spelled with ``_``, and a type checker sees every
exported name (``from trimem import Memory; Memory()`` checks under mypy)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import trimem

EXPORTED = [
    "ArgumentTypeError",
    "DTypeError",
    "DependencyError",
    "DimensionError",
    "DuplicateIdError",
    "EmbedderError",
    "EmbedderMismatchError",
    "Episode",
    "Fact",
    "FactChange",
    "FactVersion",
    "ForbiddenFactError",
    "GraphExtractionError",
    "Hits",
    "HybridIndex",
    "InvalidArgumentError",
    "InvalidNameError",
    "InvalidTimeRangeError",
    "InvalidVectorError",
    "KnowledgeDoc",
    "AsyncMemory",
    "Memory",
    "NotSupportedError",
    "Policy",
    "RecallBundle",
    "RouterError",
    "SHARED",
    "Store",
    "StoreClosedError",
    "StoreCorruptedError",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "StoreVersionError",
    "StoredRecord",
    "TextTooLongError",
    "ToolCall",
    "TrimemError",
    "UnknownIdError",
    "__version__",
    "build_profile",
    "simd_kernel",
    "tokenize",
]

# Tools around the library, not part of its API: they may skip __all__.
_NOT_API = ("trimem.__main__", "trimem.cli", "trimem.demo", "trimem.bench")


def _modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(trimem.__path__, "trimem."):
        if info.name.startswith(_NOT_API):
            continue
        names.append(info.name)
    return sorted(names)


def test_the_package_exports_exactly_these_names() -> None:
    assert sorted(trimem.__all__) == sorted(EXPORTED)
    for name in EXPORTED:
        assert getattr(trimem, name) is not None, name
    assert sorted(dir(trimem)) == sorted(EXPORTED)


def test_every_error_is_a_trimem_error() -> None:
    errors = [getattr(trimem, n) for n in EXPORTED if n.endswith("Error")]
    assert all(issubclass(e, trimem.TrimemError) for e in errors)
    assert issubclass(trimem.InvalidArgumentError, ValueError) and issubclass(trimem.StoreIOError, OSError)
    assert issubclass(trimem.ArgumentTypeError, TypeError) and issubclass(trimem.UnknownIdError, LookupError)


@pytest.mark.parametrize("module", _modules())
def test_public_modules_declare_what_they_export(module: str) -> None:
    if any(part.startswith("_") for part in module.split(".")[1:]):
        return  # private: no promise made
    mod = importlib.import_module(module)
    exported = getattr(mod, "__all__", None)
    assert exported is not None, f"{module} is public (no leading _) but has no __all__"
    missing = [n for n in exported if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ names what it lacks: {missing}"


def test_a_type_checker_sees_the_lazy_names(tmp_path: Path) -> None:
    script = tmp_path / "use.py"
    script.write_text(
        "from trimem import Memory, Policy, RecallBundle, SHARED\n"
        "mem: Memory = Memory(embedder=None, policy=Policy())\n"
        "bundle: RecallBundle = mem.recall('q', user_id='u', k=3)\n"
        "doc = mem.knowledge.add('x', user_id=SHARED)\n"
        "mem.recall('q', user_id='u', top_k=3)  # the option does not exist: an error\n"
    )
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "/dev/null", str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "top_k" in errors[0] and "use.py:5" in errors[0], out.stdout
