"""One error shape for every failure: ``{"error": kind, "detail": what and how to fix}``.

ApiError (status, kind)            raised by routes for client mistakes (4xx) and backend trouble (5xx)
RequestValidationError             → 422 validation_error, or 400 invalid_json for a body that is not JSON
StarletteHTTPException             → its status (404 not_found, 405 method_not_allowed, …)
BodyLimitMiddleware                → 413 body_too_large
anything else                      → 500 internal_error, as JSON, logged with its request id
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pcfjudge.judging.failures import JudgingFailed

log = logging.getLogger("pcfjudge")


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        kind: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.status, self.kind, self.detail, self.headers, self.field = status, kind, detail, headers, field


def client_error(field: str, detail: str) -> ApiError:
    """A 422 naming the field and the fix."""
    return ApiError(422, "validation_error", f"{field}: {detail}", field=field)


def backend_failure(exc: JudgingFailed) -> ApiError:
    """Too few judge runs succeeded: 502/503/504 JSON; a 503 always says when to retry."""
    if exc.retry_after is not None:
        headers: dict[str, str] | None = {"Retry-After": str(max(1, round(exc.retry_after)))}
    else:
        headers = {"Retry-After": "5"} if exc.status == 503 else None
    return ApiError(exc.status, exc.kind, exc.detail, headers=headers)


def error_body(kind: str, detail: str, request: Request | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": kind, "detail": detail, **extra}
    request_id = getattr(request.state, "request_id", None) if request is not None else None
    if request_id:
        body["request_id"] = request_id
    return body


def _field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) or "body"


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    extra = {"errors": [{"field": exc.field, "message": exc.detail}]} if exc.field else {}
    return JSONResponse(error_body(exc.kind, exc.detail, request, **extra), exc.status, headers=exc.headers)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        ctx = errors[0].get("ctx", {}).get("error", "")
        detail = f"request body is not valid JSON ({ctx}); send a JSON object with Content-Type: application/json"
        return JSONResponse(error_body("invalid_json", detail, request), 400)
    items = []
    for e in errors:
        field = _field(tuple(e.get("loc", ())))
        message = str(e.get("msg", "invalid value"))
        if field == "body" and e.get("type") in ("dict_type", "model_attributes_type"):
            message = "the request body must be a JSON object; send JSON with Content-Type: application/json"
        elif e.get("type") == "extra_forbidden":
            message = "unknown field; remove it (see openapi/openapi.json for the accepted fields)"
        elif e.get("type") == "missing":
            message = "this field is required"
        items.append({"field": field, "message": message})
    detail = "; ".join(f"{i['field']}: {i['message']}" for i in items[:5])
    return JSONResponse(error_body("validation_error", detail, request, errors=items), 422)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    kinds = {404: "not_found", 405: "method_not_allowed"}
    kind = kinds.get(exc.status_code, "http_error")
    detail = str(exc.detail)
    if exc.status_code == 404:
        detail = f"no route {request.url.path}; see /docs or openapi/openapi.json for the endpoints"
    elif exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
    return JSONResponse(error_body(kind, detail, request), exc.status_code, headers=getattr(exc, "headers", None))


async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", extra={"request_id": getattr(request.state, "request_id", None)})
    return JSONResponse(
        error_body("internal_error", "the service failed unexpectedly; this is a bug, please report it", request),
        500,
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unhandled)


class BodyLimitMiddleware:
    """Refuse request bodies over ``max_bytes`` with 413 before they are parsed (declared or streamed)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await self._reject(send)
            return
        # Buffer the body (bounded) and replay it: the app never sees more than max_bytes.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await self._reject(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)

    async def _reject(self, send: Send) -> None:
        detail = f"request body exceeds {self.max_bytes} bytes; send fewer or shorter candidates (PCFJ_MAX_BODY_BYTES)"
        response = JSONResponse({"error": "body_too_large", "detail": detail}, 413)
        await response({"type": "http"}, _empty_receive, send)


async def _empty_receive() -> Message:
    return {"type": "http.disconnect"}


def _replay(messages: list[Message], then: Receive) -> Receive:
    """A receive callable that yields ``messages`` once, then hands over to the server's ``then``."""
    queue = list(messages)

    async def receive() -> Message:
        return queue.pop(0) if queue else await then()

    return receive
