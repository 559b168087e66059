"""trimem's PostgreSQL backend vs LangGraph's PostgresStore, same server, same process, same run:

    python benches/postgres_perf.py [--n 20000] [--dim 384] [--dsn postgresql://...]

(``--n``: episodes, 20,000 by default so a 2-core machine finishes in minutes; the issue's target
is 100,000. Without ``--dsn`` a throwaway server is started (``pg_throwaway.py``); with it
the schemas ``trimem_bench``, ``scratch_bench`` and ``lg_bench`` are dropped and recreated there.)
Needs ``pip install langgraph-checkpoint-postgres``.

* `retain_many` with precomputed vectors vs a plain binary `COPY` of the same rows (the episodes
  and postings trimem wrote) into the same indexed tables (an empty schema made by trimem's own
  migration: same partitions, same indexes, HNSW built before the copy), and vs LangGraph
  `batch` of `PutOp`s;
* one durable `retain` vs one single-row `INSERT` (a row as trimem stores one) + commit into the
  same table (``synchronous_commit`` on);
* `recall` p50 without the embedding call and its episode search alone vs `PostgresStore.search`
  (namespace prefix = one user, 1/20 of the data, limit 10), and vs the same search with pgvector's
  iterative scans on (LangGraph filters the namespace after its HNSW walk, so by default it
  returns fewer than 10); the same with "last month";
* the server's own floor: pgvector's walk for the user's 50 (the engine's candidate window) and
  10 nearest episodes alone, one statement each on trimem's connection;
* the plan PostgreSQL chose for each vector leg (the scan nodes of `EXPLAIN ANALYZE`).

20 users, 200 queries. The embedders are stand-ins handing back precomputed vectors, so no
embedding cost is timed. Ratios are trimem / baseline: above 1 is slower for latencies, below 1
is slower for rates.
"""

import argparse
import re
import time
import warnings
import zlib
from datetime import UTC, datetime
from urllib.parse import quote

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import tuple_row

from pg_throwaway import server, with_param
from trimem import Memory
from trimem.bench.datasets import make_dataset

warnings.simplefilter("ignore")

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=20_000, help="episodes (the issue's target: 100000)")
ap.add_argument("--dim", type=int, default=384, help="vector width")
ap.add_argument("--queries", type=int, default=200)
ap.add_argument("--dsn", help="an existing server (default: start a throwaway one)")
args = ap.parse_args()
N, DIM, USERS = args.n, args.dim, 20
T0 = time.perf_counter()

srv, dsn, tmp = server(args.dsn)
TRIMEM_DSN = with_param(dsn, "schema", "trimem_bench")
SCRATCH_DSN = with_param(dsn, "schema", "scratch_bench")
LG_DSN = with_param(dsn, "options", quote("-csearch_path=lg_bench,public"))
# the same store, its HNSW scans iterative (as trimem's are), so that it returns the k asked for
LG_ITER_DSN = with_param(dsn, "options", quote("-csearch_path=lg_bench,public -chnsw.iterative_scan=relaxed_order"))

ds = make_dataset(N, DIM, n_queries=args.queries)
items = [
    dict(text=t, user_id=f"u{i % USERS}", timestamp=int(ts)) for i, (t, ts) in enumerate(zip(ds.texts, ds.timestamps))
]
known = {t: v for t, v in zip(ds.texts, ds.vectors)}
known.update({q: v for q, v in zip(ds.query_texts, ds.query_vectors)})
known.update({q + " last month": v for q, v in zip(ds.query_texts, ds.query_vectors)})


def vector_of(text: str) -> np.ndarray:  # precomputed, or a fixed pseudo-random unit vector
    v = known.get(text)
    if v is None:
        v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM).astype(np.float32)
        v /= np.linalg.norm(v)
    return v


class Fixed:  # precomputed vectors: the embedder call is not what we measure
    name, dim = f"fixed-{DIM}", DIM

    def __call__(self, texts):
        return np.stack([vector_of(t) for t in texts]).astype(np.float32)


def lg_embed(texts):
    return [vector_of(t).tolist() for t in texts]


def p50(xs):
    return float(np.median(xs))


# a fresh slate: the three schemas this bench owns
with psycopg.connect(dsn, autocommit=True) as c:
    c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    for s in ("trimem_bench", "scratch_bench", "lg_bench"):
        c.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
    c.execute("CREATE SCHEMA lg_bench")
base = psycopg.connect(dsn, autocommit=True)
register_vector(base)

rows = {}  # label -> (trimem, baseline, unit, better)

