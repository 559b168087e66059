"""Time expressions: the range a text mentions, read in the caller's time zone against an
injectable ``now`` ("last month", "the week before last", "上个月", "上上周", "三天前", "2026-09-01").

Ranges are half-open ``[lo, hi)``; calendar words mean calendar periods ("last week" is the
previous Monday-Sunday week, "last month" the previous calendar month), "the last N days" is a
rolling window ending at ``now``; "since A", "between A and B", "从A到B", "A以来" compose.

>>> from datetime import datetime, timezone
>>> now = datetime(2026, 11, 25, 15, 30, tzinfo=timezone.utc)
>>> [(f.start, f.end) for f in find_times("上上周和last month", now=now)]
[(0, 3), (4, 14)]
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from trimem.text.script import LATIN_END, LATIN_START

__all__ = ["TimeMention", "cover", "event_time", "find_times", "local_now", "parse_time_range", "weekday_words"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_UNITS = ("hour", "day", "week", "month", "year")
_Range = tuple[datetime, datetime]  # aware datetimes, half-open


def _to_us(t: datetime) -> int:
    return (t - _EPOCH) // _US


def _add_months(year: int, month: int, k: int) -> tuple[int, int]:
    i = year * 12 + month - 1 + k
    return i // 12, i % 12 + 1


def _minus_months(t: datetime, k: int) -> datetime:
    """`t` moved back `k` calendar months, the day clamped to the month's length (Feb 29 → 28)."""
    y, m = _add_months(t.year, t.month, -k)
    return t.replace(year=y, month=m, day=min(t.day, calendar.monthrange(y, m)[1]))


@dataclass(frozen=True, slots=True)
class _Clock:
    """Calendar arithmetic in the caller's zone; `now` is aware and already in `tz`."""

    now: datetime
    tz: tzinfo

    @property
    def today(self) -> date:
        return self.now.date()

    def at(self, d: date) -> datetime:
        return datetime(d.year, d.month, d.day, tzinfo=self.tz)

    def days(self, d: date, n: int = 1) -> _Range:
        return self.at(d), self.at(d + timedelta(days=n))

    def week(self, d: date) -> _Range:
        return self.days(d - timedelta(days=d.weekday()), 7)

    def month(self, year: int, month: int) -> _Range:
        ny, nm = _add_months(year, month, 1)
        return self.at(date(year, month, 1)), self.at(date(ny, nm, 1))

    def year(self, year: int) -> _Range:
        return self.at(date(year, 1, 1)), self.at(date(year + 1, 1, 1))

    def ago(self, unit: str, n: int) -> _Range:
        """The calendar `unit` (hour, day, Monday-Sunday week, month, year) `n` units back."""
        t = self.today
        if unit == "hour":  # the local clock hour, measured in real time
            start = (self.now.astimezone(UTC) - timedelta(hours=n)).astimezone(self.tz)
            start = start.replace(minute=0, second=0, microsecond=0)
            return start, start.astimezone(UTC) + timedelta(hours=1)
        if unit == "day":
            return self.days(t - timedelta(days=n))
        if unit == "week":
            return self.week(t - timedelta(weeks=n))
        if unit == "month":
            return self.month(*_add_months(t.year, t.month, -n))
        return self.year(t.year - n)

    def rolling(self, unit: str, n: int) -> _Range:
        """[now − n units, now]; days, weeks and months counted on the wall clock."""
        now = self.now
        if unit in ("day", "week"):
            start = now - timedelta(days=n * (7 if unit == "week" else 1))
        elif unit == "hour":
            start = now.astimezone(UTC) - timedelta(hours=n)
        else:
            start = _minus_months(now, n * (12 if unit == "year" else 1))
        return start, now + _US

    def weekday(self, wd: int, week_offset: int | None) -> _Range:
        """Day `wd` (Monday = 0) of the week `week_offset` weeks from this one, or with None the
        most recent such day before today."""
        t = self.today
        if week_offset is None:
            return self.days(t - timedelta(days=(t.weekday() - wd) % 7 or 7))
        return self.days(t - timedelta(days=t.weekday() - wd, weeks=-week_offset))

    def weekend(self, week_offset: int) -> _Range:
        return self.days(self.today - timedelta(days=self.today.weekday() - 5, weeks=-week_offset), 2)

    def recent_month(self, month: int, *, before_this: bool = False) -> _Range:
        """The most recent `month` not in the future (strictly before this month if asked)."""
        t = self.today
        past = month < t.month or (month == t.month and not before_this)
        return self.month(t.year if past else t.year - 1, month)

    def recent_day(self, month: int, day: int) -> _Range | None:
        """The most recent `month`/`day` not in the future (Feb 29 looks back to a leap year)."""
        for y in range(self.today.year, self.today.year - 9, -1):
            try:
                d = date(y, month, day)
            except ValueError:
                continue
            if d <= self.today:
                return self.days(d)
        return None

    def day_of(self, year: int, month: int, day: int | None) -> _Range:
        return self.month(year, month) if day is None else self.days(date(year, month, day))


