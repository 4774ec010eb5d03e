"""``pcfjudge.telemetry.otlp``: spans written as OTLP/protobuf bytes directly are, parsed by the official
``opentelemetry-proto`` messages, the very request the SDK's own encoder builds (``encode_spans``), for spans of every
shape the SDK makes; and the service's exporter sends them that way (the receiver's tests in test_tracing.py read
what it sent)."""

from __future__ import annotations

import logging

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import AnyValue
from pcfjudge.telemetry.otlp import SpanEncoder, SpanExporter

from tests.support.otel import Kept, provider

REMOTE = SpanContext(
    0x4BF92F3577B34DA6A3CE929D0E0E4736,
    0x00F067AA0BA902B7,
    is_remote=True,
    trace_flags=TraceFlags(1),
    trace_state=TraceState([("vendor", "x1"), ("other", "y")]),
)


def _same(spans: list[ReadableSpan], encoder: SpanEncoder | None = None) -> None:
    ours = ExportTraceServiceRequest.FromString((encoder or SpanEncoder()).encode(spans))
    theirs = encode_spans(spans)
    assert ours == theirs, (ours, theirs)
    assert len(ours.SerializeToString()) == len(theirs.SerializeToString())


@pytest.fixture
def kept() -> Kept:
    return Kept()


def test_a_request_span_a_judgment_and_a_call_as_the_service_makes_them(kept: Kept) -> None:
    tracer = provider(kept, {"service.name": "pcfjudge", "service.version": "1.2.3"}).get_tracer("pcfjudge", "1.2.3")
    parent = trace.set_span_in_context(NonRecordingSpan(REMOTE))
    request = tracer.start_span(
        "POST",
        context=parent,
        kind=SpanKind.SERVER,
        attributes={"http.request.method": "POST", "url.path": "/judge/listwise"},
    )
    inside = trace.set_span_in_context(request)
    judgment = tracer.start_span("judge listwise", context=inside, attributes={"pcfjudge.k": 7})
    judgment.add_event("cache hit", {"pcfjudge.cache_hits": 3})
    call = tracer.start_span(
        "chat gpt-x",
        context=trace.set_span_in_context(judgment),
        kind=SpanKind.CLIENT,
        attributes={"gen_ai.request.temperature": 0.0, "gen_ai.request.max_tokens": 512},
    )
    call.add_event("retry", {"error.type": "429"})
    call.set_status(Status(StatusCode.ERROR, "rate limited"))
    call.end()
    judgment.end()
    request.update_name("POST /judge/listwise")
    request.set_attributes({"http.response.status_code": 200, "http.route": "/judge/listwise"})
    request.end()
    assert len(kept.spans) == 3
    _same(kept.spans)


def test_every_attribute_type_links_limits_and_an_unset_status(kept: Kept) -> None:
    limits = SpanLimits(max_span_attributes=6, max_events=2, max_links=1, max_event_attributes=2)
    tracer = provider(kept, {"service.name": "x", "deployment.environment": "test", "n": 3}, limits=limits).get_tracer(
        "t"
    )
    link = Link(REMOTE, {"why": "batched", "n": -1})
    local = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, is_remote=False)
    span = tracer.start_span(
        "everything — ünïcode",
        kind=SpanKind.CONSUMER,
        links=[link, Link(local)],
        attributes={
            "s": "",
            "t": True,
            "f": False,
            "zero": 0,
            "neg": -(2**63),
            "big": 2**63 - 1,
            "x": -0.5,
            "strs": ("a", "", "ç"),
            "ints": (1, -2),
            "floats": (0.25,),
            "bools": (True, False),
            "more": "dropped",
            "and": "this",
        },
    )
    for n in range(3):
        span.add_event(f"e{n}", {"a": n, "b": "b", "c": 1.5}, timestamp=1_700_000_000_000_000_000 + n)
    span.add_event("")
    span.set_status(Status(StatusCode.OK))
    span.end()
    bare = tracer.start_span("", context=trace.set_span_in_context(NonRecordingSpan(local)), kind=SpanKind.PRODUCER)
    bare.end()
    assert kept.spans[0].dropped_attributes and kept.spans[0].dropped_events and kept.spans[0].dropped_links
    _same(kept.spans)


