"""Per-key quotas as token buckets: in process, or in Redis shared by every replica (fail open, like the cache).

A bucket holds at most one minute's worth of tokens (``per_min``) and refills continuously at ``per_min / 60`` per
second. ``take(bucket, cost)`` spends ``cost`` tokens if the bucket has them, else says how long until it will; a
negative ``cost`` refunds (capped at the full bucket); ``force`` spends even what the bucket lacks (calls already made,
such as retries, are charged whatever is left: the bucket goes into debt and refills from there). In Redis one Lua script does the arithmetic atomically on one
key (``pcfj:quota:<bucket>``), with the server's clock, so replicas share one bucket per key. When Redis is down
(the cache's circuit breaker is open or an operation fails) the in-process bucket answers instead.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pcfjudge.cache.redis_cache import RedisCache, RedisUnavailable

# KEYS = bucket; ARGV = rate per second, capacity, cost, force (1/0). Returns {1, 0} when taken, {0, seconds to
# wait} when not.
_TAKE = """
local rate, capacity, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local force = ARGV[4] == '1'
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
local taken, wait = 1, 0
if cost <= tokens or force then
  tokens = math.min(capacity, tokens - cost)
else
  taken, wait = 0, (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return {taken, tostring(wait)}
"""


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after: float = 0.0  # seconds until the bucket holds ``cost`` tokens (inf: never, the cost exceeds it)


class Limiter(Protocol):
    async def take(self, bucket: str, cost: float, per_min: float, *, force: bool = False) -> Decision: ...


class MemoryLimiter:
    """Token buckets in this process (a single replica, or the fallback while Redis is down)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_buckets: int = 100_000) -> None:
        self.clock = clock
        self.max_buckets = max_buckets
        self._buckets: dict[str, tuple[float, float]] = {}  # bucket -> (tokens, at)

    async def take(self, bucket: str, cost: float, per_min: float, *, force: bool = False) -> Decision:
        return self.take_now(bucket, cost, per_min, force=force)

    def take_now(self, bucket: str, cost: float, per_min: float, *, force: bool = False) -> Decision:
        rate, capacity, now = per_min / 60.0, per_min, self.clock()
        tokens, at = self._buckets.get(bucket, (capacity, now))
        tokens = min(capacity, tokens + max(0.0, now - at) * rate)
        if force:
            self._buckets[bucket] = (min(capacity, tokens - cost), now)
            return Decision(True)
        if cost > capacity:
            return Decision(False, math.inf)
        if cost > tokens:
            self._buckets[bucket] = (tokens, now)
            return Decision(False, (cost - tokens) / rate)
        if len(self._buckets) >= self.max_buckets and bucket not in self._buckets:
            self._buckets.clear()  # bounded memory: unknown clients cannot grow it without limit
        self._buckets[bucket] = (min(capacity, tokens - cost), now)
        return Decision(True)


class RedisLimiter:
    """Token buckets in Redis shared by every replica; the in-process buckets answer while Redis is unavailable."""

    def __init__(self, redis: RedisCache, fallback: MemoryLimiter | None = None) -> None:
        self.redis = redis
        self.fallback = fallback or MemoryLimiter()

    async def take(self, bucket: str, cost: float, per_min: float, *, force: bool = False) -> Decision:
        if cost > per_min and not force:
            return Decision(False, math.inf)

        key = f"pcfj:quota:{bucket}"
        flag = 1 if force else 0
        try:
            taken, wait = await self.redis.run(lambda c: c.eval(_TAKE, 1, key, per_min / 60.0, per_min, cost, flag))
        except RedisUnavailable:
            return self.fallback.take_now(bucket, cost, per_min, force=force)
        return Decision(bool(int(taken)), float(wait))
