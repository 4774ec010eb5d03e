"""Jobs in this process (``MemoryJobStore``: one replica, one worker, without Redis), and the store the service
uses (``open_job_store``): Redis when the cache has it, so every replica sees every job, else this one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pcfjudge.cache.job_record import ACTIVE, Admission, JobRecord, JobStore, Renewal

if TYPE_CHECKING:
    from pcfjudge.cache.redis_cache import RedisCache

MEMORY_MAX_JOBS = 10_000
"""In process: jobs kept in all (the oldest ended ones are forgotten first); the per-key limits bound the rest."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class MemoryJobStore:
    """Jobs in this process: what one replica (one worker) without Redis sees. They end with the process."""

    kind = "memory"

    def __init__(self, clock: Callable[[], int] = _now_ms, max_jobs: int = MEMORY_MAX_JOBS) -> None:
        self.clock, self.max_jobs = clock, max_jobs
        self.jobs: dict[str, tuple[JobRecord, int]] = {}  # id -> (record, expiry ms)

    def _live(self, job_id: str) -> JobRecord | None:
        entry = self.jobs.get(job_id)
        if entry is None:
            return None
        if entry[1] <= self.clock():
            del self.jobs[job_id]
            return None
        return entry[0]

    def _expire(self) -> None:
        now = self.clock()
        for job_id in [i for i, (_, expiry) in self.jobs.items() if expiry <= now]:
            del self.jobs[job_id]
        if len(self.jobs) >= self.max_jobs:
            ended = sorted((r.finished_ms or 0, i) for i, (r, _) in self.jobs.items() if r.status not in ACTIVE)
            for _, job_id in ended[: len(self.jobs) - self.max_jobs + 1]:
                del self.jobs[job_id]

    async def admit(self, job: JobRecord, max_jobs: int, max_bytes: int, ttl_s: float) -> Admission:
        self._expire()
        mine = [r for r, _ in self.jobs.values() if r.owner == job.owner and r.status in ACTIVE]
        count, total = len(mine), sum(r.size for r in mine)
        if count >= max_jobs:
            return Admission("count", count, total)
        if total + job.size > max_bytes or len(self.jobs) >= self.max_jobs:
            return Admission("bytes", count, total)
        now = self.clock()
        self.jobs[job.id] = (replace(job, status="queued", created_ms=now), now + round(ttl_s * 1000))
        return Admission(None, count, total, now)

    async def get(self, job_id: str) -> JobRecord | None:
        record = self._live(job_id)
        return replace(record) if record is not None else None

    async def claimable(self, limit: int) -> list[str]:
        now = self.clock()
        due = [
            (r.created_ms, i)
            for i, (r, expiry) in self.jobs.items()
            if expiry > now and (r.status == "queued" or (r.status == "running" and (r.lease_until_ms or 0) < now))
        ]
        return [i for _, i in sorted(due)[:limit]]

    async def claim(
        self, job_id: str, runner: str, lease_s: float, max_attempts: int, exhausted: bytes
    ) -> JobRecord | None:
        record, now = self._live(job_id), self.clock()
        if record is None:
            return None
        lapsed = record.status == "running" and (record.lease_until_ms or 0) < now
        if record.status != "queued" and not lapsed:
            return None
        if record.attempts >= max_attempts:
            record.status, record.finished_ms, record.http_status, record.response = "failed", now, 500, exhausted
            record.runner = record.lease_until_ms = None
            return None
        record.status, record.runner, record.lease_until_ms = "running", runner, now + round(lease_s * 1000)
        record.attempts += 1
        record.started_ms = record.started_ms or now
        return replace(record)

    async def renew(self, job_id: str, runner: str, lease_s: float, progress: dict[str, int]) -> Renewal:
        record = self._live(job_id)
        if record is not None and record.status == "cancelled":
            return "cancelled"
        if record is None or record.status != "running" or record.runner != runner:
            return "lost"
        record.lease_until_ms, record.progress = self.clock() + round(lease_s * 1000), dict(progress)
        return "ok"

    async def finish(
        self,
        job_id: str,
        runner: str,
        status: str,
        http_status: int | None,
        response: bytes | None,
        progress: dict[str, int] | None,
        ttl_s: float,
    ) -> bool:
        record = self._live(job_id)
        if record is None or record.status != "running" or record.runner != runner:
            return False
        now = self.clock()
        record.status, record.finished_ms, record.http_status, record.response = status, now, http_status, response
        record.progress, record.runner, record.lease_until_ms = progress, None, None
        self.jobs[job_id] = (record, now + round(ttl_s * 1000))
        return True

    async def release(self, job_id: str, runner: str) -> None:
        record = self._live(job_id)
        if record is not None and record.status == "running" and record.runner == runner:
            record.status, record.runner, record.lease_until_ms = "queued", None, None
            record.attempts -= 1

    async def cancel(self, job_id: str) -> bool:
        record = self._live(job_id)
        if record is None or record.status not in ACTIVE:
            return False
        record.status, record.finished_ms, record.runner, record.lease_until_ms = "cancelled", self.clock(), None, None
        return True

    async def set_webhook(self, job_id: str, outcome: dict[str, Any]) -> None:
        record = self._live(job_id)
        if record is not None:
            record.webhook = dict(outcome)


def open_job_store(shared: RedisCache | None) -> JobStore:
    """Redis (the cache's shared layer, so its client, pool and breaker) when there is one, else in process."""
    if shared is None:
        return MemoryJobStore()
    from pcfjudge.cache.job_store_redis import RedisJobStore  # with PCFJ_REDIS_URL only

    return RedisJobStore(shared)