_Resolve = Callable[[re.Match[str], _Clock], _Range | None]


@dataclass(frozen=True, slots=True)
class _Rule:
    gate: tuple[str, ...]  # cheap pre-check: one of these substrings must be in the lowercased text
    pattern: re.Pattern[str]
    resolve: _Resolve
    weak: bool = False  # only a time expression inside "since …" / "between … and …" (a bare year, "May")
    recurring: str = ""  # "week"/"year": a bare weekday/month, moved a cycle when a range would run backwards


@dataclass(frozen=True, slots=True)
class TimeMention:
    """One time expression found in a text: its span and the range it means (aware datetimes)."""

    start: int
    end: int
    lo: datetime
    hi: datetime
    weak: bool = False
    recurring: str = ""


def _unit(word: str) -> str:
    """ "days" → "day"."""
    return next(u for u in _UNITS if word.lower().startswith(u))


_EN_NUMBERS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"a": 1, "an": 1, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60}
_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}


def _en_int(s: str) -> int:
    s = s.lower()
    if "couple" in s:
        return 2
    return int(s) if s.isdecimal() else _EN_NUMBERS[s]


def _zh_int(s: str) -> int:
    """Digits or a Chinese numeral below 1000 (三, 十二, 二十三, 两, 一百零五)."""
    if s.isdecimal():
        return int(s)
    total = cur = 0
    for ch in s:
        if ch in _ZH_DIGITS:
            cur = _ZH_DIGITS[ch]
        elif ch in "十百":
            total += (cur or 1) * (10 if ch == "十" else 100)
            cur = 0
        else:
            raise ValueError(s)
    return total + cur


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ZH_WEEKDAYS = {c: i for i, c in enumerate("一二三四五六日")} | {"天": 6} | {str(i + 1): i for i in range(7)}
_MONTHS = (
    {calendar.month_name[i].lower(): i for i in range(1, 13)}
    | {calendar.month_abbr[i].lower(): i for i in range(1, 13)}
    | {"sept": 9}
)
_ZH_OFFSETS = {"上上": -2, "上": -1, "本": 0, "这": 0, "大前年": -3, "前年": -2, "去年": -1, "今年": 0}

# regex building blocks; English words are delimited by Latin boundaries so they also match inside
# Chinese text ("自2026-09-01以来", "我last week…")
_L, _R = LATIN_START, LATIN_END
_NUM = r"(?P<n>\d{1,3}|(?:a\s+)?couple(?:\s+of)?|" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>hour|day|week|month|year)s?"
_WD = r"(?P<wd>" + "|".join(_WEEKDAYS) + ")"
_FULL = [calendar.month_name[i].lower() for i in range(1, 13)]
_MON_ALL = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_MON_FULL = r"(?P<mon>" + "|".join(_FULL) + ")"
_MON_SAFE = r"(?P<mon>" + "|".join(m for m in _FULL if m not in ("may", "march")) + ")"  # not also verbs
_PHASE = r"(?:(?:early|mid|late)[\s-]+)?"
_ZN = r"(?P<n>\d{1,3}|[零〇一二两三四五六七八九十百]{1,4})"
_ZM = r"(?P<m>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])\s*月份?"
_ZD = r"(?:\s*(?P<d>3[01]|[12]\d|0?[1-9]|[二三]?十[一二三四五六七八九]?|[一二三四五六七八九])\s*[日号])?"
_ZUNIT = r"(?:(?P<day>天|日)|个?(?P<week>周|星期|礼拜)|个(?P<month>月)|(?P<year>年)|个?(?P<hour>小时|钟头))"
_ZUNIT_LOOSE = _ZUNIT.replace("个(?P<month>", "个?(?P<month>")  # "近3月" is unambiguous after 近
_ZPART = r"(?:早上|上午|中午|下午|傍晚|晚上|夜里|凌晨)?"


