"""A request cut short by a stopping server gets a retriable JSON answer, not uvicorn's bare 500.

On SIGTERM ``pcfjudge serve`` stops accepting and gives the requests in flight ``PCFJ_SHUTDOWN_GRACE_S`` to finish;
then uvicorn cancels the tasks still running. The cancellation unwinds the request's work (its backend calls
included) and arrives here: if no response has started, the client gets 503 ``shutting_down`` with
``Retry-After`` and ``Connection: close``, which a client retries (behind a load balancer, on another replica).
Sits inside ``RequestMiddleware``, so the request id, the access log and the metrics see the 503.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pcfjudge.api.middleware.refusals import refusal


class ShutdownMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if started or task is None:
                raise
            task.uncancel()  # the work is unwound; what remains is answering
            detail = "this replica is shutting down and stopped the request; retry it (another replica will answer)"
            headers = {"Retry-After": "1", "Connection": "close"}
            await refusal(scope, 503, "shutting_down", detail, headers)(scope, receive, send)
