"""The performance gate's thresholds file and plan: what a calibration records (ratios, the
CPU and SIMD kernel it was measured on), how the file is read, and which calibration a run on
this machine applies (or why none can)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from trimem.bench import peers
from trimem.bench.compare import (
    machine_info,
)

DEFAULT_THRESHOLDS = "benches/perf_gate.json"
HEADROOM = 1.3
SLOWDOWN_ENV = "TRIMEM_GATE_SLOWDOWN"
SIMD_ENV = "TRIMEM_SIMD"  # read by the engine (rust/engine/src/distance.rs): "avx2" holds AVX-512 back
FILE_FORMAT = 2  # 1: one calibration at the top level (read, never written); 2: one per kernel

# The CPU flags (as /proc/cpuinfo spells them) that the engine's run-time dispatch looks at: the
# dot products (avx512f, avx2+fma), the filter bitmap (avx512bw, avx2) and the sign-sketch scan of
# filtered searches (avx512_vpopcntdq, popcnt). Two CPUs that agree on these run the same code.
CPU_FLAGS: tuple[str, ...] = ("popcnt", "avx2", "fma", "avx512f", "avx512bw", "avx512_vpopcntdq")

# Kernels the gate can make the engine run on a CPU that would pick another one: kernel ->
# (environment the child process gets, CPU flags it needs, the kernels it can replace). The
# environment can only hold AVX-512 back; nothing makes a CPU run a kernel above its own.
FORCIBLE: dict[str, tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]] = {
    "avx2+fma": ({SIMD_ENV: "avx2"}, ("avx2", "fma"), ("avx512f",)),
}

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
    """One kernel's calibration: the sizes it was measured at, its ratios and their limits."""

    path: Path
    kernel: str
    config: GateConfig
    specs: list[RatioSpec]
    limit: dict[str, float]  # label -> threshold
    quiet: dict[str, float | None]  # label -> calibrated quiet ratio (for messages)
    machine: dict[str, Any] = field(default_factory=dict)  # the CPU it was calibrated on
    command: str = ""
    calibrated_at: str = ""
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class ThresholdsFile:
    path: Path
    kernels: dict[str, Thresholds]  # kernel name -> its calibration
    raw: dict[str, Any] = field(repr=False, default_factory=dict)


@dataclass
class Measurement:
    ratios: dict[str, float]  # label -> median over rounds of the per-round p50 ratio
    rounds: dict[str, list[float]]  # label -> per-round ratios
    p50_ms: dict[str, float]  # system key -> median over rounds of its p50
    seconds: float


# --------------------------------------------------------------------------
# The CPU
# --------------------------------------------------------------------------