def _zh_unit(m: re.Match[str]) -> str:
    return next(u for u in _UNITS if m[u])


def _en_last(m: re.Match[str], c: _Clock) -> _Range | None:
    """last/past/previous/this [N] unit: a number or "the last"/"past" is a rolling window."""
    which, unit, n = m["which"].lower(), _unit(m["unit"]), m["n"]
    if which in ("this", "current"):
        return None if n else c.ago(unit, 0)
    if n is not None:
        return c.rolling(unit, _en_int(n))
    if which == "past" or (which == "last" and m["the"]):
        return c.rolling(unit, 1)
    return c.ago(unit, 1)


def _en_weekday(m: re.Match[str], c: _Clock) -> _Range:
    which = (m["which"] or "").lower()
    offset = {"last": -1, "previous": -1, "this": 0}.get(which)
    return c.weekday(_WEEKDAYS.index(m["wd"].lower()), offset)


def _en_month(m: re.Match[str], c: _Clock) -> _Range:
    month, which = _MONTHS[m["mon"].lower()], (m.groupdict().get("which") or "").lower()
    if which == "this":
        return c.month(c.today.year, month)
    return c.recent_month(month, before_this=which in ("last", "previous"))


def _date(m: re.Match[str], c: _Clock, month: int) -> _Range | None:
    """A day (or month when there is no day), in the given year or else the most recent one."""
    y, d = m.groupdict().get("y"), m.groupdict().get("d")
    if y:
        return c.day_of(int(y), month, None if d is None else _zh_int(d))
    return c.recent_month(month) if d is None else c.recent_day(month, _zh_int(d))


def _zh_rolling(m: re.Match[str], c: _Clock) -> _Range | None:
    unit = _zh_unit(m)
    if m["n"] == "半":  # 最近半年 / 近半个月
        return c.rolling("month", 6) if unit == "year" else c.rolling("day", 15) if unit == "month" else None
    return c.rolling(unit, _zh_int(m["n"]))


def _zh_week(m: re.Match[str], c: _Clock) -> _Range:
    offset = _ZH_OFFSETS[m["rel"]]
    if m["wd"]:
        return c.weekday(_ZH_WEEKDAYS[m["wd"]], offset)
    if m["end"]:
        return c.weekend(offset)
    return c.week(c.today + timedelta(weeks=offset))


def _zh_month_rel(m: re.Match[str], c: _Clock) -> _Range:
    y, mo = _add_months(c.today.year, c.today.month, _ZH_OFFSETS[m["rel"].rstrip("个")])
    return c.day_of(y, mo, None if m["d"] is None else _zh_int(m["d"]))


def _zh_year_rel(m: re.Match[str], c: _Clock) -> _Range:
    y = c.today.year + _ZH_OFFSETS[m["rel"]]
    if m["m"] is None:
        return c.year(y)
    return c.day_of(y, _zh_int(m["m"]), None if m["d"] is None else _zh_int(m["d"]))


# gates: a rule's regex runs only when one of these substrings is in the lowercased text
_G_DIGIT = tuple("0123456789")
_G_MONTH = tuple(calendar.month_abbr[i].lower() for i in range(1, 13))
_G_LAST = ("last", "past", "previous", "this", "current")
_G_ZH_WEEK = ("周", "星期", "礼拜")


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _en(gate: tuple[str, ...], pattern: str, resolve: _Resolve, *, weak: bool = False, recurring: str = "") -> _Rule:
    """An English rule: case-insensitive, between Latin word boundaries."""
    return _Rule(gate, _re(_L + pattern + _R), resolve, weak, recurring)


def _zh(gate: tuple[str, ...], pattern: str, resolve: _Resolve, *, weak: bool = False, recurring: str = "") -> _Rule:
    """A rule matched as written (Chinese, digits)."""
    return _Rule(gate, re.compile(pattern), resolve, weak, recurring)


