"""What a door's judging route does, once for every door: the request's ``Call`` and deadline, its checked plan, then
the plan run by the door's own ``answer`` — as server-sent events (``stream``) or one JSON body. A job runs the same
plan with the same ``answer`` (``api.jobs.job_runner``)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Request
from starlette.responses import Response

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.engine.progress import Watch
from pcfjudge.http.door_spec import JobRoute, http_call, watch_for
from pcfjudge.http.read_body import body_size, sized
from pcfjudge.http.streaming import stream
from pcfjudge.telemetry.metrics import DoorName


async def respond(request: Request, body: Any, route: JobRoute[Any, Any], name: DoorName) -> Response:
    """``body`` judged as ``route`` says, for the door ``name``: its answer now, or streamed."""
    options = route.answering(body)
    call = http_call(request, name, options.stream)
    services = call.services
    watch = watch_for(answer_deadline(services.settings.fanout, options.deadline_ms, request.headers.get("prefer")))
    plan = await sized(body_size(request), route.plan, services, body)  # checked here, before any answer
    if options.stream:

        async def data(watch: Watch) -> dict[str, Any]:
            return (await route.answer(call, body, plan, watch)).body

        return await stream(data, watch, call.request_id)
    answered = await route.answer(call, body, plan, watch)
    return Response(orjson.dumps(answered.body), headers=answered.headers, media_type="application/json")
