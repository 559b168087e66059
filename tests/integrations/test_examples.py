"""The docstring examples of the item layer and the adapters run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    [
        "trimem.layers.items",
        "trimem.integrations.langgraph",
        "trimem.integrations.knowledge_graph",
        "trimem.integrations.mcp",
    ],
)
def test_module_examples_run(name: str) -> None:
    if name.endswith(("langgraph", "mcp")):
        pytest.importorskip("langgraph.store.base" if name.endswith("langgraph") else "mcp")
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
