"""Traces (OpenTelemetry): a span per request, per judgment and per backend call, exported over OTLP/HTTP.

**On** when the standard variables name an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) and neither ``OTEL_SDK_DISABLED=true`` nor ``OTEL_TRACES_EXPORTER=none`` says
otherwise; the SDK reads the rest itself (``OTEL_SERVICE_NAME``, default ``pcfjudge``; ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_TRACES_SAMPLER[_ARG]``, ``OTEL_BSP_*``, ``OTEL_EXPORTER_OTLP_[TRACES_]HEADERS``/``TIMEOUT``/``COMPRESSION``/
certificates). ``setup()`` and ``shutdown()`` are called by the app's lifespan.

**Off** otherwise: nothing of the SDK is imported (only the API, which FastAPI imports anyway), no provider or export
thread exists, no header is read or written, and every helper here returns at its first line (``_TRACER is None``).

The provider is the service's own: it is not installed as OpenTelemetry's global one, so FastAPI's built-in
telemetry and the provider SDKs' own spans, which would duplicate these, stay off. Trace context crosses the service
as W3C ``traceparent``/``tracestate`` only: a caller's ``baggage`` is never passed on to a provider.

Spans (docs/operations/tracing.md lists every attribute):
  request    SERVER   ``POST /judge/listwise``: continues the caller's ``traceparent``; its trace id goes back in
                      the ``X-Trace-Id`` header and into the access log line (``trace_id``)
  judgment   INTERNAL ``judge listwise`` / ``judge pairwise`` (``engine/judgment_spans.py``); its events are the
                      judgment's own (``engine.progress``): the runs a cache lookup answered (``cache hit``,
                      with their number), a round of windows or a juror finished (``round finished``,
                      ``juror finished``); a run that joined a call another request made is one too
                      (``shared call``)
  call       CLIENT   ``chat {model}``: one backend call, its retries included (GenAI semantic conventions)
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace  # the API only (FastAPI and the Anthropic SDK import it anyway); the SDK comes later
from opentelemetry.trace import SpanKind, Status, StatusCode

from pcfjudge._version import __version__

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from pcfjudge.types import Usage

log = logging.getLogger("pcfjudge")
SCOPE = "pcfjudge"
HEADER = b"x-trace-id"
UNTRACED = frozenset({"/metrics", "/healthz", "/readyz"})  # scrapes and probes: no span of their own
_CARRIED = (b"traceparent", b"tracestate")

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = dict[str, AttributeValue]

_TRACER: Tracer | None = None
_PROVIDER: TracerProvider | None = None
_PROPAGATOR: TraceContextTextMapPropagator | None = None
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


def setup() -> bool:
    """Start tracing when the environment says so (see the module docstring); whether it is on. Each call that
    returned True is matched by one ``shutdown()``."""
    global _TRACER, _PROVIDER, _PROPAGATOR, _USERS
    if _TRACER is not None:
        _USERS += 1
        return True
    endpoint = exporting(os.environ)
    if endpoint is None:
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

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
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _PROVIDER, _PROPAGATOR = provider, TraceContextTextMapPropagator()
    _TRACER = provider.get_tracer(SCOPE, __version__)
    _USERS = 1
    log.info("tracing on: spans go over OTLP/HTTP to %s", endpoint)
    return True


def shutdown() -> None:
    """Stop tracing once every ``setup()`` that turned it on has ended: spans still queued are exported first."""
    global _TRACER, _PROVIDER, _PROPAGATOR, _USERS
    if _TRACER is None:
        return
    _USERS -= 1
    if _USERS > 0:
        return
    provider = _PROVIDER
    _TRACER = _PROVIDER = _PROPAGATOR = None
    if provider is not None:
        provider.shutdown()


# ── the request span (api/middleware/request.py) ──────────────────────────────────────────────────────────────


def server_span(scope: Mapping[str, Any], request_id: str) -> Span | None:
    """A SERVER span for an HTTP request, continuing the caller's ``traceparent`` (None: off, or a probe)."""
    tracer = _TRACER
    path = scope.get("path", "")
    if tracer is None or path in UNTRACED:
        return None
    parent = None
    # Under an outer instrumentation (a server span already current) the request span is its child.
    if _PROPAGATOR is not None and not trace.get_current_span().get_span_context().is_valid:
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ()) if k in _CARRIED}
        if carrier:
            parent = _PROPAGATOR.extract(carrier)
    method = scope.get("method", "") or "HTTP"
    attributes: Attributes = {
        "http.request.method": method,
        "url.path": path,
        "url.scheme": scope.get("scheme", "http"),
        "pcfjudge.request_id": request_id,
    }
    return tracer.start_span(method, context=parent, kind=SpanKind.SERVER, attributes=attributes)


