"""Time expressions through the module's API (the calendar semantics are tested at length in
tests/pipeline/test_rewrite.py through parse_time_range)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from trimem.text.time_expressions import cover, find_times, local_now, parse_time_range, weekday_words

NOW = datetime(2026, 11, 25, 15, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> int:
    return int(datetime(y, m, d, tzinfo=UTC).timestamp()) * 1_000_000


def test_find_and_cover() -> None:
    text = "上上周和last month"
    found = find_times(text, now=NOW)
    assert [text[f.start : f.end] for f in found] == ["上上周", "last month"]
    covered = cover(found, text)
    assert covered == ((day(2026, 10, 1), day(2026, 11, 16)), text, (0, len(text)))
    assert cover([], text) is None


def test_composites_and_none() -> None:
    parsed = parse_time_range("since 2026-09-01", now=NOW)
    assert parsed is not None and parsed[0] == (day(2026, 9, 1), int(NOW.timestamp()) * 1_000_000 + 1)
    assert parse_time_range("三个月前", now=NOW) is not None
    assert parse_time_range("port 8080 on node.js 3.12", now=NOW) is None


def test_local_now() -> None:
    plus8 = timezone(timedelta(hours=8))
    assert local_now(datetime(2026, 1, 1, 20), plus8) == datetime(2026, 1, 2, 4, tzinfo=plus8)


def test_weekday_words_name_each_day_as_a_habit_is_told() -> None:
    assert weekday_words("Can we meet on a Thursday in December?") == ("thursday", "thursdays")
    assert weekday_words("free this weekend?") == ("weekend", "weekends")
    assert weekday_words("Sunday lunch") == ("sunday", "sundays", "weekend", "weekends")
    # Chinese: the pairs of characters that name the day alone, whichever word the text uses
    assert weekday_words("礼拜天有空不") == ("周日", "期日", "拜日", "周天", "期天", "拜天", "周末")
    assert weekday_words("周末去哪玩") == ("周末", "周六", "周日")
    assert weekday_words("Next month, maybe") == () and weekday_words("每周都去") == ()
