"""A request's focus: the sentences that ask, apart from the scene said around them."""

from __future__ import annotations

import pytest

from trimem.text.focus import asked_part


@pytest.mark.parametrize(
    ("request_text", "asked"),
    [
        ("My cousin is getting married in Phoenix. What's the best way to get there?", "What's the best way to get there?"),
        ("Church potluck on Sunday and I'm bringing a side. What should I make?", "What should I make?"),
        ("Big week. Can you plan my meals? Remind me to call Mum too.", "Can you plan my meals? Remind me to call Mum too."),
        # one sentence, or every sentence asking: nothing tells a scene from the question
        ("Plan me a week of dinners", "Plan me a week of dinners"),
        ("What's on? Anything good?", "What's on? Anything good?"),
        ("The weather is lovely today.", "The weather is lovely today."),
        ("下周去成都出差。帮我订个酒店吧", "帮我订个酒店吧"),
    ],
)  # fmt: skip
def test_the_asking_sentences_are_the_focus(request_text: str, asked: str) -> None:
    assert asked_part(request_text) == asked
