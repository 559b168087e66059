"""Reading JSON out of a model's answer. Models wrap JSON in prose ("Sure! Here it is:") and code
fences; the first JSON value of the wanted shape is what they meant. The rewriter, the router,
reflect's LLM extractor and the graph's LLM extractor all read answers through this module.

>>> json_object('Sure!\\n```json\\n{"layer": "working"}\\n```')
{'layer': 'working'}
>>> json_array('Here you go: [1, 2] (two items)'), json_array('{"changes": [{"op": "set"}]}')
([1, 2], [{'op': 'set'}])
>>> json_object("no JSON here") is None
True
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["MAX_ANSWER_CHARS", "json_array", "json_object", "json_value"]

MAX_ANSWER_CHARS: Final = 1_000_000
"""Only the head of an answer is searched for a JSON start: a runaway answer costs no more."""

_OBJECT_START: Final = re.compile(r"\{")
_VALUE_START: Final = re.compile(r"[\[{]")
_FENCE: Final = re.compile(r"```[a-zA-Z]*\s*(.*?)\s*```", re.S)
_DECODER: Final = json.JSONDecoder()


def _values(answer: str, starts: re.Pattern[str]) -> Any:
    """Each JSON value that starts at a match of `starts`, in order (text that does not decode is
    skipped)."""
    for m in starts.finditer(answer, 0, MAX_ANSWER_CHARS):
        try:
            value, _ = _DECODER.raw_decode(answer, m.start())
        except ValueError:
            continue
        yield value


def json_object(answer: str) -> dict[str, Any] | None:
    """The first JSON object in `answer` (prose or code fences around it are fine), or None."""
    for value in _values(answer, _OBJECT_START):
        if isinstance(value, dict):
            return value
    return None


def json_array(answer: str) -> list[Any] | None:
    """The first JSON array in `answer`, or None; a top-level object holding exactly one list
    (``{"changes": [...]}``) counts as that list."""
    for value in _values(answer, _VALUE_START):
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            lists = [v for v in value.values() if isinstance(v, list)]
            if len(lists) == 1:
                return lists[0]
    return None


def json_value(answer: str | bytes) -> Any:
    """The answer decoded strictly as one JSON value, a surrounding code fence allowed; raises
    ``ValueError`` (``json.JSONDecodeError`` or ``UnicodeDecodeError``) when it is not JSON. For
    callers that must report malformed output rather than look past it.

    >>> json_value('```json\\n{"entities": []}\\n```')
    {'entities': []}
    """
    text = (answer.decode() if isinstance(answer, bytes) else answer).strip()
    fence = _FENCE.fullmatch(text)
    return json.loads(fence.group(1) if fence else text)
