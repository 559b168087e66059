"""Same-run speed and quality comparison of trimem's engine with its peers.

Run it as ``python -m trimem bench`` (see ``--help``) or call :func:`run`.

Method (DESIGN.md §6: the machine is small, shared and noisy, so compare *ratios from one run*):

1. One seeded dataset (:func:`trimem.bench.datasets.make_dataset`) and, per query, one time window
   holding ``window`` (10 %) of the records.
2. Every system is built once (build seconds and the resident-memory growth are recorded;
   systems sharing an index share its build).
3. One untimed pass per system collects its results (for recall) and warms caches.
4. ``repeats`` interleaved rounds: round r runs every system once over all queries, one query
   per call, timed with ``time.perf_counter_ns``; within a round the systems alternate every
   ``BLOCK`` (50) queries and their order rotates every round, so machine noise hits all
   systems alike. The garbage collector is paused while timing (as ``timeit`` does). A system's
   p50/p99 is the median over rounds of that round's p50/p99; a ratio is the median over rounds
   of that round's ratio.
5. Recall@10 against exact answers computed here with numpy: brute-force cosine for vector
   systems, Lucene BM25 over trimem's tokens for BM25 systems, and for hybrids the same RRF (k=60)
   over exact top-50 legs; for windowed cases everything is restricted to the window first.
   Ties are counted as correct (a hit is right when its exact score reaches the 10th best).
   "short" is the share of queries returning fewer hits than the exact answer has (< k).
6. After timing, ``SINGLE_INSERTS`` (200) new records are added one call at a time to each index
   built (trimem, hnswlib, tantivy), each timed until it is searchable (tantivy: add, commit,
   reload); the table also gives each build's records per second and added resident memory.
7. ``scale=[n1, n2, ...]`` repeats steps 1-6 at every size (a fresh dataset and fresh builds per
   size, smallest first); every row carries its ``n`` and ``ratios_by_n`` holds each size's
   ratios (``ratios`` is the largest size's). :mod:`trimem.bench.plot` draws latency vs N and
   recall vs latency from the report (``--plot PATH``).

:func:`time_rounds` (step 4) is shared with the CI gate, :mod:`trimem.bench.gate`.
"""

from __future__ import annotations

import gc
import importlib.metadata
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

import trimem
from trimem.bench import peers
from trimem.bench.datasets import Dataset, make_dataset, time_window, with_model_vectors

__all__ = ["FULL", "QUICK", "DebugBuildError", "check_release", "run", "time_rounds"]

K = 10
# --quick and the defaults: (n, dim, queries, repeats)
QUICK = {"n": 20_000, "dim": 128, "queries": 100, "repeats": 3}
FULL = {"n": 100_000, "dim": 384, "queries": 200, "repeats": 5}

_K1, _B = 1.2, 0.75
# Systems alternate every BLOCK queries within a round, so load from other processes lands on
# all of them rather than on whichever system was running; blocks of 50 keep caches warm (with
# blocks of 10 over twelve 100k-record systems, every block started cold and all times rose by
# ~60 %). The CI gate, on a cache-sized dataset, alternates every 10.
BLOCK = 50
# Records added one call at a time per index after the timing rounds (step 6).
SINGLE_INSERTS = 200


class DebugBuildError(RuntimeError):
    """trimem's engine is a debug build; timing it would be meaningless."""


def check_release(what: str = "timings", hint: str = " or pass --allow-debug") -> None:
    """Raise :class:`DebugBuildError` unless the engine is a release build."""
    profile = trimem.build_profile()
    if profile != "release":
        raise DebugBuildError(
            f"trimem's engine is a {profile} build (trimem.build_profile() == {profile!r}): "
            f"{what} would be meaningless. Rebuild it in release mode (e.g. `maturin develop "
            f"--release` or `pip install .`){hint}."
        )


# --------------------------------------------------------------------------
# Exact answers
# --------------------------------------------------------------------------


