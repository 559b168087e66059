"""LoCoMo through the product path: what an agent gets from :class:`trimem.Memory`
(``python -m trimem eval locomo --path product``).

:mod:`trimem.bench.evaluate` measures the engine (:class:`trimem.HybridIndex` with settings tuned
for LoCoMo). This module measures what a user of the library gets with the defaults, because that
is what an agent sees (DESIGN.md §9: "what users get is what we measure"):

* one in-process ``Memory(embedder=...)`` per conversation (``"auto"`` by default: MiniLM when the
  ``minilm`` extra is installed);
* every turn retained **one call at a time, in order**, as an agent would:
  ``mem.retain("<speaker>: <text>[ [shares a photo of …]]", user_id=<conversation id>,
  session_id="session_<n>", timestamp=<session time>, metadata={"dia_id": ...})`` — the turn text
  of the engine path without its date (:func:`trimem.bench.evaluate.turn_text`);
* then each question once: ``mem.recall(question, user_id=<conversation>, k=50, now=<last session
  + 1 day>)`` with every other option at its default (query rewriting, floors, facts,
  reinforcement: a recall counts what it returns as used, so later questions see earlier ones'
  touches, as in a live agent).

Three rows come from the same run over the same turn texts:

``Memory.recall``
    the product path above; the ranked list is ``bundle.episodes`` in order.
``bm25s``
    a plain BM25 baseline: one ``bm25s`` index per conversation (k1 = 0.9, b = 0.4, Lucene's
    formula, English Snowball stemming via PyStemmer, bm25s' English stop words); only documents
    with a positive score are ranked.
``Memory.search``
    ``mem.search(question, user_id=<conversation>, k=50)``: the raw question, no rewriting, no
    time range. All searches of a conversation run before its first recall (a search does not
    touch), so this row sees the memory as retained.

Metric: evidence recall@1/5/10/25/50 per category and overall, the same metric and the same 1,982
questions as the engine path (:func:`trimem.bench.evaluate.load_locomo`). A returned episode is
mapped back to turns through what the library gives back: its ``metadata["dia_id"]`` and those of
the near-duplicate turns merged into it (``mem.mentions(id)``); an evidence turn counts as found
at the rank of the episode that carries it, so @k always means "among the first k episodes the
user was given". Besides recall, the report says how many episodes came back per question (mean
and share of questions with fewer than k: floors cut the list), how many questions the rewriter
gave a time range, how many episodes came through a fact, and the share of top-10 evidence hits
the bundle labels weak (None while :class:`trimem.records.RecalledEpisode` has no such label; see
:func:`weak_label`).

Embeddings: the real embedder is called through ``Memory``. With a cache folder (the default of the
CLI; ``--no-cache`` turns it off and passes the embedder's name to ``Memory`` as a user would),
``Memory`` gets a :class:`CachedEmbedder`: on a miss it calls the real embedder with the very
texts ``Memory`` passed, and it caches only single-text calls (which is how ``retain`` and
``recall`` call it here), so a rerun replays the exact bytes a single-text call returned. Its cache
file is not the engine path's, whose vectors come from batched calls.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from trimem._embed.base import DECLARED
from trimem.bench.embedding_cache import EmbeddingCache
from trimem.bench.evaluate import (
    CATEGORIES,
    LOCOMO_KS,
    OVERALL,
    OVERALL_1_4,
    TUNING_CONVERSATIONS,
    Conversation,
    _progress,
    _recall_row,
    load_locomo,
    normalise_evidence,
    turn_id,
    turn_text,
)
from trimem.bench.meter import Meter

__all__ = [
    "BM25S_PARAMS",
    "ROWS",
    "CachedEmbedder",
    "K",
    "Ranking",
    "evaluate_locomo_product",
    "format_product_table",
    "product_embedder",
    "product_summary",
    "retained_text",
    "weak_label",
]

K = 50  # episodes asked of each recall and search; recall@1..25 read from its prefix
ROWS = {
    "recall": "Memory.recall",
    "bm25s": "bm25s",
    "search": "Memory.search",
}
BM25S_PARAMS: Mapping[str, Any] = {"k1": 0.9, "b": 0.4, "method": "lucene"}
Ranking = list[tuple[int, ...]]  # per rank, the turn ids that item carries
Vectors = npt.NDArray[np.float32]
MemoryFactory = Callable[[Any], Any]  # embedder → a fresh Memory


# ============================================================================ embedder


class _OneCall:
    """The real embedder under a name of its own, so its single-call cache has its own file."""

    batch_size = 1

    def __init__(self, inner: Any, *, query: bool = False) -> None:
        self.call = inner.query if query else inner
        self.name = f"{inner.name}-{'query-' if query else ''}single-call"
        self.dim = int(inner.dim)

    def __call__(self, texts: list[str]) -> Vectors:
        return np.asarray(self.call(texts), dtype=np.float32)


class CachedEmbedder:
    """The real embedder as ``Memory`` sees it (same ``name`` and ``dim``), with the vectors of
    single-text calls cached on disk; a call of several texts goes straight to the embedder.

    On a miss the real embedder is called with the one text ``Memory`` passed, so a cached vector
    is byte for byte what that call returned (for a deterministic embedder). ``calls`` counts the
    calls ``Memory`` made, ``embedded`` the texts the real embedder saw."""

    def __init__(
        self, inner: Any, directory: Path, *, progress: TextIO | None = None, batch_cache: bool = False
    ) -> None:
        self.inner = inner
        self.name = str(inner.name)
        self.dim = int(inner.dim)
        for declared in DECLARED:  # what the memory reads of the embedder
            setattr(self, declared, getattr(inner, declared, None))
        self.calls = 0
        self.embedded = 0
        self._cache = EmbeddingCache(_OneCall(inner), directory, progress=progress)
        has_query = callable(getattr(inner, "query", None))  # requests embedded apart, cached apart
        self._query_cache = (
            EmbeddingCache(_OneCall(inner, query=True), directory, progress=progress) if has_query else None
        )
        # many-text calls (a bulk preload) through the engine path's cache file, when asked
        self._batch_cache = EmbeddingCache(inner, directory, progress=progress) if batch_cache else None

    def __call__(self, texts: Sequence[str]) -> Vectors:
        return self._cached(self._cache, texts)

    def query(self, texts: Sequence[str]) -> Vectors:
        return self._cached(self._query_cache or self._cache, texts)

    def _cached(self, cache: EmbeddingCache, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        items = list(texts)
        if len(items) != 1:
            if self._batch_cache is not None and cache is self._cache:
                return self._batch_cache(items)
            self.embedded += len(items)
            return np.asarray(cache.embedder(items), dtype=np.float32)
        before = len(cache._rows)
        out = cache(items)
        self.embedded += len(cache._rows) - before
        return out


def product_embedder(
    spec: str | None, cache_dir: Path | None, progress: TextIO | None = None, *, batch_cache: bool = False
) -> Any:
    """What ``Memory(embedder=...)`` gets: the spec itself without a cache folder (the literal
    product path), else the resolved embedder in a :class:`CachedEmbedder`."""
    if spec is None or cache_dir is None:
        return spec
    from trimem.embedders import resolve_embedder

    inner = resolve_embedder(spec)
    return None if inner is None else CachedEmbedder(inner, cache_dir, progress=progress, batch_cache=batch_cache)


def _embedder_name(spec: Any) -> str | None:
    if spec is None:
        return None
    if isinstance(spec, str):
        from trimem.embedders import resolve_embedder

        resolved = resolve_embedder(spec)
        return None if resolved is None else str(resolved.name)
    return str(spec.name)


# ============================================================================ labels and ranks


def weak_label(recalled: Any) -> bool | None:
    """Whether the library labels a recalled episode a weak match; None when it has no such
    label. Reads a boolean ``weak`` on the item or its ``scored``, a string ``match`` or
    ``strength`` (``"weak"``), or ``explain["weak"]`` — whichever the library settles on."""
    for obj in (recalled, getattr(recalled, "scored", None)):
        flag = getattr(obj, "weak", None)
        if isinstance(flag, bool):
            return flag
        for attr in ("match", "strength"):
            label = getattr(obj, attr, None)
            if isinstance(label, str):
                return label.lower() == "weak"
    explain = getattr(recalled, "explain", None)
    if isinstance(explain, Mapping) and isinstance(explain.get("weak"), bool):
        return bool(explain["weak"])
    return None


def retained_text(turn: Mapping[str, Any]) -> str:
    """What the product path retains of a turn: ``"<speaker>: <text>"`` and any image caption."""
    return turn_text(turn, None)


def _turn_of(metadata: Mapping[str, Any]) -> int | None:
    pairs = normalise_evidence([str(metadata.get("dia_id", ""))])
    return turn_id(*pairs[0]) if pairs else None


def _evidence_ranks(ranking: Ranking, evidence: Iterable[int]) -> dict[int, int]:
    """0-based rank of the first item carrying each evidence turn that is in `ranking`."""
    wanted = set(evidence)
    found: dict[int, int] = {}
    for rank, turns in enumerate(ranking):
        for t in turns:
            if t in wanted and t not in found:
                found[t] = rank
    return found


def _recalls(ranks: Mapping[int, int], evidence: Sequence[int]) -> npt.NDArray[np.float64]:
    return np.array([sum(ranks.get(e, K) < k for e in evidence) / len(evidence) for k in LOCOMO_KS])


class _Episodes:
    """Maps returned episodes to turn ids through their metadata and mentions (memoised)."""

    def __init__(self, mem: Any) -> None:
        self.mem = mem
        self.lost = 0  # episodes whose metadata came back without a usable dia_id
        self._memo: dict[int, tuple[int, ...]] = {}

    def ranking(self, recalled: Sequence[Any]) -> Ranking:
        return [self.turns(r.episode) for r in recalled]

    def turns(self, episode: Any) -> tuple[int, ...]:
        got = self._memo.get(episode.id)
        if got is None:
            own = _turn_of(episode.metadata)
            self.lost += own is None
            merged = [_turn_of(m.metadata) for m in self.mem.mentions(episode.id)]
            got = tuple(t for t in (own, *merged) if t is not None)
            self._memo[episode.id] = got
        return got


def _bm25s() -> tuple[Any, Any]:
    try:
        bm25s = importlib.import_module("bm25s")
        stemmer = importlib.import_module("Stemmer").Stemmer("english")
    except ImportError as exc:
        raise ImportError(
            f"the bm25s baseline needs bm25s and PyStemmer ({exc}): pip install 'trimem[bench]'"
        ) from None
    return bm25s, stemmer


class _BM25S:
    """One bm25s index over a conversation's turn texts (see the module docstring)."""

    def __init__(self, texts: Sequence[str], ids: Sequence[int]) -> None:
        self._bm25s, self._stemmer = _bm25s()
        self._ids = list(ids)
        self._retriever = self._bm25s.BM25(**BM25S_PARAMS)
        self._retriever.index(self._tokens(texts), show_progress=False)

    def _tokens(self, texts: Sequence[str]) -> list[list[str]]:
        out = self._bm25s.tokenize(
            list(texts), stopwords="en", stemmer=self._stemmer, return_ids=False, show_progress=False
        )
        return [list(t) for t in out]

    def __call__(self, question: str, k: int) -> Ranking:
        tokens = self._tokens([question])[0]
        if not tokens:
            return []
        docs, scores = self._retriever.retrieve([tokens], k=min(k, len(self._ids)), show_progress=False)
        return [(self._ids[int(d)],) for d, s in zip(docs[0], scores[0]) if s > 0]