_RULES: tuple[_Rule, ...] = (
    # ---- English: days
    _en(("yesterday",), r"(?:the\s+)?day\s+before\s+yesterday", lambda m, c: c.ago("day", 2)),
    _en(
        ("yesterday", "night"),
        r"(?:yesterday(?:\s+(?:morning|afternoon|evening|night))?|last\s+night)",
        lambda m, c: c.ago("day", 1),
    ),
    _en(
        ("today", "tonight", "this"),
        r"(?:today|tonight|this\s+(?:morning|afternoon|evening))",
        lambda m, c: c.ago("day", 0),
    ),
    # ---- English: relative weeks, months, years (calendar or rolling), N units ago, weekends
    _en(("before",), r"(?:the\s+)?(?P<unit>week|month|year)\s+before\s+last", lambda m, c: c.ago(_unit(m["unit"]), 2)),
    _en(
        _G_LAST,
        r"(?P<the>the\s+)?(?P<which>last|past|previous|this|current)\s+(?:" + _NUM + r"\s+)?" + _UNIT,
        _en_last,
    ),
    _en(
        ("ago", "back"),
        _NUM + r"\s+" + _UNIT + r"\s+(?:ago|back)",
        lambda m, c: c.ago(_unit(m["unit"]), _en_int(m["n"])),
    ),
    _en(
        ("weekend",),
        r"(?P<which>last|past|this)\s+weekend",
        lambda m, c: c.weekend(0 if m["which"].lower() == "this" else -1),
    ),
    # ---- English: weekdays ("last Wednesday" is in the previous week, "Wednesday" the most recent one);
    # every weekday name contains "day"
    _en(("day",), _WD + r"\s+(?:of\s+)?(?P<which>last|this|previous)\s+week", _en_weekday),
    _en(("day",), r"(?P<which>last|this|previous)\s+week(?:'s)?\s+" + _WD, _en_weekday),
    _en(
        ("day",),
        r"(?<!every )(?<!each )(?:(?P<which>last|this|previous|past)\s+)?" + _WD,
        _en_weekday,
        recurring="week",
    ),
    # ---- English: months and dates
    _en(
        _G_MONTH,
        _MON_ALL + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?",
        lambda m, c: _date(m, c, _MONTHS[m["mon"].lower()]),
    ),
    _en(
        _G_MONTH,
        r"(?:the\s+)?(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON_ALL + r"(?:,?\s+(?P<y>\d{4}))?",
        lambda m, c: _date(m, c, _MONTHS[m["mon"].lower()]),
    ),
    _en(
        _G_MONTH,
        r"(?:(?:in|during)\s+)?" + _PHASE + _MON_ALL + r",?\s+(?:of\s+)?(?P<y>\d{4})",
        lambda m, c: c.month(int(m["y"]), _MONTHS[m["mon"].lower()]),
    ),
    _en(
        _G_MONTH,
        r"(?:(?:in|during)\s+)?" + _PHASE + _MON_FULL + r"\s+(?:of\s+)?(?P<which>last|this)\s+year",
        lambda m, c: c.month(c.today.year - (m["which"].lower() == "last"), _MONTHS[m["mon"].lower()]),
    ),
    _en(_G_MONTH, r"(?:(?P<which>last|this|previous)|in|during)\s+" + _PHASE + _MON_FULL, _en_month, recurring="year"),
    _en(_G_MONTH, _PHASE + _MON_SAFE, _en_month, recurring="year"),
    _en(_G_MONTH, _MON_ALL, _en_month, weak=True, recurring="year"),
    # ---- English and numeric: years, ISO dates
    _en(_G_DIGIT, r"(?:in|during)\s+(?:the\s+year\s+)?(?P<y>(?:19|20|21)\d\d)", lambda m, c: c.year(int(m["y"]))),
    _zh(
        _G_DIGIT,
        r"(?<![A-Za-z0-9_.\-/:])(?P<y>(?:19|20|21)\d\d)(?![A-Za-z0-9_]|[.\-/:]\d)",
        lambda m, c: c.year(int(m["y"])),
        weak=True,
    ),
    _zh(
        _G_DIGIT,
        r"(?<![\d.\-/])(?P<y>\d{4})(?P<sep>[-/])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?!\d)",
        lambda m, c: c.days(date(int(m["y"]), int(m["m"]), int(m["d"]))),
    ),
    _zh(_G_DIGIT, r"(?<![\d.\-/])(?P<y>\d{4})-(?P<m>\d\d)(?![\d\-/])", lambda m, c: c.month(int(m["y"]), int(m["m"]))),
    # ---- Chinese: days
    _zh(("大前天",), "大前天" + _ZPART, lambda m, c: c.ago("day", 3)),
    _zh(("前天",), "前天" + _ZPART, lambda m, c: c.ago("day", 2)),
    _zh(("昨",), "(?:昨天|昨日|昨儿)" + _ZPART + "|昨晚|昨夜", lambda m, c: c.ago("day", 1)),
    _zh(("今",), "(?:今天|今日|今儿)" + _ZPART + "|今早|今晚", lambda m, c: c.ago("day", 0)),
    # ---- Chinese: weeks (上周, 上上周, 本周, 上周三, 上周末), bare weekdays (周三 = the most recent one)
    _zh(
        _G_ZH_WEEK,
        r"(?<![早晚])(?P<rel>上上|上|本|这)个?(?:周|星期|礼拜)(?:(?P<wd>[一二三四五六日天1-7])|(?P<end>末))?",
        _zh_week,
    ),
    _zh(
        _G_ZH_WEEK,
        r"(?<![上本这个每下])(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])",
        lambda m, c: c.weekday(_ZH_WEEKDAYS[m["wd"]], None),
        recurring="week",
    ),
    # ---- Chinese: months and years, relative and absolute
    _zh(("月",), r"(?<![早晚])(?P<rel>上上个?|上个?|这个?|本)月" + _ZD, _zh_month_rel),
    _zh(("年",), r"(?P<rel>大前年|前年|去年|今年)(?:" + _ZM + _ZD + ")?", _zh_year_rel),
    _zh(
        ("年",),
        r"(?<!\d)(?P<y>\d{4})\s*年(?:\s*" + _ZM + _ZD + ")?",
        lambda m, c: c.year(int(m["y"])) if m["m"] is None else _date(m, c, _zh_int(m["m"])),
    ),
    _zh(("月",), r"(?<![\d年])" + _ZM + _ZD, lambda m, c: _date(m, c, _zh_int(m["m"])), recurring="year"),
    # ---- Chinese: N units ago (三天前, 两周前, 三个月前), rolling windows (最近三天, 过去两周, 近一个月, 三天内)
    _zh(("前",), r"(?<!\d)" + _ZN + r"\s*" + _ZUNIT + "(?:以|之)?前", lambda m, c: c.ago(_zh_unit(m), _zh_int(m["n"]))),
    _zh(
        ("近", "过去"),
        r"(?:最近|过去|近)的?\s*"
        + _ZN.replace("(?P<n>", "(?P<n>半|")
        + r"\s*"
        + _ZUNIT_LOOSE
        + "(?:以来|之内|以内|内|里|来)?",
        _zh_rolling,
    ),
    _zh(("内", "以来"), r"(?<!\d)" + _ZN + r"\s*" + _ZUNIT + "(?:以来|之内|以内|内)", _zh_rolling),
)