class ExactBm25:
    """Lucene BM25 (k1=1.2, b=0.75, exact lengths) over trimem's tokens, for ground truth."""

    def __init__(self, doc_tokens: Sequence[Sequence[str]]) -> None:
        n = len(doc_tokens)
        self.n = n
        self.vocab: dict[str, int] = {}
        setdefault = self.vocab.setdefault
        flat = np.fromiter((setdefault(t, len(self.vocab)) for doc in doc_tokens for t in doc), dtype=np.int64)
        lens = np.fromiter((len(doc) for doc in doc_tokens), dtype=np.int64, count=n)
        docs = np.repeat(np.arange(n, dtype=np.int64), lens)
        keys, tf = np.unique(flat * n + docs, return_counts=True)  # sorted by (term, doc)
        term, self.docs = keys // n, keys % n
        n_terms = len(self.vocab)
        self.indptr = np.searchsorted(term, np.arange(n_terms + 1))
        df = np.diff(self.indptr).astype(np.float64)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        avgdl = lens.sum() / max(n, 1)
        tf = tf.astype(np.float64)
        self.contrib = idf[term] * tf / (tf + _K1 * (1 - _B + _B * lens[self.docs] / avgdl))

    def scores(self, query_tokens: Iterable[str]) -> np.ndarray:
        s = np.zeros(self.n, dtype=np.float64)
        for t in dict.fromkeys(query_tokens):  # distinct terms, as the engine scores them
            tid = self.vocab.get(t)
            if tid is not None:
                a, b = self.indptr[tid], self.indptr[tid + 1]
                s[self.docs[a:b]] += self.contrib[a:b]  # one posting per (term, doc)
        return s


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Ids of the k best finite scores, best first, ties to the smaller id."""
    k = min(k, len(scores))
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    part = part[np.isfinite(scores[part])]
    ranked: np.ndarray = part[np.lexsort((part, -scores[part]))]
    return ranked


def _fuse(legs: Sequence[tuple[np.ndarray, np.ndarray]], rrf_k: float = peers.RRF_K) -> dict[int, float]:
    """RRF of (ids best first, score per id) legs, equal scores sharing the better rank
    (1, 2, 2, 4) as the engine ranks them."""
    fused: dict[int, float] = {}
    for leg, score in legs:
        rank, prev = 0, None
        for pos, doc in enumerate(leg.tolist(), 1):
            if score[doc] != prev:
                rank, prev = pos, score[doc]
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (rrf_k + rank)
    return fused


@dataclass
class Tally:
    """Recall and short-result counts of one system over the query set."""

    recall_sum: float = 0.0
    judged: int = 0
    short: int = 0
    queries: int = 0

    def add(self, returned: Sequence[int], truth: np.ndarray, score_of: Any, tol: float, k: int) -> None:
        self.queries += 1
        kk = len(truth)
        ret = list(dict.fromkeys(int(x) for x in returned))[:k]
        if len(ret) < kk:
            self.short += 1
        if kk == 0:
            return
        thr = score_of(int(truth[-1]))
        slack = tol * max(1.0, abs(thr))
        correct = sum(1 for d in ret if score_of(d) >= thr - slack)
        self.recall_sum += min(correct, kk) / kk
        self.judged += 1

    @property
    def recall(self) -> float | None:
        return self.recall_sum / self.judged if self.judged else None

    @property
    def short_share(self) -> float | None:
        return self.short / self.queries if self.queries else None


def _evaluate(
    ds: Dataset,
    windows: list[tuple[int, int]],
    doc_tokens: list[list[str]],
    systems: list[peers.System],
    answers: dict[str, list[list[int]]],
    k: int,
    show_progress: bool,
) -> dict[str, Tally]:
    """Recall@k and short-result share of every system against exact answers."""
    bm25 = ExactBm25(doc_tokens)
    x = ds.vectors
    q_all = ds.query_vectors / np.linalg.norm(ds.query_vectors, axis=1, keepdims=True)
    ts = ds.timestamps
    tallies = {s.key: Tally() for s in systems}
    nq = len(ds.query_texts)
    chunk = max(1, min(64, (1 << 26) // max(len(ds), 1)))  # bound the (chunk, n) sims block
    starts = range(0, nq, chunk)
    for a in peers.progress(starts, total=len(starts), desc="exact answers", enabled=show_progress):
        sims_block = q_all[a : a + chunk] @ x.T
        for j, i in enumerate(range(a, min(a + chunk, nq))):
            sims = sims_block[j].astype(np.float64)
            lo, hi = windows[i]
            mask = (ts >= lo) & (ts < hi)
            bm = bm25.scores(trimem.tokenize(ds.query_texts[i]))
            bm[bm <= 0] = -np.inf
            sims_w = np.where(mask, sims, -np.inf)
            bm_w = np.where(mask, bm, -np.inf)
            vec_top = _top(sims, peers.LEG)
            vec_top_w = _top(sims_w, peers.LEG)
            bm_top = _top(bm, peers.LEG)
            bm_top_w = _top(bm_w, peers.LEG)
            truth: dict[tuple[str, bool], tuple[np.ndarray, Any, float]] = {
                ("vector", False): (vec_top[:k], sims.__getitem__, 1e-5),
                ("vector", True): (vec_top_w[:k], sims_w.__getitem__, 1e-5),
                ("bm25", False): (bm_top[:k], bm.__getitem__, 1e-4),
                ("bm25", True): (bm_top_w[:k], bm_w.__getitem__, 1e-4),
            }
            for filtered, legs in (
                (False, ((bm_top, bm), (vec_top, sims))),
                (True, ((bm_top_w, bm_w), (vec_top_w, sims_w))),
            ):
                fused = _fuse(legs)
                order = sorted(fused, key=lambda d: (-fused[d], d))[:k]
                truth[("hybrid", filtered)] = (
                    np.asarray(order, dtype=np.int64),
                    lambda d, f=fused: f.get(d, -np.inf),
                    1e-6,
                )
            for s in systems:
                top, score_of, tol = truth[(s.kind, s.filtered)]
                tallies[s.key].add(answers[s.key][i], top, score_of, tol, k)
    return tallies


# --------------------------------------------------------------------------
# Machine and versions
# --------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "simd": trimem.simd_kernel(),
        "build_profile": trimem.build_profile(),
    }


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"trimem": trimem.__version__}
    for pkg in ("numpy", "hnswlib", "bm25s", "tantivy", "numba", "lancedb", "pyarrow"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


# --------------------------------------------------------------------------
# Ratios
# --------------------------------------------------------------------------


def _ratio_specs(pct: str) -> list[tuple[str, str, list[str]]]:
    """(label, trimem system, peers — the fastest available one by p50 is used)."""
    return [
        ("trimem vector / hnswlib", "trimem-vector", ["hnswlib"]),
        (f"trimem vector {pct} window / hnswlib filter callback", "trimem-vector-window", ["hnswlib-filter"]),
        ("trimem bm25 / tantivy", "trimem-bm25", ["tantivy"]),
        ("trimem bm25 / bm25s (numpy)", "trimem-bm25", ["bm25s"]),
        ("trimem bm25 / bm25s (numba)", "trimem-bm25", ["bm25s-numba"]),
        ("trimem bm25 / min(tantivy, bm25s)", "trimem-bm25", ["tantivy", "bm25s", "bm25s-numba"]),
        ("trimem hybrid / hnswlib", "trimem-hybrid", ["hnswlib"]),
        ("trimem hybrid / hand hybrid", "trimem-hybrid", ["hand-hybrid"]),
        (f"trimem hybrid {pct} window / trimem hybrid", "trimem-hybrid-window", ["trimem-hybrid"]),
        (f"trimem hybrid {pct} window / hand hybrid post-filter", "trimem-hybrid-window", ["hand-hybrid-post"]),
        (f"trimem hybrid {pct} window / hand hybrid pre-filter", "trimem-hybrid-window", ["hand-hybrid-pre"]),
        ("trimem vector / LanceDB", "trimem-vector", ["lancedb-vector"]),
        ("trimem bm25 / LanceDB FTS", "trimem-bm25", ["lancedb-fts"]),
        ("trimem hybrid / LanceDB hybrid", "trimem-hybrid", ["lancedb-hybrid"]),
        (f"trimem hybrid {pct} window / LanceDB hybrid pre-filter", "trimem-hybrid-window", ["lancedb-hybrid-window"]),
    ]


def _ratios(rows: dict[str, dict[str, Any]], pct: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for label, num, dens in _ratio_specs(pct):
        have = [d for d in dens if d in rows]
        if num not in rows or not have:
            continue
        den = min(have, key=lambda d: rows[d]["p50_ms"])
        # The median of the per-round ratios: a round measures both systems over the same
        # stretch of time, so a burst of load elsewhere moves both (medians of each system's
        # rounds can pair a quiet round of one with a loaded round of the other).
        per_round = {
            q: [a / b for a, b in zip(rows[num][f"rounds_{q}_ms"], rows[den][f"rounds_{q}_ms"])] for q in ("p50", "p99")
        }
        out[label] = {
            "numerator": num,
            "denominator": den,
            "p50": float(np.median(per_round["p50"])),
            "p99": float(np.median(per_round["p99"])),
            "rounds_p50": per_round["p50"],
        }
    return out


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def _fmt(v: float | None, spec: str) -> str:
    return "–" if v is None else format(v, spec)


def _ms(v: float) -> str:
    return f"{v:.3f}" if v < 10 else f"{v:.1f}"


def _r(v: float) -> str:
    return f"{v:.2f}" if v >= 0.095 else f"{v:.3f}"


def _sizes(report: dict[str, Any]) -> list[int]:
    cfg = report["config"]
    return [int(x) for x in cfg.get("scale") or [cfg["n"]]]


def _ratio_table(report: dict[str, Any]) -> list[str]:
    sizes = _sizes(report)
    by_n: dict[str, dict[str, Any]] = report.get("ratios_by_n") or {str(sizes[-1]): report["ratios"]}
    if not any(by_n.values()):
        return []
    head = "ratio (trimem / peer; < 1 means trimem is faster)"
    if len(sizes) == 1:
        lines = ["", f"| {head} | p50 | p99 |", "|---|---:|---:|"]
        for label, v in report["ratios"].items():
            extra = f" [{v['denominator']}]" if "min(" in label else ""
            lines.append(f"| {label}{extra} | {_r(v['p50'])} | {_r(v['p99'])} |")
        return lines
    labels = list(dict.fromkeys(lb for n in sizes for lb in by_n.get(str(n), {})))
    lines = ["", f"| {head} | " + " | ".join(f"p50 @ n={n}" for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
    for label in labels:
        cells = []
        for n in sizes:
            v = by_n.get(str(n), {}).get(label)
            cells.append("–" if v is None else _r(v["p50"]))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _insert_table(report: dict[str, Any]) -> list[str]:
    rows = report.get("inserts") or []
    if not rows:
        return []
    lines = [
        "",
        "| index | n | batch build, records/s | one record at a time, p50 ms (until searchable) | p99 ms "
        "| resident memory added by the build, MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        rate = "–" if r.get("batch_per_s") is None else f"{r['batch_per_s']:,.0f}"
        lines.append(
            f"| {r['index']} | {r['n']} | {rate} | {_ms(r['single_p50_ms'])} | "
            f"{_ms(r['single_p99_ms'])} | {r['build_rss_mb']:.0f} |"
        )
    return lines


def markdown(report: dict[str, Any]) -> str:
    cfg, mach = report["config"], report["machine"]
    sizes = _sizes(report)
    n_text = f"n={sizes[0]}" if len(sizes) == 1 else "n=" + ", ".join(str(n) for n in sizes)
    lines = [
        f"trimem {report['versions']['trimem']} ({mach['build_profile']}, {mach['simd']}) on "
        f"{mach['cpu']}, {mach['cores']} cores, Python {mach['python']}",
        f"{n_text}, dim={cfg['dim']}, {cfg['queries']} queries, k={cfg['k']}, "
        f"{cfg['repeats']} interleaved rounds, seed={cfg['seed']}, one query per call, "
        + ("MiniLM vectors of the texts" if cfg.get("vectors") == "minilm" else "seeded clustered vectors"),
        "",
        "| system | case | n | p50 ms | p99 ms | recall@10 | build s | short-results % |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["results"]:
        lines.append(
            f"| {r['system']} | {r['case']} | {r['n']} | {_ms(r['p50_ms'])} | {_ms(r['p99_ms'])}"
            f" | {_fmt(r['recall_at_10'], '.3f')} | {r['build_s']:.1f} | "
            f"{_fmt(None if r['short_results'] is None else 100 * r['short_results'], '.1f')} |"
        )
    lines += _ratio_table(report)
    lines += _insert_table(report)
    notes = []
    seen: set[tuple[str, str]] = set()
    for r in report["results"]:
        at = f" (n={r['n']})" if len(sizes) > 1 else ""
        if r.get("plans"):
            plans = ", ".join(f"{p} {100 * c / sum(r['plans'].values()):.0f}%" for p, c in sorted(r["plans"].items()))
            notes.append(f"{r['key']}{at}: plans {plans}")
        if r.get("note") and (r["key"], r["note"]) not in seen:  # once, not once per size
            seen.add((r["key"], r["note"]))
            notes.append(f"{r['key']}: {r['note']}")
    for s in report["skipped"]:
        if (s["key"], s["reason"]) not in seen:  # one line per reason, not one per size
            seen.add((s["key"], s["reason"]))
            notes.append(f"skipped {s['key']}: {s['reason']}")
    notes.append(
        "build s: systems sharing an index report that one build (all trimem rows share one "
        "HybridIndex; hand hybrids reuse the hnswlib and bm25s indexes; bm25s includes "
        "tokenising with trimem.tokenize; LanceDB rows share one table with its three indexes)"
    )
    notes.append(
        "recall@10 is against exact numpy answers (cosine brute force; Lucene BM25 over trimem's "
        "tokens; RRF k=60 of exact top-50 legs), restricted to the window for windowed cases; "
        "tantivy and LanceDB tokenise differently (and tantivy scales/quantises BM25), so their "
        "BM25 and hybrid recall is < 1 by design"
    )
    lines += ["", *(f"- {n}" for n in notes)]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------


@dataclass
class _Timing:
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def time_rounds(
    systems: Sequence[peers.System],
    n_queries: int,
    repeats: int,
    *,
    show_progress: bool = True,
    desc: str = "timing rounds",
    wrap: Any = None,
    block: int | None = None,
) -> dict[str, _Timing]:
    """Step 4: ``repeats`` interleaved, rotated rounds; per system the p50/p99 of every round.

    Round r runs every system once over all queries (one query per call, ``perf_counter_ns``
    around the call, garbage collector paused), starting with system ``r % len(systems)``.
    ``block=None`` runs each system's queries back to back; ``block=b`` alternates systems every
    ``b`` queries (b queries of system 1, the same b of system 2, ..., the next b of system 1),
    so a burst of load from another process lands on every system instead of on one — the CI
    gate uses that. ``wrap(system) -> query`` may replace a system's query callable (the gate's
    injected slowdown); by default ``system.query`` is timed.
    """
    ready = list(systems)
    timing = {s.key: _Timing() for s in ready}
    if not ready:
        return timing
    calls = {s.key: (s.query if wrap is None else wrap(s)) for s in ready}
    step = n_queries if block is None else max(1, int(block))
    lat = {s.key: np.empty(n_queries, dtype=np.int64) for s in ready}
    clock = time.perf_counter_ns
    gc_was_enabled = gc.isenabled()
    try:
        for r in peers.progress(range(repeats), total=repeats, desc=desc, enabled=show_progress):
            rot = r % len(ready)
            order = ready[rot:] + ready[:rot]
            if step >= n_queries:  # one system at a time: collect garbage before each
                for s in order:
                    query, out = calls[s.key], lat[s.key]
                    gc.collect()
                    gc.disable()
                    for i in range(n_queries):
                        t = clock()
                        query(i)
                        out[i] = clock() - t
                    if gc_was_enabled:
                        gc.enable()
            else:
                gc.collect()
                gc.disable()
                for a in range(0, n_queries, step):
                    b = min(a + step, n_queries)
                    for s in order:
                        query, out = calls[s.key], lat[s.key]
                        for i in range(a, b):
                            t = clock()
                            query(i)
                            out[i] = clock() - t
                if gc_was_enabled:
                    gc.enable()
            for s in ready:
                p50, p99 = np.percentile(lat[s.key], [50, 99]) / 1e6
                timing[s.key].p50.append(float(p50))
                timing[s.key].p99.append(float(p99))
    finally:
        if gc_was_enabled:
            gc.enable()
    return timing


def build_systems(
    chosen: Sequence[peers.System], wl: peers.Workload, shared: peers.Shared
) -> tuple[list[peers.System], list[dict[str, Any]]]:
    """Step 2: build every system; (the ready ones, the skipped ones with their reason)."""
    ready: list[peers.System] = []
    skipped: list[dict[str, Any]] = []
    for s in chosen:
        try:
            s.build(wl, shared)
        except peers.Skipped as exc:
            skipped.append({"key": s.key, "reason": str(exc)})
            _log(f"skip {s.key}: {exc}")
            continue
        except Exception as exc:  # a broken peer must not sink the whole comparison
            traceback.print_exc(file=sys.stderr)
            skipped.append({"key": s.key, "reason": f"build failed: {type(exc).__name__}: {exc}"})
            continue
        ready.append(s)
    return ready, skipped


def _run_size(
    n: int,
    dim: int,
    *,
    systems: Sequence[str] | None,
    repeats: int,
    seed: int,
    n_queries: int,
    window: float,
    k: int,
    threads: int,
    show_progress: bool,
    vectors: str = "clustered",
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Steps 1-6 at one size: (rows by system key, skipped systems, inserts by index)."""
    chosen = peers.make_systems(systems)
    t0 = time.perf_counter()
    _log(f"dataset: n={n}, dim={dim}, queries={n_queries}, seed={seed} ...")
    ds = make_dataset(n, dim, seed=seed, n_queries=n_queries)
    if vectors != "clustered":
        _log(f"embedding {n} texts and {n_queries} queries with {vectors} (cached on disk) ...")
        ds = with_model_vectors(ds, vectors)
    windows = [time_window(ds.timestamps, window, seed=seed * 1_000_003 + i) for i in range(n_queries)]
    _log(f"dataset ready in {time.perf_counter() - t0:.1f}s")
    wl = peers.Workload(
        ds=ds, k=k, windows=windows, window_fraction=window, show_progress=show_progress, threads=threads
    )
    with peers.Shared() as shared:
        ready, skipped = build_systems(chosen, wl, shared)
        if not ready:
            raise RuntimeError("no system could be built: " + "; ".join(f"{s['key']}: {s['reason']}" for s in skipped))

        # Untimed pass: answers for recall, query plans, warm caches (and JITs).
        answers: dict[str, list[list[int]]] = {}
        plans: dict[str, dict[str, int]] = {}
        for s in list(ready):
            try:
                answers[s.key] = [
                    [int(x) for x in s.query(i)]
                    for i in peers.progress(
                        range(n_queries), total=n_queries, desc=f"warm-up {s.key}", enabled=show_progress
                    )
                ]
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                skipped.append({"key": s.key, "reason": f"query failed: {type(exc).__name__}: {exc}"})
                ready.remove(s)
                continue
            counts: dict[str, int] = {}
            for i in range(n_queries):
                p = s.plan(i)
                if p is not None:
                    counts[p] = counts.get(p, 0) + 1
            if counts:
                plans[s.key] = counts

        timing = time_rounds(
            ready, n_queries, repeats, show_progress=show_progress, desc=f"timing rounds (n={n})", block=BLOCK
        )
        tallies = _evaluate(ds, windows, wl.doc_tokens(), ready, answers, k, show_progress)
        inserts = peers.single_inserts(shared, wl, SINGLE_INSERTS)

        rows: dict[str, dict[str, Any]] = {}
        for s in ready:
            tl = tallies[s.key]
            rows[s.key] = {
                "key": s.key,
                "system": s.label,
                "case": s.case_label(window),
                "n": n,
                "dim": dim,
                "p50_ms": float(np.median(timing[s.key].p50)),
                "p99_ms": float(np.median(timing[s.key].p99)),
                "recall_at_10": tl.recall,
                "build_s": s.build_s,
                "short_results": tl.short_share,
                "build_rss_mb": s.rss_mb,
                "rounds_p50_ms": timing[s.key].p50,
                "rounds_p99_ms": timing[s.key].p99,
                "plans": plans.get(s.key),
                "note": s.note,
            }
    for sk in skipped:
        sk["n"] = n
    for _name, v in inserts.items():
        v["n"] = n
    return rows, skipped, inserts


