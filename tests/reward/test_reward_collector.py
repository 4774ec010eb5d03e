"""Group collection in one process: one-sample requests of a group wait for each other and are judged once, exactly
as the group judged in one request; an incomplete group is judged with what arrived; a caller that leaves does not
take its member (or the judgment) away from the others."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
from pcfjudge.reward.collector import LocalCollector
from pcfjudge.reward.scoring import GroupVerdict
from pcfjudge.settings import Settings
from pydantic import SecretStr

from tests.support.inprocess import app_client, app_with_services
from tests.support.waits import eventually

PROMPT = "Which planet is closest to the Sun?"
RESPONSES = ["Mercury.", "Venus, the hottest one.", "Mars.", "I believe it is Mercury, though Venus comes close."]


async def one(client: httpx.AsyncClient, prompt: str, response: str, **options: Any) -> dict[str, Any]:
    reply = await client.post("/v1/reward", json={"samples": [{"prompt": prompt, "response": response}], **options})
    assert reply.status_code == 200, reply.text
    sample: dict[str, Any] = reply.json()["samples"][0]
    return {**sample, "usage": reply.json()["usage"]}


async def test_one_sample_requests_of_a_group_are_judged_once_as_that_group() -> None:
    async with app_with_services(Settings(default_k=5)) as (client, services):
        options = {"group_size": 4, "group_wait_ms": 60_000}
        singles = await asyncio.gather(*(one(client, PROMPT, r, **options) for r in RESPONSES))
        direct = (
            await client.post("/v1/reward", json={"samples": [{"prompt": PROMPT, "response": r} for r in RESPONSES]})
        ).json()
    assert services.rewards.local.closed == {"full": 1}
    assert [s["reward"] for s in singles] == direct["rewards"]  # identical to judging the group in one request
    assert direct["usage"]["cache_hits"] == 5  # ... which found the collected judgment's calls in the cache
    for sample in singles:
        assert (sample["group_size"], sample["candidates"], sample["scoring"]) == (4, 4, "group")
        assert sample["usage"]["backend_calls"] == 5 and sample["usage"]["groups"] == 1  # K for the group, shared


async def test_an_incomplete_group_is_judged_with_what_arrived_when_the_wait_ends() -> None:
    async with app_with_services(Settings(default_k=3)) as (client, services):
        options = {"group_size": 4, "group_wait_ms": 300}
        pair = await asyncio.gather(*(one(client, PROMPT, r, **options) for r in RESPONSES[:2]))
    assert services.rewards.local.closed == {"timeout": 1}
    assert {(s["group_size"], s["candidates"], s["scoring"]) for s in pair} == {(2, 2, "group")}


async def test_a_lone_member_after_the_wait_is_scored_pointwise() -> None:
    async with app_client(Settings(default_k=3)) as client:
        alone = await one(client, PROMPT, RESPONSES[0], group_size=4, group_wait_ms=50)
    assert (alone["scoring"], alone["group_size"], alone["k"]) == ("pointwise", 1, 1)
    assert alone["reward"] == round(alone["score"] / 100, 6)


async def test_a_caller_that_leaves_is_still_judged_with_its_group() -> None:
    async with app_with_services(Settings(default_k=3)) as (client, services):
        options = {"group_size": 3, "group_wait_ms": 60_000}
        leaver = asyncio.create_task(one(client, PROMPT, RESPONSES[0], **options))
        await eventually(lambda: services.rewards.local.waiting() == 1, what="the first member to wait")
        leaver.cancel()  # in process the request's task is the caller's: cancelled, as on a disconnect
        await asyncio.wait([leaver])
        assert leaver.cancelled() or "shutting_down" in str(leaver.exception())  # the app answered 503 to no one
        rest = await asyncio.gather(*(one(client, PROMPT, r, **options) for r in RESPONSES[1:3]))
    assert {(s["group_size"], s["candidates"]) for s in rest} == {(3, 3)}  # the leaver's response was judged too
    assert services.rewards.local.closed == {"full": 1}


async def test_a_request_may_bring_several_members_and_late_members_open_the_next_group() -> None:
    async with app_with_services(Settings(default_k=3)) as (client, services):
        options = {"group_size": 3, "group_wait_ms": 60_000}
        two = client.post(
            "/v1/reward", json={"samples": [{"prompt": PROMPT, "response": r} for r in RESPONSES[:2]], **options}
        )
        first = await asyncio.gather(two, one(client, PROMPT, RESPONSES[2], **options))
        late = await one(client, PROMPT, RESPONSES[3], group_size=3, group_wait_ms=100)
    assert {s["group_size"] for s in first[0].json()["samples"]} == {3} and first[1]["group_size"] == 3
    assert late["group_size"] == 1 and services.rewards.local.closed == {"full": 1, "timeout": 1}


async def test_many_groups_interleaved_at_high_concurrency_match_direct_judging() -> None:
    prompts = [f"Question {i}: name a prime number above {10 * i}." for i in range(6)]
    requests = [(p, f"{p} My answer is candidate {j}.") for p in prompts for j in range(4)]
    random.Random(7).shuffle(requests)
    async with app_with_services(Settings(default_k=4)) as (client, services):
        options = {"group_size": 4, "group_wait_ms": 60_000}
        singles = await asyncio.gather(*(one(client, p, r, **options) for p, r in requests))
        got = {r: s["reward"] for (_, r), s in zip(requests, singles, strict=True)}
        for prompt in prompts:
            responses = [r for p, r in requests if p == prompt]
            body = {"samples": [{"prompt": prompt, "response": r} for r in responses]}
            direct = (await client.post("/v1/reward", json=body)).json()
            assert direct["rewards"] == [got[r] for r in responses] and direct["usage"]["backend_calls"] == 0
    assert services.rewards.local.closed == {"full": len(prompts)}


async def test_the_collector_judges_each_group_once_and_a_judging_error_reaches_every_waiter() -> None:
    collector = LocalCollector()
    calls: list[list[str]] = []

    async def judge(texts: list[str]) -> GroupVerdict:
        calls.append(texts)
        raise RuntimeError("judging broke")

    waiters = [collector.collect("g", [t], 3, 60.0, judge) for t in ("a", "b", "c")]
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert calls == [["a", "b", "c"]]
    assert all(isinstance(r, RuntimeError) for r in results)
    await collector.aclose()


async def test_members_still_waiting_at_shutdown_get_a_503_to_retry_elsewhere() -> None:
    async with app_with_services(Settings()) as (client, services):
        body = {"samples": [{"prompt": PROMPT, "response": RESPONSES[0]}], "group_size": 2, "group_wait_ms": 60_000}
        pending = asyncio.create_task(client.post("/v1/reward", json=body))
        await eventually(lambda: services.rewards.local.waiting() == 1, what="a member to wait")
        await services.rewards.aclose()
        reply = await pending
    assert reply.status_code == 503 and reply.json()["error"] == "shutting_down"
    assert reply.headers["retry-after"] == "1"


async def test_samples_of_different_api_keys_never_share_a_group() -> None:
    settings = Settings(default_k=3, api_keys=SecretStr("alice:key-alice-0123456789,bob:key-bob-0123456789"))
    async with app_with_services(settings) as (client, services):
        body = {"samples": [{"prompt": PROMPT, "response": ""}], "group_size": 2, "group_wait_ms": 500}
        replies = await asyncio.gather(
            *(
                client.post(
                    "/v1/reward",
                    json={**body, "samples": [{"prompt": PROMPT, "response": r}]},
                    headers={"Authorization": f"Bearer key-{who}-0123456789"},
                )
                for who, r in (("alice", RESPONSES[0]), ("bob", RESPONSES[1]))
            )
        )
    assert [r.status_code for r in replies] == [200, 200], [r.text for r in replies]
    assert [r.json()["samples"][0]["group_size"] for r in replies] == [1, 1]
    assert services.rewards.local.closed == {"timeout": 2}


async def test_the_operators_cap_bounds_how_long_a_request_is_held() -> None:
    async with app_with_services(Settings(default_k=3, reward_max_wait_ms=100)) as (client, services):
        alone = await one(client, PROMPT, RESPONSES[0], group_size=4, group_wait_ms=600_000)
    assert alone["group_size"] == 1 and services.rewards.local.closed == {"timeout": 1}
