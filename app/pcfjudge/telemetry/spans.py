"""The spans themselves (``telemetry.tracing`` says which and why): the request's (``api/middleware/request.py``),
a judgment's, made from its events (``engine/judgment_spans.py``), and each backend call's (``engine/runner.py``).
Imported only with tracing on: a service that does not trace never loads this module.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections.abc import Mapping
from contextvars import Token
from time import monotonic
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Tracer
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from prometheus_client import Histogram

from pcfjudge.telemetry import tracing
from pcfjudge.telemetry.light_spans import LightSpan, start_span
from pcfjudge.telemetry.metrics import LLM_BUCKETS
from pcfjudge.telemetry.tracing import CARRIED, HEADER, UNTRACED, Attributes
from pcfjudge.types import Usage

_TRACEPARENT = CARRIED[0]  # (it must be there for a trace to continue)


def _tracer() -> Tracer:
    tracer = tracing.tracer()
    assert tracer is not None, "spans are made only with tracing on"
    return tracer


def server_span(scope: Mapping[str, Any], request_id: str) -> tuple[Span, tuple[bytes, bytes]] | None:
    """A SERVER span for an HTTP request, continuing the caller's ``traceparent``, and its response header
    ``X-Trace-Id: <32 hex digits>`` (None: off, or a probe)."""
    tracer = tracing.tracer()
    path = scope.get("path", "")
    if tracer is None or path in UNTRACED:
        return None
    parent = None
    headers = dict(scope.get("headers", ()))  # (the last of a repeated header, as a propagator reads them)
    # Under an outer instrumentation (a server span already current) the request span is its child.
    if _TRACEPARENT in headers and not trace.get_current_span().get_span_context().is_valid:
        carrier = {k.decode("latin-1"): headers[k].decode("latin-1") for k in CARRIED if k in headers}
        propagator = tracing.propagator()
        parent = propagator.extract(carrier) if propagator is not None else None
    method = scope.get("method", "") or "HTTP"
    attributes: Attributes = {
        "http.request.method": method,
        "url.path": path,
        "url.scheme": scope.get("scheme", "http"),
        "pcfjudge.request_id": request_id,
    }
    span = start_span(tracer, method, context=parent, kind=SpanKind.SERVER, attributes=attributes)
    return span, (HEADER, trace_id(span).encode())


def trace_id(span: Span) -> str:
    """Its trace id, 32 hex digits (as ``X-Trace-Id``, the access log line and an exemplar write it)."""
    context = span.context if span.__class__ is LightSpan else span.get_span_context()  # (no method call for ours)
    return format(context[0], "032x")  # (a SpanContext is a tuple: its trace id, without a property call)


EXEMPLAR_EVERY_S = 1.0
_EXEMPLARS: dict[tuple[int, int], float] = {}  # (the histogram child's id, its bucket) -> when it last got one


def timed(histogram: Histogram, seconds: float, span: Span) -> None:
    """``histogram.observe(seconds)`` (a request's latency, ``metrics.LLM_BUCKETS``), with an exemplar naming ``span``
    when it is sampled, at most once a second per bucket: a scrape shows only a bucket's last exemplar, and
    prometheus_client checks each one's labels, which cost a warm request more than its observation."""
    key, now = (id(histogram), bisect_left(LLM_BUCKETS, seconds)), monotonic()  # (the bucket ``observe`` picks)
    if now - _EXEMPLARS.get(key, -EXEMPLAR_EVERY_S) >= EXEMPLAR_EVERY_S:
        exemplar = tracing.exemplar(span)
        if exemplar is not None:
            _EXEMPLARS[key] = now
            histogram.observe(seconds, exemplar)
            return
    histogram.observe(seconds)


def end_request(span: Span, method: str, route: str, status: int, key: str) -> None:
    """Name the span by its route template (``POST /judge/listwise``), set the outcome, end it (a span the sampler
    dropped records nothing: it is left as it is)."""
    if span.__class__ is not LightSpan or not span.is_recording():
        return
    attributes = span.attributes  # (ours, not ended: set in place)
    attributes["http.response.status_code"], attributes["pcfjudge.api_key.name"] = status, key
    if route != "unmatched":
        span.name = f"{method} {route}"
        attributes["http.route"] = route
    if status >= 500:
        attributes["error.type"] = str(status)
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def event_attributes(data: Mapping[str, object]) -> Attributes:
    return {f"pcfjudge.{k}": v for k, v in data.items() if isinstance(v, str | int | float)}


class Judgment:
    """One judgment's span, made from its events (``engine/judgment_spans.py``). It is started by the first event
    that says the judgment waits for more than the cache (``calling``), dated from the judgment's start, with the
    events heard before it; from then on it is the current span of each task that announced it, so the calls those
    tasks start are its children. A judgment the cache answered whole makes no span: it is one event on the request
    span (``ended``), as its cache hits were."""

    __slots__ = ("_attached", "_events", "_start_ns", "attributes", "name", "span")
    span: Span | None

    def __init__(self, name: str, attributes: Attributes) -> None:
        self.name, self.attributes, self.span = name, attributes, None
        self._start_ns = time.time_ns()
        self._events: list[tuple[str, Mapping[str, object], int]] = []
        self._attached: list[tuple[object, Token[Context]]] | None = None  # (task, token): where it was made current

    def calling(self) -> None:
        """The judgment is about to wait for calls: its span exists, and is current in this task."""
        span = self.span
        if span is None:
            span = self.span = start_span(  # a child of the span current where the judgment started (its task's)
                _tracer(), self.name, tracing.parent_context(), attributes=self.attributes, start_time=self._start_ns
            )
            for name, data, at in self._events:
                span.add_event(name, event_attributes(data), at)
            self._events.clear()
        task, attached = asyncio.current_task(), self._attached
        if attached is None:
            attached = self._attached = []
        if all(t is not task for t, _ in attached):
            attached.append((task, otel_context.attach(trace.set_span_in_context(span))))

    def event(self, name: str, data: Mapping[str, object]) -> None:
        """An event of the judgment (``data``: the engine's, each of its numbers and strings an attribute
        ``pcfjudge.<name>``): on its span, or kept as it came until the span is made (a judgment the cache answered
        whole makes none, and its events are not recorded one by one)."""
        if self.span is not None:
            self.span.add_event(name, event_attributes(data))
        else:
            self._events.append((name, data, time.time_ns()))

    def ended(self, attributes: Attributes, error: str | None = None) -> None:
        """The judgment ended (``error``: its failure's kind): its span gets ``attributes`` and ends; without a span,
        one event named as the span would be, on the current (the request's) span, says what it did."""
        if self._attached:
            task = asyncio.current_task()
            for t, token in reversed(self._attached):
                if t is task:  # a child task's (a juror's, a window's) context ended with it
                    otel_context.detach(token)
        span = self.span
        if error is not None:
            attributes = {**attributes, "error.type": error}
        if span is None:
            self.attributes.update(attributes)
            (tracing.REQUEST.get() or tracing.current_span()).add_event(self.name, self.attributes, self._start_ns)
            return
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.set_attributes(attributes)
        span.end()


class Call:
    """One backend call's span (current inside ``with``) and what its attempts add up to; ended on leaving."""

    __slots__ = ("_tokens", "attributes", "queued_s", "retries", "span")

    def __init__(self, span: Span) -> None:
        self.span, self.queued_s, self.retries = span, 0.0, 0
        self.attributes: Attributes = {}

    def __enter__(self) -> Call:
        self._tokens = (otel_context.attach(trace.set_span_in_context(self.span)), tracing.CALL.set(self))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        context_token, call_token = self._tokens
        tracing.CALL.reset(call_token)
        otel_context.detach(context_token)
        span = self.span
        if span.is_recording():
            if isinstance(exc, Exception):
                self.attributes["error.type"] = type(exc).__name__
                span.set_status(Status(StatusCode.ERROR))
            self.attributes["pcfjudge.queued_ms"] = round(self.queued_s * 1000, 3)
            self.attributes["pcfjudge.retries"] = self.retries
            span.set_attributes(self.attributes)
        span.end()

    def ended(self, error: str | None, usage: Usage) -> None:
        """The call's outcome: its tokens (every attempt's), and its error kind when it failed."""
        out = self.attributes
        out["gen_ai.usage.input_tokens"] = usage.input_tokens
        out["gen_ai.usage.output_tokens"] = usage.output_tokens
        if usage.cached_tokens:
            out["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
        if error is not None:
            out["error.type"] = error
            self.span.set_status(Status(StatusCode.ERROR))


def backend_call(provider: str, model: str, string: str, temperature: float | None, max_tokens: int) -> Call:
    """A CLIENT span ``chat {model}`` around one call and its retries (``with``: current inside, so outgoing requests
    carry it as their ``traceparent``). ``provider`` is the wire's (openai, anthropic, sim), ``string`` the
    service's ``provider:model``."""
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,  # the name before semantic conventions 1.37, for older dashboards
        "gen_ai.request.model": model,
        "gen_ai.request.max_tokens": max_tokens,
        "pcfjudge.model": string,
        "pcfjudge.cache": "miss",  # a call span is a call made: hits and shared calls are events on the judgment
    }
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    span = start_span(_tracer(), f"chat {model}", tracing.parent_context(), SpanKind.CLIENT, attributes)
    return Call(span)
