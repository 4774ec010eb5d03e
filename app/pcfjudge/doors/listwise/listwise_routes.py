"""POST /judge/listwise: the request as a plan (``pcfjudge.doors.listwise.listwise_plan``), judged through
``services.judge``, the response shaped once (``pcfjudge.doors.listwise.listwise_response``) and sent as it is."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.responses import Response

from pcfjudge.doors.decisions import judged, record_listwise
from pcfjudge.doors.door_routes import respond
from pcfjudge.doors.listwise.listwise_plan import build_plan
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest, ListwiseResponse
from pcfjudge.doors.listwise.listwise_response import response_data
from pcfjudge.engine.listwise_runs import ListwiseTask
from pcfjudge.engine.plan import Plan
from pcfjudge.engine.progress import Watch
from pcfjudge.engine.window_runs import off_loop
from pcfjudge.http.door_spec import Answered, Call, DoorRouter, DoorSpec, JobRoute
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE
from pcfjudge.services import Services

router = DoorRouter()


@router.post("/judge/listwise", response_model=ListwiseResponse, responses=ERROR_RESPONSES | STREAM_RESPONSE)
async def judge_listwise_route(body: ListwiseRequest, request: Request) -> Response:
    """PCFJudge: judge the candidates over K permutations and return the permutation consensus (paper Eq. 1–5).
    ``deadline_ms`` (or ``Prefer: wait=<s>``) answers by then; ``stream`` sends server-sent events."""
    return await respond(request, body, JUDGE, "listwise")


def plan_of(services: Services, body: ListwiseRequest) -> Plan[ListwiseTask]:
    return build_plan(body, services.settings, services.judge)


async def answer(call: Call, body: ListwiseRequest, plan: Plan[ListwiseTask], watch: Watch) -> Answered:
    """The judgment, recorded for its door, as the response's JSON (a ``ListwiseResponse``, serialised once)."""
    result = await judged(call.at, call.services.judge.run(plan, watch))
    record_listwise(result, call.services.metrics, call.at)
    shaped = await off_loop(len(plan.task.ids), lambda: response_data(result, call.request_id, body.include_runs))
    return Answered(shaped)


JUDGE = JobRoute("/judge/listwise", ListwiseRequest, lambda b: b, "stream", plan_of, answer)
EXAMPLES: dict[str, dict[str, Any]] = {  # a working body per route, for /docs "Try it out" (api.examples)
    "/judge/listwise": {
        "question": "In which year did the Berlin Wall fall?",
        "candidates": [
            {"id": "a", "text": "1989."},
            {"id": "b", "text": "It fell in 1991, on 3 October."},
            {"id": "c", "text": "I am not sure; possibly the late 1980s."},
        ],
        "k": 3,
        "deadline_ms": 10000,
    },
}

DOOR = DoorSpec("listwise", (router,), (JUDGE,), "api/listwise.md", examples=EXAMPLES)
