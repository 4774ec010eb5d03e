"""The FastAPI application: ``create_app(settings)`` builds it; its lifespan owns every client."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response

from pcfjudge import __version__, metrics
from pcfjudge.api import errors, health, listwise, observability, pairwise
from pcfjudge.judging.pairwise_prompts import KEYED_VERSION, PAIRWISE_VERSION
from pcfjudge.judging.prompts import LISTWISE_VERSION
from pcfjudge.services import Services
from pcfjudge.settings import Settings


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        metrics.clean_dead_workers()
        metrics.build_info(LISTWISE_VERSION, PAIRWISE_VERSION, KEYED_VERSION)
        services = Services.build(settings)
        app.state.services = services
        try:
            yield
        finally:
            await services.aclose()

    app = FastAPI(
        title="pcfjudge",
        version=__version__,
        summary="Permutation-consensus LLM judging: PCFJudge (listwise) and APOCJudge (pairwise).",
        lifespan=lifespan,
    )
    errors.install(app)
    app.include_router(listwise.router)
    app.include_router(pairwise.router)
    app.include_router(health.router)
    app.include_router(observability.router)
    app.middleware("http")(observability.metrics_middleware)

    @app.middleware("http")
    async def request_id(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        rid = request.headers.get("x-request-id") or uuid.uuid4().hex
        request.state.request_id = rid[:64]
        response = await call_next(request)
        response.headers["X-Request-ID"] = request.state.request_id
        return response

    app.add_middleware(errors.BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    return app
