"""The typed client's jobs (sync and async): submit validates locally and answers the 202's ``JobAccepted``; ``job``,
``cancel`` and ``wait`` answer ``Job``; a job the route refuses at run time ends ``failed`` with the route's error;
``wait`` gives up after its timeout."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pcfjudge
import pydantic
import pytest
from pcfjudge.client import ServiceError
from pcfjudge.doors.listwise.listwise_protocol import ListwiseRequest, ListwiseResponse
from pcfjudge.schemas.jobs_schema import Job, JobAccepted
from pcfjudge.settings import Settings

from tests.support.basics import CANDIDATES, QUESTION
from tests.support.inprocess import app_with_services

REQUEST = {"question": QUESTION, "candidates": CANDIDATES, "k": 3}


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[tuple[pcfjudge.AsyncClient, httpx.AsyncClient]]:
    """The typed async client and a plain one, both on one in-process app."""
    async with (
        app_with_services(settings) as (http, _),
        pcfjudge.AsyncClient("http://test", transport=http._transport) as judge,
    ):
        yield judge, http


@pytest.mark.slow  # the blocking client needs a real server
def test_sync_client_submits_waits_and_reads_the_routes_answer(serve_url: str) -> None:
    with pcfjudge.Client(serve_url) as judge:
        accepted = judge.submit("/judge/listwise", REQUEST)
        done = judge.wait(accepted.id, poll_s=0.05, timeout_s=60)
        again = judge.job(accepted.id)
        typed = judge.submit("/judge/listwise", ListwiseRequest.model_validate({**REQUEST, "model": "sim:oracle"}))
        typed_done = judge.wait(typed.id, poll_s=0.05, timeout_s=60)
        with pytest.raises(pydantic.ValidationError):
            judge.submit("/judge/listwise", {**REQUEST, "k": 0})  # refused locally, before any call
        with pytest.raises(ValueError, match="endpoint must be one of"):
            judge.submit("/rerank", REQUEST)
        with pytest.raises(ServiceError) as refused:
            judge.submit(
                "/judge/listwise", {**REQUEST, "model": "openai:not-allowed"}
            )  # the route's own 422 (no such provider here)
        with pytest.raises(ServiceError) as missing:
            judge.job("job_" + "0" * 32)
    assert isinstance(accepted, JobAccepted) and accepted.status == "queued"
    assert accepted.location == f"/v1/jobs/{accepted.id}"
    assert isinstance(done, Job) and done.status == "succeeded" and done.http_status == 200 and done == again
    verdict = ListwiseResponse.model_validate(done.response)
    assert verdict.request_id == accepted.id and verdict.k == 3
    assert typed_done.status == "succeeded" and typed_done.response is not None
    assert typed_done.response["model"] == "sim:oracle"
    assert refused.value.status == 422 and "openai" in refused.value.detail
    assert missing.value.status == 404 and missing.value.kind == "not_found"


async def test_async_client_submits_cancels_and_times_out_waiting() -> None:
    async with served(Settings(sim_latency_ms=5000)) as (judge, _):
        accepted = await judge.submit("/judge/listwise", REQUEST)
        with pytest.raises(TimeoutError, match="still"):
            await judge.wait(accepted.id, poll_s=0.02, timeout_s=0.1)
        cancelled = await judge.cancel(accepted.id)
        waited = await judge.wait(accepted.id, poll_s=0.02, timeout_s=5)
    assert cancelled.status == waited.status == "cancelled" and waited.response is None


async def test_a_job_the_route_refuses_when_it_runs_fails_with_the_routes_error() -> None:
    # One call a minute can never pay for k=3: the route's 429 (without Retry-After: waiting would not help).
    async with served(Settings(quota_calls_per_min=1)) as (judge, http):
        accepted = await judge.submit("/judge/listwise", REQUEST)
        failed = await judge.wait(accepted.id, poll_s=0.02, timeout_s=10)
        ordinary = await http.post("/judge/listwise", json=REQUEST)
    assert failed.status == "failed" and failed.http_status == ordinary.status_code == 429
    assert failed.response is not None and failed.response["error"] == "quota_exceeded"
    assert failed.response["detail"] == ordinary.json()["detail"]
