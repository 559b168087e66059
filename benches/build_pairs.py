"""trimem's batch build against hnswlib's, in order-alternating pairs in one process.

    python benches/build_pairs.py --n 100000 --pairs 4

`python -m trimem bench` builds each index once, one after the other, so its build ratio is a
single pair and moves with whatever else the shared host is doing (0.88–1.41 over four runs in
session 7). Here the two builds alternate which goes first, on the benchmark's own dataset
(:func:`trimem.bench.datasets.make_dataset`: texts, times and namespaces as in the bench), and
the ratio is the median of the per-pair ratios. The indexes are built by the bench's own
builders (:func:`trimem.bench.peers.trimem_index`, :func:`~trimem.bench.peers.hnswlib_index`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import trimem
from trimem.bench.datasets import make_dataset
from trimem.bench.peers import Workload, hnswlib_index, trimem_index


def seconds(build: Callable[[Workload], Any], wl: Workload) -> float:
    t = time.perf_counter()
    build(wl)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pairs", type=int, default=4)
    args = ap.parse_args()
    if trimem.build_profile() != "release":
        raise SystemExit("a debug build of trimem: time release builds only")
    ds = make_dataset(args.n, args.dim, seed=args.seed, n_queries=1)
    wl = Workload(ds=ds, k=10, windows=[], window_fraction=0.0, show_progress=False)
    ratios = []
    print(f"n={args.n} dim={args.dim} seed={args.seed}")
    print("| pair | first | trimem s | hnswlib s | trimem / hnswlib |")
    print("|---:|---|---:|---:|---:|")
    for pair in range(args.pairs):
        if pair % 2 == 0:
            first, ours, theirs = "trimem", seconds(trimem_index, wl), seconds(hnswlib_index, wl)
        else:
            first, theirs, ours = "hnswlib", seconds(hnswlib_index, wl), seconds(trimem_index, wl)
        ratios.append(ours / theirs)
        print(f"| {pair + 1} | {first} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.3f} |", flush=True)
    print(f"median trimem / hnswlib build: {np.median(ratios):.3f}")


if __name__ == "__main__":
    main()
