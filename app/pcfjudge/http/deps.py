"""FastAPI dependencies: the ``Services`` built in the lifespan; ``door``: how a route's judgments are labelled."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from pcfjudge import context
from pcfjudge.engine.progress import PLAIN, AnswerBy, Watch
from pcfjudge.http.loopback import JOB_SCOPE
from pcfjudge.services import Services
from pcfjudge.telemetry.metrics import Door, DoorName, Mode


def services_of(request: Request) -> Services:
    """The app's ``Services``, read straight from the request: /judge/listwise, the warm path's route, takes it this
    way, since a FastAPI dependency is solved per request (measured in process: about 10 µs of a warm request's 390)."""
    services: Services = request.app.state.services
    return services


async def get_services(request: Request) -> Services:
    """Async, so FastAPI calls it on the event loop (a plain ``def`` dependency costs a thread-pool hop per request)."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


def door(request: Request, name: DoorName, streaming: bool = False) -> Door:
    """The ``Door`` this request's judgments are recorded under: its route template, the door ``name``, and its
    mode: ``job`` for a job's own request (run through the app by ``http.loopback``), ``stream`` when it answers
    with server-sent events, else ``now``."""
    endpoint = getattr(request.scope.get("route"), "path", None)
    mode: Mode = "job" if JOB_SCOPE in request.scope else "stream" if streaming else "now"
    return Door(endpoint if isinstance(endpoint, str) else "unmatched", name, mode)


def watch_of(request: Request, answer_by: AnswerBy | None) -> Watch:
    """How this request's judgment runs (``engine.progress.Watch``): by the caller's deadline, its calls interactive in
    the calling key's turn; a job's own request (``JOB_SCOPE``) may take the job's time, reports each call to the job's
    progress and its calls are background."""
    job, key = request.scope.get(JOB_SCOPE), context.key_name()
    if job is None:
        return PLAIN if answer_by is None and key == context.ANONYMOUS else Watch(answer_by=answer_by, key=key)
    return Watch(answer_by, job.timeout_s, on_outcome=job.on_outcome, priority="background", key=key)
