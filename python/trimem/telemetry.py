"""OpenTelemetry spans for memory operations (the ``otel`` extra), after the GenAI semantic
conventions for memory.

When ``opentelemetry-api`` is installed, each verb in :data:`VERBS` — of :class:`trimem.Memory`,
its facts and its knowledge base — runs in a span of the global tracer provider (a no-op until
the application installs an SDK). When it is not installed, nothing is wrapped: the verbs are the
plain methods and cost nothing more.

A span is named ``"{operation} {store}"`` (kind ``INTERNAL``) and carries:

===============================  =============================================================
``gen_ai.operation.name``        ``search_memory``, ``create_memory``, ``update_memory`` or
                                 ``delete_memory``
``gen_ai.memory.store.id``       the layer: ``episodic``, ``semantic``, ``knowledge``, or
                                 ``memory`` for a verb over all of them (``recall``, ``add``)
``gen_ai.memory.record.count``   the records returned, written or deleted
``gen_ai.memory.record.id``      the record's id, when one record was written
``trimem.verb``                  the method (``recall``, ``retain_many``, ``facts.set`` …)
``error.type``                   the exception's class when the verb raised (status ``ERROR``)
``gen_ai.memory.query.text``     the request — only when content capture is on
``gen_ai.memory.records``        the records as JSON — only when content capture is on
===============================  =============================================================

Content (requests and texts) is captured only when the user opts in: with
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` in the environment when trimem is
imported, or :func:`capture_content` at run time.

>>> from trimem.telemetry import VERBS
>>> VERBS["Memory"]["recall"].operation, VERBS["Memory"]["recall"].store
('search_memory', 'memory')
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

__all__ = ["CAPTURE_ENV", "VERBS", "Verb", "capture_content", "enabled", "instrument"]

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
T = TypeVar("T", bound=type)


def _len(result: Any) -> int:
    return len(result)


def _one(result: Any) -> int:
    return 1


def _int(result: Any) -> int:
    return int(result)


def _bundle(result: Any) -> int:
    return len(result.profile) + len(result.episodes) + len(result.knowledge)


def _id(result: Any) -> Any:
    return getattr(result, "id", None)


def _texts(result: Any) -> list[dict[str, Any]]:
    items = result if isinstance(result, list) else [result]
    return [{"id": getattr(r, "id", None), "content": getattr(r, "text", None)} for r in items]


def _found(result: Any) -> list[dict[str, Any]]:
    if hasattr(result, "episodes"):  # a recall bundle: the facts, then the events and documents
        rows: list[dict[str, Any]] = [{"id": f.key, "content": f.value} for f in result.profile]
        rows += [{"id": r.episode.id, "content": r.episode.text, "score": r.scored.score} for r in result.episodes]
        return rows + [{"id": r.doc.id, "content": r.doc.text, "score": r.scored.score} for r in result.knowledge]
    return [{"id": r.episode.id, "content": r.episode.text, "score": r.scored.score} for r in result]


def _changes(result: Any) -> list[dict[str, Any]]:
    items = result if isinstance(result, list) else [result]
    return [{"id": c.key, "content": c.value, "op": c.op} for c in items]


class Verb(NamedTuple):
    """How one method is traced: its operation and layer, how many records its result holds,
    the record id of a single write, the argument that is the request, and the records of its
    result (the last two only with content capture on)."""

    operation: str
    store: str
    count: Callable[[Any], int]
    record_id: Callable[[Any], Any] | None = None
    query_arg: str | None = None
    records: Callable[[Any], list[dict[str, Any]]] | None = None


# class name → method → how it is traced
VERBS: dict[str, dict[str, Verb]] = {
    "Memory": {
        "retain": Verb("create_memory", "episodic", _one, _id, None, _texts),
        "retain_many": Verb("create_memory", "episodic", _len, None, None, _texts),
        "add": Verb("create_memory", "memory", _one),
        "recall": Verb("search_memory", "memory", _bundle, None, "query", _found),
        "search": Verb("search_memory", "episodic", _len, None, "query", _found),
        "forget": Verb("delete_memory", "episodic", _int),
        "reflect": Verb("update_memory", "semantic", _len, None, None, _changes),
        "import_from": Verb("create_memory", "memory", lambda r: r.episodes + r.facts + r.knowledge + r.items),
    },
    "Facts": {
        "set": Verb("update_memory", "semantic", _one, None, None, _changes),
        "delete": Verb("delete_memory", "semantic", _one, None, None, _changes),
    },
    "KnowledgeBase": {
        "add": Verb("create_memory", "knowledge", _one, _id, None, _texts),
        "add_many": Verb("create_memory", "knowledge", _len, None, None, _texts),
        "delete": Verb("delete_memory", "knowledge", _int),
    },
}

_capture = os.environ.get(CAPTURE_ENV, "").strip().lower() == "true"


def capture_content(on: bool = True) -> None:
    """Turns the capture of requests and record texts into spans on or off (default: off, or
    what ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` said at import)."""
    global _capture
    _capture = bool(on)


def enabled() -> bool:
    """Whether ``opentelemetry-api`` is installed (and the verbs are traced)."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return False
    return True


def instrument(cls: T) -> T:
    """Wraps the methods :data:`VERBS` lists for `cls` in spans (a class decorator); returns
    `cls` untouched when ``opentelemetry-api`` is not installed."""
    verbs = VERBS.get(cls.__name__)
    if not verbs or not enabled():
        return cls
    from opentelemetry import trace

    tracer = trace.get_tracer("trimem")
    prefix = "" if cls.__name__ == "Memory" else f"{cls.__name__.lower()}."
    for name, verb in verbs.items():
        setattr(cls, name, _traced(getattr(cls, name), f"{prefix}{name}", verb, tracer, trace))
    return cls


def _traced(fn: Callable[..., Any], name: str, verb: Verb, tracer: Any, trace: Any) -> Callable[..., Any]:
    span_name = f"{verb.operation} {verb.store}"
    fixed: Mapping[str, Any] = {
        "gen_ai.operation.name": verb.operation,
        "gen_ai.memory.store.id": verb.store,
        "trimem.verb": name,
    }
    internal = trace.SpanKind.INTERNAL
    error = trace.StatusCode.ERROR

    @functools.wraps(fn)
    def traced(*args: Any, **kwargs: Any) -> Any:
        with tracer.start_as_current_span(
            span_name, kind=internal, attributes=fixed, record_exception=False, set_status_on_exception=False
        ) as span:
            if not span.is_recording():
                return fn(*args, **kwargs)
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(trace.Status(error, type(exc).__qualname__))
                raise
            span.set_attribute("gen_ai.memory.record.count", verb.count(result))
            if verb.record_id is not None and (rid := verb.record_id(result)) is not None:
                span.set_attribute("gen_ai.memory.record.id", str(rid))
            if _capture:
                query = kwargs.get(verb.query_arg) if verb.query_arg else None
                if query is None and verb.query_arg and len(args) > 1:
                    query = args[1]
                if isinstance(query, str):
                    span.set_attribute("gen_ai.memory.query.text", query)
                if verb.records is not None:
                    span.set_attribute("gen_ai.memory.records", json.dumps(verb.records(result), ensure_ascii=False))
            return result

    return traced
