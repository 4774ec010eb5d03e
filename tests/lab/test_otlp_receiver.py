"""``pcfjudge_lab.otlp_receiver``: what it receives over OTLP/HTTP, kept as records (the tracing tests read them) or
only counted (the sink of ``pcfjudge bench tracing``: no record made, the same count)."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pcfjudge.telemetry.otlp import SpanEncoder
from pcfjudge_lab.otlp_receiver import OtlpReceiver


def _batch(n: int) -> bytes:
    kept = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "t"}))
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("t")
    for i in range(n):
        with tracer.start_as_current_span(f"span {i}", attributes={"i": i}):
            pass
    return SpanEncoder().encode(kept.get_finished_spans())


@pytest.mark.parametrize("keep", [True, False])
def test_batches_are_counted_and_kept_only_when_asked(keep: bool) -> None:
    with OtlpReceiver(keep=keep) as receiver:
        for n in (3, 5):
            reply = httpx.post(
                f"{receiver.url}/v1/traces", content=_batch(n), headers={"content-type": "application/x-protobuf"}
            )
            assert reply.status_code == 200
        assert httpx.get(f"{receiver.url}/count").json() == {"spans": 8, "requests": 2}
        kept = receiver.snapshot()
        assert len(kept) == (8 if keep else 0)
        if keep:
            assert [s.name for s in kept[:3]] == ["span 0", "span 1", "span 2"] and kept[1].attributes == {"i": 1}
