"""CI performance gate: trimem/peer latency *ratios* from one process, against committed limits.

    python -m trimem bench --gate [benches/perf_gate.json]          # check (exit 1 on a regression)
    python -m trimem bench --gate-calibrate benches/perf_gate.json  # (re)write this kernel's thresholds

Why ratios and never absolute times: CI machines are shared and differ from one another, so a
query that takes 0.3 ms today may take 0.45 ms tomorrow with no code change. Timing trimem and a
fixed reference (hnswlib, tantivy, bm25s) in the *same process*, interleaved, cancels most of
that: a neighbour's load or a slower CPU slows both, and their ratio moves much less.

Method, all in one process:

1. One seeded dataset (:func:`trimem.bench.datasets.make_dataset`, default 20k records x 128-d)
   and one 10 % time window per query; every system needed by a ratio is built once. trimem's
   index is built with ``threads=1``, so that it answers on one thread like every peer: with
   more, a hybrid search overlaps its two legs on a second core when one happens to be free,
   and the hybrid ratio would measure the machine's load instead of the code.
2. One untimed pass per system (warm caches), then ``rounds`` interleaved rounds
   (:func:`trimem.bench.compare.time_rounds`: every system runs all queries, one per call,
   systems alternating every ``block`` = 10 queries so that a burst of load from another process
   lands on all of them, the order rotated every round, the garbage collector paused). Each round
   gives every system a p50; each ratio's value is the **median over rounds of the per-round
   ratio** of p50s, so a noisy round moves one sample, not the result.
3. A ratio fails when its value exceeds its ``threshold`` in the thresholds file. Thresholds are
   written by ``--gate-calibrate``: ``headroom`` (1.3) times the median of the ratios measured on
   ``runs`` quiet runs (each with a fresh build), rounded down. The headroom is below 1.5 on
   purpose: a 1.5x slowdown of trimem must land clearly over its threshold, not on it.
4. If any ratio fails, the timing is repeated once on the same indexes before failing, and a
   ratio fails only when it exceeds its threshold in **both** measurements. On a shared machine a
   burst of load from another process (a compile, another CI job) can fall on one system's turns
   in enough rounds to move a median; it rarely hits the same ratio twice in a row, while a real
   regression in trimem shows in both measurements.
5. A ratio measured more than ``headroom`` times *under* its calibrated value passes, with a
   warning: its threshold would let a slowdown of more than ``headroom`` squared through, which
   after an intended speed-up calls for a recalibration.

Thresholds are per SIMD kernel. The engine picks its kernels at run time from the CPU
(:func:`trimem.simd_kernel`: ``avx512f``, ``avx2+fma`` or ``portable``, plus popcount variants),
while the peers keep their own code, so a ratio measured with one kernel is no limit for another:
thresholds from a slower kernel would let a regression of the faster one pass unnoticed, and
thresholds from a faster kernel would fail a slower one with no code change. The file therefore
holds one calibration per kernel, each recording the CPU it was measured on (model, cores, the
CPU flags the engine dispatches on). When the gate runs:

* a calibration for the running kernel exists: it applies; any difference between this CPU and
  the recorded one (model, cores, flags) is printed as a warning, since ratios can shift a little
  between CPUs even on the same kernel;
* none exists, but the CPU can run a calibrated kernel by setting ``$TRIMEM_SIMD`` (an AVX-512
  CPU can run the AVX2 kernels): the gate warns and re-runs itself in a child process with that
  setting, so the committed thresholds apply to the code they were measured on. The running
  kernel's own code paths are then not gated, and the warning says so;
* otherwise the gate refuses to run (exit 2) and says how to calibrate. It never calibrates
  itself in-process: thresholds derived in the same run from the code under test cannot catch a
  regression that this code introduced, so such a run could only ever pass.

The gate refuses a debug build of the engine (timings would be meaningless). For testing the
gate itself, ``slowdown`` (or ``$TRIMEM_GATE_SLOWDOWN``) makes every trimem query busy-wait
until it has taken ``slowdown`` times its real duration — the gate must then fail.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Protocol, TextIO

import numpy as np

import trimem
from trimem.bench import peers
from trimem.bench.compare import (
    DebugBuildError,
    build_systems,
    check_release,
    time_rounds,
    versions,
)
from trimem.bench.datasets import make_dataset, time_window
from trimem.bench.gate_plan import (
    CPU_FLAGS,
    DEFAULT_RATIOS,
    DEFAULT_THRESHOLDS,
    ERROR,
    FAILED,
    FILE_FORMAT,
    HEADROOM,
    PASSED,
    SIMD_ENV,
    SLOWDOWN_ENV,
    GateConfig,
    GateError,
    GatePlan,
    Measurement,
    RatioSpec,
    Thresholds,
    ThresholdsFile,
    _calibrate_hint,
    _describe,
    _env_of,
    calibration_key,
    cpu_record,
    load_thresholds,
    plan_gate,
)

__all__ = [
    "CPU_FLAGS",
    "DEFAULT_RATIOS",
    "DEFAULT_THRESHOLDS",
    "HEADROOM",
    "SIMD_ENV",
    "SLOWDOWN_ENV",
    "GateConfig",
    "GateError",
    "GatePlan",
    "Measurement",
    "RatioSpec",
    "Thresholds",
    "ThresholdsFile",
    "calibrate",
    "cpu_record",
    "load_thresholds",
    "plan_gate",
    "run_gate",
]


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


def _is_trimem(key: str) -> bool:
    return key.startswith("trimem")


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
        # trimem's index gets one thread, as every peer answers on one: with more, a hybrid search
        # runs its two legs on a second core when one is free, so its latency, and the hybrid
        # ratio, would follow what else the machine runs rather than the code under test.
        theirs = [k for k in keys if not _is_trimem(k)]
        ours = [k for k in keys if _is_trimem(k)]
        ready, skipped = build_systems(peers.make_systems(theirs), wl, self.shared)
        ready2, skipped2 = build_systems(peers.make_systems(ours), replace(wl, threads=1), self.shared)
        self.ready = sorted(ready + ready2, key=lambda s: keys.index(s.key))
        skipped += skipped2
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
        if self.slowdown != 1.0 and _is_trimem(s.key):
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


def _num(v: float) -> str:
    """A ratio for people: 3 decimals, or 3 significant digits for ratios under 0.1 (bm25s)."""
    return f"{v:.3f}" if abs(v) >= 0.1 else f"{v:.3g}"


def _table(th: Thresholds, m: Measurement, over: set[str]) -> str:
    lines = [
        "| ratio (trimem / peer, p50; < 1 means trimem is faster) | measured | rounds min–max | quiet | threshold | |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for spec in th.specs:
        r = m.rounds[spec.label]
        q = th.quiet.get(spec.label)
        lines.append(
            f"| {spec.label} | {_num(m.ratios[spec.label])} | {_num(min(r))}–{_num(max(r))} | "
            f"{'–' if q is None else _num(q)} | {_num(th.limit[spec.label])} | "
            f"{'**over**' if spec.label in over else 'ok'} |"
        )
    return "\n".join(lines)


def _over(th: Thresholds, m: Measurement) -> set[str]:
    return {s.label for s in th.specs if m.ratios[s.label] > th.limit[s.label]}


def _loose(th: Thresholds, m: Measurement) -> list[str]:
    """Ratios so far under their calibration that the threshold has stopped guarding them.

    After an intended speed-up the old threshold lets trimem lose all of it and more before the
    gate notices; worth a warning, never a failure. Load can do the same to a ratio of systems
    with very different latencies (a long query is preempted more often than a short one), so
    the warning names both causes.
    """
    headroom = float(th.raw.get("headroom") or HEADROOM)
    notes = []
    for spec in th.specs:
        q, v = th.quiet.get(spec.label), m.ratios[spec.label]
        if q is not None and v > 0 and v * headroom < q:
            notes.append(
                f"ratio '{spec.label}' measured {_num(v)}, {q / v:.1f}x under its calibrated {_num(q)}: "
                f"its threshold {_num(th.limit[spec.label])} would let a {th.limit[spec.label] / v:.1f}x "
                "slowdown pass"
            )
    return notes


def _pump(src: IO[str] | None, dst: TextIO) -> None:
    if src is None:
        return
    for line in src:
        dst.write(line)
        dst.flush()


def _run_forced(
    path: Path,
    env: Mapping[str, str],
    factor: float,
    *,
    show_progress: bool,
    json_path: str | os.PathLike[str] | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Run the gate in a child process with ``env`` (the engine picks its kernels once per process)."""
    cmd = [sys.executable, "-m", "trimem.bench.gate", str(path)]
    if not show_progress:
        cmd.append("--no-progress")
    if json_path is not None:
        cmd += ["--json", str(json_path)]
    child_env = {**os.environ, **env}
    if factor != 1.0:
        child_env[SLOWDOWN_ENV] = repr(factor)
    else:
        child_env.pop(SLOWDOWN_ENV, None)
    # The child's output is forwarded line by line (not inherited) so that callers that replaced
    # out/err, such as tests, see it too.
    with subprocess.Popen(cmd, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        side = threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)
        side.start()
        _pump(proc.stdout, out)
        side.join()
        return proc.wait()


