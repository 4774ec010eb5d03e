"""The one place an exception becomes an HTTP answer: ``answer_of`` gives it its status from the one table
(``STATUS``, kind → status), and the door's ``http.error_shapes`` writes the body its clients read (the service's
``{"error": kind, "detail": what and how to fix}`` by default).

ApiError (kind)                         raised by the front doors (pcfjudge.errors, pcfjudge.doors) for client
                                        mistakes; its status from ``STATUS`` (a route may give its own: 5xx verdicts)
Refusal (its reason's kind)             declined: caps and allowlist (422), quota (429), overload (503): ``STATUS``
JudgingFailed (kind)                    too few runs succeeded: backend_error/overloaded/timeout → 502/503/504
BudgetError (field)                     max_calls / max_cost_usd cannot pay for one run: 422 naming the field
RequestValidationError                  → 422 validation_error, or 400 invalid_json for a body that is not JSON
StarletteHTTPException                  → its status (404 not_found, 405 method_not_allowed, …)
api.middleware.body.BodyMiddleware      → 413 body_too_large, 408 body_timeout (api.middleware.refusals: the door's shape)
api.middleware.auth.AuthMiddleware      → 401 unauthorized, 429 quota_exceeded
anything else                           → 500 internal_error, as JSON, by api.middleware.request.RequestMiddleware
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from pcfjudge.engine.failures import JudgingFailed
from pcfjudge.errors import ApiError, Refusal, client_error
from pcfjudge.http import error_shapes
from pcfjudge.http.error_shapes import Answer, ErrorShape
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


def _validation(exc: RequestValidationError) -> Answer:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        ctx = errors[0].get("ctx", {}).get("error", "")
        detail = f"request body is not valid JSON ({ctx}); send a JSON object with Content-Type: application/json"
        return Answer(400, "invalid_json", detail)
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
    return Answer(422, "validation_error", detail, field=items[0]["field"] if items else None, errors=tuple(items))


def _http(exc: StarletteHTTPException, request: Request | None) -> Answer:
    kinds = {404: "not_found", 405: "method_not_allowed"}
    kind = kinds.get(exc.status_code, "http_error")
    detail = str(exc.detail)
    if request is not None and exc.status_code == 404:
        detail = f"no route {request.url.path}; see /docs or openapi/openapi.json for the endpoints"
    elif request is not None and exc.status_code == 405:
        detail = f"{request.method} is not allowed on {request.url.path}"
    return Answer(exc.status_code, kind, detail, getattr(exc, "headers", None))


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
    # a judgment that failed (engine.failures.JudgingFailed: too few runs succeeded), by what its calls were
    "backend_error": 502,
    "backend_overloaded": 503,
    "backend_timeout": 504,
}
"""Error kind → HTTP status: the one table (``errors``: below this layer an error has a kind, never a status)."""


def answer_of(exc: Exception, request: Request | None = None) -> Answer | None:
    """The answer for an error a door raised (None: not one the service answers). Every door's errors pass through
    here, then through the door's own ``ErrorShape`` (``http.error_shapes``)."""
    if isinstance(exc, ApiError):
        return Answer(exc.status or STATUS[exc.kind], exc.kind, exc.detail, exc.headers, exc.field)
    if isinstance(exc, Refusal):
        return Answer(STATUS[exc.kind], exc.kind, exc.detail, exc.headers(), exc.field)
    if isinstance(exc, JudgingFailed):  # too few runs succeeded: 502/503/504; a 503 always says when to retry
        status = STATUS[exc.kind]
        if exc.retry_after is not None:
            headers: dict[str, str] | None = {"Retry-After": str(max(1, round(exc.retry_after)))}
        else:
            headers = {"Retry-After": "5"} if status == 503 else None
        return Answer(status, exc.kind, exc.detail, headers)
    if isinstance(exc, BudgetError):
        return answer_of(client_error(exc.field, exc.detail))
    if isinstance(exc, RequestValidationError):
        return _validation(exc)
    if isinstance(exc, StarletteHTTPException):
        return _http(exc, request)
    return None


def shaped(exc: Exception, request: Request, shape: ErrorShape = error_shapes.service) -> JSONResponse | None:
    """``exc`` answered in ``shape`` (None: not an error the service answers)."""
    answer = answer_of(exc, request)
    if answer is None:
        return None
    status, body = shape(answer, getattr(request.state, "request_id", None))
    return JSONResponse(body, status, headers=answer.headers)


async def _ours(request: Request, exc: Exception) -> JSONResponse:
    response = shaped(exc, request)
    assert response is not None
    return response


def install(app: FastAPI) -> None:
    for kind in (ApiError, Refusal, JudgingFailed, BudgetError, RequestValidationError, StarletteHTTPException):
        app.add_exception_handler(kind, _ours)


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