def run(
    n: int | None = None,
    dim: int | None = None,
    *,
    quick: bool = False,
    systems: Sequence[str] | None = None,
    repeats: int | None = None,
    seed: int = 0,
    json_path: str | os.PathLike[str] | None = None,
    n_queries: int | None = None,
    window: float = 0.1,
    k: int = K,
    threads: int = 0,
    allow_debug: bool = False,
    show_progress: bool = True,
    out: TextIO | None = None,
    scale: Sequence[int] | None = None,
    plot_path: str | os.PathLike[str] | None = None,
    vectors: str = "clustered",
) -> dict[str, Any]:
    """Build, time and judge every selected system; print markdown; return the report dict.

    ``None`` for ``n``/``dim``/``n_queries``/``repeats`` means the ``--quick`` preset
    (:data:`QUICK`) when ``quick`` else :data:`FULL`. ``scale`` (several record counts) runs
    the whole comparison at each size instead of at ``n``. ``plot_path`` also draws a PNG
    (needs matplotlib; checked before anything runs). ``vectors="minilm"`` replaces the
    seeded clustered vectors with MiniLM embeddings of the texts and queries (384-d; cached on
    disk). Raises :class:`DebugBuildError` on a debug build of the engine unless ``allow_debug``.
    """
    if not allow_debug:
        check_release()
    if plot_path is not None:
        from trimem.bench import plot

        plot.require_matplotlib()
    preset = QUICK if quick else FULL
    n = preset["n"] if n is None else int(n)
    dim = preset["dim"] if dim is None else int(dim)
    n_queries = preset["queries"] if n_queries is None else int(n_queries)
    repeats = preset["repeats"] if repeats is None else int(repeats)
    if vectors not in ("clustered", "minilm"):
        raise ValueError(f"vectors must be 'clustered' or 'minilm', got {vectors!r}")
    if vectors == "minilm":
        if dim not in (preset["dim"], 384):
            raise ValueError("--vectors minilm gives 384-d vectors; leave --dim out or set it to 384")
        dim = 384
    sizes = sorted({int(x) for x in scale}) if scale else [n]
    if min(sizes) < k or dim < 1 or n_queries < 1 or repeats < 1:
        raise ValueError("need n >= k, dim >= 1, queries >= 1 and repeats >= 1")
    if not 0.0 < window <= 1.0:
        raise ValueError("window must be a fraction in (0, 1]")
    out = sys.stdout if out is None else out
    peers.make_systems(systems)  # unknown names fail before any work
    pct = f"{window:.0%}"

    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    ratios_by_n: dict[str, dict[str, Any]] = {}
    skipped: list[dict[str, Any]] = []
    inserts: list[dict[str, Any]] = []
    for j, size in enumerate(sizes, 1):
        if len(sizes) > 1:
            _log(f"== size {j}/{len(sizes)}: n={size}")
        rows, sk, ins = _run_size(
            size,
            dim,
            systems=systems,
            repeats=repeats,
            seed=seed,
            n_queries=n_queries,
            window=window,
            k=k,
            threads=threads,
            show_progress=show_progress,
            vectors=vectors,
        )
        results += rows.values()
        inserts += [{"index": name, **v} for name, v in ins.items()]
        ratios_by_n[str(size)] = _ratios(rows, pct)
        skipped += sk
        gc.collect()
    report = {
        "machine": machine_info(),
        "versions": versions(),
        "config": {
            "n": sizes[-1],
            "dim": dim,
            "queries": n_queries,
            "repeats": repeats,
            "seed": seed,
            "k": k,
            "window": window,
            "quick": quick,
            "scale": sizes if scale else None,
            "vectors": vectors,
        },
        "results": results,
        "ratios": ratios_by_n[str(sizes[-1])],
        "ratios_by_n": ratios_by_n,
        "inserts": inserts,
        "skipped": skipped,
        "elapsed_s": time.perf_counter() - t0,
    }
    print(markdown(report), file=out, flush=True)
    if json_path is not None:
        path = Path(json_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        _log(f"wrote {path}")
    if plot_path is not None:
        from trimem.bench import plot

        _log(f"wrote {plot.plot(report, plot_path)}")
    return report