def run_gate(
    path: str | os.PathLike[str] = DEFAULT_THRESHOLDS,
    *,
    slowdown: float | None = None,
    show_progress: bool = True,
    json_path: str | os.PathLike[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    make_bench: Callable[[GateConfig, Sequence[RatioSpec], float], Bench] | None = None,
    cpu: Mapping[str, Any] | None = None,
) -> int:
    """Measure the ratios of the calibration that applies on this CPU and compare them with its thresholds.

    Returns 0 when every ratio is within its threshold, 1 when one exceeds it in the first
    measurement and again in the one re-measurement, 2 when the gate cannot run (debug build,
    bad file, missing peer, no calibration usable on this CPU). Tables go to ``out``, verdicts,
    warnings and errors to ``err``. ``make_bench(config, specs, slowdown)`` replaces the real
    measurement and ``cpu`` this machine's :func:`cpu_record` (tests).
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err

    def say(msg: str) -> None:
        print(msg, file=err, flush=True)

    t_start = time.perf_counter()
    try:
        check_release("a performance gate", hint="; the gate never runs on a debug build")
        tf = load_thresholds(path)
        factor = slowdown_from_env() if slowdown is None else float(slowdown)
    except (DebugBuildError, GateError) as exc:
        say(f"perf gate: error: {exc}")
        return ERROR
    here = dict(cpu_record() if cpu is None else cpu)
    plan = plan_gate(tf, here)
    for w in plan.warnings:
        say(f"perf gate: WARNING: {w}")
    if plan.action == "refuse":
        say(f"perf gate: error: {plan.error}")
        return ERROR
    if plan.action == "force":
        rc = _run_forced(tf.path, plan.env, factor, show_progress=show_progress, json_path=json_path, out=out, err=err)
        setting = " ".join(f"{k}={v}" for k, v in plan.env.items())
        say(
            f"perf gate: the run above used the {plan.kernel} kernel ({setting}); this CPU's own "
            f"{here.get('simd')} kernel was not gated (see the warning at the top)"
        )
        return rc
    th = tf.kernels[plan.kernel]
    c = th.config
    if factor != 1.0:
        say(
            f"perf gate: every trimem query is slowed down x{factor:g} on purpose "
            f"({SLOWDOWN_ENV} / slowdown=): this run tests that the gate fails"
        )
    print(
        f"trimem perf gate ({tf.path}): {_describe(here)}; thresholds of kernel {th.kernel} "
        f"calibrated {th.calibrated_at or '(date unknown)'} on {th.machine.get('cpu', '?')!r}. "
        f"1-minute load {_load()}. n={c.n}, dim={c.dim}, {c.queries} queries, {c.rounds} interleaved "
        "rounds per measurement; value = median over rounds of the per-round p50 ratio",
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

    loose = _loose(th, measurements[-1]) if factor == 1.0 else []
    for note in loose:
        say(
            f"perf gate: WARNING: {note}. After an intended speed-up, recalibrate to keep it guarded "
            f"({_calibrate_hint(tf.path, _env_of(here))}); on a busy machine (see the load above), "
            "load can lower a ratio of systems with very different latencies"
        )
    elapsed = time.perf_counter() - t_start
    if json_path is not None:
        doc = {
            "thresholds_file": str(tf.path),
            "kernel": th.kernel,
            "calibration": {"calibrated_at": th.calibrated_at, "machine": th.machine, "command": th.command},
            "config": asdict(c),
            "slowdown": factor,
            "machine": here,
            "versions": versions(),
            "warnings": plan.warnings + loose,
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
                f"{spec.denominator} p50) = {_num(min(vals))} exceeds its threshold "
                f"{_num(th.limit[spec.label])} (measured {', then '.join(_num(v) for v in vals)}"
                f"{'' if q is None else f'; quiet-run ratio {_num(q)}'}; kernel {th.kernel}; thresholds in {tf.path})"
            )
        say(f"perf gate: FAILED ({len(failing)} of {len(th.specs)} ratios, kernel {th.kernel}) in {elapsed:.0f}s")
        return FAILED
    again = " after one re-measurement" if len(measurements) > 1 else ""
    say(f"perf gate: passed{again}: {len(th.specs)} ratios within their kernel {th.kernel} thresholds ({elapsed:.0f}s)")
    return PASSED


# --------------------------------------------------------------------------
# Calibrating
# --------------------------------------------------------------------------


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # not on every platform
        return None


def _sig(x: float, digits: int = 4, *, down: bool = False) -> float:
    """``x`` to ``digits`` significant digits (rounded down with ``down``): fixed decimals would
    leave a ratio of 0.006 one digit, and its threshold a step of 15 %."""
    if not x > 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return (math.floor(x * scale) if down else round(x * scale)) / scale


ABOUT = (
    "Thresholds of the CI performance gate (python -m trimem bench --gate), one calibration per "
    "SIMD kernel of the engine ('kernels', keyed by trimem.simd_kernel(); a second CPU model "
    "running a kernel keeps its own calibration as 'kernel@cpu', applied on that model). Each ratio is "
    "trimem's p50 latency over a peer's, measured in one process over interleaved rounds "
    "(median of per-round ratios); the gate fails when a ratio exceeds 'threshold' twice in a "
    "row. 'quiet' is the median of 'quiet_runs', measured by the kernel's 'command' on its "
    "'machine' (CPU model, cores, the CPU flags the engine dispatches on); threshold = "
    "floor(headroom x quiet). Never an absolute time. The gate applies the calibration of the "
    "kernel it runs; without one it runs a calibrated kernel if the CPU can (TRIMEM_SIMD=avx2 on "
    "an AVX-512 CPU), and otherwise refuses. Recalibrate a kernel on your CI machine when it "
    "changes, or after an intended speed change; the other kernels' entries are kept."
)


def _existing_kernels(p: Path) -> dict[str, Any]:
    """The other kernels' calibrations already in ``p``, to keep them when this one is rewritten."""
    if not p.exists():
        return {}
    tf = load_thresholds(p)  # a file that cannot be read is an error, never silently replaced
    kept = {}
    for kernel, th in tf.kernels.items():
        entry = dict(th.raw)
        if "kernels" not in tf.raw:  # format 1: drop the file-level keys
            entry.pop("about", None)
        kept[kernel] = entry
    return kept


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
    """Measure ``runs`` times (fresh build each) and write the running kernel's thresholds to ``path``.

    Each threshold is ``headroom`` x the median of the runs' ratios, rounded *down* to 4
    significant digits, so it is at most ``headroom`` times the quiet ratio. The calibration is stored
    under the SIMD kernel the engine runs (:func:`trimem.simd_kernel`, after ``$TRIMEM_SIMD``);
    the file's calibrations of other kernels are kept. Run it on a quiet machine. Returns the
    whole file as written.
    """
    err = sys.stderr if err is None else err
    check_release("calibrating the performance gate", hint="")
    if runs < 1 or not headroom >= 1.0:
        raise ValueError("need runs >= 1 and headroom >= 1")
    config = GateConfig() if config is None else config
    p = Path(path)
    kept = _existing_kernels(p)
    here = cpu_record()
    kernel = calibration_key(kept, str(trimem.simd_kernel()), here)
    print(f"gate calibration: {_describe(here)}", file=err, flush=True)
    load = [_load()]
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
    load.append(_load())
    busy = [x for x in load if x is not None and x > (os.cpu_count() or 1)]
    if busy:
        # Preemption lengthens a long query more often than a short one, so a ratio between
        # systems of very different speeds (trimem bm25 / bm25s) falls as the load rises.
        print(
            f"gate calibration: WARNING: the machine was busy (1-minute load {max(busy):.1f} on "
            f"{os.cpu_count()} cores); ratios of systems with very different latencies move with "
            "load, so thresholds calibrated now may not fit a quiet run. Recalibrate when it is quiet.",
            file=err,
            flush=True,
        )
    ratios: list[dict[str, Any]] = []
    for spec in specs:
        vals = [m.ratios[spec.label] for m in per_run]
        # The threshold comes from the quiet value as written, so the file is consistent with
        # its own rule (from the unrounded median, 1.5 x 1.0333 could give 1.550).
        quiet = _sig(float(np.median(vals)))
        ratios.append(
            {
                "label": spec.label,
                "numerator": spec.numerator,
                "denominator": spec.denominator,
                "quiet_runs": [_sig(v) for v in vals],
                "quiet": quiet,
                "spread_pct": round(100 * (max(vals) - min(vals)) / quiet, 1),
                "threshold": _sig(headroom * quiet, down=True),
            }
        )
    command = command or f"python -m trimem bench --gate-calibrate {path} --gate-runs {runs}"
    if here["simd_env"]:  # the kernel was chosen by the environment: say so in the recipe
        command = f"{SIMD_ENV}={here['simd_env']} {command}"
    entry = {
        "command": command,
        "calibrated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": here,
        "versions": versions(),
        "config": asdict(config),
        "headroom": headroom,
        "runs": runs,
        "run_seconds": [round(m.seconds, 1) for m in per_run],
        "calibration_seconds": round(time.perf_counter() - t0, 1),
        "load_average": load,  # 1-minute load before and after: quiet means under the core count
        "ratios": ratios,
    }
    others = {k: v for k, v in kept.items() if k != kernel}
    doc = {"about": ABOUT, "format": FILE_FORMAT, "kernels": dict(sorted({**others, kernel: entry}.items()))}
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    for item in ratios:
        print(
            f"  {item['label']}: quiet {_num(item['quiet'])} (runs "
            f"{', '.join(_num(v) for v in item['quiet_runs'])}; spread "
            f"{item['spread_pct']:.0f}%) -> threshold {_num(item['threshold'])}",
            file=err,
            flush=True,
        )
    for k, e in others.items():
        print(f"kept the thresholds of kernel {k} (calibrated {e.get('calibrated_at', '?')})", file=err, flush=True)
    print(f"wrote kernel {kernel} to {p}", file=err, flush=True)
    return doc


# --------------------------------------------------------------------------
# Entry point of the child process that runs another kernel
# --------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """The gate alone, ``python -m trimem.bench.gate [THRESHOLDS.json]``: what ``trimem bench --gate``
    runs, without the rest of the CLI; the gate starts it to run another SIMD kernel."""
    ap = argparse.ArgumentParser(
        prog="python -m trimem.bench.gate",
        description="Run the CI performance gate (the same as python -m trimem bench --gate).",
    )
    ap.add_argument("thresholds", nargs="?", default=DEFAULT_THRESHOLDS, help=f"default {DEFAULT_THRESHOLDS}")
    ap.add_argument("--no-progress", action="store_true", help="no progress output on stderr")
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON to PATH")
    args = ap.parse_args(argv)
    return run_gate(args.thresholds, show_progress=not args.no_progress, json_path=args.json)


if __name__ == "__main__":
    sys.exit(main())
