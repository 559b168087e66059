"""Thin, same-shaped adapters around trimem and its peers for :mod:`trimem.bench.compare`.

Every system has ``build(workload, shared)`` (once) and ``query(i)`` (one query per call, from
Python, returning the top-``k`` record ids best first), so the timing loop is identical for all.
Query inputs (text, vector, time window) are prepared at build time; everything a user would have
to do per query (tokenising, building a filter mask or callback, fusing) happens inside ``query``.

Systems that share an index (all trimem rows use one ``HybridIndex``; the hand-assembled hybrids
reuse the hnswlib and bm25s indexes) build it once through :class:`Shared`; their ``build_s`` is
the time of the shared build(s) they use.

A system whose package is missing raises :class:`Skipped` from ``build`` with the reason, so the
comparison records it as skipped instead of failing.

Fairness notes:

- Vector indexes all use M=16, ef_construction=200, ef=64, cosine, all threads for building and one
  thread per query.
- bm25s is fed trimem's own tokens (``trimem.tokenize``, duplicates removed from the query as the
  engine does), so its Lucene BM25 scores equal trimem's; the single-query path is the public
  ``get_scores`` + ``argpartition`` (``retrieve`` adds per-call overhead for batching and tqdm).
- tantivy uses its default tokenizer (it cannot take ours without pre-tokenised documents) and
  a boolean OR of term queries built from its own analyser, i.e. plain BM25 over the query terms.
- The hand-assembled hybrids take the top 50 from each leg, as trimem's default window for k=10.
- LanceDB (when ``lancedb`` is installed) runs from a temporary folder (it has no in-RAM mode),
  with an HNSW index (IVF_HNSW_FLAT, one partition, M=16, ef_construction=200, cosine, ef=64),
  a native FTS index (simple tokenizer, lowercase, no stemming, stop words or ASCII folding: the
  closest to trimem's tokens it offers) and a BTree index on the timestamp. Its hybrid is its own
  ``query_type="hybrid"`` with ``RRFReranker(K=60)`` and legs of 50 (``limit(50)``, first k
  kept); the windowed case adds ``where("ts >= lo AND ts < hi", prefilter=True)``. LanceDB runs
  the two legs on a thread pool and its engine on its own runtime threads; that is how a user
  calls it, so it is timed that way.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

import trimem
from trimem.bench.base import (
    LEG,
    RRF_K,
    Shared,
    Skipped,
    System,
    Workload,
    _require,
    progress,
    rrf,
)

__all__ = [
    "LEG",
    "RRF_K",
    "SYSTEMS",
    "Shared",
    "Skipped",
    "System",
    "Workload",
    "hnswlib_index",
    "make_systems",
    "progress",
    "rrf",
    "single_inserts",
    "trimem_index",
]

# Peer parameters shared with trimem (DESIGN.md §6).
M, EF_CONSTRUCTION, EF = 16, 200, 64
_ADD_CHUNK = 10_000


def trimem_index(wl: Workload, index_class: Any = None) -> Any:
    """The benchmark's trimem index of ``wl.ds`` (M, efC and batches as for every peer);
    ``index_class`` is another build's ``HybridIndex`` (``benches/ab_builds.py``)."""
    ds = wl.ds
    idx = (index_class or trimem.HybridIndex)(
        ds.dim, metric="cosine", m=M, ef_construction=EF_CONSTRUCTION, threads=wl.threads
    )
    n = len(ds)
    for a in progress(
        range(0, n, _ADD_CHUNK), total=-(-n // _ADD_CHUNK), desc=f"build trimem ({n} records)", enabled=wl.show_progress
    ):
        b = min(a + _ADD_CHUNK, n)
        idx.add(
            ids=ds.ids[a:b],
            texts=ds.texts[a:b],
            timestamps=ds.timestamps[a:b],
            namespaces=ds.namespaces[a:b],
            vectors=ds.vectors[a:b],
        )
    return idx


def hnswlib_index(wl: Workload) -> Any:
    """The benchmark's hnswlib index of ``wl.ds``."""
    hnswlib = _require("hnswlib")
    ds = wl.ds
    n = len(ds)
    index = hnswlib.Index(space="cosine", dim=ds.dim)
    index.init_index(max_elements=n, M=M, ef_construction=EF_CONSTRUCTION, random_seed=ds.seed)
    threads = wl.threads if wl.threads > 0 else -1
    for a in progress(
        range(0, n, _ADD_CHUNK),
        total=-(-n // _ADD_CHUNK),
        desc=f"build hnswlib ({n} vectors)",
        enabled=wl.show_progress,
    ):
        b = min(a + _ADD_CHUNK, n)
        index.add_items(ds.vectors[a:b], ds.ids[a:b], num_threads=threads)
    index.set_ef(EF)
    return index


def _bm25s_index(wl: Workload, backend: str) -> Any:
    bm25s = _require("bm25s")
    if backend == "numba" and importlib.util.find_spec("numba") is None:
        raise Skipped("numba not importable (bm25s numba backend)")
    tokens = wl.doc_tokens()
    if wl.show_progress:
        print(f"build bm25s ({backend}) ...", file=sys.stderr, flush=True)
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75, backend=backend)
    retriever.index(tokens, show_progress=False)
    if backend == "numba":
        # retrieve() is the numba backend's fast path; compile it now, not in the first query.
        retriever.retrieve([tokens[0]], k=1, show_progress=False, n_threads=1)
    return retriever


def _tantivy_index(wl: Workload) -> Any:
    tantivy = _require("tantivy")
    ds = wl.ds
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("text", stored=False)
    sb.add_unsigned_field("id", fast=True)
    schema = sb.build()
    index = tantivy.Index(schema)  # no path: in RAM
    writer = index.writer(heap_size=256_000_000, num_threads=wl.threads)
    Document = tantivy.Document
    for i, text in progress(
        zip(ds.ids.tolist(), ds.texts), total=len(ds), desc=f"build tantivy ({len(ds)} docs)", enabled=wl.show_progress
    ):
        doc = Document()
        doc.add_text("text", text)
        doc.add_unsigned("id", i)
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, schema


def _import_lancedb() -> Any:
    # LanceDB's Rust logger prints a deprecation warning per query when the selected columns
    # omit `_distance`/`_score` (its hybrid query cannot select them per leg); keep errors only
    # unless the caller chose a level. Read once, when the extension initialises its logger.
    os.environ.setdefault("LANCEDB_LOG", "error")
    return _require("lancedb")


def _lancedb_table(wl: Workload, shared: Shared) -> Any:
    lancedb = _import_lancedb()
    pa = _require("pyarrow", "pyarrow (LanceDB)")
    try:
        from lancedb.index import FTS, BTree, HnswFlat
    except ImportError as exc:
        raise Skipped(
            f"lancedb {getattr(lancedb, '__version__', '?')} lacks FTS/HnswFlat "
            f"index configs ({exc}); install a newer lancedb"
        ) from None
    ds = wl.ds
    folder = tempfile.mkdtemp(prefix="trimem-bench-lancedb-")
    shared.on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
    steps = ["table", "full-text index", "vector index", "timestamp index"]
    table: Any = None
    for step in progress(steps, total=len(steps), desc=f"build lancedb ({len(ds)} rows)", enabled=wl.show_progress):
        if step == "table":
            db = lancedb.connect(folder)
            data = pa.table(
                {
                    "id": pa.array(ds.ids.astype(np.int64)),
                    "text": pa.array(ds.texts, type=pa.string()),
                    "ts": pa.array(ds.timestamps, type=pa.int64()),
                    "vector": pa.FixedSizeListArray.from_arrays(
                        pa.array(np.ascontiguousarray(ds.vectors, dtype=np.float32).ravel()), ds.dim
                    ),
                }
            )
            table = db.create_table("records", data)
        elif step == "full-text index":
            table.create_index(
                "text",
                config=FTS(
                    with_position=False,
                    base_tokenizer="simple",
                    lower_case=True,
                    stem=False,
                    remove_stop_words=False,
                    ascii_folding=False,
                ),
            )
        elif step == "vector index":
            table.create_index(
                "vector",
                config=HnswFlat(distance_type="cosine", num_partitions=1, m=M, ef_construction=EF_CONSTRUCTION),
            )
        else:
            table.create_index("ts", config=BTree())
    return table


def single_inserts(shared: Shared, wl: Workload, count: int) -> dict[str, dict[str, Any]]:
    """Adds ``count`` new records one call at a time to each index that was built (after the
    timing rounds: they change the index) and times each add *until it is searchable*: trimem's
    ``add`` (visible to the next search), hnswlib's ``add_items`` of one vector (capacity grown
    first, untimed), tantivy's ``add_document`` + ``commit`` + ``reload`` (its writes are not
    searchable before). Also the batch rate of the build (records / build seconds) and the
    resident memory the build added. Returns per index: ``batch_per_s``, ``single_p50_ms``,
    ``single_p99_ms``, ``build_rss_mb``."""
    ds = wl.ds
    n = len(ds)
    src = [i % n for i in range(count)]
    # New vectors near existing ones (a record's vector plus noise), unit length.
    rng = np.random.default_rng(ds.seed + 17)
    vecs = ds.vectors[src] + rng.normal(0.0, 0.05, size=(count, ds.dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    vecs = np.ascontiguousarray(vecs, dtype=np.float32)

    def trimem_adder(idx: Any) -> Callable[[int], None]:
        def add(j: int) -> None:
            i = src[j]
            idx.add(
                ids=[n + j],
                texts=[ds.texts[i]],
                timestamps=[int(ds.timestamps[i])],
                namespaces=[ds.namespaces[i]],
                vectors=vecs[j : j + 1],
            )

        return add

    def hnswlib_adder(h: Any) -> Callable[[int], None]:
        h.resize_index(h.get_max_elements() + count)
        return lambda j: h.add_items(vecs[j : j + 1], [n + j], num_threads=1)

    def tantivy_adder(built: tuple[Any, Any]) -> Callable[[int], None]:
        tantivy = _require("tantivy")
        index = built[0]
        writer = index.writer(heap_size=50_000_000, num_threads=1)

        def add(j: int) -> None:
            doc = tantivy.Document()
            doc.add_text("text", ds.texts[src[j]])
            doc.add_unsigned("id", n + j)
            writer.add_document(doc)
            writer.commit()
            index.reload()

        return add

    out: dict[str, dict[str, Any]] = {}
    adders: dict[str, Callable[[Any], Callable[[int], None]]] = {
        "trimem": trimem_adder,
        "hnswlib": hnswlib_adder,
        "tantivy": tantivy_adder,
    }
    for name, make in adders.items():
        b = shared.built(name)
        if b is None:
            continue
        one = make(b.obj)  # set-up (capacity, writer) untimed
        lat = np.empty(count)
        for j in range(count):
            t = time.perf_counter()
            one(j)
            lat[j] = time.perf_counter() - t
        p50, p99 = np.percentile(lat, [50, 99]) * 1e3
        out[name] = {
            "batch_per_s": n / b.build_s if b.build_s > 0 else None,
            "single_p50_ms": float(p50),
            "single_p99_ms": float(p99),
            "build_rss_mb": b.rss_mb,
        }
    return out


# ---- trimem ---------------------------------------------------------------


class _Trimem(System):
    label = "trimem"

    def build(self, wl: Workload, shared: Shared) -> None:
        self.idx = self._use(shared, "trimem", lambda: trimem_index(wl))
        self.search = self.idx.search
        self.k = wl.k
        self.texts = list(wl.ds.query_texts)
        self.vectors = [wl.query_vector(i) for i in range(wl.n_queries)]
        self.windows = list(wl.windows)

    def _hits(self, i: int) -> Any:
        raise NotImplementedError

    def query(self, i: int) -> Any:
        return self._hits(i).ids

    def plan(self, i: int) -> str | None:
        return str(self._hits(i).plan)


class TrimemVector(_Trimem):
    key, kind = "trimem-vector", "vector"

    def _hits(self, i: int) -> Any:
        return self.search(vector=self.vectors[i], k=self.k, mode="vector", ef=EF)


class TrimemVectorWindow(_Trimem):
    key, kind, filtered = "trimem-vector-window", "vector", True

    def _hits(self, i: int) -> Any:
        return self.search(vector=self.vectors[i], k=self.k, mode="vector", ef=EF, time_range=self.windows[i])


class TrimemBm25(_Trimem):
    key, kind = "trimem-bm25", "bm25"

    def _hits(self, i: int) -> Any:
        return self.search(text=self.texts[i], k=self.k, mode="bm25")


class TrimemHybrid(_Trimem):
    key, kind = "trimem-hybrid", "hybrid"

    def _hits(self, i: int) -> Any:
        return self.search(text=self.texts[i], vector=self.vectors[i], k=self.k, ef=EF, rrf_k=RRF_K)


class TrimemHybridWindow(_Trimem):
    key, kind, filtered = "trimem-hybrid-window", "hybrid", True

    def _hits(self, i: int) -> Any:
        return self.search(
            text=self.texts[i], vector=self.vectors[i], k=self.k, ef=EF, rrf_k=RRF_K, time_range=self.windows[i]
        )


# ---- hnswlib --------------------------------------------------------------


class Hnswlib(System):
    key, label, kind = "hnswlib", "hnswlib", "vector"

    def build(self, wl: Workload, shared: Shared) -> None:
        self.index = self._use(shared, "hnswlib", lambda: hnswlib_index(wl))
        self.knn = self.index.knn_query
        self.k = wl.k
        self.vectors = [wl.query_vector(i) for i in range(wl.n_queries)]

    def query(self, i: int) -> Any:
        labels, _ = self.knn(self.vectors[i], k=self.k, num_threads=1)
        return labels[0]


class HnswlibFilter(Hnswlib):
    """hnswlib with the time window checked in its Python ``filter=`` callback."""

    key, label, filtered = "hnswlib-filter", "hnswlib (filter callback)", True

    def build(self, wl: Workload, shared: Shared) -> None:
        super().build(wl, shared)
        self.ts = wl.ds.timestamps.tolist()  # Python ints: the callback reads one per node
        self.windows = list(wl.windows)

    def query(self, i: int) -> Any:
        lo, hi = self.windows[i]
        ts = self.ts
        try:
            labels, _ = self.knn(self.vectors[i], k=self.k, num_threads=1, filter=lambda label: lo <= ts[label] < hi)
        except RuntimeError:  # hnswlib raises when it finds fewer than k allowed points
            return []
        return labels[0]


# ---- bm25s ----------------------------------------------------------------


def _dedup(tokens: list[str]) -> list[str]:
    return list(dict.fromkeys(tokens))


class Bm25s(System):
    key, label, kind = "bm25s", "bm25s (numpy)", "bm25"
    backend = "numpy"

    def build(self, wl: Workload, shared: Shared) -> None:
        _require("bm25s")
        self._use(shared, "tokens", wl.doc_tokens)
        self.retriever = self._use(shared, f"bm25s-{self.backend}", lambda: _bm25s_index(wl, self.backend))
        self.vocab = self.retriever.vocab_dict
        self.scores_of = self.retriever.get_scores_from_ids
        self.k = wl.k
        self.texts = list(wl.ds.query_texts)
        self.tokenize = trimem.tokenize

    def _top(self, text: str, k: int, mask: np.ndarray | None = None) -> list[int]:
        """The fastest honest single-query path: ids -> get_scores_from_ids -> argpartition."""
        vocab = self.vocab
        ids = [vocab[t] for t in _dedup(self.tokenize(text)) if t in vocab]
        if not ids:
            return []
        scores = self.scores_of(ids, weight_mask=mask)
        k = min(k, len(scores))
        part = np.argpartition(scores, -k)[-k:]
        top = part[np.argsort(-scores[part], kind="stable")]
        return [int(i) for i in top[scores[top] > 0]]  # BM25 returns matching documents only

    def query(self, i: int) -> Any:
        return self._top(self.texts[i], self.k)


class Bm25sNumba(Bm25s):
    """bm25s numba backend through its batched ``retrieve`` (one query per call, one thread)."""

    key, label, backend = "bm25s-numba", "bm25s (numba)", "numba"

    def build(self, wl: Workload, shared: Shared) -> None:
        if importlib.util.find_spec("numba") is None:
            raise Skipped("numba not importable (bm25s numba backend)")
        super().build(wl, shared)

    def _top(self, text: str, k: int, mask: np.ndarray | None = None) -> list[int]:
        vocab = self.vocab
        ids = [vocab[t] for t in _dedup(self.tokenize(text)) if t in vocab]
        if not ids:
            return []
        docs, scores = self.retriever.retrieve([ids], k=k, show_progress=False, n_threads=1, weight_mask=mask)
        return [int(i) for i in docs[0][scores[0] > 0]]


# ---- tantivy --------------------------------------------------------------


class Tantivy(System):
    key, label, kind = "tantivy", "tantivy (in RAM)", "bm25"

    def build(self, wl: Workload, shared: Shared) -> None:
        tantivy = _require("tantivy")
        self.index, schema = self._use(shared, "tantivy", lambda: _tantivy_index(wl))
        self.searcher = self.index.searcher()
        self.note = f"{self.searcher.num_segments} segment(s)"
        # tantivy's "default" analyser: simple tokenizer, remove_long(40), lowercase.
        self.analyzer = (
            tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
            .filter(tantivy.Filter.remove_long(40))
            .filter(tantivy.Filter.lowercase())
            .build()
        )
        self.schema = schema
        self.Query, self.Should = tantivy.Query, tantivy.Occur.Should
        self.k = wl.k
        self.texts = list(wl.ds.query_texts)

    def query(self, i: int) -> Any:
        terms = dict.fromkeys(self.analyzer.analyze(self.texts[i]))
        if not terms:
            return []
        tq, schema, should = self.Query.term_query, self.schema, self.Should
        q = self.Query.boolean_query([(should, tq(schema, "text", t)) for t in terms])
        hits = self.searcher.search(q, self.k, count=False).hits
        return self.searcher.fast_field_values("id", [addr for _, addr in hits])


# ---- hand-assembled hybrids -----------------------------------------------


class HandHybrid(System):
    """hnswlib top-50 + bm25s top-50 + RRF (k=60) in Python."""

    key, label, kind = "hand-hybrid", "hand hybrid", "hybrid"
    mode = "plain"  # "plain" | "post" (post-filter the legs) | "pre" (filter inside both legs)

    def build(self, wl: Workload, shared: Shared) -> None:
        _require("hnswlib")
        _require("bm25s")
        backend = "numba" if importlib.util.find_spec("numba") is not None else "numpy"
        self.vec = Hnswlib()
        self.vec.build(wl, shared)
        self.bm = Bm25sNumba() if backend == "numba" else Bm25s()
        self.bm.build(wl, shared)
        self.build_s = self.vec.build_s + self.bm.build_s
        self.rss_mb = self.vec.rss_mb + self.bm.rss_mb
        self.label = f"hand hybrid (hnswlib + bm25s {backend} + Python RRF)"
        if self.mode == "post":
            self.label = f"hand hybrid, post-filter (hnswlib + bm25s {backend})"
        elif self.mode == "pre":
            self.label = f"hand hybrid, pre-filter (hnswlib callback + bm25s {backend} mask)"
        self.k = wl.k
        self.ts_np = wl.ds.timestamps
        self.ts = wl.ds.timestamps.tolist()
        self.windows = list(wl.windows)

    def query(self, i: int) -> Any:
        bm_ids = self.bm._top(self.bm.texts[i], LEG)
        labels, _ = self.vec.knn(self.vec.vectors[i], k=LEG, num_threads=1)
        return rrf((bm_ids, labels[0].tolist()), self.k)


class HandHybridPost(HandHybrid):
    key, filtered, mode = "hand-hybrid-post", True, "post"

    def query(self, i: int) -> Any:
        lo, hi = self.windows[i]
        ts = self.ts
        bm_ids = [d for d in self.bm._top(self.bm.texts[i], LEG) if lo <= ts[d] < hi]
        labels, _ = self.vec.knn(self.vec.vectors[i], k=LEG, num_threads=1)
        vec_ids = [d for d in labels[0].tolist() if lo <= ts[d] < hi]
        return rrf((bm_ids, vec_ids), self.k)


class HandHybridPre(HandHybrid):
    key, filtered, mode = "hand-hybrid-pre", True, "pre"

    def query(self, i: int) -> Any:
        lo, hi = self.windows[i]
        ts = self.ts
        ts_np = self.ts_np
        mask = ((ts_np >= lo) & (ts_np < hi)).astype(np.float32)
        bm_ids = self.bm._top(self.bm.texts[i], LEG, mask)
        try:
            labels, _ = self.vec.knn(
                self.vec.vectors[i], k=LEG, num_threads=1, filter=lambda label: lo <= ts[label] < hi
            )
            vec_ids = labels[0].tolist()
        except RuntimeError:  # fewer than LEG allowed points found
            vec_ids = []
        return rrf((bm_ids, vec_ids), self.k)


# ---- LanceDB --------------------------------------------------------------


class LanceDB(System):
    """LanceDB, the vector leg alone (HNSW, cosine, ef=64)."""

    key, label, kind = "lancedb-vector", "LanceDB", "vector"

    def build(self, wl: Workload, shared: Shared) -> None:
        self.table = self._use(shared, "lancedb", lambda: _lancedb_table(wl, shared))
        self.k = wl.k
        self.texts = list(wl.ds.query_texts)
        self.vectors = [wl.query_vector(i) for i in range(wl.n_queries)]
        self.windows = list(wl.windows)
        self.note = f"lancedb {_version('lancedb')}, on disk in a temporary folder"

    def query(self, i: int) -> Any:
        res = (
            self.table.search(self.vectors[i], query_type="vector")
            .distance_type("cosine")
            .ef(EF)
            .limit(self.k)
            .select(["id", "_distance"])
            .to_arrow()
        )
        return res.column("id").to_pylist()


class LanceDBFts(LanceDB):
    """LanceDB's native full-text search (BM25)."""

    key, label, kind = "lancedb-fts", "LanceDB (FTS)", "bm25"

    def query(self, i: int) -> Any:
        text = self.texts[i]
        if not text.strip():
            return []
        res = self.table.search(text, query_type="fts").limit(self.k).select(["id", "_score"]).to_arrow()
        return res.column("id").to_pylist()


class LanceDBHybrid(LanceDB):
    """LanceDB's hybrid query: vector + FTS legs of 50, fused by its ``RRFReranker(K=60)``."""

    key, label, kind = "lancedb-hybrid", "LanceDB hybrid (vector + FTS, RRF)", "hybrid"

    def build(self, wl: Workload, shared: Shared) -> None:
        super().build(wl, shared)
        from lancedb.rerankers import RRFReranker

        self.reranker = RRFReranker(K=int(RRF_K))

    def _hybrid(self, i: int) -> Any:
        return (
            self.table.search(query_type="hybrid")
            .vector(self.vectors[i])
            .text(self.texts[i])
            .distance_type("cosine")
            .ef(EF)
            .rerank(self.reranker)
            .limit(LEG)
        )

    def query(self, i: int) -> Any:
        return self._hybrid(i).select(["id"]).to_arrow().column("id").to_pylist()[: self.k]


class LanceDBHybridWindow(LanceDBHybrid):
    """LanceDB's hybrid query with the time window as a SQL pre-filter (BTree on ``ts``)."""

    key, label, filtered = "lancedb-hybrid-window", "LanceDB hybrid, pre-filter", True

    def query(self, i: int) -> Any:
        lo, hi = self.windows[i]
        res = self._hybrid(i).where(f"ts >= {int(lo)} AND ts < {int(hi)}", prefilter=True).select(["id"]).to_arrow()
        return res.column("id").to_pylist()[: self.k]


def _version(pkg: str) -> str:
    try:
        return importlib.metadata.version(pkg)
    except importlib.metadata.PackageNotFoundError:
        return "?"


SYSTEMS: dict[str, type[System]] = {
    cls.key: cls
    for cls in (
        TrimemVector,
        TrimemBm25,
        TrimemHybrid,
        TrimemHybridWindow,
        TrimemVectorWindow,
        Hnswlib,
        HnswlibFilter,
        Bm25s,
        Bm25sNumba,
        Tantivy,
        HandHybrid,
        HandHybridPost,
        HandHybridPre,
        LanceDB,
        LanceDBFts,
        LanceDBHybrid,
        LanceDBHybridWindow,
    )
}

GROUPS: dict[str, list[str]] = {
    "all": list(SYSTEMS),
    "trimem": [k for k in SYSTEMS if k.startswith("trimem")],
    "peers": [k for k in SYSTEMS if not k.startswith("trimem")],
    "hand": [k for k in SYSTEMS if k.startswith("hand")],
    "lancedb": [k for k in SYSTEMS if k.startswith("lancedb")],
}


def make_systems(keys: Iterable[str] | None = None) -> list[System]:
    """Instances for ``keys`` (system keys or group names), in registry order."""
    if keys is None:
        wanted = set(SYSTEMS)
    else:
        wanted = set()
        for key in keys:
            key = key.strip()
            if not key:
                continue
            if key in GROUPS:
                wanted.update(GROUPS[key])
            elif key in SYSTEMS:
                wanted.add(key)
            else:
                known = ", ".join([*SYSTEMS, *GROUPS])
                raise ValueError(f"unknown system {key!r}; choose from: {known}")
    return [cls() for key, cls in SYSTEMS.items() if key in wanted]
