"""Traces (OpenTelemetry): a span per request, per judgment and per backend call, exported over OTLP/HTTP.

**On** when the standard variables name an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) and neither ``OTEL_SDK_DISABLED=true`` nor ``OTEL_TRACES_EXPORTER=none`` says
otherwise; the SDK reads the rest itself (``OTEL_SERVICE_NAME``, default ``pcfjudge``; ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER[_ARG]``, ``OTEL_BSP_*``, ``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS``/``TIMEOUT``/``COMPRESSION``/
certificates). ``setup()`` and ``ashutdown()`` are called by the app's lifespan. Spans are encoded by
``telemetry.otlp`` (the SDK encoder's bytes, a fifth of the time) and exported from the event loop with the SDK
exporter's settings (``telemetry.loop_export``: the SDK's batch processor thread cost a warm request more than the
rest of tracing).

**Off** otherwise: nothing of the SDK is imported (only the API, which FastAPI imports anyway), no provider or export
thread exists, no header is read or written, and every helper here returns at its first line (``_TRACER is None``).

The provider is the service's own: it is not installed as OpenTelemetry's global one, so FastAPI's built-in
telemetry and the provider SDKs' own spans, which would duplicate these, stay off. Trace context crosses the service
as W3C ``traceparent``/``tracestate`` only: a caller's ``baggage`` is never passed on to a provider.

Spans (made in ``telemetry.spans`` as light records, ``telemetry.light_spans``, loaded only with tracing on;
docs/operations/tracing.md lists every attribute):
  request    SERVER   ``POST /judge/listwise``: continues the caller's ``traceparent``; its trace id goes back in
                      the ``X-Trace-Id`` header and into the access log line (``trace_id``)
  judgment   INTERNAL ``judge listwise`` / ``judge pairwise`` (``engine/judgment_spans.py``), made from the judgment's
                      events once it waits for calls; its events are the judgment's own (``engine.progress``): the
                      runs a cache lookup answered (``cache hit``, with their number), a round of windows or a juror
                      finished (``round finished``, ``juror finished``); a run that joined a call another request
                      made is one too (``shared call``). A judgment the cache answered whole is one event of that
                      name on the request span.
  call       CLIENT   ``chat {model}``: one backend call, its retries included (GenAI semantic conventions)
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, cast

from opentelemetry import context as otel_context
from opentelemetry import trace  # the API only (FastAPI and the Anthropic SDK import it anyway); the SDK comes later
from opentelemetry.context import Context
from opentelemetry.trace import Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pcfjudge._version import __version__

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import Tracer, TracerProvider

    from pcfjudge.telemetry.loop_export import LoopSpanProcessor

log = logging.getLogger("pcfjudge")
SCOPE = "pcfjudge"
HEADER = b"x-trace-id"
UNTRACED = frozenset({"/metrics", "/healthz", "/readyz"})  # scrapes and probes: no span of their own
CARRIED = (b"traceparent", b"tracestate")  # what a request's trace context is read from
VOLATILE = ("pcfjudge.request_id",)  # attributes new on every span: the encoder does not keep their values

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = dict[str, AttributeValue]

_TRACER: Tracer | None = None
_PROVIDER: TracerProvider | None = None
_PROPAGATOR: TraceContextTextMapPropagator | None = None
_LOOP: LoopSpanProcessor | None = None  # the span processor, unless the SDK's batch processor stands in (loop_export)
_USERS = 0  # setup() calls not yet matched by shutdown() (apps in one process share the provider)
_NULL = nullcontext()


# ── on and off ─────────────────────────────────────────────────────────────────────────────────────────────────


def exporting(env: Mapping[str, str]) -> str | None:
    """Where the standard variables send spans (None: tracing stays off)."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporters = {e.strip().lower() for e in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if e.strip()}
    if exporters and "otlp" not in exporters:
        if exporters != {"none"}:
            log.warning(
                "tracing off: OTEL_TRACES_EXPORTER=%s (this service exports over OTLP only)", ",".join(exporters)
            )
        return None
    traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if traces:
        return traces
    return f"{base.rstrip('/')}/v1/traces" if base else None


def on() -> bool:
    return _TRACER is not None


def tracer() -> Tracer | None:
    """The service's tracer (None: off); ``telemetry.spans`` makes the spans with it."""
    return _TRACER


def propagator() -> TraceContextTextMapPropagator | None:
    return _PROPAGATOR


def setup() -> bool:
    """Start tracing when the environment says so (see the module docstring); whether it is on. Each call that
    returned True is matched by one ``shutdown()``."""
    global _TRACER, _PROVIDER, _PROPAGATOR, _USERS, _LOOP
    if _TRACER is not None:
        _USERS += 1
        return True
    endpoint = exporting(os.environ)
    if endpoint is None:
        return False
    from opentelemetry.sdk.resources import Resource  # tracing on only
    from opentelemetry.sdk.trace import TracerProvider  # tracing on only
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # tracing on only

    from pcfjudge.telemetry.loop_export import LoopSpanProcessor, target  # tracing on only
    from pcfjudge.telemetry.otlp import SpanExporter  # tracing on only

    protocol = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol not in (None, "", "http/protobuf"):
        log.warning("tracing: OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; sending http/protobuf", protocol)
    named = os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    attributes: dict[str, str] = {}
    if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in named:
        attributes["service.name"] = "pcfjudge"
    if "service.version=" not in named:
        attributes["service.version"] = __version__
    provider = TracerProvider(resource=Resource.create(attributes), shutdown_on_exit=False)
    exporter = SpanExporter(volatile=VOLATILE)
    to = target(exporter)
    _LOOP = LoopSpanProcessor(exporter, to) if to is not None else None
    provider.add_span_processor(_LOOP or BatchSpanProcessor(exporter))
    _PROVIDER, _PROPAGATOR = provider, TraceContextTextMapPropagator()
    _TRACER = cast("Tracer", provider.get_tracer(SCOPE, __version__))  # the SDK's: ``light_spans`` reads its parts
    if _LOOP is not None:  # the provider's only processor: spans go to it directly, not through the provider's
        _TRACER.span_processor = _LOOP  # type: ignore[assignment]  # loop over its processors (it still shuts it)
    _USERS = 1
    log.info("tracing on: spans go over OTLP/HTTP to %s", endpoint)
    return True


