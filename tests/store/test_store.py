"""Durability tests of the folder store, through `Memory` (the engine's own unit and proptest
tests cover the decoders; these cover what a user of the store relies on):

1. kill -9 at random moments of a writer process (retain, retain_many, forget, facts.set,
   checkpoint): every acknowledged write survives with its exact text, an in-flight batch or
   forget is all or nothing, the store always opens cleanly;
2. a torn tail at every byte offset of the last log record is cut and reported;
3. random bit flips (and short bursts of damage) in the log and the snapshot:
   StoreCorruptedError, or (damage to the log's last record, which looks like a torn write)
   that record cut — never garbage;
4. injected I/O faults (full disk, short write, failing fsync) on every kind of write:
   StoreIOError, nothing changed, later writes work, a reopen shows exactly what was
   acknowledged;
5. a hypothesis state machine against a dict model (with reopen, checkpoint and faults);
6. searches and recalls in threads while a writer writes and checkpoints;
7. cross-tenant canaries under random operations;
8. purge: no byte of a forgotten canary (ASCII or Chinese) remains in the folder;
9. one writer at a time (a second process gets StoreLockedError) and format versions;
10. buffered durability survives a clean close and a kill -9.

The kill -9 tests fork their writers from one pre-warmed helper process
(tests/_store_child.py) so an iteration costs milliseconds, not an interpreter start.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import select
import signal
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.conftest import backend_of, store_of
from trimem.config import Policy
from trimem.errors import (
    StoreCorruptedError,
    StoreError,
    StoreIOError,
    StoreLockedError,
    StoreVersionError,
    UnknownIdError,
)
from trimem.memory import Memory
from trimem.timeutil import to_micros

CHILD = Path(__file__).with_name("_store_child.py")
UTC = UTC
T0 = datetime(2026, 3, 1, tzinfo=UTC)
FAULTS = ("disk_full", "short_write", "sync_fails")
WAL_HEADER = 24


posix_only = pytest.mark.skipif(
    not hasattr(os, "fork") or sys.platform == "win32", reason="kill -9 tests need fork and POSIX signals"
)


# ----------------------------------------------------------------------------------- helpers


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC32C (Castagnoli), the checksum of the store's files; table version."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def wal_name(g: int) -> str:
    return f"wal-{g:016x}.log"


def snapshot_name(g: int) -> str:
    return f"snapshot-{g:016x}.trimem"


def only_file(folder: Path, prefix: str) -> Path:
    found = sorted(p for p in folder.iterdir() if p.name.startswith(prefix))
    assert len(found) == 1, f"expected one {prefix}* file in {folder}, found {[p.name for p in found]}"
    return found[0]


def wal_records(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each record of a whole, intact log, checking every CRC in Python. Zeros
    after the last record are space allocated ahead of appends."""
    assert data[:8] == b"TRIMEMWL"
    assert struct.unpack_from("<I", data, 20)[0] == crc32c(data[:20]), "header CRC"
    out, pos = [], WAL_HEADER
    while pos < len(data) and any(data[pos:]):
        length, stored = struct.unpack_from("<II", data, pos)
        end = pos + 8 + length
        assert end <= len(data), f"record at {pos} runs past the end"
        assert crc32c(data[pos + 8 : end], crc32c(data[pos : pos + 4])) == stored, f"record CRC at {pos}"
        out.append((pos, end))
        pos = end
    return out


@contextmanager
def opened(path: Path, **kw: Any) -> Iterator[Memory]:
    kw.setdefault("embedder", "hashing")
    mem = Memory(path, **kw)
    try:
        yield mem
    finally:
        mem.close()


def observe(mem: Memory, users: list[str]) -> dict[str, Any]:
    """What a user of the memory can see, for "nothing changed" comparisons (as plain data:
    a returned Fact shares its history list with the memory, see
    test_a_returned_fact_is_a_snapshot)."""
    out: dict[str, Any] = {}
    for u in users:
        facts = mem.facts.list(user_id=u)
        out[u] = msgspec.to_builtins(
            {
                "episodes": mem.episodes(user_id=u),
                "facts": facts,
                "history": {f.key: mem.facts.history(f.key, user_id=u) for f in facts},
                "knowledge": [r.doc for r in mem.knowledge.search("handbook policy notes", user_id=u, k=50)],
            }
        )
    s = mem.stats()
    out["stats"] = {"episodes": s.episodes, "knowledge": s.knowledge, "facts": s.facts, "users": s.users}
    return out


def scan_folder(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------- the forking helper


class Zygote:
    """tests/_store_child.py in zygote mode: forks writers from a process that imported
    trimem once. Talks over pipes, one line per command, with timeouts (never hangs)."""

    def __init__(self, workdir: Path) -> None:
        self.errlog = workdir / "zygote-stderr.txt"
        env = dict(
            os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1"
        )
        started = time.perf_counter()
        with open(self.errlog, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(CHILD), "zygote"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=workdir,
                env=env,
                bufsize=0,
            )
        self._buf = b""
        assert self._readline(120) == "ready"
        self.startup = time.perf_counter() - started

    def stderr(self) -> str:
        return self.errlog.read_text(errors="replace")[-4000:]

    def _readline(self, timeout: float = 60.0) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the helper process did not answer in {timeout} s\n{self.stderr()}")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise AssertionError(f"the helper process died\n{self.stderr()}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode()

    def ask(self, cmd: str, timeout: float = 60.0) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd.encode() + b"\n")
        return self._readline(timeout)

    def spawn(self, **cfg: Any) -> int:
        return int(self.ask("spawn " + json.dumps(cfg)))

    def wait(self, pid: int) -> str:
        return self.ask(f"wait {pid}")

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(b"quit\n")
        except BrokenPipeError:
            pass
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    if not hasattr(os, "fork") or sys.platform == "win32":
        pytest.skip("needs fork")
    z = Zygote(tmp_path_factory.mktemp("zygote"))
    yield z
    z.close()


