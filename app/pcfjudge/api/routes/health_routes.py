"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from pcfjudge._version import __version__
from pcfjudge.http.deps import ServicesDep
from pcfjudge.judging.pairwise_prompts import KEYED_VERSION, PAIRWISE_VERSION
from pcfjudge.judging.prompts import LISTWISE_VERSION

router = APIRouter()


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(services: ServicesDep) -> dict[str, Any]:
    """Which backends are configured (never their keys), the default model and the cache in use."""
    return {
        "status": "ready",
        "version": __version__,
        "default_model": services.settings.resolved_default_model(),
        "backends": services.registry.describe(),
        "endpoints": services.registry.endpoints(),
        "structured_output": services.registry.dialects(),
        "fleets": services.registry.fleet_status(),  # judge fleets' endpoints; "unhealthy" names those cooling down
        "prompt_versions": [LISTWISE_VERSION, PAIRWISE_VERSION, KEYED_VERSION],
        "prompts": services.settings.prompts,
        "cache": await services.cache.status(),
    }
