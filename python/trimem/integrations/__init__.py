"""Adapters for agent frameworks, each a thin translation to :class:`trimem.Memory` behind an
optional extra: :mod:`trimem.integrations.langgraph` (``trimem[langgraph]``)."""

__all__: list[str] = []
