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
        "trimem.integrations.openai_agents",
        "trimem.compat.mem0",
    ],
)
def test_module_examples_run(name: str) -> None:
    extra = {"langgraph": "langgraph.store.base", "mcp": "mcp", "openai_agents": "agents"}.get(name.rpartition(".")[2])
    if extra is not None:
        pytest.importorskip(extra)
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
