"""CI performance gate: trimem/peer latency *ratios* from one process, against committed limits.

    python -m trimem bench --gate [benches/perf_gate.json]          # check (exit 1 on a regression)
    python -m trimem bench --gate-calibrate benches/perf_gate.json  # (re)write the thresholds

Why ratios and never absolute times: CI machines are shared and differ from one another, so a
query that takes 0.3 ms today may take 0.45 ms tomorrow with no code change. Timing trimem and a
fixed reference (hnswlib, tantivy, bm25s) in the *same process*, interleaved, cancels most of
that: a neighbour's load or a slower CPU slows both, and their ratio moves much less.

Method, all in one process:

1. One seeded dataset (:func:`trimem.bench.datasets.make_dataset`, default 20k records x 128-d)
   and one 10 % time window per query; every system needed by a ratio is built once.
2. One untimed pass per system (warm caches), then ``rounds`` interleaved rounds
   (:func:`trimem.bench.compare.time_rounds`: every system runs all queries, one per call,
   systems alternating every ``block`` = 10 queries so that a burst of load from another process
   lands on all of them, the order rotated every round, the garbage collector paused). Each round
   gives every system a p50; each ratio's value is the **median over rounds of the per-round
   ratio** of p50s, so a noisy round moves one sample, not the result.
3. A ratio fails when its value exceeds its ``threshold`` in the thresholds file. Thresholds are
   written by ``--gate-calibrate``: at most ``headroom`` (1.5) times the median of the ratios
   measured on ``runs`` quiet runs (each with a fresh build), rounded down.
4. If any ratio fails, the timing is repeated once on the same indexes before failing, and a
   ratio fails only when it exceeds its threshold in **both** measurements. On a shared machine a
   burst of load from another process (a compile, another CI job) can fall on one system's turns
   in enough rounds to move a median; it rarely hits the same ratio twice in a row, while a real
   regression in trimem shows in both measurements.

The gate refuses a debug build of the engine (timings would be meaningless). For testing the
gate itself, ``slowdown`` (or ``$TRIMEM_GATE_SLOWDOWN``) makes every trimem query busy-wait
until it has taken ``slowdown`` times its real duration — the gate must then fail.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TextIO

import numpy as np

from trimem.bench import peers
from trimem.bench.compare import (
    DebugBuildError,
    build_systems,
    check_release,
    machine_info,
    time_rounds,
    versions,
)
from trimem.bench.datasets import make_dataset, time_window

__all__ = [
    "DEFAULT_RATIOS",
    "DEFAULT_THRESHOLDS",
    "HEADROOM",
    "SLOWDOWN_ENV",
    "GateConfig",
    "GateError",
    "Measurement",
    "RatioSpec",
    "Thresholds",
    "calibrate",
    "load_thresholds",
    "run_gate",
]

DEFAULT_THRESHOLDS = "benches/perf_gate.json"
HEADROOM = 1.5
SLOWDOWN_ENV = "TRIMEM_GATE_SLOWDOWN"

# Exit codes of run_gate / the CLI.
PASSED, FAILED, ERROR = 0, 1, 2


class GateError(RuntimeError):
    """The gate cannot run (bad thresholds file, missing peer): a set-up error, exit code 2."""


@dataclass(frozen=True)
class GateConfig:
    n: int = 20_000
    dim: int = 128
    queries: int = 200
    rounds: int = 21
    block: int = 10  # queries per system before switching to the next (time_rounds block=)
    seed: int = 0
    window: float = 0.1
    k: int = 10


@dataclass(frozen=True)
class RatioSpec:
    label: str
    numerator: str  # a trimem system key (trimem.bench.peers.SYSTEMS)
    denominator: str  # a peer system key


DEFAULT_RATIOS: tuple[RatioSpec, ...] = (
    RatioSpec("trimem hybrid / hnswlib vector-only", "trimem-hybrid", "hnswlib"),
    RatioSpec("trimem vector / hnswlib", "trimem-vector", "hnswlib"),
    RatioSpec("trimem vector 10% window / hnswlib unfiltered", "trimem-vector-window", "hnswlib"),
    RatioSpec("trimem bm25 / tantivy", "trimem-bm25", "tantivy"),
    RatioSpec("trimem bm25 / bm25s (numpy)", "trimem-bm25", "bm25s"),
)


@dataclass
class Thresholds:
    path: Path
    config: GateConfig
    specs: list[RatioSpec]
    limit: dict[str, float]  # label -> threshold
    quiet: dict[str, float | None]  # label -> calibrated quiet ratio (for messages)
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class Measurement:
    ratios: dict[str, float]  # label -> median over rounds of the per-round p50 ratio
    rounds: dict[str, list[float]]  # label -> per-round ratios
    p50_ms: dict[str, float]  # system key -> median over rounds of its p50
    seconds: float


# --------------------------------------------------------------------------
# Thresholds file
# --------------------------------------------------------------------------


def load_thresholds(path: str | os.PathLike[str]) -> Thresholds:
    """Read and validate a thresholds file (written by :func:`calibrate`)."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GateError(
            f"thresholds file {p} not found; create it on a quiet machine with "
            f"`python -m trimem bench --gate-calibrate {p}`"
        ) from None
    except (OSError, ValueError) as exc:
        raise GateError(f"cannot read thresholds file {p}: {exc}") from None
    try:
        known = {f for f in GateConfig.__dataclass_fields__}
        cfg = raw.get("config", {})
        unknown = set(cfg) - known
        if unknown:
            raise GateError(f"{p}: unknown config keys {sorted(unknown)}")
        config = GateConfig(**cfg)
        specs, limit, quiet = [], {}, {}
        for entry in raw["ratios"]:
            spec = RatioSpec(str(entry["label"]), str(entry["numerator"]), str(entry["denominator"]))
            for key in (spec.numerator, spec.denominator):
                if key not in peers.SYSTEMS:
                    raise GateError(
                        f"{p}: ratio {spec.label!r} names unknown system {key!r}; known: {', '.join(peers.SYSTEMS)}"
                    )
            thr = float(entry["threshold"])
            if not thr > 0 or not math.isfinite(thr):
                raise GateError(f"{p}: ratio {spec.label!r} has a bad threshold {thr}")
            specs.append(spec)
            limit[spec.label] = thr
            q = entry.get("quiet")
            quiet[spec.label] = None if q is None else float(q)
    except GateError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise GateError(f"{p}: malformed thresholds file ({type(exc).__name__}: {exc})") from None
    if not specs:
        raise GateError(f"{p}: no ratios to check")
    return Thresholds(p, config, specs, limit, quiet, raw)