def current(span: Span | None) -> AbstractContextManager[object]:
    """``span`` is the current span inside the block (nothing happens for None)."""
    if span is None:
        return _NULL
    return trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


def trace_id(span: Span) -> str:
    return format(span.get_span_context().trace_id, "032x")


def response_header(span: Span) -> tuple[bytes, bytes]:
    """``X-Trace-Id: <32 hex digits>``: the trace this request's span belongs to."""
    return HEADER, trace_id(span).encode()


def end_request(span: Span, method: str, route: str, status: int, key: str) -> None:
    """Name the span by its route template (``POST /judge/listwise``), set the outcome, end it."""
    attributes: Attributes = {"http.response.status_code": status, "pcfjudge.api_key.name": key}
    if route != "unmatched":
        span.update_name(f"{method} {route}")
        attributes["http.route"] = route
    if status >= 500:
        attributes["error.type"] = str(status)
        span.set_status(Status(StatusCode.ERROR))
    span.set_attributes(attributes)
    span.end()


def exemplar(span: Span | None = None) -> dict[str, str] | None:
    """A Prometheus exemplar naming ``span`` (default: the current span) when it is sampled; None otherwise."""
    if _TRACER is None:
        return None
    context = (span or trace.get_current_span()).get_span_context()
    if not context.trace_flags.sampled:
        return None
    return {"trace_id": format(context.trace_id, "032x"), "span_id": format(context.span_id, "016x")}


# ── the judgment span (engine/judgment_spans.py) ──────────────────────────────────────────────────────────────


@contextmanager
def judgment(name: str, attributes: Attributes) -> Iterator[Span]:
    """An INTERNAL span, current inside the block (the runner's calls and cache events go under it); an exception
    leaving the block sets its status to ERROR."""
    assert _TRACER is not None, "judgment spans are started only with tracing on"
    span = _TRACER.start_span(name, attributes=attributes)
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except BaseException as exc:
        if isinstance(exc, Exception):
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        raise
    finally:
        otel_context.detach(token)
        span.end()


def annotate(span: Span, attributes: Attributes) -> None:
    span.set_attributes(attributes)


def failed(span: Span, kind: str) -> None:
    span.set_attribute("error.type", kind)


def event(span: Span, name: str, attributes: Attributes) -> None:
    """An event on ``span`` (a judgment's: ``engine.judgment_spans`` makes them from the judgment's own events)."""
    span.add_event(name, attributes)


def shared(model: str, by: str) -> None:
    """A run answered by a call another request made (``by`` "request": in this process; "replica": another
    replica's, through the shared cache's lock): a ``shared call`` event on the current span."""
    if _TRACER is None:
        return
    event: Attributes = {"pcfjudge.cache": "shared", "pcfjudge.shared_by": by, "pcfjudge.model": model}
    trace.get_current_span().add_event("shared call", event)


# ── the backend-call span (engine/runner.py) ──────────────────────────────────────────────────────────────────


class Call:
    """One backend call's span (current inside ``with``) and what its attempts add up to; ended on leaving."""

    __slots__ = ("_tokens", "attributes", "queued_s", "retries", "span")

    def __init__(self, span: Span) -> None:
        self.span, self.queued_s, self.retries = span, 0.0, 0
        self.attributes: Attributes = {}

    def __enter__(self) -> Call:
        self._tokens = (otel_context.attach(trace.set_span_in_context(self.span)), _CALL.set(self))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        context_token, call_token = self._tokens
        _CALL.reset(call_token)
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


_CALL: ContextVar[Call | None] = ContextVar("pcfjudge_traced_call", default=None)


def backend_call(provider: str, model: str, string: str, temperature: float | None, max_tokens: int) -> Call:
    """A CLIENT span ``chat {model}`` around one call and its retries (``with``: current inside, so outgoing requests
    carry it as their ``traceparent``). ``provider`` is the wire's (openai, anthropic, sim), ``string`` the
    service's ``provider:model``."""
    assert _TRACER is not None, "call spans are started only with tracing on"
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
    return Call(_TRACER.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes))


def queued(since: float) -> None:
    """The current call waited for a backend slot from ``since`` (``time.perf_counter()``) until now."""
    if _TRACER is not None:
        call = _CALL.get()
        if call is not None:
            call.queued_s += time.perf_counter() - since


def retried(kind: str) -> None:
    """The current call's attempt failed with ``kind`` and is tried again: a ``retry`` event, one more retry."""
    if _TRACER is not None:
        call = _CALL.get()
        if call is not None:
            call.retries += 1
            call.span.add_event("retry", {"error.type": kind})


def outgoing_headers() -> dict[str, str] | None:
    """``traceparent`` (and ``tracestate``) of the current span, for a provider request; None when off."""
    if _PROPAGATOR is None:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier or None
