"""``Prefer: respond-async`` (RFC 7240) on the judging routes that jobs run (pure ASGI, inside the body middleware).

Such a POST is handed to the jobs' intake route instead of the judging route (``pcfjudge.api.routes.jobs_routes``):
the path is rewritten and the judging route's path kept in the scope (``ASYNC_SCOPE``), so the request is checked as
its route would check it, stored as a job and answered 202 with ``Preference-Applied: respond-async`` and the job's
``Location``. Authentication, quotas, the door and the body limits have already applied to it, as to any request.
Its request metrics count it under the judging route (``ROUTE_LABEL``), not the intake route.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from pcfjudge.api.middleware.request import ROUTE_LABEL
from pcfjudge.doors.door_list import JOB_ROUTES

ASYNC_PATH = "/_internal/respond-async"
ASYNC_SCOPE = "pcfjudge.respond_async"
"""The scope key holding the judging route a diverted request was sent to."""


class RespondAsyncMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST" and scope.get("path") in JOB_ROUTES:
            prefer = ", ".join(v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"prefer")
            if prefers_async(prefer):
                scope[ASYNC_SCOPE] = scope[ROUTE_LABEL] = scope["path"]
                scope["path"], scope["raw_path"] = ASYNC_PATH, ASYNC_PATH.encode()
        await self.app(scope, receive, send)


def prefers_async(prefer: str | None) -> bool:
    return prefer is not None and any(preference(p) == "respond-async" for p in prefer.split(","))


def preference(text: str) -> str:
    """One preference's name, lower-cased (``wait=5`` → ``wait``)."""
    return text.split(";", 1)[0].split("=", 1)[0].strip().lower()
