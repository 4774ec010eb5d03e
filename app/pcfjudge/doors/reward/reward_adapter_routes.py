"""RL frameworks' own reward wire formats over the same judge as ``/v1/reward``.

``POST /get_reward``  OpenRLHF (``--reward.remote_url http://host:8000/get_reward``): ``{"query", "prompts",
    "labels"}`` → ``{"rewards", "scores", "extra_logs"}``, lists as long as the input. Each response is ``query``
    minus its ``prompts`` prefix (and a trailing end-of-sequence marker); the label is the reference.
``POST /v1/reward/one``  slime (``--rm-type remote_rm --rm-url …/v1/reward/one --reward-key reward``):
    ``{"prompt", "response", "label"}`` → ``{"reward", …}``.

Both take the grouping options as query parameters, since the frameworks post a fixed body to the URL as given:
``?group_size=8&group_wait_ms=30000&k=5&model=…&reward=consensus``. Neither can carry a null reward, so a sample
whose judgment failed fails its whole request with 503 and Retry-After: the frameworks' own retry loops then retry
(OpenRLHF 5 tries, slime 10), and a reward is never made up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Annotated

from fastapi import Depends, Query, Request

from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.decisions import listwise_recorder
from pcfjudge.doors.reward.reward_plan import Item, Judged, check_samples, judge_plan, plan
from pcfjudge.doors.reward.reward_protocol import (
    OpenRLHFRequest,
    OpenRLHFResponse,
    RewardMode,
    RewardOptions,
    SlimeRequest,
    SlimeResponse,
)
from pcfjudge.engine.progress import AnswerBy, Watch
from pcfjudge.errors import ApiError, client_error
from pcfjudge.http.deps import ServicesDep
from pcfjudge.http.door_spec import DoorRouter, http_call, watch_for
from pcfjudge.http.error_handlers import ERROR_RESPONSES, STATUS
from pcfjudge.reward.scoring import Failure
from pcfjudge.reward.text import chat_text, strip_end_tokens
from pcfjudge.services import Services
from pcfjudge.types import MAX_K

router = DoorRouter()


OPENRLHF_DEADLINE_MS = 170_000
"""OpenRLHF's remote reward client posts with a hard-coded 180 s timeout (``request_api_wrapper``): answer 10 s
before it, so the trainer gets the partial consensus instead of a timeout and a retry."""
SLIME_DEADLINE_MS = 290_000
"""slime's ``remote_rm`` posts on an aiohttp session with the default 300 s total timeout: answer 10 s before it."""


async def query_options(  # async: FastAPI runs a plain def dependency on its thread pool, a hop per request
    model: Annotated[str | None, Query(description="provider:model, or a jury (a PCFJ_JURIES name or a,b,c)")] = None,
    k: Annotated[int | None, Query(ge=1, le=MAX_K, description="permutations per group")] = None,
    reward: Annotated[RewardMode, Query(description="consensus, borda or win")] = "consensus",
    group_size: Annotated[
        int | None, Query(ge=1, description="members a group waits for, at most PCFJ_MAX_GROUP_SIZE")
    ] = None,
    group_wait_ms: Annotated[int | None, Query(ge=0, le=600_000, description="longest wait for them")] = None,
    deadline_ms: Annotated[
        int | None, Query(ge=1, le=86_400_000, description="answer by then (default: the trainer's timeout - 10 s)")
    ] = None,
) -> RewardOptions:
    return RewardOptions(
        model=model, k=k, reward=reward, group_size=group_size, group_wait_ms=group_wait_ms, deadline_ms=deadline_ms
    )


OptionsDep = Annotated[RewardOptions, Depends(query_options)]


async def judged(
    services: Services, options: RewardOptions, request: Request, items: list[Item], field: str, watch: Watch
) -> Judged:
    """``items`` judged as one reward plan, recorded under the reward door; 503 + Retry-After when any failed (a
    trainer cannot take a null reward)."""
    reward_plan = plan(services.settings, services.judge, options, items, field)
    record = listwise_recorder(services.metrics, http_call(request, "reward").at)
    result = await judge_plan(services.settings, services.rewards, reward_plan, record, watch)
    if result.failures:
        raise failure_error(result.failures, status=503)
    return result


