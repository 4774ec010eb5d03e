"""An error as its door's clients read it. Every error a door answers is first one ``Answer`` (status, kind, detail,
field, headers: ``http.error_handlers.answer_of``, the one table of statuses); a door's ``ErrorShape`` then writes it
in its ecosystem's body:

=========  ==========================================================================  ===========================
shape      body                                                                        read by
=========  ==========================================================================  ===========================
service    ``{"error": kind, "detail", "errors"?: [{"field", "message"}], "request_id"}``   pcfjudge's own clients
openai     ``{"error": {"message", "type", "param", "code"}}``, 400 for a 422            the openai SDK, LiteLLM, …
cohere     the service's body plus Cohere's ``{"id", "message"}``                      the cohere SDK
tei        ``{"error": message, "error_type"}``, with TEI's statuses (424, 429, …)      TEI clients
=========  ==========================================================================  ===========================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Answer:
    """An error as the HTTP answer it becomes, before its door writes it in its own shape."""

    status: int
    kind: str
    detail: str
    headers: dict[str, str] | None = None
    field: str | None = None
    errors: tuple[dict[str, str], ...] = ()  # each field at fault and its message (validation)


ErrorShape = Callable[[Answer, str | None], tuple[int, dict[str, Any]]]
"""An ``Answer`` and the request id → the status and body the door's clients expect."""


def service(answer: Answer, request_id: str | None) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {"error": answer.kind, "detail": answer.detail}
    if answer.errors:
        body["errors"] = list(answer.errors)
    elif answer.field:
        body["errors"] = [{"field": answer.field, "message": answer.detail}]
    if request_id:
        body["request_id"] = request_id
    return answer.status, body


OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}
"""OpenAI's error ``type`` by status (5xx: ``server_error``); ``code`` carries the service's own kind."""


def openai(answer: Answer, request_id: str | None) -> tuple[int, dict[str, Any]]:
    """OpenAI answers an invalid request 400 (never 422), so its SDK raises ``BadRequestError`` with the message."""
    kind = OPENAI_TYPES.get(answer.status, "server_error" if answer.status >= 500 else "invalid_request_error")
    error = {"message": answer.detail, "type": kind, "param": answer.field, "code": answer.kind}
    return 400 if answer.status == 422 else answer.status, {"error": error}


def cohere(answer: Answer, request_id: str | None) -> tuple[int, dict[str, Any]]:
    status, body = service(answer, request_id)
    return status, {"id": request_id, "message": answer.detail, **body}


TEI_STATUS: dict[int, tuple[int, str]] = {
    400: (400, "Empty"),
    413: (413, "Validation"),
    429: (429, "Overloaded"),
    502: (424, "Backend"),
    503: (429, "Overloaded"),
    504: (424, "Backend"),
}
"""The service's status → text-embeddings-inference's status and ``error_type`` (anything else: Validation)."""


def tei(answer: Answer, request_id: str | None) -> tuple[int, dict[str, Any]]:
    status, kind = TEI_STATUS.get(answer.status, (answer.status, "Validation"))
    if answer.kind in ("invalid_json", "http_error"):  # a body TEI cannot read: its serde error, a 422
        return 422, {"error": f"{answer.detail}; send a JSON object (UTF-8)", "error_type": "Validation"}
    return status, {"error": answer.detail, "error_type": kind}
