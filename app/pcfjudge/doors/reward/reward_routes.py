"""POST /v1/reward: rewards for RL, each group of completions judged together as one PCFJudge task
(``pcfjudge.doors.reward.reward_plan``). When every sample failed the request answers with the failure's status (503 with
Retry-After when overloaded) so clients' retry loops retry; otherwise a failed sample has ``reward: null`` and an
``error``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.decisions import listwise_recorder
from pcfjudge.doors.reward.reward_protocol import RewardRequest, RewardResponse
from pcfjudge.engine.progress import Watch
from pcfjudge.errors import ApiError
from pcfjudge.http.deps import ServicesDep, door, watch_of
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STATUS, STREAM_RESPONSE
from pcfjudge.http.read_body import ReadRoute

if TYPE_CHECKING:
    from pcfjudge.reward.scoring import Failure

router = APIRouter(route_class=ReadRoute)


@router.post("/v1/reward", response_model=RewardResponse, responses=ERROR_RESPONSES | STREAM_RESPONSE)
async def reward_route(body: RewardRequest, request: Request, services: ServicesDep) -> Any:
    """Rewards (0-1) for completions; samples of a group (default: same prompt) are judged together, K calls a group.
    ``deadline_ms`` (or ``Prefer: wait=<s>``) answers by then; ``stream`` sends server-sent events."""
    from pcfjudge.doors.reward.reward_plan import judge_plan, plan_request

    settings = services.settings
    watch = watch_of(request, answer_deadline(settings, body.deadline_ms, request.headers.get("prefer")))
    reward_plan = plan_request(settings, services.judge, body)  # checked here, before any answer
    record = listwise_recorder(services.metrics, door(request, "reward", body.stream))

    async def rewarded(watch: Watch) -> RewardResponse:
        judged = await judge_plan(settings, services.rewards, reward_plan, record, watch)
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

    if body.stream:

        async def data(watch: Watch) -> dict[str, Any]:
            return (await rewarded(watch)).model_dump(mode="json")

        from pcfjudge.http.streaming import stream  # server-sent events: loaded by the first stream

        return await stream(data, watch, request.state.request_id)
    return await rewarded(watch)


RETRY_AFTER_S = 5  # a failed judgment's Retry-After when no backend named one


def failure_error(failures: Sequence[Failure], *, status: int | None = None) -> ApiError:
    """The error for samples that got no reward: the most common failure's kind and status (unless ``status``
    forces one), with Retry-After whenever the answer is 503 or 429 or a backend named a wait."""
    statuses = [(f.status or STATUS[f.kind], f.kind) for f in failures]
    (code, kind), _ = Counter(statuses).most_common(1)[0]
    first = next(f for f, key in zip(failures, statuses, strict=True) if key == (code, kind))
    code = status or code
    waits = [f.retry_after for f in failures if f.retry_after is not None]
    headers = {"Retry-After": str(max(1, round(max(waits) + 0.499)))} if waits else None
    if headers is None and code in (429, 503):
        headers = {"Retry-After": str(RETRY_AFTER_S)}
    return ApiError(kind, first.detail, headers=headers, status=code)
