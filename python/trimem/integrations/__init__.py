"""Adapters for agent frameworks, each a thin translation to :class:`trimem.Memory` behind an
optional extra: :mod:`trimem.integrations.langgraph` (a LangGraph store, ``trimem[langgraph]``),
:mod:`trimem.integrations.mcp` (an MCP server, ``trimem[mcp]``; its knowledge graph in
:mod:`trimem.integrations.knowledge_graph`), :mod:`trimem.integrations.openai_agents` (a
session and tools for the OpenAI Agents SDK, ``trimem[agents]``)."""

__all__: list[str] = []