# (1) bulk ingest: trimem, then the server's own floor — a binary COPY of the very rows trimem
# wrote (episodes and their postings) into empty tables made by trimem's own migration (the same
# partitions, the same indexes, HNSW included, there before the copy)
mem = Memory(TRIMEM_DSN, embedder=Fixed())
t = time.perf_counter()
mem.retain_many(items, vectors=ds.vectors)
tm_rate = N / (time.perf_counter() - t)
print(f"trimem retain_many: {tm_rate:,.0f} /s", flush=True)
Memory(SCRATCH_DSN, embedder=Fixed()).close()
dumps = {}
for table in ("episodes", "episodes_terms"):
    buf = bytearray()
    with base.cursor() as cur:
        with cur.copy(f"COPY (SELECT * FROM trimem_bench.{table} ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
            for chunk in cp:
                buf += chunk
    dumps[table] = bytes(buf)
t = time.perf_counter()
for table, data in dumps.items():
    with base.cursor() as cur, cur.copy(f"COPY scratch_bench.{table} FROM STDIN (FORMAT BINARY)") as cp:
        cp.write(data)
copy_rate = N / (time.perf_counter() - t)
print(f"COPY of the same rows: {copy_rate:,.0f} /s", flush=True)

from langgraph.store.base import PutOp  # noqa: E402
from langgraph.store.postgres import PostgresStore  # noqa: E402

lg_cm = PostgresStore.from_conn_string(LG_DSN, index={"dims": DIM, "embed": lg_embed, "fields": ["text"]})
store = lg_cm.__enter__()
store.setup()
t = time.perf_counter()
for s in range(0, N, 500):
    store.batch(
        [
            PutOp(("memories", it["user_id"]), f"e{s + j}", {"text": it["text"], "ts": it["timestamp"]})
            for j, it in enumerate(items[s : s + 500])
        ]
    )
lg_rate = N / (time.perf_counter() - t)
lg_iter_cm = PostgresStore.from_conn_string(LG_ITER_DSN, index={"dims": DIM, "embed": lg_embed, "fields": ["text"]})
store_iter = lg_iter_cm.__enter__()
print(f"LangGraph put: {lg_rate:,.0f} /s", flush=True)
rows["retain_many + vectors vs COPY (items/s)"] = (tm_rate, copy_rate, "/s", "rate")
rows["retain_many + vectors vs LangGraph batch put (items/s)"] = (tm_rate, lg_rate, "/s", "rate")

# (2) one durable write
K = 200
last_ts = int(ds.timestamps.max())
with base.cursor() as cur:
    cur.execute(f"SELECT * FROM trimem_bench.episodes ORDER BY id LIMIT {K}")
    cols = [d.name for d in cur.description]
    templates = cur.fetchall()
one_row = f"INSERT INTO scratch_bench.episodes ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})"
tm_one, ins_one, lg_one = [], [], []
for j in range(K):
    txt = f"{ds.texts[j]} probe {j}"
    a = time.perf_counter()
    mem.retain(txt, user_id="u3", timestamp=last_ts + j)
    tm_one.append(time.perf_counter() - a)
    row = (10**9 + j, *templates[j][1:])  # a row as trimem stores one, a new id
    a = time.perf_counter()
    base.execute(one_row, row)  # autocommit: the INSERT is its own committed transaction
    ins_one.append(time.perf_counter() - a)
    a = time.perf_counter()
    store.put(("memories", "u3"), f"p{j}", {"text": txt, "ts": last_ts + j})
    lg_one.append(time.perf_counter() - a)
rows["retain (one, durable) vs INSERT + commit p50"] = (p50(tm_one[20:]) * 1e3, p50(ins_one[20:]) * 1e3, "ms", "lat")
rows["retain (one, durable) vs LangGraph put p50"] = (p50(tm_one[20:]) * 1e3, p50(lg_one[20:]) * 1e3, "ms", "lat")
print("single writes done", flush=True)

# (3)/(4) recall vs search, one user (1/20 of the data)
now = datetime(2027, 1, 15, tzinfo=UTC)
plain = list(ds.query_texts)
ranged = [q + " last month" for q in plain]
res = {}
for _round in range(2):  # the first round warms caches
    for label, qs in (("plain", plain), ("ranged", ranged)):
        lat, ep, hits = [], [], []
        for q in qs:
            b = mem.recall(q, user_id="u3", now=now)
            lat.append(b.timings["total"] - b.timings["embed"])
            hits.append(len(b.episodes))
            # the episode search alone (a recall overlaps it with its other reads), as the recall asked
            a = time.perf_counter()
            mem.search(b.intent.text or q, user_id="u3", now=now, time_range=b.intent.time_range, vector=vector_of(q))
            ep.append((time.perf_counter() - a) * 1e3)
        res[label] = (lat, ep, hits)
    for name, lg in (("lg", store), ("lg_iter", store_iter)):
        lat, hits = [], []
        for q in plain:
            a = time.perf_counter()
            r = lg.search(("memories", "u3"), query=q, limit=10)
            lat.append((time.perf_counter() - a) * 1e3)
            hits.append(len(r))
        res[name] = (lat, None, hits)
lg_p50 = p50(res["lg"][0])
# the server's own floor under any search with the engine's candidate window: pgvector's walk for
# the user's 50 nearest episodes alone (trimem's session settings: iterative scans, ef_search 100),
# and for 10 (what LangGraph asks for), one statement each, no fusion, no keywords
with mem._backend._conn() as conn:
    for limit in (50, 10):
        lat = []
        for _round in range(2):
            for qv in ds.query_vectors:
                a = time.perf_counter()
                conn.execute(
                    "SELECT id FROM trimem_bench.episodes WHERE namespace = 'default/u3' AND embedding IS NOT NULL "
                    f"ORDER BY embedding <=> %s LIMIT {limit}",
                    (qv,),
                ).fetchall()
                lat.append((time.perf_counter() - a) * 1e3)
        res[f"walk{limit}"] = (lat[len(ds.query_vectors) :], None, [])
for label, key, column in (
    ("recall p50 (no embed)", "plain", 0),
    ("  its episode search alone p50", "plain", 1),
    ('recall "last month" p50 (no embed)', "ranged", 0),
    ('  its episode search alone, "last month", p50', "ranged", 1),
    ("  the user's 50 nearest (pgvector alone, no fusion) p50", "walk50", 0),
    ("  the user's 10 nearest (pgvector alone) p50", "walk10", 0),
):
    rows[f"{label} vs LangGraph search p50"] = (p50(res[key][column]), lg_p50, "ms", "lat")
rows["recall p50 (no embed) vs LangGraph search, iterative scans, p50"] = (
    p50(res["plain"][0]),
    p50(res["lg_iter"][0]),
    "ms",
    "lat",
)


# the plans: capture each library's vector statement, then EXPLAIN ANALYZE it on the same session
def capture(fn, needle):
    seen, orig = [], psycopg.Cursor.execute

    def spy(self, query, params=None, **kw):
        text = query.as_string(self) if hasattr(query, "as_string") else str(query)
        if needle in text:
            seen.append((text, params))
        return orig(self, query, params, **kw)

    psycopg.Cursor.execute = spy
    try:
        fn()
    finally:
        psycopg.Cursor.execute = orig
    return seen


def scans(conn, statement, params):  # the plan's scan nodes that ran, vector literals elided
    with conn.cursor(row_factory=tuple_row) as cur:
        plan = [r[0] for r in cur.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + statement, params)]
    keep = [
        re.sub(r"'\[[^\]]*\]'", "'[...]'", line.strip().removeprefix("->").strip())
        for line in plan
        if "Scan" in line and "never executed" not in line and ":" not in line.split("(")[0]
    ]
    return "; ".join(dict.fromkeys(keep))