def _cpu_flags() -> dict[str, bool] | None:
    """Which of :data:`CPU_FLAGS` this CPU has; None where /proc/cpuinfo cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return {f: f in have for f in CPU_FLAGS}
    except OSError:
        pass
    return None


def cpu_record() -> dict[str, Any]:
    """This process's machine as the thresholds file records it.

    ``simd`` is the kernel the engine actually runs (after ``$TRIMEM_SIMD``), ``simd_env`` the
    setting that chose it, ``cpu_flags`` what the CPU offers.
    """
    info = machine_info()
    info["cpu_flags"] = _cpu_flags()
    info["simd_env"] = os.environ.get(SIMD_ENV) or None
    return info


def _describe(machine: Mapping[str, Any]) -> str:
    flags = machine.get("cpu_flags")
    shown = "flags unknown" if flags is None else " ".join(f for f in CPU_FLAGS if flags.get(f)) or "none"
    forced = f", {SIMD_ENV}={machine['simd_env']}" if machine.get("simd_env") else ""
    return (
        f"kernel {machine.get('simd', '?')}{forced} on {machine.get('cpu', '?')!r}, "
        f"{machine.get('cores', '?')} cores, flags: {shown}"
    )


def _usable_flags(machine: Mapping[str, Any]) -> dict[str, bool] | None:
    """The CPU flags the engine may use on ``machine``: ``$TRIMEM_SIMD=avx2`` holds every AVX-512
    code path back (dot products, filter bitmap, sketch scan), as if the CPU had none."""
    flags = machine.get("cpu_flags")
    if flags is None:
        return None
    held_back = machine.get("simd_env") == "avx2"
    return {f: bool(flags.get(f)) and not (held_back and f.startswith("avx512")) for f in CPU_FLAGS}


def cpu_differences(calibrated: Mapping[str, Any], here: Mapping[str, Any]) -> list[str]:
    """What differs between the CPU a calibration was measured on and this one, in words."""
    diffs = []
    if calibrated.get("cpu") != here.get("cpu"):
        diffs.append(f"CPU model {calibrated.get('cpu')!r} at calibration, {here.get('cpu')!r} here")
    if calibrated.get("cores") != here.get("cores"):
        diffs.append(f"{calibrated.get('cores')} cores at calibration, {here.get('cores')} here")
    old, new = _usable_flags(calibrated), _usable_flags(here)
    if old is None or new is None:
        if old != new:
            side = "the calibration CPU" if old is None else "this CPU"
            diffs.append(f"the flags of {side} are unknown")
    else:
        gained = [f for f in CPU_FLAGS if new[f] and not old[f]]
        lost = [f for f in CPU_FLAGS if old[f] and not new[f]]
        if gained:
            diffs.append(f"the engine can use {' '.join(gained)} here, which it could not at calibration")
        if lost:
            diffs.append(f"the engine cannot use {' '.join(lost)} here, which it used at calibration")
    return diffs


# --------------------------------------------------------------------------
# Thresholds file
# --------------------------------------------------------------------------


def _load_entry(p: Path, kernel: str, entry: Mapping[str, Any]) -> Thresholds:
    where = f"{p} (kernel {kernel})"
    known = {f for f in GateConfig.__dataclass_fields__}
    cfg = entry.get("config", {})
    unknown = set(cfg) - known
    if unknown:
        raise GateError(f"{where}: unknown config keys {sorted(unknown)}")
    config = GateConfig(**cfg)
    specs, limit, quiet = [], {}, {}
    for item in entry["ratios"]:
        spec = RatioSpec(str(item["label"]), str(item["numerator"]), str(item["denominator"]))
        for key in (spec.numerator, spec.denominator):
            if key not in peers.SYSTEMS:
                raise GateError(
                    f"{where}: ratio {spec.label!r} names unknown system {key!r}; known: {', '.join(peers.SYSTEMS)}"
                )
        thr = float(item["threshold"])
        if not thr > 0 or not math.isfinite(thr):
            raise GateError(f"{where}: ratio {spec.label!r} has a bad threshold {thr}")
        specs.append(spec)
        limit[spec.label] = thr
        q = item.get("quiet")
        quiet[spec.label] = None if q is None else float(q)
    if not specs:
        raise GateError(f"{where}: no ratios to check")
    machine = dict(entry.get("machine") or {})
    machine.setdefault("simd", kernel)
    return Thresholds(
        path=p,
        kernel=kernel,
        config=config,
        specs=specs,
        limit=limit,
        quiet=quiet,
        machine=machine,
        command=str(entry.get("command", "")),
        calibrated_at=str(entry.get("calibrated_at", "")),
        raw=dict(entry),
    )


def load_thresholds(path: str | os.PathLike[str]) -> ThresholdsFile:
    """Read and validate a thresholds file (written by :func:`calibrate`): one calibration per kernel."""
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
        if not isinstance(raw, dict):
            raise TypeError("not a JSON object")
        if "kernels" in raw:
            entries = dict(raw["kernels"])
        else:  # format 1: a single calibration, keyed by the kernel it recorded
            kernel = (raw.get("machine") or {}).get("simd")
            if not kernel:
                raise GateError(
                    f"{p}: the calibration does not record the SIMD kernel it was measured with, so "
                    f"it cannot be matched to this CPU; recalibrate: `python -m trimem bench --gate-calibrate {p}`"
                )
            entries = {str(kernel): raw}
        kernels = {str(k): _load_entry(p, str(k), e) for k, e in entries.items()}
    except GateError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise GateError(f"{p}: malformed thresholds file ({type(exc).__name__}: {exc})") from None
    if not kernels:
        raise GateError(f"{p}: no calibration in the file")
    return ThresholdsFile(p, kernels, raw)


# --------------------------------------------------------------------------
# Which calibration applies on this CPU
# --------------------------------------------------------------------------


@dataclass
class GatePlan:
    """What the gate does on this CPU with this file (decided before anything is measured)."""

    action: Literal["check", "force", "refuse"]
    kernel: str  # the calibration that applies (check, force); the running kernel (refuse)
    env: dict[str, str] = field(default_factory=dict)  # force: the child's extra environment
    warnings: list[str] = field(default_factory=list)
    error: str = ""  # refuse: why


def _env_of(machine: Mapping[str, Any]) -> dict[str, str]:
    """The environment that chose the engine's kernel on ``machine``, to repeat it in a recipe."""
    return {SIMD_ENV: str(machine["simd_env"])} if machine.get("simd_env") else {}


