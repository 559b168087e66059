"""Fact values: trimming, what is no value (moods, sentences, negations), identifier-likeness,
values of typed keys and keys inferred from products."""

from __future__ import annotations

import pytest

from trimem.text.values import (
    MAX_VALUE_CHARS,
    clause_value,
    clean_value,
    infer_keys,
    looks_like_value,
    trim_value,
    value_for_key,
)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("Rust instead of TypeScript", "Rust"),
        ('"Neovim" now please', "Neovim"),
        ("Rust了吧", "Rust"),
        ("typescript", "TypeScript"),
        ("a Mac", "macOS"),
    ],
)
def test_clean_value(raw: str, value: str) -> None:
    assert clean_value(raw) == value


@pytest.mark.parametrize(
    "raw",
    [
        "broken",
        "好的",
        "to refactor the parser",
        "not Rust",
        "我不知道",
        "一个关系型数据库",
        "it",
        "x" * (MAX_VALUE_CHARS + 1),
    ],
)
def test_no_value(raw: str) -> None:
    assert clean_value(raw) is None


def test_a_sentence_is_no_value() -> None:
    assert clean_value("the one my grandmother gave me when I was ten years old") is None


def test_looks_like_value() -> None:
    assert all(looks_like_value(v) for v in ["https://x", "a@b.com", "8080", "Paris", "k8sCluster", "蓝色"])
    assert not any(looks_like_value(v) for v in ["blue", "green", "the same"])


def test_clause_value_and_trim() -> None:
    assert clause_value("Vim, and I like it") == "Vim"
    assert trim_value(" just Vim again! ") == "Vim"


def test_typed_keys_and_inference() -> None:
    assert value_for_key("primary_language", "TypeScript for the frontend") == "TypeScript"
    assert value_for_key("city", "Lisbon") == "Lisbon"
    assert infer_keys("macOS and Vim") == [("target_os", "macOS"), ("editor", "Vim")]
    assert infer_keys("coffee and tea") == []
    assert infer_keys("Python", frozenset({"os"})) == []
