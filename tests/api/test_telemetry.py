"""OpenTelemetry spans of memory operations, read back through the SDK's in-memory exporter:
names and GenAI memory attributes per verb, counts equal to what the verb returned, content only
when the user opts in, errors typed, spans parented by the caller's (AsyncMemory too); and, in a
child process without ``opentelemetry``, nothing wrapped at all."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

import trimem.telemetry as telemetry
from trimem import AsyncMemory, Memory
from trimem.errors import InvalidArgumentError


class _Switch(Sampler):
    """Records spans only while a test of this module runs: the global provider, once set,
    stays for the whole test session, and the other tests should not pay for spans."""

    on = False

    def should_sample(
        self, parent_context: Any, trace_id: int, name: str, kind: Any = None, attributes: Any = None, *args: Any
    ) -> SamplingResult:
        return SamplingResult(Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP, attributes)

    def get_description(self) -> str:
        return "on while tests/api/test_telemetry.py runs"


_SWITCH = _Switch()
_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider(sampler=_SWITCH)
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
trace.set_tracer_provider(_PROVIDER)  # once per process: the global provider cannot be replaced


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    telemetry.capture_content(False)
    _SWITCH.on = True
    try:
        yield _EXPORTER
    finally:
        _SWITCH.on = False
        telemetry.capture_content(False)
        _EXPORTER.clear()


def _only(exporter: InMemorySpanExporter, verb: str) -> ReadableSpan:
    found = [s for s in exporter.get_finished_spans() if (s.attributes or {}).get("trimem.verb") == verb]
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def test_each_verb_is_one_span_with_the_memory_conventions(spans: InMemorySpanExporter) -> None:
    mem = Memory(embedder="hashing")
    ep = mem.retain("The staging database is PostgreSQL 16", user_id="u1")
    many = mem.retain_many([{"text": f"deploy {i} went out on Tuesday", "user_id": "u1"} for i in range(3)])
    bundle = mem.recall("which database does staging use?", user_id="u1")
    hits = mem.search("deploy Tuesday", user_id="u1", k=2)
    mem.facts.set("editor", "vim", user_id="u1")
    gone = mem.forget([ep.id], user_id="u1")

    retain = _only(spans, "retain")
    assert retain.name == "create_memory episodic" and retain.kind == trace.SpanKind.INTERNAL
    assert dict(retain.attributes or {}) == {
        "gen_ai.operation.name": "create_memory", "gen_ai.memory.store.id": "episodic", "trimem.verb": "retain",
        "gen_ai.memory.record.count": 1, "gen_ai.memory.record.id": str(ep.id),
    }  # fmt: skip
    assert (_only(spans, "retain_many").attributes or {})["gen_ai.memory.record.count"] == len(many) == 3
    recall = _only(spans, "recall")
    assert recall.name == "search_memory memory"
    found = len(bundle.profile) + len(bundle.episodes) + len(bundle.knowledge)
    assert (recall.attributes or {})["gen_ai.memory.record.count"] == found > 0
    assert "gen_ai.memory.query.text" not in (recall.attributes or {})  # content only when asked for
    assert "gen_ai.memory.records" not in (recall.attributes or {})
    assert (_only(spans, "search").attributes or {})["gen_ai.memory.record.count"] == len(hits) == 2
    fact = _only(spans, "facts.set")
    assert fact.name == "update_memory semantic" and (fact.attributes or {})["gen_ai.memory.record.count"] == 1
    forget = _only(spans, "forget")
    assert forget.name == "delete_memory episodic" and (forget.attributes or {})["gen_ai.memory.record.count"] == gone
    assert gone == 1


def test_content_is_captured_only_when_opted_in(spans: InMemorySpanExporter) -> None:
    mem = Memory(embedder="hashing")
    ep = mem.retain("Our CI runs on Buildkite", user_id="u1")
    telemetry.capture_content(True)
    bundle = mem.recall("where does CI run?", user_id="u1")
    attrs = _only(spans, "recall").attributes or {}
    assert attrs["gen_ai.memory.query.text"] == "where does CI run?"
    records = json.loads(str(attrs["gen_ai.memory.records"]))
    assert records[0]["id"] == ep.id and records[0]["content"] == "Our CI runs on Buildkite"
    assert records[0]["score"] == pytest.approx(bundle.episodes[0].scored.score)
    assert "gen_ai.memory.records" not in (_only(spans, "retain").attributes or {})  # before the opt-in


def test_an_error_is_typed_and_the_span_marked(spans: InMemorySpanExporter) -> None:
    mem = Memory(embedder="hashing")
    with pytest.raises(InvalidArgumentError):
        mem.recall("   ", user_id="u1")
    span = _only(spans, "recall")
    assert (span.attributes or {})["error.type"] == "InvalidArgumentError"
    assert span.status.status_code == trace.StatusCode.ERROR
    assert "gen_ai.memory.record.count" not in (span.attributes or {})


def test_spans_nest_under_the_callers_also_through_async_memory(spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("app")

    async def agent() -> None:
        async with AsyncMemory(embedder="hashing") as mem:
            with tracer.start_as_current_span("agent turn"):
                await mem.retain("I prefer window seats", user_id="u1")
                await mem.recall("seat preference", user_id="u1")

    asyncio.run(agent())
    parent = next(s for s in spans.get_finished_spans() if s.name == "agent turn")
    for verb in ("retain", "recall"):
        child = _only(spans, verb)
        assert child.parent is not None and child.parent.span_id == parent.context.span_id
        assert child.context.trace_id == parent.context.trace_id


def test_without_opentelemetry_nothing_is_wrapped() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"  # as if the package were not installed
        "from trimem import Memory\n"
        "from trimem.layers.semantic import Facts\n"
        "assert not hasattr(Memory.recall, '__wrapped__') and not hasattr(Facts.set, '__wrapped__')\n"
        "m = Memory(embedder='hashing'); m.retain('x y z', user_id='u'); print(len(m.recall('x', user_id='u').episodes))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"


def test_with_opentelemetry_the_verbs_are_wrapped_and_keep_their_signature() -> None:
    import inspect

    assert telemetry.enabled()
    for cls_name, verbs in telemetry.VERBS.items():
        cls = {"Memory": Memory, "Facts": type(Memory(embedder=None).facts),
               "KnowledgeBase": type(Memory(embedder=None).knowledge)}[cls_name]  # fmt: skip
        for name in verbs:
            method = getattr(cls, name)
            assert hasattr(method, "__wrapped__"), f"{cls_name}.{name}"
            assert inspect.signature(method) == inspect.signature(method.__wrapped__)
