"""A front door, declared once: ``DoorSpec``. Each door's routes module ends with its declaration (its routers, its
metric label, its error shape and the routes that run as jobs), and ``pcfjudge.doors.door_list.DOORS`` lists them.
The app mounts the doors from that list; job intake, the job runner, the request metrics, the middleware's error
bodies and the docs' route tables read it, so a capability given to the list reaches every door.

A route that runs as a job is a ``JobRoute``: its request model, how a request becomes its checked plan (``plan``),
and how the plan's result becomes the route's JSON answer (``answer``). The route itself and the job runner call the
same two functions with a ``Call`` (who asked, under which id, counted how), so a judgment answered now, streamed or
run as a job is planned, refused, run and shaped the same way, and a job never re-enters the app over HTTP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from fastapi import APIRouter
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from pcfjudge import context
from pcfjudge.engine.progress import PLAIN, AnswerBy, Watch
from pcfjudge.http import error_shapes
from pcfjudge.http.error_handlers import shaped
from pcfjudge.http.error_shapes import ErrorShape
from pcfjudge.http.read_body import ReadRoute
from pcfjudge.services import Services
from pcfjudge.telemetry.metrics import Door, DoorName, Mode

B = TypeVar("B", bound=BaseModel)
P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class Call:
    """One judgment's caller: the services, the id its answer carries, and its metric label (route, door, mode)."""

    services: Services
    request_id: str
    at: Door


@dataclass(frozen=True, slots=True)
class Answered:
    """A door's JSON answer and the headers it adds (a job keeps the body)."""

    body: dict[str, Any]
    headers: dict[str, str] | None = None


class Answering(Protocol):
    """What a door's request says about how it is answered."""

    @property
    def stream(self) -> bool: ...
    @property
    def deadline_ms(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class JobRoute(Generic[B, P]):
    """A route that also runs as a job (``POST /v1/jobs``, ``Prefer: respond-async``)."""

    path: str
    request: type[B]
    answering: Callable[[B], Answering]  # the request's stream flag and deadline
    stream_field: str  # the field a job's refusal of ``stream`` names
    plan: Callable[[Services, B], P]  # the request's checked plan (raises its refusal)
    answer: Callable[[Call, B, P, Watch], Awaitable[Answered]]  # the plan run, its result in the door's answer


class DoorRouter(APIRouter):
    """A door's router: its routes read the body once (``ReadRoute``) and answer every error in ``shape``."""

    def __init__(self, shape: ErrorShape = error_shapes.service) -> None:
        super().__init__(route_class=_shaped_route(shape))
        self.shape = shape


@dataclass(frozen=True, slots=True)
class DoorSpec:
    """One front door: its metric label (``name``), its routers (each with its error shape), its routes that run as
    jobs, its page in the docs (relative to docs/) and a working example body for each of its routes."""

    name: DoorName
    routers: tuple[DoorRouter, ...]
    jobs: tuple[JobRoute[Any, Any], ...] = ()
    page: str = ""
    examples: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """A working request body for each of its POST routes, by path (the OpenAPI document's examples)."""

    def routes(self) -> list[APIRoute]:
        """Its documented routes, in declaration order."""
        return [r for router in self.routers for r in router.routes if isinstance(r, APIRoute) and r.include_in_schema]

    def shapes(self) -> dict[str, ErrorShape]:
        """Each of its route paths → the error shape its clients read."""
        return {r.path: router.shape for router in self.routers for r in router.routes if isinstance(r, APIRoute)}


def _shaped_route(shape: ErrorShape) -> type[APIRoute]:

    class ShapedRoute(ReadRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def shaped_handler(request: Request) -> Response:
                try:
                    return await handler(request)
                except Exception as exc:
                    answer = shaped(exc, request, shape)
                    if answer is None:
                        raise
                    return answer

            return shaped_handler

    return ShapedRoute


def http_call(request: Request, name: DoorName, streaming: bool = False) -> Call:
    """The ``Call`` of a route's request: labelled by its route template, ``stream`` or ``now``."""
    endpoint = getattr(request.scope.get("route"), "path", None)
    mode: Mode = "stream" if streaming else "now"
    at = Door(endpoint if isinstance(endpoint, str) else "unmatched", name, mode)
    services: Services = request.app.state.services
    return Call(services, request.state.request_id, at)


def watch_for(answer_by: AnswerBy | None) -> Watch:
    """How a route's judgment runs: by the caller's deadline, its calls interactive in the calling key's turn."""
    key = context.key_name()
    return PLAIN if answer_by is None and key == context.ANONYMOUS else Watch(answer_by=answer_by, key=key)
