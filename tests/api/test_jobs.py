"""Jobs over HTTP, in process (docs/api/jobs.md): both doors (POST /v1/jobs and Prefer: respond-async) answer 202 with
a Location; the job's response is the ordinary route's body; a bad request is the route's own 4xx at once and nothing
is stored; DELETE stops the spending (the fake provider stops receiving calls); a job is its owner's (another key:
404); the per-key limits answer 429/413 naming them; webhook URLs are checked and the delivery is signed; a job past
its timeout fails; a replica that stops gives its jobs back and the next one resumes them."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pcfjudge.api.jobs import webhooks
from pcfjudge.cache.job_store import MemoryJobStore
from pcfjudge.settings import Settings

from tests.support.inprocess import FakeProvider, app_with_services, provider_settings
from tests.support.redis_server import RedisServer
from tests.support.webhook_receiver import Receiver

LISTWISE = {"question": "How many moons does Mars have?", "candidates": ["Two.", "One.", "None."], "k": 3}
REQUESTS: dict[str, dict[str, Any]] = {
    "/judge/listwise": LISTWISE,
    "/judge/pairwise": {"question": "Symbol for gold?", "response_a": "Ag.", "response_b": "Au."},
    "/v1/reward": {"samples": [{"prompt": "2+2?", "response": "4."}, {"prompt": "2+2?", "response": "5."}], "k": 3},
    "/v2/rerank": {"model": "rerank-v3.5", "query": "Capital of France?", "documents": ["Paris.", "Lyon."]},
}
KEYS = "alice:alice-key-0123456789,bob:bob-key-0123456789"
ALICE, BOB = {"Authorization": "Bearer alice-key-0123456789"}, {"Authorization": "Bearer bob-key-0123456789"}


async def finished(client: httpx.AsyncClient, location: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
    for _ in range(600):
        job: dict[str, Any] = (await client.get(location, headers=headers)).json()
        if job["status"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.02)
    raise AssertionError(f"job still {job['status']}: {job}")


def without_request_id(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "request_id"}


def unmeasured(value: Any) -> Any:
    """``value`` without the measured latencies (``latency_ms``), which differ between any two calls."""
    if isinstance(value, dict):
        return {k: unmeasured(v) for k, v in value.items() if k != "latency_ms"}
    if isinstance(value, list):
        return [unmeasured(v) for v in value]
    return value


# ── both doors, and the answer is the route's ────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("endpoint", list(REQUESTS))
async def test_a_job_answers_202_then_the_routes_own_body(endpoint: str) -> None:
    async with app_with_services() as (client, _):
        accepted = await client.post("/v1/jobs", json={"endpoint": endpoint, "request": REQUESTS[endpoint]})
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        assert body["status"] == "queued" and body["id"].startswith("job_")
        assert accepted.headers["location"] == body["location"] == f"/v1/jobs/{body['id']}"
        job = await finished(client, body["location"])
    # The same request to the route of a fresh service (its own cache), under the same request id: the same body.
    async with app_with_services() as (fresh, _):
        ordinary = await fresh.post(endpoint, json=REQUESTS[endpoint], headers={"X-Request-ID": body["id"]})
    assert job["status"] == "succeeded" and job["http_status"] == ordinary.status_code == 200
    assert unmeasured(job["response"]) == unmeasured(ordinary.json())
    assert job["attempts"] == 1 and job["endpoint"] == endpoint and job["webhook"] is None
    assert job["created_at"] <= job["started_at"] <= job["finished_at"]
    assert job["progress"]["calls_done"] >= 1 and job["progress"]["call_errors"] == 0


async def test_prefer_respond_async_on_the_route_is_the_same_job() -> None:
    async with app_with_services(Settings(sim_latency_ms=300)) as (client, services):
        raw = json.dumps(LISTWISE, indent=1).encode()  # stored compact, not as it came (issue 37)
        headers = {"Prefer": "respond-async, wait=30", "content-type": "application/json"}
        accepted = await client.post("/judge/listwise", content=raw, headers=headers)
        assert accepted.status_code == 202, accepted.text
        assert accepted.headers["preference-applied"] == "respond-async"
        location = accepted.headers["location"]
        assert location == accepted.json()["location"]
        stored = await services.jobs.get(accepted.json()["id"])
        job = await finished(client, location)
        ended = await services.jobs.get(accepted.json()["id"])
        ordinary = await client.post("/judge/listwise", json=LISTWISE)  # now from the cache
        plain = await client.post("/judge/listwise", json=LISTWISE, headers={"Prefer": "wait=30"})
    assert stored is not None and stored.headers == {"prefer": "wait=30"}  # the rest of Prefer goes to the route
    assert stored.request == json.dumps(LISTWISE, separators=(",", ":")).encode()
    assert ended is not None and ended.request == b"" and ended.headers == {}  # dropped once the job ended
    assert job["status"] == "succeeded" and job["http_status"] == 200
    assert without_request_id(job["response"])["ranking"] == ordinary.json()["ranking"]
    assert job["response"]["candidates"] == ordinary.json()["candidates"]
    assert plain.status_code == 200 and "preference-applied" not in plain.headers  # only respond-async diverts


# ── a bad request: the route's own 4xx at once, nothing stored ───────────────────────────────────────────────────


BAD = [
    ("not JSON", b'{"question": ', 400),
    ("k out of range", json.dumps({**LISTWISE, "k": 0}).encode(), 422),
    ("too many candidates", json.dumps({**LISTWISE, "candidates": [f"c{i}" for i in range(30)]}).encode(), 413),
    ("model not allowed", json.dumps({**LISTWISE, "model": "openai:not-allowed"}).encode(), 422),
    ("unknown field", json.dumps({**LISTWISE, "colour": "red"}).encode(), 422),
    ("not an object", b"[1, 2]", 422),
]


@pytest.mark.parametrize(("raw", "status"), [(raw, status) for _, raw, status in BAD], ids=[n for n, _, _ in BAD])
async def test_a_bad_request_is_refused_as_the_route_refuses_it(raw: bytes, status: int) -> None:
    settings = Settings(max_items=20)
    async with app_with_services(settings) as (client, services):
        headers = {"content-type": "application/json"}
        ordinary = await client.post("/judge/listwise", content=raw, headers=headers)
        deferred = await client.post("/judge/listwise", content=raw, headers={**headers, "Prefer": "respond-async"})
        assert isinstance(services.jobs, MemoryJobStore) and services.jobs.jobs == {}  # nothing stored
    assert ordinary.status_code == deferred.status_code == status
    assert without_request_id(deferred.json()) == without_request_id(ordinary.json())


async def test_post_v1_jobs_names_the_field_inside_request_and_refuses_a_stream() -> None:
    async with app_with_services() as (client, services):
        bad = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": {**LISTWISE, "k": 0}})
        stream = await client.post(
            "/v1/jobs", json={"endpoint": "/judge/listwise", "request": {**LISTWISE, "stream": True}}
        )
        prefer = await client.post(
            "/judge/listwise", json={**LISTWISE, "stream": True}, headers={"Prefer": "respond-async"}
        )
        rerank = {**REQUESTS["/v2/rerank"], "pcfjudge": {"stream": True}}
        rerank_stream = await client.post("/v1/jobs", json={"endpoint": "/v2/rerank", "request": rerank})
        unknown = await client.post("/v1/jobs", json={"endpoint": "/rerank", "request": {}})
        internal = await client.post("/_internal/respond-async", json=LISTWISE)  # only the middleware sends here
        assert isinstance(services.jobs, MemoryJobStore) and services.jobs.jobs == {}
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "request.k"
    assert stream.status_code == prefer.status_code == rerank_stream.status_code == 422
    assert stream.json()["errors"][0]["field"] == "stream" and "drop stream" in stream.json()["detail"]
    assert rerank_stream.json()["errors"][0]["field"] == "pcfjudge.stream"
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["field"] == "endpoint"
    assert internal.status_code == 404


# ── ownership and limits ─────────────────────────────────────────────────────────────────────────────────────────


async def test_a_job_is_its_owners_and_another_key_gets_404() -> None:
    async with app_with_services(Settings(api_keys=KEYS, sim_latency_ms=300)) as (client, _):
        accepted = await client.post(
            "/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE}, headers=ALICE
        )
        location = accepted.headers["location"]
        other_get = await client.get(location, headers=BOB)
        other_delete = await client.delete(location, headers=BOB)
        anonymous = await client.get(location)
        forged = await client.get(location, headers={"pcfjudge.job": "alice", "x-pcfjudge-job": "alice"})
        unknown = await client.get("/v1/jobs/job_" + "0" * 32, headers=ALICE)
        job = await finished(client, location, ALICE)
    assert accepted.status_code == 202
    assert other_get.status_code == other_delete.status_code == unknown.status_code == 404
    assert other_get.json()["error"] == unknown.json()["error"] == "not_found"  # as if it never was
    assert anonymous.status_code == forged.status_code == 401
    assert job["status"] == "succeeded"  # bob's DELETE did nothing


async def test_jobs_per_key_and_their_bytes_are_bounded() -> None:
    settings = Settings(api_keys=KEYS, sim_latency_ms=3000, max_jobs_per_key=2, max_job_bytes_per_key=2000)
    submit = {"endpoint": "/judge/listwise", "request": LISTWISE}
    async with app_with_services(settings) as (client, _):
        first = [await client.post("/v1/jobs", json=submit, headers=ALICE) for _ in range(2)]
        third = await client.post("/v1/jobs", json=submit, headers=ALICE)
        bobs = await client.post("/v1/jobs", json=submit, headers=BOB)
        large = {**LISTWISE, "question": "x" * 2000}
        too_large = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": large}, headers=BOB)
        cancelled = await client.delete(first[0].headers["location"], headers=ALICE)
        after_cancel = await client.post("/v1/jobs", json=submit, headers=ALICE)
        for response in (first[1], after_cancel, bobs):
            await client.delete(response.headers["location"], headers=ALICE if response is not bobs else BOB)
    assert [r.status_code for r in first] == [202, 202] and bobs.status_code == 202
    assert third.status_code == 429 and third.json()["error"] == "too_many_jobs"
    assert "PCFJ_MAX_JOBS_PER_KEY" in third.json()["detail"] and third.headers["retry-after"] == "5"
    assert too_large.status_code == 413 and too_large.json()["error"] == "jobs_too_large"
    assert "PCFJ_MAX_JOB_BYTES_PER_KEY" in too_large.json()["detail"]
    assert (
        cancelled.json()["status"] == "cancelled" and after_cancel.status_code == 202
    )  # a cancelled job frees its place


# ── cancel and timeout: the spending stops ───────────────────────────────────────────────────────────────────────


async def test_delete_cancels_a_running_job_and_the_provider_stops_receiving_calls(fake: FakeProvider) -> None:
    fake.faults(latency_ms=400)
    settings = provider_settings("openai", fake, backend_concurrency=1, default_k=7)
    async with app_with_services(settings) as (client, _):
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": {**LISTWISE, "k": 7}})
        location = accepted.headers["location"]
        for _ in range(300):
            running = (await client.get(location)).json()
            if running["status"] == "running" and running["progress"] and running["progress"]["calls_done"] >= 1:
                break
            await asyncio.sleep(0.05)
        cancelled = await client.delete(location)
        at_cancel = fake.calls(last=0)["calls"].get("openai", 0)
        await asyncio.sleep(1.5)  # three more calls' worth of time, had it gone on
        after = fake.calls(last=0)["calls"].get("openai", 0)
        job = (await client.get(location)).json()
        again = await client.delete(location)
    assert running["status"] == "running" and running["progress"]["calls_done"] >= 1
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert 2 <= at_cancel < 7 and after == at_cancel  # the call in flight was cancelled, no further one made
    assert job["status"] == "cancelled" and job["response"] is None and job["finished_at"] is not None
    assert again.status_code == 200 and again.json()["status"] == "cancelled"


async def test_a_job_whose_record_expires_stops_spending(fake: FakeProvider) -> None:
    fake.faults(latency_ms=400)
    settings = provider_settings("openai", fake, backend_concurrency=1, job_ttl_s=1.0)
    async with app_with_services(settings) as (client, _):
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": {**LISTWISE, "k": 7}})
        await asyncio.sleep(2.2)  # expired at 1 s; its runner is told at its next renewal (every second)
        at_stop = fake.calls(last=0)["calls"].get("openai", 0)
        await asyncio.sleep(1.2)
        after = fake.calls(last=0)["calls"].get("openai", 0)
        gone = await client.get(accepted.headers["location"])
    assert gone.status_code == 404
    assert at_stop < 7 and after == at_stop


async def test_a_job_past_its_timeout_fails_and_stops() -> None:
    async with app_with_services(Settings(sim_latency_ms=5000, job_timeout_s=0.3)) as (client, _):
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
        started = time.monotonic()
        job = await finished(client, accepted.headers["location"])
    assert time.monotonic() - started < 3
    assert job["status"] == "failed" and job["http_status"] == 504
    assert job["response"]["error"] == "job_timeout" and "PCFJ_JOB_TIMEOUT_S" in job["response"]["detail"]


async def test_a_jobs_judgment_may_outlast_the_request_timeout() -> None:
    """Jobs exist for judgments longer than a request should live: one whose calls take over a second finishes as a job
    under a 1 s PCFJ_REQUEST_TIMEOUT_S (the job's PCFJ_JOB_TIMEOUT_S bounds it), where the route itself gives up."""
    settings = Settings(sim_latency_ms=2400, request_timeout_s=1.0, job_timeout_s=60)  # calls take 1.2 to 3.6 s
    async with app_with_services(settings) as (client, _):
        direct = await client.post("/judge/listwise", json={**LISTWISE, "question": "Moons of Mars? (direct)"})
        accepted = await client.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
        job = await finished(client, accepted.headers["location"])
    assert direct.status_code == 504
    assert job["status"] == "succeeded" and job["http_status"] == 200 and job["response"]["diagnostics"]["runs_ok"] == 3


# ── webhooks ─────────────────────────────────────────────────────────────────────────────────────────────────────


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


SECRET = "whsec-test-0123456789"
LOCAL = "127.0.0.1"  # PCFJ_WEBHOOK_ALLOW for the receivers of these tests, on 127.0.0.1


def verify(secret: str, header: str, body: bytes, tolerance_s: float = 300) -> bool:
    """The receiver's check, as docs/api/jobs.md shows it."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return abs(time.time() - int(fields["t"])) <= tolerance_s and hmac.compare_digest(expected, fields["v1"])


async def test_a_webhook_gets_the_final_job_signed(receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("DEBUG")
    async with app_with_services(Settings(webhook_secret=SECRET, webhook_allow=LOCAL)) as (client, _):
        submit = {"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": receiver.url}
        accepted = await client.post("/v1/jobs", json=submit)
        job = await finished(client, accepted.headers["location"])
        for _ in range(200):
            if (job := (await client.get(accepted.headers["location"])).json())["webhook"]["delivered"]:
                break
            await asyncio.sleep(0.02)
    assert accepted.status_code == 202 and len(receiver.received) == 1
    headers, body, _ = receiver.received[0]
    assert verify(SECRET, headers["X-Pcfjudge-Signature"], body)
    assert not verify("another-secret", headers["X-Pcfjudge-Signature"], body)
    assert not verify(SECRET, headers["X-Pcfjudge-Signature"], body + b" ")  # any change to the body
    assert headers["X-Pcfjudge-Job"] == job["id"] and headers["Content-Type"] == "application/json"
    sent = json.loads(body)
    assert sent["status"] == "succeeded" and sent["response"] == job["response"] and sent["id"] == job["id"]
    assert job["webhook"] == {"url": receiver.url, "delivered": True, "attempts": 1, "status": 200, "error": None}
    assert SECRET not in caplog.text


async def test_a_webhook_is_retried_and_its_outcome_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhooks, "WAITS", (0.05, 0.05, 0.05))
    with Receiver([500, 503]) as flaky, Receiver([500, 500, 500, 500]) as dead:
        async with app_with_services(Settings(webhook_secret=SECRET, webhook_allow=LOCAL)) as (client, _):
            jobs = []
            for url in (flaky.url, dead.url):
                submit = {"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": url}
                jobs.append((await client.post("/v1/jobs", json=submit)).headers["location"])
            outcomes = []
            for location in jobs:
                for _ in range(300):
                    webhook = (await client.get(location)).json()["webhook"]
                    if webhook["delivered"] is not None:
                        break
                    await asyncio.sleep(0.02)
                outcomes.append(webhook)
    assert outcomes[0] == {"url": flaky.url, "delivered": True, "attempts": 3, "status": 200, "error": None}
    assert outcomes[1]["delivered"] is False and outcomes[1]["attempts"] == 4 and outcomes[1]["status"] is None
    assert outcomes[1]["error"] == "delivery failed: the receiver answered 5xx"  # its class, not what answered
    assert len(flaky.received) == 3 and len(dead.received) == 4


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/hook", "http:// or https://"),
        ("http:///no-host", "http:// or https://"),
        ("http://example.com:99999/hook", "not a valid URL"),
        ("http://test/hook", "this service itself"),  # the Host the request was sent to
        ("http://TEST:80/other", "this service itself"),
        ("http://localhost:80/hook", "this service itself"),  # this replica's port, on a loopback name
        ("http://127.0.0.1/hook", "this service itself"),
        ("http://[::1]:80/hook", "this service itself"),
    ],
)
async def test_a_webhook_url_that_is_not_http_or_points_at_the_service_is_refused(url: str, why: str) -> None:
    async with app_with_services(Settings(webhook_secret=SECRET)) as (client, services):
        submit = {"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": url}
        refused = await client.post("/v1/jobs", json=submit)
        prefer = await client.post(
            "/judge/listwise", json=LISTWISE, headers={"Prefer": "respond-async", "X-Pcfjudge-Webhook": url}
        )
        assert isinstance(services.jobs, MemoryJobStore) and services.jobs.jobs == {}
    assert refused.status_code == prefer.status_code == 422
    assert refused.json()["errors"][0]["field"] == "webhook_url" and why in refused.json()["detail"]
    assert prefer.json()["errors"][0]["field"] == "X-Pcfjudge-Webhook"


async def test_webhooks_are_off_without_a_secret_and_another_port_is_not_the_service() -> None:
    submit = {"endpoint": "/judge/listwise", "request": LISTWISE, "webhook_url": "http://127.0.0.1:8123/hook"}
    async with app_with_services() as (client, _):
        off = await client.post("/v1/jobs", json=submit)
    async with app_with_services(Settings(webhook_secret=SECRET)) as (client, _):
        inside = await client.post("/v1/jobs", json=submit)
    async with app_with_services(Settings(webhook_secret=SECRET, webhook_allow=LOCAL)) as (client, _):
        on = await client.post("/v1/jobs", json=submit)
        job = await finished(client, on.headers["location"])
    assert off.status_code == 422 and "PCFJ_WEBHOOK_SECRET" in off.json()["detail"]
    assert inside.status_code == 422 and "PCFJ_WEBHOOK_ALLOW" in inside.json()["detail"]  # loopback: not by default
    assert on.status_code == 202 and job["status"] == "succeeded"  # allowed by the operator


# ── a stopping replica gives its jobs back; the next one resumes them ───────────────────────────────────────────


@pytest.mark.alone
async def test_a_stopping_replica_gives_its_running_job_back_and_another_finishes_it(redis_server: RedisServer) -> None:
    settings = Settings(redis_url=redis_server.url, sim_latency_ms=800, default_k=3, job_sweep_s=0.1)
    async with app_with_services(settings) as (first, _):
        accepted = await first.post("/v1/jobs", json={"endpoint": "/judge/listwise", "request": LISTWISE})
        location = accepted.headers["location"]
        for _ in range(200):
            if (await first.get(location)).json()["status"] == "running":
                break
            await asyncio.sleep(0.02)
    with redis_server.client() as redis:
        given_back = redis.hget(f"pcfj:job:{{{accepted.json()['id']}}}", "status")
    async with app_with_services(settings) as (second, _):
        job = await finished(second, location)
    assert given_back == b"queued"  # as the first replica stopped
    assert job["status"] == "succeeded" and job["attempts"] == 1  # a graceful hand-over is not an attempt
    assert job["progress"]["calls_done"] == 3


# ── the OpenAPI document ─────────────────────────────────────────────────────────────────────────────────────────


def test_openapi_documents_the_jobs_and_the_202_of_each_judging_route() -> None:
    from pcfjudge.api.app import create_app

    document = create_app().openapi()
    paths = document["paths"]
    assert set(paths["/v1/jobs"]) == {"post"} and set(paths["/v1/jobs/{job_id}"]) == {"get", "delete"}
    assert "202" in paths["/v1/jobs"]["post"]["responses"] and "/_internal/respond-async" not in paths
    for path in ("/judge/listwise", "/judge/pairwise", "/v1/reward", "/v1/rerank", "/v2/rerank"):
        accepted = paths[path]["post"]["responses"]["202"]
        assert accepted["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/JobAccepted"}
        assert "Prefer: respond-async" in accepted["description"]
    job = document["components"]["schemas"]["Job"]["properties"]
    assert all("examples" in field or "$ref" in field or "anyOf" in field for field in job.values())