# ============================================================================ the run


class _Tally:
    """Summed recall@k per row and category, and the per-question extras."""

    def __init__(self) -> None:
        self.sums: dict[str, dict[int, npt.NDArray[np.float64]]] = {row: {} for row in ROWS}
        self.counts: dict[int, int] = {}
        self.returned: dict[str, list[int]] = {"recall": [], "search": []}
        self.weak_hits = 0
        self.labelled_hits = 0
        self.unlabelled_hits = 0
        self.time_filtered = 0
        self.via_fact = 0
        self.ms: dict[str, list[float]] = {"retain": [], "recall": [], "search": []}
        self.errors: dict[str, int] = {"recall": 0, "search": 0}
        self.error_messages: dict[str, None] = {}

    def guard(self, row: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`call(*args, **kwargs)`, timed; None when the library raised (counted, and the question scores 0 on
        that row: a crash is a result worth reporting, not a reason to lose the run)."""
        t0 = time.perf_counter()
        try:
            out = call(*args, **kwargs)
        except Exception as exc:
            self.errors[row] += 1
            self.error_messages.setdefault(f"{ROWS[row]}: {type(exc).__name__}: {exc}", None)
            return None
        self.ms[row].append((time.perf_counter() - t0) * 1e3)
        return out

    def add(self, row: str, category: int, rec: npt.NDArray[np.float64]) -> None:
        acc = self.sums[row].setdefault(category, np.zeros(len(LOCOMO_KS)))
        acc += rec

    def table(self, row: str) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for cat, name in CATEGORIES.items():
            if cat in self.counts:
                out[name] = _recall_row(self.sums[row][cat], self.counts[cat])
        for label, cats in ((OVERALL, list(CATEGORIES)), (OVERALL_1_4, [1, 2, 3, 4])):
            n = sum(self.counts.get(c, 0) for c in cats)
            if n:
                total = sum((self.sums[row][c] for c in cats if c in self.counts), np.zeros(len(LOCOMO_KS)))
                out[label] = _recall_row(total, n)
        return out


def _retain_all(mem: Any, conv: Conversation, tally: _Tally, progress: TextIO | None) -> tuple[list[str], int]:
    """Retains the conversation's turns one call each, in order; returns the texts and how many
    merged into an earlier episode (near-duplicates)."""
    texts: list[str] = []
    merged = 0
    with Meter(progress, f"{conv.sample_id}: retaining turns", len(conv.turns), "turns") as meter:
        for (when, turn), tid in zip(conv.turns, conv.ids):
            text = retained_text(turn)
            t0 = time.perf_counter()
            ep = mem.retain(
                text,
                user_id=conv.sample_id,
                session_id=f"session_{tid // turn_id(1, 0)}",  # a turn id is session * base + turn
                timestamp=when,
                metadata={"dia_id": str(turn["dia_id"])},
            )
            tally.ms["retain"].append((time.perf_counter() - t0) * 1e3)
            merged += ep.mention is not None
            texts.append(text)
            meter.update()
    return texts, merged


def _conversation(
    conv: Conversation, mem: Any, tally: _Tally, progress: TextIO | None
) -> tuple[dict[str, float], dict[str, int], list[dict[str, Any]]]:
    """One conversation's three rows; returns its recall@10 per row, its counts and the
    per-question evidence ranks."""
    texts, merged = _retain_all(mem, conv, tally, progress)
    bm25 = _BM25S(texts, conv.ids)
    episodes = _Episodes(mem)
    now = conv.now + timedelta(days=1)
    r10: dict[str, list[float]] = {row: [] for row in ROWS}
    per_question: list[dict[str, Any]] = []
    searched: list[Ranking] = []
    with Meter(progress, f"{conv.sample_id}: Memory.search", len(conv.questions), "questions") as meter:
        for q in conv.questions:
            hits = tally.guard("search", mem.search, q.question, user_id=conv.sample_id, k=K)
            if hits is not None:
                tally.returned["search"].append(len(hits))
            searched.append([] if hits is None else episodes.ranking(hits))
            meter.update()
    with Meter(progress, f"{conv.sample_id}: Memory.recall", len(conv.questions), "questions") as meter:
        for q, search_ranking in zip(conv.questions, searched):
            bundle = tally.guard("recall", mem.recall, q.question, user_id=conv.sample_id, k=K, now=now)
            recalled = [] if bundle is None else bundle.episodes
            if bundle is not None:
                tally.returned["recall"].append(len(recalled))
                tally.time_filtered += bundle.intent.time_range is not None
                tally.via_fact += sum(r.via_fact is not None for r in recalled)
            tally.counts[q.category] = tally.counts.get(q.category, 0) + 1
            rankings = {
                "recall": episodes.ranking(recalled),
                "bm25s": bm25(q.question, K),
                "search": search_ranking,
            }
            ranks = {row: _evidence_ranks(r, q.evidence) for row, r in rankings.items()}
            for row, found in ranks.items():
                rec = _recalls(found, q.evidence)
                tally.add(row, q.category, rec)
                r10[row].append(float(rec[LOCOMO_KS.index(10)]))
            for rank in ranks["recall"].values():
                if rank < 10:
                    label = weak_label(recalled[rank])
                    if label is None:
                        tally.unlabelled_hits += 1
                    else:
                        tally.labelled_hits += 1
                        tally.weak_hits += label
            per_question.append(
                {
                    "conversation": conv.sample_id,
                    "question": q.question,
                    "category": q.category,
                    "evidence": len(q.evidence),
                    "returned": len(recalled),
                    "time_range": bundle is not None and bundle.intent.time_range is not None,
                    "error": bundle is None,
                    "ranks": {row: sorted(found.values()) for row, found in ranks.items()},
                }
            )
            meter.update()
    counts = {"turns": len(conv.turns), "merged": merged, "metadata_lost": episodes.lost}
    return {row: float(np.mean(v)) if v else 0.0 for row, v in r10.items()}, counts, per_question


def _new_memory(embedder: Any) -> Any:
    from trimem import Memory

    return Memory(embedder=embedder)


def evaluate_locomo_product(
    path: str | Path,
    *,
    embedder: str | None = "auto",
    conversations: Sequence[str] | None = None,
    cache_dir: Path | None = None,
    progress: TextIO | None = sys.stderr,
    memory_factory: MemoryFactory | None = None,
) -> dict[str, Any]:
    """Evidence recall@k of ``Memory.recall``, bm25s and ``Memory.search`` on LoCoMo, with what
    came back per question (see the module docstring). `memory_factory(embedder)` makes each
    conversation's memory (default ``trimem.Memory(embedder=embedder)``)."""
    say = _progress(progress)
    t0 = time.perf_counter()
    convs = load_locomo(path, conversations)
    _bm25s()  # fail before the first retain when the baseline cannot run
    emb = product_embedder(embedder, cache_dir, progress)
    name = _embedder_name(emb)
    say(f"locomo product path: {len(convs)} conversations; Memory(embedder={name!r}), one retain per turn")
    tally = _Tally()
    per_conv: dict[str, dict[str, float]] = {}
    totals = {"turns": 0, "merged": 0, "metadata_lost": 0}
    per_question: list[dict[str, Any]] = []
    for ci, conv in enumerate(convs, 1):
        tc = time.perf_counter()
        mem = (memory_factory or _new_memory)(emb)
        try:
            per_conv[conv.sample_id], counts, questions = _conversation(conv, mem, tally, progress)
        finally:
            close = getattr(mem, "close", None)
            if callable(close):
                close()
        per_question += questions
        for key, n in counts.items():
            totals[key] += n
        say(
            f"[{ci}/{len(convs)}] {conv.sample_id}: {counts['turns']} turns retained ({counts['merged']} merged), "
            f"{len(conv.questions)} questions answered, "
            + ", ".join(f"{ROWS[row]} R@10={v:.3f}" for row, v in per_conv[conv.sample_id].items())
            + f" ({time.perf_counter() - tc:.1f}s)"
        )
    n_questions = sum(tally.counts.values())
    hits = tally.labelled_hits + tally.unlabelled_hits
    return {
        "dataset": "locomo",
        "path": "product",
        "data": str(path),
        "embedder": name,
        "embedder_cached": isinstance(emb, CachedEmbedder),
        "rows": dict(ROWS),
        "bm25s": dict(BM25S_PARAMS, stemmer="english (PyStemmer)", stopwords="en"),
        "categories": {str(k): v for k, v in CATEGORIES.items()},
        "conversations": [c.sample_id for c in convs],
        "tuning_conversations": list(TUNING_CONVERSATIONS),
        "questions": n_questions,
        "questions_unresolved": sum(c.unresolved for c in convs),
        "questions_time_filtered": tally.time_filtered,
        "episodes_via_fact": tally.via_fact,
        **totals,
        "k": K,
        "ks": list(LOCOMO_KS),
        "results": {row: tally.table(row) for row in ROWS},
        "returned": {
            row: {
                "mean": float(np.mean(v)) if v else 0.0,
                "short_share": float(np.mean([n < K for n in v])) if v else 0.0,
            }
            for row, v in tally.returned.items()
        },
        # Share of the top-10 evidence hits of Memory.recall the bundle labels weak; None when the
        # library has no label on any of them (yet).
        "weak_share_top10": tally.weak_hits / tally.labelled_hits if tally.labelled_hits else None,
        "top10_evidence_hits": hits,
        "errors": dict(tally.errors),
        "error_messages": list(tally.error_messages),
        "timings_ms": {f"{step}_mean": float(np.mean(v)) if v else 0.0 for step, v in tally.ms.items()},
        "recall@10_by_conversation": per_conv,
        "per_question": per_question,
        "wall_s": round(time.perf_counter() - t0, 2),
    }


# ============================================================================ reporting


def format_product_table(report: Mapping[str, Any]) -> str:
    """Markdown: one row per path and category, recall@k as fractions, then what came back."""
    ks = report["ks"]
    lines = ["| path | category | questions | " + " | ".join(f"R@{k}" for k in ks) + " |"]
    lines.append("|" + "---|" * (3 + len(ks)))
    for row, table in report["results"].items():
        for cat, cells in table.items():
            label = f"**{cat}**" if cat == OVERALL else cat
            values = " | ".join(f"{cells[f'recall@{k}']:.3f}" for k in ks)
            lines.append(f"| {ROWS.get(row, row)} | {label} | {int(cells['n'])} | {values} |")
    lines.append("")
    k = report["k"]
    for row, got in report["returned"].items():
        lines.append(
            f"{ROWS.get(row, row)}: {got['mean']:.1f} episodes per question on average; "
            f"{got['short_share']:.1%} of questions got fewer than k={k}"
        )
    weak = report["weak_share_top10"]
    lines.append(
        "top-10 evidence hits of Memory.recall labelled weak: "
        + ("n/a (RecalledEpisode has no weak label)" if weak is None else f"{weak:.1%}")
        + f" of {report['top10_evidence_hits']}"
    )
    lines.append(
        f"{report['questions_time_filtered']} of {report['questions']} questions got a time range from the "
        f"rewriter; {report['episodes_via_fact']} episodes came through a fact; {report['merged']} of "
        f"{report['turns']} turns merged into an earlier episode; {report['metadata_lost']} returned episodes "
        "without their dia_id"
    )
    errors = report.get("errors", {})
    if any(errors.values()):
        lines.append(
            "library errors (the question scores 0 on that row): "
            + ", ".join(f"{ROWS.get(row, row)} {n}" for row, n in errors.items())
        )
        lines += [f"  {m}" for m in report.get("error_messages", [])[:5]]
    return "\n".join(lines)


def product_summary(report: Mapping[str, Any]) -> str:
    ms = report["timings_ms"]
    cached = " (single-call vectors cached on disk)" if report["embedder_cached"] else ""
    return (
        f"locomo product path: embedder {report['embedder']}{cached}, wall {report['wall_s']:.1f}s; "
        f"mean retain {ms['retain_mean']:.2f} ms, recall {ms['recall_mean']:.2f} ms, search {ms['search_mean']:.2f} ms; "
        f"bm25s k1={BM25S_PARAMS['k1']} b={BM25S_PARAMS['b']} {BM25S_PARAMS['method']}, English stemmer and stop words"
    )
