"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from pcfjudge._version import __version__
from pcfjudge.http.deps import ServicesDep
from pcfjudge.http.error_handlers import documented, error_body
from pcfjudge.judging.pairwise_prompts import KEYED_VERSION, PAIRWISE_VERSION
from pcfjudge.judging.prompts import LISTWISE_VERSION

router = APIRouter()
NOT_READY = documented(
    {
        503: "Not ready yet (error not_ready, with Retry-After): a replica configured with Redis answers 503 until "
        "Redis first answered and its connection pool is open"
    }
)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz", response_model=dict[str, Any], responses=NOT_READY)
async def readyz(request: Request, services: ServicesDep) -> dict[str, Any] | JSONResponse:
    """Which backends are configured (never their keys), the default model and the cache in use; 503 until the
    shared cache (Redis, when configured) first answered."""
    cache = await services.cache.status()  # pings Redis: an answer here makes the replica ready at once
    unready = services.unready()
    if unready is not None:
        body = error_body("not_ready", unready, request, status="starting", cache=cache)
        return JSONResponse(body, 503, headers={"Retry-After": "1"})
    return {
        "status": "ready",
        "version": __version__,
        "default_model": services.settings.resolved_default_model(),
        "backends": services.registry.describe(),
        "endpoints": services.registry.endpoints(),
        "structured_output": services.registry.dialects(),
        "fleets": services.registry.fleet_status(),  # judge fleets' endpoints; "unhealthy" names those cooling down
        "prompt_versions": [LISTWISE_VERSION, PAIRWISE_VERSION, KEYED_VERSION],
        "prompts": services.settings.prompting.prompts,
        "cache": cache,
    }
