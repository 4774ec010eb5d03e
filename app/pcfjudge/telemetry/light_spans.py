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
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from random import getrandbits
from time import time_ns

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import SpanProcessor, Tracer
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, DEFAULT_ON, Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import DEFAULT_TRACE_STATE, TraceState
from opentelemetry.util.types import AnyValue, Attributes

from pcfjudge._version import __version__
from pcfjudge.telemetry.tracing import SCOPE as NAME

SCOPE = InstrumentationScope(NAME, __version__)
_UNSET = Status(StatusCode.UNSET)
_FLAGS = [TraceFlags(n) for n in range(4)]  # by sampled | random trace id << 1 (TraceFlags.RANDOM_TRACE_ID is 2)
_TRACE_ID_MAX, _SPAN_ID_MAX = 2**128 - 1, 2**64 - 1


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
        "_processor", "attributes", "context", "end_time", "events", "kind", "name", "parent",
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
        self.start_time, self.status, self.resource = start_time, _UNSET, tracer.resource
        self.end_time: int | None = None
        self.events: list[LightEvent] = []
        self._processor = tracer.span_processor

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
            self._processor.on_end(self)  # type: ignore[arg-type]  # it queues the span for the exporter to read


def start_span(
    tracer: Tracer,
    name: str,
    context: Context | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, AnyValue] | None = None,
    start_time: int | None = None,
) -> trace.Span:
    """A span started as ``tracer.start_span`` (the SDK's) would start it, recorded as a ``LightSpan``. What the SDK's
    own parts would answer is known here without asking them: the ids of its ``RandomIdGenerator`` (its random
    numbers, drawn the same way), the decision of ``ALWAYS_ON`` and of ``DEFAULT_ON`` at a root, the ``SpanContext``
    of valid ids (its fields, without its checks), and the base processor's ``on_start``, which does nothing."""
    if context is None:
        context = current_context()
    parent: SpanContext | None = trace.get_current_span(context).get_span_context() if context else None
    ids, sampler = tracer.id_generator, tracer.sampler
    if parent is not None and parent.is_valid:
        trace_id, random_id = parent.trace_id, parent.trace_flags.random_trace_id
    elif ids.__class__ is RandomIdGenerator:
        parent, trace_id, random_id = None, getrandbits(128) or _random_id(128), True
    else:
        parent, trace_id, random_id = None, ids.generate_trace_id(), ids.is_trace_id_random()
    span_id = (getrandbits(64) or _random_id(64)) if ids.__class__ is RandomIdGenerator else ids.generate_span_id()
    if sampler is ALWAYS_ON or (sampler is DEFAULT_ON and parent is None):
        sampled, state = True, parent.trace_state if parent is not None else DEFAULT_TRACE_STATE
        kept = dict(attributes) if attributes else {}  # (as its StaticSampler's result)
    else:
        decision = sampler.should_sample(context, trace_id, name, kind, attributes, ())
        sampled, state = decision.decision is Decision.RECORD_AND_SAMPLE, decision.trace_state or DEFAULT_TRACE_STATE
        if decision.decision is Decision.DROP:
            return NonRecordingSpan(_span_context(trace_id, span_id, _FLAGS[random_id << 1], state))
        kept = dict(decision.attributes) if decision.attributes else {}
    span_context = _span_context(trace_id, span_id, _FLAGS[sampled | random_id << 1], state)
    span = LightSpan(tracer, name, span_context, parent, kind, kept, start_time or time_ns())
    processor = tracer.span_processor
    if processor.__class__.on_start is not SpanProcessor.on_start:  # (the base class's does nothing)
        processor.on_start(span, parent_context=context)  # type: ignore[arg-type]
    return span


def _context_getter() -> Callable[[], Context]:
    """``opentelemetry.context.get_current``; where the runtime context is the API's default, a ``ContextVar``, that
    variable's own ``get`` (the same answer, without the two calls in Python around it on every span's start)."""
    variable = getattr(getattr(otel_context, "_RUNTIME_CONTEXT", None), "_current_context", None)
    return variable.get if isinstance(variable, ContextVar) else otel_context.get_current


current_context = _context_getter()


def _random_id(bits: int) -> int:
    """A trace (128 bits) or span (64) id, as the SDK's ``RandomIdGenerator`` draws it (never 0: invalid)."""
    n = getrandbits(bits)
    while not n:
        n = getrandbits(bits)
    return n


def _span_context(trace_id: int, span_id: int, flags: TraceFlags, state: TraceState) -> SpanContext:
    """``SpanContext(trace_id, span_id, False, flags, state)``: the tuple of its fields, as it makes it, without its
    checks in Python."""
    valid = 0 < trace_id <= _TRACE_ID_MAX and 0 < span_id <= _SPAN_ID_MAX
    return tuple.__new__(SpanContext, (trace_id, span_id, False, flags, state, valid))
