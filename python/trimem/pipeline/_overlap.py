"""Reads a recall starts early: on a backend whose reads run at once (a server, several
connections), the slow ones go to a reader thread of the process and are collected when needed."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["Read"]
T = TypeVar("T")


@functools.cache
def _readers() -> ThreadPoolExecutor:
    """The process's threads for reads a recall overlaps (made on first use)."""
    return ThreadPoolExecutor(thread_name_prefix="trimem-recall")


# A forked child has none of its parent's threads, but would inherit an executor that believes
# it has them (and queue work no thread ever takes): the child makes its own on first use.
if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_readers.cache_clear)


class Read(Generic[T]):
    """A read a recall needs later: started now on a reader thread when `overlap`, else run
    when its result is first asked for (later asks get the same result)."""

    def __init__(self, overlap: bool, fn: Callable[..., T], /, *args: object, **kwargs: object) -> None:
        self._run: Callable[[], T] = functools.partial(fn, *args, **kwargs)
        self._future: Future[T] | None = None
        self._done: tuple[T] | None = None
        if overlap:
            with contextlib.suppress(RuntimeError):  # the interpreter is shutting down: run it when asked
                self._future = _readers().submit(self._run)

    def result(self) -> T:
        if self._done is None:
            # one still queued (every reader thread busy) is run here rather than waited for
            run_here = self._future is None or self._future.cancel()
            self._done = (self._run() if run_here else self._future.result(),)  # type: ignore[union-attr]
        return self._done[0]

    def settle(self) -> None:
        """Leaves nothing running for a recall that failed: a queued read is cancelled, a
        running one waited for (its own error dropped: the recall's is the one raised)."""
        if self._future is not None and not self._future.cancel():
            with contextlib.suppress(Exception):
                self._future.result()
