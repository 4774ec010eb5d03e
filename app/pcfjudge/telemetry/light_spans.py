"""The service's spans: a light implementation of the OpenTelemetry API's ``Span``, started with the SDK's own parts.

The SDK's span validates every attribute as it is set (a copy, a type check, a lock each), wraps each event's in a
bounded map, and holds two locks of its own: 60–75 µs for a request span with a dozen attributes, more than the
rest of a warm request spends on tracing (docs/performance.md, "Tracing"). The attributes this service sets are its
own, typed (``tracing.Attributes``) and few, and its spans are touched by one event loop, so a span here is a plain
record: a name, a ``SpanContext``, a dict, a list of events, a status.

What decides stays the SDK's, read from the tracer ``tracing.setup()`` makes: the sampler (``OTEL_TRACES_SAMPLER``,
parent-based), the id generator, the resource, and the span processor (``telemetry.loop_export``'s, which encodes
each span as it ends and exports from the event loop). A span is started as the SDK's ``Tracer.start_span`` starts one: a child of the span
current in ``context``, in its trace, or a new trace; not recorded when the sampler drops it (a ``NonRecordingSpan``
that still carries the trace). Not carried over: span limits (``OTEL_SPAN_*_LIMIT``: the service sets at most a
dozen attributes and a few events per span) and the SDK's own metrics about spans.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from time import time_ns
from typing import TYPE_CHECKING, cast

from opentelemetry import trace
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, DEFAULT_ON, Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from pcfjudge._version import __version__
from pcfjudge.telemetry.tracing import SCOPE as NAME

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, Tracer
    from opentelemetry.sdk.trace import Span as SdkSpan
    from opentelemetry.util.types import AnyValue, Attributes

SCOPE = InstrumentationScope(NAME, __version__)
_UNSET = Status(StatusCode.UNSET)


class LightEvent:
    """An event of a ``LightSpan``: what the encoders read of the SDK's ``Event``, as plain fields."""

    __slots__ = ("attributes", "name", "timestamp")
    dropped_attributes = 0

    def __init__(self, name: str, attributes: Attributes, timestamp: int) -> None:
        self.name, self.attributes, self.timestamp = name, attributes, timestamp


class LightSpan(trace.Span):
    """A recording span: what ``telemetry.otlp`` (and the SDK's encoder) reads of a finished span, and the API's
    methods to make it. Changes after ``end()`` are ignored, as the SDK's span ignores them."""

    __slots__ = (
        "_hex_ids", "_processor", "attributes", "context", "end_time", "events", "kind", "name", "parent",
        "resource", "start_time", "status",
    )  # fmt: skip
    links: Sequence[trace.Link] = ()
    dropped_attributes = dropped_events = dropped_links = 0
    instrumentation_scope = SCOPE

    def __init__(
        self, tracer: Tracer, name: str, context: SpanContext, parent: SpanContext | None, kind: SpanKind,
        attributes: dict[str, AnyValue], start_time: int,
    ) -> None:  # fmt: skip
        self.name, self.context, self.parent, self.kind, self.attributes = name, context, parent, kind, attributes
        self.start_time, self.end_time, self.status = start_time, cast("int | None", None), _UNSET
        self.events: list[LightEvent] = []
        self.resource: Resource = tracer.resource
        self._processor = tracer.span_processor
        self._hex_ids: dict[str, str] | None = None

    def hex_ids(self) -> dict[str, str]:
        """Its trace and span ids in hex, as a Prometheus exemplar's labels (made once: a request's span names its
        latency's observation, and its trace id goes in its ``X-Trace-Id`` header and its access log line)."""
        if self._hex_ids is None:
            context = self.context
            self._hex_ids = {
                "trace_id": context.trace_id.to_bytes(16, "big").hex(),
                "span_id": context.span_id.to_bytes(8, "big").hex(),
            }
        return self._hex_ids

    def get_span_context(self) -> SpanContext:
        return self.context

    def is_recording(self) -> bool:
        return self.end_time is None

    def set_attributes(self, attributes: Mapping[str, AnyValue]) -> None:
        if self.end_time is None:
            self.attributes.update(attributes)

    def set_attribute(self, key: str, value: AnyValue) -> None:
        if self.end_time is None:
            self.attributes[key] = value

    def add_event(self, name: str, attributes: Attributes = None, timestamp: int | None = None) -> None:
        if self.end_time is None:
            self.events.append(LightEvent(name, attributes, timestamp or time_ns()))

    def update_name(self, name: str) -> None:
        if self.end_time is None:
            self.name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        """As the SDK's: UNSET changes nothing, OK is final."""
        if isinstance(status, StatusCode):
            status = Status(status, description)
        final = self.end_time is not None or self.status.status_code is StatusCode.OK
        if not final and status.status_code is not StatusCode.UNSET:
            self.status = status

    def record_exception(
        self, exception: BaseException, attributes: Attributes = None, timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:  # fmt: skip
        """An ``exception`` event, with the semantic conventions' attributes (as the SDK's)."""
        kind, module = type(exception).__qualname__, type(exception).__module__
        described: dict[str, AnyValue] = {
            "exception.type": kind if module == "builtins" else f"{module}.{kind}",
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
        }
        self.add_event("exception", {**described, **(attributes or {})}, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self.end_time is None:
            self.end_time = end_time if end_time is not None else time_ns()
            self._processor.on_end(cast("ReadableSpan", self))  # it queues the span for the exporter, which reads it


def start_span(
    tracer: Tracer,
    name: str,
    context: Context | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, AnyValue] | None = None,
    start_time: int | None = None,
) -> trace.Span:
    """A span started as ``tracer.start_span`` (the SDK's) would start it, recorded as a ``LightSpan``."""
    parent: SpanContext | None = trace.get_current_span(context).get_span_context()
    ids = tracer.id_generator
    if parent is None or not parent.is_valid:
        parent, trace_id, random_id = None, ids.generate_trace_id(), ids.is_trace_id_random()
    else:
        trace_id, random_id = parent.trace_id, parent.trace_flags.random_trace_id
    sampler = tracer.sampler
    if sampler is ALWAYS_ON or (sampler is DEFAULT_ON and parent is None):  # the decision is known: sampled, the
        decision, state = Decision.RECORD_AND_SAMPLE, parent.trace_state if parent is not None else None  # SDK's
        kept = dict(attributes) if attributes else {}  # as its StaticSampler's result, without making one
    else:
        sampled = sampler.should_sample(context, trace_id, name, kind, attributes, ())
        decision, state = sampled.decision, sampled.trace_state
        kept = dict(sampled.attributes) if sampled.attributes else {}
    flags = TraceFlags.SAMPLED if decision is Decision.RECORD_AND_SAMPLE else TraceFlags.DEFAULT
    if random_id:
        flags |= TraceFlags.RANDOM_TRACE_ID
    span_context = SpanContext(trace_id, ids.generate_span_id(), False, TraceFlags(flags), state)
    if decision is Decision.DROP:
        return NonRecordingSpan(span_context)
    span = LightSpan(tracer, name, span_context, parent, kind, kept, start_time or time_ns())
    tracer.span_processor.on_start(cast("SdkSpan", span), parent_context=context)
    return span
