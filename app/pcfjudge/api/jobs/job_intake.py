"""Submitting a job, at either door (docs/api/jobs.md): ``POST /v1/jobs`` with ``{"endpoint", "request",
"webhook_url"}``, or an ordinary judging route with ``Prefer: respond-async`` (RFC 7240; the webhook then comes in
``X-Pcfjudge-Webhook``).

Before anything is stored the request gets its route's own checks (``doors.door_list.JOB_ROUTES``): its request model
(the same 400/422 bodies the route answers), then its front door's checks that precede any work (limits, model
allowlist, caps, deadline: its plan), and a job never streams. A request that passes is stored (queued) within the
owner's limits, 429/413 naming them, and answered 202 with its id and ``Location``. What the route can only find out by judging (a quota spent, a failed
backend) ends the job ``failed`` with the route's own error body.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any

import orjson
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from pcfjudge import context
from pcfjudge.api.jobs import webhooks
from pcfjudge.api.jobs.job_runner import JobRunner
from pcfjudge.api.jobs.job_view import location, unavailable
from pcfjudge.api.jobs.webhook_address import Policy
from pcfjudge.api.middleware.respond_async import preference
from pcfjudge.cache.job_record import Admission, JobRecord, StoreUnavailable, compact_json, request_bytes
from pcfjudge.doors.anytime import answer_deadline
from pcfjudge.doors.door_list import JOB_ROUTES
from pcfjudge.errors import ApiError, client_error
from pcfjudge.http.read_body import body_size, sized
from pcfjudge.services import Services
from pcfjudge.settings import JobSettings

WEBHOOK_HEADER = "X-Pcfjudge-Webhook"
NOT_STREAMED = "a job's result is one JSON body: drop stream (poll the job, or give a webhook)"


@dataclass(frozen=True, slots=True)
class Submission:
    endpoint: str
    body: Any  # the request, parsed
    raw: bytes  # the request as stored and sent to the route
    headers: dict[str, str]  # sent with it: the caller's other preferences (Prefer: wait=…)
    webhook_url: str | None
    loc: tuple[str, ...]  # where the request sits in what was submitted (error locations)
    webhook_field: str


# ── the routes' checks before any work ───────────────────────────────────────────────────────────────────────────


def check(services: Services, sub: Submission) -> Any:
    """The route's request model, then its checks before any work (how it is answered: a job never streams, its
    deadline one the route would take; then its plan): its own 4xx if it would refuse the request. The plan."""
    _, route = JOB_ROUTES[sub.endpoint]
    try:
        body = route.request.model_validate(sub.body, from_attributes=True)  # as FastAPI validates a JSON body
    except ValidationError as exc:
        errors = [{**e, "loc": (*sub.loc, *e["loc"])} for e in exc.errors()]
        raise RequestValidationError(errors) from None
    options = route.answering(body)
    if options.stream:
        raise client_error(route.stream_field, NOT_STREAMED)
    answer_deadline(services.settings.fanout, options.deadline_ms, sub.headers.get("prefer"))
    return route.plan(services, body)


# ── the two doors ────────────────────────────────────────────────────────────────────────────────────────────────


def other_preferences(prefer: str | None) -> str | None:
    """``Prefer`` without respond-async (what the route still reads: wait=…)."""
    kept = [p.strip() for p in (prefer or "").split(",") if p.strip() and preference(p) != "respond-async"]
    return ", ".join(kept) or None


def from_prefer(endpoint: str, raw: bytes, headers: Mapping[str, str]) -> Submission:
    """An ordinary route's request sent with ``Prefer: respond-async``: its body read as FastAPI reads it."""
    body: Any = raw
    kind = headers.get("content-type")
    if not kind or _json_type(kind):
        if not raw:
            raise RequestValidationError(
                [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
            )
        try:
            body = json.loads(raw)
        except ValueError as exc:
            position, message = getattr(exc, "pos", 0), getattr(exc, "msg", str(exc))
            error = {"type": "json_invalid", "loc": ("body", position), "msg": "JSON decode error", "input": {}}
            raise RequestValidationError([{**error, "ctx": {"error": message}}]) from None
    preferences = other_preferences(headers.get("prefer"))
    return Submission(
        endpoint=endpoint,
        body=body,
        raw=raw if isinstance(body, bytes) else compact_json(body),  # kept compact, not as sent (padding and all)
        headers={"prefer": preferences} if preferences else {},
        webhook_url=headers.get(WEBHOOK_HEADER.lower()),
        loc=("body",),
        webhook_field=WEBHOOK_HEADER,
    )


def from_jobs_route(endpoint: str, request: dict[str, Any], webhook_url: str | None) -> Submission:
    """``POST /v1/jobs``: the request stored as compact JSON (no preferences: its deadline goes in the body)."""
    if endpoint not in JOB_ROUTES:
        raise client_error("endpoint", f"{endpoint!r} does not run as a job; one of: {', '.join(JOB_ROUTES)}")
    return Submission(endpoint, request, compact_json(request), {}, webhook_url, ("body", "request"), "webhook_url")


def _json_type(content_type: str) -> bool:
    message = Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


# ── admission ────────────────────────────────────────────────────────────────────────────────────────────────────


def new_id() -> str:
    return f"job_{secrets.token_hex(16)}"


def refusal(admission: Admission, size: int, s: JobSettings) -> ApiError:
    """Why a job was not stored, naming the limit and the way out."""
    if admission.refused == "count":
        detail = (
            f"this API key has {admission.active} queued or running jobs; at most {s.max_jobs_per_key} "
            "(PCFJ_MAX_JOBS_PER_KEY); wait for one to end, or cancel one"
        )
        return ApiError("too_many_jobs", detail, headers={"Retry-After": "5"})
    if admission.refused == "bytes":
        detail = (
            f"this job keeps {size} bytes and this API key's jobs (queued, running, and ended ones until they expire "
            f"after PCFJ_JOB_TTL_S) keep {admission.kept_bytes}; at most {s.max_job_bytes_per_key} bytes in all "
            "(PCFJ_MAX_JOB_BYTES_PER_KEY); send a smaller request, or wait for jobs to end or expire"
        )
        return ApiError("jobs_too_large", detail)
    detail = (
        f"this replica's jobs fill its job store ({s.max_job_store_bytes} bytes in all, PCFJ_MAX_JOB_STORE_BYTES); "
        "retry shortly (or the operator can give the service Redis: PCFJ_REDIS_URL)"
    )
    return ApiError("jobs_full", detail, headers={"Retry-After": "5"})


async def submit(services: Services, sub: Submission, request: Request, runner: JobRunner) -> Response:
    """Check, store and acknowledge one job: 202 with ``{"id", "status": "queued", "location"}``; its plan is kept
    for this replica's runner (another replica that claims it plans its stored request again)."""
    s = services.settings.jobs
    plan = await sized(body_size(request), check, services, sub)
    if sub.webhook_url is not None:
        server = request.scope.get("server")
        await webhooks.check_url(
            sub.webhook_url,
            s.webhook_secret,
            request_host=request.headers.get("host"),
            scheme=request.url.scheme,
            server=tuple(server) if server else None,
            field=sub.webhook_field,
            policy=Policy.parse(s.webhook_allow),
        )
    record = JobRecord(
        id=new_id(),
        owner=context.key_name(),
        endpoint=sub.endpoint,
        request=sub.raw,
        headers=sub.headers,
        size=0,
        webhook_url=sub.webhook_url,
    )
    record.size = request_bytes(record)
    try:
        admission = await services.jobs.admit(record, s.max_jobs_per_key, s.max_job_bytes_per_key, s.job_ttl_s)
    except StoreUnavailable:
        raise unavailable() from None
    if admission.refused is not None:
        raise refusal(admission, record.size, s)
    runner.submitted(record.id, plan)
    where = location(record.id, str(request.scope.get("root_path", "")))
    body = orjson.dumps({"id": record.id, "status": "queued", "location": where})
    return Response(body, 202, headers={"Location": where}, media_type="application/json")