def _is_dead(pid: int) -> bool:
    """True once the (not our own) child has exited: a zombie awaiting its parent's wait."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _events(ack: Path) -> list[dict[str, Any]]:
    """The complete lines of a writer's acknowledgement file (a line cut by the kill is
    ignored: its call had not returned)."""
    data = ack.read_bytes() if ack.exists() else b""
    lines = data.split(b"\n")[:-1]
    return [json.loads(line) for line in lines]


@dataclass
class KillModel:
    """What the writer processes had acknowledged, across iterations."""

    episodes: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (user, text)
    facts: dict[tuple[str, str], str] = field(default_factory=dict)  # (user, key) -> value
    stats: Counter = field(default_factory=Counter)


USERS3 = ["u0", "u1", "u2"]


def _check_after_kill(folder: Path, model: KillModel, events: list[dict[str, Any]], it: int) -> None:
    pending: dict[str, Any] | None = None
    for ev in events:
        op = ev["op"]
        if op == "opened":
            model.stats["opened"] += 1
        elif op in ("retain", "fact", "checkpoint", "forget"):
            assert pending is None, f"iteration {it}: two calls in flight? {pending} {ev}"
            pending = ev
        elif op == "ack_retain":
            assert pending is not None and pending["texts"] == ev["texts"]
            for i, t in zip(ev["ids"], ev["texts"]):
                assert i not in model.episodes, f"iteration {it}: id {i} handed out twice"
                model.episodes[i] = (ev["user"], t)
            pending = None
            model.stats["acked_episodes"] += len(ev["ids"])
        elif op == "ack_forget":
            assert pending is not None and pending["ids"] == ev["ids"]
            for i in ev["ids"]:
                assert model.episodes.pop(i)[0] == ev["user"]
            pending = None
            model.stats["acked_forgets"] += 1
        elif op == "ack_fact":
            model.facts[(ev["user"], ev["key"])] = ev["value"]
            pending = None
        elif op == "ack_checkpoint":
            model.stats["checkpoints"] += 1
            pending = None
    if pending is not None:
        model.stats[f"killed_in_{pending['op']}"] += 1

    with opened(folder) as mem:  # must open cleanly: no exception, consistent folder
        rec = store_of(mem).recovery()
        g = rec["generation"]
        names = {p.name for p in folder.iterdir()}
        want = {"LOCK", wal_name(g)} | ({snapshot_name(g)} if rec["snapshot"] else set())
        assert names == want, f"iteration {it}: folder holds {sorted(names)} after recovery {rec}"
        model.stats["torn_bytes"] += rec["torn_bytes"]
        model.stats["removed_files"] += len(rec["removed_files"])
        for name in rec["removed_files"]:
            model.stats["removed_tmp" if name.endswith(".tmp") else "removed_old"] += 1

        live: dict[int, tuple[str, str]] = {}
        for u in USERS3:
            for e in mem.episodes(user_id=u):
                assert e.id not in live
                live[e.id] = (u, e.text)
        if pending is not None and pending["op"] == "forget":  # all or nothing
            there = [i in live for i in pending["ids"]]
            assert all(there) or not any(there), f"iteration {it}: forget {pending} half applied: {there}"
            if not any(there):
                for i in pending["ids"]:
                    del model.episodes[i]
            model.stats[f"inflight_forget_{'not_applied' if any(there) else 'applied'}"] += 1
        missing = model.episodes.keys() - live.keys()
        assert not missing, f"iteration {it}: acknowledged episodes lost: {sorted(missing)[:10]} ({rec})"
        for i, v in model.episodes.items():
            assert live[i] == v, f"iteration {it}: episode {i} came back as {live[i]}, written as {v}"
        extra = {i: live[i] for i in live.keys() - model.episodes.keys()}
        if extra:  # only the batch in flight may be there, and then all of it
            assert pending is not None and pending["op"] == "retain", f"iteration {it}: unknown episodes {extra}"
            assert sorted(t for _, t in extra.values()) == sorted(pending["texts"]), (
                f"iteration {it}: in-flight batch {pending['texts']} came back as {extra}"
            )
            assert {u for u, _ in extra.values()} == {pending["user"]}
            model.episodes.update(extra)
            model.stats["inflight_retain_present"] += 1
        elif pending is not None and pending["op"] == "retain":
            model.stats["inflight_retain_absent"] += 1

        for u in USERS3:
            for f in mem.facts.list(user_id=u):
                key = (u, f.key)
                ok = {model.facts.get(key)}
                if pending is not None and pending["op"] == "fact" and (pending["user"], pending["key"]) == key:
                    ok.add(pending["value"])
                assert f.value in ok, f"iteration {it}: fact {key} = {f.value!r}, expected one of {ok}"
                if f.value != model.facts.get(key):
                    model.stats["inflight_fact_present"] += 1
                model.facts[key] = f.value
            listed = {f.key for f in mem.facts.list(user_id=u)}
            for uu, k in model.facts:
                assert uu != u or k in listed, f"iteration {it}: fact {(uu, k)} lost"


def kill_loop(zygote: Zygote, work: Path, iterations: int, *, durability: str, seed: int) -> KillModel:
    folder = work / "store"
    acks = work / "acks"
    acks.mkdir()
    rng = random.Random(seed)
    model = KillModel()
    for it in range(iterations):
        ack = acks / f"{it}.jsonl"
        pid = zygote.spawn(
            folder=str(folder), ack=str(ack), seed=seed * 1_000_003 + it, tag=f"it{it}z", durability=durability
        )
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0, 0.03))  # may land while it opens (recovers) the store
        else:
            deadline = time.monotonic() + 60
            while not ack.exists() or ack.stat().st_size == 0:
                assert not _is_dead(pid), f"writer died before opening: {zygote.wait(pid)}\n{zygote.stderr()}"
                assert time.monotonic() < deadline, "writer did not open the store in 60 s"
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.06))
        os.kill(pid, signal.SIGKILL)
        status = zygote.wait(pid)
        assert status == f"signal {int(signal.SIGKILL)}", f"writer ended with {status}\n{zygote.stderr()}"
        _check_after_kill(folder, model, _events(ack), it)
        (acks / f"{it}.jsonl").unlink(missing_ok=True)
    return model


# ---------------------------------------------------------------------------- 1. kill -9


@posix_only
def test_kill9_loop_fsync(zygote: Zygote, tmp_path: Path) -> None:
    """60 writers killed at random moments on one folder; all acknowledged writes survive."""
    started = time.perf_counter()
    model = kill_loop(zygote, tmp_path, 60, durability="fsync", seed=1)
    print(
        f"\nkill -9 x60 (fsync): {time.perf_counter() - started:.1f} s, helper start "
        f"{zygote.startup:.2f} s, {dict(model.stats)}"
    )
    assert model.stats["acked_episodes"] > 20, model.stats  # the writers did get to write


@posix_only
@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_kill9_loop_fsync_1000(zygote: Zygote, tmp_path: Path) -> None:
    started = time.perf_counter()
    model = kill_loop(zygote, tmp_path, 1000, durability="fsync", seed=2)
    print(f"\nkill -9 x1000 (fsync): {time.perf_counter() - started:.1f} s, {dict(model.stats)}")
    assert model.stats["killed_in_checkpoint"] > 0, model.stats
    assert model.stats["removed_tmp"] + model.stats["removed_old"] > 0, model.stats


# --------------------------------------------------------------------------- 2. torn tail


@pytest.mark.slow  # ~11 s: a reopen per byte offset, fsync-bound
def test_torn_tail_at_every_offset_of_the_last_record(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    n = 5
    with opened(folder) as mem:
        eps = [
            mem.retain(
                f"torn tail test episode {i} about docker port {8000 + i}",
                user_id="u",
                timestamp=T0 + timedelta(minutes=i),
            )
            for i in range(n)
        ]
    wal = only_file(folder, "wal-")
    data = wal.read_bytes()
    records = wal_records(data)
    start, end = records[-1]
    data = data[:end]  # without the zero-filled space after the last record
    first = eps[: n - 1]
    for cut in range(start, end):
        wal.write_bytes(data[:cut])
        with opened(folder) as mem:
            rec = store_of(mem).recovery()
            assert rec["torn_bytes"] == cut - start, (cut, rec)
            assert rec["log_records"] == len(records) - 1
            assert mem.episodes(user_id="u") == first, cut
            assert wal.stat().st_size == start  # the tail is cut on open
            if cut in (start + 1, start + 7, start + 8, (start + end) // 2, end - 1):
                extra = mem.retain(f"appended after a cut at {cut}", user_id="u", timestamp=T0 + timedelta(hours=1))
        if cut in (start + 1, start + 7, start + 8, (start + end) // 2, end - 1):
            with opened(folder) as mem:
                assert store_of(mem).recovery()["torn_bytes"] == 0
                assert mem.episodes(user_id="u") == [*first, extra]
                assert extra.id == eps[-1].id  # the lost episode's id was never acknowledged
    # Zeros after the last record are space the log allocated ahead of its appends, not a
    # torn tail: nothing is cut, and the next append lands in them.
    wal.write_bytes(data + bytes(4096))
    with opened(folder) as mem:
        assert store_of(mem).recovery()["torn_bytes"] == 0
        assert mem.episodes(user_id="u") == eps
        extra = mem.retain("appended into allocated space", user_id="u", timestamp=T0 + timedelta(hours=2))
    with opened(folder) as mem:
        assert store_of(mem).recovery()["torn_bytes"] == 0
        assert mem.episodes(user_id="u") == [*eps, extra]


# --------------------------------------------------------------------------- 3. bit flips


def test_damage_in_allocated_space_is_cut(tmp_path: Path) -> None:
    """Garbage written into the zero-filled space after the last record (a crash mid-append)
    is a torn tail: cut on open, every acknowledged episode kept, the next append clean."""
    folder = tmp_path / "m"
    # Dedup off: the episodes differ in one number only, and this test is about the log's tail.
    with opened(folder, policy=Policy(dedup=False)) as mem:
        eps = [
            mem.retain(f"allocated space episode {i}", user_id="u", timestamp=T0 + timedelta(minutes=i))
            for i in range(20)
        ]
        end = store_of(mem).log_bytes
    wal = only_file(folder, "wal-")
    data = bytearray(wal.read_bytes())
    assert len(data) > end + 100 and not any(data[end:]), "space after the last record is zero-filled"
    data[end : end + 50] = bytes(range(1, 51))
    wal.write_bytes(bytes(data))
    with opened(folder) as mem:
        assert store_of(mem).recovery()["torn_bytes"] == len(data) - end
        assert mem.episodes(user_id="u") == eps
        extra = mem.retain("after the cut", user_id="u", timestamp=T0 + timedelta(hours=1))
    with opened(folder) as mem:
        assert store_of(mem).recovery()["torn_bytes"] == 0
        assert mem.episodes(user_id="u") == [*eps, extra]


def _flip_fixture(folder: Path) -> dict[int, dict[str, Any]]:
    """A store with a snapshot and a log of several records after it. Returns what the store
    holds when the log ends at each record boundary (log length -> observation)."""
    users = ["u1", "u2"]
    states: dict[int, dict[str, Any]] = {}
    with opened(folder) as mem:
        for i in range(8):
            mem.retain(
                f"before the snapshot {i} deploy node 部署 {i}",
                user_id=users[i % 2],
                session_id=f"s{i % 3}",
                timestamp=T0 + timedelta(hours=i),
            )
        mem.facts.set("city", "Lisbon", user_id="u1")
        mem.knowledge.add("handbook policy notes for everybody", source="handbook")
        mem.checkpoint()
        states[store_of(mem).log_bytes] = observe(mem, users)
        for i in range(4):
            mem.retain(
                f"after the snapshot {i} postgres migration",
                user_id=users[i % 2],
                timestamp=T0 + timedelta(days=1, hours=i),
            )
            states[store_of(mem).log_bytes] = observe(mem, users)
        mem.facts.set("city", "Porto", user_id="u1")
        states[store_of(mem).log_bytes] = observe(mem, users)
        mem.retain("the very last record redis cache", user_id="u2", timestamp=T0 + timedelta(days=2))
        states[store_of(mem).log_bytes] = observe(mem, users)
        end = store_of(mem).log_bytes
    # Without the zero-filled space after the last record, so every byte is data (damage to
    # that space is a torn tail: tests/test_store.py::test_damage_in_allocated_space_is_cut).
    wal = only_file(folder, "wal-")
    wal.write_bytes(wal.read_bytes()[:end])
    return states


def _bitflip_run(tmp_path: Path, trials: int, seed: int) -> Counter[str]:
    """Single bit flips (every bit of both headers, then `trials` random ones) and `trials/3`
    bursts (2-64 damaged bytes). A bit flip must give StoreCorruptedError, except inside the
    log's last record, which is then cut (a torn write looks the same). A burst may also be
    cut as a torn tail when it runs to the last record (no valid record follows it) — then
    the store must hold exactly what it held at a record boundary before the damage."""
    folder = tmp_path / "m"
    states = _flip_fixture(folder)
    wal, snap = only_file(folder, "wal-"), only_file(folder, "snapshot-")
    pristine = {wal: wal.read_bytes(), snap: snap.read_bytes()}
    assert max(states) == len(pristine[wal])
    last_start = wal_records(pristine[wal])[-1][0]
    rng = random.Random(seed)
    outcome: Counter[str] = Counter()
    cases: list[tuple[Path, int, int]] = []
    for path in (wal, snap):  # every bit of both headers
        cases += [(path, byte, bit) for byte in range(24) for bit in range(8)]
    for _ in range(trials):
        path = rng.choice((wal, snap))
        size = len(pristine[path])
        if path == wal and rng.random() < 0.3:
            byte = rng.randrange(last_start, size)  # aim at the last record now and then
        else:
            byte = rng.randrange(size)
        cases.append((path, byte, rng.randrange(8)))
    bursts = []  # damage to a run of 2-64 bytes (a bad sector, a stray write)
    for _ in range(trials // 3):
        path = rng.choice((wal, snap))
        size = len(pristine[path])
        n = rng.randint(2, 64)
        at = rng.randrange(last_start - 32 if path == wal and rng.random() < 0.3 else 0, size - n)
        bursts.append((path, at, bytes(rng.randint(1, 255) for _ in range(n))))
    damage = [(path, byte, bytes([1 << bit])) for path, byte, bit in cases] + bursts
    for path, byte, xor in damage:
        for p, b in pristine.items():
            p.write_bytes(b)
        damaged = bytearray(pristine[path])
        for k, x in enumerate(xor):
            damaged[byte + k] ^= x
        path.write_bytes(bytes(damaged))
        where = f"{path.name} bytes {byte}..{byte + len(xor)} xor {xor.hex()}"
        kind = "flip" if len(xor) == 1 else "burst"
        try:
            mem = Memory(folder, embedder="hashing")
        except StoreCorruptedError:
            outcome[f"{kind} {path.name[:3]}: corrupted"] += 1
            continue
        except BaseException as e:  # a panic, a decode error of garbage, ...
            raise AssertionError(f"{where}: {type(e).__name__}: {e}") from e
        try:
            rec = store_of(mem).recovery()
            seen = observe(mem, ["u1", "u2"])
        finally:
            mem.close()
        cut = len(pristine[wal]) - rec["torn_bytes"]
        assert path == wal and rec["torn_bytes"] > 0 and cut <= byte, f"{where}: damage went unnoticed ({rec})"
        if kind == "flip":
            assert cut == last_start, f"{where}: a flip cut more than the last record ({rec})"
        assert cut in states, f"{where}: cut inside a record ({rec})"
        assert seen == states[cut], f"{where}: the store came back with other content"
        outcome[f"{kind} wal: cut {'the last record' if cut == last_start else 'more'}"] += 1
    for p, b in pristine.items():
        p.write_bytes(b)
    with opened(folder) as mem:
        assert observe(mem, ["u1", "u2"]) == states[len(pristine[wal])]
    return outcome


def test_bit_flips_are_detected(tmp_path: Path) -> None:
    outcome = _bitflip_run(tmp_path, trials=300, seed=7)
    print(f"\n{dict(outcome)}")
    assert outcome["flip wal: cut the last record"] > 0 and outcome["flip sna: corrupted"] > 0, outcome
    assert outcome["flip wal: corrupted"] > 0, outcome


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_bit_flips_are_detected_many(tmp_path: Path) -> None:
    print(f"\n{dict(_bitflip_run(tmp_path, trials=5000, seed=8))}")


# --------------------------------------------------------------------------- 4. I/O faults


def _fault_fixture(folder: Path, **kw: Any) -> tuple[Memory, dict[str, int]]:
    mem = Memory(folder, embedder="hashing", **kw)
    ids: dict[str, int] = {}
    for i in range(6):
        e = mem.retain(
            f"fault fixture {i} handbook deploy",
            user_id=("u1", "u2")[i % 2],
            session_id="s1",
            timestamp=T0 + timedelta(hours=i),
        )
        ids[f"e{i}"] = e.id
    mem.facts.set("city", "Lisbon", user_id="u1")
    mem.knowledge.add("handbook policy notes (private)", user_id="u1", source="private")
    mem.checkpoint()
    mem.retain("after the checkpoint handbook", user_id="u1", timestamp=T0 + timedelta(days=1))
    mem.facts.set("city", "Porto", user_id="u1")
    return mem, ids


FAULT_OPS = {
    "retain": lambda m, ids: m.retain("this write fails handbook", user_id="u1", timestamp=T0),
    "retain_many": lambda m, ids: m.retain_many(
        [dict(text=f"failing batch {i} handbook", user_id="u2", timestamp=T0) for i in range(3)]
    ),
    "facts_set": lambda m, ids: m.facts.set("city", "Faro", user_id="u1"),
    "facts_delete": lambda m, ids: m.facts.delete("city", user_id="u1"),
    "forget_ids": lambda m, ids: m.forget([ids["e0"]], user_id="u1"),
    "forget_session": lambda m, ids: m.forget(user_id="u2", session_id="s1"),
    "forget_everything": lambda m, ids: m.forget(user_id="u1", everything=True),
    "knowledge_add": lambda m, ids: m.knowledge.add("failing handbook policy notes", user_id="u2"),
    "checkpoint": lambda m, ids: m.checkpoint(),
    "purge": lambda m, ids: m.purge(),
}


@pytest.mark.parametrize("kind", FAULTS)
@pytest.mark.parametrize("op", list(FAULT_OPS))
def test_io_fault(tmp_path: Path, kind: str, op: str) -> None:
    folder = tmp_path / "m"
    users = ["u1", "u2"]
    mem, ids = _fault_fixture(folder)
    try:
        before = observe(mem, users)
        log_bytes, generation = store_of(mem).log_bytes, store_of(mem).generation
        files = scan_folder(folder)
        store_of(mem).inject_fault(kind)
        with pytest.raises(StoreIOError) as info:
            FAULT_OPS[op](mem, ids)
        assert isinstance(info.value, StoreError) and isinstance(info.value, OSError)
        assert observe(mem, users) == before
        assert (store_of(mem).log_bytes, store_of(mem).generation) == (log_bytes, generation)
        assert scan_folder(folder) == files  # the failed write left no trace (no .tmp either)
        # Later writes work.
        later = mem.retain("a later write handbook", user_id="u2", timestamp=T0 + timedelta(days=3))
        mem.facts.set("pet", "cat", user_id="u2")
        after = observe(mem, users)
        assert mem.get(later.id) == later
    finally:
        mem.close()
    with opened(folder) as mem:
        assert store_of(mem).recovery()["torn_bytes"] == 0
        assert observe(mem, users) == after


@pytest.mark.parametrize("kind", FAULTS)
def test_io_fault_on_a_duplicate_reinforces_nothing(tmp_path: Path, kind: str) -> None:
    """A failed retain of a near-duplicate leaves the episode it duplicates as it was (its
    mention is counted only once the write is durable); a successful one counts it, in memory
    and after a reopen alike."""
    folder = tmp_path / "m"
    mem, ids = _fault_fixture(folder)

    def usage(m: Memory) -> dict[str, list[int]]:
        cols = backend_of(m).columns("episodes", None)
        return {k: cols[k].tolist() for k in ("ids", "mentions", "last_access")}

    again = dict(text="fault fixture 0 handbook deploy", user_id="u1", session_id="s1")
    try:
        before = usage(mem)
        store_of(mem).inject_fault(kind)
        with pytest.raises(StoreIOError):
            mem.retain(**again, timestamp=T0 + timedelta(days=2))
        assert usage(mem) == before
        assert mem.retain(**again, timestamp=T0 + timedelta(days=3)).id == ids["e0"]
        after = usage(mem)
        row = after["ids"].index(ids["e0"])
        assert after["mentions"][row] == before["mentions"][row] + 1
        assert after["last_access"][row] == to_micros(T0 + timedelta(days=3))
    finally:
        mem.close()
    with opened(folder) as mem:
        assert usage(mem) == after


def test_io_fault_that_cannot_be_undone_refuses_writes_until_reopen(tmp_path: Path) -> None:
    """fsync fails, and so does the fsync of the undo: the store refuses writes (it cannot
    tell what is on disk); a reopen shows exactly the acknowledged writes."""
    folder = tmp_path / "m"
    mem, _ = _fault_fixture(folder)
    try:
        before = observe(mem, ["u1", "u2"])
        store_of(mem).inject_fault("sync_fails", times=2)
        with pytest.raises(StoreIOError):
            mem.retain("never acknowledged handbook", user_id="u1")
        with pytest.raises(StoreIOError, match="reopen"):
            mem.facts.set("city", "Faro", user_id="u1")
        assert observe(mem, ["u1", "u2"]) == before
    finally:
        mem.close()
    with opened(folder) as mem:
        assert observe(mem, ["u1", "u2"]) == before
        mem.retain("writes work again after the reopen", user_id="u1")


@pytest.mark.parametrize("kind", ["disk_full", "short_write"])
def test_io_fault_partway_through_a_batch(tmp_path: Path, kind: str) -> None:
    """The fault fires after part of a 3-record write landed: none of it stays."""
    folder = tmp_path / "m"
    mem, _ = _fault_fixture(folder)
    try:
        before = observe(mem, ["u1", "u2"])
        store_of(mem).inject_fault(kind, after_bytes=100)
        with pytest.raises(StoreIOError):
            mem.retain_many([dict(text=f"batch {i} handbook", user_id="u1") for i in range(3)])
        assert observe(mem, ["u1", "u2"]) == before
    finally:
        mem.close()
    with opened(folder) as mem:
        assert observe(mem, ["u1", "u2"]) == before


def test_io_fault_buffered(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    mem, _ = _fault_fixture(folder, durability="buffered")
    try:
        before = observe(mem, ["u1", "u2"])
        store_of(mem).inject_fault("disk_full")
        with pytest.raises(StoreIOError):
            mem.retain("never acknowledged handbook", user_id="u1")
        assert observe(mem, ["u1", "u2"]) == before
        mem.retain("acknowledged handbook", user_id="u1", timestamp=T0)
        after = observe(mem, ["u1", "u2"])
    finally:
        mem.close()
    with opened(folder, durability="buffered") as mem:
        assert observe(mem, ["u1", "u2"]) == after


def test_checkpoint_fault_after_the_snapshot_is_in_place(tmp_path: Path) -> None:
    """Regression (fixed in 10e9eec): a checkpoint that failed after its snapshot was renamed into
    place left an empty wal-<g+1>.log, and the folder then refused to open (StoreCorruptedError)."""
    folder = tmp_path / "m"
    mem, _ = _fault_fixture(folder)
    try:
        mem.checkpoint()
        after = observe(mem, ["u1", "u2"])
        snap_size = only_file(folder, "snapshot-").stat().st_size  # the next snapshot is as big
        store_of(mem).inject_fault("disk_full", after_bytes=snap_size)
        with pytest.raises(StoreIOError):
            mem.checkpoint()
        assert observe(mem, ["u1", "u2"]) == after
    finally:
        mem.close()
    with opened(folder) as mem:
        assert observe(mem, ["u1", "u2"]) == after
        later = mem.retain("after the reopen handbook", user_id="u1", timestamp=T0)
    with opened(folder) as mem:
        assert later in mem.episodes(user_id="u1")


@pytest.mark.parametrize("header_bytes", [0, 10])
def test_crash_between_new_log_creation_and_its_header(tmp_path: Path, header_bytes: int) -> None:
    """Regression (fixed in 10e9eec; the kill -9 loop hit it about once in 1,000 kills): a kill
    between creating wal-<g+1>.log and writing its header made the folder unopenable.

    The folder as a kill -9 inside Store::checkpoint leaves it, built from real files:
    snapshot g and log g (not yet removed), the complete snapshot g+1, and log g+1 cut
    inside its header."""
    folder = tmp_path / "m"
    mem, _ = _fault_fixture(folder)
    try:
        before = observe(mem, ["u1", "u2"])
        old = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "LOCK"}
        mem.checkpoint()
        new_wal = only_file(folder, "wal-")
    finally:
        mem.close()
    for name, data in old.items():
        (folder / name).write_bytes(data)
    new_wal.write_bytes(new_wal.read_bytes()[:header_bytes])
    with opened(folder) as mem:
        assert observe(mem, ["u1", "u2"]) == before
        assert store_of(mem).recovery()["torn_bytes"] == header_bytes
        later = mem.retain("after the reopen handbook", user_id="u1", timestamp=T0)
    with opened(folder) as mem:
        assert later in mem.episodes(user_id="u1")
        assert {p.name for p in folder.iterdir()} == {"LOCK", new_wal.name, snapshot_name(store_of(mem).generation)}


def test_auto_checkpoint_fault_after_a_logged_write(tmp_path: Path) -> None:
    """Regression (fixed in 10e9eec): when the automatic checkpoint after a logged write failed,
    retain raised although its episode was logged and applied, the id was handed out again and
    the folder could never be opened again (DuplicateIdError on replay)."""
    folder = tmp_path / "m"
    problems: list[str] = []
    live: list[Any] = []
    with opened(folder) as mem:
        mem.retain("first text here", user_id="u", timestamp=T0)
        b0 = store_of(mem).log_bytes
        mem.retain("second text her", user_id="u", timestamp=T0)
        record = store_of(mem).log_bytes - b0  # the next retain's record is as big
        backend_of(mem).checkpoint_bytes = store_of(mem).log_bytes + 1  # the next retain triggers a checkpoint
        store_of(mem).inject_fault("disk_full", after_bytes=record)  # the append fits, the snapshot not
        try:
            mem.retain("third text here", user_id="u", timestamp=T0)
            raised = False
        except StoreIOError:
            raised = True
        backend_of(mem).checkpoint_bytes = 1 << 30
        present = "third text here" in [e.text for e in mem.episodes(user_id="u")]
        if present == raised:  # what the call reported must be what happened
            problems.append(
                f"retain {'raised' if raised else 'returned'} but its episode is {'present' if present else 'absent'}"
            )
        try:
            mem.retain("fourth text", user_id="u", timestamp=T0)
        except Exception as e:
            problems.append(f"the next retain failed: {type(e).__name__}: {e}")
        live = mem.episodes(user_id="u")
    try:
        with opened(folder) as mem:
            if mem.episodes(user_id="u") != live:
                problems.append("a reopen shows other episodes")
    except Exception as e:
        problems.append(f"the folder no longer opens: {type(e).__name__}: {e}")
    assert not problems, problems


def test_a_returned_fact_is_a_snapshot(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    problems = []
    with opened(folder, embedder=None) as mem:
        mem.facts.set("city", "Lisbon", user_id="u")
        old = mem.facts.get("city", user_id="u")
        assert old is not None
        mem.facts.set("city", "Porto", user_id="u")
        if [v.value for v in old.history] != ["Lisbon"]:
            problems.append(f"a Fact read before an update changed: history {[v.value for v in old.history]}")
        now = mem.facts.get("city", user_id="u")
        assert now is not None
        now.history.clear()  # the caller's own copy, it believes
        if len(mem.facts.history("city", user_id="u")) != 2:
            problems.append("clearing a returned Fact's history cleared the memory's")
        mem.checkpoint()
    with opened(folder, embedder=None) as mem:
        got = mem.facts.get("city", user_id="u")
        if got is None or got.value != "Porto":
            problems.append(f"after checkpoint and reopen the fact is {got}")
    assert not problems, problems


# -------------------------------------------------------------------- 5. stateful model


USERS = ["alice", "bob", "carol"]
SESSIONS = ["s1", "s2"]
KEYS = ["city", "editor", "pet"]


class StoreMachine(RuleBasedStateMachine):
    """Memory on disk vs. dicts, through writes, forgets, checkpoints, reopens and faults."""

    base: Path  # set by the test
    count = 0

    def __init__(self) -> None:
        super().__init__()
        StoreMachine.count += 1
        self.folder = self.base / f"m{StoreMachine.count}"
        self.mem = Memory(self.folder, embedder="hashing")
        self.episodes: dict[str, dict[int, tuple[str, str | None, int]]] = {u: {} for u in USERS}
        self.facts: dict[str, dict[str, str]] = {u: {} for u in USERS}
        self.issued: set[int] = set()
        self.n = 0

    def _text(self) -> str:
        self.n += 1
        return f"note {self.n} deploy node port {self.n * 7}"

    def _added(self, user: str, eps: list[Any]) -> None:
        for e in eps:
            assert e.id not in self.issued, f"id {e.id} handed out twice"
            self.issued.add(e.id)
            self.episodes[user][e.id] = (e.text, e.session_id, e.timestamp)

    @rule(user=st.sampled_from(USERS), session=st.sampled_from([None, *SESSIONS]), minute=st.integers(0, 100))
    def retain(self, user: str, session: str | None, minute: int) -> None:
        e = self.mem.retain(self._text(), user_id=user, session_id=session, timestamp=T0 + timedelta(minutes=minute))
        self._added(user, [e])

    @rule(
        user=st.sampled_from(USERS),
        minutes=st.lists(st.integers(0, 100), min_size=1, max_size=4),
        session=st.sampled_from([None, *SESSIONS]),
    )
    def retain_many(self, user: str, minutes: list[int], session: str | None) -> None:
        eps = self.mem.retain_many(
            [
                dict(text=self._text(), user_id=user, session_id=session, timestamp=T0 + timedelta(minutes=m))
                for m in minutes
            ]
        )
        self._added(user, eps)

    @precondition(lambda self: any(self.episodes.values()))
    @rule(data=st.data())
    def forget_ids(self, data: st.DataObject) -> None:
        user = data.draw(st.sampled_from([u for u in USERS if self.episodes[u]]))
        ids = data.draw(st.lists(st.sampled_from(sorted(self.episodes[user])), min_size=1, max_size=3, unique=True))
        assert self.mem.forget(ids, user_id=user) == len(ids)
        for i in ids:
            del self.episodes[user][i]

    @precondition(lambda self: any(self.episodes.values()))
    @rule(data=st.data())
    def forget_other_users_id(self, data: st.DataObject) -> None:
        """An id of another user: UnknownIdError and nothing changes."""
        owner = data.draw(st.sampled_from([u for u in USERS if self.episodes[u]]))
        other = data.draw(st.sampled_from([u for u in USERS if u != owner]))
        i = data.draw(st.sampled_from(sorted(self.episodes[owner])))
        with pytest.raises(UnknownIdError):
            self.mem.forget([i], user_id=other)

    @rule(user=st.sampled_from(USERS), session=st.sampled_from(SESSIONS))
    def forget_session(self, user: str, session: str) -> None:
        gone = [i for i, (_, s, _) in self.episodes[user].items() if s == session]
        assert self.mem.forget(user_id=user, session_id=session) == len(gone)
        for i in gone:
            del self.episodes[user][i]

    @rule(user=st.sampled_from(USERS), a=st.integers(0, 100), b=st.integers(0, 100))
    def forget_time_range(self, user: str, a: int, b: int) -> None:
        lo, hi = T0 + timedelta(minutes=min(a, b)), T0 + timedelta(minutes=max(a, b) + 1)
        lo_us, hi_us = int(lo.timestamp() * 1e6), int(hi.timestamp() * 1e6)
        gone = [i for i, (_, _, t) in self.episodes[user].items() if lo_us <= t < hi_us]
        assert self.mem.forget(user_id=user, time_range=(lo, hi)) == len(gone)
        for i in gone:
            del self.episodes[user][i]

    @rule(user=st.sampled_from(USERS))
    def forget_everything(self, user: str) -> None:
        self.mem.forget(user_id=user, everything=True)
        self.episodes[user].clear()
        self.facts[user].clear()

    @rule(user=st.sampled_from(USERS), key=st.sampled_from(KEYS), value=st.sampled_from(["a", "b", "c d", "东京"]))
    def set_fact(self, user: str, key: str, value: str) -> None:
        self.mem.facts.set(key, value, user_id=user)
        self.facts[user][key] = value

    @rule(user=st.sampled_from(USERS), key=st.sampled_from(KEYS))
    def delete_fact(self, user: str, key: str) -> None:
        self.mem.facts.delete(key, user_id=user)
        self.facts[user].pop(key, None)

    @rule()
    def checkpoint(self) -> None:
        self.mem.checkpoint()

    @rule()
    def reopen(self) -> None:
        self.mem.close()
        self.mem = Memory(self.folder, embedder="hashing")
        assert store_of(self.mem).recovery()["torn_bytes"] == 0

    @rule(
        kind=st.sampled_from(FAULTS),
        what=st.sampled_from(["retain", "fact", "forget_all", "checkpoint"]),
        user=st.sampled_from(USERS),
    )
    def failing_write(self, kind: str, what: str, user: str) -> None:
        store_of(self.mem).inject_fault(kind)
        with pytest.raises(StoreIOError):
            if what == "retain":
                self.mem.retain(self._text(), user_id=user)
            elif what == "fact":
                self.mem.facts.set("city", f"never {self.n}", user_id=user)
            elif what == "forget_all":
                self.mem.forget(user_id=user, everything=True)
            else:
                self.mem.checkpoint()

    @invariant()
    def matches_model(self) -> None:
        for u in USERS:
            got = {e.id: (e.text, e.session_id, e.timestamp) for e in self.mem.episodes(user_id=u)}
            assert got == self.episodes[u], u
            assert {f.key: f.value for f in self.mem.facts.list(user_id=u)} == self.facts[u], u
        assert self.mem.stats().episodes == sum(len(v) for v in self.episodes.values())

    def teardown(self) -> None:
        self.mem.close()


def test_stateful_against_a_model(tmp_path: Path) -> None:
    StoreMachine.base = tmp_path
    run_state_machine_as_test(
        StoreMachine,
        settings=settings(
            max_examples=25,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_stateful_against_a_model_long(tmp_path: Path) -> None:
    StoreMachine.base = tmp_path
    run_state_machine_as_test(
        StoreMachine,
        settings=settings(
            max_examples=300,
            stateful_step_count=60,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


# ----------------------------------------------------------------------- 6. concurrency


def _load_child_module() -> Any:
    spec = importlib.util.spec_from_file_location("_store_child", CHILD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _concurrency(zygote: Zygote, work: Path, *, index_writes: bool) -> dict[str, Any]:
    """Runs `concurrency` of tests/_store_child.py in a forked child (a deadlock there holds
    the GIL forever: in this process it would hang the test run), watching its heartbeat.
    Then reopens the folder and compares the results with those the child saw live."""
    folder, out, stacks, beat = work / "m", work / "out.json", work / "stacks.txt", work / "beat"
    pid = zygote.spawn(
        fn="concurrency",
        folder=str(folder),
        out=str(out),
        stacks=str(stacks),
        heartbeat=str(beat),
        index_writes=index_writes,
        seconds=1.5,
    )
    last, changed = None, time.monotonic()
    while not _is_dead(pid):
        now = beat.read_text() if beat.exists() else None
        if now != last:
            last, changed = now, time.monotonic()
        elif time.monotonic() - changed > (10 if beat.exists() else 60):
            # No search or write finished for 10 s (or the setup took a minute): dump every
            # thread's stack, kill.
            os.kill(pid, signal.SIGUSR1)
            time.sleep(0.5)
            os.kill(pid, signal.SIGKILL)
            zygote.wait(pid)
            raise AssertionError(
                f"deadlock: no progress for 10 s (progress {last}); stacks:\n{stacks.read_text()[-6000:]}"
            )
        time.sleep(0.02)
    status = zygote.wait(pid)
    assert status == "exit 0", f"{status}\n{zygote.stderr()}"
    res = json.loads(out.read_text())
    assert not res["errors"], "\n".join(res["errors"])
    assert all(res["count"].get(f"reader{s}", 0) > 5 for s in range(4)), res["count"]
    assert res["count"]["checkpoints"] > 0 and res["count"]["writes"] > 20, res["count"]
    search_results = _load_child_module().search_results
    with opened(folder) as mem:
        again = json.loads(json.dumps(search_results(mem, res["users"], res["queries"])))
    assert again == res["results"]
    return res


@posix_only
def test_concurrent_search_while_checkpointing(zygote: Zygote, tmp_path: Path) -> None:
    """Searches and recalls in 4 threads while a writer sets facts and checkpoints."""
    _concurrency(zygote, tmp_path, index_writes=False)


@posix_only
def test_concurrent_search_while_writing_and_checkpointing(zygote: Zygote, tmp_path: Path) -> None:
    """Regression (fixed in 10e9eec): get_many re-took the GIL under the index read lock while
    doc_freq/get/stats waited for that lock holding the GIL; with a writer queued (fair
    RwLock) search + retain in two threads deadlocked within a second.

    Searches and recalls in 4 threads while a writer retains, forgets, sets facts and
    checkpoints; every hit is the searched user's; the results equal a reopen's."""
    _concurrency(zygote, tmp_path, index_writes=True)


# ---------------------------------------------------------------- 7. cross-tenant canaries


def _bundle_strings(b: Any) -> list[str]:
    out = [r.episode.text for r in b.episodes] + [r.doc.text for r in b.knowledge]
    out += [f.value for f in b.profile]
    for lines in b.sections().values():
        out += lines
    return out


def test_cross_tenant_canaries(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    rng = random.Random(5)
    users = [f"tenant{i}" for i in range(12)]
    canary = {u: f"cnry{rng.getrandbits(40):010x}t{i}" for i, u in enumerate(users)}
    words = "deploy node docker port postgres redis cache migration release backup secret password".split()
    ids: dict[str, list[int]] = {u: [] for u in users}
    mem = Memory(folder, embedder="hashing")
    stats: Counter[str] = Counter()

    def check(u: str, texts: list[str], what: str) -> None:
        for t in texts:
            for v, c in canary.items():
                assert v == u or c not in t, f"{what} for {u} leaked {v}'s canary: {t!r}"

    try:
        mem.knowledge.add("shared handbook: deploy node docker port secret password policy")
        for step in range(500):
            u = rng.choice(users)
            r = rng.random()
            if r < 0.35 or not ids[u]:
                e = mem.retain(
                    f"{' '.join(rng.sample(words, 4))} {canary[u]}",
                    user_id=u,
                    session_id=rng.choice(["a", "b"]),
                    timestamp=T0 + timedelta(minutes=step),
                )
                ids[u].append(e.id)
            elif r < 0.60:
                victim = rng.choice(users)  # ask for another user's canary, too
                q = f"{' '.join(rng.sample(words, 2))} {canary[victim] if rng.random() < 0.5 else ''}".strip()
                hits = mem.search(q, user_id=u, k=10)
                assert all(h.episode.user_id == u for h in hits)
                check(u, [h.episode.text for h in hits], "search")
                stats["searches"] += 1
                stats["hits"] += len(hits)
            elif r < 0.75:
                victim = rng.choice(users)
                b = mem.recall(f"what about {rng.choice(words)} {canary[victim]} secret?", user_id=u)
                check(u, _bundle_strings(b), "recall")
                stats["recalls"] += 1
            elif r < 0.83:
                i = ids[u].pop(rng.randrange(len(ids[u])))
                mem.forget([i], user_id=u)
            elif r < 0.88:
                mem.facts.set("secret", f"password {canary[u]}", user_id=u)
            elif r < 0.92:
                mem.knowledge.add(f"private notes {' '.join(rng.sample(words, 3))} {canary[u]}", user_id=u)
            elif r < 0.94:
                mem.forget(user_id=u, everything=True)
                ids[u] = []
            elif r < 0.97:
                mem.checkpoint()
            else:
                mem.close()
                mem = Memory(folder, embedder="hashing")
                stats["reopens"] += 1
        # Every user, with every other user's canary as the question.
        for u in users:
            for v in users:
                check(u, [h.episode.text for h in mem.search(canary[v], user_id=u, k=20)], "search")
                check(u, _bundle_strings(mem.recall(f"secret {canary[v]}", user_id=u)), "recall")
            check(
                u,
                [r.doc.text for r in mem.knowledge.search(f"private notes {canary[u]}", user_id=u, k=20)],
                "knowledge",
            )
    finally:
        mem.close()
    assert stats["hits"] > 50 and stats["reopens"] > 0, stats


# ------------------------------------------------------------------------------ 8. purge


def test_purge_leaves_no_trace_of_forgotten_text(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    day = timedelta(days=1)
    forgotten = {  # must leave the folder
        "by_id": ["cnryidalpha01", "金丝雀标识一号"],
        "by_session": ["cnrysessbeta02", "会话金丝雀二号"],
        "by_time": ["cnrytimegamma03", "时间金丝雀三号"],
        "bob_episode": ["cnrybobdelta04", "鲍勃金丝雀四号"],
        "bob_fact": ["cnrybobfactepsilon05", "事实金丝雀五号", "cnrybobfactold06"],
        "bob_fact_key": ["cnrybobkeyzeta07"],
        "bob_doc": ["cnrybobdoceta08", "知识金丝雀八号", "cnrybobtitletheta09"],
    }
    kept = [
        "cnrykeepalice10",
        "保留金丝雀十号",
        "cnrykeepcarol11",
        "卡罗尔金丝雀十一",
        "cnrykeepcarolfact12",
        "cnrykeepshared13",
    ]
    with opened(folder) as mem:
        keep = mem.retain(
            f"alice keeps this note {kept[0]} {kept[1]}", user_id="alice", session_id="keep", timestamp=T0 + day
        )
        by_id = mem.retain(
            f"alice temporary password {forgotten['by_id'][0]} {forgotten['by_id'][1]}",
            user_id="alice",
            session_id="keep",
            timestamp=T0 + 2 * day,
        )
        for i, c in enumerate(forgotten["by_session"]):
            mem.retain(
                f"alice session secret {c}", user_id="alice", session_id="gone", timestamp=T0 + 3 * day + i * day
            )
        for i, c in enumerate(forgotten["by_time"]):
            mem.retain(f"alice timed secret {c}", user_id="alice", timestamp=T0 + 10 * day + timedelta(hours=i))
        mem.checkpoint()  # some of it in a snapshot, some in the log
        mem.retain(
            f"bob says I live in Berlin and my code is {' '.join(forgotten['bob_episode'])}",
            user_id="bob",
            session_id="b",
            timestamp=T0 + day,
        )
        mem.reflect(user_id="bob")  # a reflect cursor (and whatever facts it extracts)
        mem.facts.set("secret", f"old {forgotten['bob_fact'][2]}", user_id="bob")
        mem.facts.set("secret", f"{forgotten['bob_fact'][0]} {forgotten['bob_fact'][1]}", user_id="bob")
        mem.facts.set(forgotten["bob_fact_key"][0], "some value", user_id="bob")
        mem.knowledge.add(
            f"bob private doc {forgotten['bob_doc'][0]} {forgotten['bob_doc'][1]}",
            user_id="bob",
            source="bobdoc",
            title=f"title {forgotten['bob_doc'][2]}",
        )
        mem.retain(f"carol data {kept[2]} {kept[3]}", user_id="carol", timestamp=T0 + day)
        mem.facts.set("city", f"Lisbon {kept[4]}", user_id="carol")
        mem.knowledge.add(f"shared handbook {kept[5]}", source="handbook")
        carol_before = observe(mem, ["carol"])["carol"]

        assert mem.forget([by_id.id], user_id="alice") == 1
        assert mem.forget(user_id="alice", session_id="gone") == 2
        assert mem.forget(user_id="alice", time_range=(T0 + 9 * day, T0 + 11 * day)) == 2
        assert mem.forget(user_id="bob", everything=True) == 1
        mem.purge()

        def scan(when: str) -> None:
            files = scan_folder(folder)
            blob = b"".join(files.values())
            for group, cs in forgotten.items():
                for c in cs:
                    for form in {c, c.lower(), c.upper()}:
                        assert form.encode() not in blob, (
                            f"{when}: forgotten {group} canary {form!r} still in "
                            f"{[n for n, d in files.items() if form.encode() in d]}"
                        )
            for c in kept:  # the scan does see stored text
                assert c.encode() in blob, f"{when}: kept canary {c!r} not found: the scan is blind"

        scan("after purge")
        g = store_of(mem).generation
        assert set(scan_folder(folder)) == {"LOCK", snapshot_name(g), wal_name(g)}
        assert (folder / wal_name(g)).stat().st_size == WAL_HEADER
    scan("after close")
    with opened(folder) as mem:
        assert [e.text for e in mem.episodes(user_id="alice")] == [keep.text]
        assert mem.episodes(user_id="bob") == [] and mem.facts.list(user_id="bob") == []
        assert mem.facts.history("secret", user_id="bob") == []
        assert all(r.doc.user_id is None for r in mem.knowledge.search("bob private doc", user_id="bob", k=10))
        assert backend_of(mem).cursor("default", "bob") == 0 and ("default", "bob") not in mem.pending_reflection()
        assert observe(mem, ["carol"])["carol"] == carol_before
        assert [r.doc.source for r in mem.knowledge.search(f"shared handbook {kept[5]}", k=5)] == ["handbook"]
    scan("after reopen")


# ----------------------------------------------------------------- 9. lock and versions


@posix_only
def test_second_writer_process_is_locked_out(zygote: Zygote, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    mem = Memory(folder, embedder="hashing")
    try:
        mem.retain("held by the first writer", user_id="u")
        assert zygote.ask(f"try_open {folder}") == "locked"
        with pytest.raises(StoreLockedError):  # in-process too
            Memory(folder, embedder="hashing")
        mem.retain("the first writer is unaffected", user_id="u")
    finally:
        mem.close()
    assert zygote.ask(f"try_open {folder}") == "ok"
    with opened(folder) as mem:
        assert len(mem.episodes(user_id="u")) == 2


def test_crc32c_check_value() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(b"456789", crc32c(b"123")) == 0xE3069283  # continues like crc32c_append


def _set_version(path: Path, version: int, *, fix_crc: bool = True) -> bytes:
    data = bytearray(path.read_bytes())
    original = bytes(data)
    assert struct.unpack_from("<I", data, 20)[0] == crc32c(bytes(data[:20])), "our CRC32C disagrees"
    assert struct.unpack_from("<I", data, 8)[0] == 1
    struct.pack_into("<I", data, 8, version)
    if fix_crc:
        struct.pack_into("<I", data, 20, crc32c(bytes(data[:20])))
    path.write_bytes(bytes(data))
    return original


def test_newer_format_version_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    with opened(folder) as mem:
        mem.retain("written by this version", user_id="u")
    wal = only_file(folder, "wal-")
    assert wal.read_bytes()[:8] == b"TRIMEMWL"
    original = _set_version(wal, 2)
    with pytest.raises(StoreVersionError):
        Memory(folder, embedder="hashing")
    wal.write_bytes(original)
    _set_version(wal, 2, fix_crc=False)  # the version changed but not its checksum: damage
    with pytest.raises(StoreCorruptedError):
        Memory(folder, embedder="hashing")
    wal.write_bytes(original)
    with opened(folder) as mem:
        mem.checkpoint()
        mem.retain("after the checkpoint", user_id="u")
    snap = only_file(folder, "snapshot-")
    assert snap.read_bytes()[:8] == b"TRIMEMSN"
    original = _set_version(snap, 7)
    with pytest.raises(StoreVersionError):
        Memory(folder, embedder="hashing")
    snap.write_bytes(original)
    with opened(folder) as mem:
        assert [e.text for e in mem.episodes(user_id="u")] == ["written by this version", "after the checkpoint"]


# ------------------------------------------------------------------ 10. buffered durability


def test_buffered_survives_clean_close(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    with opened(folder, durability="buffered") as mem:
        assert store_of(mem).durability == "buffered"
        eps = mem.retain_many([dict(text=f"buffered {i} deploy", user_id="u", timestamp=T0) for i in range(50)])
        eps.append(mem.retain("the last buffered write", user_id="u", timestamp=T0))
        mem.facts.set("city", "Lisbon", user_id="u")
    with opened(folder, durability="buffered") as mem:
        assert mem.episodes(user_id="u") == eps
        assert mem.facts.get("city", user_id="u").value == "Lisbon"


@posix_only
def test_kill9_loop_buffered(zygote: Zygote, tmp_path: Path) -> None:
    """A process crash loses nothing with buffered durability: appends reach the OS at once."""
    started = time.perf_counter()
    model = kill_loop(zygote, tmp_path, 20, durability="buffered", seed=3)
    print(f"\nkill -9 x20 (buffered): {time.perf_counter() - started:.1f} s, {dict(model.stats)}")
    assert model.stats["acked_episodes"] > 20, model.stats


@posix_only
@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_kill9_loop_buffered_300(zygote: Zygote, tmp_path: Path) -> None:
    started = time.perf_counter()
    model = kill_loop(zygote, tmp_path, 300, durability="buffered", seed=4)
    print(f"\nkill -9 x300 (buffered): {time.perf_counter() - started:.1f} s, {dict(model.stats)}")
    assert model.stats["acked_episodes"] > 500, model.stats