# composites around one or two expressions: the words before (searched back from the expression)
# and after it
_RANGE_OPEN = _re(_L + r"(?:between|from)\s+$|从\s*$")
_RANGE_JOIN = _re(r"\s*(?:(?P<and>and|和|与|跟)|to|until|till|through|thru|到|至|[-–—~～])\s*")
# 从 alone ("从上个月的日志里", from last month's log) and 开始/起 alone ("昨天起床") need the other half
_SINCE_OPEN = _re(_L + r"(?:ever\s+)?since\s+$|(?<![来各独亲擅])自从?\s*$|(?P<half>从)\s*$")
_SINCE_CLOSE = re.compile(r"\s*(?:以来|至今|到现在|到今天|(?P<half>开始|起)(?:到现在|至今)?)")
_AFTER_OPEN = _re(_L + r"after\s+$")
_AFTER_CLOSE = re.compile(r"\s*(?:之后|以后)")


def _shift_cycle(f: TimeMention, k: int) -> TimeMention:
    """A recurring expression one week / one year earlier (k = -1) or later (k = 1)."""
    if f.recurring == "week":
        return TimeMention(f.start, f.end, f.lo + timedelta(weeks=k), f.hi + timedelta(weeks=k))
    try:
        return TimeMention(f.start, f.end, f.lo.replace(year=f.lo.year + k), f.hi.replace(year=f.hi.year + k))
    except ValueError:  # Feb 29
        return f


