"""The memory layers — working, episodic, semantic (facts and knowledge), perceptual — and the
memory graph's view. Each owns its part of memory through the backend seam: it validates a
call, describes the change as ops, and reads back through :class:`trimem._backend.Backend`.
"""

__all__: list[str] = []
