"""The shared cache in Redis: one MGET per item, JSON values with a TTL, a lock per key for single flight, fail open.

Every Redis operation goes through ``run`` (``redis_link``): refused at once while the circuit breaker is open,
otherwise bounded by the socket timeouts; the cache's own operations (all idempotent) retry a transient error up to
``PCFJ_REDIS_RETRIES`` times within the request's deadline. A failure that outlasts the retries makes reads all-misses
and writes no-ops, so a dead or slow Redis costs a request a bounded wait per operation until the breaker opens, and
nothing after that.

Single flight across replicas (``claim``), one atomic script per attempt on ``<key>`` and ``<key>:lock`` (same hash
slot): return the stored answer if there is one, else ``SET <key>:lock <token> NX PX lock_ttl`` (a retried attempt
whose first try took the lock finds its own token there, and has it). The winner makes the call, renews the lock
while the call runs (so a crashed holder's lock expires within ``lock_ttl``), stores the answer, then deletes the
lock. The others repeat the script with capped exponential backoff until it returns the answer, or hands them the
lock (the holder failed or crashed: they take over), or the request deadline passes. "refresh" callers take the
lock when it is free (so "use" callers wait for their fresh answer) but never wait.

What fail-open cost is counted: a claim Redis could not answer comes back ``alone`` (the caller calls on its own:
``single_flight_alone``), and a store that finds the key already stored, outside a refresh, is a call made twice
(``single_flight_duplicate``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from pcfjudge.cache.breaker import BreakerState, CircuitBreaker
from pcfjudge.cache.flight import Claim
from pcfjudge.cache.interface import PARSED, CacheValue, LayerStats
from pcfjudge.cache.redis_client import RedisClient
from pcfjudge.cache.redis_link import RedisLink, RedisUnavailable
from pcfjudge.telemetry.hooks import NOOP, Observer

__all__ = ["RedisCache", "RedisUnavailable", "hash_tag"]
log = logging.getLogger(__name__)

# KEYS = answer, lock; ARGV = token, lock ms, "1" to skip the answer check (refresh).
# Returns {1, answer} when answered, {2} when the lock is ours (taken now, or by this claim's earlier try),
# {0} while someone else holds it.
_CLAIM = """
if ARGV[3] ~= '1' then
  local answer = redis.call('get', KEYS[1])
  if answer then return {1, answer} end
end
if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return {2} end
if redis.call('get', KEYS[2]) == ARGV[1] then return {2} end
return {0}
"""
# KEYS = lock; ARGV = token, lock ms. Extends the lock only while we still hold it.
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
# KEYS = lock; ARGV = token. Deletes the lock only if we still hold it.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
# KEYS = answer; ARGV = value, ttl ms. Stores the value; returns 1 if an answer was stored already.
_STORE = "local old = redis.call('exists', KEYS[1]) redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return old"


def hash_tag(key: str) -> str:
    """The part of ``key`` Redis Cluster hashes: the first non-empty ``{…}``, else the whole key."""
    start = key.find("{")
    end = key.find("}", start + 1) if start >= 0 else -1
    return key[start + 1 : end] if end > start + 1 else key


class RedisCache(RedisLink):
    """Redis layer of the cache (see the module docstring); counters in ``stats`` and the link's attempt counts."""

    layer = "redis"

    def __init__(
        self,
        client: RedisClient,
        *,
        ttl_s: float,
        op_timeout_s: float = 0.5,
        retries: int = 2,
        lock_ttl_s: float = 10.0,
        breaker: CircuitBreaker | None = None,
        clock: Callable[[], float] = time.monotonic,
        poll_s: tuple[float, float] = (0.01, 0.2),
        observer: Observer = NOOP,
    ) -> None:
        breaker = breaker or CircuitBreaker(clock=clock)
        breaker.on_change = self._breaker_changed
        super().__init__(client, breaker, op_timeout_s=op_timeout_s, retries=retries)
        self.ttl_ms = max(1, round(ttl_s * 1000))
        self.lock_ms = max(1, round(lock_ttl_s * 1000))
        self.poll_min_s, self.poll_max_s = poll_s
        self.observer = observer
        self.stats = LayerStats()
        self.duplicates = 0  # answers stored that were stored already (outside a refresh): calls made twice

    def _breaker_changed(self, state: BreakerState) -> None:
        if state == "open":
            ops = self.breaker.min_ops
            log.warning(
                "redis cache unavailable (over %.0f%% of at least %d operations failed within %.0fs); serving "
                "without it for %.1fs",
                100 * self.breaker.failure_rate,
                ops,
                self.breaker.window_s,
                self.breaker.cooldown_s,
            )
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
        return await self.retried(lambda c: c.mget(names))

    async def set(self, key: str, value: CacheValue, *, fresh: bool = False) -> None:
        """Store ``value``; an answer stored already means the call was made twice, unless ``fresh`` (a refresh
        replaces the stored answer on purpose)."""
        stored = {name: field for name, field in value.items() if name != PARSED}
        blob = json.dumps(stored, ensure_ascii=False, separators=(",", ":"))
        try:
            existed = await self.retried(lambda c: c.eval(_STORE, 1, key, blob, self.ttl_ms))
        except RedisUnavailable:
            return
        if existed and not fresh:
            self.duplicates += 1
            self.observer.single_flight_duplicate()

    async def claim(self, key: str, deadline: float, *, fresh: bool = False) -> Claim:
        """The stored answer, or the key's lock, or neither: the deadline passed, or a refresh found the key locked,
        or Redis did not answer within the retries (``alone``: the caller calls on its own)."""
        lock, token = f"{key}:lock", secrets.token_hex(8)
        loop = asyncio.get_running_loop()
        delay = self.poll_min_s
        waited = False
        args = (_CLAIM, 2, key, lock, token, self.lock_ms, int(fresh))

        try:
            while True:
                reply = await self.retried(lambda c: c.eval(*args), deadline)
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
            return Claim(alone=True)

    async def status(self) -> dict[str, Any]:
        """Pings Redis (through the breaker, so a probe here can also close it)."""
        try:
            await self.run(lambda c: c.ping())
            status = "ok"
        except RedisUnavailable:
            status = "degraded"
        return {"layer": self.layer, "status": status, "breaker": self.breaker.state}


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
            await self.cache.retried(lambda c: c.eval(_RELEASE, 1, self.lock, self.token))
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