def _find_time(text: str, clock: _Clock) -> list[TimeMention]:
    """Every time expression in `text`, leftmost-longest, with "since"/"between" composites."""
    atoms: list[TimeMention] = []
    low = text.lower()
    gates: dict[tuple[str, ...], bool] = {}
    for rule in _RULES:
        if (open_ := gates.get(rule.gate)) is None:
            open_ = gates[rule.gate] = any(g in low for g in rule.gate)
        if not open_:
            continue
        for m in rule.pattern.finditer(text):
            try:
                r = rule.resolve(m, clock)
            except (ValueError, OverflowError, KeyError):  # 2026-02-30, year 0, …
                continue
            if r is not None:
                atoms.append(TimeMention(m.start(), m.end(), r[0], r[1], rule.weak, rule.recurring))
    atoms.sort(key=lambda a: (a.start, -a.end))
    picked: list[TimeMention] = []
    for a in atoms:
        if not picked or a.start >= picked[-1].end:
            picked.append(a)

    now_hi = clock.now + _US
    out: list[TimeMention] = []
    i = 0
    while i < len(picked):
        a = picked[i]
        lookback = max(0, a.start - 20)
        if i + 1 < len(picked):  # between A and B, from A to B, A–B, 从A到B
            b = picked[i + 1]
            join = _RANGE_JOIN.fullmatch(text, a.end, b.start)
            opener = _RANGE_OPEN.search(text, lookback, a.start)
            if join and (join["and"] is None or opener):
                start = opener.start() if opener else a.start
                if b.hi <= a.lo and (a.recurring or b.recurring):  # "November to January" in November
                    a, b = (_shift_cycle(a, -1), b) if a.recurring else (a, _shift_cycle(b, 1))
                out.append(TimeMention(start, b.end, min(a.lo, b.lo), max(a.hi, b.hi)))
                i += 2
                continue
        since = _wrapped(text, a, lookback, _SINCE_OPEN, _SINCE_CLOSE)  # [A, now]
        after = None if since else _wrapped(text, a, lookback, _AFTER_OPEN, _AFTER_CLOSE)  # [end of A, now]
        if since and a.lo < now_hi:
            out.append(TimeMention(*since, a.lo, now_hi))
        elif after and a.hi < now_hi:
            out.append(TimeMention(*after, a.hi, now_hi))
        elif not a.weak:
            out.append(a)
        i += 1
    return out


def _wrapped(
    text: str, a: TimeMention, lookback: int, opener: re.Pattern[str], closer: re.Pattern[str]
) -> tuple[int, int] | None:
    """The span of `a` with the words that open and/or close it ("since A", "A以来", "从A开始");
    a match with a `half` group only counts together with the other side."""
    o, c = opener.search(text, lookback, a.start), closer.match(text, a.end)
    if o is None and c is None:
        return None
    if (o is None or c is None) and ((o and o.groupdict().get("half")) or (c and c.groupdict().get("half"))):
        return None
    return (o.start() if o else a.start, c.end() if c else a.end)


def _clock(now: datetime, tz: tzinfo) -> _Clock:
    if now.tzinfo is None:  # naive means UTC, as everywhere in trimem
        now = now.replace(tzinfo=UTC)
    return _Clock(now.astimezone(tz), tz)


def _resolve(found: list[TimeMention], text: str) -> tuple[tuple[int, int], str, tuple[int, int]] | None:
    if not found:
        return None
    lo, hi = min(f.lo for f in found), max(f.hi for f in found)
    start, end = found[0].start, found[-1].end
    return (_to_us(lo), _to_us(hi)), text[start:end], (start, end)


def parse_time_range(
    text: str, *, now: datetime, tz: tzinfo = UTC
) -> tuple[tuple[int, int], str, tuple[int, int]] | None:
    """The time range a text mentions, read in `tz` relative to `now` (naive `now` = UTC).

    Returns ``((lo_us, hi_us), matched_text, (start, end))`` — a half-open range in microseconds
    since the epoch, the expression as written and its character span — or None when the text has
    no time expression. Several expressions ("last week or the week before last") give the range
    covering all of them and the span from the first to the last.

    >>> from datetime import datetime, timezone
    >>> now = datetime(2026, 11, 25, 15, 30, tzinfo=timezone.utc)
    >>> (lo, hi), expr, span = parse_time_range("what did I change 三天前?", now=now)
    >>> expr, span, datetime.fromtimestamp(lo // 10**6, timezone.utc).isoformat(), (hi - lo) // 3_600_000_000
    ('三天前', (18, 21), '2026-11-22T00:00:00+00:00', 24)
    >>> parse_time_range("no dates here", now=now) is None
    True
    """
    return _resolve(_find_time(text, _clock(now, tz)), text)


