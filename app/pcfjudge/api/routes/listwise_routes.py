"""POST /judge/listwise: the request as a task (``pcfjudge.doors.listwise_task``), judged through ``services.judge``, the
response shaped once (``pcfjudge.doors.listwise_response``) and sent as it is."""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request
from starlette.responses import Response

from pcfjudge.api.deps import ServicesDep
from pcfjudge.api.errors import ERROR_RESPONSES
from pcfjudge.doors.decisions import judged, record_listwise
from pcfjudge.doors.listwise_response import response_data
from pcfjudge.doors.listwise_task import build_task
from pcfjudge.errors import client_error
from pcfjudge.judging.waves import BudgetError
from pcfjudge.schemas.listwise_schema import ListwiseRequest, ListwiseResponse

router = APIRouter()


@router.post("/judge/listwise", response_model=ListwiseResponse, responses=ERROR_RESPONSES)
async def judge_listwise_route(body: ListwiseRequest, request: Request, services: ServicesDep) -> Response:
    """PCFJudge: judge the candidates over K permutations and return the permutation consensus (paper Eq. 1–5)."""
    try:
        result = await judged("/judge/listwise", services.judge.listwise(build_task(body, services)))
    except BudgetError as exc:
        raise client_error(exc.field, exc.detail) from None
    record_listwise(result)
    data = response_data(result, request.state.request_id, body.include_runs, services)
    services.metrics.cost(result.model, data["usage"]["cost_usd"])
    return Response(orjson.dumps(data), media_type="application/json")  # a ListwiseResponse, serialised once
