"""One error shape for every failure: ``{"error": kind, "detail": what and how to fix}``. The one place an
exception becomes an HTTP answer:

ApiError (kind)                         raised by the front doors (pcfjudge.errors, pcfjudge.doors) for client
                                        mistakes; its status from ``STATUS`` (a route may give its own: 5xx verdicts)
Refusal (kind)                          declined: caps and allowlist (422), quota (429), overload (503): ``STATUS``
JudgingFailed                           too few runs succeeded: 502/503/504 (counted through doors.decisions.judged)
BudgetError (field)                     max_calls / max_cost_usd cannot pay for one run: 422 naming the field
RequestValidationError                  → 422 validation_error, or 400 invalid_json for a body that is not JSON
StarletteHTTPException                  → its status (404 not_found, 405 method_not_allowed, …)
api.middleware.body.BodyMiddleware      → 413 body_too_large, 408 body_timeout
api.middleware.auth.AuthMiddleware      → 401 unauthorized, 429 quota_exceeded
anything else                           → 500 internal_error, as JSON, by api.middleware.request.RequestMiddleware
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.errors import ApiError, Refusal, client_error
from pcfjudge.judging.waves import BudgetError
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


STATUS: dict[str, int] = {
    # a client's mistake, found by a door or the guard
    "validation_error": 422,
    "over_limit": 422,  # a per-request cap (calls, input tokens, reward calls)
    "model_not_allowed": 422,
    "unrecognised_prompt": 422,  # the chat door, under PCFJ_CHAT_UNRECOGNISED=refuse
    "empty": 400,
    "too_many_candidates": 413,
    "too_many_documents": 413,
    "too_many_samples": 413,
    "group_too_large": 413,
    "jobs_too_large": 413,
    "not_found": 404,
    # the caller must wait
    "quota_exceeded": 429,
    "too_many_jobs": 429,
    # the service declines for now
    "overloaded": 503,
    "shutting_down": 503,
    "jobs_unavailable": 503,
    "jobs_full": 503,
}
"""Error kind → HTTP status: the one table (``errors``: below this layer an error has a kind, never a status). A
judgment that failed (``JudgingFailed``) keeps the 502/503/504 its backends' failures chose."""


@dataclass(frozen=True, slots=True)
class Answer:
    """An error as the HTTP answer it becomes."""

    status: int
    kind: str
    detail: str
    headers: dict[str, str] | None = None
    field: str | None = None


def as_api_error(exc: Exception) -> Answer | None:
    """The answer for an error raised below the routes (None: not one of ours). Every front door's errors pass
    through here, in the service's shape (the handlers below) or in a wire format's own (TEI's rerank route)."""
    if isinstance(exc, ApiError):
        return Answer(exc.status or STATUS[exc.kind], exc.kind, exc.detail, exc.headers, exc.field)
    if isinstance(exc, Refusal):
        return Answer(STATUS[exc.kind], exc.kind, exc.detail, exc.headers(), exc.field)
    if isinstance(exc, JudgingFailed):  # too few runs succeeded: 502/503/504; a 503 always says when to retry
        if exc.retry_after is not None:
            headers: dict[str, str] | None = {"Retry-After": str(max(1, round(exc.retry_after)))}
        else:
            headers = {"Retry-After": "5"} if exc.status == 503 else None
        return Answer(exc.status, exc.kind, exc.detail, headers)
    if isinstance(exc, BudgetError):
        return as_api_error(client_error(exc.field, exc.detail))
    return None


async def _ours(request: Request, exc: Exception) -> JSONResponse:
    error = as_api_error(exc)
    assert error is not None
    extra = {"errors": [{"field": error.field, "message": error.detail}]} if error.field else {}
    return JSONResponse(error_body(error.kind, error.detail, request, **extra), error.status, headers=error.headers)


def json_response(body: dict[str, Any], status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    """A JSON error response for the ASGI layers below the app (auth, body limits, the last-resort 500)."""
    return JSONResponse(body, status, headers=headers)


def install(app: FastAPI) -> None:
    for kind in (ApiError, Refusal, JudgingFailed, BudgetError):
        app.add_exception_handler(kind, _ours)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


def documented(texts: dict[int, str], model: type[BaseModel] = ErrorResponse) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for error statuses: each answered with ``model``, described by its text."""
    return {code: {"model": model, "description": text} for code, text in texts.items()}


ERROR_RESPONSES = documented(
    {
        400: "Body is not valid JSON",
        413: "Body too large, or more candidates than PCFJ_MAX_ITEMS (a reward group: PCFJ_MAX_GROUP_SIZE)",
        422: "Invalid request (the detail names the field and the fix)",
        502: "Judge backend failed for too many runs",
        503: "Judge backend overloaded or rate limited (see Retry-After)",
        504: "Judge backend did not answer before the deadline",
    }
)
"""The error responses every judging route documents in OpenAPI."""

STREAM_RESPONSE: dict[int | str, dict[str, object]] = {
    200: {
        "description": "The judgment; with stream: true, server-sent events (run or pass events, round and juror "
        "events past one window or with a jury, then result or error): docs/streaming.md",
        "content": {
            "text/event-stream": {
                "schema": {  # one event (the fields of server-sent events); data is the event's JSON
                    "type": "object",
                    "properties": {
                        "event": {"type": "string", "enum": ["run", "pass", "round", "juror", "result", "error"]},
                        "data": {
                            "type": "string",
                            "description": "JSON: the run, round or juror, the response or the error",
                        },
                        "id": {"type": "string"},
                        "retry": {"type": "integer"},
                    },
                    "required": ["data"],
                }
            }
        },
    }
}
"""The event-stream alternative of a judging route's 200 (``"stream": true``)."""
