"""Cues: an item prepared once, the gates that skip a cue, and the cues' readings."""

from __future__ import annotations

from trimem.text.cues import (
    DECISION,
    FILLER,
    INCIDENT,
    MARKERS,
    MAX_SCAN_CHARS,
    PAST,
    PREFERENCE,
    TIME,
    TOOL_OUTPUT,
    han_count,
    is_question,
    read_item,
    working,
)


def test_read_item() -> None:
    x = read_item("  我的邮箱是ａ@ｂ.com  ")
    assert (x.t, x.zh, x.language, x.digits) == ("我的邮箱是a@b.com", True, "zh", False)
    y = read_item("I'm on port 8080 " + "x" * 3 * MAX_SCAN_CHARS)
    assert len(y.t) <= MAX_SCAN_CHARS and "i'm" in y.words and y.digits and y.language == "en"


def test_cue_gates_skip_text_without_cue_words() -> None:
    assert PAST.search(read_item("we deployed v2")) is not None
    assert PAST.search(read_item("They deployed v2")) is None  # no first person: the gate is shut
    assert TIME.anywhere("明天") and not TIME.anywhere("截止日期")
    assert TIME.search(read_item("3天前服务器宕机了")) is not None  # the digit pattern
    assert TIME.search(read_item("三天前服务器宕机了")) is not None  # the Chinese numeral pattern


def test_readings() -> None:
    assert FILLER.fullmatch("ok thanks") and FILLER.fullmatch("好的谢谢") and not FILLER.fullmatch("ok deploy")
    assert is_question(read_item("端口是多少？")) and is_question(read_item("how are you"))
    assert not is_question(read_item("how to reset the cache"))
    assert working(read_item("I'm currently looking at the logs")) is not None
    assert DECISION.search(read_item("we settled on Kafka")) is not None
    assert PREFERENCE.search(read_item("我习惯用空格缩进")) is not None
    assert MARKERS.search(read_item("记住，我的邮箱是 a@b.com")) is not None
    assert INCIDENT.search(read_item("the deploy failed")) is not None
    assert TOOL_OUTPUT.match("traceback (most recent call last):") is not None
    assert han_count("Python 的 GIL 限制") == 3
