"""Stopword lists: each list holds the words of its job and not the content words."""

from __future__ import annotations

from trimem.text.stopwords import (
    CAPITALISED_STOPWORDS,
    PHRASE_STOPWORDS,
    QUERY_STOPWORDS,
    ZH_PHRASE_BREAKS,
    ZH_QUERY_FILLER,
    ZH_QUERY_KEEP,
)


def test_query_stopwords_drop_function_words_and_keep_content() -> None:
    assert {"the", "which", "please", "remember", "ago"} <= QUERY_STOPWORDS
    assert not {"port", "docker", "database", "8080"} & QUERY_STOPWORDS


def test_chinese_filler_and_the_words_it_must_not_cut() -> None:
    assert {"帮我", "一下", "吗", "的"} <= ZH_QUERY_FILLER
    assert {"使用", "正在", "查询"} <= ZH_QUERY_KEEP
    assert not ZH_QUERY_FILLER & ZH_QUERY_KEEP  # a word is either cut or kept
    assert not {"端口", "数据库", "脚本"} & ZH_QUERY_FILLER


def test_phrase_and_name_stopwords() -> None:
    assert {"for", "and", "port"} <= PHRASE_STOPWORDS and "redis" not in PHRASE_STOPWORDS
    assert {"the", "monday", "todo"} <= CAPITALISED_STOPWORDS and "alice" not in CAPITALISED_STOPWORDS
    assert {"的", "和", "做"} <= ZH_PHRASE_BREAKS and all(len(c) == 1 for c in ZH_PHRASE_BREAKS)
