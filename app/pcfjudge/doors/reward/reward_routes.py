"""POST /v1/reward: rewards for RL, each group of completions judged together as one PCFJudge task
(``pcfjudge.doors.reward.reward_plan``). When every sample failed the request answers with the failure's status (503 with
Retry-After when overloaded) so clients' retry loops retry; otherwise a failed sample has ``reward: null`` and an
``error``."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.responses import Response

from pcfjudge.doors.decisions import listwise_recorder
from pcfjudge.doors.door_routes import respond
from pcfjudge.doors.reward.reward_adapter_routes import failure_error
from pcfjudge.doors.reward.reward_adapter_routes import router as adapters
from pcfjudge.doors.reward.reward_plan import Groups, judge_plan, plan_request
from pcfjudge.doors.reward.reward_protocol import RewardRequest, RewardResponse
from pcfjudge.engine.progress import Watch
from pcfjudge.http.door_spec import Answered, Call, DoorRouter, DoorSpec, JobRoute
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STREAM_RESPONSE
from pcfjudge.services import Services

router = DoorRouter()


@router.post("/v1/reward", response_model=RewardResponse, responses=ERROR_RESPONSES | STREAM_RESPONSE)
async def reward_route(body: RewardRequest, request: Request) -> Response:
    """Rewards (0-1) for completions; samples of a group (default: same prompt) are judged together, K calls a group.
    ``deadline_ms`` (or ``Prefer: wait=<s>``) answers by then; ``stream`` sends server-sent events."""
    return await respond(request, body, REWARD, "reward")


def plan_of(services: Services, body: RewardRequest) -> Groups:
    return plan_request(services.settings, services.judge, body)


async def answer(call: Call, body: RewardRequest, reward_plan: Groups, watch: Watch) -> Answered:
    """The groups judged (each recorded for the reward door), as the response's JSON; every sample failed: the
    failure's error, so clients' retry loops retry."""
    services = call.services
    record = listwise_recorder(services.metrics, call.at)
    judged = await judge_plan(services.settings, services.rewards, reward_plan, record, watch)
    if len(judged.failures) == len(judged.samples):
        raise failure_error(judged.failures)
    response = RewardResponse(
        request_id=call.request_id,
        model=judged.model,
        reward=body.reward,
        rewards=[s.reward for s in judged.samples],
        samples=judged.samples,
        usage=judged.usage,
    )
    return Answered(response.model_dump(mode="json"))


REWARD = JobRoute("/v1/reward", RewardRequest, lambda b: b, "stream", plan_of, answer)
SPIDER = "How many legs does a spider have?"
EXAMPLES: dict[str, dict[str, Any]] = {  # a working body per route, for /docs "Try it out" (api.examples)
    "/v1/reward": {
        "samples": [
            {"prompt": SPIDER, "response": "Eight.", "reference": "eight"},
            {"prompt": SPIDER, "response": "Six, like an insect.", "reference": "eight"},
        ],
        "deadline_ms": 10000,
    },
    "/get_reward": {
        "query": [f"{SPIDER} Eight.", f"{SPIDER} Six, like an insect."],
        "prompts": [SPIDER, SPIDER],
        "labels": ["eight", "eight"],
    },
    "/v1/reward/one": {"prompt": SPIDER, "response": "Eight.", "label": "eight"},
}

DOOR = DoorSpec("reward", (router, adapters), (REWARD,), "rewards.md", examples=EXAMPLES)
