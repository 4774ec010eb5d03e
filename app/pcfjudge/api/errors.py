"""One error shape for every failure: ``{"error": kind, "detail": what and how to fix}``.

ApiError (status, kind)                 raised by routes and the front doors' domain code (pcfjudge.errors) for
                                        client mistakes (4xx) and backend trouble (5xx)
Refusal (status, kind)                  a guard declined: caps and allowlist (422), quota (429), overload (503)
JudgingFailed                           too few runs succeeded: 502/503/504 (counted through decisions.judged)
RequestValidationError                  → 422 validation_error, or 400 invalid_json for a body that is not JSON
StarletteHTTPException                  → its status (404 not_found, 405 method_not_allowed, …)
api.middleware.body.BodyMiddleware      → 413 body_too_large, 408 body_timeout
api.middleware.auth.AuthMiddleware      → 401 unauthorized, 429 quota_exceeded
anything else                           → 500 internal_error, as JSON, by api.middleware.request.RequestMiddleware
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.errors import ApiError, Refusal, backend_failure
from pcfjudge.schemas.common import ErrorResponse


def error_body(kind: str, detail: str, request: Request | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"error": kind, "detail": detail, **extra}
    request_id = getattr(request.state, "request_id", None) if request is not None else None
    if request_id:
        body["request_id"] = request_id
    return body


def _field(loc: tuple[Any, ...]) -> str:
    """``candidates.1.text`` from pydantic's location (without ``body``, union tags or validator names)."""
    parts = [str(p) for p in loc if p not in ("body", "string", "object") and "[" not in str(p)]
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


async def _refusal(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Refusal)
    return await _api_error(request, refused(exc))


async def _judging_failed(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, JudgingFailed)
    return await _api_error(request, backend_failure(exc))


def refused(exc: Refusal) -> ApiError:
    return ApiError(exc.status, exc.kind, exc.detail, headers=exc.headers(), field=exc.field)


def json_response(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    """A JSON error response for the ASGI layers below the app (auth, body limits, the last-resort 500)."""
    return JSONResponse(body, status, headers=headers)


def install(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(Refusal, _refusal)
    app.add_exception_handler(JudgingFailed, _judging_failed)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in {
        400: "Body is not valid JSON",
        413: "Body too large",
        422: "Invalid request (the detail names the field and the fix)",
        502: "Judge backend failed for too many runs",
        503: "Judge backend overloaded or rate limited (see Retry-After)",
        504: "Judge backend did not answer before the deadline",
    }.items()
}
"""The error responses every judging route documents in OpenAPI."""
