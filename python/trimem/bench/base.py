"""What every benchmarked system shares: the workload, indexes built once and shared between
systems, the System interface, reciprocal rank fusion by hand, and progress."""

from __future__ import annotations

import heapq
import importlib
import os
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import trimem
from trimem.bench.datasets import Dataset
from trimem.bench.meter import is_terminal

LEG = 50  # candidates per leg in the hand-assembled hybrids (= trimem's default window at k=10)
RRF_K = 60.0


class Skipped(Exception):
    """Raised by ``System.build`` when the system cannot run here (reason in ``str(exc)``)."""


def progress(it: Iterable[Any], *, total: int | None = None, desc: str = "", enabled: bool = True) -> Iterator[Any]:
    """A tqdm bar on stderr when it is a terminal (and tqdm importable), else a few plain lines
    (logs and CI get lines, not carriage-return redraws)."""
    if not enabled:
        yield from it
        return
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None and is_terminal(sys.stderr):
        yield from tqdm(it, total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)
        return
    print(f"{desc} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    yield from it
    print(f"{desc} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)


def _rss_bytes() -> int:
    """Current resident set size (Linux /proc), else the peak from getrusage."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _require(module: str, what: str | None = None) -> Any:
    """Import ``module`` or raise :class:`Skipped` saying it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # includes ModuleNotFoundError
        raise Skipped(f"{what or module} not importable ({exc})") from None


def rrf(legs: Iterable[Iterable[int]], k: int, rrf_k: float = RRF_K) -> list[int]:
    """Reciprocal rank fusion in Python: score = sum 1/(rrf_k + rank), rank from 1; top k ids."""
    scores: dict[int, float] = {}
    for leg in legs:
        for rank, doc in enumerate(leg, 1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (rrf_k + rank)
    return heapq.nlargest(k, scores, key=scores.__getitem__)


# --------------------------------------------------------------------------
# Workload and shared builds
# --------------------------------------------------------------------------


@dataclass
class Workload:
    """The dataset plus per-query inputs every system reads (prepared once, outside timing)."""

    ds: Dataset
    k: int
    windows: list[tuple[int, int]]  # half-open [lo, hi) microsecond range per query
    window_fraction: float
    show_progress: bool = True
    threads: int = 0  # build threads (0 = all cores)
    _doc_tokens: list[list[str]] | None = field(default=None, repr=False)

    @property
    def n_queries(self) -> int:
        return len(self.ds.query_texts)

    def query_vector(self, i: int) -> np.ndarray:
        q: np.ndarray = self.ds.query_vectors[i]
        return q

    def doc_tokens(self) -> list[list[str]]:
        """trimem's tokens of every record (what the engine indexes)."""
        if self._doc_tokens is None:
            tok = trimem.tokenize
            texts = self.ds.texts
            self._doc_tokens = [
                tok(t) for t in progress(texts, total=len(texts), desc="tokenise (trimem)", enabled=self.show_progress)
            ]
        return self._doc_tokens


@dataclass
class Built:
    obj: Any
    build_s: float
    rss_mb: float


class Shared:
    """Builds each shared component (an index, the token lists) once and remembers its cost.

    Builders that leave something behind (LanceDB's temporary folder) register its removal with
    :meth:`on_close`; :meth:`close` runs those callbacks and forgets every build.
    """

    def __init__(self) -> None:
        self._built: dict[str, Built] = {}
        self._closers: list[Callable[[], None]] = []

    def on_close(self, fn: Callable[[], None]) -> None:
        self._closers.append(fn)

    def close(self) -> None:
        self._built.clear()
        while self._closers:
            self._closers.pop()()

    def __enter__(self) -> Shared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def built(self, name: str) -> Built | None:
        """The build of ``name`` if some system made it."""
        return self._built.get(name)

    def get(self, name: str, builder: Callable[[], Any]) -> Built:
        b = self._built.get(name)
        if b is None:
            rss0 = _rss_bytes()
            t0 = time.perf_counter()
            obj = builder()
            dt = time.perf_counter() - t0
            b = self._built[name] = Built(obj, dt, max(_rss_bytes() - rss0, 0) / 2**20)
        return b


class System:
    """One timed configuration. ``kind`` picks the ground truth, ``filtered`` the time window."""

    key = ""
    label = ""  # the "system" column
    kind = "vector"  # "vector" | "bm25" | "hybrid"
    filtered = False

    def __init__(self) -> None:
        self.build_s = 0.0
        self.rss_mb = 0.0
        self.note = ""

    @property
    def case(self) -> str:
        return self.kind + (" (window)" if self.filtered else "")

    def case_label(self, fraction: float) -> str:
        return self.kind + (f", {fraction:.0%} window" if self.filtered else "")

    def _use(self, shared: Shared, name: str, builder: Callable[[], Any]) -> Any:
        b = shared.get(name, builder)
        self.build_s += b.build_s
        self.rss_mb += b.rss_mb
        return b.obj

    def build(self, wl: Workload, shared: Shared) -> None:
        raise NotImplementedError

    def query(self, i: int) -> Any:
        """Top-k ids for query ``i``, best first (array or list of ints)."""
        raise NotImplementedError

    def plan(self, i: int) -> str | None:
        """Query plan, for systems that report one (called outside timing)."""
        return None
