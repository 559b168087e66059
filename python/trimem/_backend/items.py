"""What both backends share of the item collection: a search's request, the value filter's
meaning, and how an item's namespace and expiry are keyed.

Items are a store's key-value entries (the LangGraph store's ``Item``): a JSON object under a
key in a namespace of labels. A filter reads the object's values as PostgreSQL reads a ``jsonb``
document (the meaning LangGraph's stores give it):

* ``{"k": v}`` — the value at ``k`` equals ``v`` (a nested object is compared key by key, a list
  element by element, anything else by equality);
* ``{"k": {"$eq": v, "$ne": v, "$gt": x, "$gte": x, "$lt": x, "$lte": x}}`` — every operator
  holds; the order comparisons read both sides as numbers (a value that is not one matches
  nothing).

>>> matches({"kind": "note", "stars": 4}, {"kind": "note", "stars": {"$gte": 3}})
True
>>> matches({"kind": "note"}, {"stars": {"$gt": 1}})
False
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import msgspec
import numpy as np

from trimem.errors import ArgumentTypeError, InvalidArgumentError
from trimem.records import Item

__all__ = ["NEVER", "NUMBER", "OPERATORS", "ItemQuery", "ItemReads", "check_filter", "item_namespace", "matches"]

NEVER: Final = 1 << 62
"""The expiry an item that never expires is indexed at (searches keep what expires after now)."""
OPERATORS: Final = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
NUMBER: Final = re.compile(r"^[ \t\n\r]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,2})?[ \t\n\r]*$")
"""A string an order comparison reads as a number (the same pattern in SQL and here)."""
ORDERED: Final = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}


@dataclass(frozen=True)
class ItemQuery:
    """One search of the items: those under `prefix` whose value passes `filter` and that have
    not expired at `now` (microseconds); ranked by `text` and `vector` when given (keywords,
    meaning, or both fused), else newest update first; `offset` skipped, `limit` returned."""

    prefix: tuple[str, ...]
    filter: Mapping[str, Any] | None = None
    text: str | None = None
    vector: np.ndarray | None = None
    limit: int = 10
    offset: int = 0
    now: int = 0


class ItemReads(Protocol):
    """What a backend answers about its items (writes are ops: ``OpItemPut``, ``OpItemDelete``,
    ``OpItemRefresh``). Times are microseconds; an item whose ``expires_at`` is at or before `now`
    is gone for every read."""

    def get(self, namespace: tuple[str, ...], key: str, now: int) -> Item | None: ...

    def search(self, q: ItemQuery) -> list[tuple[Item, float | None]]:
        """The items `q` asks for, best first, each with its fused score (None: unranked, after
        the ranked ones: neither leg found it)."""
        ...

    def namespaces(self, now: int) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        ...

    def expired(self, now: int) -> list[tuple[tuple[str, ...], str]]:
        """(namespace, key) of every item expired at `now` (a sweep deletes these)."""
        ...

    def stored(self) -> Iterator[tuple[Item, str, bytes | None]]:
        """Every stored item, expired ones included, with the text it is searched by and its
        vector (float32 bytes, None without one): what an export carries."""
        ...


def item_namespace(namespace: tuple[str, ...]) -> str:
    """The engine's name for one namespace of items: a digest, whatever its labels hold (the
    engine's names are short and free of control characters; labels need not be)."""
    return hashlib.blake2b(msgspec.json.encode(namespace), digest_size=16).hexdigest()


def check_filter(f: Any) -> Mapping[str, Any] | None:
    """`f` if it is a valid filter (None or {} for none), else a typed error."""
    if f is None or (isinstance(f, Mapping) and not f):
        return None
    if not isinstance(f, Mapping) or not all(isinstance(k, str) for k in f):
        raise ArgumentTypeError(f"filter must be a dict of value keys, got {f!r}")

    def walk(cond: Any) -> None:
        if isinstance(cond, Mapping):
            ops = [k for k in cond if isinstance(k, str) and k.startswith("$")]
            for op in ops:
                if op not in OPERATORS:
                    raise InvalidArgumentError(
                        f"unknown filter operator {op!r} (known: {', '.join(sorted(OPERATORS))})"
                    )
                if op in ORDERED and _number(cond[op]) is None:
                    raise InvalidArgumentError(f"{op} needs a number, got {cond[op]!r}")
            if not ops:
                for v in cond.values():
                    walk(v)

    for v in f.values():
        walk(v)
    return f


def matches(value: Mapping[str, Any], f: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a filter (see the module's documentation)."""
    return f is None or all(_holds(value.get(k), cond) for k, cond in f.items())


def _holds(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            return all(_operator(actual, op, operand) for op, operand in cond.items())
        return isinstance(actual, Mapping) and all(_holds(actual.get(k), c) for k, c in cond.items())
    if isinstance(cond, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(actual) == len(cond)
            and all(_holds(a, c) for a, c in zip(actual, cond, strict=True))
        )
    return _equal(actual, cond)


def _equal(a: Any, b: Any) -> bool:
    # JSON has no bool that equals a number: true is not 1
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _equal(actual, operand)
    if op == "$ne":
        return not _equal(actual, operand)
    a, b = _number(actual), _number(operand)
    return a is not None and b is not None and ORDERED[op](a, b)


def _number(x: Any) -> float | None:
    """`x` as a number, when it is one (a bool is not; a numeric string is, as ``::float`` reads it)."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, str) and NUMBER.fullmatch(x):
        v = float(x)
        return v if math.isfinite(v) else None
    return None
