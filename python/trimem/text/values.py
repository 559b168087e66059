"""Fact values: where a value said in a statement starts and ends, when a phrase is a value at
all (a name, a number, a product — not a mood or a sentence), and the key a product implies.

>>> clean_value("Rust instead of TypeScript"), clean_value("改成Rust了吧"[2:]), clean_value("broken")
('Rust', 'Rust', None)
>>> value_for_key("primary_language", "TypeScript for the frontend"), infer_keys("macOS and Vim")
('TypeScript', [('target_os', 'macOS'), ('editor', 'Vim')])
>>> looks_like_value("https://x"), looks_like_value("blue"), looks_like_value("蓝色")
(True, False, True)
"""

from __future__ import annotations

import re
from typing import Final

from trimem.text.products import ALL_CATEGORIES, CATEGORY_KEY, KEY_CATEGORY, canonical_value, known_prefix
from trimem.text.script import SEPARATING_COMMA, has_han

__all__ = [
    "MAX_VALUE_CHARS",
    "clause_value",
    "clean_value",
    "has_latin_or_digit",
    "infer_keys",
    "looks_like_value",
    "trim_value",
    "value_for_key",
]

MAX_VALUE_CHARS: Final = 80
"""Longer values are rejected: a fact is a short name, not a paragraph."""

_EDGE: Final = " \t\"'`()[]{}<>.,;:!?~…。、「」『』《》"
_VALUE_TAIL: Final = re.compile(
    r"(?:\s+(?:instead(?:\s+of\b.*)?|rather\s+than\b.*|over\s+\S.*|now|please|from\s+now\s+on|"
    r"going\s+forward|for\s+now|for\s+good|any\s*more|any\s+longer|again|thanks|thank\s+you|then|"
    r"these\s+days|nowadays)"
    r"|(?:而不是|而非).*|了|吧|啦|呀|哦|呢|嘛|哈|吗|就好|就行|即可|就可以|好了|来着|以后|今后)$",
    re.I,
)
_VALUE_HEAD: Final = re.compile(
    r"^(?:(?:now|just|simply|still|currently|definitely|actually|always|probably|mostly|mainly|"
    r"basically|also|a|an)\s+)+",
    re.I,
)
# A negation, or a clause with its own subject ("Team decision: we decided to use X"), is no value;
# nor is a phrase that opens like a description ("to refactor", "very slow", "一个关系型数据库").
_VALUE_NEG: Final = re.compile(
    r"^(?:not|no|never|none|nothing|n't|we|i|you|they|he|she|we're|i'm|i've|we've|let's)\b|^[不没别我你他她]"
    r"|^(?:to|that|this|it|a\s+bit|so|very|too|really|quite|being|because|the\s+same)(?:\s|$)"
    r"|^(?:一个|很|非常|太|有点|这|那)",
    re.I,
)
_VALUE_STOP: Final = frozenset("it this that them something anything yes no ok okay 什么 这个 那个 它".split())
# States and moods, not values: "my build is broken", "our server is down", "我的心情是好的".
_STATE_WORDS: Final = frozenset(
    "broken down up failing failed crashing crashed slow stuck done ready busy tired fine ok okay "
    "good great bad wrong weird gone here there empty full off on running working loading pending "
    "back late early missing open closed better worse correct right true false possible hard easy "
    "angry happy sad upset annoyed excited sick hungry sure confused lost new old big small fast "
    "坏了 挂了 很慢 好了 完了 没了 不行 可以 对的 错的 好的 坏的 不错 挺好 一般 还行".split()
)
# Where a value ends when a shape reads to the end of a sentence: the next clause.
_VALUE_END: Final = re.compile(
    rf"\s*(?:;|,\s|\.\s|\s(?:and|but|because|so|which|though|although)\s|{SEPARATING_COMMA}|[;。]|并且|而且|但是|因为|所以)",
    re.I,
)
# An identifier rather than a description: a URL, e-mail, number, path, version, capitalised
# name, quoted string, acronym or camelCase; in Chinese any Latin letter or digit.
_IDENTIFIER: Final = re.compile(r"https?://|\S@\S+\.\w|\d|[/\\]|^[A-Z\"'`]|^\S*[A-Z]{2}|^[a-z]+[A-Z]")
_LATIN_OR_DIGIT: Final = re.compile(r"[A-Za-z0-9]")
_LIST_SPLIT: Final = re.compile(rf"\s*(?:{SEPARATING_COMMA}|、|\band\b|\bplus\b|和|以及|还有)\s*")
_ARTICLE: Final = re.compile(r"^(?:the|a|an)\s+", re.I)


def trim_value(raw: str) -> str:
    """`raw` without edge punctuation, fillers before it ("just", "now") and after it ("instead",
    "please", "了", "吧")."""
    v = raw
    while True:
        prev = v
        v = _VALUE_HEAD.sub("", _VALUE_TAIL.sub("", v.strip(_EDGE))).strip(_EDGE)
        if v == prev:
            return v


def clause_value(raw: str) -> str:
    """`raw` up to the end of its clause ("Vim, and I like it" -> "Vim")."""
    return _VALUE_END.split(raw, maxsplit=1)[0]


def clean_value(raw: str) -> str | None:
    """The value a phrase names, in product casing ("typescript" -> "TypeScript"), or None when
    it is no value: empty, over 80 characters, more than 8 words (a sentence), a negation, a
    pronoun, a state or mood ("broken", "好的"), a description ("very slow", "一个…")."""
    v = trim_value(raw)
    if (
        not v
        or len(v) > MAX_VALUE_CHARS
        or len(v.split()) > 8
        or "\n" in v
        or _VALUE_NEG.match(v)
        or v.casefold() in _VALUE_STOP
        or v.casefold() in _STATE_WORDS
    ):
        return None
    return canonical_value(v)


def looks_like_value(value: str) -> bool:
    """An identifier-like value (a URL, number, capitalised name ...), or a short Chinese phrase."""
    return _IDENTIFIER.search(value) is not None or (has_han(value) and len(value) <= 12)


def has_latin_or_digit(value: str) -> bool:
    """In Chinese a Latin letter or a digit marks a name or a number ("端口是 6379")."""
    return _LATIN_OR_DIGIT.search(value) is not None


def value_for_key(key: str, raw: str) -> str | None:
    """For a key with a known kind, a known product at the start is the value ("TypeScript for
    the frontend" -> "TypeScript"); otherwise the cleaned phrase."""
    cat = KEY_CATEGORY.get(key)
    if cat:
        hit = known_prefix(trim_value(raw), frozenset({cat}))
        if hit:
            return hit[1]
    return clean_value(raw)


def infer_keys(raw: str, cats: frozenset[str] = ALL_CATEGORIES) -> list[tuple[str, str]]:
    """Keys from the kind of product named: "PostgreSQL" -> database, "macOS and Vim" -> both
    (the first product of each kind)."""
    out: dict[str, str] = {}
    for item in _LIST_SPLIT.split(trim_value(raw)):
        hit = known_prefix(_ARTICLE.sub("", trim_value(item)), cats)
        if hit:
            out.setdefault(CATEGORY_KEY[hit[0]], hit[1])
    return list(out.items())