def _calibrate_hint(path: Path, env: Mapping[str, str] | None = None) -> str:
    prefix = "".join(f"{k}={v} " for k, v in (env or {}).items())
    return f"{prefix}python -m trimem bench --gate-calibrate {path} --gate-runs 3"


def calibration_key(kernels: Mapping[str, Any], kernel: str, here: Mapping[str, Any]) -> str:
    """The key of this CPU's calibration of `kernel`: the kernel's name when its calibration was
    made on this CPU model (or there is none yet), else ``kernel@cpu`` — ratios between systems
    of very different speeds (trimem bm25 / bm25s) differ severalfold between CPU models running
    one kernel, so each CPU model a CI may run on keeps its own."""
    first = kernels.get(kernel)
    machine = first.machine if isinstance(first, Thresholds) else (first or {}).get("machine", {})
    if first is None or machine.get("cpu") == here.get("cpu"):
        return kernel
    return f"{kernel}@{here.get('cpu')}"


def plan_gate(tf: ThresholdsFile, here: Mapping[str, Any]) -> GatePlan:
    """Pick the calibration for the running kernel, or a kernel the CPU can be made to run.

    ``here`` is :func:`cpu_record` of this process.
    """
    running = str(here.get("simd"))
    own = calibration_key(tf.kernels, running, here)
    if own in tf.kernels:
        return GatePlan("check", own)
    if running in tf.kernels:
        th = tf.kernels[running]
        diffs = cpu_differences(th.machine, here)
        warnings = []
        if diffs:
            warnings.append(
                f"this CPU differs from the one the {running} thresholds were calibrated on "
                f"({th.calibrated_at or 'date unknown'}): {'; '.join(diffs)}. The SIMD kernel is the "
                "same, so the thresholds apply, but ratios can shift between CPUs; if the gate fails "
                "here without a code change, or passes by a wide margin, recalibrate on this "
                f"machine: {_calibrate_hint(tf.path, _env_of(here))}"
            )
        return GatePlan("check", running, warnings=warnings)

    calibrated = "; ".join(f"{k} ({_describe(t.machine)})" for k, t in tf.kernels.items())
    flags = here.get("cpu_flags")
    for kernel, (env, needs, replaces) in FORCIBLE.items():
        if kernel not in tf.kernels or running not in replaces:
            continue
        if here.get("simd_env") == env.get(SIMD_ENV):
            continue  # already set, and the engine still picked another kernel
        if flags is not None and not all(flags.get(f) for f in needs):
            continue
        setting = " ".join(f"{k}={v}" for k, v in env.items())
        return GatePlan(
            "force",
            kernel,
            env=dict(env),
            warnings=[
                f"this CPU runs the {running} SIMD kernel ({_describe(here)}), but {tf.path} has "
                f"thresholds only for: {calibrated}. Ratios measured with another kernel are not "
                f"comparable, so the gate re-runs itself with {setting} and applies the committed "
                f"{kernel} thresholds. The {running} code paths are NOT gated by this run; to gate "
                f"them, calibrate this kernel on a quiet machine (the file keeps the other kernels): "
                f"{_calibrate_hint(tf.path)}"
            ],
        )
    unset = ""
    if here.get("simd_env"):  # the user held a kernel back: the native one may be calibrated
        unset = f" (${SIMD_ENV}={here['simd_env']} is set; without it the engine may pick a calibrated kernel)"
    return GatePlan(
        "refuse",
        running,
        error=(
            f"{tf.path} has no thresholds for the {running} SIMD kernel this run uses "
            f"({_describe(here)}); it has: {calibrated}, and this run cannot switch to one of "
            f"those{unset}. Thresholds of another kernel would be meaningless here, and thresholds "
            "measured now from the code under test could not catch its regressions, so the gate "
            "does not run. Calibrate this kernel on a quiet machine (the file keeps the other "
            f"kernels): {_calibrate_hint(tf.path, _env_of(here))}"
        ),
    )
