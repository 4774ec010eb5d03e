"""Issue 37 items 1, 5 and 14: what jobs keep is bounded, and a job the store lost says so.

* a request padded with spaces is kept compact (40 padded jobs of 1.9 MB grew Redis from 1.5 to 81.7 MB); once the
  job ends its request is dropped and only the result is kept;
* a key's ended jobs count against PCFJ_MAX_JOB_BYTES_PER_KEY until they expire (only queued and running ones did,
  so a key could keep any number of results), refused 413 with the setting named;
* without Redis the process's jobs are bounded in bytes (PCFJ_MAX_JOB_STORE_BYTES): 503 jobs_full past it (the
  10,000-job cap alone allowed about 19 GB);
* a Redis restarted without persistence loses its jobs: their 404 says the job store may have lost them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from pcfjudge.cache.job_store import MemoryJobStore
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services
from tests.support.redis_server import RedisServer

LISTWISE = {"question": "How many moons does Mars have?", "candidates": ["Two.", "One.", "None."], "k": 3}
KEYS = "alice:alice-key-0123456789"
ALICE = {"Authorization": "Bearer alice-key-0123456789"}
PADDED = json.dumps(LISTWISE).replace(",", "," + " " * 475_000).encode()  # 1.9 MB of JSON, most of it spaces
ASYNC = {**ALICE, "Prefer": "respond-async", "Content-Type": "application/json"}


async def ended(client: httpx.AsyncClient, location: str) -> dict[str, Any]:
    for _ in range(500):
        job: dict[str, Any] = (await client.get(location, headers=ALICE)).json()
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.02)
    raise AssertionError(f"job still {job['status']}")


async def test_a_padded_request_is_kept_compact_and_dropped_when_the_job_ends() -> None:
    assert len(PADDED) > 1_800_000
    async with app_with_services(Settings(api_keys=KEYS, sim_latency_ms=300)) as (client, services):
        accepted = await client.post("/judge/listwise", content=PADDED, headers=ASYNC)
        assert isinstance(services.jobs, MemoryJobStore)
        stored = services.jobs.jobs[accepted.json()["id"]][0]
        queued_bytes = len(stored.request)
        job = await ended(client, accepted.headers["location"])
        after = services.jobs.jobs[accepted.json()["id"]][0]
    assert accepted.status_code == 202 and job["status"] == "succeeded"
    assert queued_bytes == len(json.dumps(LISTWISE, separators=(",", ":")))  # compact, not the 1.9 MB sent
    assert after.request == b"" and after.response  # ended: the result only


async def test_padded_jobs_do_not_fill_redis(redis_server: RedisServer) -> None:
    settings = Settings(api_keys=KEYS, redis_url=redis_server.url, sim_latency_ms=0)
    with redis_server.client() as redis:
        before = int(redis.info("memory")["used_memory"])
        async with app_with_services(settings) as (client, _):
            accepted = [await client.post("/judge/listwise", content=PADDED, headers=ASYNC) for _ in range(10)]
            for answer in accepted:
                await ended(client, answer.headers["location"])
        grown = int(redis.info("memory")["used_memory"]) - before
    assert all(a.status_code == 202 for a in accepted)
    assert grown < 2_000_000, grown  # 10 × 1.9 MB sent; what stays is ten results


async def test_a_keys_ended_jobs_count_against_its_bytes_until_they_expire() -> None:
    settings = Settings(api_keys=KEYS, sim_latency_ms=0, max_job_bytes_per_key=8_000)
    statuses = []
    async with app_with_services(settings) as (client, _):
        for _ in range(40):
            answer = await client.post(
                "/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE}, headers=ALICE
            )
            statuses.append(answer.status_code)
            if answer.status_code != 202:
                break
            await ended(client, answer.headers["location"])  # none is queued or running when the next comes
    assert statuses[-1] == 413 and 2 < len(statuses) < 40, statuses
    body = answer.json()
    assert body["error"] == "jobs_too_large" and "PCFJ_MAX_JOB_BYTES_PER_KEY" in body["detail"]
    assert "ended" in body["detail"] and "PCFJ_JOB_TTL_S" in body["detail"]


async def test_the_in_process_job_store_is_bounded_in_bytes() -> None:
    big = {**LISTWISE, "candidates": [f"{n} " + "x" * 30_000 for n in range(12)]}  # about 360 KB each
    settings = Settings(
        api_keys=KEYS, sim_latency_ms=5000, max_job_store_bytes=1_000_000, max_job_bytes_per_key=100_000_000
    )
    async with app_with_services(settings) as (client, _):
        answers = [
            await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": big}, headers=ALICE)
            for _ in range(3)
        ]
        for answer in answers:
            if answer.status_code == 202:
                await client.delete(answer.headers["location"], headers=ALICE)
    assert [a.status_code for a in answers] == [202, 202, 503]
    assert answers[2].json()["error"] == "jobs_full" and "PCFJ_MAX_JOB_STORE_BYTES" in answers[2].json()["detail"]
    assert answers[2].headers["retry-after"] == "5"


async def test_a_job_lost_with_a_redis_restart_says_the_store_may_have_lost_it(redis_server: RedisServer) -> None:
    settings = Settings(api_keys=KEYS, redis_url=redis_server.url, sim_latency_ms=3000, redis_breaker_cooldown_s=0.1)
    async with app_with_services(settings) as (client, _):
        accepted = await client.post(
            "/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE}, headers=ALICE
        )
        redis_server.kill()  # no persistence: every job is gone
        redis_server.start()
        for _ in range(100):
            lost = await client.get(accepted.headers["location"], headers=ALICE)
            if lost.status_code != 503:
                break
            await asyncio.sleep(0.1)
    assert accepted.status_code == 202 and lost.status_code == 404, lost.json()
    detail = lost.json()["detail"]
    assert (
        "the job store no longer has it" in detail and "persistence" in detail and "docs/operations/redis.md" in detail
    )
