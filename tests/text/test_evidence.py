"""A keyed fact's evidence: the user's sentence naming the value, kept when it says more."""

from __future__ import annotations

import pytest

from trimem.text.evidence import MAX_EVIDENCE_CHARS, evidence_of


@pytest.mark.parametrize(
    ("key", "value", "text", "shown"),
    [
        ("city", "East Van", "I live in East Van, just off Commercial Drive. Love it.", "I live in East Van, just off Commercial Drive."),
        ("maintenance_window", "Patch Tuesday night", "Patch Tuesday night is my maintenance window, 10pm to 2am.",
         "Patch Tuesday night is my maintenance window, 10pm to 2am."),
        ("artist_collaborator", "Sofia", "My artist collaborator is Sofia, she's in Buenos Aires.",
         "My artist collaborator is Sofia, she's in Buenos Aires."),
        ("最爱", "IPA", "我喜欢喝精酿，IPA 是我的最爱。", "我喜欢喝精酿,IPA 是我的最爱。"),
        # what the user goes on to say of the same subject is kept with it; a question or an aside is not
        ("little_brother_kai", "19",
         "My little brother Kai is 19, lives with Mum. He's obsessed with trains and knows every timetable by heart. "
         "What could I get him?",
         "My little brother Kai is 19, lives with Mum. He's obsessed with trains and knows every timetable by heart."),
        ("弟弟", "小凯", "我弟弟叫小凯，19岁。他特别迷火车，时刻表都背得出来。你说送他啥好？",
         "我弟弟叫小凯,19岁。他特别迷火车,时刻表都背得出来。"),
        ("city", "Lisbon", "I live in Lisbon, near the river. It floods the lower streets every winter. Love it.",
         "I live in Lisbon, near the river. It floods the lower streets every winter."),
        # says nothing beyond the key (its phrases in either language) and the value
        ("editor", "Vim", "My favourite editor is Vim.", None),
        ("primary_language", "Rust", "把我的主力语言改成 Rust 吧", None),
        ("city", "里斯本", "我住在里斯本", None),
        ("name", "Sam", "Hi! My name is Sam.", None),
        # the value is not in the words (canonicalised) or the sentence is too long to be a line
        ("database", "PostgreSQL", "we're on postgres now, it's fine by the team", None),
        ("city", "Oslo", "I live in Oslo " + "and more words " * 20, None),
    ],
)  # fmt: skip
def test_the_sentence_naming_the_value_is_kept_when_it_says_more(
    key: str, value: str, text: str, shown: str | None
) -> None:
    assert evidence_of(key, value, text) == shown


def test_evidence_is_one_line() -> None:
    long = "I live in Oslo, " + "near the fjord and the old harbour, " * 5
    assert len(long) > MAX_EVIDENCE_CHARS and evidence_of("city", "Oslo", long) is None
    assert evidence_of("city", "", "I live in Oslo, near the fjord.") is None
