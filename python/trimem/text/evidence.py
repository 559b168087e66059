"""A keyed fact's evidence: the sentence the user said it in, when that sentence says more than the
key and the value. "I live in East Van, just off Commercial Drive" keys ``city: East Van``; the
street, which a request for somewhere near home needs, is only in the user's words.

>>> evidence_of("city", "East Van", "I live in East Van, just off Commercial Drive. Love it here!")
'I live in East Van, just off Commercial Drive.'
>>> evidence_of("editor", "Vim", "My favourite editor is Vim."), evidence_of("city", "里斯本", "我住在里斯本")
(None, None)
>>> evidence_of("最爱", "IPA", "我喜欢喝精酿，IPA 是我的最爱。")
'我喜欢喝精酿,IPA 是我的最爱。'
"""

from __future__ import annotations

import re
from typing import Final

from trimem.text.keys import KEY_PHRASES
from trimem.text.notes import NOT_SUBJECT_HAN, NOT_SUBJECT_WORDS
from trimem.text.script import has_han, prepare_text
from trimem.text.sentences import sentences
from trimem.text.stopwords import QUERY_STOPWORDS

__all__ = ["MAX_EVIDENCE_CHARS", "evidence_of"]

MAX_EVIDENCE_CHARS: Final = 120
"""A longer sentence is not shown as evidence: a profile line stays a line."""
_MORE_WORDS: Final = 2  # English content words beyond the key and the value that make it say more
_MORE_HAN: Final = 3  # Chinese characters beyond them, grammar characters aside

_EN_WORD: Final = re.compile(r"[a-z0-9][a-z0-9']+")
_HAN: Final = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_SAY_NOTHING: Final = (
    QUERY_STOPWORDS
    | frozenset(NOT_SUBJECT_WORDS.split())
    | frozenset(
        "my our i i'm i've we we're is are was be been am favourite favorite fav current currently main live "
        "use using called named name".split()
    )
)


def evidence_of(key: str, value: str, text: str) -> str | None:
    """The sentence of `text` that names `value`, when it says more than `key` and `value` (see
    the module); else None."""
    needle = prepare_text(value).casefold()
    if not needle:
        return None
    for s in sentences(prepare_text(text)):
        said = s.text.strip()
        if needle not in said.casefold():
            continue
        if len(said) > MAX_EVIDENCE_CHARS:
            return None
        return said if _says_more(key, needle, said.casefold()) else None
    return None


def _says_more(key: str, value: str, said: str) -> bool:
    named = f"{key.replace('_', ' ')} {KEY_PHRASES.get(key, '')} {value}".casefold()
    if has_han(said):
        known = set(_HAN.findall(named)) | NOT_SUBJECT_HAN
        if sum(c not in known for c in _HAN.findall(said)) >= _MORE_HAN:
            return True
    known_words = set(_EN_WORD.findall(named)) | _SAY_NOTHING
    return sum(w not in known_words for w in _EN_WORD.findall(said)) >= _MORE_WORDS
