"""trimem on PostgreSQL at a million episodes: how long the store takes to build, how large it is
next to the raw data, and what a (time-filtered) recall costs at that size:

    python benches/postgres_million.py [--n 1000000] [--users 20] [--dsn postgresql://...]

The episodes (384-d, precomputed vectors: no embedding cost is timed) go in through
`retain_many` in chunks, with the duplicate check on, into a throwaway server
(``pg_throwaway.py``) unless ``--dsn`` names one (its schema ``million_bench`` is dropped and
recreated). Reported: the build (rate, minutes), the size of each table and its indexes next to
the raw data (text bytes + 4 x dim bytes a vector), and for one tenant (1/users of the data)
recall p50 without the embedding call — plain, "last month", and one day — with its episodes
step and hits.
"""

import argparse
import time
import warnings
import zlib
from datetime import UTC, datetime

import numpy as np
import psycopg

from pg_throwaway import server, with_param
from trimem import Memory
from trimem.bench.datasets import make_dataset

warnings.simplefilter("ignore")

ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=1_000_000, help="episodes")
ap.add_argument("--users", type=int, default=20, help="tenants the episodes are spread over")
ap.add_argument("--dim", type=int, default=384)
ap.add_argument("--chunk", type=int, default=20_000, help="episodes a retain_many call")
ap.add_argument("--queries", type=int, default=200)
ap.add_argument("--dsn", help="an existing server (default: start a throwaway one)")
args = ap.parse_args()
N, DIM, USERS = args.n, args.dim, args.users
T0 = time.perf_counter()

srv, dsn, tmp = server(args.dsn)
SCHEMA = "million_bench"
with psycopg.connect(dsn, autocommit=True) as c:
    c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    c.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")

ds = make_dataset(N, DIM, n_queries=args.queries)
print(f"dataset made: {time.perf_counter() - T0:.0f} s", flush=True)
known = dict(zip(ds.query_texts, ds.query_vectors, strict=True))


class Fixed:  # precomputed vectors: the embedder call is not what we measure
    name, dim = f"fixed-{DIM}", DIM

    def __call__(self, texts):
        out = []
        for t in texts:
            v = known.get(t.removesuffix(" last month").removesuffix(" yesterday"))
            if v is None:
                v = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIM).astype(np.float32)
                v /= np.linalg.norm(v)
            out.append(v)
        return np.stack(out).astype(np.float32)


mem = Memory(with_param(dsn, "schema", SCHEMA), embedder=Fixed())
t_build = time.perf_counter()
for s in range(0, N, args.chunk):
    e = min(N, s + args.chunk)
    mem.retain_many(
        [{"text": ds.texts[i], "user_id": f"u{i % USERS}", "timestamp": int(ds.timestamps[i])} for i in range(s, e)],
        vectors=ds.vectors[s:e],
    )
    el = time.perf_counter() - t_build
    print(f"  {e:,} episodes in {el / 60:.1f} min ({e / el:,.0f} /s)", flush=True)
build_s = time.perf_counter() - t_build

raw_text = sum(len(t.encode("utf-8")) for t in ds.texts)
raw = raw_text + N * DIM * 4
sizes = {}
with psycopg.connect(dsn, autocommit=True) as c:
    c.execute(f"VACUUM ANALYZE {SCHEMA}.episodes")
    for table in ("episodes", "episodes_terms"):
        # a partitioned table's partitions; a plain table (no rows from pg_partition_tree) itself
        tree = c.execute("SELECT relid::regclass::text FROM pg_partition_tree(%s)", (f"{SCHEMA}.{table}",))
        parts = [r[0] for r in tree] or [f"{SCHEMA}.{table}"]
        heap = idx = hnsw = 0
        for p in parts:
            h, i = c.execute("SELECT pg_table_size(%s), pg_indexes_size(%s)", (p, p)).fetchone()
            heap, idx = heap + h, idx + i
            hnsw += c.execute(
                "SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index x JOIN pg_class i "
                "ON i.oid = x.indexrelid JOIN pg_am a ON a.oid = i.relam WHERE x.indrelid = %s::regclass "
                "AND a.amname = 'hnsw'",
                (p,),
            ).fetchone()[0]
        sizes[table] = (heap, idx, hnsw)
    total = c.execute("SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON "
                      "n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'p')", (SCHEMA,)).fetchone()[0]  # fmt: skip

now = datetime.fromtimestamp(int(ds.timestamps.max()) / 1e6 + 86_400, tz=UTC)
res = {}
for _round in range(2):  # the first round warms caches
    for label, suffix in (("plain", ""), ("last month", " last month"), ("yesterday", " yesterday")):
        lat, ep, hits = [], [], []
        for q in ds.query_texts:
            b = mem.recall(q + suffix, user_id="u3", now=now)
            lat.append(b.timings["total"] - b.timings["embed"])
            ep.append(b.timings["episodes"])
            hits.append(len(b.episodes))
        res[label] = (lat, ep, hits)
mem.close()
if srv is not None:
    srv.cleanup()


def gb(x: float) -> str:
    return f"{x / 2**30:.2f} GiB" if x >= 2**30 else f"{x / 2**20:.0f} MiB"


print()
print(f"N={N:,} episodes, dim {DIM}, {USERS} users (one user = {N // USERS:,}); {time.perf_counter() - T0:.0f} s")
print()
print(
    f"build (retain_many in chunks of {args.chunk:,}, duplicate check on): {build_s / 60:.1f} min, {N / build_s:,.0f} /s"
)
print(f"raw data: {gb(raw)} (text {gb(raw_text)}, vectors {gb(N * DIM * 4)})")
for table, (heap, idx, hnsw) in sizes.items():
    extra = f" (HNSW {gb(hnsw)})" if hnsw else ""
    print(f"{table}: table {gb(heap)}, indexes {gb(idx)}{extra}")
print(f"schema total: {gb(total)} = {total / raw:.2f} x the raw data")
print()
print("| recall, one user, no embedding call | p50 | p99 | episodes step p50 | hits |")
print("|---|---:|---:|---:|---:|")
for label, (lat, ep, hits) in res.items():
    print(
        f"| {label} | {np.median(lat):.2f} ms | {np.percentile(lat, 99):.2f} ms | {np.median(ep):.2f} ms "
        f"| {np.mean(hits):.1f} |"
    )
