"""POST /v1/reward: rewards for RL, each group of completions judged together as one PCFJudge task
(``pcfjudge.doors.reward_plan``). When every sample failed the request answers with the failure's status (503 with
Retry-After when overloaded) so clients' retry loops retry; otherwise a failed sample has ``reward: null`` and an
``error``."""

from __future__ import annotations

from fastapi import APIRouter, Request

from pcfjudge.api.deps import ServicesDep
from pcfjudge.api.error_handlers import ERROR_RESPONSES
from pcfjudge.doors.reward_plan import Item, check_samples, failure_error, judge_plan, plan
from pcfjudge.schemas.reward_schema import RewardRequest, RewardResponse

router = APIRouter()


@router.post("/v1/reward", response_model=RewardResponse, responses=ERROR_RESPONSES)
async def reward_route(body: RewardRequest, request: Request, services: ServicesDep) -> RewardResponse:
    """Rewards (0-1) for completions; samples of a group (default: same prompt) are judged together, K calls a group."""
    settings = services.settings
    check_samples(settings, len(body.samples), "samples")
    items = [Item(s.prompt, s.response, s.reference, s.group) for s in body.samples]
    judged = await judge_plan(settings, services.rewards, plan(settings, services.judge, body, items, "samples"))
    if len(judged.failures) == len(judged.samples):
        raise failure_error(judged.failures)
    return RewardResponse(
        request_id=request.state.request_id,
        model=judged.model,
        reward=body.reward,
        rewards=[s.reward for s in judged.samples],
        samples=judged.samples,
        usage=judged.usage,
    )
