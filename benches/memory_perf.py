"""Memory-layer performance at 100k episodes (issue "Three-layer memory API"), all in one process:

    python benches/memory_perf.py [--dim 896]

(``--dim``: the vector width, 384 by default; 896 is the bilingual default embedder's.)

* `retain_many` with precomputed vectors vs hnswlib `add_items` (same M=16, efC=200, all cores);
* `retain_many` of episodes with no vector (a keyword-only memory);
* `facts.get` p50 from Python;
* `recall` p50 without the embedding call (half the questions carry "last month");
* the same once every user holds 40 facts and notes (a keyed fact citing the episode it was read
  from): what the fact index, searched with every recall, and the keyed facts' evidence add (the
  `facts` step's p50, and the recall p50 again).

The embedder is a stand-in returning a fixed vector, so the embedding cost is not what is timed.
"""

import argparse
import time
from datetime import UTC, datetime

import hnswlib
import numpy as np

from trimem import Memory
from trimem.bench.datasets import make_dataset

ap = argparse.ArgumentParser()
ap.add_argument("--dim", type=int, default=384, help="vector width (896: the bilingual default's)")
DIM = ap.parse_args().dim
n = 100_000
ds = make_dataset(n, DIM, n_queries=200)
items = [
    dict(text=t, user_id=f"u{i % 20}", timestamp=int(ts)) for i, (t, ts) in enumerate(zip(ds.texts, ds.timestamps))
]


class Fixed:  # precomputed vectors: the embedder call is not what we measure
    name, dim = f"fixed-{DIM}", DIM

    def __call__(self, texts):
        return np.tile(ds.query_vectors[:1], (len(texts), 1))


# retain_many with precomputed vectors vs hnswlib add_items, same M/efC, same threads (all cores)
res = {}
for _ in range(2):
    mem = Memory(embedder=Fixed())
    t = time.perf_counter()
    retained = mem.retain_many(items, vectors=ds.vectors)
    res.setdefault("retain_many+vec", []).append(n / (time.perf_counter() - t))
    h = hnswlib.Index("cosine", DIM)
    h.init_index(n, 16, 200)
    t = time.perf_counter()
    h.add_items(ds.vectors, ds.ids)
    res.setdefault("hnswlib add_items", []).append(n / (time.perf_counter() - t))
    m2 = Memory(embedder=None)
    t = time.perf_counter()
    m2.retain_many(items)
    res.setdefault("retain_many no vector", []).append(n / (time.perf_counter() - t))
for k, v in res.items():
    print(f"{k}: {np.median(v):,.0f} /s")
mem.facts.set("database", "PostgreSQL", user_id="u1")
ts_ = []
for _ in range(20000):
    a = time.perf_counter_ns()
    mem.facts.get("database", user_id="u1")
    ts_.append(time.perf_counter_ns() - a)
print(f"facts.get p50 {np.median(ts_) / 1000:.2f} us")
now = datetime(2027, 1, 15, tzinfo=UTC)
qs = [q + (" last month" if i % 2 else "") for i, q in enumerate(ds.query_texts)]
for _ in range(2):
    lat, tot, facts_ms = [], [], []
    for q in qs:
        b = mem.recall(q, user_id="u1", now=now)
        lat.append(b.timings["total"] - b.timings["embed"])
        tot.append(b.timings["total"])
        facts_ms.append(b.timings["facts"])
    steps = {
        k: np.median([mem.recall(q, user_id="u1", now=now).timings.get(k, 0.0) for q in qs[:100]]) for k in b.timings
    }
    print("  steps p50 (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in steps.items()))
    print(
        f"recall p50 without embedding {np.median(lat):.3f} ms (p99 {np.percentile(lat, 99):.3f}); "
        f"the facts step p50 {np.median(facts_ms):.3f} ms; "
        f"hits/query {np.mean([len(mem.recall(q, user_id='u1', now=now).episodes) for q in qs[:20]]):.1f}"
    )

# every user holds 40 facts and notes: the fact index is searched with every recall; a keyed
# fact cites the user's episode it was read from (recall quotes it when it says more)
subjects = ["commute", "diet", "editor", "gym", "kids", "allergy", "team", "travel"]
for u in range(20):
    for j in range(40):
        i = (u + 20 * (u * 40 + j)) % n  # an episode of user u (items go to users round-robin)
        key, source = (f"note_{subjects[j % 8]}_{j}", []) if j % 4 else (f"key_{j}", [retained[i].id])
        mem.facts.set(key, f"{ds.texts[i][:80]}", user_id=f"u{u}", source=source)
for _ in range(2):
    lat, facts_ms = [], []
    for q in qs:
        b = mem.recall(q, user_id="u1", now=now)
        lat.append(b.timings["total"] - b.timings["embed"])
        facts_ms.append(b.timings["facts"])
print(
    f"with 40 facts per user: recall p50 without embedding {np.median(lat):.3f} ms; "
    f"the facts step (pinned, keyed, fact index) p50 {np.median(facts_ms):.3f} ms; "
    f"profile lines/query {np.mean([len(mem.recall(q, user_id='u1', now=now).profile) for q in qs[:20]]):.1f}"
)
