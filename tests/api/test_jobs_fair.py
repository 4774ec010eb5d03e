"""Issue 37 item 5: jobs are shared fairly between API keys. Alice queues a backlog of one-second jobs on two workers;
Bob's one job then starts within about one job's time (first in, first out it waited for all of Alice's: 26 s
behind 104 jobs on 4 workers), in process and with Redis alike."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services

LISTWISE = {"question": "How many moons does Mars have?", "candidates": ["Two.", "One.", "None."], "k": 3}
KEYS = "alice:alice-key-0123456789,bob:bob-key-0123456789"
ALICE, BOB = {"Authorization": "Bearer alice-key-0123456789"}, {"Authorization": "Bearer bob-key-0123456789"}
JOB_S = 1.0  # each job: K=3 simulated calls of about a second, run at once


def item(n: int) -> dict[str, Any]:
    return {**LISTWISE, "question": f"{LISTWISE['question']} ({n})"}


async def started(client: httpx.AsyncClient, location: str) -> dict[str, Any]:
    for _ in range(1500):
        job: dict[str, Any] = (await client.get(location, headers=BOB)).json()
        if job["started_at"] is not None:
            return job
        await asyncio.sleep(0.01)
    raise AssertionError(f"job never started: {job}")


@pytest.mark.parametrize("store", ["memory", "redis"])
async def test_one_keys_backlog_does_not_delay_another_keys_first_job(
    store: str, request: pytest.FixtureRequest
) -> None:
    redis_url = request.getfixturevalue("redis_server").url if store == "redis" else None
    settings = Settings(
        api_keys=KEYS, redis_url=redis_url, job_workers=2, sim_latency_ms=JOB_S * 1000, sim_seed=3, default_k=3
    )
    async with app_with_services(settings) as (client, _):
        backlog = [  # each its own item: none is answered from another's cache
            await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": item(n)}, headers=ALICE)
            for n in range(12)
        ]
        await asyncio.sleep(0.3)  # alice's first two are running, ten wait (about 5 s of work on 2 workers)
        sent = time.time()
        bobs = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": item(99)}, headers=BOB)
        await started(client, bobs.headers["location"])
        waited = time.time() - sent
        queued = [(await client.get(a.headers["location"], headers=ALICE)).json()["status"] for a in backlog]
        for answer in [*backlog, bobs]:  # stop the rest: the app then stops at once
            await client.delete(answer.headers["location"], headers=ALICE if answer is not bobs else BOB)
    assert all(a.status_code == 202 for a in backlog) and bobs.status_code == 202
    assert queued.count("queued") >= 6  # most of alice's backlog was still waiting when bob's job started
    assert waited < 2.2 * JOB_S, waited  # about one job's time (a job lasts up to 1.5 s), not five