# Words of a time before the telling: only a text holding one (as a substring: a plain test,
# far cheaper than a regex on every retained text) is parsed for its event's time.
_PAST_HINTS = ("yesterday", "ago", "last", "before", "previous", "昨", "前", "上周", "上个", "上礼拜", "上星期", "去年")


def event_time(text: str, *, told: int, tz: tzinfo = UTC) -> int | None:
    """When the event a text tells of happened, if the text dates it before `told` (when it was
    told, µs since the epoch): the start of the range it names, in µs; None when it names no
    time, or one that is not wholly past. Read in `tz`.

    >>> from datetime import datetime, timezone
    >>> told = 1_795_189_800_000_000  # 2026-11-20 15:30 UTC
    >>> us = event_time("Yesterday I deployed v2 to prod", told=told)
    >>> datetime.fromtimestamp(us // 10**6, timezone.utc).isoformat()
    '2026-11-19T00:00:00+00:00'
    >>> event_time("我上周在上海出差", told=told) is not None, event_time("I deploy on Fridays", told=told)
    (True, None)
    """
    low = text.lower()
    if not any(hint in low for hint in _PAST_HINTS):
        return None
    found = parse_time_range(text, now=_EPOCH + told * _US, tz=tz)
    if found is None:
        return None
    (lo, hi), _, _ = found
    return lo if hi <= told + 1 and lo < told else None


def find_times(text: str, *, now: datetime, tz: tzinfo = UTC) -> list[TimeMention]:
    """Every time expression in `text`, leftmost-longest, composites ("since A", "between A and
    B") joined; naive `now` is UTC."""
    return _find_time(text, _clock(now, tz))


def cover(found: list[TimeMention], text: str) -> tuple[tuple[int, int], str, tuple[int, int]] | None:
    """The range covering `found` in microseconds, the text from the first to the last, and that
    span; None when nothing was found."""
    return _resolve(found, text)


def local_now(now: datetime, tz: tzinfo) -> datetime:
    """`now` (naive means UTC) as an aware time in `tz`."""
    return _clock(now, tz).now


_EN_DAY_NAME = re.compile(_L + r"(?P<wd>" + "|".join(_WEEKDAYS) + r"|weekend)s?" + _R, re.I)
_ZH_DAY_NAME = re.compile(r"(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])|周末")


def weekday_words(text: str) -> tuple[str, ...]:
    """The days of the week `text` names, in the words a habit would be told in: a request for
    "a Thursday in December" meets "I volunteer Thursdays", "周三晚上" meets "礼拜三晚上要上课";
    a Saturday or Sunday is the weekend too. A time range stands for these words in a search of
    what happened; what the user does every week needs them.

    >>> weekday_words("Lunch on Saturday the 5th?"), weekday_words("周三晚上有空吗")
    (('saturday', 'saturdays', 'weekend', 'weekends'), ('周三', '期三', '拜三'))
    """
    out: dict[str, None] = {}
    for m in _EN_DAY_NAME.finditer(text):
        day = m["wd"].lower()
        out |= dict.fromkeys((day, day + "s"))
        if day in ("saturday", "sunday"):
            out |= dict.fromkeys(("weekend", "weekends"))
    for m in _ZH_DAY_NAME.finditer(text):
        day = m["wd"]
        if day is None:
            out |= dict.fromkeys(("周末", "周六", "周日"))
            continue
        # "周三", "星期三", "礼拜三" as the bigrams that name the day alone ("礼拜" and "星期"
        # name any day): the keyword index reads Chinese in character pairs
        out |= dict.fromkeys(f"{prefix}{d}" for d in ("日天" if day in "日天" else day) for prefix in "周期拜")
        if day in "六日天":
            out["周末"] = None
    return tuple(out)
