"""A fleet endpoint's rate budget: requests per minute, tokens per minute, calls at once, and provider blocks.

Counted in process (``MemoryBudget``), or in Redis by every replica (``RedisBudget``, with ``PCFJ_REDIS_URL``: one
Lua script per call, atomic, on the server's clock; the in-process budget answers while Redis is unavailable, as the
cache and the quotas do). A provider's limits belong to the account, not to one replica: counted in Redis, R replicas
together send what the endpoint takes, instead of each finding the limit by collecting 429s.

**Windows.** rpm and tpm are counted over a sliding minute in one-second slots. A slot counts until a whole minute
has passed since its *end*, so no 60-second span ever holds more than the limit (a provider counting any minute, or a
token bucket refilled per minute, is never overrun); the price is up to a second's worth of slack.

**Tokens.** A call is charged its estimated input tokens before it is made (``Ask.tokens``) and what it really spent
beyond that after (``spend``): never refunded, so the count errs high, never low.

**Calls at once.** ``max_parallel_requests`` is a set of leases, each expiring after the call's deadline at most, so
a replica that dies holding some gives them back.

**Blocks.** A 429's ``retry-after`` (or a response saying ``x-ratelimit-remaining-*`` is 0) blocks the endpoint for
that long, for every replica (``block``).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pcfjudge.cache.redis_cache import RedisCache, RedisUnavailable

WINDOW_S = 60  # rpm and tpm: per minute, as LiteLLM and the providers count them
PARALLEL_POLL_S = 0.05  # how soon a call waiting for a free call slot (max_parallel_requests) looks again


@dataclass(frozen=True, slots=True)
class Ask:
    """One call's request for budget on one endpoint."""

    endpoint: str
    rpm: int | None
    tpm: int | None
    parallel: int | None
    tokens: int  # estimated input tokens
    lease: str  # this call's lease (for ``parallel``; unique per call attempt)
    ttl_s: float  # the lease's longest life: the call's time left


@dataclass(frozen=True, slots=True)
class Grant:
    ok: bool
    wait_s: float = 0.0  # not ok: when to ask again (inf: never, the call alone exceeds the limit)
    reason: str = ""  # not ok: blocked, parallel, rpm or tpm


class Budget(Protocol):
    async def take(self, ask: Ask) -> Grant: ...

    async def release(self, endpoint: str, lease: str) -> None: ...

    async def spend(self, endpoint: str, tokens: int) -> None: ...

    async def block(self, endpoint: str, seconds: float) -> None: ...


def _wait(slots: dict[int, int], used: int, cost: int, limit: int, now: float) -> float:
    """Seconds until ``cost`` more fits under ``limit`` as the oldest slots leave the window."""
    if cost > limit:
        return math.inf
    freed = 0
    for second in sorted(slots):
        freed += slots[second]
        if used - freed + cost <= limit:
            return max(0.0, second + 1 + WINDOW_S - now)
    return float(WINDOW_S)


