"""APIs of other memory libraries on trimem, for moving code over call by call:
:mod:`trimem.compat.mem0` (mem0's ``Memory`` / ``AsyncMemory``)."""

__all__: list[str] = []
