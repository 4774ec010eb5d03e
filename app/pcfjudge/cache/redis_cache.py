"""The shared cache in Redis: one MGET per item, JSON values with a TTL, a lock per key for single flight, fail open.

Every Redis operation goes through ``run``: refused at once while the circuit breaker is open, otherwise bounded
by the socket timeouts (and an overall ``asyncio.timeout`` as a backstop), never retried by the client. Any failure
makes reads all-misses and writes no-ops, so a dead or slow Redis costs a request at most one short timeout per
operation until the breaker opens, and nothing after that.

Single flight across replicas (``claim``), one atomic script per attempt on ``<key>`` and ``<key>:lock`` (same hash
slot): return the stored answer if there is one, else ``SET <key>:lock <token> NX PX lock_ttl``. The winner makes
the call, renews the lock while the call runs (so a crashed holder's lock expires within ``lock_ttl``), stores the
answer, then deletes the lock. The others repeat the script with capped exponential backoff until it returns the
answer, or hands them the lock (the holder failed or crashed: they take over), or the request deadline passes.
"refresh" callers take the lock when it is free (so "use" callers wait for their fresh answer) but never wait.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import secrets
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from redis.exceptions import RedisError

from pcfjudge.cache.breaker import BreakerState, CircuitBreaker
from pcfjudge.cache.flight import Claim
from pcfjudge.cache.interface import PARSED, CacheValue, LayerStats
from pcfjudge.cache.redis_client import RedisClient, close
from pcfjudge.telemetry.hooks import NOOP, Observer

log = logging.getLogger(__name__)
T = TypeVar("T")

# KEYS = answer, lock; ARGV = token, lock ms, "1" to skip the answer check (refresh).
# Returns {1, answer} when answered, {2} when the lock is ours, {0} while someone else holds it.
_CLAIM = """
if ARGV[3] ~= '1' then
  local answer = redis.call('get', KEYS[1])
  if answer then return {1, answer} end
