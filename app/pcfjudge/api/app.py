"""The FastAPI application: ``create_app(settings)`` builds it; its lifespan owns every client."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from pcfjudge import at_rest
from pcfjudge._version import __version__
from pcfjudge.api.jobs.job_runner import JobRunner
from pcfjudge.api.middleware.auth import AuthMiddleware
from pcfjudge.api.middleware.body import BodyMiddleware
from pcfjudge.api.middleware.headers import HeaderLimitMiddleware
from pcfjudge.api.middleware.request import RequestMiddleware
from pcfjudge.api.middleware.respond_async import RespondAsyncMiddleware
from pcfjudge.api.middleware.shutdown import ShutdownMiddleware
from pcfjudge.api.routes import health_routes, jobs_routes, metrics_routes, models_routes, playground_routes
from pcfjudge.doors.door_list import DOORS
from pcfjudge.engine import window_runs
from pcfjudge.http import error_handlers
from pcfjudge.judging.pairwise_prompts import KEYED_VERSION, PAIRWISE_VERSION
from pcfjudge.judging.prompts import LISTWISE_VERSION
from pcfjudge.services import Services
from pcfjudge.settings import Settings
from pcfjudge.telemetry import metrics, tracing

GC_THRESHOLDS = (50_000, 20, 100)
"""The collector's thresholds in a served process (Python's defaults: 700, 10, 10): a young collection per 50,000
new objects instead of 700, a full one after 100 middle ones instead of 10. Under four 1,000-candidate requests the
defaults made full collections of 85–130 ms on the event loop; these made none in the same run (docs/performance.md)."""


def include(app: FastAPI, router: APIRouter) -> None:
    """``router``'s routes on the app's own router, as ``@app.post`` would add them (each route already carries its
    router's tags, responses and route class). FastAPI's ``include_router`` keeps a router as a branch of its own,
    matched twice per request (once to choose it, once inside it): ~4 % of a warm judgment (docs/performance.md).
    Its include-time options (prefix, tags, dependencies) are not needed here."""
    app.router.routes.extend(router.routes)


def serve_app() -> FastAPI:
    """The app ``pcfjudge serve`` runs (uvicorn's factory): ``create_app`` on the environment's settings, its
    start-up objects frozen out of the garbage collector's full passes (``freeze_gc``), numpy's BLAS on one thread
    (``window_runs.limit_blas``)."""
    window_runs.limit_blas()
    return create_app(freeze_gc=True)


def create_app(settings: Settings | None = None, *, freeze_gc: bool = False) -> FastAPI:
    """The app on ``settings`` (the environment's when None). ``freeze_gc``: once started, move every object made
    so far (modules, routes, schemas, clients: hundreds of thousands) into the collector's permanent generation
    (``gc.freeze``), so a full collection scans only what requests made, and collect less often (``GC_THRESHOLDS``):
    the event loop's longest pauses under large requests were the collector's (docs/performance.md). For a process
    that serves one app; tests that make many apps in one process leave it off."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        metrics.clean_dead_workers()
        metrics.build_info(LISTWISE_VERSION, PAIRWISE_VERSION, KEYED_VERSION)
        traced = tracing.setup()  # spans over OTLP when the OTEL_* variables say so; off (and free) otherwise
        services = Services.build(settings)
        app.state.services = services
        app.state.jobs = jobs = JobRunner(services, settings.jobs)  # runs jobs' plans in this process
        resting: asyncio.Task[None] | None = None
        try:
            await services.start()  # calibration records: loaded now, reloaded in the background
            await jobs.start()
            if freeze_gc:
                gc.collect()
                gc.freeze()
                gc.set_threshold(*GC_THRESHOLDS)
            if settings.process.rest_after_s > 0:  # memory that returns after a burst
                resting = asyncio.create_task(at_rest.rest_when_idle(settings.process.rest_after_s))
            yield
        finally:
            if resting is not None:
                resting.cancel()
            await jobs.aclose()  # running jobs go back to the queue, for another replica to resume
            await services.aclose()
            if traced:
                await tracing.ashutdown()  # the spans still queued are exported first

    app = FastAPI(
        title="pcfjudge",
        version=__version__,
        summary="Permutation-consensus LLM judging: PCFJudge (listwise) and APOCJudge (pairwise).",
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc come from playground.install, with packaged assets (no CDN)
        redoc_url=None,
        # FastAPI's own OpenTelemetry spans and metrics would duplicate the service's (telemetry.tracing, whose
        # provider is not the global one): off, so no request asks for the global providers either.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    error_handlers.install(app)
    for door in DOORS:  # the front doors (pcfjudge.doors.door_list), each with its routers
        for router in door.routers:
            include(app, router)
    include(app, health_routes.router)
    include(app, metrics_routes.router)
    include(app, models_routes.router)  # /v1/models: the models, their calibration and drift
    include(app, jobs_routes.router)  # /v1/jobs: judgments that outlive a request (docs/api/jobs.md)
    playground_routes.install(app)
    jobs_routes.install_docs(app)  # the judging routes' 202 with Prefer: respond-async
    # Pure ASGI layers, outermost last: request id/metrics/log/last-resort 500 → head size → auth and quota → body and
    # disconnect watch → Prefer: respond-async → the app.
    app.add_middleware(RespondAsyncMiddleware)  # Prefer: respond-async on a judging route: made a job (202)
    app.add_middleware(
        BodyMiddleware,
        max_bytes=settings.limits.max_body_bytes,
        body_timeout_s=settings.access.body_timeout_s,
        max_depth=settings.limits.max_json_depth,
    )
    app.add_middleware(AuthMiddleware)
    app.add_middleware(ShutdownMiddleware)  # a request cancelled past the shutdown grace: 503 shutting_down
    # a head over PCFJ_MAX_HEADER_BYTES / PCFJ_MAX_HEADER_COUNT: 431 before authentication (on any server)
    app.add_middleware(
        HeaderLimitMiddleware, max_bytes=settings.limits.max_header_bytes, max_count=settings.limits.max_header_count
    )
    app.add_middleware(RequestMiddleware, max_pending=settings.access.max_pending_requests)
    return app
