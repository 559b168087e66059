"""Scripts and the normal form: Han detection, the language of a statement and of a query, NFKC
folding, zero-width characters and curly quotes."""

from __future__ import annotations

import pytest

from trimem.text.script import fold_spaces, has_han, is_han, language, prepare_text, query_language


@pytest.mark.parametrize(
    ("raw", "prepared"),
    [
        ("ＩＧＮＯＲＥ ｐｒｅｖｉｏｕｓ", "IGNORE previous"),  # full-width letters fold
        ("用户偏好：深色模式", "用户偏好:深色模式"),  # full-width colon folds
        ("ig\u200bnore\ufeff", "ignore"),  # zero-width characters go
        ("\u201cVim\u201d and \u2018Helix\u2019", "\"Vim\" and 'Helix'"),
        ("plain ascii stays", "plain ascii stays"),
        # a space between runs of Chinese is a comma; one after a word or two, or beside Latin, is not
        ("三轮卖了 城里也用不上　现在出门坐公交", "三轮卖了,城里也用不上,现在出门坐公交"),
        ("俺不吃羊肉 嫌膻 闻着就恶心", "俺不吃羊肉,嫌膻 闻着就恶心"),
        ("我的 编辑器 是 Vim", "我的 编辑器 是 Vim"),
        ("我们用 PostgreSQL 做主库", "我们用 PostgreSQL 做主库"),
    ],
)
def test_prepare_text(raw: str, prepared: str) -> None:
    assert prepare_text(raw) == prepared


def test_han_and_language() -> None:
    assert has_han("Python 的 GIL") and not has_han("Docker ｐｏｒｔ")
    assert is_han("数") and not is_han("a") and not is_han("あ")  # kana is no Han
    assert language("Python 的 GIL") == "zh"  # any Han character: the Chinese rules apply
    assert language("Docker") == "en"


@pytest.mark.parametrize(
    ("query", "lang"),
    [("Which port did nginx use?", "en"), ("用Python写一个Web服务器", "zh"), ("What is the 数据库 we chose?", "mixed")],
)
def test_query_language(query: str, lang: str) -> None:
    assert query_language(query) == lang


def test_fold_spaces() -> None:
    assert fold_spaces(" a\t\n b  c ") == "a b c"
