"""What one search of the fact index costs from Python, on a profile of about sixty notes (the
first three users of `benches/phrasing_dev5_en.json` told as one), each of their requests searched
with itself as the request (so the facets leg runs). Compare two versions in the same session:

    git worktree add /tmp/old <commit> && cp python/trimem/_core*.so /tmp/old/python/trimem/
    PYTHONPATH=/tmp/old/python python benches/fact_search_cost.py; python benches/fact_search_cost.py

(the Rust core is shared: only what Python does around it differs). Prints the p50 in µs.
"""

import json
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from trimem import Memory

SUITE = Path(__file__).resolve().parent / "phrasing_dev5_en.json"

users = json.loads(SUITE.read_text(encoding="utf-8"))["users"][:3]
now = datetime(2026, 11, 20, tzinfo=UTC)
mem = Memory(embedder="hashing")
for m in [m for u in users for m in u["memories"]]:
    mem.retain(m["text"], user_id="u", role="user", timestamp=now - timedelta(days=m["days_ago"]))
mem.reflect(user_id="u")
requests = [p["request"] for u in users for p in u["probes"]][:16]
for _ in range(50):  # warm caches
    for r in requests:
        mem.facts.search(r, user_id="u", k=12, request=r)
times = []
for _ in range(300):
    for r in requests:
        t = time.perf_counter()
        mem.facts.search(r, user_id="u", k=12, request=r)
        times.append(time.perf_counter() - t)
n = len(mem.facts.list(user_id="u"))
print(f"facts.search p50 {statistics.median(times) * 1e6:.1f} µs over {n} facts and notes")
