"""Scripts and normal forms: which characters are Chinese, which language a text is in, and the
one normal form every reader of language starts from.

>>> prepare_text("我的邮箱是ａ@ｂ.com，谢谢！"), language("Python 的 GIL"), query_language("What is 数据库?")
('我的邮箱是a@b.com,谢谢!', 'zh', 'mixed')
>>> has_han("Docker"), has_han("用Docker")
(False, True)
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final, Literal

__all__ = [
    "CJK_RANGE",
    "HAN_CHAR",
    "HAN_RANGE",
    "LATIN_END",
    "LATIN_START",
    "SEPARATING_COMMA",
    "WORD",
    "Language",
    "QueryLanguage",
    "fold_spaces",
    "has_han",
    "is_han",
    "language",
    "prepare_text",
    "query_language",
    "without_spaces",
]

HAN_RANGE: Final = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Han ideographs (CJK unified, extension A, compatibility), for use inside a character class."""
CJK_RANGE: Final = "\u3040-\u30ff" + HAN_RANGE
"""Han plus Japanese kana: the characters a query splits into runs rather than words."""

# ASCII word edges. \b is no use in mixed text: Han characters are \w, so "用Redis" has no \b.
LATIN_START: Final = r"(?<![A-Za-z0-9_])"
LATIN_END: Final = r"(?![A-Za-z0-9_])"

HAN_CHAR: Final = re.compile(f"[{HAN_RANGE}]")
"""One Han character: the one compiled pattern every module of the text layer shares."""

WORD: Final = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+")
"""An English word (apostrophes and hyphens inside) or a number: how the readers count words."""

SEPARATING_COMMA: Final = r",(?!(?<=\d,)\d{3}(?!\d))"
"""A comma that separates clauses or items, as a pattern to build on: not the one inside a number
("$1,850", "3,500元")."""

Language = Literal["en", "zh"]
QueryLanguage = Literal["en", "zh", "mixed"]

_CJK: Final = re.compile(f"[{CJK_RANGE}]")
_HAN_SPACE: Final = re.compile(f"(?<=[{HAN_RANGE}]{{3}}) +(?=[{HAN_RANGE}]{{2}})")  # (NFKC makes "\u3000" a space)
_LATIN: Final = re.compile(r"[A-Za-z\u00c0-\u024f]")
_ZERO_WIDTH: Final = re.compile("[\u00ad\u200b-\u200f\u2060\ufeff]")
_QUOTES: Final = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_SPECIAL: Final = re.compile("[\u00ad\u200b-\u200f\u2060\ufeff\u2018\u2019\u201c\u201d]")
_SPACES: Final = re.compile(r"\s+")


def prepare_text(text: str) -> str:
    """The normal form every reader starts from: NFKC folds full-width letters and punctuation
    (，→, ！→!) so one ASCII pattern serves both scripts; zero-width characters go so they cannot
    hide a phrase; curly quotes become straight; a space between runs of Chinese is a comma, as
    Chinese typed by voice or in haste writes one ("三轮卖了 现在出门坐公交"), while a space after
    a word or two ("我的 编辑器 是 Vim") stays a space.

    >>> prepare_text("my\u200b editor is “Vim”"), prepare_text("三轮卖了 现在出门坐公交")
    ('my editor is "Vim"', '三轮卖了,现在出门坐公交')
    """
    if text.isascii():  # ASCII is NFKC already and has no zero-width or curly characters
        return text
    text = unicodedata.normalize("NFKC", text)
    if _SPECIAL.search(text):  # translate() is slow enough to skip when there is nothing to do
        text = _ZERO_WIDTH.sub("", text).translate(_QUOTES)
    return _HAN_SPACE.sub(",", text) if " " in text else text


def fold_spaces(text: str) -> str:
    """Runs of whitespace as one space, ends trimmed.

    >>> fold_spaces("  a \\t b\\n")
    'a b'
    """
    return _SPACES.sub(" ", text).strip()


def without_spaces(text: str) -> str:
    """`text` with all whitespace removed (Chinese reads the same without it).

    >>> without_spaces("我 每天 坐地铁")
    '我每天坐地铁'
    """
    return _SPACES.sub("", text)


def has_han(text: str) -> bool:
    """True when `text` holds a Han character."""
    return HAN_CHAR.search(text) is not None


def is_han(char: str) -> bool:
    """True when the one character `char` is a Han character."""
    return HAN_CHAR.match(char) is not None


def language(text: str) -> Language:
    """The language a statement is read in: ``"zh"`` as soon as it holds a Han character (Chinese
    sentences routinely carry English names: "Python 的 GIL"), else ``"en"``."""
    return "zh" if HAN_CHAR.search(text) else "en"


def query_language(text: str) -> QueryLanguage:
    """The language of a request, for keyword handling: ``"zh"`` when CJK dominates (a CJK
    character counts as two Latin letters), ``"mixed"`` with some, ``"en"`` with none."""
    cjk = len(_CJK.findall(text))
    if not cjk:
        return "en"
    return "zh" if 2 * cjk > len(_LATIN.findall(text)) else "mixed"
