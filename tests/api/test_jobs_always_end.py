"""Issue 49 row 1: jobs always end. 40 jobs of one key and one of another, a backend of two call slots and Redis 7.0
left some jobs ``running`` for ever: their heartbeat, cancelled, met redis-py's ``CLIENT SETINFO`` error in place of
the cancellation, took it for a store failure and kept renewing the lease. Now a cancelled heartbeat ends whatever
the store says, the client sends no ``CLIENT SETINFO``, and a job that makes no progress is given back."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest
from pcfjudge.cache.job_record import StoreUnavailable
from pcfjudge.settings import Settings

from tests.api.test_jobs import ALICE, BOB, KEYS, LISTWISE, finished
from tests.support.inprocess import app_with_services, provider_settings, running_fake
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow


async def ended(client: httpx.AsyncClient, location: str, headers: dict[str, str]) -> dict[str, Any]:
    for _ in range(3000):  # a generous bound (60 s), not a timing claim: the point is that it ends at all
        job: dict[str, Any] = (await client.get(location, headers=headers)).json()
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.02)
    raise AssertionError(f"job still {job['status']}: {job}")


async def test_forty_jobs_and_another_keys_all_end_over_fresh_starts_on_redis(redis_server: RedisServer) -> None:
    """Ten fresh starts (each a new app on one real Redis, the README's 7.0): 40 jobs (k=3) of one key, one of
    another, two call slots, every fifth job cancelled as it runs: every job ends."""
    settings = Settings(
        redis_url=redis_server.url, api_keys=KEYS, backend_concurrency=2, sim_latency_ms=20, job_sweep_s=0.1
    )
    for start in range(10):
        async with app_with_services(settings) as (client, services):
            pool = getattr(services.cache, "shared", None)
            kwargs = pool.client.connection_pool.connection_kwargs if pool is not None else {}
            assert kwargs.get("driver_info", "unset") is None  # no CLIENT SETINFO, which Redis 7.0 refuses
            bodies = [
                {"endpoint": "/judge/listwise", "request": {**LISTWISE, "question": f"{start}-{i}?"}} for i in range(40)
            ]
            accepted = [await client.post("/v1/jobs", json=b, headers=ALICE) for b in bodies]
            other = await client.post(
                "/v1/jobs", json={**bodies[0], "request": {**LISTWISE, "question": f"b{start}?"}}, headers=BOB
            )
            assert all(a.status_code == 202 for a in accepted) and other.status_code == 202, [a.text for a in accepted][
                :1
            ]
            for a in accepted[::5]:
                await client.delete(a.json()["location"], headers=ALICE)
            jobs = [await ended(client, a.json()["location"], ALICE) for a in accepted]
            jobs.append(await ended(client, other.json()["location"], BOB))
        statuses = [j["status"] for j in jobs]
        assert set(statuses) <= {"succeeded", "cancelled"} and statuses.count("succeeded") >= 32, statuses


async def test_a_heartbeat_cancelled_through_a_store_error_still_ends() -> None:
    """The store answers a cancelled renewal with its own error (as redis-py did with SETINFO's): the job ends."""
    async with app_with_services(Settings(sim_latency_ms=300, job_sweep_s=0.05, job_lease_s=0.3)) as (client, services):
        store, renew = services.jobs, services.jobs.renew

        async def renew_that_hides_cancellation(*args: Any) -> Any:
            try:
                await asyncio.sleep(0.05)  # a renewal in flight when the run ends
                return await renew(*args)
            except asyncio.CancelledError:
                raise StoreUnavailable("ResponseError: unknown subcommand 'SETINFO'") from None

        store.renew = renew_that_hides_cancellation  # type: ignore[method-assign]
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
        job = await finished(client, accepted.json()["location"])
        assert job["status"] == "succeeded", job


async def test_a_heartbeat_whose_cancellation_a_store_swallows_still_ends() -> None:
    """The store answers a cancelled renewal as if nothing happened ("ok", the cancellation swallowed): the run is
    over, so its heartbeat stops at its next turn and the job ends (before, the heartbeat went on renewing the lease
    of a job that stayed running: a replica's resumed job seen so in CI, all its calls done)."""
    async with app_with_services(Settings(sim_latency_ms=300, job_sweep_s=0.05, job_lease_s=0.3)) as (client, services):
        store, renew = services.jobs, services.jobs.renew

        async def renew_that_swallows_cancellation(*args: Any) -> Any:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(0.05)  # a renewal in flight when the run ends
            return await renew(*args)

        store.renew = renew_that_swallows_cancellation  # type: ignore[method-assign]
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
        job = await finished(client, accepted.json()["location"])
        assert job["status"] == "succeeded", job


async def test_a_job_that_makes_no_progress_is_given_back_and_ends() -> None:
    """One call slot, and the provider's first answer hangs (60 s): the first attempt finishes no call within
    PCFJ_JOB_STALL_S, stops renewing its lease and stops; once the lease lapses the job is claimed again as a second
    attempt, whose calls answer, and it ends."""
    with running_fake() as fake:
        fake.faults(["slow"], slow_seconds=60)
        settings = provider_settings(
            "openai", fake, backend_concurrency=1, job_sweep_s=0.05, job_lease_s=1.0, job_stall_s=0.5, max_retries=0
        )
        async with app_with_services(settings) as (client, _):
            accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
            job = await ended(client, accepted.json()["location"], {})
    assert job["status"] == "succeeded" and job["attempts"] == 2, job


async def test_a_job_that_never_progresses_fails_as_abandoned_after_its_attempts() -> None:
    settings = Settings(sim_latency_ms=60_000, job_sweep_s=0.05, job_lease_s=0.6, job_stall_s=0.5)
    async with app_with_services(settings) as (client, _):
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
        job = await ended(client, accepted.json()["location"], {})
    assert job["status"] == "failed" and job["response"]["error"] == "job_abandoned", job
