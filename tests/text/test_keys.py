"""Fact keys: the key-phrase table in both languages, normalisation, modes, the deny list, and
the keys a request names (a Chinese request finds an English-keyed fact)."""

from __future__ import annotations

import pytest

from trimem.text.keys import (
    KEY_PHRASES,
    is_denied_key,
    is_valid_key,
    keys_for_phrase,
    lookup_key,
    match_keys,
    normalize_key,
    prepare_aliases,
    resolve_key,
)


def test_every_table_key_has_english_and_chinese_phrases_or_is_a_word_both_use() -> None:
    for key, phrases in KEY_PHRASES.items():
        said = phrases.split("|")
        assert is_valid_key(key) and not is_denied_key(key), key
        assert all(p == p.strip().lower() and "  " not in p for p in said), key
        assert normalize_key(key.replace("_", " ")) == key  # a key's own name maps to it
        for phrase in said:
            assert normalize_key(phrase) == key, (phrase, key)
    chinese = {key for key, phrases in KEY_PHRASES.items() if any("\u4e00" <= c <= "\u9fff" for c in phrases)}
    assert len(chinese) >= len(KEY_PHRASES) - 1  # only "shell" has no Chinese word in use


@pytest.mark.parametrize(
    ("phrase", "key"),
    [
        ("my main DB", "database"),
        ("主数据库", "database"),
        ("电话号码", "phone"),
        ("employer", "company"),
        ("favourite colour", "favourite_colour"),
        ("我的构建工具", "构建工具"),
        ("one two three four five", None),
        ("这是一个非常非常长的中文短语", None),
    ],
)
def test_normalize_key(phrase: str, key: str | None) -> None:
    assert normalize_key(phrase) == key


def test_modes_and_refusals() -> None:
    assert resolve_key("deploy target", "known") is None  # only table or alias keys
    assert resolve_key("deploy target", "any") == ("deploy_target", "plain")
    assert resolve_key("favourite colour", "profile") == ("favourite_colour", "qualified")
    assert resolve_key("deploy target", "profile") is None
    for topic in ["problem", "note", "TODO", "备份的方法", "代码"]:
        assert resolve_key(topic, "any") is None, topic
    assert lookup_key("system prompt") == ("system_prompt", "plain")  # a phrase lookup names it ...
    assert resolve_key("system prompt", "any") is None  # ... a statement's key refuses it
    hit = resolve_key("boss", "known", prepare_aliases({"boss": "manager"}))
    assert hit is not None and hit.key == "manager" and hit.how == "alias" and hit.known


@pytest.mark.parametrize("key", ["role", "user_role", "system_prompt", "rules", "权限", "我的角色"])
def test_denied(key: str) -> None:
    assert is_denied_key(key)


def test_validity() -> None:
    assert is_valid_key("primary_language") and is_valid_key("最喜欢的颜色")
    assert not is_valid_key("Not A Key!") and not is_valid_key("9lives") and not is_valid_key("")


def test_a_request_finds_keys_through_the_table_in_both_languages() -> None:
    known = {"database": ["database"], "editor": ["editor"]}
    assert match_keys("连接到我们定下来的数据库", known) == ["database"]
    assert match_keys("which DB did we pick, and my IDE?", known) == ["database", "editor"]
    assert match_keys("把编辑器的配置发给我", known) == ["editor"]
    # only known keys: the table names keys, the caller's facts decide which exist
    assert match_keys("连接到我们定下来的数据库", {}) == []
    assert match_keys("连接到我们定下来的数据库", {}, known=["database"]) == ["database"]
    # the caller's aliases win over the table's phrase
    assert match_keys("the main database", {"main database": ["primary_db"], "database": ["database"]}) == [
        "primary_db"
    ]
    assert keys_for_phrase("数据库", known) == ["database"] and keys_for_phrase("端口", known) == []


def test_keys_known_only_in_chinese_or_only_in_english_are_matched() -> None:
    # With every known phrase in one script the pattern has one named group only; reading the
    # other group raised IndexError on every recall that named such a key.
    assert match_keys("我的工号是多少", known=["工号"]) == ["工号"]
    assert match_keys("what is my badge number", {"badge number": ["badge"]}) == ["badge"]
    assert match_keys("nothing here", known=["工号"]) == []