# --------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------


def _slowed(query: Callable[[int], Any], factor: float) -> Callable[[int], Any]:
    """``query`` made to take ``factor`` times as long (busy-wait, so the CPU stays busy)."""
    clock = time.perf_counter_ns

    def slow(i: int) -> Any:
        t0 = clock()
        out = query(i)
        until = t0 + int((clock() - t0) * factor)
        while clock() < until:
            pass
        return out

    return slow


def slowdown_from_env() -> float:
    text = os.environ.get(SLOWDOWN_ENV, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        raise GateError(f"${SLOWDOWN_ENV}={text!r} is not a number") from None
    if not value >= 1.0:
        raise GateError(f"${SLOWDOWN_ENV} must be >= 1, got {text}")
    return value


class Bench(Protocol):
    def build(self) -> None: ...
    def measure(self) -> Measurement: ...
    def close(self) -> None: ...


class GateBench:
    """The gate's dataset and built systems; :meth:`measure` can run as often as needed."""

    def __init__(
        self, config: GateConfig, specs: Sequence[RatioSpec], *, slowdown: float = 1.0, show_progress: bool = True
    ) -> None:
        self.config = config
        self.specs = list(specs)
        self.slowdown = float(slowdown)
        self.show_progress = show_progress
        self.shared = peers.Shared()
        self.ready: list[peers.System] = []

    def build(self) -> None:
        c = self.config
        keys = list(dict.fromkeys(k for s in self.specs for k in (s.numerator, s.denominator)))
        ds = make_dataset(c.n, c.dim, seed=c.seed, n_queries=c.queries)
        windows = [time_window(ds.timestamps, c.window, seed=c.seed * 1_000_003 + i) for i in range(c.queries)]
        wl = peers.Workload(ds=ds, k=c.k, windows=windows, window_fraction=c.window, show_progress=self.show_progress)
        self.ready, skipped = build_systems(peers.make_systems(keys), wl, self.shared)
        if skipped:
            raise GateError(
                "the gate needs every system its ratios name; not available here: "
                + "; ".join(f"{s['key']} ({s['reason']})" for s in skipped)
                + ". Install the benchmark peers: python -m pip install 'trimem[bench]'"
            )
        for s in self.ready:  # untimed pass: warm caches
            for i in range(c.queries):
                s.query(i)

    def _wrap(self, s: peers.System) -> Callable[[int], Any]:
        if self.slowdown != 1.0 and s.key.startswith("trimem"):
            return _slowed(s.query, self.slowdown)
        return s.query

    def measure(self) -> Measurement:
        c = self.config
        t0 = time.perf_counter()
        timing = time_rounds(
            self.ready,
            c.queries,
            c.rounds,
            show_progress=self.show_progress,
            desc="gate timing rounds",
            wrap=self._wrap,
            block=c.block,
        )
        rounds: dict[str, list[float]] = {}
        for spec in self.specs:
            num, den = timing[spec.numerator].p50, timing[spec.denominator].p50
            rounds[spec.label] = [a / b for a, b in zip(num, den)]
        return Measurement(
            ratios={label: float(np.median(v)) for label, v in rounds.items()},
            rounds=rounds,
            p50_ms={k: float(np.median(t.p50)) for k, t in timing.items()},
            seconds=time.perf_counter() - t0,
        )

    def close(self) -> None:
        self.shared.close()
        self.ready = []


# --------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------


def _table(th: Thresholds, m: Measurement, over: set[str]) -> str:
    lines = [
        "| ratio (trimem / peer, p50; < 1 means trimem is faster) | measured | rounds min–max | quiet | threshold | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for spec in th.specs:
        r = m.rounds[spec.label]
        q = th.quiet.get(spec.label)
        lines.append(
            f"| {spec.label} | {m.ratios[spec.label]:.3f} | {min(r):.3f}–{max(r):.3f} | "
            f"{'–' if q is None else f'{q:.3f}'} | {th.limit[spec.label]:.3f} | "
            f"{'**over**' if spec.label in over else 'ok'} |"
        )
    return "\n".join(lines)


def _over(th: Thresholds, m: Measurement) -> set[str]:
    return {s.label for s in th.specs if m.ratios[s.label] > th.limit[s.label]}


def run_gate(
    path: str | os.PathLike[str] = DEFAULT_THRESHOLDS,
    *,
    slowdown: float | None = None,
    show_progress: bool = True,
    json_path: str | os.PathLike[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    make_bench: Callable[[GateConfig, Sequence[RatioSpec], float], Bench] | None = None,
) -> int:
    """Measure the ratios named in ``path`` and compare them with its thresholds.

    Returns 0 when every ratio is within its threshold, 1 when one exceeds it in the first
    measurement and again in the one re-measurement, 2 when the gate cannot run (debug build,
    bad file, missing peer). Tables go to ``out``, verdicts and errors to ``err``.
    ``make_bench(config, specs, slowdown)`` replaces the real measurement (tests).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err

    def say(msg: str) -> None:
        print(msg, file=err, flush=True)

    t_start = time.perf_counter()
    try:
        check_release("a performance gate", hint="; the gate never runs on a debug build")
        th = load_thresholds(path)
        factor = slowdown_from_env() if slowdown is None else float(slowdown)
    except (DebugBuildError, GateError) as exc:
        say(f"perf gate: error: {exc}")
        return ERROR
    c = th.config
    if factor != 1.0:
        say(
            f"perf gate: every trimem query is slowed down x{factor:g} on purpose "
            f"({SLOWDOWN_ENV} / slowdown=): this run tests that the gate fails"
        )
    print(
        f"trimem perf gate ({th.path}): n={c.n}, dim={c.dim}, {c.queries} queries, "
        f"{c.rounds} interleaved rounds per measurement; value = median over rounds of the "
        "per-round p50 ratio",
        file=out,
        flush=True,
    )
    bench = (
        make_bench(c, th.specs, factor)
        if make_bench is not None
        else GateBench(c, th.specs, slowdown=factor, show_progress=show_progress)
    )
    try:
        try:
            bench.build()
        except GateError as exc:
            say(f"perf gate: error: {exc}")
            return ERROR
        first = bench.measure()
        failing = _over(th, first)
        print(_table(th, first, failing), file=out, flush=True)
        measurements = [first]
        if failing:
            say(
                f"perf gate: {len(failing)} ratio(s) over threshold on the first measurement "
                f"({', '.join(sorted(failing))}); measuring once more before failing (a burst of "
                "load from another process on a shared machine can move a median; a real "
                "regression shows in both measurements)"
            )
            second = bench.measure()
            measurements.append(second)
            over2 = _over(th, second)
            print("\nre-measurement:", file=out)
            print(_table(th, second, over2), file=out, flush=True)
            failing &= over2  # a ratio fails only when it is over its threshold both times
    finally:
        bench.close()

    elapsed = time.perf_counter() - t_start
    if json_path is not None:
        doc = {
            "thresholds_file": str(th.path),
            "config": asdict(c),
            "slowdown": factor,
            "machine": machine_info(),
            "versions": versions(),
            "measurements": [asdict(m) for m in measurements],
            "thresholds": th.limit,
            "failed": sorted(failing),
            "elapsed_s": elapsed,
        }
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if failing:
        for spec in th.specs:
            if spec.label not in failing:
                continue
            vals = [m.ratios[spec.label] for m in measurements]
            q = th.quiet.get(spec.label)
            say(
                f"PERF GATE FAILED: ratio '{spec.label}' ({spec.numerator} p50 / "
                f"{spec.denominator} p50) = {min(vals):.3f} exceeds its threshold "
                f"{th.limit[spec.label]:.3f} (measured {', then '.join(f'{v:.3f}' for v in vals)}"
                f"{'' if q is None else f'; quiet-run ratio {q:.3f}'}; thresholds in {th.path})"
            )
        say(f"perf gate: FAILED ({len(failing)} of {len(th.specs)} ratios) in {elapsed:.0f}s")
        return FAILED
    again = " after one re-measurement" if len(measurements) > 1 else ""
    say(f"perf gate: passed{again}: {len(th.specs)} ratios within their thresholds ({elapsed:.0f}s)")
    return PASSED


# --------------------------------------------------------------------------
# Calibrating
# --------------------------------------------------------------------------


def calibrate(
    path: str | os.PathLike[str],
    *,
    runs: int = 3,
    config: GateConfig | None = None,
    specs: Sequence[RatioSpec] = DEFAULT_RATIOS,
    headroom: float = HEADROOM,
    command: str | None = None,
    show_progress: bool = True,
    err: TextIO | None = None,
) -> dict[str, Any]:
    """Measure ``runs`` times (fresh build each) and write thresholds to ``path``.

    Each threshold is ``headroom`` x the median of the runs' ratios, rounded *down* to 3
    decimals, so it is at most ``headroom`` times the quiet ratio. Run it on a quiet machine.
    """
    err = sys.stderr if err is None else err
    check_release("calibrating the performance gate", hint="")
    if runs < 1 or not headroom >= 1.0:
        raise ValueError("need runs >= 1 and headroom >= 1")
    config = GateConfig() if config is None else config
    t0 = time.perf_counter()
    per_run: list[Measurement] = []
    for r in range(runs):
        print(f"gate calibration: run {r + 1}/{runs}", file=err, flush=True)
        bench = GateBench(config, specs, show_progress=show_progress)
        try:
            bench.build()
            per_run.append(bench.measure())
        finally:
            bench.close()
    ratios: list[dict[str, Any]] = []
    for spec in specs:
        vals = [m.ratios[spec.label] for m in per_run]
        # The threshold comes from the quiet value as written, so the file is consistent with
        # its own rule (from the unrounded median, 1.5 x 1.0333 could give 1.550).
        quiet = round(float(np.median(vals)), 4)
        ratios.append(
            {
                "label": spec.label,
                "numerator": spec.numerator,
                "denominator": spec.denominator,
                "quiet_runs": [round(v, 4) for v in vals],
                "quiet": quiet,
                "spread_pct": round(100 * (max(vals) - min(vals)) / quiet, 1),
                "threshold": math.floor(headroom * quiet * 1000) / 1000,
            }
        )
    doc = {
        "about": (
            "Thresholds of the CI performance gate (python -m trimem bench --gate). Each ratio is "
            "trimem's p50 latency over a peer's, measured in one process over interleaved rounds "
            "(median of per-round ratios); the gate fails when a ratio exceeds 'threshold' twice "
            "in a row. 'quiet' is the median of 'quiet_runs', measured by 'command' on 'machine'; "
            "threshold = floor(headroom x quiet). Never an absolute time. Recalibrate on your CI "
            "machine when it changes, or after an intended speed change."
        ),
        "command": command or f"python -m trimem bench --gate-calibrate {path} --gate-runs {runs}",
        "calibrated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_info(),
        "versions": versions(),
        "config": asdict(config),
        "headroom": headroom,
        "runs": runs,
        "run_seconds": [round(m.seconds, 1) for m in per_run],
        "calibration_seconds": round(time.perf_counter() - t0, 1),
        "ratios": ratios,
    }
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for entry in ratios:
        print(
            f"  {entry['label']}: quiet {entry['quiet']:.3f} (runs "
            f"{', '.join(f'{v:.3f}' for v in entry['quiet_runs'])}; spread "
            f"{entry['spread_pct']:.0f}%) -> threshold {entry['threshold']:.3f}",
            file=err,
            flush=True,
        )
    print(f"wrote {p}", file=err, flush=True)
    return doc
