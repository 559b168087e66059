"""A request's keywords: Latin words minus stopwords and CJK runs minus filler, with numbers and
identifiers kept whole (8080, node.js, ERR_CONNECTION_REFUSED), and the instruction that asks for
a deliverable ("write me a script", "帮我写一个脚本") left out.

>>> keywords("Which port did the Node script in Docker use?", lowercase=True)
['port', 'node', 'script', 'docker']
>>> keywords("上个月在Docker里跑的Node脚本用的是哪个端口？", lowercase=False)
['上个月', 'Docker', '跑', 'Node', '脚本', '端口']
>>> text = "write me a script for node.js"
>>> keywords(mask(text, instruction_spans(text)), lowercase=True)
['node.js']
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from trimem.text.script import CJK_RANGE, LATIN_END, LATIN_START
from trimem.text.stopwords import QUERY_STOPWORDS, ZH_QUERY_FILLER, ZH_QUERY_KEEP

__all__ = ["instruction_spans", "keywords", "kin_words", "mask", "name_words", "small_words", "trim_punctuation"]

_W: Final = rf"[^\W{CJK_RANGE}]"  # a word character that is not CJK
# CJK runs, or words kept whole with inner dots, dashes, slashes, colons (node.js, start-up, c++, host:8080)
_TOKEN: Final = re.compile(rf"(?P<cjk>[{CJK_RANGE}]+)|(?P<word>{_W}+(?:[.\-/:@+#]{_W}+)*(?:\+\+|#)?)")
# "write me a script …": the deliverable noun after an instruction verb is part of the instruction
_INSTRUCTION: Final = re.compile(
    LATIN_START
    + r"(?:write|create|generate|make|draft|give|produce|build)\s+(?:(?:me|us)\s+)?(?:(?:a|an|the|some)\s+)?"
    r"(?:(?:quick|simple|small|short|new|little)\s+)?(?:script|function|program|snippet|code|command)s?"
    + LATIN_END
    + r"|(?:请|麻烦)?你?(?:帮我们|帮我|给我|替我|为我)?写一?[个份段]?(?:简单的|小)?(?:脚本|程序|函数|代码|命令)",
    re.IGNORECASE,
)
_ZH_MAXLEN: Final = max(map(len, ZH_QUERY_FILLER | ZH_QUERY_KEEP))
_EDGE_PUNCT: Final = re.compile(r"^[\s?!.,;:？！。，；：、]+|[\s?!.,;:？！。，；：、]+$")


def _zh_segments(run: str) -> list[str]:
    """A CJK run with filler cut out (forward maximum matching against a small lexicon)."""
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(run):
        for n in range(min(_ZH_MAXLEN, len(run) - i), 0, -1):
            piece = run[i : i + n]
            if piece in ZH_QUERY_FILLER:
                if cur:
                    out.append("".join(cur))
                    cur = []
                break
            if piece in ZH_QUERY_KEEP:
                cur.append(piece)
                break
        else:
            n = 1
            cur.append(run[i])
        i += n
    if cur:
        out.append("".join(cur))
    return out


def instruction_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the instructions asking for a deliverable ("write me a script", "帮我写一个脚本")."""
    return [m.span() for m in _INSTRUCTION.finditer(text)]


def mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` with the spans blanked out by spaces (offsets elsewhere stay valid)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


def keywords(text: str, *, lowercase: bool) -> list[str]:
    """Content words in order: Latin words minus stopwords, CJK runs minus filler; deduplicated.
    With ``lowercase=False`` Latin words keep their case (inside Chinese text capitals are
    deliberate: Docker)."""
    out: list[str] = []
    seen: set[str] = set()
    for m in _TOKEN.finditer(text):
        if m["cjk"]:
            words = _zh_segments(m["cjk"])
        else:
            word = m["word"]
            words = [] if word.lower() in QUERY_STOPWORDS else [word.lower() if lowercase else word]
        for w in words:
            if w.lower() not in seen:
                seen.add(w.lower())
                out.append(w)
    return out


def trim_punctuation(text: str) -> str:
    """`text` without punctuation and spaces at its ends, inner spaces folded."""
    return " ".join(_EDGE_PUNCT.sub("", text).split())


# A word of a name: capitalised inside a sentence ("Barton Springs Mill", "my partner Lukas").
_NAME_WORD: Final = re.compile(r"(?<=[a-z0-9,;:)'’] )[A-Z][^\W\d_]+")
_SMALL_WORD: Final = re.compile(r"\b[a-z]{2,}\b")
_CAPITAL_I: Final = re.compile(r"\bI\b")


def name_words(text: str) -> list[str]:
    """The English words of names in `text`: capitalised inside a sentence (a sentence's first
    word may be any word).

    >>> name_words("We go through Barton Springs Mill now. Lukas agrees.")
    ['Barton', 'Springs', 'Mill']
    """
    return _NAME_WORD.findall(text)


# People of one's life by how they are kin to one ("my daughter", "俺闺女", "老伴")
_KIN: Final = re.compile(
    r"\b(?:mother-in-law|father-in-law|daughter-in-law|son-in-law|in-laws|wife|husband|partner|fianc[eé]e?|girlfriend|boyfriend|son|sons|daughter|daughters|kid|kids|child|"
    r"children|stepson|stepdaughter|mum|mom|mother|dad|father|parents|sister|brother|sibling|grandson|"
    r"granddaughter|grandkid|grandkids|grandchildren|grandma|grandmother|grandpa|grandfather|niece|nephew|"
    r"cousin|aunt|uncle|hubby|missus)\b"
    r"|老婆|媳妇|老公|爱人|儿子|女儿|闺女|孩子|妈妈|爸爸|老妈|老爸|爹妈|爸妈|父母|妹妹|弟弟|姐姐|哥哥|奶奶|爷爷|外婆|外公|"
    r"姥姥|姥爷|婆婆|公公|岳母|岳父|孙子|孙女|外孙女|外孙|老伴|老头子|老头|老太太|老太",
    re.I,
)


def kin_words(text: str) -> list[str]:
    """The words of `text` that name someone by how they are kin to the speaker ("daughter",
    "闺女"): two notes sharing only these are about someone, not about one subject of theirs.

    >>> kin_words("My daughter Isla started nursery."), kin_words("儿子给买了个华为手机")
    (['daughter'], ['儿子'])
    """
    return [m.group() for m in _KIN.finditer(text)]


def small_words(text: str) -> list[str] | None:
    """The English words `text` writes small, when it writes names with capitals (it has a word
    of a name or a capital "I"), so that a word written small is no name; None when case tells
    nothing ("im off to barton springs").

    >>> small_words("I moved here this spring."), small_words("moved here this spring")
    (['moved', 'here', 'this', 'spring'], None)
    """
    if not name_words(text) and _CAPITAL_I.search(text) is None:
        return None
    return _SMALL_WORD.findall(text)
