"""What the OpenTelemetry spans cost a recall, same process, same run:

    python benches/telemetry_cost.py [--n 10000] [--rounds 15] [--embedder auto]

One memory of ``--n`` episodes (one user). Each round times the same 50 requests three ways, in
rotating order: the traced ``Memory.recall`` and the plain method under it
(``Memory.recall.__wrapped__``), first with only ``opentelemetry-api`` (no SDK: the no-op
tracer), then again after an SDK ``TracerProvider`` with no exporter is installed (every span
recorded, then dropped) and with a ``BatchSpanProcessor`` over an exporter that discards.
Figures: the median over rounds of traced / plain time per recall (target ≤ 1.05 with the SDK on).
"""

import argparse
import statistics
import time
import warnings

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from trimem import Memory
from trimem.bench.datasets import query_texts, texts

warnings.simplefilter("ignore")
ap = argparse.ArgumentParser()
ap.add_argument("--n", type=int, default=10_000)
ap.add_argument("--rounds", type=int, default=15)
ap.add_argument("--embedder", default="auto")
args = ap.parse_args()

mem = Memory(embedder=args.embedder)
mem.retain_many([{"text": t, "user_id": "u1"} for t in texts(args.n)])
questions = query_texts(50)
traced, plain = Memory.recall, Memory.recall.__wrapped__  # type: ignore[attr-defined]


def run(fn: object) -> float:
    t0 = time.perf_counter()
    for q in questions:
        fn(mem, q, user_id="u1", touch=False)  # type: ignore[operator]
    return (time.perf_counter() - t0) / len(questions)


def measure(label: str) -> None:
    for q in questions[:5]:
        traced(mem, q, user_id="u1", touch=False)
    ratios, t_traced, t_plain = [], [], []
    for r in range(args.rounds):
        if r % 2:
            b, a = run(plain), run(traced)
        else:
            a, b = run(traced), run(plain)
        t_traced.append(a)
        t_plain.append(b)
        ratios.append(a / b)
    print(
        f"{label}: recall traced {statistics.median(t_traced) * 1e3:.3f} ms, plain "
        f"{statistics.median(t_plain) * 1e3:.3f} ms; traced / plain = {statistics.median(ratios):.3f} "
        f"(rounds min {min(ratios):.3f}, max {max(ratios):.3f})"
    )


class Discard(SpanExporter):
    def export(self, spans: object) -> SpanExportResult:
        return SpanExportResult.SUCCESS


print(f"{args.n} episodes, embedder {mem.embedder and getattr(mem.embedder, 'name', mem.embedder)}")
measure("opentelemetry-api only (no SDK: no-op tracer)")
provider = TracerProvider()
trace.set_tracer_provider(provider)
measure("SDK TracerProvider, no exporter (spans recorded and dropped)")
provider.add_span_processor(BatchSpanProcessor(Discard()))
measure("SDK + BatchSpanProcessor over an exporter that discards")
