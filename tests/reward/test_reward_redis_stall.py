"""Issue 22, row 6: a collected reward group survives a Redis stall (SIGSTOP of a private redis-server mid-group)
without splitting or judging a member twice; past the patience, members fall back to grouping in process and their
rewards say so."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from pcfjudge.reward import rendezvous

from tests.support.inprocess import FakeProvider, app_with_services, provider_settings
from tests.support.redis_server import RedisServer
from tests.support.waits import eventually

PROMPT = "Which gas makes up most of Earth's atmosphere?"
RESPONSES = ["Nitrogen, about 78%.", "Oxygen.", "Carbon dioxide, mostly.", "Nitrogen."]
URL = "/v1/reward/one?group_size=4&group_wait_ms=8000&k=3"


def member(client: httpx.AsyncClient, response: str) -> asyncio.Task[httpx.Response]:
    return asyncio.create_task(client.post(URL, json={"prompt": PROMPT, "response": response}))


async def test_a_redis_stall_mid_group_neither_splits_the_group_nor_judges_twice(
    redis_server: RedisServer, fake: FakeProvider
) -> None:
    settings = provider_settings("openai", fake, redis_url=redis_server.url, max_retries=0)
    async with app_with_services(settings) as (client, services):
        first = [member(client, r) for r in RESPONSES[:2]]
        with redis_server.client() as redis:
            await eventually(
                lambda: any(redis.llen(k) == 2 for k in redis.keys("pcfj:rg:*:open")),
                what="two members waiting in the open generation",
            )
        redis_server.pause()  # SIGSTOP: connections accepted, nothing answers
        third = member(client, RESPONSES[2])
        await asyncio.sleep(2.0)  # the stall (1.5–3 s in the report): member 3 arrives in the middle of it
        redis_server.resume()
        fourth = member(client, RESPONSES[3])
        replies = await asyncio.gather(*first, third, fourth)
        closed = dict(services.rewards.local.closed)
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    samples = [r.json() for r in replies]
    assert {(s["group_size"], s["candidates"]) for s in samples} == {(4, 4)}  # one group of four, not split
    assert all(s["group_note"] is None for s in samples)
    assert sum(fake.calls(last=0)["calls"].values()) == 3  # judged once: K calls, not 2·K
    assert "fallback" not in closed, closed


async def test_past_the_patience_members_group_in_process_and_their_rewards_say_so(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rendezvous, "PATIENCE_S", 0.5)
    from pcfjudge.settings import Settings

    settings = Settings(redis_url=redis_server.url, default_k=3)
    async with app_with_services(settings) as (client, services):
        redis_server.pause()
        url = "/v1/reward/one?group_size=2&group_wait_ms=60000"
        replies = await asyncio.gather(
            *(client.post(url, json={"prompt": PROMPT, "response": r}) for r in RESPONSES[:2])
        )
        redis_server.resume()
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    samples = [r.json() for r in replies]
    assert {s["group_size"] for s in samples} == {2}  # the two fallen-back members still met, in process
    assert all("grouped in process" in (s["group_note"] or "") for s in samples)
    assert services.rewards.local.closed["fallback"] == 2
