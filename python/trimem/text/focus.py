"""A request's focus: the sentences that ask, told apart from the context said around them.

"My cousin wants me to come out to Phoenix for her wedding. What's the best way to get there?"
asks how to travel; the cousin and the wedding only set the scene. The facts a request needs are
those of what it asks about first, then those of its scene.

>>> asked_part("My cousin is getting married in Phoenix. What's the best way to get there?")
"What's the best way to get there?"
>>> asked_part("Plan me a week of dinners"), asked_part("我周末想去爬山。帮我看看天气")
('Plan me a week of dinners', '帮我看看天气')
"""

from __future__ import annotations

import functools

from trimem.text.asking import is_request
from trimem.text.script import has_han, prepare_text
from trimem.text.sentences import sentences

__all__ = ["asked_part"]


@functools.lru_cache(maxsize=4096)
def asked_part(text: str) -> str:
    """The sentences of `text` that ask something, joined; all of `text` when every one of them
    asks or none does (nothing then tells the scene from the question)."""
    told = [s.text.strip() for s in sentences(prepare_text(text))]
    asking = [s for s in told if is_request(s)]
    if not asking or len(asking) == len(told):
        return text
    return "".join(asking) if has_han(asking[0]) else " ".join(asking)
