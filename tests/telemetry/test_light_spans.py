"""``pcfjudge.telemetry.light_spans``: a span started here is the span the SDK's ``Tracer.start_span`` would start
(its trace, parent, flags and trace state; recorded or not as the SDK's sampler says), and once ended it reaches the
SDK's span processor and encodes, with the service's encoder and the SDK's own, to the same OTLP request."""

from __future__ import annotations

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_ON,
    Decision,
    ParentBased,
    StaticSampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState
from pcfjudge.telemetry import spans, tracing
from pcfjudge.telemetry.light_spans import LightSpan, current_context, start_span
from pcfjudge.telemetry.otlp import SpanEncoder

from tests.support.otel import Kept, tracer

CALLER = SpanContext(
    0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, True, TraceFlags(1), TraceState([("v", "1")])
)
UNSAMPLED = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, True, TraceFlags(0))


PARENTS = {"none": None, "caller": CALLER, "unsampled caller": UNSAMPLED}
SAMPLERS = {  # the SDK's ALWAYS_ON and DEFAULT_ON themselves: start_span knows their decision without asking them
    "always on": ALWAYS_ON,
    "the default, parent-based always on": DEFAULT_ON,
    "parent-based always on": ParentBased(ALWAYS_ON),
    "always off": ALWAYS_OFF,
    "parent-based ratio 0": ParentBased(TraceIdRatioBased(0.0)),
    "ratio 1": TraceIdRatioBased(1.0),
}


@pytest.mark.parametrize("sampler", SAMPLERS)
@pytest.mark.parametrize("parent", PARENTS)
def test_started_as_the_sdk_starts_a_span(sampler: str, parent: str) -> None:
    kept = Kept()
    made = tracer(kept, SAMPLERS[sampler])
    above = PARENTS[parent]
    context = None if above is None else trace.set_span_in_context(NonRecordingSpan(above))
    ours = start_span(made, "s", context, SpanKind.SERVER, {"a": 1})
    theirs = made.start_span("s", context, SpanKind.SERVER, {"a": 1})
    mine, sdk = ours.get_span_context(), theirs.get_span_context()
    assert ours.is_recording() == theirs.is_recording()
    assert isinstance(ours, LightSpan) == theirs.is_recording()
    assert (mine.trace_flags, mine.trace_state, mine.is_remote) == (sdk.trace_flags, sdk.trace_state, sdk.is_remote)
    assert mine.is_valid and mine.span_id != sdk.span_id
    assert tuple(mine) == tuple(SpanContext(mine.trace_id, mine.span_id, False, mine.trace_flags, mine.trace_state))
    if ours.is_recording():
        assert isinstance(ours, LightSpan) and isinstance(theirs, ReadableSpan)
        assert ours.attributes == dict(theirs.attributes or {}) and ours.parent == theirs.parent
    if above is not None:
        assert mine.trace_id == sdk.trace_id == above.trace_id
    ours.end()
    theirs.end()
    assert len(kept.spans) == (2 if mine.trace_flags.sampled else 0)
    if kept.spans:
        light, full = kept.spans
        assert (light.parent, light.attributes, light.kind) == (full.parent, dict(full.attributes or {}), full.kind)


def test_a_request_its_judgment_and_a_call_encode_as_the_sdk_would() -> None:
    kept = Kept()
    made = tracer(kept)
    caller = trace.set_span_in_context(NonRecordingSpan(CALLER))
    request = start_span(made, "POST", caller, SpanKind.SERVER, {"http.request.method": "POST"})
    judgment = start_span(made, "judge listwise", trace.set_span_in_context(request), start_time=1_700_000_000 * 10**9)
    judgment.add_event("cache hit", {"pcfjudge.runs": 3}, 1_700_000_000 * 10**9 + 5)
    with trace.use_span(judgment):
        call = start_span(made, "chat m", kind=SpanKind.CLIENT, attributes={"gen_ai.request.temperature": 0.0})
    assert call.get_span_context().trace_id == CALLER.trace_id
    call.set_status(Status(StatusCode.ERROR, "429"))
    call.set_status(StatusCode.OK)  # OK after ERROR replaces it, as the SDK's span does
    call.set_status(StatusCode.ERROR)  # OK is final
    call.record_exception(ValueError("no"))
    call.end()
    judgment.set_attributes({"pcfjudge.backend_calls": 1})
    judgment.end()
    request.update_name("POST /judge/listwise")
    request.set_attribute("http.response.status_code", 200)
    request.end()
    request.set_attribute("late", True)  # after end: ignored
    request.add_event("late")
    request.end()  # and ended once
    assert [s.name for s in kept.spans] == ["chat m", "judge listwise", "POST /judge/listwise"]
    assert kept.spans[0].status.status_code is StatusCode.OK
    assert kept.spans[0].events[0].attributes["exception.type"] == "ValueError"  # type: ignore[index]
    assert "late" not in (kept.spans[2].attributes or {}) and not kept.spans[2].events
    ours = ExportTraceServiceRequest.FromString(SpanEncoder().encode(kept.spans))
    assert ours == encode_spans(kept.spans)  # the SDK's encoder reads a LightSpan as it reads its own
    spans = {s.name: s for s in ours.resource_spans[0].scope_spans[0].spans}
    assert spans["POST /judge/listwise"].parent_span_id == CALLER.span_id.to_bytes(8, "big")
    assert spans["judge listwise"].parent_span_id == spans["POST /judge/listwise"].span_id
    assert spans["chat m"].parent_span_id == spans["judge listwise"].span_id


def test_an_exemplar_names_a_sampled_span_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A span recorded but not sampled (a custom sampler's RECORD_ONLY) is never exported: no exemplar names it; a
    sampled one is named by its ids in hex, the same as its trace id in ``X-Trace-Id``."""
    monkeypatch.setattr(tracing, "_TRACER", object())  # on, as far as ``exemplar`` asks
    recorded = start_span(tracer(Kept(), StaticSampler(Decision.RECORD_ONLY)), "r")
    sampled = start_span(tracer(Kept()), "s")
    assert recorded.is_recording() and tracing.exemplar(recorded) is None
    context = sampled.get_span_context()
    expected = {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}
    assert tracing.exemplar(sampled) == expected and spans.trace_id(sampled) == expected["trace_id"]


def test_the_current_context_is_opentelemetrys() -> None:
    """What a span's start reads as the current context (the runtime context's own variable, where the API keeps
    it) is ``opentelemetry.context.get_current()``, attached or not."""
    assert current_context() is otel_context.get_current()
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(CALLER)))
    try:
        assert current_context() is otel_context.get_current()
        assert trace.get_current_span(current_context()).get_span_context() == CALLER
    finally:
        otel_context.detach(token)
