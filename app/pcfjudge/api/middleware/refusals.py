"""A layer's refusal (401, 408, 413, 422, 429, 431, 500, 503), written in the error shape of the door the request was
sent to (``doors.door_list.SHAPES``: OpenAI's on the chat door, TEI's and Cohere's on theirs), the service's own
elsewhere."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import Scope

from pcfjudge.doors.door_list import SHAPES
from pcfjudge.http import error_shapes
from pcfjudge.http.error_shapes import Answer


def refusal(
    scope: Scope, status: int, kind: str, detail: str, headers: dict[str, str] | None = None, field: str | None = None
) -> JSONResponse:
    shape = SHAPES.get(scope.get("path", ""), error_shapes.service)
    request_id = scope.get("state", {}).get("request_id")
    code, body = shape(Answer(status, kind, detail, headers, field), request_id)
    return JSONResponse(body, code, headers=headers)
