"""Sentences and clauses, and the words that change what a clause asserts: a question, a polite
request, a hypothetical, a negation, a decision.

>>> [s.text for s in sentences("My editor is Vim. Is node.js 3.12 fast? 好的。 Ask Dr. Brown.")]
['My editor is Vim.', 'Is node.js 3.12 fast?', '好的。', 'Ask Dr. Brown.']
>>> clauses("from now on, use Rust as my main language and I'm on macOS")
['from now on, use Rust as my main language', "I'm on macOS"]
>>> is_hypothetical("If we switch the database to MySQL"), is_polite("可以帮我把编辑器改成Vim吗")
(True, True)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final, NamedTuple

from trimem.text.script import SEPARATING_COMMA

__all__ = [
    "Sentence",
    "clauses",
    "has_decision",
    "is_hypothetical",
    "is_polite",
    "negated_before",
    "sentence_ends",
    "sentences",
]

# A title's dot ends no sentence ("My mentor is Dr. Keisha Brown"). The titles are looked for
# behind a dot once it is found, and the alternatives only at a character that may end a
# sentence (the leading lookahead), not at every character: the split is a hot path of recall.
_END_DOT: Final = "".join(rf"(?<!\b{t}\.)" for t in ("Dr", "Mr", "Ms", "Mrs", "Prof", "St", "Jr", "Sr", "vs"))
_SENTENCE_SPLIT: Final = re.compile(rf"((?=[。!?.\n])(?:[。!?]+|\.{_END_DOT}(?=\s|$)|\n+))")
_SENTENCE_END: Final = re.compile(rf"(?=[!?.。\n])(?:[!?](?=\s|$)|\.{_END_DOT}(?=\s|$)|[。!?\n])")
_CLAUSE_SPLIT: Final = re.compile(
    rf"\s*(?:;|{SEPARATING_COMMA})\s*"
    r"|\s+(?:and|also|then|plus)\s+(?=(?:my|i|i'm|im|i've|we|we're|we've|our|let's|let\s+us|"
    r"please|set|switch|change|from\s+now\s+on|the\s+team)\b)"
    r"|\s+(?:but|because|since|so\s+that|due\s+to|as\s+it|as\s+they|given\s+that|although|though|"
    r"whereas)\s+"
    r"|并且|而且|然后|同时|另外|但是|不过|因为|由于|所以|可是",
    re.I,
)
# A bare opener ("from now on,") belongs to the clause after it.
_LEAD_IN: Final = re.compile(
    r"(?:from now on|going forward|from here on|starting (?:today|now)|ok(?:ay)?|so|well|actually|"
    r"also|anyway|btw|by the way|fyi|note|update|heads up|以后|今后|从现在开始|从现在起|从今天起|"
    r"对了|好的|好吧|嗯|顺便说一下)",
    re.I,
)
_QUESTION_END: Final = re.compile(r"(?:吗|么|是不是|对吗|对吧)$")
_POLITE: Final = re.compile(
    r"^\s*(?:please|can you|could you|would you|will you|kindly)\b|请|麻烦|能不能|可不可以|可以帮|帮我|帮俺|帮咱",
    re.I,
)
_HYPOTHETICAL: Final = re.compile(
    r"\b(?:if|whether|maybe|perhaps|might|should\s+(?:i|we)|thinking\s+(?:about|of)|considering|"
    r"consider|plan(?:ning)?\s+to|planning\s+on|wonder(?:ing)?|not\s+sure|unless|in\s+case|"
    r"would\s+it|what\s+if|suppose|supposing)\b"
    r"|如果|假如|要是|是否|也许|或许|可能|考虑|要不要|打算|计划|是不是|会不会",
    re.I,
)
_NEGATION: Final = re.compile(
    r"\b(?:not|don't|dont|do\s+not|doesn't|does\s+not|didn't|did\s+not|won't|will\s+not|never|"
    r"can't|cannot|couldn't|wouldn't|shouldn't|isn't|aren't|wasn't)\b"
    r"|不(?!得不|错|少|久|同|过|仅)|没|别|勿|未(?!来)",
    re.I,
)
_DECISION: Final = re.compile(
    r"\b(?:decided|decision|agreed|settled\s+on|opted\s+(?:for|to)|we(?:'re|\s+are)\s+going\s+with|"
    r"let(?:'s|\s+us)\s+go\s+with|the\s+team\s+(?:chose|picked))\b"
    r"|决定|敲定|定下来|一致同意|达成一致",
    re.I,
)


class Sentence(NamedTuple):
    """One sentence of a text."""

    body: str  # without its end punctuation
    text: str  # as written, with its end punctuation: the evidence a fact cites
    question: bool


def sentences(text: str) -> Iterator[Sentence]:
    """The sentences of a prepared text. A dot ends a sentence only before whitespace or the end,
    so "node.js" and "3.12" stay whole."""
    parts = _SENTENCE_SPLIT.split(text)
    for i in range(0, len(parts), 2):
        body = parts[i].strip()
        end = parts[i + 1] if i + 1 < len(parts) else ""
        if body:
            question = "?" in end or _QUESTION_END.search(body) is not None
            yield Sentence(body, body + end.strip(), question)


def sentence_ends(text: str) -> list[int]:
    """The offsets just past each sentence end in `text` (for numbering a position's sentence)."""
    return [m.end() for m in _SENTENCE_END.finditer(text)]


def clauses(sentence: str) -> list[str]:
    """The clauses of a sentence, a bare lead-in ("from now on,") kept with what follows it."""
    out: list[str] = []
    carry = ""
    for part in _CLAUSE_SPLIT.split(sentence):
        part = part.strip()
        if not part:
            continue
        if _LEAD_IN.fullmatch(part):
            carry = f"{carry}{part}, "
            continue
        out.append(carry + part)
        carry = ""
    return out


def is_polite(sentence: str) -> bool:
    """A polite request ("could you ...", "请", "帮我"): a question that asks for a change."""
    return _POLITE.search(sentence) is not None


def is_hypothetical(clause: str) -> bool:
    """The clause supposes or wonders rather than states ("if", "maybe", "如果", "考虑")."""
    return _HYPOTHETICAL.search(clause) is not None


def negated_before(clause: str, end: int) -> bool:
    """A negation occurs in `clause` before offset `end` ("I don't want to switch ...")."""
    return _NEGATION.search(clause, 0, end) is not None


def has_decision(sentence: str) -> bool:
    """The sentence states a decision ("we decided", "let's go with", "决定")."""
    return _DECISION.search(sentence) is not None
