"""Memory in and out: the explicit tool mode (function-calling schemas), export and import, and
statistics."""

__all__: list[str] = []
