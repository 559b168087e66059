"""Many processes, one PostgreSQL memory: worker processes retain, recall, reflect, set facts and
forget at once, each writing down every call that returned; then nothing acknowledged is
missing, nothing forgotten is left, no tenant holds another's rows and every fact's history is
one unbroken line. A worker killed with SIGKILL mid-stream loses only what it had not been told
was written."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("psycopg", reason="the postgres extra is not installed")

from trimem import Memory

SHARED_USER = "team"


def _worker(dsn: str, wid: int, n_ops: int, log: str, seed: int) -> None:
    """Mixed operations on the worker's own user and a user every worker shares; each returned
    call is written to `log` (flushed) before the next starts."""
    rng = random.Random(seed)
    kept: list[int] = []
    with Memory(dsn, embedder="hashing") as mem, open(log, "a", encoding="utf-8") as out:

        def ack(line: str) -> None:
            out.write(line + "\n")
            out.flush()

        for i in range(n_ops):
            user = f"w{wid}" if rng.random() < 0.7 else SHARED_USER
            r = rng.random()
            if r < 0.5:
                text = f"[{user}] worker {wid} op {i}: deployed build {rng.randint(1, 10**6)} to staging"
                e = mem.retain(text, user_id=user)
                ack(f"retain {user} {e.id}")
                if user != SHARED_USER:
                    kept.append(e.id)
            elif r < 0.7:
                mem.recall(f"which build went to staging for {user}", user_id=user, k=5)
            elif r < 0.8:
                mem.retain(f"My editor is now editor{rng.randint(1, 50)}.", user_id=user)
                mem.reflect(user_id=user)
            elif r < 0.95:
                value = f"v{wid}-{i}"
                mem.facts.set("favourite_build", value, user_id=user)
                ack(f"fact {user} {value}")
            elif kept:
                gone = kept.pop(rng.randrange(len(kept)))
                mem.forget([gone], user_id=f"w{wid}")
                ack(f"forget w{wid} {gone}")


def _run(dsn: str, tmp_path: Path, workers: int, n_ops: int) -> list[Path]:
    ctx = multiprocessing.get_context("spawn")  # no connection of this process crosses a fork
    logs = [tmp_path / f"w{i}.log" for i in range(workers)]
    procs = [ctx.Process(target=_worker, args=(dsn, i, n_ops, str(logs[i]), i)) for i in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0, f"a worker failed (exit {p.exitcode})"
    return logs


def _check(dsn: str, logs: list[Path]) -> dict[str, int]:
    retained: dict[int, str] = {}
    forgotten: set[int] = set()
    for log in logs:
        if not log.exists():
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            kind, user, value = line.split(" ", 2)
            if kind == "retain":
                retained[int(value)] = user
            elif kind == "forget":
                forgotten.add(int(value))
    with Memory(dsn, embedder="hashing") as mem:
        backend = mem._backend
        stored = {e.id: e for e in backend.episodes(list(retained)) if e is not None}
        missing = [i for i in retained if i not in forgotten and i not in stored]
        assert missing == [], f"{len(missing)} acknowledged retains are missing"
        assert not forgotten & set(stored), "a forgotten episode is still there"
        for e in stored.values():  # each episode in its writer's tenant, and only there
            assert e.text.startswith(f"[{e.user_id}]") or "editor" in e.text
            assert e.user_id == retained[e.id]
        for _agent, user, key, versions, _ in backend.fact_histories():
            assert sum(v.valid_to is None for v in versions) <= 1, (user, key)
            for a, b in itertools.pairwise(versions):
                assert a.valid_to == b.valid_from, (user, key)  # one unbroken line of versions
    return {"retained": len(retained), "forgotten": len(forgotten)}


def test_concurrent_workers_lose_nothing_and_keep_tenants_and_histories_apart(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    dsn = f"{pg_dsn}&schema={pg_schema}"
    Memory(dsn, embedder="hashing").close()  # the schema exists before the workers race
    counts = _check(dsn, _run(dsn, tmp_path, workers=4, n_ops=150))
    assert counts["retained"] > 200


@pytest.mark.slow
def test_eight_workers_two_thousand_operations_each(pg_dsn: str, pg_schema: str, tmp_path: Path) -> None:
    dsn = f"{pg_dsn}&schema={pg_schema}"
    Memory(dsn, embedder="hashing").close()
    counts = _check(dsn, _run(dsn, tmp_path, workers=8, n_ops=2000))
    assert counts["retained"] > 6000


def test_a_worker_killed_mid_write_loses_only_what_was_not_acknowledged(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    dsn = f"{pg_dsn}&schema={pg_schema}"
    Memory(dsn, embedder="hashing").close()
    ctx = multiprocessing.get_context("spawn")
    log = tmp_path / "killed.log"
    p = ctx.Process(target=_worker, args=(dsn, 0, 100_000, str(log), 7))
    p.start()
    deadline = time.monotonic() + 60
    while (not log.exists() or log.stat().st_size < 2_000) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.pid is not None
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    counts = _check(dsn, [log])
    assert counts["retained"] > 10