def test_spans_of_two_resources_and_two_scopes_group_as_the_sdks_do(kept: Kept) -> None:
    first = provider(kept, {"service.name": "a"})
    second = provider(kept, {"service.name": "b"})
    tracers = [
        first.get_tracer("one", "1"),
        second.get_tracer("two", schema_url="https://opentelemetry.io/s/1.30"),
        first.get_tracer("three", attributes={"scope.attr": "x"}),
    ]
    for n in range(6):
        tracers[n % 3].start_span(f"span {n}").end()
    encoder = SpanEncoder()
    _same(kept.spans, encoder)
    _same(kept.spans[2:], encoder)  # what an encoder keeps from one batch serves the next


def test_an_attribute_seen_again_is_the_same_bytes_and_types_stay_apart(kept: Kept) -> None:
    """The table of encoded attributes keys on the value's type: 1, 1.0 and True are three values."""
    tracer = provider(kept, {"service.name": "x"}).get_tracer("t")
    for value in (1, 1.0, True, 1, True, 1.0):
        tracer.start_span("s", attributes={"v": value}).end()
    encoder = SpanEncoder()
    _same(kept.spans, encoder)
    _same(kept.spans, encoder)


def test_an_attribute_that_cannot_be_encoded_is_left_out_and_said(caplog: pytest.LogCaptureFixture) -> None:
    class Odd:
        pass

    span = ReadableSpan(
        "odd",
        context=REMOTE,
        attributes={"ok": "yes", "odd": Odd()},  # type: ignore[dict-item]
        resource=Resource.create({}),
    )
    with caplog.at_level(logging.ERROR, logger="pcfjudge"):
        decoded = ExportTraceServiceRequest.FromString(SpanEncoder().encode([span]))
    [got] = decoded.resource_spans[0].scope_spans[0].spans
    assert [kv.key for kv in got.attributes] == ["ok"]
    assert "attribute odd not exported" in caplog.text


def test_the_exporter_sends_what_the_encoder_writes(monkeypatch: pytest.MonkeyPatch, kept: Kept) -> None:
    """The service's exporter is the SDK's with ``export`` replaced: it finds the SDK's HTTP client (a release that
    moves it makes this fail, and the exporter falls back to the SDK's own encoding) and hands it the bytes."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces")
    exporter = SpanExporter()
    assert exporter.direct
    sent: list[bytes] = []

    class Client:
        def export(self, data: bytes) -> object:
            sent.append(data)
            return type("Result", (), {"success": len(sent) == 1})()

    exporter._client = Client()  # type: ignore[assignment]  # the wire itself is test_tracing.py's
    tracer = provider(kept, {"service.name": "x"}).get_tracer("t")
    tracer.start_span("s", attributes={"a": 1}).end()
    assert exporter.export(kept.spans) is SpanExportResult.SUCCESS
    assert ExportTraceServiceRequest.FromString(sent[0]) == encode_spans(kept.spans)
    assert exporter.export(kept.spans) is SpanExportResult.FAILURE  # the client's failure is the batch's


def _attributes_sorted(request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    """``request`` with each span's attributes in key order (OTLP attributes are a map: their order says nothing)."""
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                pairs = sorted(span.attributes, key=lambda kv: kv.key)
                copies = [type(kv).FromString(kv.SerializeToString()) for kv in pairs]
                del span.attributes[:]
                span.attributes.extend(copies)
    return request


def test_a_volatile_attribute_is_encoded_every_time_and_the_rest_kept(kept: Kept) -> None:
    """A key named volatile (a request's id), and one found with ever new values, are written every time, after the
    other attributes; what is written is the SDK's encoding, attributes compared as the map they are."""
    tracer = provider(kept, {"service.name": "x"}).get_tracer("t")
    for i in range(300):  # "n" takes more new values than an encoder keeps for one key
        attributes: dict[str, AnyValue] = {
            "a": "x",
            "pcfjudge.request_id": f"{i:032x}",
            "n": f"v{i}",
            "k": 1,
            "f": True,
        }
        tracer.start_span("s", attributes=attributes).end()
    encoder = SpanEncoder(volatile=("pcfjudge.request_id",))
    for batch in (kept.spans[:150], kept.spans[150:], kept.spans[150:]):  # a second time: what was kept is reused
        ours = _attributes_sorted(ExportTraceServiceRequest.FromString(encoder.encode(batch)))
        assert ours == _attributes_sorted(encode_spans(batch))
    last = ExportTraceServiceRequest.FromString(encoder.encode(kept.spans[-1:])).resource_spans[0].scope_spans[0]
    assert {kv.key for kv in last.spans[0].attributes[-2:]} == {"n", "pcfjudge.request_id"}  # volatile: last
