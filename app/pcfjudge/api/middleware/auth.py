"""Who is calling, and whether they may now (pure ASGI, before any body is read).

With ``PCFJ_API_KEYS`` / ``PCFJ_API_KEYS_FILE`` set, every route except the open ones needs
``Authorization: Bearer <key>`` (or ``x-api-key``); otherwise 401 with ``WWW-Authenticate``. ``/metrics`` and
``/readyz`` need a key only with ``PCFJ_PROTECT_OPS=true``. The key's *name* becomes the request's identity for
logs, metrics and quotas. With ``PCFJ_QUOTA_REQUESTS_PER_MIN`` each key (each client address without keys) gets that
many requests per minute; past it, 429 with Retry-After. The client address is the peer's, or with
``PCFJ_TRUSTED_PROXIES`` what a trusted proxy says in ``X-Forwarded-For`` (``pcfjudge serve`` passes the setting to
uvicorn, which otherwise trusts 127.0.0.1).

Then the door (``security.door``): POST requests in flight per process and per key; past either, 503 with
Retry-After before the body is read.
A job runs in process as its owner (``api.jobs.job_runner``), never through this layer again.
"""

from __future__ import annotations

import math

from starlette.types import ASGIApp, Receive, Scope, Send

from pcfjudge import context
from pcfjudge.api.middleware.refusals import refusal
from pcfjudge.security.api_keys import presented_key
from pcfjudge.security.door import Door
from pcfjudge.services import Services

OPEN_PATHS = frozenset({"/healthz", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/favicon.ico"})
OPEN_PREFIXES = ("/static/",)
OPS_PATHS = frozenset({"/metrics", "/readyz"})


def is_open(path: str, protect_ops: bool) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES) or (path in OPS_PATHS and not protect_ops)


class AuthMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.door: Door | None = None  # built from the settings on the first request (they come with the app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        services: Services = scope["app"].state.services
        settings = services.settings
        if is_open(scope.get("path", ""), settings.access.protect_ops):
            await self.app(scope, receive, send)
            return
        ctx = context.current()
        if not await self._identify(scope, send, services, ctx):
            return
        per_min = settings.access.quota_requests_per_min
        if per_min is not None:
            client = scope.get("client") or ("unknown", 0)
            who = ctx.key if ctx is not None and services.keys.enabled else f"addr:{client[0]}"
            decision = await services.limiter.take(f"requests:{who}", 1, per_min)
            if not decision.allowed:
                wait = decision.retry_after
                detail = f"request quota ({per_min:g} per minute) used up; retry after {wait:.1f}s"
                headers = {"Retry-After": str(max(1, math.ceil(wait)))}
                await refusal(scope, 429, "quota_exceeded", detail, headers)(scope, receive, send)
                return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if self.door is None:
            self.door = Door(settings.access.max_pending_requests, settings.access.pending_per_key())
        tenant = ctx.key if ctx is not None and services.keys.enabled else None
        refused = self.door.enter(tenant)
        if refused is not None:
            headers = {"Retry-After": "1", "Connection": "close"}
            await refusal(scope, 503, "overloaded", refused, headers)(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.door.leave(tenant)

    @classmethod
    async def _identify(cls, scope: Scope, send: Send, services: Services, ctx: context.RequestContext | None) -> bool:
        """Name the caller in the request's context: the key presented (False: refused, 401 sent)."""
        if services.keys.enabled:
            presented = presented_key(scope.get("headers", ()))
            name = services.keys.identify(presented)
            if name is None:
                await cls._unauthorized(scope, send, presented is not None)
                return False
        else:
            return True
        if ctx is not None and name is not None:
            ctx.key = name
        return True

    @staticmethod
    async def _unauthorized(scope: Scope, send: Send, presented: bool) -> None:
        if presented:
            detail = "the API key is not valid; check it, or ask the operator for one"
            challenge = 'Bearer realm="pcfjudge", error="invalid_token"'
        else:
            detail = "this server needs an API key: send 'Authorization: Bearer <key>' (or 'x-api-key: <key>')"
            challenge = 'Bearer realm="pcfjudge"'
        await refusal(scope, 401, "unauthorized", detail, {"WWW-Authenticate": challenge})(scope, _nothing, send)


async def _nothing() -> dict[str, str]:
    return {"type": "http.disconnect"}
