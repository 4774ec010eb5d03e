"""POST /judge/pairwise: the request as an APOCJudge task (``pcfjudge.doors.pairwise.pairwise_plan``),
judged through ``services.judge``, shaped by ``pcfjudge.doors.pairwise.pairwise_response``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.decisions import judged, record_pairwise
from pcfjudge.doors.pairwise.pairwise_plan import build_plan
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest, PairwiseResponse
from pcfjudge.doors.pairwise.pairwise_response import to_response
from pcfjudge.engine.progress import Watch
from pcfjudge.http.deps import ServicesDep, door, watch_of
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE
from pcfjudge.http.read_body import ReadRoute

router = APIRouter(route_class=ReadRoute)


@router.post(
    "/judge/pairwise",
    response_model=PairwiseResponse,
    responses=ERROR_RESPONSES | STREAM_RESPONSE,
    response_model_by_alias=True,
)
async def judge_pairwise_route(body: PairwiseRequest, request: Request, services: ServicesDep) -> Any:
    """APOCJudge: judge both orders; on disagreement accept the swapped verdict only if a keyed pass confirms it.
    ``deadline_ms`` (or ``Prefer: wait=<s>``) answers by then; ``stream`` sends server-sent events."""
    watch = watch_of(request, answer_deadline(services.settings, body.deadline_ms, request.headers.get("prefer")))
    plan = build_plan(body, services.settings, services.judge)  # checked here, before any answer

    async def judgment(watch: Watch) -> PairwiseResponse:
        result = await judged(at := door(request, "pairwise", body.stream), services.judge.run(plan, watch))
        record_pairwise(result, services.metrics, at)
        return to_response(result, request.state.request_id, body.include_runs)

    if body.stream:

        async def data(watch: Watch) -> dict[str, Any]:
            return (await judgment(watch)).model_dump(mode="json", by_alias=True)

        from pcfjudge.http.streaming import stream  # server-sent events: loaded by the first stream

        return await stream(data, watch, request.state.request_id)
    return await judgment(watch)
