"""Progress of a long command on stderr: a tqdm bar on a terminal, else a plain line every few
seconds (logs and CI get lines, not carriage-return redraws)."""

from __future__ import annotations

import time
from typing import Any, TextIO

PROGRESS_EVERY_S = 5.0  # seconds between two plain progress lines


class Meter:
    """Progress of one long step on ``stream``: a tqdm bar when tqdm is installed and the stream
    is a terminal; otherwise (a log file, CI) a plain line at most every
    :data:`PROGRESS_EVERY_S` seconds, and a closing one when the last did not show the end. A
    short step stays quiet and a long one is never silent. ``stream=None`` shows nothing."""

    def __init__(self, stream: TextIO | None, desc: str, total: int, unit: str) -> None:
        self._stream, self._desc, self._total, self._unit = stream, desc, total, unit
        self._done = 0
        self._t0 = self._last = time.perf_counter()
        self._shown = 0  # items done at the last plain line; 0: none printed
        self._bar: Any = None
        if stream is not None and is_terminal(stream):
            try:
                from tqdm import tqdm
            except ImportError:
                pass
            else:
                self._bar = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=False, dynamic_ncols=True)

    def __enter__(self) -> Meter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self._done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if self._stream is not None and now - self._last >= PROGRESS_EVERY_S:
            self._last = now
            self._shown = self._done
            pct = 100 * self._done / self._total if self._total else 100.0
            print(
                f"{self._desc}: {self._done}/{self._total} {self._unit} ({pct:.0f}%, {now - self._t0:.0f}s)",
                file=self._stream,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._stream is not None and 0 < self._shown < self._done:
            self._shown = self._done
            print(
                f"{self._desc}: {self._done}/{self._total} {self._unit} in {time.perf_counter() - self._t0:.1f}s",
                file=self._stream,
                flush=True,
            )


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


# ============================================================================ embeddings
