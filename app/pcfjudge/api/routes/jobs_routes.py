"""Jobs (docs/api/jobs.md): ``POST /v1/jobs`` submits one (or a judging route with ``Prefer: respond-async``, sent
here by ``api.middleware.respond_async``), ``GET /v1/jobs/{id}`` shows it, ``DELETE /v1/jobs/{id}`` cancels it.
A job is its owner's: any other key gets 404, as for a job that never was. Intake in ``api.jobs.job_intake``,
running in ``api.jobs.job_runner``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from pcfjudge import context
from pcfjudge.api.jobs import job_intake
from pcfjudge.api.jobs.job_runner import JobRunner
from pcfjudge.api.jobs.job_view import job_json, unavailable
from pcfjudge.api.middleware.request import ROUTE_LABEL
from pcfjudge.api.middleware.respond_async import ASYNC_PATH, ASYNC_SCOPE
from pcfjudge.cache.job_record import ACTIVE, JobRecord, StoreUnavailable
from pcfjudge.doors.door_list import JOB_ROUTES, SHAPES
from pcfjudge.errors import ApiError
from pcfjudge.http.deps import ServicesDep
from pcfjudge.http.error_handlers import ERROR_RESPONSES, documented, shaped
from pcfjudge.http.read_body import ReadRoute
from pcfjudge.schemas.jobs_schema import EXAMPLE_ID, Job, JobAccepted, JobRequest
from pcfjudge.services import Services

router = APIRouter(tags=["jobs"], route_class=ReadRoute)
JobId = Annotated[
    str,
    Path(pattern=r"^job_[0-9a-f]{32}$", description="The id POST /v1/jobs answered.", examples=[EXAMPLE_ID]),
]
UNAVAILABLE = documented({503: "The job store (Redis) is not answering (Retry-After)"})
NOT_FOUND = documented(
    {
        404: "No such job for this API key: never made, another key's, expired, or lost by the job store "
        "(a Redis restarted without persistence)"
    }
)
JOB_RESPONSES: dict[int | str, dict[str, Any]] = {422: ERROR_RESPONSES[422], **NOT_FOUND, **UNAVAILABLE}
SUBMIT_RESPONSES: dict[int | str, dict[str, Any]] = {
    **{code: ERROR_RESPONSES[code] for code in (400, 422)},
    **documented(
        {
            413: "The route's own 413, or PCFJ_MAX_JOB_BYTES_PER_KEY reached",
            429: "PCFJ_MAX_JOBS_PER_KEY jobs queued or running (Retry-After)",
            503: "The job store (Redis) is not answering, or without Redis this replica's jobs fill "
            "PCFJ_MAX_JOB_STORE_BYTES (Retry-After)",
        }
    ),
}


def runner_of(request: Request) -> JobRunner:
    runner: JobRunner = request.app.state.jobs
    return runner


@router.post("/v1/jobs", status_code=202, response_model=JobAccepted, responses=SUBMIT_RESPONSES)
async def submit_job(body: JobRequest, request: Request, services: ServicesDep) -> Response:
    """Judge `request` with `endpoint` as a job: 202 at once with its id and Location; poll GET /v1/jobs/{id}. The
    request is checked first, as its route checks it (a bad one is that route's 4xx, and no job is made)."""
    submission = job_intake.from_jobs_route(body.endpoint, body.request, body.webhook_url)
    return await job_intake.submit(services, submission, request, runner_of(request))


@router.post(ASYNC_PATH, include_in_schema=False)
async def respond_async(request: Request, services: ServicesDep) -> Response:
    """A judging route's request with ``Prefer: respond-async``, diverted here by the middleware (only)."""
    endpoint = request.scope.get(ASYNC_SCOPE)
    if not isinstance(endpoint, str):  # sent here directly: not found, and counted as any unknown path is
        request.scope[ROUTE_LABEL] = "unmatched"
        raise StarletteHTTPException(404)
    try:
        submission = job_intake.from_prefer(endpoint, await request.body(), request.headers)
        response = await job_intake.submit(services, submission, request, runner_of(request))
    except Exception as exc:  # refused as its route refuses: in the route's own error shape
        refused = shaped(exc, request, SHAPES[endpoint])
        if refused is None:
            raise
        return refused
    response.headers["Preference-Applied"] = "respond-async"
    return response


@router.get("/v1/jobs/{job_id}", response_model=Job, responses=JOB_RESPONSES)
async def get_job(job_id: JobId, services: ServicesDep) -> Response:
    """The job: its status, progress while it runs, and once it has ended the route's answer (`response`, with its
    `http_status`)."""
    return Response(job_json(await _owned(services, job_id)), media_type="application/json")


@router.delete("/v1/jobs/{job_id}", response_model=Job, responses=JOB_RESPONSES)
async def cancel_job(job_id: JobId, request: Request, services: ServicesDep) -> Response:
    """Cancel a queued or running job: it stops spending (its backend calls are cancelled) and stays `cancelled`.
    A job that has ended is left as it is. Answers the job as it now stands."""
    record = await _owned(services, job_id)
    if record.status in ACTIVE:
        try:
            await services.jobs.cancel(job_id)
        except StoreUnavailable:
            raise unavailable() from None
        runner_of(request).cancel_local(job_id)
        record = await _owned(services, job_id)
    return Response(job_json(record), media_type="application/json")


async def _owned(services: Services, job_id: str) -> JobRecord:
    try:
        record = await services.jobs.get(job_id)
    except StoreUnavailable:
        raise unavailable() from None
    if record is None or record.owner != context.key_name():
        detail = (
            f"no job {job_id} for this API key: it was never made with this key, it expired (jobs are kept "
            "PCFJ_JOB_TTL_S after they are submitted, and again after they end), or the job store no longer has it "
            "(a Redis restarted without persistence loses every job: see docs/operations/redis.md); submit it again"
        )
        raise ApiError("not_found", detail)
    return record


def install_docs(app: FastAPI) -> None:
    """The judging routes' OpenAPI operations say what ``Prefer: respond-async`` answers (a 202 ``JobAccepted``), and
    a job's ``endpoint`` lists the routes that run as jobs."""
    build = app.openapi
    described = False

    def openapi() -> dict[str, Any]:
        nonlocal described
        document = build()
        if not described:
            described = True
            for path in JOB_ROUTES:
                operation = document.get("paths", {}).get(path, {}).get("post")
                if operation is not None:
                    operation["responses"]["202"] = RESPOND_ASYNC
            for model in ("JobRequest", "Job"):  # the routes a job may run: the door list's
                schema = document.get("components", {}).get("schemas", {}).get(model)
                if schema is not None:
                    schema["properties"]["endpoint"] |= {"enum": list(JOB_ROUTES), "examples": list(JOB_ROUTES)[:1]}
        return document

    app.openapi = openapi  # type: ignore[method-assign]


RESPOND_ASYNC: dict[str, Any] = {
    "description": "With `Prefer: respond-async` (RFC 7240): accepted as a job, checked as this route checks it; "
    "poll the Location (GET /v1/jobs/{id}), whose `response` is then this route's answer. An optional "
    "`X-Pcfjudge-Webhook: <url>` is called when it ends. docs/api/jobs.md",
    "headers": {
        "Location": {"description": "The job: /v1/jobs/{id}", "schema": {"type": "string"}},
        "Preference-Applied": {"description": "respond-async", "schema": {"type": "string"}},
    },
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobAccepted"}}},
}
