"""Whose change a message tells: the user's own ("I quit", "we moved") or someone else's ("Jobin
changed jobs", "my wife Marion passed away", "儿子辞职回苏州了"), read from the words that open the
clause telling it. Someone else's change replaces only what was said of them: "Jobin changed jobs"
is not about "I'm an ICU nurse".

>>> told_of("Jobin changed jobs, he is at a software company now", ["I'm a nurse.", "For our anniversary Jobin bought me a mixer."])
('Jobin',)
>>> told_of("my wife Marion passed away", []), told_of("儿子辞职回苏州了", []), told_of("I changed jobs", [])
(('wife', 'Marion'), ('儿子',), None)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from trimem.text.script import has_han, without_spaces
from trimem.text.stopwords import CAPITALISED_STOPWORDS, NOT_SUBJECT
from trimem.text.words import kin_words, name_words

__all__ = ["mentions", "told_of"]

# "my (older) sister Anca …", "our boy Anders …": a kin word, and the name after it
_EN_OPENING_KIN: Final = re.compile(
    r"(?i:my|our)\s+(?:(?i:little|older|younger|eldest|oldest|youngest|baby|big|teenage|elderly|other)\s+)?"
    r"([\w-]+)(?:,?\s+([A-Z][^\W\d_]+))?"
)
# (not "Charmaine and I moved": a change of the user's own too; nor a verb before its object:
# "Sold the boat", "Got my licence")
_EN_OPENING_NAME: Final = re.compile(
    r"([A-Z][^\W\d_]+)(?:'s|’s)?\b(?!\s*(?:and|&)\s+(?:I|me|myself)\b)"
    r"(?!\s+(?i:the|a|an|my|our|his|her|their|its|it|them|me|us|this|that|these|those|some)\b)"
)
_ZH_OWN: Final = re.compile(r"^(?:我|俺|咱)(?:的|家)?")
# "wife Aoife", "my son, Tom": who someone named is to the user
_EN_KIN_NAME: Final = re.compile(r"\b([a-z][\w-]+),?\s+([A-Z][^\W\d_]+)")


def told_of(change: str, notes: Iterable[str]) -> tuple[str, ...] | None:
    """The words naming someone other than the user whose change the clause `change` tells (a
    kin word, a name, and what the user's `notes` call them besides: "my wife Aoife"), or None
    when it opens with the user or with no one it can tell. A capitalised opening word is a name
    only when the notes (or the change) write it with a capital inside a sentence and never
    small: "Sold the boat" opens with no one."""
    text = change.strip()
    notes = list(notes)
    if has_han(text):
        core = _ZH_OWN.sub("", without_spaces(text))
        kin = kin_words(core[:4])
        return (kin[0],) if kin and core.startswith(kin[0]) else None
    m = _EN_OPENING_KIN.match(text)
    if m is not None and kin_words(m[1]) == [m[1]]:
        who = (m[1], m[2]) if m[2] else (m[1],)
    else:
        m = _EN_OPENING_NAME.match(text)
        if m is None or m[1].casefold() in CAPITALISED_STOPWORDS or m[1].casefold() in NOT_SUBJECT:
            return None
        name = m[1]
        said = [*notes, text]
        small = re.compile(rf"\b{re.escape(name.lower())}\b")
        capital = re.compile(rf"\b{re.escape(name)}\b")
        # a name: written with a capital inside a sentence, or opening two of the user's texts,
        # and never small ("Mum's moved into a flat in York": a kin word is someone anyway)
        named = any(name in name_words(t) for t in said) or sum(bool(capital.search(t)) for t in said) >= 2
        if not kin_words(name) and (any(small.search(t) for t in said) or not named):
            return None
        who = (name,)
    # what else the user calls them: "Aoife got the job" is about "my wife teaches in Cork"
    keys = {w.casefold() for w in who}
    pairs = [(kin, name) for t in notes for kin, name in _EN_KIN_NAME.findall(t) if kin_words(kin) == [kin]]
    also = {w for kin, name in pairs if {kin.casefold(), name.casefold()} & keys for w in (kin, name)}
    return (*who, *sorted(w for w in also if w.casefold() not in keys))


def mentions(text: str, word: str) -> bool:
    """Whether `text` names `word` (as a whole word, whatever its case; in Chinese, anywhere).

    >>> mentions("our vet is Doc Halvorsen", "halvorsen"), mentions("a new program", "Ram")
    (True, False)
    """
    if has_han(word):
        return word in text
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text, re.I) is not None
