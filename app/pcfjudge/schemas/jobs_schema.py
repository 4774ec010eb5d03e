"""Jobs (docs/api/jobs.md): a judgment submitted now and collected later. ``POST /v1/jobs`` takes a ``JobRequest``
(or an ordinary judging request with ``Prefer: respond-async``) and answers 202 with a ``JobAccepted``;
``GET``/``DELETE /v1/jobs/{id}`` answer a ``Job``, whose ``response`` is, once it has ended, the ordinary route's
answer (its body, and ``http_status`` its status)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from pcfjudge.schemas.common import Strict

JobEndpoint = Annotated[str, Field(min_length=1, max_length=64)]
"""A route a job may run: the server checks it against its door list (``doors.door_list.JOB_ROUTES``, an unknown one
is a 422 naming them) and its OpenAPI document lists them as this field's ``enum``."""

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
FINISHED: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})

EXAMPLE_ID = "job_4f1c2a9e0b7d4c61a3e5f8092b6d7c1e"


class JobRequest(Strict):
    endpoint: JobEndpoint = Field(description="The route that judges the request.")
    request: dict[str, Any] = Field(
        description="The body that route takes, exactly as it would be sent to it (checked now: a bad one is that "
        "route's own 4xx, and no job is made). Not streamed: `stream` is refused.",
        examples=[{"question": "How many moons does Mars have?", "candidates": ["Two.", "One."], "k": 3}],
    )
    webhook_url: str | None = Field(
        default=None,
        min_length=1,
        max_length=2048,
        description="POSTed the final job, signed (X-Pcfjudge-Signature), when it succeeds or fails: http(s), not "
        "this service, a public address (unless the server's PCFJ_WEBHOOK_ALLOW allows it); needs "
        "PCFJ_WEBHOOK_SECRET on the server (else 422).",
        examples=["https://example.com/hooks/pcfjudge"],
    )


class JobAccepted(BaseModel):
    id: str = Field(description="The job's id.", examples=[EXAMPLE_ID])
    status: Literal["queued"] = Field(description="Always queued: poll `location` for the rest.", examples=["queued"])
    location: str = Field(description="Where to poll (also the Location header).", examples=[f"/v1/jobs/{EXAMPLE_ID}"])


class JobProgress(BaseModel):
    """The backend calls of the current attempt that have finished (a resumed job starts counting again; the calls
    an earlier attempt finished come back from the cache)."""

    calls_done: int = Field(description="Calls finished, from the cache or the judge.", examples=[4])
    cache_hits: int = Field(description="Of which served from the cache.", examples=[2])
    call_errors: int = Field(description="Of which failed (after the service's retries).", examples=[0])


class WebhookOutcome(BaseModel):
    url: str = Field(description="The webhook_url given.", examples=["https://example.com/hooks/pcfjudge"])
    delivered: bool | None = Field(
        description="Whether a 2xx came back; null: not yet tried (the job has not ended).", examples=[True]
    )
    attempts: int = Field(description="Deliveries tried (at most 4).", examples=[1])
    status: int | None = Field(
        description="The receiver's status once delivered (a 2xx); null otherwise: a failure says only its class.",
        examples=[200],
    )
    error: str | None = Field(
        description="Why the last try failed, if it did, by its class only: the receiver answered 4xx or 5xx, gave no "
        "answer, or its host is an address webhooks may not reach (refused, not tried again).",
        examples=[None],
    )


class Job(BaseModel):
    id: str = Field(description="The job's id.", examples=[EXAMPLE_ID])
    status: JobStatus = Field(
        description="queued → running → succeeded | failed; cancelled by DELETE. A job whose process stopped goes "
        "back to queued and another one resumes it.",
        examples=["succeeded"],
    )
    endpoint: JobEndpoint = Field(description="The route that judges it.")
    created_at: str = Field(description="Submitted (RFC 3339, UTC).", examples=["2026-03-01T12:00:00.000Z"])
    started_at: str | None = Field(description="First started running.", examples=["2026-03-01T12:00:00.020Z"])
    finished_at: str | None = Field(
        description="Succeeded, failed or was cancelled.", examples=["2026-03-01T12:00:03.480Z"]
    )
    attempts: int = Field(description="Times a process started running it (more than 1: resumed).", examples=[1])
    progress: JobProgress | None = Field(description="While running, and as it ended.")
    http_status: int | None = Field(
        description="The route's HTTP status once it ended (200, or its error's status); null while it runs or when "
        "cancelled.",
        examples=[200],
    )
    response: dict[str, Any] | None = Field(
        description="Once ended: the route's body, exactly as the route answers it (its error body when failed).",
        examples=[{"request_id": EXAMPLE_ID, "model": "sim:default", "winners": ["0"], "ranking": ["0", "1"]}],
    )
    webhook: WebhookOutcome | None = Field(description="The webhook, when one was given, and its delivery.")
