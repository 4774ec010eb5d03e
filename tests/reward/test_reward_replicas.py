"""Group collection across replicas through a private Redis: members that reach different replicas are judged once
(K provider calls for the group), a replica that closed a group and died is taken over, Redis down falls back to
grouping in process; and a caller that disconnects from a real server is still judged with its group."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack, ExitStack
from typing import Any

import httpx
import pytest
from pcfjudge.reward import rendezvous
from pcfjudge.reward.scoring import GroupSpec
from pcfjudge.services import Services
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services
from tests.support.processes import fake_provider_process, serve_process
from tests.support.redis_server import RedisServer
from tests.support.waits import eventually

PROMPT = "Which gas makes up most of Earth's atmosphere?"
RESPONSES = ["Nitrogen, about 78%.", "Oxygen.", "Carbon dioxide, mostly.", "Nitrogen."]


def body(response: str, **options: Any) -> dict[str, Any]:
    return {"samples": [{"prompt": PROMPT, "response": response}], **options}


def judged_here(services: Services) -> int:
    closed = services.rewards.local.closed
    return closed["full"] + closed["timeout"] + closed["takeover"]


async def test_members_on_two_replicas_meet_in_redis_and_are_judged_once(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, default_k=4)
    async with AsyncExitStack() as stack:
        replicas = [await stack.enter_async_context(app_with_services(settings)) for _ in range(2)]
        options = {"group_size": 4, "group_wait_ms": 60_000}
        replies = await asyncio.gather(
            *(replicas[i % 2][0].post("/v1/reward", json=body(r, **options)) for i, r in enumerate(RESPONSES))
        )
        direct = await replicas[1][0].post(
            "/v1/reward", json={"samples": [{"prompt": PROMPT, "response": r} for r in RESPONSES]}
        )
        counts = [judged_here(services) for _, services in replicas]
    samples = [r.json()["samples"][0] for r in replies]
    assert {(s["group_size"], s["candidates"]) for s in samples} == {(4, 4)}
    assert sorted(counts) == [0, 1]  # one replica judged, the other read the verdict from Redis
    assert [s["reward"] for s in samples] == direct.json()["rewards"]
    with redis_server.client() as redis:
        assert not redis.keys("pcfj:rg:*:open") and not redis.keys("pcfj:rg:*:cur")  # nothing left open


async def test_a_group_closed_by_a_replica_that_died_is_taken_over(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rendezvous, "GRACE_S", 0.2)
    settings = Settings(redis_url=redis_server.url, default_k=3, request_timeout_s=1.0)
    async with app_with_services(settings) as (client, services):
        waiting = asyncio.create_task(
            client.post("/v1/reward", json=body(RESPONSES[0], group_size=2, group_wait_ms=300))
        )
        with redis_server.client() as redis:
            await eventually(lambda: redis.keys("pcfj:rg:*:cur"), what="the first member to open a group in Redis")
            # Another replica's member completes the group (so that replica is to judge it) and dies before judging.
            key = GroupSpec(PROMPT, None, "sim:default", 3, "anonymous").key("")
            ghost = redis.eval(rendezvous._JOIN, 3, *rendezvous._keys(key), 2, "ghost", 60_000, 60_000, RESPONSES[1])
            assert ghost[0] == 1
        reply = await waiting
    sample = reply.json()["samples"][0]
    assert (sample["group_size"], sample["candidates"]) == (2, 2)  # the ghost's member was judged too
    assert services.rewards.local.closed["takeover"] == 1


async def test_with_redis_down_members_group_in_process(redis_server: RedisServer) -> None:
    redis_server.kill()
    async with app_with_services(Settings(redis_url=redis_server.url, default_k=3)) as (client, services):
        options = {"group_size": 2, "group_wait_ms": 60_000}
        replies = await asyncio.gather(*(client.post("/v1/reward", json=body(r, **options)) for r in RESPONSES[:2]))
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    assert {(r.json()["samples"][0]["group_size"]) for r in replies} == {2}
    assert services.rewards.local.closed == {"fallback": 2, "full": 1}


@pytest.mark.slow
async def test_two_serve_replicas_judge_a_split_group_with_k_provider_calls(redis_server: RedisServer) -> None:
    k = 3
    with fake_provider_process("--latency-ms", "100") as fake:
        env = {
            "PCFJ_OPENAI_API_KEY": "test",
            "PCFJ_OPENAI_BASE_URL": f"{fake}/v1",
            "PCFJ_DEFAULT_MODEL": "openai:judge-x",
            "PCFJ_REDIS_URL": redis_server.url,
            "PCFJ_DEFAULT_K": str(k),
            "PCFJ_REWARD_GROUP_SIZE": "4",
        }
        with ExitStack() as stack:
            urls = [stack.enter_context(serve_process(env=env)) for _ in range(2)]
            async with httpx.AsyncClient(timeout=120) as client:
                replies = await asyncio.gather(
                    *(client.post(f"{urls[i % 2]}/v1/reward", json=body(r)) for i, r in enumerate(RESPONSES))
                )
                served = (await client.get(f"{fake}/_control/calls", params={"last": 0})).json()
                direct = await client.post(
                    f"{urls[0]}/v1/reward",
                    json={"samples": [{"prompt": PROMPT, "response": r} for r in RESPONSES]},
                )
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    assert served["calls"] == {"openai": k}  # one group judgment for four requests on two replicas, not 4·K
    samples = [r.json()["samples"][0] for r in replies]
    assert {(s["group_size"], s["candidates"], s["k"]) for s in samples} == {(4, 4, k)}
    assert [s["reward"] for s in samples] == direct.json()["rewards"]
    assert direct.json()["usage"]["backend_calls"] == 0


@pytest.mark.slow
async def test_a_caller_that_disconnects_from_the_server_is_still_judged_with_its_group() -> None:
    with serve_process(env={"PCFJ_DEFAULT_K": "3"}) as url:
        options = {"group_size": 3, "group_wait_ms": 60_000}
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            with pytest.raises(httpx.ReadTimeout):  # the trainer gives up and hangs up while its group waits
                await client.post("/v1/reward", json=body(RESPONSES[0], **options), timeout=1.0)
            replies = await asyncio.gather(
                *(client.post("/v1/reward", json=body(r, **options)) for r in RESPONSES[1:3])
            )
    assert all(r.status_code == 200 for r in replies), [r.text for r in replies]
    assert {(r.json()["samples"][0]["group_size"], r.json()["samples"][0]["candidates"]) for r in replies} == {(3, 3)}
