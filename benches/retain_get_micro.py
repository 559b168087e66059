"""A quick look at two hot paths of the memory layer: `retain_many` of 20k short texts (no
embedder; near-duplicates merge) and `facts.get`. Run it under two checkouts in alternating
processes to compare them (the figures of one process mean little on a shared machine):

    PYTHONPATH=BEFORE/python python benches/retain_get_micro.py
    PYTHONPATH=AFTER/python python benches/retain_get_micro.py
"""

import statistics
import time

from trimem import Memory

N = 20_000
items = [
    dict(text=f"deployed service number {i} to the cluster on port {8000 + i % 100} after review", user_id=f"u{i % 20}")
    for i in range(N)
]
rates = []
for _ in range(3):
    mem = Memory(embedder=None)
    t = time.perf_counter()
    mem.retain_many(items)
    rates.append(N / (time.perf_counter() - t))
mem.facts.set("database", "PostgreSQL", user_id="u1")
took = []
for _ in range(N):
    a = time.perf_counter_ns()
    mem.facts.get("database", user_id="u1")
    took.append(time.perf_counter_ns() - a)
print(f"retain_many {statistics.median(rates):,.0f}/s; facts.get p50 {statistics.median(took) / 1000:.3f} us")
