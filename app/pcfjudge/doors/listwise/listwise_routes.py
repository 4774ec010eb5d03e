"""POST /judge/listwise: the request as a task (``pcfjudge.doors.listwise.listwise_plan``), judged
through ``services.judge``, the response shaped once (``pcfjudge.doors.listwise.listwise_response``) and sent as it is."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.decisions import judged, record_listwise
from pcfjudge.doors.listwise.listwise_plan import build_plan
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest, ListwiseResponse
from pcfjudge.doors.listwise.listwise_response import response_data
from pcfjudge.engine.progress import Watch
from pcfjudge.http.deps import door, services_of, watch_of
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE
from pcfjudge.http.read_body import ReadRoute

router = APIRouter(route_class=ReadRoute)


@router.post("/judge/listwise", response_model=ListwiseResponse, responses=ERROR_RESPONSES | STREAM_RESPONSE)
async def judge_listwise_route(body: ListwiseRequest, request: Request) -> Response:
    """PCFJudge: judge the candidates over K permutations and return the permutation consensus (paper Eq. 1–5).
    ``deadline_ms`` (or ``Prefer: wait=<s>``) answers by then; ``stream`` sends server-sent events."""
    services = services_of(request)
    watch = watch_of(request, answer_deadline(services.settings, body.deadline_ms, request.headers.get("prefer")))
    plan = build_plan(body, services.settings, services.judge)  # checked here, before any answer

    async def judgment(watch: Watch) -> dict[str, Any]:
        result = await judged(at := door(request, "listwise", body.stream), services.judge.run(plan, watch))
        record_listwise(result, services.metrics, at)
        return response_data(result, request.state.request_id, body.include_runs)

    if body.stream:
        from pcfjudge.http.streaming import stream  # server-sent events: loaded by the first stream

        return await stream(judgment, watch, request.state.request_id)
    data = await judgment(watch)
    return Response(orjson.dumps(data), media_type="application/json")  # a ListwiseResponse, serialised once
