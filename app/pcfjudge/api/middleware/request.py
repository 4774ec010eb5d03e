"""The outermost layer of every request (pure ASGI): request id, metrics, one access-log line, and the last word
on errors.

* ``X-Request-ID``: the client's (printable, at most 64 characters) or a new one; in every response and log line;
* an exception nothing else handled becomes a JSON 500 carrying the request id (body and header) and exactly one
  log line; it never reaches the server, so the keep-alive connection stays usable;
* Prometheus: requests and latency by route template and status (``static`` for the playground, the API docs and
  their packaged files: ``api.routes.playground_routes`` marks them with ``ROUTE_LABEL``), requests by API key name,
  in-flight gauge;
* with tracing on (``telemetry.tracing``): the request's SERVER span, continuing the caller's ``traceparent``; its
  trace id in ``X-Trace-Id``, in the access log line and as the latency histogram's exemplar.

Admission at the door (``PCFJ_MAX_PENDING_REQUESTS`` in all, ``PCFJ_MAX_PENDING_PER_KEY`` per API key) needs the
caller's key, so it sits in ``api.auth`` (see ``security.door``); the call slots refuse what gets past (see
``backends.slots``).
"""

from __future__ import annotations

import logging
import os
import re
import time
import traceback
from typing import Any

from opentelemetry.trace import Span
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pcfjudge import context
from pcfjudge.api.middleware.refusals import refusal
from pcfjudge.doors.door_list import SHAPES
from pcfjudge.telemetry import metrics as m
from pcfjudge.telemetry import tracing
from pcfjudge.telemetry.logs import ACCESS

log = logging.getLogger("pcfjudge")
ROUTE_LABEL = "pcfjudge.route_label"
"""A scope key: the route label of a request served by what set it (a bounded string), in place of its template."""
STATIC_ROUTE = "static"
_CLIENT_ID = re.compile(r"[\x21-\x7e]{1,64}")


def request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text: str = value.decode("latin-1")
            if _CLIENT_ID.fullmatch(text):
                return text
    return os.urandom(16).hex()  # 32 hex digits, as uuid4().hex (which costs several times more)


def route_template(scope: Scope) -> str:
    """The label its server gave the request (``ROUTE_LABEL``), else the matched route's path template (bounded),
    never the raw path; a door's path when a layer answered before routing (a 413 on /v2/rerank); "unmatched" when
    no route matched."""
    label = scope.get(ROUTE_LABEL)
    if isinstance(label, str):
        return label
    path: object = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path
    raw = scope.get("path")
    return raw if isinstance(raw, str) and raw in SHAPES else "unmatched"


class RequestMiddleware:
    def __init__(self, app: ASGIApp, max_pending: int | None = None) -> None:
        self.app = app  # ``max_pending`` is the door's, now in ``api.auth``: accepted for the app factory's sake

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        scope.setdefault("state", {})["request_id"] = rid
        path = scope.get("path", "")
        tracked = path != "/metrics"
        gauge = m.child(m.IN_FLIGHT, path if path in SHAPES else "other") if tracked else None  # by door route
        started = time.perf_counter()
        status = [0]
        header = (b"x-request-id", rid.encode())
        span: Span | None = None
        added: tuple[tuple[bytes, bytes], ...] = (header,)
        if tracing.on():
            import pcfjudge.telemetry.spans as spans  # tracing on only (no importlib frame)

            made = spans.server_span(scope, rid)
            if made is not None:
                span, traced = made
                added = (header, traced)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = [*message.get("headers", ()), *added]
            await send(message)

        if gauge is not None:
            gauge.inc()
        with context.serving(context.RequestContext(rid)) as ctx, tracing.current(span):
            try:
                await self.app(scope, receive, send_with_id)
            except Exception as exc:  # the last word: a JSON 500, one log line, a connection still usable
                _log_unhandled(exc, rid)
                if status[0] == 0:
                    status[0] = 500
                    detail = f"the service failed unexpectedly (request {rid}); this is a bug, please report it"
                    await refusal(scope, 500, "internal_error", detail)(scope, receive, send_with_id)
            finally:
                if gauge is not None:
                    gauge.dec()
                self._record(scope, ctx, status[0] or 499, time.perf_counter() - started, tracked, span)

    @staticmethod
    def _record(
        scope: Scope, ctx: context.RequestContext, status: int, seconds: float, tracked: bool, span: Span | None = None
    ) -> None:
        route = route_template(scope)
        if tracked:
            m.child(m.REQUESTS, route, str(status)).inc()
            if span is None:
                m.child(m.REQUEST_SECONDS, route).observe(seconds)
            m.child(m.KEY_REQUESTS, ctx.key, f"{status // 100}xx").inc()
        if span is not None:  # (a traced path is a tracked one)
            import pcfjudge.telemetry.spans as spans  # tracing on only

            spans.timed(m.child(m.REQUEST_SECONDS, route), seconds, span)  # its exemplar: this request's span
            spans.end_request(span, scope.get("method", ""), route, status, ctx.key)
        if not ACCESS.isEnabledFor(logging.INFO):
            return
        fields: dict[str, Any] = {
            "request_id": ctx.request_id,
            "method": scope.get("method", ""),
            "route": route,
            "status": status,
            "latency_ms": round(seconds * 1000, 2),
            "key": ctx.key,
            "backend_calls": ctx.backend_calls,
            "cache_hits": ctx.cache_hits,
        }
        if span is not None:
            import pcfjudge.telemetry.spans as spans  # tracing on only

            fields["trace_id"] = spans.trace_id(span)
        ACCESS.info("request", extra=fields)


def _log_unhandled(exc: BaseException, rid: str) -> None:
    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {frame.filename}:{frame.lineno} in {frame.name}" if frame else ""
    log.error("unhandled %s: %s%s", type(exc).__name__, str(exc)[:200], where, extra={"request_id": rid})
    log.debug("traceback of request %s", rid, exc_info=exc)
