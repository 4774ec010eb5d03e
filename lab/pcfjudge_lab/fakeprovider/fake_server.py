"""The fake provider app: provider endpoints that answer with the simulated judge, and ``/_control`` endpoints.

    POST /v1/chat/completions   OpenAI Chat Completions          POST /_control/faults   plan faults (JSON below)
    POST /v1/messages           Anthropic Messages               POST /_control/reset    back to startup settings
    GET  /healthz               up                               GET  /_control/calls    what was served

``/_control/faults`` takes ``{"faults": ["429", {"fault": "truncated", "times": 2}, …], "always": "500" | null,
"fail_rate": 0.3, "slow_seconds": 5, "retry_after": 1, "latency_ms": 0, "expect_key": "…", "rpm_limit": 20,
"rpm_window_s": 60}`` (all optional; a given ``faults`` list replaces the queue). See ``state`` for how faults are
consumed. ``rpm_limit`` answers 429 (with the retry-after to the window's next free place) to a request past that
many in the last ``rpm_window_s`` seconds, as an account's rate limit does, before any planned fault.

Batch endpoints (OpenAI ``/v1/files`` + ``/v1/batches``, Anthropic ``/v1/messages/batches``) and their knobs
(``/_control/batches``) are described in ``batch_state``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pcfjudge_lab.fakeprovider import fake_task as task
from pcfjudge_lab.fakeprovider.anthropic_wire import AnthropicWire
from pcfjudge_lab.fakeprovider.batch_anthropic import anthropic_batch_routes
from pcfjudge_lab.fakeprovider.batch_openai import openai_batch_routes
from pcfjudge_lab.fakeprovider.batch_state import set_knobs, show_batches
from pcfjudge_lab.fakeprovider.openai_wire import OpenAIWire
from pcfjudge_lab.fakeprovider.state import HTTP_FAULTS, FakeConfig, FakeState, Fault
from pcfjudge_lab.fakeprovider.wire import Reply, Wire

_HTTP: dict[str, tuple[int, str, str]] = {
    "429": (429, "rate_limit", "Rate limit reached for requests (simulated). Please try again later."),
    "500": (500, "server", "The server had an error while processing your request (simulated)."),
    "503": (503, "overloaded", "The service is temporarily overloaded (simulated)."),
}


class FaultItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fault: Fault
    times: int = Field(1, ge=1, le=1000)


class FaultPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    faults: list[Fault | FaultItem] | None = None
    always: Fault | None = None
    fail_rate: float | None = Field(None, ge=0, le=1)
    slow_seconds: float | None = Field(None, ge=0, le=3600)
    retry_after: float | None = Field(None, ge=0, le=3600)
    latency_ms: float | None = Field(None, ge=0, le=600_000)
    expect_key: str | None = None
    rpm_limit: int | None = Field(None, ge=1)
    rpm_window_s: float | None = Field(None, gt=0, le=3600)


async def _provider_call(request: Request, wire: Wire) -> Response:
    state: FakeState = request.app.state.fake
    ident = state.new_id()
    state.calls[wire.name] += 1
    key = wire.key(request)
    if key is None:
        return wire.error(401, "auth", "No API key provided.", ident=ident)
    expected = state.live.expect_key
    if expected is not None and key != expected:
        # Echo the key as OpenAI's real message does, so clients are tested for scrubbing it.
        return wire.error(401, "auth", f"Incorrect API key provided: {key}.", ident=ident)
    try:
        body = await request.json()
    except ValueError:
        return wire.error(400, "invalid", "The request body is not valid JSON.", ident=ident)
    parsed = wire.parse(body) if isinstance(body, dict) else "The request body must be a JSON object."
    if isinstance(parsed, str):
        return wire.error(400, "invalid", parsed, ident=ident)
    wait = state.over_rate(time.monotonic())
    if wait is not None:
        state.record(wire.name, body, "429")
        message = "Rate limit reached for requests per minute (simulated)."
        return wire.error(429, "rate_limit", message, retry_after=max(0.001, wait), ident=ident)
    # The body's signature only matters to queued or sticky faults; hashing a 5 KB body costs more than the rest.
    fault = state.next_fault(task.digest(wire.name, body) if state.queue or state.sticky else "")
    state.record(wire.name, body, fault, request.headers.get("traceparent"))
    if state.live.latency_ms > 0:
        await asyncio.sleep(state.live.latency_ms / 1000)
    if fault in HTTP_FAULTS:
        return _http_fault(wire, fault, state, ident)
    if fault == "slow":
        await _slow(request, state.live.slow_seconds)
    text = task.chat_answer(parsed.messages, state.config.seed) if parsed.schema_name is None else None
    if text is not None:
        state.completions[wire.name] += 1
        prompt_tokens = task.tokens(parsed.prompt)
        return wire.reply(Reply(parsed, {}, fault, prompt_tokens, 0, False, ident, text))
    call = task.recover(parsed.system, parsed.user, parsed.schema_name, parsed.schema)
    if call is None:
        return wire.error(
            400, "invalid", "No judging task (QUESTION plus candidate blocks) in the prompt.", ident=ident
        )
    answer = task.answer(call, state.config.seed, fault)
    state.completions[wire.name] += 1
    prompt_tokens = task.tokens(parsed.prompt)
    prefix = parsed.cache_prefix
    return wire.reply(
        Reply(
            parsed=parsed,
            answer=answer,
            fault=fault,
            prompt_tokens=prompt_tokens,
            prefix_tokens=min(task.tokens(prefix), prompt_tokens) if prefix else 0,
            prefix_seen=bool(prefix) and state.seen_prefix(task.digest(wire.name, prefix)),
            ident=ident,
        )
    )


def _http_fault(wire: Wire, fault: str, state: FakeState, ident: str) -> Response:
    retry_after = state.live.retry_after
    if fault == "529":
        if wire.name == "anthropic":
            return wire.error(529, "overloaded", "Overloaded", retry_after=retry_after, ident=ident)
        fault = "503"  # OpenAI has no 529; its overload answer is a 503
    status, kind, message = _HTTP[fault]
    return wire.error(status, kind, message, retry_after=retry_after if status != 500 else None, ident=ident)


async def _slow(request: Request, seconds: float) -> None:
    """Wait ``seconds`` before answering, giving up early once the client has gone."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if await request.is_disconnected():
            return
        await asyncio.sleep(min(0.05, max(0.0, until - time.monotonic())))


