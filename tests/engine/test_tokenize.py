"""Golden token lists for `trimem.tokenize` and the index's use of the same options for
documents and queries."""

from __future__ import annotations

import numpy as np
import pytest

import trimem
from trimem import tokenize

GOLDEN = [
    # Chinese: CJK runs become overlapping bigrams, a lone character stays itself, Latin words
    # and numbers between them are ordinary tokens, full-width punctuation splits.
    (
        "在 Docker 容器中启动 Node 服务，端口映射为 8080",
        ["在", "docker", "容器", "器中", "中启", "启动", "node", "服务", "端口", "口映", "映射", "射为", "8080"],
    ),
    ("启动服务", ["启动", "动服", "服务"]),
    ("容器", ["容器"]),
    ("容", ["容"]),
    ("容。", ["容"]),
    ("混合English中文", ["混合", "english", "中文"]),
    ("日本語のテキスト", ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]),
    ("한국어 텍스트", ["한국", "국어", "텍스", "스트"]),
    # Identifiers, versions, ports stay whole; compounds add their parts that hold a letter.
    ("node.js", ["node.js", "node", "js"]),
    ("ERR_CONNECTION_REFUSED", ["err_connection_refused", "err", "connection", "refused"]),
    ("v18.2.0", ["v18.2.0", "v18"]),
    ("port 8080.", ["port", "8080"]),
    ("192.168.1.1:3306", ["192.168.1.1:3306"]),
    ("2024-01-15", ["2024-01-15"]),
    ("3.14", ["3.14"]),
    ("snake_case_name", ["snake_case_name", "snake", "case", "name"]),
    ("path/to/file.py", ["path/to/file.py", "path", "to", "file", "py"]),
    ("foo-bar_baz", ["foo-bar_baz", "foo", "bar", "baz"]),
    ("user@example.com", ["user", "example.com", "example", "com"]),
    ("__init__", ["init"]),
    ("a.b.", ["a.b", "a", "b"]),
    # Plain English words, lowercased, punctuation dropped.
    ("Hello, World!", ["hello", "world"]),
    ("CamelCase", ["camelcase"]),
    ("don't", ["don", "t"]),
    ("1,000", ["1", "000"]),
    ("naïve café ÜBER", ["naïve", "café", "über"]),
    ("x", ["x"]),
    ("", []),
    ("... --- !!! __", []),
    # Duplicates are kept (term frequency matters to BM25).
    ("port port PORT", ["port", "port", "port"]),
]


@pytest.mark.parametrize(("text", "expected"), GOLDEN, ids=[g[0] or "<empty>" for g in GOLDEN])
def test_golden(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_default_options_are_off() -> None:
    text = "The containers are running"
    assert tokenize(text) == ["the", "containers", "are", "running"]
    assert tokenize(text, stem=False, stopwords=False) == tokenize(text)


def test_stopwords_only() -> None:
    assert tokenize("The containers are running", stopwords=True) == ["containers", "running"]
    # Lucene's English stop set, matched after lowercasing.
    assert tokenize("THE And OF to", stopwords=True) == []
    # A stop word that is part of a compound is dropped only as a part.
    assert tokenize("path/to/file", stopwords=True) == ["path/to/file", "path", "file"]
    # CJK bigrams are never stop words.
    assert tokenize("在 the 容器", stopwords=True) == ["在", "容器"]


def test_stem_only() -> None:
    assert tokenize("The containers are running", stem=True) == ["the", "contain", "are", "run"]
    assert tokenize("runs running run", stem=True) == ["run", "run", "run"]
    assert tokenize("8080 容器", stem=True) == ["8080", "容器"]


def test_stem_and_stopwords() -> None:
    assert tokenize("The containers are running", stem=True, stopwords=True) == ["contain", "run"]
    assert tokenize("the container runs", stem=True, stopwords=True) == ["contain", "run"]
    assert tokenize("running containers", stem=True, stopwords=True) == ["run", "contain"]


def test_non_string_is_rejected() -> None:
    with pytest.raises(TypeError):
        tokenize(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tokenize(b"bytes")  # type: ignore[arg-type]


def _index(**options: bool) -> trimem.HybridIndex:
    idx = trimem.HybridIndex(dim=0, **options)
    idx.add(
        ids=[1, 2, 3],
        texts=["the container runs", "a docker image was built", "node.js 在 容器中启动"],
        timestamps=[0, 1, 2],
        namespaces=["u", "u", "u"],
    )
    return idx


def test_index_uses_its_options_for_documents_and_queries() -> None:
    idx = _index(stem=True, stopwords=True)
    hits = idx.search(text="running containers", mode="bm25")
    assert hits.ids.tolist() == [1]
    # The index stores terms as its own tokenizer makes them.
    assert idx.doc_freq("contain") == 1
    assert idx.doc_freq("container") == 0
    assert idx.doc_freq("the") == 0
    # Only stop words in the query: nothing to search for.
    assert len(idx.search(text="the and of", mode="bm25")) == 0
    # The record's length counts only the tokens the index's tokenizer keeps.
    total = sum(len(tokenize(t, stem=True, stopwords=True)) for t in [r.text for r in idx.get_many([1, 2, 3])])
    assert idx.stats()["avgdl"] == pytest.approx(total / 3, rel=1e-12)


def test_index_without_options_does_not_stem() -> None:
    idx = _index()
    assert len(idx.search(text="running containers", mode="bm25")) == 0
    assert idx.search(text="container", mode="bm25").ids.tolist() == [1]
    assert idx.doc_freq("the") == 1
    total = sum(len(tokenize(r.text)) for r in idx.get_many([1, 2, 3]))
    assert idx.stats()["avgdl"] == pytest.approx(total / 3, rel=1e-12)


def test_index_finds_chinese_and_identifiers() -> None:
    idx = _index()
    # A bigram inside a run is found from a query that spells the same two characters.
    assert idx.search(text="容器", mode="bm25").ids.tolist() == [3]
    assert idx.search(text="启动", mode="bm25").ids.tolist() == [3]
    # The compound and its parts are all indexed.
    for q in ("node.js", "node", "js"):
        assert idx.search(text=q, mode="bm25").ids.tolist() == [3], q
    assert idx.doc_freq("node.js") == 1


def test_hybrid_index_query_tokens_match_tokenize() -> None:
    """`bm25_score` for a query equals the sum over `tokenize(query)` terms the doc holds."""
    idx = _index(stem=True, stopwords=True)
    one = idx.bm25_score("running", 1)
    two = idx.bm25_score("running containers", 1)
    assert one > 0 and two > one
    # Repeating a query term does not change the score (distinct query terms).
    assert idx.bm25_score("running running containers", 1) == pytest.approx(two, rel=1e-6)
    assert np.isfinite(two)
