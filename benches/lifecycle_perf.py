"""Lifecycle costs (issue "Memory lifecycle"), each a ratio measured in one process:

    python benches/lifecycle_perf.py [--n N] [--rounds R]

* decay + importance terms vs a plain hybrid search (engine, N records × 128-d, 200 queries,
  both legs on one thread; per-round p50 of thread CPU time, rounds interleaved, median of
  per-round ratios);
* dedup at retain vs plain retain (`Memory.retain_many`, keyword-only and with vectors;
  the batch holds 10 % near-duplicates of earlier items; process CPU time, ratio of the
  medians over rounds);
* consolidating 1,000 working items vs retaining the same 1,000 items (all important, and
  half important).

Targets: ≤ 1.1×, ≤ 1.1×, ≤ 1.0×. Release build required.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

import trimem
from trimem import HybridIndex, Memory, Policy
from trimem.bench.datasets import make_dataset

DAY = 86_400_000_000


def cpu() -> int:
    return time.thread_time_ns()


def search_ratio(n: int, rounds: int) -> dict[str, float]:
    ds = make_dataset(n, 128, n_queries=200)
    idx = HybridIndex(128, threads=1)  # both legs on this thread, so its CPU time is the whole search
    idx.add(
        ids=ds.ids,
        texts=list(ds.texts),
        timestamps=ds.timestamps,
        namespaces=["ns"] * n,
        vectors=np.ascontiguousarray(ds.vectors, np.float32),
        importance=np.random.default_rng(0).random(n).astype(np.float32),
    )
    idx.touch(ds.ids[: n // 10], int(ds.timestamps.max()))
    now = int(ds.timestamps.max()) + DAY
    terms = Policy().search_terms("episodic", now)
    qs = list(zip(ds.query_texts, ds.query_vectors))

    def p50(**kw: object) -> float:
        lat = []
        for t, v in qs:
            a = cpu()
            idx.search(text=t, vector=v, k=10, **kw)  # type: ignore[arg-type]
            lat.append(cpu() - a)
        return float(np.median(lat))

    ratios, plain, lifecycle = [], [], []
    for _ in range(rounds):
        a = p50()
        b = p50(**terms)
        plain.append(a), lifecycle.append(b), ratios.append(b / a)
    return {
        "plain_us": statistics.median(plain) / 1e3,
        "lifecycle_us": statistics.median(lifecycle) / 1e3,
        "ratio": statistics.median(ratios),
    }


class Fixed:
    """Precomputed vectors: the embedder call is not what is timed."""

    name, dim = "fixed-128", 128

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 128), np.float32)


def dedup_ratio(n: int, rounds: int, with_vectors: bool) -> dict[str, float]:
    ds = make_dataset(n, 128, n_queries=1)
    texts = list(ds.texts)
    rng = np.random.default_rng(1)
    vecs = np.array(ds.vectors, np.float32) if with_vectors else None
    # 10 % of the items repeat an earlier one of the same user with its case changed (and, as
    # an embedder would give, nearly the same vector).
    for i in rng.choice(np.arange(n // 2, n), n // 10, replace=False):
        j = int(rng.integers(0, n // 2)) // 20 * 20 + int(i) % 20
        texts[i] = texts[j].upper()
        if vecs is not None:
            vecs[i] = vecs[j] + rng.normal(0, 0.01, vecs.shape[1]).astype(np.float32)
    items = [
        dict(text=t, user_id=f"u{i % 20}", timestamp=int(ts)) for i, (t, ts) in enumerate(zip(texts, ds.timestamps))
    ]
    times: dict[bool, list[float]] = {True: [], False: []}
    stored = {}
    for r in range(rounds):
        for dedup in (False, True) if r % 2 == 0 else (True, False):  # alternate who goes first
            mem = Memory(embedder=Fixed() if with_vectors else None, policy=Policy(dedup=dedup))
            gc.collect()
            a = time.process_time()  # CPU time of all threads: the machine is shared
            mem.retain_many(items, vectors=vecs)
            times[dedup].append(time.process_time() - a)
            stored[dedup] = mem.stats().episodes
            del mem
            gc.collect()
    # A 100k batch varies by ±25 % between rounds here (allocator and cache state), so the
    # ratio is of the medians over rounds (each round runs both, alternating who goes first).
    return {
        "plain_per_s": n / statistics.median(times[False]),
        "dedup_per_s": n / statistics.median(times[True]),
        "ratio": statistics.median(times[True]) / statistics.median(times[False]),
        "stored_plain": stored[False],
        "stored_dedup": stored[True],
    }


def consolidation_ratio(rounds: int, share_important: float) -> dict[str, float]:
    ds = make_dataset(1000, 128, n_queries=1)
    now = int(time.time() * 1e6)
    imp = [0.9 if (i % 100) < share_important * 100 else 0.1 for i in range(1000)]
    cons, ret, ratios = [], [], []
    for _ in range(rounds):
        mem = Memory(embedder=None, policy=Policy(dedup=False, working_bound=1000))
        for i, t in enumerate(ds.texts):
            mem.add_turn("s", "user", t, user_id="u", importance=imp[i], timestamp=now + i)
        gc.collect()
        a = time.process_time()
        res = mem.consolidate("s", user_id="u")
        cons.append(time.process_time() - a)
        assert len(res.kept) == sum(x >= 0.7 for x in imp)
        other = Memory(embedder=None, policy=Policy(dedup=False))
        items = [
            dict(text=t, user_id="u", session_id="s", timestamp=now + i, importance=imp[i])
            for i, t in enumerate(ds.texts)
        ]
        gc.collect()
        a = time.process_time()
        other.retain_many(items)
        ret.append(time.process_time() - a)
        ratios.append(cons[-1] / ret[-1])
    return {
        "consolidate_ms": statistics.median(cons) * 1e3,
        "retain_1000_ms": statistics.median(ret) * 1e3,
        "ratio": statistics.median(ratios),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=8)
    args = p.parse_args()
    if trimem.build_profile() != "release":
        raise SystemExit("refusing to time a debug build: pip install -e . (release profile)")
    s = search_ratio(args.n, args.rounds)
    print(
        f"search, {args.n} x 128-d hybrid k=10: plain p50 {s['plain_us']:.1f} us, with decay+importance "
        f"{s['lifecycle_us']:.1f} us -> ratio {s['ratio']:.3f} (target <= 1.1)"
    )
    for vec in (False, True):
        n = args.n if not vec else min(args.n, 20_000)
        d = dedup_ratio(n, args.rounds, vec)
        print(
            f"retain_many {n} {'with vectors' if vec else 'keyword-only'}: plain {d['plain_per_s']:,.0f}/s, "
            f"dedup {d['dedup_per_s']:,.0f}/s -> ratio {d['ratio']:.3f} (target <= 1.1); stored "
            f"{d['stored_plain']} vs {d['stored_dedup']} with dedup"
        )
    for share in (1.0, 0.5):
        c = consolidation_ratio(args.rounds, share)
        print(
            f"consolidate 1000 working items ({share:.0%} important): {c['consolidate_ms']:.1f} ms vs retaining "
            f"them {c['retain_1000_ms']:.1f} ms -> ratio {c['ratio']:.3f} (target <= 1.0)"
        )


if __name__ == "__main__":
    main()
