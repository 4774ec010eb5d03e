"""A job as ``GET /v1/jobs/{id}`` (and its webhook) shows it: ``schemas.jobs_schema.Job``, serialised once, with the
route's own answer embedded as the route sent it (its bytes, not a re-encoding)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from pcfjudge.cache.job_record import JobRecord
from pcfjudge.errors import ApiError


def unavailable() -> ApiError:
    """What a job route answers while the job store (Redis) is down."""
    detail = "the job store (Redis) is not answering; retry shortly"
    return ApiError("jobs_unavailable", detail, headers={"Retry-After": "5"})


def timestamp(ms: int | None) -> str | None:
    """RFC 3339 in UTC with milliseconds, e.g. 2026-03-01T12:00:00.000Z."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def location(job_id: str, root_path: str = "") -> str:
    return f"{root_path.rstrip('/')}/v1/jobs/{job_id}"


def job_data(record: JobRecord) -> dict[str, Any]:
    webhook = None
    if record.webhook_url is not None:
        webhook = record.webhook or {
            "url": record.webhook_url,
            "delivered": None,
            "attempts": 0,
            "status": None,
            "error": None,
        }
    return {
        "id": record.id,
        "status": record.status,
        "endpoint": record.endpoint,
        "created_at": timestamp(record.created_ms),
        "started_at": timestamp(record.started_ms),
        "finished_at": timestamp(record.finished_ms),
        "attempts": record.attempts,
        "progress": record.progress,
        "http_status": record.http_status,
        "response": orjson.Fragment(record.response) if record.response else None,
        "webhook": webhook,
    }


def job_json(record: JobRecord) -> bytes:
    return orjson.dumps(job_data(record))
