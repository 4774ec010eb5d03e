"""A fleet endpoint's rate budget (issue 39 item 2): no minute ever holds more than rpm requests or tpm tokens, calls at
once stay under max_parallel_requests, a provider's block holds, with Redis two replicas share one budget, and budget
that is scarce goes to the highest class waiting (item 3)."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

import pytest
from pcfjudge.backends.budget import Ask, Grant, MemoryBudget, RedisBudget
from pcfjudge.backends.fleet import FleetBackend
from pcfjudge.backends.models_file import EndpointSpec, FleetSpec
from pcfjudge.backends.slots import Priority, Shed, Slots
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.redis_client import close, connect

from tests.backends.test_fleet_shed import Stub
from tests.support.inprocess import listwise_call
from tests.support.redis_server import RedisServer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.25

    def __call__(self) -> float:
        return self.now


def ask(
    lease: str = "a", *, rpm: int | None = None, tpm: int | None = None, parallel: int | None = None, tokens: int = 1
) -> Ask:
    return Ask("ep", rpm, tpm, parallel, tokens, lease, ttl_s=30.0)


async def test_requests_per_minute_over_a_sliding_minute() -> None:
    clock = Clock()
    budget = MemoryBudget(clock)
    assert [(await budget.take(ask(rpm=3))).ok for _ in range(3)] == [True, True, True]
    refused = await budget.take(ask(rpm=3))
    assert refused == Grant(False, refused.wait_s, "rpm")
    assert 60 < refused.wait_s <= 61  # the first request's second must leave the window whole
    clock.now += 30
    assert not (await budget.take(ask(rpm=3))).ok  # half a minute on: still three in the last minute
    clock.now += refused.wait_s - 30
    assert (await budget.take(ask(rpm=3))).ok


async def test_tokens_per_minute_count_what_calls_really_spend() -> None:
    clock = Clock()
    budget = MemoryBudget(clock)
    assert (await budget.take(ask(tpm=1000, tokens=400))).ok
    await budget.spend("ep", 500)  # the answer's tokens beyond the estimate
    refused = await budget.take(ask(tpm=1000, tokens=200))
    assert not refused.ok and refused.reason == "tpm"
    assert (await budget.take(ask(tpm=1000, tokens=5000))).wait_s == math.inf  # never fits


async def test_calls_at_once_and_blocks() -> None:
    clock = Clock()
    budget = MemoryBudget(clock)
    assert (await budget.take(ask("one", parallel=2))).ok and (await budget.take(ask("two", parallel=2))).ok
    assert (await budget.take(ask("three", parallel=2))).reason == "parallel"
    await budget.release("ep", "one")
    assert (await budget.take(ask("three", parallel=2))).ok
    clock.now += 31  # a lease dies with its call's deadline (a replica that crashed holding it)
    assert (await budget.take(ask("four", parallel=2))).ok
    await budget.block("ep", 5.0)
    blocked = await budget.take(ask("five"))
    assert blocked.reason == "blocked" and blocked.wait_s == 5.0


def _shared(server: RedisServer) -> RedisBudget:
    client = connect(server.url, timeout_s=1.0, connect_timeout_s=1.0)
    return RedisBudget(RedisCache(client, ttl_s=60, op_timeout_s=2.0))


async def test_two_replicas_share_one_budget_in_redis(redis_server: RedisServer) -> None:
    one, two = _shared(redis_server), _shared(redis_server)
    try:
        grants = [await (one if i % 2 else two).take(ask(f"l{i}", rpm=5)) for i in range(10)]
        assert sum(g.ok for g in grants) == 5  # five in all, not five each
        refused = grants[-1]
        assert refused.reason == "rpm" and 59 < refused.wait_s <= 61
        assert (await one.take(ask("p1", parallel=1))).ok
        assert (await two.take(ask("p2", parallel=1))).reason == "parallel"
        await one.release("ep", "p1")
        assert (await two.take(ask("p2", parallel=1))).ok
        await one.block("ep", 2.0)
        blocked = await two.take(ask("x"))
        assert blocked.reason == "blocked" and 0 < blocked.wait_s <= 2.0
    finally:
        for budget in (one, two):
            await close(budget.redis.client)


async def test_a_budget_without_redis_falls_back_to_memory(redis_server: RedisServer) -> None:
    budget = _shared(redis_server)
    redis_server.kill()
    try:
        assert [(await budget.take(ask(f"l{i}", rpm=2))).ok for i in range(3)] == [True, True, False]
    finally:
        await close(budget.redis.client)


async def test_scarce_budget_goes_to_an_interactive_call_before_background_calls_waiting_longer(
    redis_server: RedisServer,
) -> None:
    """An endpoint taking 3 requests a minute, one spent, then blocked for 0.3 s (a 429's retry-after): three job calls
    start waiting for it, then an interactive call. The interactive call gets one of the two requests left, the job
    call first in line the other; the others, with no budget before their deadline, are shed before they spend."""
    budget = _shared(redis_server)
    stub = Stub()
    fleet = FleetBackend(FleetSpec("f", (EndpointSpec("ep", "openai", "m", None, rpm=3),)), [stub], budget, capacity=8)
    slots = Slots(size=8, max_queued=8)
    served: list[str] = []
    loop = asyncio.get_running_loop()

    async def call(label: str, priority: Priority) -> None:
        async with slots.slot(priority=priority):  # the class, on the call as the runner sends it
            await fleet.complete(replace(listwise_call(), priority=priority), until=loop.time() + 10.0)
        served.append(label)

    try:
        await fleet.complete(listwise_call())
        await budget.block("ep", 0.3)
        tasks = []
        for label, priority in [("job-0", "background"), ("job-1", "background"), ("job-2", "background")]:
            tasks.append(asyncio.create_task(call(label, priority)))
            await asyncio.sleep(0.02)
        tasks.append(asyncio.create_task(call("direct", "interactive")))
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        await fleet.aclose()
        await close(budget.redis.client)
    assert served[0] == "direct" and len(served) == 2 and served[1].startswith("job-")
    assert sum(isinstance(o, Shed) for o in outcomes) == 2 and stub.calls == 3


async def test_a_call_behind_a_higher_class_past_its_deadline_is_shed() -> None:
    stub = Stub()
    fleet = FleetBackend(FleetSpec("f", (EndpointSpec("ep", "openai", "m", None),)), [stub], MemoryBudget(), capacity=2)
    slots = Slots(size=2, max_queued=2)
    loop = asyncio.get_running_loop()
    await fleet.budget.block("ep", 5.0)

    async def call(priority: Priority, seconds: float) -> None:
        async with slots.slot(priority=priority):
            await fleet.complete(replace(listwise_call(), priority=priority), until=loop.time() + seconds)

    direct = asyncio.create_task(call("interactive", 10.0))  # waits for the block to end
    await asyncio.sleep(0.02)
    with pytest.raises(Shed, match="higher class"):
        await call("background", 0.2)  # its deadline comes before the block ends, and it was behind the direct call
    direct.cancel()
    await asyncio.gather(direct, return_exceptions=True)
    assert stub.calls == 0