class MemoryBudget:
    """The budget counted in this process (one replica, or the fallback while Redis is down)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._counts: dict[tuple[str, str], dict[int, int]] = {}  # (endpoint, rpm|tpm) -> second -> count
        self._leases: dict[str, dict[str, float]] = {}  # endpoint -> lease -> expiry
        self._blocked: dict[str, float] = {}  # endpoint -> until

    async def take(self, ask: Ask) -> Grant:
        return self.take_now(ask)

    def take_now(self, ask: Ask) -> Grant:
        now = self.clock()
        until = self._blocked.get(ask.endpoint, 0.0)
        if until > now:
            return Grant(False, until - now, "blocked")
        leases = self._leases.setdefault(ask.endpoint, {})
        if ask.parallel:
            for lease in [lease for lease, expiry in leases.items() if expiry <= now]:
                del leases[lease]
            if len(leases) >= ask.parallel:
                return Grant(False, PARALLEL_POLL_S, "parallel")
        for kind, limit, cost in (("rpm", ask.rpm, 1), ("tpm", ask.tpm, ask.tokens)):
            if limit:
                slots = self._slots(ask.endpoint, kind, now)
                used = sum(slots.values())
                if used + cost > limit:
                    return Grant(False, _wait(slots, used, cost, limit, now), kind)
        second = math.floor(now)
        for kind, limit, cost in (("rpm", ask.rpm, 1), ("tpm", ask.tpm, ask.tokens)):
            if limit:
                slots = self._slots(ask.endpoint, kind, now)
                slots[second] = slots.get(second, 0) + cost
        if ask.parallel:
            leases[ask.lease] = now + ask.ttl_s
        return Grant(True)

    def _slots(self, endpoint: str, kind: str, now: float) -> dict[int, int]:
        slots = self._counts.setdefault((endpoint, kind), {})
        for second in [s for s in slots if s + 1 + WINDOW_S <= now]:
            del slots[second]
        return slots

    async def release(self, endpoint: str, lease: str) -> None:
        self._leases.get(endpoint, {}).pop(lease, None)

    async def spend(self, endpoint: str, tokens: int) -> None:
        if tokens > 0 and (endpoint, "tpm") in self._counts:
            now = self.clock()
            slots = self._slots(endpoint, "tpm", now)
            second = math.floor(now)
            slots[second] = slots.get(second, 0) + tokens

    async def block(self, endpoint: str, seconds: float) -> None:
        if seconds > 0:
            self._blocked[endpoint] = max(self._blocked.get(endpoint, 0.0), self.clock() + seconds)


# KEYS = rpm slots, tpm slots, block, leases (one hash tag: one Cluster slot); ARGV = rpm, tpm, tokens, parallel
# (0: no limit), lease, lease ttl ms, window. Returns {1} when taken, {0, seconds to wait, reason} when not.
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local second = math.floor(now)
local rpm, tpm, tokens, parallel = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local window = tonumber(ARGV[7])
local blocked = redis.call('PTTL', KEYS[3])
if blocked > 0 then return {0, tostring(blocked / 1000), 'blocked'} end
if parallel > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  if redis.call('ZCARD', KEYS[4]) >= parallel then return {0, '0.05', 'parallel'} end
end
local function check(key, limit, cost, kind)
  if limit <= 0 then return nil end
  local flat = redis.call('HGETALL', key)
  local used, slots = 0, {}
  for i = 1, #flat, 2 do
    local s, n = tonumber(flat[i]), tonumber(flat[i + 1])
    if s + 1 + window <= now then redis.call('HDEL', key, flat[i]) else used = used + n; slots[#slots + 1] = {s, n} end
  end
  if used + cost <= limit then return nil end
  if cost > limit then return {0, 'inf', kind} end
  table.sort(slots, function(a, b) return a[1] < b[1] end)
  local freed = 0
  for _, slot in ipairs(slots) do
    freed = freed + slot[2]
    if used - freed + cost <= limit then return {0, tostring(math.max(0, slot[1] + 1 + window - now)), kind} end
  end
  return {0, tostring(window), kind}
end
local refused = check(KEYS[1], rpm, 1, 'rpm') or check(KEYS[2], tpm, tokens, 'tpm')
if refused then return refused end
for i, limit in ipairs({rpm, tpm}) do
  if limit > 0 then
    redis.call('HINCRBY', KEYS[i], second, i == 1 and 1 or tokens)
    redis.call('EXPIRE', KEYS[i], window + 2)
  end
end
if parallel > 0 then
  redis.call('ZADD', KEYS[4], now + tonumber(ARGV[6]) / 1000, ARGV[5])
  redis.call('PEXPIRE', KEYS[4], tonumber(ARGV[6]) + 1000)
end
return {1}
"""

# KEYS = tpm slots; ARGV = tokens, window. More tokens spent, in this second's slot (only if tpm is counted).
_SPEND = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = redis.call('TIME')
redis.call('HINCRBY', KEYS[1], t[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]) + 2)
return 1
"""


class RedisBudget:
    """The budget in Redis, shared by every replica (``pcfj:fleet:{<endpoint>}:*``); memory while it is down."""

    def __init__(self, redis: RedisCache, fallback: MemoryBudget | None = None) -> None:
        self.redis = redis
        self.fallback = fallback or MemoryBudget()

    @staticmethod
    def keys(endpoint: str) -> list[str]:
        return [f"pcfj:fleet:{{{endpoint}}}:{part}" for part in ("rpm", "tpm", "block", "leases")]

    async def take(self, ask: Ask) -> Grant:
        args = (ask.rpm or 0, ask.tpm or 0, ask.tokens, ask.parallel or 0, ask.lease, max(1, round(ask.ttl_s * 1000)))
        try:
            found = await self.redis.run(lambda c: c.eval(_TAKE, 4, *self.keys(ask.endpoint), *args, WINDOW_S))
        except RedisUnavailable:
            return self.fallback.take_now(ask)
        if int(found[0]) == 1:
            return Grant(True)
        reason = found[2].decode() if isinstance(found[2], bytes) else str(found[2])
        return Grant(False, float(found[1]), reason)

    async def release(self, endpoint: str, lease: str) -> None:
        await self.fallback.release(endpoint, lease)
        with contextlib.suppress(RedisUnavailable):  # else the lease expires with the call's deadline
            await self.redis.run(lambda c: c.zrem(self.keys(endpoint)[3], lease))

    async def spend(self, endpoint: str, tokens: int) -> None:
        if tokens <= 0:
            return
        try:
            await self.redis.run(lambda c: c.eval(_SPEND, 1, self.keys(endpoint)[1], tokens, WINDOW_S))
        except RedisUnavailable:
            await self.fallback.spend(endpoint, tokens)

    async def block(self, endpoint: str, seconds: float) -> None:
        await self.fallback.block(endpoint, seconds)
        if seconds <= 0:
            return
        ms = max(1, round(seconds * 1000))
        with contextlib.suppress(RedisUnavailable):  # blocked in this process still
            await self.redis.run(lambda c: c.set(self.keys(endpoint)[2], b"1", px=ms))
