"""A job as the stores keep it (docs/api/jobs.md), and what every store offers: ``job_store.MemoryJobStore`` (in
this process) and ``job_store_redis.RedisJobStore`` (shared by every replica).

A job is one record: its owner (the API key's name), the route and the request it runs, its status (queued, running,
succeeded, failed, cancelled), times, progress, the route's answer, and while it runs a lease: the runner holding it
and until when. A runner renews its lease every third of ``PCFJ_JOB_LEASE_S``; a replica that stops renewing (killed,
partitioned) loses the job once the lease lapses, and any replica's sweep claims it again.

What a job keeps, and what its owner is charged for (``PCFJ_MAX_JOB_BYTES_PER_KEY``) until it expires: while queued or
running its request (stored compact, ``compact_json``) and the preferences sent with it; once ended only its result,
the request dropped (``request_bytes``, ``result_bytes``; each plus ``RECORD_BYTES`` for the rest of the record).

Queued jobs are taken fairly between owners (start-time fair queueing, ``fair_tag``): each owner's jobs get tags
1 apart, starting from the tag of the job most recently taken, and the lowest tag goes first; so one owner's backlog
of a hundred jobs delays another owner's first job by at most one job, not a hundred.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Renewal = Literal["ok", "cancelled", "lost"]
ACTIVE = frozenset({"queued", "running"})
RECORD_BYTES = 256
"""What a record holds besides its request or result (ids, times, progress, a webhook's outcome, index entries)."""


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


def compact_json(value: Any) -> bytes:
    """``value`` (parsed JSON) as the store keeps it: compact, UTF-8 (escaped only where UTF-8 cannot carry it)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate: escaped, as it came
        return json.dumps(value, separators=(",", ":")).encode()


def request_bytes(job: JobRecord) -> int:
    """What a queued or running job keeps: its request, its preferences, its webhook URL and the record."""
    return RECORD_BYTES + len(job.request) + len(json.dumps(job.headers)) + len(job.webhook_url or "")


def result_bytes(response: bytes | None, webhook_url: str | None) -> int:
    """What an ended job keeps: its result (the request is dropped), its webhook URL and the record."""
    return RECORD_BYTES + len(response or b"") + len(webhook_url or "")


@dataclass(frozen=True, slots=True)
class Ending:
    """How a job ended: its status (succeeded, failed), the route's HTTP status and answer, its last progress."""

    status: str
    http_status: int | None
    response: bytes | None
    progress: dict[str, int] | None = None


@dataclass(frozen=True, slots=True)
class Admission:
    """``admitted``, or refused: for the count of the owner's queued and running jobs (``count``), for the bytes all
    the owner's jobs keep (``bytes``), or because the in-process store is full (``store``)."""

    refused: Literal["count", "bytes", "store"] | None
    active: int  # the owner's queued and running jobs before this one
    kept_bytes: int  # the bytes all the owner's jobs keep (queued, running and ended)
    created_ms: int = 0

    @property
    def admitted(self) -> bool:
        return self.refused is None


class JobStore(Protocol):
    kind: str

    async def admit(self, job: JobRecord, max_jobs: int, max_bytes: int, ttl_s: float) -> Admission:
        """Store ``job`` (queued; ``job.size`` bytes, ``request_bytes``) if its owner stays within both limits:
        ``max_jobs`` queued or running, ``max_bytes`` kept by all its jobs."""
        ...

    async def get(self, job_id: str) -> JobRecord | None: ...

    async def claimable(self, limit: int) -> list[str]:
        """Ids of jobs that may be claimed now: running on a lapsed lease first, then queued ones, fairly between
        owners (lowest ``fair_tag`` first)."""
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

    async def finish(self, job_id: str, runner: str, end: Ending, ttl_s: float) -> bool:
        """Record the end (only while ``runner`` holds the job); the record is then kept ``ttl_s`` more, without its
        request (``result_bytes``)."""
        ...

    async def release(self, job_id: str, runner: str) -> None:
        """Give a running job back (this process is stopping): queued, claimable at once, the attempt not counted."""
        ...

    async def cancel(self, job_id: str) -> bool:
        """Cancel a queued or running job (its runner sees it at its next renewal; its request is dropped); False if
        it had ended."""
        ...

    async def set_webhook(self, job_id: str, outcome: dict[str, Any]) -> None: ...


def fair_tag(last_taken: float, owner_next: float) -> float:
    """A newly queued job's place: after the owner's own queued jobs (``owner_next``: its last tag + 1), and not
    before the job most recently taken (``last_taken``: an owner that was idle starts from now, with no credit)."""
    return max(last_taken, owner_next)
