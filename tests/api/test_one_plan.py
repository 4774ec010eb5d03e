"""One judgment, one plan: every door (listwise, pairwise, reward, rerank, chat) in every mode (answered now, ``stream``,
``Prefer: respond-async``, ``POST /v1/jobs``) builds the same plan and checks it once, at intake, so the same request
gets the same refusal — status, error kind and field — before anything is answered, stored or spent; a request that
passes gets the same result in every mode. A quota refusal (found when the plan is charged) is a real HTTP status
with Retry-After for a stream too: nothing has been sent before its first event. The chat door answers in OpenAI's
shapes (its error ``{"error": {"code", "param"}}``, its stream ``chat.completion.chunk`` events); a job's error is the
service's own: the same status, kind and field."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from pcfjudge.cache.job_store import MemoryJobStore
from pcfjudge.settings import Settings

from tests.api.test_jobs import finished
from tests.doors.chat.test_chat_door import MARKED
from tests.support.inprocess import app_with_services

DOORS: dict[str, dict[str, Any]] = {
    "/judge/listwise": {"question": "How many moons does Mars have?", "candidates": ["Two.", "One.", "None."], "k": 3},
    "/judge/pairwise": {"question": "Symbol for gold?", "response_a": "Ag.", "response_b": "Au."},
    "/v1/reward": {"samples": [{"prompt": "2+2?", "response": r} for r in ("4.", "5.", "22.")], "k": 3},
    "/v2/rerank": {"query": "Capital of France?", "documents": ["Paris.", "Lyon.", "Nice."], "pcfjudge": {"k": 3}},
    "/v1/chat/completions": {"messages": [{"role": "user", "content": MARKED}]},
}
CHAT = "/v1/chat/completions"
MODES = ("now", "stream", "respond-async", "jobs")


def with_model(endpoint: str, model: Any) -> dict[str, Any]:
    body = json.loads(json.dumps(DOORS[endpoint]))
    if endpoint == "/v2/rerank":
        body["pcfjudge"]["model"] = model
    else:
        body["model"] = model
    return body


def streamed(endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
    if endpoint == "/v2/rerank":
        return {**body, "pcfjudge": {**body["pcfjudge"], "stream": True}}
    return {**body, "stream": True}


async def send(client: httpx.AsyncClient, endpoint: str, body: dict[str, Any], mode: str) -> httpx.Response:
    """The request in ``mode``; a refused stream is read as the ordinary response it must be."""
    if mode == "stream":
        request = client.build_request("POST", endpoint, json=streamed(endpoint, body))
        reply = await client.send(request, stream=True)
        await reply.aread()
        return reply
    if mode == "respond-async":
        return await client.post(endpoint, json=body, headers={"Prefer": "respond-async"})
    if mode == "jobs":
        return await client.post("/v1/jobs", json={"endpoint": endpoint, "request": body})
    return await client.post(endpoint, json=body)


def refusal(reply: httpx.Response) -> tuple[int, str, str | None]:
    body = reply.json()
    if isinstance(body["error"], dict):  # the chat door's own answer, in OpenAI's shape
        return reply.status_code, body["error"]["code"], body["error"]["param"]
    errors = body.get("errors") or [{}]
    field = errors[0].get("field")
    return reply.status_code, body["error"], field.removeprefix("request.") if field else None


REFUSED = {  # what each door's request needs refused, and the settings that refuse it
    "over the per-request calls cap": (Settings(max_calls_per_request=1), "sim:default", "over_limit"),
    "over the per-request cost cap": (
        Settings(prices={"sim:default": (1_000.0, 1_000.0)}, max_cost_usd_per_request=0.01),
        "sim:default",
        "over_limit",
    ),
    "a model off the allowlist": (Settings(allowed_models=["sim:default"]), "sim:oracle", "model_not_allowed"),
    "an empty juror": (Settings(), "sim:default,", "validation_error"),
    "an empty juror in a list": (Settings(), ["sim:default", ""], "validation_error"),
}


@pytest.mark.parametrize("case", list(REFUSED))
@pytest.mark.parametrize("endpoint", list(DOORS))
async def test_every_mode_refuses_as_the_direct_call_does_and_keeps_nothing(endpoint: str, case: str) -> None:
    settings, model, kind = REFUSED[case]
    async with app_with_services(settings) as (client, services):
        replies = {mode: await send(client, endpoint, with_model(endpoint, model), mode) for mode in MODES}
        assert isinstance(services.jobs, MemoryJobStore) and services.jobs.jobs == {}  # no job was stored
    seen = {mode: refusal(reply) for mode, reply in replies.items()}
    door_status = 400 if endpoint == CHAT else 422  # the chat door answers as OpenAI does: 400 invalid_request_error
    assert seen["now"] == (door_status, kind, seen["now"][2]), seen["now"]
    assert all(s == seen["now"] for mode, s in seen.items() if mode != "jobs"), seen
    assert seen["jobs"] == (422, *seen["now"][1:]), seen  # POST /v1/jobs answers in the service's own shape
    assert all(r.headers["content-type"].startswith("application/json") for r in replies.values())


@pytest.mark.parametrize("endpoint", list(DOORS))
async def test_a_quota_refuses_a_stream_with_its_real_status_and_retry_after(endpoint: str) -> None:
    settings = Settings(api_keys="alice:alice-key-0123456789", quota_calls_per_min=3, chat_orders=3)
    headers = {"Authorization": "Bearer alice-key-0123456789"}
    async with app_with_services(settings) as (client, _):
        client.headers.update(headers)
        spent = await send(
            client, endpoint, with_model(endpoint, "sim:default"), "now"
        )  # K=3: every call of the minute
        again = await send(client, endpoint, with_model(endpoint, "sim:default"), "now")
        stream = await send(client, endpoint, with_model(endpoint, "sim:default"), "stream")
    assert spent.status_code == 200, spent.text
    assert again.status_code == stream.status_code == 429, (again.text, stream.text)
    assert stream.headers["content-type"].startswith("application/json") and "retry-after" in stream.headers
    assert refusal(stream)[1] == refusal(again)[1] == "quota_exceeded"


def comparable(endpoint: str, body: Any) -> Any:
    """A response without what differs between any two requests (ids, latencies, cached flags)."""
    if isinstance(body, dict):
        drop = {
            "request_id",
            "id",
            "latency_ms",
            "cached",
            "usage",
            "meta",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "created",
        }
        return {k: comparable(endpoint, v) for k, v in body.items() if k not in drop}
    if isinstance(body, list):
        return [comparable(endpoint, v) for v in body]
    return body


@pytest.mark.parametrize("endpoint", list(DOORS))
async def test_a_request_that_passes_gets_the_same_result_in_every_mode(endpoint: str) -> None:
    body = {**DOORS[endpoint]}
    async with app_with_services() as (client, _):
        results = {}
        for mode in MODES:
            reply = await send(client, endpoint, body, mode)
            if mode == "stream" and endpoint == CHAT:
                results[mode] = _completion(reply.text)
            elif mode == "stream":
                events = _events(reply.text)
                assert events[-1][0] == "result", events[-1]
                results[mode] = events[-1][1]
            elif mode in ("respond-async", "jobs"):
                assert reply.status_code == 202, reply.text
                job = await finished(client, reply.headers["location"])
                assert job["status"] == "succeeded", job
                results[mode] = job["response"]
            else:
                assert reply.status_code == 200, reply.text
                results[mode] = reply.json()
            await asyncio.sleep(0)
    first = comparable(endpoint, results["now"])
    assert all(comparable(endpoint, r) == first for r in results.values())


def _completion(text: str) -> dict[str, Any]:
    """A chat.completion put together from its chunks (the role and content, then the finish and pcfjudge's field)."""
    chunks = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and "[DONE]" not in line]
    delta, finish = chunks[0]["choices"][0], chunks[1]["choices"][0]
    message = {"role": "assistant", "content": delta["delta"]["content"]}
    choice = {"index": 0, "message": message, "finish_reason": finish["finish_reason"], "logprobs": delta["logprobs"]}
    completion = {"object": "chat.completion", "model": chunks[0]["model"], "choices": [choice]}
    return completion | {"pcfjudge": chunks[1]["pcfjudge"]}


def _events(text: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    kind, data = "message", []
    for line in text.splitlines():
        if line.startswith("event:"):
            kind = line.partition(":")[2].strip()
        elif line.startswith("data:"):
            data.append(line.partition(":")[2].strip())
        elif not line and data:
            events.append((kind, json.loads("\n".join(data))))
            kind, data = "message", []
    return events
