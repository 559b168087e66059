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

import functools
import re
from typing import Final

from trimem.text.keys import KEY_PHRASES
from trimem.text.notes import carries_on
from trimem.text.script import HAN_CHAR, has_han, prepare_text
from trimem.text.sentences import sentences
from trimem.text.stopwords import NOT_SUBJECT, NOT_SUBJECT_HAN

__all__ = ["MAX_EVIDENCE_CHARS", "evidence_of"]

MAX_EVIDENCE_CHARS: Final = 120
MAX_CARRIED_ON_CHARS: Final = 120  # beyond it, for the sentences that go on about the same subject
"""A longer sentence is not shown as evidence: a profile line stays a line."""
_MORE_WORDS: Final = 2  # English content words beyond the key and the value that make it say more
_MORE_HAN: Final = 3  # Chinese characters beyond them, grammar characters aside

_EN_WORD: Final = re.compile(r"[a-z0-9][a-z0-9']+")
# words that say nothing of a fact beside its key and value
_SAY_NOTHING: Final = NOT_SUBJECT | frozenset(
    "my our i i'm i've we we're is are was be been am favourite favorite fav current currently main live "
    "use using called named name".split()
)


@functools.lru_cache(maxsize=4096)  # asked of the same facts by every recall that shows them
def evidence_of(key: str, value: str, text: str) -> str | None:
    """The sentence of `text` that names `value`, when it says more than `key` and `value` (see
    the module); else None."""
    needle = prepare_text(value).casefold()
    text = prepare_text(text)
    if not needle or needle not in text.casefold():
        return None
    told = list(sentences(text))
    at = next((i for i, s in enumerate(told) if needle in s.text.casefold()), None)
    if at is None or len(said := told[at].text.strip()) > MAX_EVIDENCE_CHARS:
        return None
    # what the user went on to say of the same subject is theirs too ("My brother Kai is 19.
    # He's obsessed with trains."): a request about Kai needs the trains
    for s in told[at + 1 :]:
        more = s.text.strip()
        if (
            not carries_on(s)
            or len(said) + 1 + len(more) > MAX_EVIDENCE_CHARS + MAX_CARRIED_ON_CHARS
            or not _says_more(key, needle, more.casefold(), at_least=_MORE_WORDS + 1)  # not "Love it!"
        ):
            break
        said += more if has_han(said) else f" {more}"
    return said if _says_more(key, needle, said.casefold()) else None


@functools.lru_cache(maxsize=4096)
def _key_words(key: str) -> tuple[frozenset[str], frozenset[str]]:
    """The English words and Chinese characters of a key and its phrases in either language."""
    named = f"{key.replace('_', ' ')} {KEY_PHRASES.get(key, '')}".casefold()
    return frozenset(_EN_WORD.findall(named)), frozenset(HAN_CHAR.findall(named))


def _says_more(key: str, value: str, said: str, *, at_least: int = _MORE_WORDS) -> bool:
    words, chars = _key_words(key)
    if has_han(said):
        value_chars = set(HAN_CHAR.findall(value))
        new = [
            c for c in HAN_CHAR.findall(said) if c not in chars and c not in value_chars and c not in NOT_SUBJECT_HAN
        ]
        if len(new) >= _MORE_HAN:
            return True
    value_words = set(_EN_WORD.findall(value))
    more = 0
    for w in _EN_WORD.findall(said):
        if w not in words and w not in value_words and w not in _SAY_NOTHING:
            more += 1
            if more >= at_least:
                return True
    return False
