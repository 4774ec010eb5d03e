"""Request heads within bounds, on any server (pure ASGI, before authentication): a request whose line and headers
exceed ``PCFJ_MAX_HEADER_BYTES`` (64 KiB) or ``PCFJ_MAX_HEADER_COUNT`` (256 headers) is answered 431 with a JSON
body, and nothing else of the app runs for it.

``pcfjudge serve`` already refuses such a head as it arrives (``api.header_timeout``), before it is all read; this
layer holds the same limits when the app runs under another server (uvicorn's own protocols, hypercorn, a test
client), at the cost of one pass over the headers the server parsed.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from pcfjudge.api.middleware.refusals import refusal


def head_too_large(max_bytes: int, max_count: int, request_id: str | None = None) -> bytes:
    """The JSON body of a 431: which limits, and how to fix it (and the request's id, when the server gave one)."""
    detail = (
        f"the request line and headers exceed {max_bytes} bytes or {max_count} headers (PCFJ_MAX_HEADER_BYTES, "
        "PCFJ_MAX_HEADER_COUNT); send fewer or shorter headers"
    )
    return json.dumps({"error": "headers_too_large", "detail": detail, "request_id": request_id}).encode()


def head_size(scope: Scope) -> int:
    """The request line's target and the headers, in bytes as sent (``name: value\\r\\n`` each)."""
    target = len(scope.get("raw_path") or scope.get("path", "").encode()) + len(scope.get("query_string", b""))
    return target + sum(len(name) + len(value) + 4 for name, value in scope.get("headers", ()))


class HeaderLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int, max_count: int) -> None:
        self.app, self.max_bytes, self.max_count = app, max_bytes, max_count

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (
            len(scope.get("headers", ())) > self.max_count or head_size(scope) > self.max_bytes
        ):
            body = json.loads(head_too_large(self.max_bytes, self.max_count))
            await refusal(scope, 431, body["error"], body["detail"], {"Connection": "close"})(scope, receive, send)
            return
        await self.app(scope, receive, send)
