"""Jobs in this process (``MemoryJobStore``: one replica, one worker, without Redis), and the store the service
uses (``open_job_store``): Redis when the cache has it, so every replica sees every job, else this one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pcfjudge.cache.job_record import ACTIVE, Admission, Ending, JobRecord, JobStore, Renewal, fair_tag, result_bytes
from pcfjudge.cache.job_store_redis import RedisJobStore
from pcfjudge.cache.redis_cache import RedisCache

MEMORY_MAX_JOBS = 10_000
"""In process: jobs kept in all (the oldest ended ones are forgotten first); the per-key limits bound the rest."""
MEMORY_MAX_BYTES = 200_000_000
"""In process: bytes all jobs keep (PCFJ_MAX_JOB_STORE_BYTES); past it, the oldest ended ones are forgotten first."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def kept(record: JobRecord) -> int:
    """The bytes ``record`` keeps: its request while queued or running (``size``), else its result."""
    return record.size if record.status in ACTIVE else result_bytes(record.response, record.webhook_url)


class MemoryJobStore:
    """Jobs in this process: what one replica (one worker) without Redis sees. They end with the process."""

    kind = "memory"

    def __init__(
        self, clock: Callable[[], int] = _now_ms, max_jobs: int = MEMORY_MAX_JOBS, max_bytes: int = MEMORY_MAX_BYTES
    ) -> None:
        self.clock, self.max_jobs, self.max_bytes = clock, max_jobs, max_bytes
        self.jobs: dict[str, tuple[JobRecord, int]] = {}  # id -> (record, expiry ms)
        self.tags: dict[str, float] = {}  # queued id -> its fair tag
        self.next_tag: dict[str, float] = {}  # owner -> the tag its next job gets at the earliest
        self.last_taken = 0.0  # the tag of the job most recently claimed

    def _live(self, job_id: str) -> JobRecord | None:
        entry = self.jobs.get(job_id)
        if entry is None:
            return None
        if entry[1] <= self.clock():
            self._drop(job_id)
            return None
        return entry[0]

    def _drop(self, job_id: str) -> None:
        del self.jobs[job_id]
        self.tags.pop(job_id, None)

    def _expire(self, room: int) -> int:
        """Forget expired jobs, then the oldest ended ones while the store lacks ``room`` bytes or a place; the bytes
        all jobs keep afterwards."""
        now = self.clock()
        for job_id in [i for i, (_, expiry) in self.jobs.items() if expiry <= now]:
            self._drop(job_id)
        total = sum(kept(r) for r, _ in self.jobs.values())
        if len(self.jobs) >= self.max_jobs or total + room > self.max_bytes:
            ended = sorted((r.finished_ms or 0, i) for i, (r, _) in self.jobs.items() if r.status not in ACTIVE)
            for _, job_id in ended:
                if len(self.jobs) < self.max_jobs and total + room <= self.max_bytes:
                    break
                total -= kept(self.jobs[job_id][0])
                self._drop(job_id)
        self.next_tag = {owner: tag for owner, tag in self.next_tag.items() if tag > self.last_taken}
        return total

    def _end(self, record: JobRecord) -> None:
        """An ended job keeps its result only: the request and its preferences are dropped."""
        record.request, record.headers = b"", {}
        self.tags.pop(record.id, None)

    async def admit(self, job: JobRecord, max_jobs: int, max_bytes: int, ttl_s: float) -> Admission:
        total = self._expire(job.size)
        mine = [r for r, _ in self.jobs.values() if r.owner == job.owner]
        count, held = sum(r.status in ACTIVE for r in mine), sum(kept(r) for r in mine)
        if count >= max_jobs:
            return Admission("count", count, held)
        if held + job.size > max_bytes:
            return Admission("bytes", count, held)
        if len(self.jobs) >= self.max_jobs or total + job.size > self.max_bytes:
            return Admission("store", count, held)
        now = self.clock()
        self.jobs[job.id] = (replace(job, status="queued", created_ms=now), now + round(ttl_s * 1000))
        tag = fair_tag(self.last_taken, self.next_tag.get(job.owner, 0.0))
        self.tags[job.id], self.next_tag[job.owner] = tag, tag + 1
        return Admission(None, count, held, now)

    async def get(self, job_id: str) -> JobRecord | None:
        record = self._live(job_id)
        return replace(record) if record is not None else None

    async def claimable(self, limit: int) -> list[str]:
        now = self.clock()
        lapsed = sorted(
            (r.lease_until_ms or 0, i)
            for i, (r, expiry) in self.jobs.items()
            if expiry > now and r.status == "running" and (r.lease_until_ms or 0) < now
        )
        queued = sorted((tag, self.jobs[i][0].created_ms, i) for i, tag in self.tags.items() if self.jobs[i][1] > now)
        return ([i for _, i in lapsed] + [i for _, _, i in queued])[:limit]

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
            self._end(record)
            return None
        tag = self.tags.pop(job_id, None)
        if tag is not None:
            self.last_taken = max(self.last_taken, tag)
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

    async def finish(self, job_id: str, runner: str, end: Ending, ttl_s: float) -> bool:
        record = self._live(job_id)
        if record is None or record.status != "running" or record.runner != runner:
            return False
        now = self.clock()
        record.status, record.finished_ms, record.runner, record.lease_until_ms = end.status, now, None, None
        record.http_status, record.response, record.progress = end.http_status, end.response, end.progress
        self._end(record)
        self.jobs[job_id] = (record, now + round(ttl_s * 1000))
        return True

    async def release(self, job_id: str, runner: str) -> None:
        record = self._live(job_id)
        if record is not None and record.status == "running" and record.runner == runner:
            record.status, record.runner, record.lease_until_ms = "queued", None, None
            record.attempts -= 1
            self.tags[job_id] = self.last_taken - 1  # given back: first in line again

    async def cancel(self, job_id: str) -> bool:
        record = self._live(job_id)
        if record is None or record.status not in ACTIVE:
            return False
        record.status, record.finished_ms, record.runner, record.lease_until_ms = "cancelled", self.clock(), None, None
        self._end(record)
        return True

    async def set_webhook(self, job_id: str, outcome: dict[str, Any]) -> None:
        record = self._live(job_id)
        if record is not None:
            record.webhook = dict(outcome)


def open_job_store(shared: RedisCache | None, max_bytes: int = MEMORY_MAX_BYTES) -> JobStore:
    """Redis (the cache's shared layer, so its client, pool and breaker) when there is one, else in process (at most
    ``max_bytes`` in all: PCFJ_MAX_JOB_STORE_BYTES)."""
    if shared is None:
        return MemoryJobStore(max_bytes=max_bytes)

    return RedisJobStore(shared)