def trainer_deadline(services: Services, options: RewardOptions, request: Request, default_ms: int) -> AnswerBy | None:
    """The request's deadline (query ``deadline_ms`` or ``Prefer: wait``), else what the trainer is known to wait."""
    given = options.deadline_ms if options.deadline_ms is not None or request.headers.get("prefer") else default_ms
    return answer_deadline(services.settings.fanout, given, request.headers.get("prefer"))


@router.post("/get_reward", response_model=OpenRLHFResponse, responses=ERROR_RESPONSES)
async def openrlhf_route(
    body: OpenRLHFRequest, options: OptionsDep, services: ServicesDep, request: Request
) -> OpenRLHFResponse:
    """OpenRLHF's remote reward model protocol (see the module docstring); 503 + Retry-After on judging failures.
    Answers within OpenRLHF's 180 s client timeout (170 s unless ``deadline_ms`` says otherwise)."""
    watch = watch_for(trainer_deadline(services, options, request, OPENRLHF_DEADLINE_MS))
    n = len(body.query)
    check_samples(services.settings.access, n, "query")  # before any work on them
    if len(body.prompts) != n:
        raise client_error("prompts", f"send one prompt per query ({n} queries, {len(body.prompts)} prompts)")
    labels = body.labels if body.labels is not None else [None] * n
    if len(labels) != n:
        raise client_error("labels", f"send one label per query ({n} queries, {len(labels)} labels)")
    items = []
    for i, (query, prompt, label) in enumerate(zip(body.query, body.prompts, labels, strict=True)):
        if not query.startswith(prompt):
            detail = "the query does not start with its prompt; OpenRLHF sends prompt + response as the query"
            raise client_error(f"query.{i}", detail)
        if not prompt.strip():
            raise client_error(f"prompts.{i}", "must not be empty or only whitespace")
        items.append(Item(prompt, strip_end_tokens(query[len(prompt) :]), None if label is None else str(label)))
    if not items:  # OpenRLHF shards a batch over several URLs; a shard may be empty
        return OpenRLHFResponse(rewards=[], scores=[], extra_logs={})
    samples = (await judged(services, options, request, items, "query", watch)).samples
    rewards = [s.reward for s in samples if s.reward is not None]
    return OpenRLHFResponse(
        rewards=rewards,
        scores=rewards,
        extra_logs={
            "pcfj_judge_score": [s.score or 0.0 for s in samples],
            "pcfj_group_size": [float(s.group_size) for s in samples],
            "pcfj_pointwise": [float(s.scoring == "pointwise") for s in samples],
            "pcfj_order_sensitive": [float(bool(s.order_sensitive)) for s in samples],
            "pcfj_group_fallback": [float(s.group_note is not None) for s in samples],
        },
    )


@router.post("/v1/reward/one", response_model=SlimeResponse, responses=ERROR_RESPONSES)
async def slime_route(
    body: SlimeRequest, options: OptionsDep, services: ServicesDep, request: Request
) -> SlimeResponse:
    """slime's ``remote_rm`` protocol: one sample, answered ``{"reward": …}``; 503 + Retry-After on failure.
    Answers within slime's 300 s client timeout (290 s unless ``deadline_ms`` says otherwise)."""
    watch = watch_for(trainer_deadline(services, options, request, SLIME_DEADLINE_MS))
    prompt = chat_text(body.prompt)
    if not prompt.strip():
        raise client_error("prompt", "must not be empty or only whitespace")
    label = None if body.label is None else str(body.label)
    one = await judged(services, options, request, [Item(prompt, body.response, label)], "body", watch)
    return SlimeResponse.model_validate(one.samples[0].model_dump())


RETRY_AFTER_S = 5  # a failed judgment's Retry-After when no backend named one


def failure_error(failures: Sequence[Failure], *, status: int | None = None) -> ApiError:
    """The error for samples that got no reward: the most common failure's kind and status (unless ``status``
    forces one), with Retry-After whenever the answer is 503 or 429 or a backend named a wait."""
    statuses = [(STATUS[f.kind], f.kind) for f in failures]
    (code, kind), _ = Counter(statuses).most_common(1)[0]
    first = next(f for f, key in zip(failures, statuses, strict=True) if key == (code, kind))
    code = status or code
    waits = [f.retry_after for f in failures if f.retry_after is not None]
    headers = {"Retry-After": str(max(1, round(max(waits) + 0.499)))} if waits else None
    if headers is None and code in (429, 503):
        headers = {"Retry-After": str(RETRY_AFTER_S)}
    return ApiError(kind, first.detail, headers=headers, status=code)