plans = {}
try:
    for label, q in (("trimem recall", plain[0]), ('trimem recall "last month"', ranged[0])):
        got = [g for g in capture(lambda q=q: mem.recall(q, user_id="u3", now=now), "<=>") if "episodes_terms" in g[0]]
        if got:
            with mem._backend._conn() as conn:
                plans[label] = scans(conn, *got[-1])
    got = capture(lambda: store.search(("memories", "u3"), query=plain[0], limit=10), "<=>")
    if got:
        with store._cursor() as cur:
            plans["LangGraph search"] = scans(cur.connection, *got[-1])
except Exception as e:  # the plans are a note, not the benchmark
    plans["(explain failed)"] = repr(e)

lg_cm.__exit__(None, None, None)
lg_iter_cm.__exit__(None, None, None)
mem.close()
base.close()
if srv is not None:
    srv.cleanup()

print()
print(
    f"N={N:,} episodes, dim {DIM}, {USERS} users (one user = {N // USERS:,}), {len(plain)} queries; "
    f"{time.perf_counter() - T0:.0f} s"
)
print()
print("| measure | trimem | baseline | ratio trimem/baseline |")
print("|---|---:|---:|---:|")
for label, (a, b, unit, _) in rows.items():
    fmt = (lambda x: f"{x:,.0f} /s") if unit == "/s" else (lambda x: f"{x:.3f} ms")
    print(f"| {label} | {fmt(a)} | {fmt(b)} | {a / b:.2f} |")
print()
print(
    f'hits/query: trimem {np.mean(res["plain"][2]):.1f}, trimem "last month" {np.mean(res["ranged"][2]):.1f}, '
    f"LangGraph {np.mean(res['lg'][2]):.1f}, LangGraph iterative {np.mean(res['lg_iter'][2]):.1f}; p99: trimem {np.percentile(res['plain'][0], 99):.3f} ms, "
    f"LangGraph {np.percentile(res['lg'][0], 99):.3f} ms"
)
for k, v in plans.items():
    print(f"plan, {k}: {v}")
