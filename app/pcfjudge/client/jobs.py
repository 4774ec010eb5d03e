"""Jobs from the typed client (docs/api/jobs.md): submit a request to run later, look at it, cancel it, wait for it.

    with pcfjudge.Client() as judge:
        accepted = judge.submit("/judge/listwise", {"question": "…", "candidates": ["…", "…"], "k": 7})
        job = judge.wait(accepted.id)            # polls GET /v1/jobs/{id} until it has ended
        verdict = ListwiseResponse.model_validate(job.response) if job.status == "succeeded" else None

The request is validated locally with its route's request model, as the other typed calls are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import BaseModel

from pcfjudge.client.http import RetryPolicy, apost_json, arequest_json, post_json, request_json
from pcfjudge.doors.chat.chat_protocol import ChatRequest
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest
from pcfjudge.doors.pairwise.pairwise_protocol import PairwiseRequest
from pcfjudge.doors.rerank.rerank_protocol import CohereRerankRequest
from pcfjudge.doors.reward.reward_protocol import RewardRequest
from pcfjudge.schemas.jobs_schema import FINISHED, Job, JobAccepted, JobRequest

REQUESTS: dict[str, type[BaseModel]] = {
    "/judge/listwise": ListwiseRequest,
    "/judge/pairwise": PairwiseRequest,
    "/v1/reward": RewardRequest,
    "/v1/rerank": CohereRerankRequest,
    "/v2/rerank": CohereRerankRequest,
    "/v1/chat/completions": ChatRequest,
}
"""The routes this client submits as jobs, with the request model it checks a request with before sending it."""


def job_body(endpoint: str, request: BaseModel | Mapping[str, Any], webhook_url: str | None) -> dict[str, Any]:
    """``POST /v1/jobs``'s body; ``request`` validated with ``endpoint``'s request model (a pydantic error before any
    call), sent with only the fields it sets."""
    if endpoint not in REQUESTS:
        raise ValueError(f"endpoint must be one of {', '.join(REQUESTS)} (got {endpoint!r})")
    model = request if isinstance(request, BaseModel) else REQUESTS[endpoint].model_validate(dict(request))
    fields = {"endpoint": endpoint, "request": model.model_dump(mode="json", exclude_unset=True, by_alias=True)}
    body = JobRequest.model_validate(fields | ({"webhook_url": webhook_url} if webhook_url is not None else {}))
    return body.model_dump(mode="json", exclude_none=True)


def submit(
    http: httpx.Client,
    endpoint: str,
    request: BaseModel | Mapping[str, Any],
    webhook_url: str | None,
    retry: RetryPolicy,
) -> JobAccepted:
    return JobAccepted.model_validate(
        post_json(http, "/v1/jobs", job_body(endpoint, request, webhook_url), retry=retry)
    )


def job(http: httpx.Client, job_id: str, retry: RetryPolicy, method: str = "GET") -> Job:
    return Job.model_validate(request_json(http, method, f"/v1/jobs/{job_id}", retry=retry))


def wait(http: httpx.Client, job_id: str, poll_s: float, timeout_s: float | None, retry: RetryPolicy) -> Job:
    """Poll until the job has ended (succeeded, failed, cancelled); ``TimeoutError`` after ``timeout_s``."""
    give_up = None if timeout_s is None else time.monotonic() + timeout_s
    while (found := job(http, job_id, retry)).status not in FINISHED:
        if give_up is not None and time.monotonic() >= give_up:
            raise TimeoutError(f"job {job_id} is still {found.status} after {timeout_s:g}s")
        time.sleep(poll_s)
    return found


async def asubmit(
    http: httpx.AsyncClient,
    endpoint: str,
    request: BaseModel | Mapping[str, Any],
    webhook_url: str | None,
    retry: RetryPolicy,
) -> JobAccepted:
    body = job_body(endpoint, request, webhook_url)
    return JobAccepted.model_validate(await apost_json(http, "/v1/jobs", body, retry=retry))


async def ajob(http: httpx.AsyncClient, job_id: str, retry: RetryPolicy, method: str = "GET") -> Job:
    return Job.model_validate(await arequest_json(http, method, f"/v1/jobs/{job_id}", retry=retry))


async def await_job(
    http: httpx.AsyncClient, job_id: str, poll_s: float, timeout_s: float | None, retry: RetryPolicy
) -> Job:
    give_up = None if timeout_s is None else time.monotonic() + timeout_s
    while (found := await ajob(http, job_id, retry)).status not in FINISHED:
        if give_up is not None and time.monotonic() >= give_up:
            raise TimeoutError(f"job {job_id} is still {found.status} after {timeout_s:g}s")
        await asyncio.sleep(poll_s)
    return found
