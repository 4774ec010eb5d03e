"""An OpenTelemetry SDK provider whose finished spans are kept in a list (for the encoder's and the light spans'
tests, which compare with the SDK's own spans and encoding; the wire is tests/telemetry/test_tracing.py's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, Tracer, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Sampler
from opentelemetry.util.types import Attributes


class Kept(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def provider(
    kept: Kept, resource: Attributes = None, sampler: Sampler = ALWAYS_ON, limits: SpanLimits | None = None
) -> TracerProvider:
    made = TracerProvider(sampler, Resource.create(resource or {"service.name": "t"}), False, span_limits=limits)
    made.add_span_processor(SimpleSpanProcessor(kept))
    return made


def tracer(kept: Kept, sampler: Sampler = ALWAYS_ON) -> Tracer:
    """The SDK's tracer (``light_spans`` reads its sampler, id generator, resource and processor)."""
    return cast("Tracer", provider(kept, sampler=sampler).get_tracer("pcfjudge"))
