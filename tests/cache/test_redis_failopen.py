"""Fail open: Redis killed or hung mid-test → requests still served, the breaker bounds Redis attempts; recovery."""

from __future__ import annotations

from typing import Any

from pcfjudge.cache.breaker import CircuitBreaker
from pcfjudge.cache.layered import LayeredCache
from pcfjudge.cache.redis_cache import RedisCache
from pcfjudge.cache.redis_client import connect
from pcfjudge.settings import Settings

from tests.support.inprocess import app_with_services
from tests.support.redis_server import RedisServer
from tests.support.waits import FakeClock


def payload(question: str, k: int = 3) -> dict[str, Any]:
    return {"question": question, "candidates": ["alpha", "beta", "gamma", "delta"], "k": k, "include_runs": False}


async def test_killed_redis_fails_open_then_sharing_resumes(redis_server: RedisServer) -> None:
    # No retries, and a breaker that opens once half of at least 3 operations within its window failed.
    settings = Settings(
        redis_url=redis_server.url, redis_retries=0, redis_breaker_min_ops=3, redis_breaker_cooldown_s=30
    )
    clock = FakeClock()
    async with app_with_services(settings) as (client, services):
        cache = services.cache
        assert isinstance(cache, LayeredCache)
        cache.shared.breaker.clock = clock  # the app built the breaker; from here on only the test moves time
        ok = await client.post("/judge/listwise", json=payload("item 1"))
        assert ok.status_code == 200 and ok.json()["usage"]["backend_calls"] == 3
        clock.now += settings.cache.redis_breaker_window_s  # the window forgets item 1's operations (all successes)
        assert (await client.get("/readyz")).json()["cache"] == {
            "layer": "redis+memory",
            "status": "ok",
            "breaker": "closed",
            "entries": 3,
        }

        redis_server.kill()
        before = cache.shared.attempts
        for i in range(2, 8):  # six more items while Redis is dead: all served from the backend
            resp = await client.post("/judge/listwise", json=payload(f"item {i}"))
            assert resp.status_code == 200, resp.text
            assert resp.json()["usage"]["backend_calls"] == 3 and not resp.json()["degraded"]
            if i == 2:
                # The first request after the crash tried Redis only until the third failure (of three operations
                # in the window) opened the breaker (plus operations already in flight then): at most its MGET and,
                # per run (K=3), the lock and the write; each attempt bounded by the socket timeouts.
                assert cache.shared.breaker.state == "open"
                assert 3 <= cache.shared.attempts - before <= 1 + 2 * 3
                during_first = cache.shared.attempts
        assert cache.shared.attempts == during_first  # later requests never touched the network
        assert cache.shared.skipped >= 5 * 3 and "Connection" in (cache.shared.last_error or "")
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "ready"
        assert ready["cache"]["status"] == "degraded" and ready["cache"]["breaker"] == "open"
        warm = await client.post("/judge/listwise", json=payload("item 7"))
        assert warm.json()["usage"]["cache_hits"] == 3  # the memory layer still serves what this replica saw

        redis_server.start()  # back on the same port, empty
        attempts = cache.shared.attempts
        assert (await client.get("/readyz")).json()["cache"]["breaker"] == "open"  # still cooling down
        assert cache.shared.attempts == attempts
        clock.now += 31  # cool-down over: the next operation is the half-open probe
        ready = (await client.get("/readyz")).json()
        assert ready["cache"]["status"] == "ok" and ready["cache"]["breaker"] == "closed"

        fresh = await client.post("/judge/listwise", json=payload("item 8"))
        assert fresh.json()["usage"]["backend_calls"] == 3
    async with app_with_services(settings) as (other, _):  # another replica: empty memory, same Redis
        shared = await other.post("/judge/listwise", json=payload("item 8"))
        assert shared.json()["usage"] == shared.json()["usage"] | {"backend_calls": 0, "cache_hits": 3}


async def test_hung_redis_costs_one_timeout_per_operation_until_the_breaker_opens(redis_server: RedisServer) -> None:
    # The fake clock never moves, so the breaker cannot reach its cool-down however slowly this test runs.
    client = connect(redis_server.url, timeout_s=0.2, connect_timeout_s=0.2)
    breaker = CircuitBreaker(0.5, 10.0, 4, 60.0, clock=FakeClock())  # opens at 3 failures of 4 operations
    cache = RedisCache(client, ttl_s=60, op_timeout_s=1.0, retries=0, breaker=breaker)
    try:
        await cache.set("pcfj:{x}:k", {"answer": {}})
        assert (cache.attempts, cache.failures) == (1, 0), cache.last_error  # a healthy Redis first
        redis_server.pause()  # SIGSTOP: the kernel accepts connections, nobody answers
        for _ in range(5):
            assert await cache.get_many(["pcfj:{x}:k", "pcfj:{x}:j"]) == [None, None]
            await cache.set("pcfj:{x}:k", {"answer": {}})
        assert cache.breaker.state == "open"
        assert (cache.attempts, cache.failures, cache.skipped) == (1 + 3, 3, 7)
        assert "Timeout" in (cache.last_error or "")
        assert cache.stats.errors == 10 and cache.stats.hits == 0
    finally:
        redis_server.resume()
        await cache.aclose()
