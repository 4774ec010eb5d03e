"""POST /judge/pairwise: the request as an APOCJudge plan (``pcfjudge.doors.pairwise.pairwise_plan``), judged
through ``services.judge``, shaped by ``pcfjudge.doors.pairwise.pairwise_response``."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.responses import Response

from pcfjudge.doors.decisions import judged, record_pairwise
from pcfjudge.doors.door_routes import respond
from pcfjudge.doors.pairwise.pairwise_plan import build_plan
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest, PairwiseResponse
from pcfjudge.doors.pairwise.pairwise_response import to_response
from pcfjudge.engine.pairwise_passes import PairwiseTask
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.progress import Watch
from pcfjudge.http.door_spec import Answered, Call, DoorRouter, DoorSpec, JobRoute
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE
from pcfjudge.services import Services

router = DoorRouter()


@router.post(
    "/judge/pairwise",
    response_model=PairwiseResponse,
    responses=ERROR_RESPONSES | STREAM_RESPONSE,
    response_model_by_alias=True,
)
async def judge_pairwise_route(body: PairwiseRequest, request: Request) -> Response:
    """APOCJudge: judge both orders; on disagreement accept the swapped verdict only if a keyed pass confirms it.
    ``deadline_ms`` (or ``Prefer: wait=<s>``) answers by then; ``stream`` sends server-sent events."""
    return await respond(request, body, JUDGE, "pairwise")


def plan_of(services: Services, body: PairwiseRequest) -> Plan[PairwiseTask]:
    return build_plan(body, services.settings, services.judge)


async def answer(call: Call, body: PairwiseRequest, plan: Plan[PairwiseTask], watch: Watch) -> Answered:
    """The judgment, recorded for its door, as the response's JSON."""
    result = await judged(call.at, call.services.judge.run(plan, watch))
    record_pairwise(result, call.services.metrics, call.at)
    response = to_response(result, call.request_id, body.include_runs)
    return Answered(response.model_dump(mode="json", by_alias=True))


JUDGE = JobRoute("/judge/pairwise", PairwiseRequest, lambda b: b, "stream", plan_of, answer)
EXAMPLES: dict[str, dict[str, Any]] = {  # a working body per route, for /docs "Try it out" (api.examples)
    "/judge/pairwise": {
        "question": "What is the chemical symbol for gold?",
        "response_a": "Ag.",
        "response_b": "Au, from the Latin aurum.",
        "model": ["sim:default", "sim:oracle"],
        "deadline_ms": 10000,
    },
}

DOOR = DoorSpec("pairwise", (router,), (JUDGE,), "api/pairwise.md", examples=EXAMPLES)
