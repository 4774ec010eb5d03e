"""A job as the stores keep it (docs/api/jobs.md), and what every store offers: ``job_store.MemoryJobStore`` (in
this process) and ``job_store_redis.RedisJobStore`` (shared by every replica).

A job is one record: its owner (the API key's name), the route and the request it runs, its status (queued, running,
succeeded, failed, cancelled), times, progress, the route's answer, and while it runs a lease: the runner holding it
and until when. A runner renews its lease every third of ``PCFJ_JOB_LEASE_S``; a replica that stops renewing (killed,
partitioned) loses the job once the lease lapses, and any replica's sweep claims it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

Renewal = Literal["ok", "cancelled", "lost"]
ACTIVE = frozenset({"queued", "running"})


class StoreUnavailable(Exception):
    """The job store (Redis) did not answer: the caller says 503, a sweep tries again later."""


@dataclass(slots=True)
class JobRecord:
    id: str
    owner: str
    endpoint: str
    request: bytes
    headers: dict[str, str]
    size: int
    status: str = "queued"
    created_ms: int = 0
    started_ms: int | None = None
    finished_ms: int | None = None
    attempts: int = 0
    runner: str | None = None
    lease_until_ms: int | None = None
    progress: dict[str, int] | None = None
    http_status: int | None = None
    response: bytes | None = None
    webhook_url: str | None = None
    webhook: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    """``admitted``, or refused for the count (``count``) or the bytes (``bytes``) of the owner's active jobs."""

    refused: Literal["count", "bytes"] | None
    active: int  # the owner's queued and running jobs before this one
    active_bytes: int  # their request bytes
    created_ms: int = 0

    @property
    def admitted(self) -> bool:
        return self.refused is None


class JobStore(Protocol):
    kind: str

    async def admit(self, job: JobRecord, max_jobs: int, max_bytes: int, ttl_s: float) -> Admission:
        """Store ``job`` (queued) if its owner's active jobs stay within both limits."""
        ...

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def claimable(self, limit: int) -> list[str]:
        """Ids of jobs that may be claimed now: queued, or running on a lapsed lease (oldest first)."""
        ...

    async def claim(
        self, job_id: str, runner: str, lease_s: float, max_attempts: int, exhausted: bytes
    ) -> JobRecord | None:
        """The job, now running under ``runner``'s lease, or None (not claimable). A job already started
        ``max_attempts`` times fails instead, with ``exhausted`` as its response (a job that kills its replica is not
        handed to the next one for ever)."""
        ...

    async def renew(self, job_id: str, runner: str, lease_s: float, progress: dict[str, int]) -> Renewal:
        """Extend the lease and record progress: "ok", "cancelled" (stop), or "lost" (another runner has it)."""
        ...

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
        """Record the end (only while ``runner`` holds the job); the record is then kept ``ttl_s`` more."""
        ...

    async def release(self, job_id: str, runner: str) -> None:
        """Give a running job back (this process is stopping): queued, claimable at once, the attempt not counted."""
        ...

    async def cancel(self, job_id: str) -> bool:
        """Cancel a queued or running job (its runner sees it at its next renewal); False if it had ended."""
        ...

    async def set_webhook(self, job_id: str, outcome: dict[str, Any]) -> None: ...
