"""BM25 against a pure-Python Lucene reference computed from `trimem.tokenize` tokens, and
against bm25s and tantivy on SciFact."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import trimem
from trimem import tokenize

# ----------------------------------------------------------------------------- reference


@dataclass
class LuceneBM25:
    """Lucene BM25 over token lists: idf = ln(1 + (N - df + 0.5)/(df + 0.5)),
    score = sum over distinct query terms of idf * tf / (tf + k1 (1 - b + b dl/avgdl))."""

    k1: float = 1.2
    b: float = 0.75
    stem: bool = False
    stopwords: bool = False
    tf: dict[int, Counter] = field(default_factory=dict)
    dl: dict[int, int] = field(default_factory=dict)

    def tokens(self, text: str) -> list[str]:
        return tokenize(text, stem=self.stem, stopwords=self.stopwords)

    def add(self, doc_id: int, text: str) -> None:
        toks = self.tokens(text)
        self.tf[doc_id] = Counter(toks)
        self.dl[doc_id] = len(toks)

    def remove(self, doc_id: int) -> None:
        del self.tf[doc_id], self.dl[doc_id]

    def df(self) -> Counter:
        out: Counter = Counter()
        for c in self.tf.values():
            out.update(c.keys())
        return out

    @property
    def avgdl(self) -> float:
        return sum(self.dl.values()) / len(self.dl) if self.dl else 0.0

    def scores(self, query: str) -> dict[int, float]:
        """Scores of every document sharing at least one query term."""
        terms = set(self.tokens(query))
        df = self.df()
        n, avgdl = len(self.dl), self.avgdl
        out: dict[int, float] = {}
        for doc_id, tf in self.tf.items():
            s = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    s += idf * f / (f + self.k1 * (1.0 - self.b + self.b * self.dl[doc_id] / avgdl))
            if s > 0:
                out[doc_id] = s
        return out


# ----------------------------------------------------------------------------- corpus

_WORDS = (
    "docker container image node port server client request error timeout memory cache "
    "index search query vector graph token user agent session namespace log file path "
    "build deploy test run start stop restart config network proxy database table row "
    "column schema migration backup restore the a of to and in is on for with"
).split()
_SPECIAL = [
    "node.js",
    "ERR_CONNECTION_REFUSED",
    "v18.2.0",
    "8080",
    "443",
    "192.168.1.1:3306",
    "snake_case_name",
    "path/to/file.py",
    "容器中启动",
    "服务",
    "端口映射",
    "在",
    "日本語",
]


def make_corpus(n: int, seed: int) -> list[str]:
    """Texts of 1-40 words, Zipf-skewed over a small vocabulary plus identifiers and CJK."""
    rng = np.random.default_rng(seed)
    vocab = _WORDS + _SPECIAL
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 0.9
    p = p[rng.permutation(len(vocab))]
    p /= p.sum()
    out = []
    for _ in range(n):
        words = rng.choice(vocab, size=int(rng.integers(1, 41)), p=p).tolist()
        out.append(" ".join(w.capitalize() if rng.random() < 0.2 else w for w in words) + ".")
    return out


def make_queries(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = _WORDS + _SPECIAL + ["absent", "nowhere", "未知"]
    out = []
    for _ in range(n):
        words = rng.choice(vocab, size=int(rng.integers(1, 6))).tolist()
        out.append(" ".join(words))
    out += ["port port port", "node", "js", "启动", "err connection", "the", "v18"]
    return out


def add_texts(idx: trimem.HybridIndex, ref: LuceneBM25, ids: list[int], texts: list[str], upsert: bool = False) -> None:
    idx.add(ids=ids, texts=texts, timestamps=list(range(len(ids))), namespaces=["ns"] * len(ids), upsert=upsert)
    for i, t in zip(ids, texts):
        ref.add(i, t)


def check_scores(idx: trimem.HybridIndex, ref: LuceneBM25, queries: list[str], rel: float = 1e-5) -> int:
    """Every query: the engine returns exactly the matching docs, ranked, with scores equal to
    the reference. Returns the number of (query, doc) scores compared."""
    compared = 0
    n = max(len(idx), 1)
    for q in queries:
        want = ref.scores(q)
        hits = idx.search(text=q, mode="bm25", k=n)
        ids = hits.ids.tolist()
        got = hits.bm25_scores.astype(np.float64)
        assert set(ids) == set(want), q
        assert len(ids) == len(set(ids))
        # Ranks by position, except that equal scores share the better rank (1, 2, 2, 4).
        raw = hits.bm25_scores.tolist()
        ranks = [1] * len(raw)
        for p in range(1, len(raw)):
            ranks[p] = ranks[p - 1] if raw[p] == raw[p - 1] else p + 1
        assert hits.bm25_ranks.tolist() == ranks
        assert (hits.vector_ranks == 0).all() and np.isnan(hits.vector_scores).all()
        assert hits.plan == "none"
        # In bm25 mode the fused score is 1/(60 + rank).
        np.testing.assert_allclose(hits.scores, 1.0 / (60.0 + np.asarray(ranks)), rtol=1e-6)
        for rank, (i, s) in enumerate(zip(ids, got)):
            w = want[i]
            assert abs(s - w) <= rel * w, (q, i, s, w)
            if rank:
                prev_id, prev_w = ids[rank - 1], want[ids[rank - 1]]
                # Ranked by score (the reference agrees up to float32 noise); equal scores
                # go to the smaller id.
                assert prev_w >= w - 2 * rel * w, (q, prev_id, i)
                assert got[rank - 1] >= s, (q, prev_id, i)
                if got[rank - 1] == s:
                    assert prev_id < i, (q, prev_id, i)
            compared += 1
    return compared


def check_stats(idx: trimem.HybridIndex, ref: LuceneBM25, extra_terms: set[str] = frozenset()) -> None:
    df = ref.df()
    st = idx.stats()
    assert st["records"] == len(ref.dl) == len(idx)
    assert st["vocabulary"] == len(df)
    assert st["avgdl"] == pytest.approx(ref.avgdl, rel=1e-12, abs=0.0)
    for term in set(df) | set(extra_terms):
        assert idx.doc_freq(term) == df.get(term, 0), term


# ----------------------------------------------------------------------------- tests


def test_scores_match_lucene_reference() -> None:
    texts = make_corpus(400, seed=1)
    idx, ref = trimem.HybridIndex(dim=0), LuceneBM25()
    # Ids not in insertion order, so "ties by smaller id" is not "ties by slot".
    ids = np.random.default_rng(2).permutation(np.arange(1000, 1400)).tolist()
    add_texts(idx, ref, ids, texts)
    check_stats(idx, ref)
    assert check_scores(idx, ref, make_queries(60, seed=3)) > 2000
    # The per-record scorer agrees too, including 0 for a record with no query term.
    for q in ["docker port", "node.js 8080", "容器"]:
        want = ref.scores(q)
        for i in ids[:50]:
            assert idx.bm25_score(q, i) == pytest.approx(want.get(i, 0.0), rel=1e-5, abs=1e-12)


def test_duplicate_query_terms_count_once() -> None:
    idx, ref = trimem.HybridIndex(dim=0), LuceneBM25()
    add_texts(idx, ref, [1, 2, 3], ["port 8080 port", "port 443", "nginx"])
    once = idx.search(text="port", mode="bm25").bm25_scores
    thrice = idx.search(text="port port port", mode="bm25").bm25_scores
    np.testing.assert_array_equal(once, thrice)
    assert check_scores(idx, ref, ["port", "port port port", "8080 port"]) == 6


def test_statistics_stay_exact_after_deletes_and_readds() -> None:
    rng = np.random.default_rng(5)
    texts = make_corpus(450, seed=4)
    ids = list(range(450))
    idx, ref = trimem.HybridIndex(dim=0), LuceneBM25()
    add_texts(idx, ref, ids, texts)
    all_terms = {t for txt in texts for t in tokenize(txt)}
    queries = make_queries(40, seed=6)

    # Delete a third.
    gone = sorted(rng.choice(ids, size=150, replace=False).tolist())
    assert idx.delete(gone) == 150
    for i in gone:
        ref.remove(i)
    check_stats(idx, ref, all_terms)
    check_scores(idx, ref, queries)

    # Re-add half of the deleted ids with new texts, plus new ids; upsert some survivors.
    new_texts = make_corpus(120, seed=7)
    readd = gone[:75] + list(range(1000, 1045))
    add_texts(idx, ref, readd, new_texts)
    survivors = sorted(set(ids) - set(gone))[:30]
    add_texts(idx, ref, survivors, make_corpus(30, seed=8), upsert=True)
    all_terms |= {t for txt in new_texts for t in tokenize(txt)}
    check_stats(idx, ref, all_terms)
    assert check_scores(idx, ref, queries) > 1000

    # A term whose only documents are deleted leaves the vocabulary.
    add_texts(idx, ref, [5000], ["zyzzyva unique-term-xyz"])
    assert idx.doc_freq("zyzzyva") == 1
    idx.delete([5000])
    ref.remove(5000)
    assert idx.doc_freq("zyzzyva") == 0
    check_stats(idx, ref, {"zyzzyva", "unique-term-xyz"})
    assert len(idx.search(text="zyzzyva", mode="bm25")) == 0

    # Deleting everything empties the statistics.
    rest = idx.ids().tolist()
    idx.delete(rest)
    st = idx.stats()
    assert (st["records"], st["vocabulary"], st["avgdl"]) == (0, 0, 0.0)
    assert len(idx.search(text="docker", mode="bm25")) == 0


@pytest.mark.parametrize(("k1", "b"), [(2.0, 0.3), (1.2, 0.0), (0.5, 1.0)])
def test_parameters_k1_b(k1: float, b: float) -> None:
    idx, ref = trimem.HybridIndex(dim=0, k1=k1, b=b), LuceneBM25(k1=k1, b=b)
    add_texts(idx, ref, list(range(200)), make_corpus(200, seed=9))
    check_scores(idx, ref, make_queries(15, seed=10))


def test_stemmed_index_matches_reference() -> None:
    idx = trimem.HybridIndex(dim=0, stem=True, stopwords=True)
    ref = LuceneBM25(stem=True, stopwords=True)
    add_texts(idx, ref, list(range(200)), make_corpus(200, seed=12))
    check_stats(idx, ref)
    check_scores(idx, ref, [*make_queries(15, seed=13), "running containers", "the builds"])


def test_min_bm25_drops_weaker_hits() -> None:
    idx, ref = trimem.HybridIndex(dim=0), LuceneBM25()
    add_texts(idx, ref, list(range(300)), make_corpus(300, seed=14))
    for q in ["docker port server", "node.js error timeout", "容器 服务"]:
        want = ref.scores(q)
        all_hits = idx.search(text=q, mode="bm25", k=300)
        assert len(all_hits) == len(want) > 10
        floor = float(np.median(all_hits.bm25_scores))
        hits = idx.search(text=q, mode="bm25", k=300, min_bm25=floor)
        assert (hits.bm25_scores >= floor).all()
        strong = {i for i, s in want.items() if s >= floor * (1 + 1e-5)}
        weak = {i for i, s in want.items() if s < floor * (1 - 1e-5)}
        assert strong <= set(hits.ids.tolist())
        assert not weak & set(hits.ids.tolist())
        assert len(weak) > 0
        # The floor is applied before top-k: asking for fewer still returns the strongest.
        top = idx.search(text=q, mode="bm25", k=3, min_bm25=floor)
        assert top.ids.tolist() == all_hits.ids[:3].tolist()
        # A floor above every score leaves nothing.
        assert len(idx.search(text=q, mode="bm25", min_bm25=float(all_hits.bm25_scores[0]) * 1.01)) == 0


# ----------------------------------------------------------------------------- SciFact


@dataclass
class SciFact:
    doc_ids: list[str]  # BEIR ids; record id i is doc_ids[i]
    texts: list[str]
    tokens: list[list[str]]
    queries: dict[str, str]  # the 300 test queries
    qrels: dict[str, dict[str, int]]
    index: trimem.HybridIndex
    ours: dict[str, tuple[list[int], list[float]]]  # top-10 ids and BM25 scores


@pytest.fixture(scope="module")
def scifact(scifact_dir: Path) -> SciFact:
    def jsonl(name: str) -> list[dict]:
        lines = (scifact_dir / name).read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    docs = jsonl("corpus.jsonl")
    all_queries = {q["_id"]: q["text"] for q in jsonl("queries.jsonl")}
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    lines = (scifact_dir / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        q, c, s = line.split("\t")
        qrels[q][c] = int(s)
    texts = [f"{d.get('title', '')} {d.get('text', '')}".strip() for d in docs]
    idx = trimem.HybridIndex(dim=0)
    n = len(docs)
    idx.add(
        ids=np.arange(n, dtype=np.uint64),
        texts=texts,
        timestamps=np.zeros(n, dtype=np.int64),
        namespaces=["scifact"] * n,
    )
    queries = {q: all_queries[q] for q in sorted(qrels, key=int)}
    ours = {}
    for q, text in queries.items():
        h = idx.search(text=text, mode="bm25", k=10)
        ours[q] = (h.ids.tolist(), h.bm25_scores.astype(np.float64).tolist())
    return SciFact(
        doc_ids=[d["_id"] for d in docs],
        texts=texts,
        tokens=[tokenize(t) for t in texts],
        queries=queries,
        qrels=dict(qrels),
        index=idx,
        ours=ours,
    )


def test_scifact_shape(scifact: SciFact) -> None:
    assert len(scifact.doc_ids) == 5183
    assert len(scifact.queries) == 300
    st = scifact.index.stats()
    assert st["records"] == 5183
    assert st["avgdl"] == pytest.approx(sum(map(len, scifact.tokens)) / 5183, rel=1e-12)
    assert all(len(ids) == 10 for ids, _ in scifact.ours.values())


def test_scifact_ndcg_at_10(scifact: SciFact, record_property) -> None:
    def ndcg(ranked: list[int], rel: dict[str, int]) -> float:
        dcg = sum(rel.get(scifact.doc_ids[i], 0) / math.log2(r + 2) for r, i in enumerate(ranked[:10]))
        ideal = sorted(rel.values(), reverse=True)[:10]
        return dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal))

    score = float(np.mean([ndcg(scifact.ours[q][0], scifact.qrels[q]) for q in scifact.queries]))
    record_property("scifact_ndcg10", score)
    print(f"SciFact BM25 nDCG@10 = {score:.4f} (BEIR paper 0.665)")
    assert score >= 0.6


def test_scifact_matches_bm25s(scifact: SciFact, record_property) -> None:
    bm25s = pytest.importorskip("bm25s")
    from bm25s.tokenization import Tokenized

    vocab: dict[str, int] = {}
    corpus_ids = [[vocab.setdefault(t, len(vocab)) for t in toks] for toks in scifact.tokens]
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(Tokenized(ids=corpus_ids, vocab=vocab), show_progress=False)
    order_key = np.arange(len(scifact.doc_ids))
    overlaps, worst_rel = [], 0.0
    for q, text in scifact.queries.items():
        # Distinct query terms, as the engine scores them.
        terms = [vocab[t] for t in dict.fromkeys(tokenize(text)) if t in vocab]
        scores = retriever.get_scores(terms)
        top = [int(i) for i in np.lexsort((order_key, -scores))[:10] if scores[i] > 0]
        ids, ours = scifact.ours[q]
        overlaps.append(len(set(top) & set(ids)) / max(len(top), len(ids), 1))
        for i, s in zip(ids, ours):
            worst_rel = max(worst_rel, abs(float(scores[i]) - s) / s)
    mean = float(np.mean(overlaps))
    record_property("scifact_bm25s_overlap", mean)
    print(
        f"SciFact top-10 overlap with bm25s: mean {mean:.4f}, min {min(overlaps):.2f}; "
        f"worst score rel err {worst_rel:.2e}"
    )
    assert mean >= 0.99
    assert worst_rel <= 1e-5


def _tantivy_length(n: int) -> int:
    """The length tantivy (like Lucene's SmallFloat.intToByte4) keeps for a field of n tokens:
    24 + (n - 24) rounded down to a float with a 4-bit mantissa (so exact up to 40)."""
    if n < 24:
        return n
    i = n - 24
    bits = i.bit_length()
    if bits >= 4:
        shift = bits - 4
        code = ((i >> shift) & 0x07) | ((shift + 1) << 3)
        s = (code >> 3) - 1
        i = (code & 0x07) if s == -1 else ((code & 0x07) | 0x08) << s
    return 24 + i


def test_tantivy_length_quantisation_table() -> None:
    # The head of tantivy's FIELD_NORMS_TABLE (src/fieldnorm/code.rs); a length maps to the
    # largest entry not above it.
    table = [
        *range(41),
        42,
        44,
        46,
        48,
        50,
        52,
        54,
        56,
        60,
        64,
        68,
        72,
        76,
        80,
        84,
        88,
        96,
        104,
        112,
        120,
        128,
        136,
        144,
        152,
        168,
        184,
        200,
    ]
    for n in range(201):
        assert _tantivy_length(n) == max(t for t in table if t <= n), n


def test_scifact_ranking_agrees_with_tantivy(scifact: SciFact, record_property) -> None:
    """tantivy scores k1+1 times Lucene's BM25 and stores each document's length in one byte
    (exact up to 40 tokens, then rounded down to buckets up to 12.5 % wide; SciFact documents
    average ~229 tokens, so nearly every length is rounded). Indexing our own tokens with its
    whitespace tokenizer, its scores must equal, to float precision, the Lucene reference
    computed with those rounded lengths (and the exact average length): that pins the
    remaining ranking differences on length rounding alone. The top-10 overlap with our exact
    ranking measured 0.983 (worst query 0.8); the bounds below leave room for float noise."""
    tantivy = pytest.importorskip("tantivy")
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    sb.add_integer_field("i", stored=True)
    schema = sb.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    for i, toks in enumerate(scifact.tokens):
        writer.add_document(tantivy.Document(body=" ".join(toks), i=i))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()
    assert searcher.num_docs == len(scifact.tokens)

    k1, b = 1.2, 0.75
    n = len(scifact.tokens)
    avgdl = sum(map(len, scifact.tokens)) / n
    tfs = [Counter(t) for t in scifact.tokens]
    df: Counter = Counter()
    for c in tfs:
        df.update(c.keys())

    overlaps, worst_rel = [], 0.0
    for q, text in scifact.queries.items():
        terms = list(dict.fromkeys(tokenize(text)))
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "body", t, index_option="freq")) for t in terms]
        )
        got = []
        for score, address in searcher.search(query, limit=10).hits:
            i = searcher.doc(address)["i"][0]
            got.append(i)
            length = _tantivy_length(len(scifact.tokens[i]))
            want = sum(
                math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                * tfs[i][t]
                / (tfs[i][t] + k1 * (1 - b + b * length / avgdl))
                for t in terms
                if t in tfs[i]
            )
            worst_rel = max(worst_rel, abs(score / (k1 + 1) - want) / want)
        ids = scifact.ours[q][0]
        overlaps.append(len(set(got) & set(ids)) / max(len(got), len(ids), 1))
    mean = float(np.mean(overlaps))
    record_property("scifact_tantivy_overlap", mean)
    print(
        f"SciFact top-10 overlap with tantivy: mean {mean:.4f}, min {min(overlaps):.2f}; "
        f"tantivy/(k1+1) vs rounded-length Lucene: worst rel err {worst_rel:.2e}"
    )
    assert worst_rel <= 1e-4
    assert mean >= 0.95
    assert min(overlaps) >= 0.6
