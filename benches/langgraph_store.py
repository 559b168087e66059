"""TrimemStore (trimem's LangGraph ``BaseStore``) against LangGraph's own ``InMemoryStore``, in
one process, same run:

    python benches/langgraph_store.py [--sizes 10000 100000] [--queries 100] [--dim 384]

* **search** at each size: both stores hold the same items (``{"text": ...}`` under
  ``("docs", user)``, 20 users) with the same embeddings, from a stand-in embedder handing back
  precomputed vectors (``numpy`` rows: the peer's fastest input), so no model is timed. A query
  is a probe that shares no word with any item, so both stores rank by cosine alone and the
  true top 10 is brute force over the items' vectors. Two searches: the whole store (prefix
  ``("docs",)``) and one user's items (``("docs", "u3")``). Per-call times, stores alternated
  query by query, median; recall of the true top 10 for each store.
* **adapter overhead** with the default embedder (``Memory()``'s): ``TrimemStore.search`` and
  ``.put`` against the same call on the memory's items (``Memory.items.search`` / ``.put``),
  alternated call by call on 10,000 items, median per-call ratio.

Ratios are trimem / peer (below 1: trimem is faster).
"""

import argparse
import statistics
import time
import warnings

import numpy as np
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from trimem import Memory
from trimem.bench.datasets import make_dataset, query_texts, texts
from trimem.integrations.langgraph import TrimemStore

warnings.simplefilter("ignore")

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
ap.add_argument("--queries", type=int, default=100)
ap.add_argument("--dim", type=int, default=384)
ap.add_argument("--overhead-n", type=int, default=10_000)
args = ap.parse_args()
USERS, DIM = 20, args.dim


def median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1e3


def search_round(n: int) -> None:
    ds = make_dataset(n, DIM, n_queries=args.queries)
    vectors = ds.vectors / np.linalg.norm(ds.vectors, axis=1, keepdims=True)
    probes = [f"probe{j}zz" for j in range(args.queries)]
    table = dict(zip(probes, ds.query_vectors, strict=True))
    item_texts = [f"{t} #{i}" for i, t in enumerate(ds.texts)]  # one vector per item, whatever its text
    table.update(zip(item_texts, vectors, strict=True))

    def lookup(batch: list[str]) -> list[np.ndarray]:
        return [table[t] for t in batch]

    index = {"dims": DIM, "embed": lookup, "fields": ["text"]}
    ours, theirs = TrimemStore(index=index), InMemoryStore(index=index)  # type: ignore[arg-type]
    users = np.arange(n) % USERS
    fill = {}
    for name, store in (("trimem", ours), ("InMemoryStore", theirs)):
        t0 = time.perf_counter()
        for lo in range(0, n, 10_000):
            store.batch(
                [
                    PutOp(("docs", f"u{users[i]}"), str(i), {"text": item_texts[i]})
                    for i in range(lo, min(n, lo + 10_000))
                ]
            )
        fill[name] = time.perf_counter() - t0
    print(
        f"\n## {n:,} items, {DIM} dims  (fill: trimem {fill['trimem']:.1f} s, InMemoryStore {fill['InMemoryStore']:.1f} s)"
    )
    print("| search | trimem p50 ms | InMemoryStore p50 ms | ratio | recall@10 trimem | recall@10 InMemoryStore |")
    print("|---|---|---|---|---|---|")
    for label, prefix, rows in (
        ("whole store", ("docs",), np.arange(n)),
        ("one user", ("docs", "u3"), np.flatnonzero(users == 3)),
    ):
        times: dict[str, list[float]] = {"ours": [], "theirs": []}
        found = {"ours": 0, "theirs": 0}
        for j, probe in enumerate(probes):
            q = ds.query_vectors[j] / np.linalg.norm(ds.query_vectors[j])
            truth = {str(i) for i in rows[np.argsort(-(vectors[rows] @ q))[:10]]}
            for who, store in (("ours", ours), ("theirs", theirs)):
                t0 = time.perf_counter()
                hits = store.search(prefix, query=probe, limit=10)
                times[who].append(time.perf_counter() - t0)
                found[who] += len(truth & {h.key for h in hits})
        a, b = median_ms(times["ours"]), median_ms(times["theirs"])
        total = 10 * len(probes)
        print(
            f"| {label} | {a:.3f} | {b:.2f} | {a / b:.4f} | {found['ours'] / total:.3f} | {found['theirs'] / total:.3f} |"
        )
    ours.close()


def overhead_round(n: int) -> None:
    mem = Memory()
    store = TrimemStore(memory=mem)
    items, questions = texts(n), query_texts(args.queries)
    for lo in range(0, n, 2_000):
        store.batch(
            [PutOp(("docs", f"u{i % USERS}"), str(i), {"text": items[i]}) for i in range(lo, min(n, lo + 2_000))]
        )
    direct = mem.items
    ratios: dict[str, list[float]] = {"search": [], "put": []}
    calls: dict[str, list[float]] = {"search": [], "put": []}
    for j, q in enumerate(questions):
        for _ in range(3):  # a few repeats a query, so each ratio is a median of pairs
            t0 = time.perf_counter()
            store.search(("docs", "u3"), query=q, limit=10)
            t1 = time.perf_counter()
            direct.search(("docs", "u3"), query=q, limit=10)
            t2 = time.perf_counter()
            ratios["search"].append((t1 - t0) / (t2 - t1))
            calls["search"].append(t2 - t1)
        value = {"text": items[j]}
        t0 = time.perf_counter()
        store.put(("docs", "u3"), f"new{j}", value)
        t1 = time.perf_counter()
        direct.put(("docs", "u3"), f"new{j}d", value)
        t2 = time.perf_counter()
        ratios["put"].append((t1 - t0) / (t2 - t1))
        calls["put"].append(t2 - t1)
    print(f"\n## Adapter overhead, default embedder ({mem.embedder}), {n:,} items")
    print("| call | direct p50 ms | TrimemStore / direct (median of paired ratios) |")
    print("|---|---|---|")
    for verb in ("search", "put"):
        print(f"| {verb} | {median_ms(calls[verb]):.3f} | {statistics.median(ratios[verb]):.3f} |")
    mem.close()


for size in args.sizes:
    search_round(size)
overhead_round(args.overhead_n)
