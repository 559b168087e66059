"""Durable-store performance (issue "Durable embedded store"), on a real disk, all ratios
measured in one run:

    python benches/store_perf.py --n 100000 --dir /var/tmp/trimem-store-bench

* durable `retain` one at a time (fsync) vs a raw append + fsync of the same bytes, and vs the
  same bytes written over zero-filled space + fdatasync (what the store's log does: an fsync
  that need not commit a new file size);
* `retain_many` of 10k episodes, fsync vs buffered;
* a store of `--n` episodes × 384-d: build (= what rebuilding its indexes costs), checkpoint,
  reopen in a fresh process (time and resident memory), folder size; sizes compared with the raw
  data (text bytes + 4 · dim bytes per vector).

The embedder is a stand-in returning precomputed vectors: the embedding call is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REOPEN = r"""
import json, os, resource, sys, time
import numpy as np
from trimem import Memory
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
class Fixed:
    name, dim = "fixed-384", 384
    def __call__(self, texts): return np.zeros((len(texts), 384), np.float32)
base = rss()
t = time.perf_counter()
mem = Memory(sys.argv[1], embedder=Fixed())
took = time.perf_counter() - t
print(json.dumps({"reopen_s": took, "rss_delta": rss() - base, "episodes": mem.stats().episodes,
                  "recovery": mem._store.recovery()}))
"""


class Fixed:
    name, dim = "fixed-384", 384

    def __call__(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 384), np.float32)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def single_retains(root: Path, vectors: np.ndarray, texts: list[str], reps: int) -> dict[str, float]:
    """p50 of a durable one-episode retain vs an append + fsync of the same bytes, interleaved."""
    from trimem import Memory
    from trimem._backend.ops import OpRetain, encode_op

    mem = Memory(root / "single", embedder=Fixed(), durability="fsync")
    raw_path = root / "raw.log"
    fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    ours: list[float] = []
    raw: list[float] = []  # the same syscall we use (fdatasync): the strict comparison
    raw_fsync: list[float] = []
    # The log's own trick, done by hand: space zero-filled (and synced) ahead of the writes.
    pre_fd = os.open(root / "raw-prealloc.log", os.O_RDWR | os.O_CREAT, 0o644)
    os.write(pre_fd, bytes(reps * (len(texts[0]) + 4096) + (1 << 20)))
    os.fsync(pre_fd)
    pre_at = 0
    raw_pre: list[float] = []
    for i in range(reps):
        item = dict(text=texts[i], user_id=f"u{i % 20}", timestamp=1_700_000_000_000_000 + i)
        t = time.perf_counter()
        ep = mem.retain_many([item], vectors=vectors[i : i + 1])[0]
        ours.append(time.perf_counter() - t)
        payload = encode_op(OpRetain(episodes=[ep], vectors=vectors[i : i + 1].tobytes()))
        frame = len(payload).to_bytes(4, "little") + b"\0\0\0\0" + payload
        for sync, out in ((os.fdatasync, raw), (os.fsync, raw_fsync)):
            t = time.perf_counter()
            os.write(fd, frame)
            sync(fd)
            out.append(time.perf_counter() - t)
        t = time.perf_counter()
        os.pwrite(pre_fd, frame, pre_at)
        os.fdatasync(pre_fd)
        raw_pre.append(time.perf_counter() - t)
        pre_at += len(frame)
    os.close(fd)
    os.close(pre_fd)
    mem.close()
    p50 = float(np.median(ours)), float(np.median(raw)), float(np.median(raw_fsync)), float(np.median(raw_pre))
    return {
        "retain_fsync_p50_ms": p50[0] * 1e3,
        "raw_append_fdatasync_p50_ms": p50[1] * 1e3,
        "raw_append_fsync_p50_ms": p50[2] * 1e3,
        "raw_prealloc_fdatasync_p50_ms": p50[3] * 1e3,
        "ratio_vs_fdatasync": p50[0] / p50[1],
        "ratio_vs_fsync": p50[0] / p50[2],
        "ratio_vs_prealloc_fdatasync": p50[0] / p50[3],
    }


def batch_retains(root: Path, vectors: np.ndarray, texts: list[str], n: int, rounds: int) -> dict[str, float]:
    """retain_many of `n` episodes, fsync vs buffered, interleaved rounds (median seconds)."""
    from trimem import Memory

    items = [dict(text=texts[i], user_id=f"u{i % 20}", timestamp=1_700_000_000_000_000 + i) for i in range(n)]
    times: dict[str, list[float]] = {"fsync": [], "buffered": []}
    for r in range(rounds):
        for mode in ("fsync", "buffered"):
            path = root / f"batch-{mode}-{r}"
            mem = Memory(path, embedder=Fixed(), durability=mode)
            t = time.perf_counter()
            mem.retain_many(items, vectors=vectors[:n])
            times[mode].append(time.perf_counter() - t)
            mem.close()
            shutil.rmtree(path)
    f, b = float(np.median(times["fsync"])), float(np.median(times["buffered"]))
    return {"retain_many_fsync_s": f, "retain_many_buffered_s": b, "ratio": f / b}


def big_store(root: Path, n: int, vectors: np.ndarray, texts: list[str]) -> dict[str, float]:
    from trimem import Memory

    path = root / "big"
    items = [dict(text=texts[i], user_id=f"u{i % 300}", timestamp=1_700_000_000_000_000 + i * 1000) for i in range(n)]
    mem = Memory(path, embedder=Fixed(), durability="fsync", checkpoint_bytes=1 << 62)
    t = time.perf_counter()
    for at in range(0, n, 50_000):
        mem.retain_many(items[at : at + 50_000], vectors=vectors[at : at + 50_000])
        print(f"  built {min(at + 50_000, n):,}/{n:,} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    build = time.perf_counter() - t
    t = time.perf_counter()
    mem.checkpoint()
    checkpoint = time.perf_counter() - t
    mem.close()
    raw = sum(len(s.encode()) for s in texts[:n]) + 4 * 384 * n
    size = folder_bytes(path)
    reopen = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", REOPEN, str(path)], check=True, capture_output=True, text=True)
        reopen.append(json.loads(out.stdout))
    best = sorted(reopen, key=lambda r: r["reopen_s"])[1]  # the median of three
    shutil.rmtree(path)
    return {
        "n": n,
        "build_s": build,
        "checkpoint_s": checkpoint,
        "reopen_s": best["reopen_s"],
        "reopen_vs_rebuild": best["reopen_s"] / build,
        "raw_bytes": raw,
        "folder_bytes": size,
        "folder_vs_raw": size / raw,
        "rss_after_reopen": best["rss_delta"],
        "rss_vs_raw": best["rss_delta"] / raw,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dir", default=None, help="a folder on a real disk (default: a temp folder)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-big", action="store_true")
    args = ap.parse_args()
    import trimem
    from trimem.bench.datasets import make_dataset

    assert trimem.build_profile() == "release", "never benchmark a debug build"
    ds = make_dataset(max(args.n, 10_000), 384, n_queries=10)
    texts, vectors = list(ds.texts), np.ascontiguousarray(ds.vectors, dtype=np.float32)
    root = Path(tempfile.mkdtemp(prefix="trimem-store-bench-", dir=args.dir))
    try:
        res = {
            "single": single_retains(root, vectors, texts, 300),
            "batch_10k": batch_retains(root, vectors, texts, 10_000, 3),
        }
        print(json.dumps(res, indent=1), flush=True)
        if not args.skip_big:
            res["big"] = big_store(root, args.n, vectors, texts)
        print(json.dumps(res, indent=1))
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
