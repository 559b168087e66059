"""Subprocess helper for tests/test_store.py (not a test module).

Run as ``python tests/_store_child.py zygote``: it imports trimem once (≈0.7 s), prints
``ready`` and then serves commands from stdin, one per line, each answered by one line:

* ``spawn <json>``  — forks a child running ``cfg["fn"]`` (default :func:`writer`, or
  :func:`concurrency`) and answers its pid at once; the writer opens the store and writes
  until it is killed.
* ``try_open <folder>`` — forks a child that opens the folder as a second writer and answers
  ``locked``, ``ok`` or ``error <message>``.
* ``wait <pid>``    — reaps a forked child and answers ``exit <code>`` or ``signal <number>``
  (so the parent knows the killed writer is gone, and its lock released, before reopening).
* ``quit``.

Forking from this pre-warmed process is what makes hundreds of kill -9 iterations cheap: a
fresh interpreter per iteration would spend most of its time importing numpy and trimem.

The writer appends one JSON line to its acknowledgement file (``O_APPEND``, unbuffered, so
it survives the kill in the page cache) *before* each call (``intent``) and *after* the call
returned (``ack``). Everything in an ``ack`` line was acknowledged and must survive; an
``intent`` without its ``ack`` was in flight when the kill came and may or may not be there
(but all or nothing).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from datetime import UTC

WORDS = (
    "deploy node docker port postgres redis cache migration alpha beta gamma service "
    "release rollback schema index query latency budget backup"
).split()
CJK = ("部署", "数据库", "缓存", "端口", "迁移", "备份")


def _line(fd: int, obj: dict) -> None:
    os.write(fd, (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8"))


def writer(cfg: dict) -> None:
    """Opens the store and writes random operations (retain, retain_many, forget by ids or by
    session, facts.set, checkpoint) until killed (or `max_ops` are done)."""
    from datetime import datetime, timedelta

    from trimem.memory import Memory

    rng = random.Random(cfg["seed"])
    fd = os.open(cfg["ack"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    users = [f"u{i}" for i in range(cfg.get("users", 3))]
    tag = cfg["tag"]  # unique per iteration: every text ever written is unique
    base = datetime(2026, 1, 1, tzinfo=UTC)
    mem = Memory(cfg["folder"], embedder="hashing", durability=cfg.get("durability", "fsync"))
    _line(fd, {"op": "opened", "recovery": dict(mem._backend._journal.store.recovery())})
    n = 0

    def text() -> str:
        nonlocal n
        n += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
        cjk = rng.choice(CJK) if rng.random() < 0.3 else ""
        return f"{tag}n{n} {words} {cjk}".strip()

    for _ in range(cfg.get("max_ops", 100_000)):
        r = rng.random()
        user = rng.choice(users)
        when = base + timedelta(minutes=rng.randint(0, 10_000))
        if r < 0.45:
            t = text()
            _line(fd, {"op": "retain", "user": user, "texts": [t]})
            ep = mem.retain(t, user_id=user, session_id=f"s{rng.randint(0, 3)}", timestamp=when)
            _line(fd, {"op": "ack_retain", "user": user, "ids": [ep.id], "texts": [t]})
        elif r < 0.70:
            ts = [text() for _ in range(rng.randint(2, 6))]
            _line(fd, {"op": "retain", "user": user, "texts": ts})
            eps = mem.retain_many([dict(text=t, user_id=user, timestamp=when) for t in ts])
            _line(fd, {"op": "ack_retain", "user": user, "ids": [e.id for e in eps], "texts": ts})
        elif r < 0.80:
            if rng.random() < 0.7:
                eps = mem.episodes(user_id=user)
                ids = sorted(e.id for e in rng.sample(eps, min(len(eps), rng.randint(1, 8))))
                session = None
            else:
                session = f"s{rng.randint(0, 3)}"
                ids = [e.id for e in mem.episodes(user_id=user, session_id=session)]
            if not ids:
                continue
            _line(fd, {"op": "forget", "user": user, "ids": ids})
            if session is None:
                mem.forget(ids, user_id=user)
            else:
                mem.forget(user_id=user, session_id=session)
            _line(fd, {"op": "ack_forget", "user": user, "ids": ids})
        elif r < 0.93:
            key = f"k{rng.randint(0, 4)}"
            value = f"{tag}v{rng.randint(0, 10**9)}"
            _line(fd, {"op": "fact", "user": user, "key": key, "value": value})
            mem.facts.set(key, value, user_id=user)
            _line(fd, {"op": "ack_fact", "user": user, "key": key, "value": value})
        else:
            _line(fd, {"op": "checkpoint"})
            mem.checkpoint()
            _line(fd, {"op": "ack_checkpoint"})
    mem.close()
    _line(fd, {"op": "done"})
    # Stay alive until killed, so the parent's kill is always a kill.
    while True:
        time.sleep(1)


NOW = 1_900_000_000_000_000  # one fixed "now" for every search and recall


def search_results(mem, users: list[str], queries: list[str]) -> list:  # type: ignore[no-untyped-def]
    """Everything searches and recalls return for each user and query (JSON-ready), at one
    fixed "now" (scores decay with time) and without counting uses (that would change the
    state this compares)."""
    now = NOW
    out: list = []
    for u in users:
        for q in queries:
            out.append(
                [
                    [h.episode.id, h.episode.user_id, h.episode.text, round(h.scored.score, 6)]
                    for h in mem.search(q, user_id=u, k=8, now=now)
                ]
            )
            b = mem.recall(q, user_id=u, now=NOW, touch=False)
            out.append(
                [
                    [h.episode.id for h in b.episodes],
                    [k.doc.id for k in b.knowledge],
                    [[f.key, f.value] for f in b.profile],
                ]
            )
    return out


def concurrency(cfg: dict) -> int:
    """Readers (search and recall, checking every hit is the searched user's) in threads while
    one writer writes and checkpoints. With ``index_writes`` the writer retains and forgets
    (writes to the indexes), otherwise it only sets facts and checkpoints. A heartbeat file
    shows progress; SIGUSR1 dumps every thread's stack (the parent's deadlock detector)."""
    import faulthandler
    import signal
    import threading
    from collections import Counter
    from datetime import datetime, timedelta

    from trimem.memory import Memory

    stacks = open(cfg["stacks"], "w")
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    users = [f"user{i}" for i in range(5)]
    words = "deploy node docker port postgres redis cache migration release backup".split()
    queries = ["deploy node port", "postgres migration", "redis cache backup", "docker release editor"]
    rng = random.Random(cfg.get("seed", 3))
    mem = Memory(cfg["folder"], embedder="hashing")
    for u in users:
        mem.retain_many(
            [
                dict(text=f"{u} {' '.join(rng.sample(words, 4))} {i}", user_id=u, timestamp=t0 + timedelta(minutes=i))
                for i in range(30)
            ]
        )
        mem.knowledge.add(f"private handbook of {u} about {' '.join(rng.sample(words, 3))}", user_id=u)
    mem.facts.alias("editor", ["editor"])
    mem.knowledge.add("shared handbook: deploy node with docker on port 8080")
    errors: list[str] = []
    stop = threading.Event()
    count: Counter = Counter()

    def reader(seed: int) -> None:
        r = random.Random(seed)
        try:
            while not stop.is_set():
                u, q = r.choice(users), r.choice(queries)
                if r.random() < 0.6:
                    for hit in mem.search(q, user_id=u, k=8):
                        assert hit.episode.user_id == u, (u, hit.episode)
                else:
                    b = mem.recall(q, user_id=u, now=NOW)
                    for hit in b.episodes:
                        assert hit.episode.user_id == u, (u, hit.episode)
                    for k in b.knowledge:
                        assert k.doc.user_id in (None, u), (u, k.doc)
                count[f"reader{seed}"] += 1
        except BaseException:
            errors.append(traceback.format_exc())
            stop.set()

    def writer() -> None:
        r = random.Random(99)
        n = 0
        try:
            start = time.monotonic()
            # At least `seconds`, and at least 25 writes (a slow disk makes fsyncs slow).
            while (
                not stop.is_set()
                and time.monotonic() < start + 60
                and (time.monotonic() < start + cfg.get("seconds", 1.5) or count["writes"] < 25)
            ):
                n += 1
                u = r.choice(users)
                if cfg["index_writes"]:
                    mem.retain(
                        f"{u} {' '.join(r.sample(words, 4))} live {n}",
                        user_id=u,
                        timestamp=t0 + timedelta(hours=1, minutes=n),
                    )
                    if n % 11 == 0:
                        mine = mem.episodes(user_id=u)
                        mem.forget([mine[r.randrange(len(mine))].id], user_id=u)
                mem.facts.set("editor", f"vim{n}", user_id=u)
                if n % 20 == 0:
                    mem.checkpoint()
                    count["checkpoints"] += 1
                count["writes"] += 1
        except BaseException:
            errors.append(traceback.format_exc())
        finally:
            stop.set()

    def heartbeat() -> None:
        while not stop.is_set():
            with open(cfg["heartbeat"] + ".tmp", "w") as f:
                f.write(str(sum(count.values())))
            os.replace(cfg["heartbeat"] + ".tmp", cfg["heartbeat"])
            time.sleep(0.05)

    threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
    threads += [threading.Thread(target=writer), threading.Thread(target=heartbeat)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = search_results(mem, users, queries)
    mem.close()
    with open(cfg["out"], "w") as f:
        json.dump({"errors": errors, "count": dict(count), "results": results, "users": users, "queries": queries}, f)
    return 0


def try_open(folder: str) -> int:
    from trimem.errors import StoreLockedError
    from trimem.memory import Memory

    try:
        mem = Memory(folder, embedder="hashing")
    except StoreLockedError:
        return 3
    mem.close()
    return 0


def _child(fn, *args) -> None:  # type: ignore[no-untyped-def]
    """Runs in a forked child: never returns into the zygote's loop."""
    code = 1
    try:
        code = fn(*args) or 0
    except BaseException:
        traceback.print_exc()
        code = 4
    finally:
        os._exit(code)


def zygote() -> None:
    import trimem.memory  # noqa: F401  (the import cost is paid here, once)
    from trimem.embedders import resolve_embedder

    resolve_embedder("hashing")  # warm whatever it caches at module level
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for raw in sys.stdin:
        cmd, _, arg = raw.strip().partition(" ")
        if cmd == "quit":
            break
        if cmd == "spawn":
            cfg = json.loads(arg)
            pid = os.fork()
            if pid == 0:
                _child({"writer": writer, "concurrency": concurrency}[cfg.get("fn", "writer")], cfg)
            out.write(f"{pid}\n")
        elif cmd == "try_open":
            pid = os.fork()
            if pid == 0:
                _child(try_open, arg)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            out.write({0: "ok", 3: "locked"}.get(code, f"error {code}") + "\n")
        elif cmd == "wait":
            _, status = os.waitpid(int(arg), 0)
            code = os.waitstatus_to_exitcode(status)
            out.write(f"signal {-code}\n" if code < 0 else f"exit {code}\n")
        else:
            out.write(f"error unknown command {cmd!r}\n")
        out.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["zygote"]:
        zygote()
    else:
        sys.exit(f"usage: {sys.argv[0]} zygote")
