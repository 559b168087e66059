"""trimem's batch build against hnswlib's, in order-alternating pairs in one process.

    python benches/build_pairs.py --n 100000 --pairs 4

`python -m trimem bench` builds each index once, one after the other, so its build ratio is a
single pair and moves with whatever else the shared host is doing (0.88–1.41 over four runs in
session 7). Here the two builds alternate which goes first, on the benchmark's own dataset
(:func:`trimem.bench.datasets.make_dataset`: texts, times and namespaces as in the bench), and
the ratio is the median of the per-pair ratios. Same settings as the bench: M 16, efC 200,
all cores, batches of 10,000.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import trimem
from trimem.bench.datasets import Dataset, make_dataset

BATCH = 10_000


def build_trimem(ds: Dataset) -> float:
    idx = trimem.HybridIndex(ds.vectors.shape[1], metric="cosine", m=16, ef_construction=200, threads=0)
    t = time.perf_counter()
    for a in range(0, len(ds.ids), BATCH):
        b = min(a + BATCH, len(ds.ids))
        idx.add(ids=ds.ids[a:b], texts=ds.texts[a:b], timestamps=ds.timestamps[a:b],
                namespaces=ds.namespaces[a:b], vectors=ds.vectors[a:b])
    return time.perf_counter() - t


def build_hnswlib(ds: Dataset) -> float:
    import hnswlib

    n, dim = ds.vectors.shape
    idx = hnswlib.Index(space="cosine", dim=dim)
    idx.init_index(max_elements=n, M=16, ef_construction=200, random_seed=ds.seed)
    t = time.perf_counter()
    for a in range(0, n, BATCH):
        b = min(a + BATCH, n)
        idx.add_items(ds.vectors[a:b], ds.ids[a:b], num_threads=-1)
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
    ratios = []
    print(f"n={args.n} dim={args.dim} seed={args.seed}")
    print("| pair | first | trimem s | hnswlib s | trimem / hnswlib |")
    print("|---:|---|---:|---:|---:|")
    for pair in range(args.pairs):
        if pair % 2 == 0:
            first, ours, theirs = "trimem", build_trimem(ds), build_hnswlib(ds)
        else:
            first, theirs, ours = "hnswlib", build_hnswlib(ds), build_trimem(ds)
        ratios.append(ours / theirs)
        print(f"| {pair + 1} | {first} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.3f} |", flush=True)
    print(f"median trimem / hnswlib build: {np.median(ratios):.3f}")


if __name__ == "__main__":
    main()