async def _openai(request: Request) -> Response:
    return await _provider_call(request, OpenAIWire())


async def _anthropic(request: Request) -> Response:
    return await _provider_call(request, AnthropicWire())


async def _set_faults(request: Request) -> Response:
    state: FakeState = request.app.state.fake
    try:
        plan = FaultPlan.model_validate_json(await request.body())
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "body"
        return JSONResponse({"error": "validation_error", "detail": f"{field}: {first['msg']}"}, 422)
    if plan.faults is not None:
        state.queue.clear()
        state.sticky.clear()
        for item in plan.faults:
            state.queue.append((item.fault, item.times) if isinstance(item, FaultItem) else (item, 1))
    if "always" in plan.model_fields_set:
        state.always = plan.always
    knobs = {k: v for k, v in plan.model_dump(exclude={"faults", "always"}).items() if k in plan.model_fields_set}
    state.configure(**knobs)
    return JSONResponse(_summary(state))


async def _reset(request: Request) -> Response:
    state: FakeState = request.app.state.fake
    state.reset()
    return JSONResponse(_summary(state))


async def _calls(request: Request) -> Response:
    state: FakeState = request.app.state.fake
    try:
        last = int(request.query_params.get("last", "20"))
    except ValueError:
        return JSONResponse({"error": "validation_error", "detail": "last: must be an integer"}, 422)
    served = list(state.served)[-last:] if last > 0 else []
    return JSONResponse(
        {
            **_summary(state),
            "calls": dict(state.calls),
            "completions": dict(state.completions),
            "faults_served": dict(state.faults),
            "requests": [
                {"endpoint": s.endpoint, "fault": s.fault, "body": s.body, "traceparent": s.traceparent} for s in served
            ],
        }
    )


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _summary(state: FakeState) -> dict[str, Any]:
    live = state.live
    return {
        "pending_faults": [f for f, times in state.queue for _ in range(times)],
        "always": state.always,
        "fail_rate": live.fail_rate,
        "latency_ms": live.latency_ms,
        "slow_seconds": live.slow_seconds,
        "retry_after": live.retry_after,
        "rpm_limit": live.rpm_limit,
        "seed": state.config.seed,
    }


def create_fake_app(config: FakeConfig | None = None) -> Starlette:
    """A fake OpenAI + Anthropic server for tests, load runs and trying deployments without spending money."""
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", _openai, methods=["POST"]),
            Route("/v1/messages", _anthropic, methods=["POST"]),
            Route("/_control/faults", _set_faults, methods=["POST"]),
            Route("/_control/reset", _reset, methods=["POST"]),
            Route("/_control/calls", _calls, methods=["GET"]),
            Route("/healthz", _healthz, methods=["GET"]),
            *openai_batch_routes(),  # OpenAI Files + Batches
            *anthropic_batch_routes(),  # Anthropic Message Batches
            Route("/_control/batches", set_knobs, methods=["POST"]),  # the batch knobs (``batch_state``)
            Route("/_control/batches", show_batches, methods=["GET"]),
        ]
    )
    app.state.fake = FakeState(config or FakeConfig())
    return app
