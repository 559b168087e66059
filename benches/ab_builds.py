"""A/B of two builds of the engine in one process: which change made search faster, with the
noise of a shared machine landing on both.

    # the build before the change, then the build after it
    cp python/trimem/_core*.so /tmp/before.so
    # ... change the engine, `pip install --no-deps --no-build-isolation -e .` ...
    python benches/ab_builds.py /tmp/before.so python/trimem/_core*.so --n 100000 --window 0.1

Each build is loaded as its own module (``importlib``: the shared objects are separate files,
so nothing is shared between them). The first build indexes a seeded dataset
(``trimem.bench.datasets.make_dataset``) and saves it in a temporary store; each build then
opens its own copy, so both search the very same graph (a parallel build is not
deterministic). Per round and case the builds take turns every 50
queries (the order alternating), and a ratio is the median of the per-round ratios of median
latencies. The report also says whether the two builds returned the same ids for every query,
so a pure speed change can be told from one that also moves results. Release builds only.

Where each copy of the graph lands in memory still differs: a run of one build against a copy
of itself (an A/A run) read 0.97–1.0 at 100k × 384 here, so smaller differences are noise.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from trimem.bench.datasets import make_dataset, time_window
from trimem.bench.peers import Workload, trimem_index


def load_build(label: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{label}._core", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a loadable extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.build_profile() != "release":
        raise SystemExit(f"{path}: a {module.build_profile()} build; time release builds only")
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path, help="the first build's _core shared object")
    ap.add_argument("after", type=Path, help="the second build's _core shared object")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--seed", type=int, default=1, help="dataset seed (the bench reports seed 0: tune elsewhere)")
    ap.add_argument("--window", type=float, default=0.1, help="share of records in the time windows")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()

    builds = {"before": load_build("before", args.before), "after": load_build("after", args.after)}
    ds = make_dataset(args.n, args.dim, seed=args.seed, n_queries=200)
    tmp = Path(tempfile.mkdtemp(prefix="trimem-ab-"))
    try:
        t = time.perf_counter()
        store = builds["before"].Store(str(tmp / "before"), durability="buffered")
        wl = Workload(ds=ds, k=10, windows=[], window_fraction=0.0, show_progress=False)
        store.checkpoint([("main", trimem_index(wl, builds["before"].HybridIndex))], b"")
        store.close()
        print(f"built and saved in {time.perf_counter() - t:.1f} s")
        shutil.copytree(tmp / "before", tmp / "after")
        indexes = {
            label: core.Store(str(tmp / label), durability="buffered").take_index("main")
            for label, core in builds.items()
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    q, qt = ds.query_vectors, ds.query_texts
    wins = [time_window(ds.timestamps, args.window, seed=i) for i in range(len(q))]
    cases: dict[str, Callable[[Any, int], Any]] = {
        "vector": lambda ix, i: ix.search(vector=q[i], k=10, mode="vector", ef=64),
        "vector, window": lambda ix, i: ix.search(vector=q[i], k=10, mode="vector", ef=64, time_range=wins[i]),
        "hybrid": lambda ix, i: ix.search(text=qt[i], vector=q[i], k=10),
        "hybrid, window": lambda ix, i: ix.search(text=qt[i], vector=q[i], k=10, time_range=wins[i]),
    }
    labels = list(indexes)
    print(f"n={args.n} dim={args.dim} seed={args.seed} window={args.window:.0%} rounds={args.rounds}")
    print("| case | before p50 ms | after p50 ms | after / before | same ids |")
    print("|---|---:|---:|---:|---|")
    for case, search in cases.items():
        same = all(
            np.array_equal(search(indexes["before"], i).ids, search(indexes["after"], i).ids) for i in range(len(q))
        )
        ratios: list[float] = []
        medians: dict[str, list[float]] = {label: [] for label in labels}
        for r in range(args.rounds):
            times: dict[str, list[float]] = {label: [] for label in labels}
            for block in range(0, len(q), 50):
                order = labels if (r + block // 50) % 2 == 0 else labels[::-1]
                for label in order:
                    for i in range(block, min(block + 50, len(q))):
                        t0 = time.perf_counter()
                        search(indexes[label], i)
                        times[label].append(time.perf_counter() - t0)
            for label in labels:
                medians[label].append(float(np.median(times[label])))
            ratios.append(medians["after"][-1] / medians["before"][-1])
        print(
            f"| {case} | {np.median(medians['before']) * 1e3:.3f} | {np.median(medians['after']) * 1e3:.3f} "
            f"| {np.median(ratios):.3f} | {'yes' if same else 'no'} |"
        )


if __name__ == "__main__":
    main()
