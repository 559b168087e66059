"""A/B of the memory layer between two checkouts of trimem's Python package (same compiled
engine): runs ``benches/memory_perf.py`` in alternating processes and reports, per figure, the
median of each side and the ratio B/A.

    python benches/ab_memory.py BEFORE/python AFTER/python --runs 5

Each side runs with its folder first on PYTHONPATH; both must hold the same ``_core`` build
(copy the ``.so``) so only the Python code differs. Alternating processes share the machine's
noise between the two sides.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("memory_perf.py")
# (name, pattern, higher is better)
FIGURES = [
    ("retain_many+vec /s", r"retain_many\+vec: ([\d,]+) /s", True),
    ("retain_many no vector /s", r"retain_many no vector: ([\d,]+) /s", True),
    ("facts.get p50 us", r"facts.get p50 ([\d.]+) us", False),
    ("recall p50 no embedding ms", r"recall p50 without embedding ([\d.]+) ms", False),
]


def run(python_path: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": python_path}
    out = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, check=True)
    found: dict[str, float] = {}
    for name, pattern, _ in FIGURES:
        values = [float(m.replace(",", "")) for m in re.findall(pattern, out.stdout)]
        if not values:
            raise SystemExit(f"{name!r} not in the output of {SCRIPT} with PYTHONPATH={python_path}:\n{out.stdout}")
        found[name] = values[-1]  # the last repeat is the warm one
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    sides: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for i in range(args.runs):
        for side, path in (
            (("A", args.before), ("B", args.after)) if i % 2 == 0 else (("B", args.after), ("A", args.before))
        ):
            sides[side].append(run(path))
            print(f"run {i + 1} {side}: {sides[side][-1]}", file=sys.stderr, flush=True)
    print(f"| figure | A (median of {args.runs}) | B | B/A |")
    print("|---|---|---|---|")
    for name, _, _higher in FIGURES:
        a = statistics.median(r[name] for r in sides["A"])
        b = statistics.median(r[name] for r in sides["B"])
        print(f"| {name} | {a:,.3f} | {b:,.3f} | {b / a:.3f} |")


if __name__ == "__main__":
    main()
