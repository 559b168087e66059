"""Argument checks shared by every layer: each refuses a bad value with a typed error that names
the argument, before anything changes (see :mod:`trimem.errors`), and never chokes on the value
itself while saying so (a 10,000-digit int, an unpaired surrogate, a numpy array)."""

from __future__ import annotations

import os

import msgspec

from trimem.errors import ArgumentTypeError, InvalidArgumentError

__all__ = [
    "check_bool",
    "check_callable",
    "check_index",
    "check_int",
    "check_path",
    "check_plain",
    "check_str",
    "check_unit",
    "shown",
]

_encoder = msgspec.msgpack.Encoder()


def shown(value: object, limit: int = 60) -> str:
    """A short, safe repr for an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<int of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception:  # a repr that raises says nothing useful anyway
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {shown(value)}")
    return value


def check_int(name: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """An int (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an integer, got {shown(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"at least {low}" if high is None else f"between {low} and {high}"
        raise InvalidArgumentError(f"{name} must be {bounds}, got {shown(value)}")
    return value


def check_index(name: str, value: object) -> int | None:
    """A record id: an int, or None when it is outside what an id can be (no such record)."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            import numpy as np

            if isinstance(value, np.integer):
                value = int(value)
        except ImportError:  # pragma: no cover - numpy is a dependency
            pass
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an integer id, got {shown(value)}")
    return value if 0 <= value < 2**64 else None


def check_unit(name: str, value: object, low: float = 0.0) -> float:
    """A finite number in ``[low, 1]``."""
    if type(value) is float and low <= value <= 1.0:  # the common case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{name} must be a number, got {shown(value)}")
    if isinstance(value, int) and value.bit_length() > 64:
        raise InvalidArgumentError(f"{name} must be in [{low:g}, 1], got {shown(value)}")
    if not low <= float(value) <= 1.0:
        raise InvalidArgumentError(f"{name} must be in [{low:g}, 1], got {shown(value)}")
    return float(value)


def check_str(name: str, value: object, *, limit: int | None = None, empty: bool = True) -> str:
    """A str that can be stored (UTF-8: no unpaired surrogate), at most ``limit`` characters."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a string, got {shown(value)}")
    if not empty and not value.strip():
        raise InvalidArgumentError(f"{name} is empty")
    if limit is not None and len(value) > limit:
        raise InvalidArgumentError(f"{name} has {len(value)} characters, over the limit of {limit}")
    try:
        if not value.isascii():  # ASCII always encodes; only the rest can hold a lone surrogate
            value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{name} holds an unpaired surrogate, which UTF-8 cannot store") from None
    return value


def check_plain(name: str, value: object) -> None:
    """Plain data a store can keep: str (valid UTF-8), numbers within 64 bits, bools, None, and
    lists and dicts (string keys) of them."""
    try:
        _encoder.encode(value)
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError) as e:
        raise InvalidArgumentError(f"{name} must be plain data (str, numbers, lists, dicts of them): {e}") from None
    if isinstance(value, dict) and not all(isinstance(k, str) for k in value):
        raise InvalidArgumentError(f"{name} must have string keys")


def check_callable(name: str, value: object) -> None:
    if not callable(value):
        raise ArgumentTypeError(f"{name} must be callable, got {shown(value)}")


def check_path(name: str, value: object) -> str:
    if isinstance(value, bytes) or not isinstance(value, (str, os.PathLike)):
        raise ArgumentTypeError(f"{name} must be a str or os.PathLike path, got {shown(value)}")
    path = os.fspath(value)
    if not isinstance(path, str) or not path or "\0" in path:
        raise InvalidArgumentError(f"{name} is not a usable path: {shown(value)}")
    return check_str(name, path)
