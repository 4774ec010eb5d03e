"""A transient error is not an outage: Redis operations retry timeouts and broken connections, the breaker opens on a
sustained failure rate (never on a few failures in a burst), and while it is open a replica's own single flight still
holds. What fail-open cost is counted: calls made without the shared single flight, and answers stored twice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from pcfjudge.cache.breaker import CircuitBreaker
from pcfjudge.cache.layered import LayeredCache
from pcfjudge.cache.redis_cache import RedisCache, RedisUnavailable
from pcfjudge.cache.redis_client import RedisClient, connect
from pcfjudge.settings import Settings
from pcfjudge.telemetry import metrics
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from tests.support.inprocess import app_with_services
from tests.support.redis_server import RedisServer
from tests.support.waits import FakeClock

KEY = "pcfj:{item}:listwise:0-1:sim:default:0:listwise-v1:abc"
ANSWER = {"answer": {"candidates": []}, "usage": {}, "prompt_version": "listwise-v1", "model": "sim:default"}


def failing(times: int, error: Exception) -> Callable[[RedisClient], Awaitable[Any]]:
    """An operation that raises ``error`` on its first ``times`` tries, then pings."""
    tries = {"n": 0}

    def op(client: RedisClient) -> Awaitable[Any]:
        tries["n"] += 1
        if tries["n"] <= times:
            raise error
        return client.ping()  # type: ignore[no-any-return]

    return op


def stall(seconds: float) -> None:
    """Hold the event loop, as a busy machine does to a replica in a burst (no CPU for it for a while)."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        pass


async def test_an_event_loop_stall_past_the_timeouts_costs_no_claim(redis_server: RedisServer) -> None:
    """The burst's errors: Redis answers within a millisecond, but a loop that stalls past the operation timeouts
    finds every timeout expired when it runs again, and asyncio runs those before the replies waiting in the sockets.
    Those timeouts are the loop's, not Redis's: the claims try again, keep their locks, and the breaker stays shut."""
    client = connect(redis_server.url, timeout_s=0.25, connect_timeout_s=0.25)
    cache = RedisCache(client, ttl_s=60, op_timeout_s=0.5, breaker=CircuitBreaker(0.5, 10.0, 3, 5.0))
    try:
        deadline = asyncio.get_running_loop().time() + 60
        claims = [asyncio.create_task(cache.claim(f"{KEY}:{i}", deadline)) for i in range(10)]
        asyncio.get_running_loop().call_soon(stall, 1.0)  # once each claim is waiting on its socket
        taken = await asyncio.gather(*claims)
        assert cache.failures > 0, "the stall did not outlast the timeouts"
        assert all(c.lease is not None and not c.alone for c in taken)  # each key's lock: single flight held
        assert cache.breaker.state == "closed" and cache.retries >= cache.failures
        for claim in taken:
            await claim.release()
    finally:
        await cache.aclose()


def test_the_breaker_opens_on_a_failure_rate_over_its_window_not_on_failures_in_a_row() -> None:
    clock, states = FakeClock(), []
    breaker = CircuitBreaker(0.5, 10.0, 10, 5.0, clock=clock, on_change=states.append)
    for _ in range(9):  # nine failures in a row: fewer operations than the minimum, so not an outage yet
        breaker.failure()
    assert breaker.state == "closed" and breaker.counts() == (9, 9)
    clock.now += 10  # the window moved on: those failures are forgotten
    for _ in range(6):
        breaker.success()
    for _ in range(5):
        breaker.failure()
    assert breaker.state == "closed"  # 5 of 11 failed: under half
    breaker.failure()
    assert breaker.state == "open" and not breaker.allow()  # 6 of 12: half failed
    clock.now += 5
    assert breaker.allow() and not breaker.allow()  # exactly one probe
    breaker.failure()
    assert breaker.state == "open"
    clock.now += 5
    assert breaker.allow()
    breaker.abandon()  # a cancelled probe frees the slot
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed" and breaker.counts() == (0, 0)  # closed afresh
    assert states == ["open", "half_open", "open", "half_open", "half_open", "closed"]


async def test_a_transient_error_is_retried_and_not_counted_as_a_failure(redis_server: RedisServer) -> None:
    breaker = CircuitBreaker(0.5, 10.0, 1, 5.0)  # one failed operation would open it
    cache = RedisCache(connect(redis_server.url, timeout_s=1, connect_timeout_s=1), ttl_s=60, breaker=breaker)
    try:
        deadline = asyncio.get_running_loop().time() + 30
        assert await cache.retried(failing(2, RedisConnectionError("reset by peer")), deadline)
        assert await cache.retried(failing(1, TimeoutError()), deadline)
        assert (cache.attempts, cache.failures, cache.retries) == (5, 3, 3)
        assert breaker.state == "closed" and breaker.counts() == (2, 0)  # two operations, both ended well
    finally:
        await cache.aclose()


async def test_no_retry_for_a_redis_answer_nor_for_one_try_operations(redis_server: RedisServer) -> None:
    breaker = CircuitBreaker(0.5, 10.0, 2, 5.0)
    cache = RedisCache(connect(redis_server.url, timeout_s=1, connect_timeout_s=1), ttl_s=60, breaker=breaker)
    try:
        with pytest.raises(RedisUnavailable):  # Redis answered with an error: another try would get the same
            await cache.retried(failing(1, ResponseError("NOSCRIPT")))
        with pytest.raises(RedisUnavailable):  # an operation that may not be repeated (a quota's take) tries once
            await cache.run(failing(1, RedisConnectionError("refused")))
        assert (cache.attempts, cache.retries) == (2, 0)
        assert breaker.state == "open"  # both operations failed
    finally:
        await cache.aclose()


async def test_an_answer_stored_twice_is_counted_unless_a_refresh(redis_server: RedisServer) -> None:
    cache = RedisCache(connect(redis_server.url, timeout_s=1, connect_timeout_s=1), ttl_s=60)
    before = metrics.FLIGHT_DUPLICATES._value.get()
    try:
        await cache.set(KEY, ANSWER)
        await cache.set(KEY, ANSWER, fresh=True)  # a refresh replaces it on purpose
        assert cache.duplicates == 0
        await cache.set(KEY, ANSWER)  # another replica made the same call
        assert cache.duplicates == 1
    finally:
        await cache.aclose()
    assert metrics.FLIGHT_DUPLICATES._value.get() == before  # a bare cache reports to no observer


async def test_with_the_breaker_open_a_replica_still_makes_one_call_per_key(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, redis_breaker_min_ops=1)
    body = {"question": "open breaker", "candidates": ["alpha", "beta", "gamma", "delta"], "k": 3}
    async with app_with_services(settings) as (client, services):
        cache = services.cache
        assert isinstance(cache, LayeredCache)
        cache.shared.breaker.clock = FakeClock()  # it stays open for the whole test
        cache.shared.breaker.failure()
        assert cache.shared.breaker.state == "open"
        alone, attempts = metrics.FLIGHT_ALONE._value.get(), cache.shared.attempts
        responses = await asyncio.gather(*(client.post("/judge/listwise", json=body) for _ in range(10)))
        assert all(r.status_code == 200 for r in responses)
        assert sum(r.json()["usage"]["backend_calls"] for r in responses) == 3  # K calls, shared in process
        assert metrics.FLIGHT_ALONE._value.get() - alone == 3  # each made without the shared single flight
        assert cache.shared.attempts == attempts  # Redis was never touched while the breaker was open
        text = (await client.get("/metrics")).text
        assert "pcfjudge_single_flight_unavailable_calls_total" in text
        assert "pcfjudge_single_flight_duplicates_total" in text
