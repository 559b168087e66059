"""Throughput of one PostgreSQL memory shared by several client processes, against one process,
on the same server in the same run:

    python benches/postgres_clients.py [--n 20000] [--clients 4] [--seconds 15] [--dsn postgresql://...]

A schema is filled with ``--n`` episodes of 20 users; then, in turn, 1 and ``--clients``
processes (each its own ``Memory`` on the same DSN) run for ``--seconds``:

* durable retains (one ``retain`` per call, ``durability="fsync"``: each returns once its commit
  is on the server's disk), each client writing for its own users;
* recalls without the embedding call (precomputed vectors), each client asking for its users.

Three rounds; a rate is the median over the rounds (on a shared machine one round now and then
runs slow). The server shares the machine's cores with the clients. Without ``--dsn`` a
throwaway server is started (``pg_throwaway.py``); with it the schema ``clients_bench`` is
dropped and recreated there.
"""

import argparse
import multiprocessing as mp
import time
import warnings
import zlib
from datetime import UTC, datetime

import numpy as np

DIM, USERS = 384, 20


def vector_of(text: str, known: dict[str, np.ndarray]) -> np.ndarray:  # precomputed, or a fixed pseudo-random one
    v = known.get(text)
    if v is None:
        v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(DIM).astype(np.float32)
        v /= np.linalg.norm(v)
    return v


class Fixed:  # the embedder call is not what we measure
    name, dim = f"fixed-{DIM}", DIM

    def __init__(self, known: dict[str, np.ndarray]) -> None:
        self.known = known

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.stack([vector_of(t, self.known) for t in texts]).astype(np.float32)


def queries(n: int) -> dict[str, np.ndarray]:
    from trimem.bench.datasets import make_dataset

    ds = make_dataset(n, DIM, n_queries=200)
    return dict(zip(ds.query_texts, ds.query_vectors))


def worker(dsn: str, n: int, kind: str, client: int, start: float, seconds: float, out: "mp.Queue[int]") -> None:
    warnings.simplefilter("ignore")
    from trimem import Memory

    known = queries(n)
    texts = list(known)
    mem = Memory(dsn, embedder=Fixed(known))
    now = datetime(2027, 1, 15, tzinfo=UTC)
    users = [f"u{u}" for u in range(USERS) if u % 8 == client % 8] or ["u0"]
    for q in texts[:5]:  # warm the connection and the prepared statements
        mem.recall(q, user_id=users[0], now=now)
    time.sleep(max(0.0, start - time.time()))
    done, i = 0, 0
    deadline = start + seconds
    while time.time() < deadline:
        user = users[i % len(users)]
        if kind == "retain":
            mem.retain(f"client {client} note {i}: the deploy of build {i * 7 + client} went out", user_id=user)
        else:
            mem.recall(texts[i % len(texts)], user_id=user, now=now)
        done += 1
        i += 1
    mem.close()
    out.put(done)


def run(dsn: str, n: int, kind: str, clients: int, seconds: float) -> float:
    ctx = mp.get_context("spawn")
    out: mp.Queue[int] = ctx.Queue()
    start = time.time() + 12.0  # time for every client to start and warm up
    procs = [ctx.Process(target=worker, args=(dsn, n, kind, c, start, seconds, out)) for c in range(clients)]
    for p in procs:
        p.start()
    total = sum(out.get() for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dsn")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import psycopg

    from pg_throwaway import server, with_param
    from trimem import Memory
    from trimem.bench.datasets import make_dataset

    srv, dsn, _tmp = server(args.dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute("DROP SCHEMA IF EXISTS clients_bench CASCADE")
    target = with_param(dsn, "schema", "clients_bench")
    ds = make_dataset(args.n, DIM, n_queries=200)
    known = dict(zip(ds.texts, ds.vectors))
    mem = Memory(target, embedder=Fixed(known))
    t = time.perf_counter()
    items = [
        dict(text=x, user_id=f"u{i % USERS}", timestamp=int(ts))
        for i, (x, ts) in enumerate(zip(ds.texts, ds.timestamps))
    ]
    mem.retain_many(items, vectors=ds.vectors)
    mem.close()
    print(f"filled {args.n:,} episodes in {time.perf_counter() - t:.0f} s", flush=True)

    rates: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for kind in ("retain", "recall"):
            for clients in (1, args.clients):
                r = run(target, args.n, kind, clients, args.seconds)
                rates.setdefault((kind, clients), []).append(r)
                print(f"{kind} x{clients}: {r:,.1f} /s", flush=True)
    if srv is not None:
        srv.cleanup()
    print()
    print(f"| operation | 1 process (/s) | {args.clients} processes (/s) | ratio | target |")
    print("|---|---:|---:|---:|---:|")
    for kind, target_ratio in (("retain", "≥ 2"), ("recall", "≥ 1.5")):
        one = float(np.median(rates[(kind, 1)]))
        many = float(np.median(rates[(kind, args.clients)]))
        label = "durable `retain`" if kind == "retain" else "`recall` (no embedding call)"
        print(f"| {label} | {one:,.1f} | {many:,.1f} | {many / one:.2f} | {target_ratio} |")


if __name__ == "__main__":
    main()