async def ashutdown() -> None:
    """``shutdown()`` from an event loop (the app's lifespan): the spans this loop still exports, and those queued,
    are sent and waited for first, and this loop's HTTP client is closed, whether or not tracing stays on."""
    if _LOOP is not None:
        await _LOOP.aflush()
    shutdown()


def shutdown() -> None:
    """Stop tracing once every ``setup()`` that turned it on has ended: spans still queued are exported first (from
    a loop, ``ashutdown`` waits for the spans it is sending)."""
    global _TRACER, _PROVIDER, _PROPAGATOR, _USERS, _LOOP
    if _TRACER is None:
        return
    _USERS -= 1
    if _USERS > 0:
        return
    provider = _PROVIDER
    _TRACER = _PROVIDER = _PROPAGATOR = _LOOP = None
    if provider is not None:
        provider.shutdown()


# ── the request span (api/middleware/request.py) ──────────────────────────────────────────────────────────────


REQUEST: ContextVar[Span | None] = ContextVar("pcfjudge_request_span", default=None)
"""The request's span (``current`` sets it). It is not put in OpenTelemetry's context: a warm request, whose
judgment makes no span, then never touches that context; what makes a child span or sends the trace on asks
``parent_context`` (measured: docs/performance.md, "Tracing")."""


def current(span: Span | None) -> AbstractContextManager[object]:
    """``span`` is the request's span inside the block (``REQUEST``; nothing happens for None); it is not ended on
    leaving, nor told of an exception."""
    return _NULL if span is None else _Current(span)


class _Current(AbstractContextManager[object]):
    __slots__ = ("_span", "_token")
    _token: Token[Span | None]

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> object:
        self._token = REQUEST.set(self._span)
        return self._span

    def __exit__(self, *_: object) -> None:
        REQUEST.reset(self._token)


def parent_context() -> Context:
    """OpenTelemetry's current context, with the request's span as its span when no span is current there (a
    judgment's or a call's is, once made): the parent of a span about to start, the trace a provider is sent."""
    context = otel_context.get_current()
    if trace.get_current_span(context).get_span_context().is_valid:
        return context
    request = REQUEST.get()
    return context if request is None else trace.set_span_in_context(request, context)


def current_span() -> Span:
    """The span events of the moment go on: OpenTelemetry's current one (a judgment's, a call's), else the
    request's."""
    span = trace.get_current_span()
    if span.get_span_context().is_valid:
        return span
    return REQUEST.get() or span


def unsampled() -> bool:
    """Whether the trace the request (else the current span) is in was dropped by the sampler: a span made within
    it would be dropped too by every sampler ``OTEL_TRACES_SAMPLER`` names (parent-based ones follow the parent; the
    others decide by trace id, or always the same), so the judgment and call spans are not even started there."""
    request = REQUEST.get()
    context = (request or trace.get_current_span()).get_span_context()
    return context[5] and not context[3] & 1  # (a SpanContext's tuple: is_valid, and its flags' sampled bit)


def exemplar(span: Span | None = None) -> dict[str, str] | None:
    """A Prometheus exemplar naming ``span`` (default: the current span) when it is sampled; None otherwise."""
    if _TRACER is None:
        return None
    span = span or trace.get_current_span()
    context = span.get_span_context()
    if not context.trace_flags.sampled:  # recorded only, or dropped: its trace is not exported
        return None
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}


def shared(model: str, by: str) -> None:
    """A run answered by a call another request made (``by`` "request": in this process; "replica": another
    replica's, through the shared cache's lock): a ``shared call`` event on the current span."""
    if _TRACER is None:
        return
    event: Attributes = {"pcfjudge.cache": "shared", "pcfjudge.shared_by": by, "pcfjudge.model": model}
    current_span().add_event("shared call", event)


# ── the backend-call span (engine/runner.py) ──────────────────────────────────────────────────────────────────


CALL: ContextVar[Any] = ContextVar("pcfjudge_traced_call", default=None)
"""The ``spans.Call`` whose span is current (it sets this), or None."""


def queued(since: float) -> None:
    """The current call waited for a backend slot from ``since`` (``time.perf_counter()``) until now."""
    if _TRACER is not None:
        call = CALL.get()
        if call is not None:
            call.queued_s += time.perf_counter() - since


def retried(kind: str) -> None:
    """The current call's attempt failed with ``kind`` and is tried again: a ``retry`` event, one more retry."""
    if _TRACER is not None:
        call = CALL.get()
        if call is not None:
            call.retries += 1
            call.span.add_event("retry", {"error.type": kind})


def outgoing_headers() -> dict[str, str] | None:
    """``traceparent`` (and ``tracestate``) of the current span, for a provider request; None when off."""
    if _PROPAGATOR is None:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, parent_context())
    return carrier or None
