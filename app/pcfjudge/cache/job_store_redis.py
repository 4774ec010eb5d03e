"""Jobs in Redis, shared by every replica (the record and its lease: ``job_record``), through the cache's
fail-fast client and circuit breaker:

    pcfj:job:{<id>}            hash: the record (expires PCFJ_JOB_TTL_S after submission, again after it ends); its
                               request and preferences are dropped when it ends
    pcfj:jobs:active           sorted set: ids of running jobs, scored by when their lease lapses (claimable again),
                               so a sweep reads only those due
    pcfj:jobs:{queue}:queued   sorted set: ids of queued jobs, scored by their fair tag (``job_record.fair_tag``)
    pcfj:jobs:{queue}:tags     hash: owner → the tag its next job gets at the earliest; ":v" → the tag last taken
    pcfj:jobs:owner:{<owner>}  hash: id → "<bytes kept>:<expiry ms>:<q|e>" of every job the owner keeps, queued or
                               running (q: its request) and ended (e: its result), for the per-key limits (an entry
                               past its expiry no longer counts, whatever became of it)

Every change is one Lua script on one key, or on the two keys of one hash tag (Redis Cluster needs no cross-slot
script), and uses Redis's clock (``TIME``), so a lease means the same on every replica. The record is the truth; the
indexes are kept by the store and repaired by whoever finds them stale. Redis down: ``StoreUnavailable`` (the routes
answer 503).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pcfjudge.cache import job_redis_scripts as lua
from pcfjudge.cache.job_record import Admission, Ending, JobRecord, Renewal, StoreUnavailable
from pcfjudge.cache.redis_cache import RedisCache, RedisUnavailable

T = TypeVar("T")
ACTIVE_KEY = "pcfj:jobs:active"
QUEUE_KEY = "pcfj:jobs:{queue}:queued"
TAGS_KEY = "pcfj:jobs:{queue}:tags"


def job_key(job_id: str) -> str:
    return f"pcfj:job:{{{job_id}}}"


def owner_key(owner: str) -> str:
    return f"pcfj:jobs:owner:{{{owner}}}"


class RedisJobStore:
    """Jobs in Redis, shared by every replica (see the module docstring)."""

    kind = "redis"

    def __init__(self, redis: RedisCache) -> None:
        self.redis = redis

    async def _run(self, op: Callable[[Any], Awaitable[T]]) -> T:
        try:
            return await self.redis.run(op)
        except RedisUnavailable as exc:
            raise StoreUnavailable(str(exc)) from None

    async def _eval(self, script: str, key: str, *args: Any) -> Any:
        return await self._run(lambda c: c.eval(script, 1, key, *args))

    async def admit(self, job: JobRecord, max_jobs: int, max_bytes: int, ttl_s: float) -> Admission:
        ttl_ms = max(1, round(ttl_s * 1000))
        code, count, total, now = await self._eval(
            lua.ADMIT, owner_key(job.owner), job.id, job.size, max_jobs, max_bytes, ttl_ms
        )
        count, total, now = int(count), int(total), int(now)
        if int(code) != 1:
            return Admission("count" if int(code) == 0 else "bytes", count, total)
        fields: dict[str, str | bytes] = {
            "owner": job.owner,
            "endpoint": job.endpoint,
            "request": job.request,
            "headers": json.dumps(job.headers),
            "size": str(job.size),
            "status": "queued",
            "created_ms": str(now),
            "attempts": "0",
        }
        if job.webhook_url is not None:
            fields["webhook_url"] = job.webhook_url
        pairs = [part for item in fields.items() for part in item]
        try:
            await self._eval(lua.CREATE, job_key(job.id), ttl_ms, *pairs)
            await self._queue(lua.ENQUEUE, job.id, job.owner)
        except StoreUnavailable:
            await self._forget(job.id, job.owner)
            raise
        return Admission(None, count, total, now)

    async def _queue(self, script: str, *args: Any) -> Any:
        return await self._run(lambda c: c.eval(script, 2, QUEUE_KEY, TAGS_KEY, *args))

    async def get(self, job_id: str) -> JobRecord | None:
        raw: dict[bytes, bytes] = await self._run(lambda c: c.hgetall(job_key(job_id)))
        return _record(job_id, raw) if raw and b"status" in raw else None

    async def claimable(self, limit: int) -> list[str]:
        lapsed = [_text(i) for i in await self._eval(lua.DUE, ACTIVE_KEY, limit)]
        if len(lapsed) >= limit:
            return lapsed
        queued = [_text(i) for i in await self._run(lambda c: c.zrange(QUEUE_KEY, 0, limit - len(lapsed) - 1))]
        return lapsed + [i for i in queued if i not in lapsed]

    async def claim(
        self, job_id: str, runner: str, lease_s: float, max_attempts: int, exhausted: bytes
    ) -> JobRecord | None:
        lease_ms = max(1, round(lease_s * 1000))
        code, owner, value, ttl = await self._eval(
            lua.CLAIM, job_key(job_id), runner, lease_ms, max_attempts, exhausted
        )
        code, owner = int(code), _text(owner)
        if code in (1, 2):  # the index's score follows the lease, so the next sweeps skip it until it lapses
            await self._run(lambda c: c.zadd(ACTIVE_KEY, {job_id: int(value)}))
            await self._queue(lua.DEQUEUE, job_id)
        if code == 3:
            await self._ended(job_id, owner, int(value), int(ttl))
        elif code in (0, -1):
            await self._forget(job_id, None)  # the owner entry of an ended job stays: it keeps its result
        return await self.get(job_id) if code == 1 else None

    async def renew(self, job_id: str, runner: str, lease_s: float, progress: dict[str, int]) -> Renewal:
        lease_ms = max(1, round(lease_s * 1000))
        reply = await self._eval(lua.RENEW, job_key(job_id), runner, lease_ms, json.dumps(progress))
        code = int(reply[0])
        if code == 1:
            await self._run(lambda c: c.zadd(ACTIVE_KEY, {job_id: int(reply[1])}, xx=True))
            return "ok"
        return "cancelled" if code == 0 else "lost"

    async def finish(self, job_id: str, runner: str, end: Ending, ttl_s: float) -> bool:
        ttl_ms = max(1, round(ttl_s * 1000))
        done, owner, size = await self._eval(
            lua.FINISH,
            job_key(job_id),
            runner,
            end.status,
            "" if end.http_status is None else str(end.http_status),
            end.response or b"",
            json.dumps(end.progress) if end.progress is not None else "",
            ttl_ms,
        )
        if int(done):
            await self._ended(job_id, _text(owner), int(size), ttl_ms)
        return bool(int(done))

    async def release(self, job_id: str, runner: str) -> None:
        if int(await self._eval(lua.RELEASE, job_key(job_id), runner)):
            await self._run(lambda c: c.zrem(ACTIVE_KEY, job_id))
            await self._queue(lua.REQUEUE, job_id)

    async def cancel(self, job_id: str) -> bool:
        done, owner, size, ttl = await self._eval(lua.CANCEL, job_key(job_id))
        if int(done):
            await self._ended(job_id, _text(owner), int(size), int(ttl))
        return bool(int(done))

    async def set_webhook(self, job_id: str, outcome: dict[str, Any]) -> None:
        await self._eval(lua.SET_IF_EXISTS, job_key(job_id), "webhook", json.dumps(outcome))

    async def _ended(self, job_id: str, owner: str, size: int, ttl_ms: int) -> None:
        """An ended job: out of the queue and the lease index; its owner keeps ``size`` bytes for ``ttl_ms``."""
        try:
            await self._forget(job_id, None)
            if owner and ttl_ms > 0:
                await self._eval(lua.KEEP, owner_key(owner), job_id, size, ttl_ms)
        except StoreUnavailable:
            return  # the admission's entry counts the request's bytes until it expires

    async def _forget(self, job_id: str, owner: str | None) -> None:
        """Take a job out of the indexes (its owner's too, when given); an index left stale is repaired by the next
        reader."""
        try:
            await self._run(lambda c: c.zrem(ACTIVE_KEY, job_id))
            await self._run(lambda c: c.zrem(QUEUE_KEY, job_id))
            if owner:
                await self._run(lambda c: c.hdel(owner_key(owner), job_id))
        except StoreUnavailable:
            return


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _record(job_id: str, raw: dict[bytes, bytes]) -> JobRecord:
    text = {k.decode(): v for k, v in raw.items()}

    def string(name: str) -> str | None:
        value = text.get(name)
        return value.decode() if value else None

    def integer(name: str) -> int | None:
        value = string(name)
        return int(float(value)) if value else None

    def loaded(name: str) -> Any:
        value = string(name)
        return json.loads(value) if value else None

    return JobRecord(
        id=job_id,
        owner=string("owner") or "",
        endpoint=string("endpoint") or "",
        request=text.get("request", b""),
        headers=loaded("headers") or {},
        size=integer("size") or 0,
        status=string("status") or "queued",
        created_ms=integer("created_ms") or 0,
        started_ms=integer("started_ms"),
        finished_ms=integer("finished_ms"),
        attempts=integer("attempts") or 0,
        runner=string("runner"),
        lease_until_ms=integer("lease_until"),
        progress=loaded("progress"),
        http_status=integer("http_status"),
        response=text.get("response") or None,
        webhook_url=string("webhook_url"),
        webhook=loaded("webhook"),
    )
