"""Time as trimem stores it: int64 microseconds since the epoch, UTC.

>>> from datetime import datetime, timezone
>>> to_micros(datetime(2026, 1, 1, tzinfo=timezone.utc))
1767225600000000
>>> to_micros(datetime(2026, 1, 1))  # naive means UTC
1767225600000000
>>> from_micros(1767225600000000).isoformat()
'2026-01-01T00:00:00+00:00'
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from trimem.errors import InvalidArgumentError

__all__ = [
    "MAX_MICROS",
    "MIN_MICROS",
    "TimeLike",
    "as_datetime",
    "from_micros",
    "now_micros",
    "to_micros",
    "to_micros_range",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

TimeLike = datetime | int

# What a datetime can hold (years 1 to 9999), in µs since the epoch: any time trimem stores
# can be read back as a date.
MIN_MICROS = -62_135_596_800_000_000
MAX_MICROS = 253_402_300_799_999_999


def to_micros(t: TimeLike) -> int:
    """Microseconds since the epoch for an aware datetime, a naive one (read as UTC) or an int."""
    if isinstance(t, bool):
        raise InvalidArgumentError("a timestamp must be a datetime or int microseconds, not a bool")
    if isinstance(t, int):
        if not MIN_MICROS <= t <= MAX_MICROS:
            raise InvalidArgumentError(
                "a timestamp in microseconds must fall within the years 1 to 9999 "
                f"({MIN_MICROS} to {MAX_MICROS}), got {t if t.bit_length() <= 64 else '<a huge int>'}"
            )
        return t
    if isinstance(t, datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=UTC)
        delta = t - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    raise InvalidArgumentError(
        f"a timestamp must be a datetime or int microseconds since the epoch, got {type(t).__name__}"
    )


def to_micros_range(tr: tuple[TimeLike, TimeLike] | None) -> tuple[int, int] | None:
    """A `(start, end)` pair as microseconds (None stays None)."""
    if tr is None:
        return None
    if not isinstance(tr, (tuple, list)) or len(tr) != 2:  # a numpy array is no pair
        raise InvalidArgumentError("time_range must be a (start, end) pair")
    return to_micros(tr[0]), to_micros(tr[1])


def from_micros(us: int, tz: tzinfo = UTC) -> datetime:
    """The aware datetime for `us` microseconds since the epoch, in `tz`."""
    try:
        return (_EPOCH + timedelta(microseconds=us)).astimezone(tz)
    except (OverflowError, ValueError):  # a time at the very edge of year 1 or 9999, in a zone past it
        raise InvalidArgumentError(f"{us} µs is outside the dates a datetime can hold in {tz}") from None


def now_micros(now: TimeLike | None = None) -> int:
    """`now` as microseconds, or the current time when `now` is None."""
    return to_micros(now) if now is not None else to_micros(datetime.now(UTC))


def as_datetime(now: TimeLike | None, tz: tzinfo) -> datetime:
    """`now` (or the current time) as an aware datetime in `tz`."""
    return from_micros(now_micros(now), tz)
