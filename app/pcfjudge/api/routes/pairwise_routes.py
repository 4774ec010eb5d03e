"""POST /judge/pairwise: the request as an APOCJudge task (``pcfjudge.doors.pairwise_task``),
judged through ``services.judge``, shaped by ``pcfjudge.doors.pairwise_response``."""

from __future__ import annotations

from fastapi import APIRouter, Request

from pcfjudge.api.deps import ServicesDep
from pcfjudge.api.error_handlers import ERROR_RESPONSES
from pcfjudge.doors.decisions import judged, record_pairwise
from pcfjudge.doors.pairwise_response import to_response
from pcfjudge.doors.pairwise_task import build_task
from pcfjudge.schemas.pairwise_schema import PairwiseRequest, PairwiseResponse

router = APIRouter()


@router.post(
    "/judge/pairwise", response_model=PairwiseResponse, responses=ERROR_RESPONSES, response_model_by_alias=True
)
async def judge_pairwise_route(body: PairwiseRequest, request: Request, services: ServicesDep) -> PairwiseResponse:
    """APOCJudge: judge both orders; on disagreement accept the swapped verdict only if a keyed pass confirms it."""
    task = build_task(body, services.settings, services.judge)
    result = await judged("/judge/pairwise", services.judge.pairwise(task))
    record_pairwise(result, services.metrics)
    return to_response(result, request.state.request_id, body.include_runs)
