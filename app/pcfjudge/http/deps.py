"""FastAPI dependencies: the ``Services`` built in the lifespan."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from pcfjudge.services import Services


async def get_services(request: Request) -> Services:
    """Async, so FastAPI calls it on the event loop (a plain ``def`` dependency costs a thread-pool hop per request)."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
