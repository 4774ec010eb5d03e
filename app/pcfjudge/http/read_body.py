"""A request body read and parsed once, and the door routes' lean handler.

``api.middleware.body`` reads every body and checks a JSON one strictly with one parse; it leaves the bytes and the
parsed value in the scope (``READ``). Every door's router uses ``ReadRoute``:

* its ``Request`` (``ReadRequest``) answers ``body()`` and ``json()`` from ``READ``, so FastAPI neither reads nor
  parses the body again;
* a route of the doors' own shape — an ``async def`` taking one JSON body model and the ``Request``, nothing else
  (no dependency, header or query parameter), returning a ``Response`` it built itself — is called by a lean handler:
  the parsed body is validated by FastAPI's own ``request_body_to_args`` (the same model, the same errors, the same
  422 through the service's error table) and the endpoint awaited; FastAPI's general handler (its content-type
  parsing, dependency solving and response serialisation, none of which such a route needs) is skipped. Measured in
  process on a warm /judge/listwise request: ~12 % of its time. Any other route, and a body the middleware did not
  parse as JSON (another content type, none, not JSON at all), goes through FastAPI's handler unchanged;
* a body of ``THREAD_FROM_BYTES`` or more is validated in a worker thread;
* the lean handler keeps the values it validated for the last ``KEPT`` bodies (by their bytes, up to ``KEPT_BYTES``):
  a body repeated byte for byte is validated once (~6 % of a warm request). Request models are frozen, so the
  requests that share one cannot change it for the others.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from fastapi import params
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from pcfjudge import at_rest
from pcfjudge.kept import Kept

READ = "pcfjudge.body"
"""The scope key of a body already read: ``(bytes, parsed JSON)``; the JSON is ``NOT_PARSED`` unless the content type
is JSON and the body strict JSON (anything else is FastAPI's to read and refuse)."""
NOT_PARSED: Any = object()
KEPT = 256
"""Bodies whose validated values each lean route keeps: a request repeated byte for byte (a warm hit, a retry) is
validated once. The values are request models, which are frozen (``schemas.common.Strict``), so requests can share
them."""
KEPT_BYTES = 8192
"""The longest body kept: at most ``KEPT`` × ``KEPT_BYTES`` (2 MiB) of bodies per lean route, and about as much of
their models (the texts they hold)."""

THREAD_FROM_BYTES = 256 * 1024
"""A body from this size is validated, and a door's plan of it built (``sized``), in a worker thread: 10,000
documents (1.9 MB) took 40 ms to validate and 25 ms to plan, which the event loop would otherwise wait for (a thread
gives it a turn every 5 ms; docs/performance.md#cohere-sizes)."""

Lean = Callable[[Request, bytes, Any], Awaitable[Response]]
T = TypeVar("T")


def body_size(request: Request) -> int:
    """The request's body's bytes, as the body middleware read them (0 when it did not)."""
    read = request.scope.get(READ)
    return len(read[0]) if read is not None else 0


async def sized(size: int, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` for a body of ``size`` bytes: in a worker thread from ``THREAD_FROM_BYTES``, else here (a
    door's plan, a job's request read again and planned)."""
    return await asyncio.to_thread(work, *args) if size >= THREAD_FROM_BYTES else work(*args)


class ReadRequest(Request):
    """A ``Request`` whose body and JSON are the ones the body middleware read, when it read them."""

    async def body(self) -> bytes:
        read = self.scope.get(READ)
        return read[0] if read is not None else await super().body()

    async def json(self) -> Any:
        read = self.scope.get(READ)
        if read is None or read[1] is NOT_PARSED:
            return await super().json()
        return read[1]


class ReadRoute(APIRoute):
    """The route class of every door's router (module docstring)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        lean = lean_handler(self)

        async def read_handler(request: Request) -> Response:
            request = ReadRequest(request.scope, request.receive)
            if lean is not None:
                read = request.scope.get(READ)
                if read is not None and read[1] is not NOT_PARSED:
                    return await lean(request, read[0], read[1])
            return await handler(request)

        return read_handler


def lean_handler(route: APIRoute) -> Lean | None:
    """The lean handler of a route of the doors' shape (module docstring); None for any other route."""
    d = route.dependant
    others = (d.path_params, d.query_params, d.header_params, d.cookie_params, d.dependencies)
    names = (d.websocket_param_name, d.http_connection_param_name, d.response_param_name)
    call, request_name = d.call, d.request_param_name
    if call is None or request_name is None or len(d.body_params) != 1 or any(others) or any(names):
        return None
    if d.background_tasks_param_name or d.security_scopes_param_name or not inspect.iscoroutinefunction(call):
        return None
    try:
        returns = inspect.signature(call, eval_str=True).return_annotation
    except (NameError, TypeError):  # an annotation only a type checker can read
        return None
    if not (inspect.isclass(returns) and issubclass(returns, Response)):
        return None
    body = d.body_params[0].field_info
    if getattr(body, "embed", False) or isinstance(body, params.Form):  # FastAPI embeds it, or reads a form
        return None
    fields = d.body_params
    endpoint: Callable[..., Awaitable[Response]] = call
    kept: Kept[bytes, dict[str, Any]] = at_rest.forget(Kept(KEPT))

    async def lean(request: Request, raw: bytes, parsed: Any) -> Response:
        """``raw``, the body as it came, and ``parsed``, its JSON value."""
        values = kept.get(raw) if len(raw) <= KEPT_BYTES else None
        if values is None:
            if len(raw) >= THREAD_FROM_BYTES:
                checked, errors = await asyncio.to_thread(_validated, fields, parsed)
            else:
                checked, errors = await request_body_to_args(fields, parsed, embed_body_fields=False)
            if errors:
                raise RequestValidationError(errors, body=parsed)
            if len(raw) <= KEPT_BYTES:
                kept.put(raw, checked)
            values = checked
        return await endpoint(**values, **{request_name: request})

    return lean


def _validated(fields: list[Any], parsed: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """FastAPI's validation of a parsed JSON body, in a worker thread (on a loop of its own: it awaits nothing for
    JSON, so it runs straight through)."""
    return asyncio.run(request_body_to_args(fields, parsed, embed_body_fields=False))