end
if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end
return {0}
"""
# KEYS = lock; ARGV = token, lock ms. Extends the lock only while we still hold it.
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
# KEYS = lock; ARGV = token. Deletes the lock only if we still hold it.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class RedisUnavailable(Exception):
    """Redis failed, timed out, or the breaker is open: the caller treats it as a miss / skips the write."""


def hash_tag(key: str) -> str:
    """The part of ``key`` Redis Cluster hashes: the first non-empty ``{…}``, else the whole key."""
    start = key.find("{")
    end = key.find("}", start + 1) if start >= 0 else -1
    return key[start + 1 : end] if end > start + 1 else key


class RedisCache:
    """Redis layer of the cache (see the module docstring); counters in ``stats`` and the attempt counts."""

    layer = "redis"

    def __init__(
        self,
        client: RedisClient,
        *,
        ttl_s: float,
        op_timeout_s: float = 0.5,
        lock_ttl_s: float = 10.0,
        breaker_failures: int = 3,
        breaker_cooldown_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        poll_s: tuple[float, float] = (0.01, 0.2),
        observer: Observer = NOOP,
    ) -> None:
        self.client = client
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self.breaker = CircuitBreaker(
            breaker_failures, breaker_cooldown_s, clock=clock, on_change=self._breaker_changed
        )
        self.op_timeout_s = op_timeout_s
        self.lock_ms = max(1, round(lock_ttl_s * 1000))
        self.poll_min_s, self.poll_max_s = poll_s
        self.observer = observer
        self.stats = LayerStats()
        self.attempts = 0  # operations sent to Redis
        self.failures = 0  # of which failed or timed out
        self.skipped = 0  # operations refused by the open breaker
        self.last_error: str | None = None

    async def run(self, op: Callable[[RedisClient], Awaitable[T]]) -> T:
        if not self.breaker.allow():
            self.skipped += 1
            raise RedisUnavailable("circuit breaker open")
        self.attempts += 1
        probe = self.breaker.state == "half_open"
        try:
            async with asyncio.timeout(self.op_timeout_s):
                result = await op(self.client)
        except Exception as exc:  # a cache never fails a request: anything Redis or the client raises fails open
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.breaker.failure()
            expected = isinstance(exc, RedisError | OSError | TimeoutError)
            log.log(logging.DEBUG if expected else logging.WARNING, "redis operation failed: %s", self.last_error)
            raise RedisUnavailable(self.last_error) from exc
        except BaseException:
            if probe:
                self.breaker.abandon()  # cancelled mid-probe: no verdict either way
            raise
        self.breaker.success()
        return result

    def _breaker_changed(self, state: BreakerState) -> None:
        if state == "open":
            log.warning("redis cache unavailable; serving without it for %.1fs", self.breaker.cooldown_s)
        elif state == "closed":
            log.warning("redis cache available again")
        self.observer.cache_breaker(state)

    async def get_many(self, keys: Sequence[str]) -> list[CacheValue | None]:
        """One MGET per hash tag (one per item), so the keys of each MGET share a Cluster slot."""
        out: list[CacheValue | None] = [None] * len(keys)
        groups: dict[str, list[int]] = defaultdict(list)
        for i, key in enumerate(keys):
            groups[hash_tag(key)].append(i)
        for indices in groups.values():
            names = [keys[i] for i in indices]
            try:
                blobs = await self._mget(names)
            except RedisUnavailable:
                self.stats.record(self.observer, self.layer, errors=len(indices))
                continue
            for i, blob in zip(indices, blobs, strict=True):
                out[i] = _decode(blob)
            hits = sum(out[i] is not None for i in indices)
            self.stats.record(self.observer, self.layer, hits=hits, misses=len(indices) - hits)
        return out

    async def _mget(self, names: list[str]) -> list[Any]:
        return await self.run(lambda c: c.mget(names))

    async def set(self, key: str, value: CacheValue) -> None:
        stored = {name: field for name, field in value.items() if name != PARSED}
        blob = json.dumps(stored, ensure_ascii=False, separators=(",", ":"))
        try:
            await self.run(lambda c: c.set(key, blob, px=self.ttl_ms))
        except RedisUnavailable:
            return

    async def claim(self, key: str, deadline: float, *, fresh: bool = False) -> Claim:
        """The stored answer, or the key's lock, or (Redis unavailable, deadline passed, refresh) neither."""
        lock, token = f"{key}:lock", secrets.token_hex(8)
        loop = asyncio.get_running_loop()
        delay = self.poll_min_s
        waited = False
        try:
            while True:
                reply = await self.run(lambda c: c.eval(_CLAIM, 2, key, lock, token, self.lock_ms, int(fresh)))
                if reply[0] == 1:  # answered (an unreadable answer is overwritten by calling again)
                    return Claim(value=_decode(reply[1]))
                if reply[0] == 2:
                    return Claim(lease=_Lease(self, lock, token))
                remaining = deadline - loop.time()
                if fresh or remaining <= 0:
                    return Claim()  # past the deadline the runner reports a timeout without calling
                if not waited:
                    waited = True
                    self.observer.single_flight_wait()
                await asyncio.sleep(min(remaining, delay * random.uniform(0.5, 1.0)))
                delay = min(delay * 2, self.poll_max_s)
        except RedisUnavailable:
            return Claim()

    async def status(self) -> dict[str, Any]:
        """Pings Redis (through the breaker, so a probe here can also close it)."""
        try:
            await self.run(lambda c: c.ping())
            status = "ok"
        except RedisUnavailable:
            status = "degraded"
        return {"layer": self.layer, "status": status, "breaker": self.breaker.state}

    async def aclose(self) -> None:
        await close(self.client)


class _Lease:
    """The holder's side of a key lock: renewed in the background until released."""

    def __init__(self, cache: RedisCache, lock: str, token: str) -> None:
        self.cache, self.lock, self.token = cache, lock, token
        self._renewer = asyncio.create_task(self._renew())

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.cache.lock_ms / 3000)
            try:
                held = await self.cache.run(lambda c: c.eval(_RENEW, 1, self.lock, self.token, self.cache.lock_ms))
            except RedisUnavailable:
                continue
            if not held:
                return

    async def release(self) -> None:
        self._renewer.cancel()
        try:
            await self.cache.run(lambda c: c.eval(_RELEASE, 1, self.lock, self.token))
        except RedisUnavailable:
            return  # the lock expires on its own


def _decode(blob: Any) -> CacheValue | None:
    if blob is None:
        return None
    try:
        value = json.loads(blob)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "answer" in value else None
